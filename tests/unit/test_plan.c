/* test_plan.c — `cpbench plan`'s search (driver/plan.h): the recommendation fits and is the
 * fastest of the candidates that fit in its own table (whole model and layer, odd world
 * sizes, another model), the longest context with --max-context, the closest candidate
 * when nothing fits, the Pareto frontier, the ranking rules on made-up candidates, and a
 * knob added to a table being searched without any change to the planner. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_presets.h"
#include "knobs.h"
#include "plan.h"
#include "sweep.h"

static cpb_plan_opts opts(const char *model, int C, int64_t S, const char *scope)
{
    cpb_plan_opts o;
    memset(&o, 0, sizeof o);
    cr_assert_eq(cpb_preset_find(model, &o.base), CPB_OK);
    o.base.C = C;
    o.base.S = S;
    o.base.dtype = CPB_BF16;
    o.scope = scope;
    o.sim.ranks = CPB_SIM_RANKS_SYMMETRIC;
    return o;
}

static int fits(const cpb_plan_cand *c)
{
    return c->bound == CPB_BOUND_COMPUTE || c->bound == CPB_BOUND_COMM;
}

/* the recommendation fits and no candidate that fits is faster; the table is in order */
static void check_recommendation(const cpb_plan *pl)
{
    cr_assert_geq(pl->recommended, 0, "a recommendation");
    const cpb_plan_cand *r = &pl->c[pl->recommended];
    cr_expect(fits(r), "the recommendation fits");
    cr_expect_str_eq(r->row.status, "ok");
    cr_expect_leq(r->need, r->cap, "%s: needs %lld of %lld", r->m->name, (long long)r->need, (long long)r->cap);
    cr_expect_leq(r->need_host, r->cap_host);
    cr_expect_gt(r->row.tokens_per_s_per_gpu, 0);
    cr_expect_eq(pl->order[0], pl->recommended, "rank 1 of the table");
    int nfit = 0;
    for (int i = 0; i < pl->n; i++) {
        const cpb_plan_cand *c = &pl->c[i];
        cr_expect_eq(fits(c), c->row.code == CPB_OK, "%s %s: fits iff its row is ok", c->m->name, c->knobs);
        if (c->row.code != CPB_OK) cr_expect(c->need > c->cap || c->need_host > c->cap_host || c->bound == CPB_BOUND_ERROR,
                                              "%s %s does not fit: it needs more than there is", c->m->name, c->knobs);
        if (!fits(c)) continue;
        nfit++;
        cr_expect_leq(c->row.tokens_per_s_per_gpu, r->row.tokens_per_s_per_gpu, "%s %s (%g) is faster than the "
                      "recommendation %s %s (%g)", c->m->name, c->knobs, c->row.tokens_per_s_per_gpu, r->m->name,
                      r->knobs, r->row.tokens_per_s_per_gpu);
    }
    cr_expect_gt(nfit, 0);
    /* the table: fitting ones by tokens/s, then the others closest first */
    for (int k = 1; k < pl->n; k++) {
        const cpb_plan_cand *a = &pl->c[pl->order[k - 1]], *b = &pl->c[pl->order[k]];
        if (fits(a) && fits(b)) cr_expect_geq(a->row.tokens_per_s_per_gpu, b->row.tokens_per_s_per_gpu);
        if (!fits(a) && !fits(b) && a->bound != CPB_BOUND_ERROR && b->bound != CPB_BOUND_ERROR)
            cr_expect_leq(a->over, b->over);
        cr_expect(!(fits(b) && !fits(a)), "a fitting candidate after one that does not fit");
    }
    cr_expect_eq(pl->errors, 0);
}

/* the frontier: its members are dominated by none, every other fitting one by some */
static void check_frontier(const cpb_plan *pl)
{
    int on = 0;
    for (int i = 0; i < pl->n; i++) {
        const cpb_plan_cand *c = &pl->c[i];
        if (!fits(c)) {
            cr_expect(!c->frontier);
            continue;
        }
        int dominated = 0;
        for (int j = 0; j < pl->n; j++) {
            const cpb_plan_cand *d = &pl->c[j];
            if (j != i && fits(d) && d->need <= c->need && d->row.tokens_per_s_per_gpu >= c->row.tokens_per_s_per_gpu &&
                (d->need < c->need || d->row.tokens_per_s_per_gpu > c->row.tokens_per_s_per_gpu))
                dominated = 1;
        }
        cr_expect_eq(c->frontier, !dominated, "%s %s", c->m->name, c->knobs);
        on += c->frontier;
    }
    cr_expect_gt(on, 0);
    cr_expect(pl->c[pl->recommended].frontier, "the fastest is on the frontier");
}

Test(plan, llama3_8b_8_gpus_4m_whole_model)
{
    cpb_plan_opts o = opts("llama3-8b", 8, 4 << 20, "model");
    static cpb_plan pl;
    char err[1024] = "";
    cr_assert_eq(cpb_plan_search(&o, &pl, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_geq(pl.n, 30, "every method and its knobs: %d candidates", pl.n);
    check_recommendation(&pl);
    check_frontier(&pl);
    cr_expect_eq(pl.exact_check, 1, "the recommendation simulated rank by rank agrees: %s", pl.exact_why);
    /* every method is there, with its knobs searched */
    const char *all[] = {"ulysses", "ring", "upipe", "fpdt", "offload", "tp", "metp", "usp", "hupipe"};
    for (size_t m = 0; m < sizeof all / sizeof all[0]; m++) {
        int n = 0;
        for (int i = 0; i < pl.n; i++) n += strcmp(pl.c[i].m->name, all[m]) == 0;
        cr_expect_gt(n, 0, "%s has candidates", all[m]);
    }
    int fpdt = 0, impls[2] = {0, 0}, u8 = 0;
    for (int i = 0; i < pl.n; i++) {
        const cpb_plan_cand *c = &pl.c[i];
        if (strcmp(c->m->name, "fpdt") == 0) {
            fpdt++;
            impls[0] += strstr(c->knobs, "fpdt_impl=deepspeed") != NULL;
            impls[1] += strstr(c->knobs, "fpdt_impl=pipelined") != NULL;
        }
        u8 += strcmp(c->m->name, "hupipe") == 0 && strstr(c->knobs, "ulysses_degree=8") != NULL;
        /* the search passes the model scope's setup and the length to every candidate */
        cr_expect_eq(c->p.S, 4 << 20);
        cr_expect_str_eq(c->row.scope, "model");
        cr_expect_str_eq(c->row.backend, "sim");
    }
    cr_expect_geq(fpdt, 8, "fpdt: chunks x schedules");
    cr_expect(impls[0] > 0 && impls[1] > 0, "both FPDT schedules");
    cr_expect_geq(u8, 2, "hupipe: head chunks at Ulysses degree 8");
    cpb_plan_free(&pl);
}

Test(plan, layer_scope_odd_world_and_another_model)
{
    static cpb_plan pl;
    char err[1024] = "";
    cpb_plan_opts o = opts("qwen3-32b", 6, 6 * 2 * 65536, "layer");
    cr_assert_eq(cpb_plan_search(&o, &pl, err, sizeof err), CPB_OK, "%s", err);
    check_recommendation(&pl);
    check_frontier(&pl);
    cr_expect_str_eq(pl.c[pl.recommended].row.scope, "layer");
    cpb_plan_free(&pl);
    o = opts("llama2-7b", 16, 1 << 21, "model");
    o.sim.gpus_per_node = 4;
    cr_assert_eq(cpb_plan_search(&o, &pl, err, sizeof err), CPB_OK, "%s", err);
    check_recommendation(&pl);
    cpb_plan_free(&pl);
}

Test(plan, nothing_fits_names_the_closest)
{
    static cpb_plan pl;
    char err[1024] = "";
    cpb_plan_opts o = opts("llama3-8b", 8, 4 << 20, "model");
    o.sim.mem_cap = (int64_t)20 << 30;
    cr_assert_eq(cpb_plan_search(&o, &pl, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(pl.recommended, -1);
    cr_assert_geq(pl.closest, 0);
    const cpb_plan_cand *c = &pl.c[pl.closest];
    cr_expect_gt(c->over, 0);
    for (int i = 0; i < pl.n; i++) {
        cr_expect(!fits(&pl.c[i]));
        if (pl.c[i].bound != CPB_BOUND_ERROR) cr_expect_geq(pl.c[i].over, c->over, "the closest is the least over");
    }
    cr_expect(c->bound == CPB_BOUND_DEVICE_MEM || c->bound == CPB_BOUND_HOST_MEM);
    cpb_plan_free(&pl);
}

Test(plan, max_context_is_the_longest_that_fits)
{
    static cpb_plan pl;
    char err[1024] = "";
    cpb_plan_opts o = opts("llama3-8b", 8, 0, "layer");
    o.max_context = 1;
    o.seq_start = 1 << 20;
    o.seq_stop = 64 << 20;
    o.bisect = 1 << 20;
    o.sim.mem_cap = (int64_t)24 << 30;
    o.given = (cpb_knobs){0};
    cr_assert_eq(cpb_plan_search(&o, &pl, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_geq(pl.recommended, 0);
    const cpb_plan_cand *r = &pl.c[pl.recommended];
    for (int i = 0; i < pl.n; i++) {
        const cpb_plan_cand *c = &pl.c[i];
        if (!fits(c)) continue;
        cr_expect_leq(c->max_seq, r->max_seq, "%s %s fits %lld, more than the recommendation's %lld", c->m->name,
                      c->knobs, (long long)c->max_seq, (long long)r->max_seq);
        cr_expect_eq(c->p.S, c->max_seq, "the row is the one at the longest length");
        cr_expect_str_eq(c->row.status, "ok");
        /* a longer length did not fit, to within the bisection step (or the range ended) */
        if (c->first_oom) {
            cr_expect_gt(c->first_oom, c->max_seq);
            int64_t g = cpb_sweep_granule(c->m, &c->p, o.seq_start, o.seq_stop), step = g > o.bisect ? g : o.bisect;
            cr_expect_leq(c->first_oom - c->max_seq, step, "%s %s: bracketed to the step: %lld .. %lld", c->m->name,
                          c->knobs, (long long)c->max_seq, (long long)c->first_oom);
        }
    }
    cpb_plan_free(&pl);
}

/* a knob that arrives later (an attention implementation, say) is searched from its table */
static const cpb_knob extra_knob[] = {
    {.name = "attn_test", .type = CPB_KNOB_CHOICE, .def = "one", .choices = "one|two", .arg = "one|two",
     .help = "a test knob", .points = CPB_KNOB_TIMING_MODEL_POINTS},
    {NULL}};

Test(plan, a_new_knob_is_searched_from_its_table)
{
    static cpb_plan pl;
    char err[1024] = "";
    cpb_plan_opts o = opts("llama3-8b", 8, 1 << 20, "layer");
    cr_assert_eq(cpb_plan_search(&o, &pl, err, sizeof err), CPB_OK, "%s", err);
    int before = pl.n;
    cpb_plan_free(&pl);
    cr_assert_eq(cpb_knobs_register(extra_knob), CPB_OK);
    cr_assert_eq(cpb_plan_search(&o, &pl, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(pl.n, 2 * before, "each candidate once per choice: %d, before %d", pl.n, before);
    int one = 0, two = 0;
    for (int i = 0; i < pl.n; i++) {
        one += strstr(pl.c[i].knobs, "attn_test=one") != NULL;
        two += strstr(pl.c[i].knobs, "attn_test=two") != NULL;
        cr_expect_str_neq(cpb_row_knob_str(&pl.c[i].row, "attn_test"), "", "the row carries the knob's column");
    }
    cr_expect_eq(one, before);
    cr_expect_eq(two, before);
    check_recommendation(&pl);
    cpb_plan_free(&pl);
    /* a knob given on the command line is not searched */
    cpb_knob_parse(&extra_knob[0], "two", &o.given, err, sizeof err);
    cr_assert_eq(cpb_plan_search(&o, &pl, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(pl.n, before);
    cpb_plan_free(&pl);
}

/* ---- the ranking rules on made-up candidates */
static void fake(cpb_plan_cand *c, int bound, double tps, int64_t need, double over)
{
    memset(c, 0, sizeof *c);
    c->m = cpb_method_at(0);
    c->bound = bound;
    c->row.tokens_per_s_per_gpu = tps;
    c->need = need;
    c->cap = 100;
    c->over = over;
}

Test(plan, ranking_ties_frontier_and_closest)
{
    cpb_plan_cand c[6];
    fake(&c[0], CPB_BOUND_COMPUTE, 100, 80, -0.2);
    fake(&c[1], CPB_BOUND_COMPUTE, 100, 60, -0.4); /* as fast, less memory: ranks first */
    fake(&c[2], CPB_BOUND_COMM, 90, 50, -0.5);
    fake(&c[3], CPB_BOUND_COMPUTE, 80, 70, -0.3);  /* dominated by c[1] and c[2] */
    fake(&c[4], CPB_BOUND_DEVICE_MEM, 0, 130, 0.3);
    fake(&c[5], CPB_BOUND_HOST_MEM, 0, 90, 0.1);
    cpb_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.c = c;
    pl.n = 6;
    cpb_plan_rank(&pl, 0);
    cr_expect_eq(pl.recommended, 1);
    cr_expect_eq(pl.runner_up, 0);
    int want[6] = {1, 0, 2, 3, 5, 4};
    for (int k = 0; k < 6; k++) cr_expect_eq(pl.order[k], want[k], "rank %d: %d, expected %d", k + 1, pl.order[k], want[k]);
    cr_expect(!c[0].frontier && c[1].frontier && c[2].frontier && !c[3].frontier && !c[4].frontier);
    cr_expect_eq(pl.closest, -1, "something fits");
    cr_expect_eq(pl.roomy, 1, "40% headroom");
    /* nothing fits: the least over is the closest */
    c[0].bound = c[1].bound = c[2].bound = c[3].bound = CPB_BOUND_DEVICE_MEM;
    c[0].over = 0.5, c[1].over = 0.05, c[2].over = 0.2, c[3].over = 0.4;
    cpb_plan_rank(&pl, 0);
    cr_expect_eq(pl.recommended, -1);
    cr_expect_eq(pl.closest, 1);
    free(pl.order);
}
