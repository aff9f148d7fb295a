/* test_plan.c — `cpbench plan`'s search (driver/plan.h): the recommendation fits and is the
 * fastest of the candidates that fit in its own table (whole model and layer, odd world
 * sizes, another model), the longest context with --max-context, the closest candidate
 * when nothing fits, the Pareto frontier, the ranking rules on made-up candidates, and a
 * knob added to a table being searched without any change to the planner. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_presets.h"
#include "knobs.h"
#include "plan.h"
#include "plan_frameworks.h"
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
    o.min_headroom = CPB_PLAN_MIN_HEADROOM;
    /* no tensor parallelism: these tests are about the search and its rules, and each tp
     * value multiplies the candidates (test_tp_compose.c tests plan's search of tp) */
    cpb_knobs_set_int(&o.given, "tp", 0);
    return o;
}

static int fits(const cpb_plan_cand *c)
{
    return c->bound == CPB_BOUND_COMPUTE || c->bound == CPB_BOUND_COMM;
}

static int eligible_kind(const cpb_plan_cand *c, int uncal)
{
    return fits(c) && !c->low_headroom && c->uncalibrated == uncal;
}

/* the recommendation follows plan.h's rules: it fits with the floor's headroom, is
 * calibrated when any eligible one is, no eligible one of its kind is faster by more than
 * the tie, and none within the tie leaves more memory free; the table is in order */
static void check_recommendation(const cpb_plan *pl)
{
    cr_assert_geq(pl->recommended, 0, "a recommendation");
    const cpb_plan_cand *r = &pl->c[pl->recommended];
    cr_expect(fits(r), "the recommendation fits");
    cr_expect_str_eq(r->row.status, "ok");
    cr_expect_leq(r->need, r->cap, "%s: needs %lld of %lld", r->m->name, (long long)r->need, (long long)r->cap);
    cr_expect_leq(r->need_host, r->cap_host);
    cr_expect_gt(r->row.tokens_per_s_per_gpu, 0);
    cr_expect(!r->low_headroom, "the recommendation has the floor's headroom");
    cr_expect_geq(cpb_plan_headroom(r), pl->min_headroom);
    cr_expect_eq(r->uncalibrated, pl->rec_uncalibrated);
    int nfit = 0;
    for (int i = 0; i < pl->n; i++) {
        const cpb_plan_cand *c = &pl->c[i];
        cr_expect_eq(fits(c), c->row.code == CPB_OK, "%s %s: fits iff its row is ok", c->m->name, c->knobs);
        if (c->row.code != CPB_OK) cr_expect(c->need > c->cap || c->need_host > c->cap_host || c->bound == CPB_BOUND_ERROR,
                                              "%s %s does not fit: it needs more than there is", c->m->name, c->knobs);
        cr_expect_eq(c->uncalibrated, cpb_plan_row_uncalibrated(&c->row));
        cr_expect_eq(c->low_headroom, fits(c) && cpb_plan_headroom(c) < pl->min_headroom);
        if (!fits(c)) continue;
        nfit++;
        if (pl->rec_uncalibrated) cr_expect(!eligible_kind(c, 0), "%s %s: calibrated and eligible", c->m->name, c->knobs);
        if (!eligible_kind(c, r->uncalibrated)) continue;
        cr_expect_leq(c->row.tokens_per_s_per_gpu, r->row.tokens_per_s_per_gpu / (1.0 - pl->tie) * (1 + 1e-12),
                      "%s %s (%g) is faster than the recommendation %s %s (%g) by more than the tie", c->m->name,
                      c->knobs, c->row.tokens_per_s_per_gpu, r->m->name, r->knobs, r->row.tokens_per_s_per_gpu);
        if (c->tie) cr_expect_leq(cpb_plan_headroom(c), cpb_plan_headroom(r), "%s %s: tied, with more headroom",
                                  c->m->name, c->knobs);
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
    cr_expect(pl->c[pl->fastest].frontier, "the fastest is on the frontier");
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
    /* every registered method that accepts the shape is there, with its knobs searched */
    for (int m = 0; m < cpb_method_count(); m++) {
        const cpb_method *meth = cpb_method_at(m);
        int n = 0;
        for (int i = 0; i < pl.n; i++) n += pl.c[i].m == meth;
        cr_expect(n > 0, "%s has candidates for llama3-8b on 8 GPUs at 4M (refused: %s)", meth->name, pl.refusals);
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
    cpb_knobs_set_int(&o.given, "tp", 0); /* as opts(): tp is not what this tests */
    cr_assert_eq(cpb_plan_search(&o, &pl, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_geq(pl.recommended, 0);
    const cpb_plan_cand *r = &pl.c[pl.recommended];
    for (int i = 0; i < pl.n; i++) {
        const cpb_plan_cand *c = &pl.c[i];
        if (!fits(c)) continue;
        cr_expect_eq(c->low_headroom, cpb_plan_headroom(c) < o.min_headroom);
        if (eligible_kind(c, r->uncalibrated))
            cr_expect_leq(c->max_seq, r->max_seq + o.bisect, "%s %s fits %lld, more than the recommendation's %lld "
                          "and the bisection step", c->m->name, c->knobs, (long long)c->max_seq, (long long)r->max_seq);
        if (c->low_headroom) continue; /* listed at its longest length under the floor */
        cr_expect_eq(c->p.S, c->max_seq, "the row is the one at the longest length");
        cr_expect_str_eq(c->row.status, "ok");
        /* a longer length did not fit with the floor's headroom, to within the bisection step (or the range ended) */
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

/* ---- issue 25: the recommendation's rules on made-up candidates */
static void fake2(cpb_plan_cand *c, double tps, int64_t need, const char *attn)
{
    fake(c, CPB_BOUND_COMPUTE, tps, need, (double)need / 100 - 1);
    snprintf(c->row.attn_impl, sizeof c->row.attn_impl, "%s", attn);
}

static void rank(cpb_plan *pl, cpb_plan_cand *c, int n, double floor, int max_context)
{
    memset(pl, 0, sizeof *pl);
    pl->c = c;
    pl->n = n;
    pl->min_headroom = floor;
    pl->tie = CPB_PLAN_TIE;
    cpb_plan_rank(pl, max_context);
}

Test(plan, headroom_floor_lists_but_never_recommends)
{
    cpb_plan_cand c[3];
    cpb_plan pl;
    fake2(&c[0], 100, 95, "cudnn"); /* fastest, 5% headroom */
    fake2(&c[1], 90, 70, "cudnn");  /* 30% */
    fake2(&c[2], 80, 91, "cudnn");  /* 9% */
    rank(&pl, c, 3, 0.10, 0);
    cr_expect_eq(pl.recommended, 1);
    cr_expect_eq(pl.fastest, 0, "the fastest is listed first");
    cr_expect_eq(pl.order[0], 0);
    cr_expect(c[0].low_headroom && !c[1].low_headroom && c[2].low_headroom);
    cr_expect_eq(pl.low, 2);
    free(pl.order);
    /* the floor at 0: the fastest */
    rank(&pl, c, 3, 0, 0);
    cr_expect_eq(pl.recommended, 0);
    free(pl.order);
    /* every one under the floor: nothing recommended, the roomiest named, none "closest" */
    c[1].need = 92;
    rank(&pl, c, 3, 0.10, 0);
    cr_expect_eq(pl.recommended, -1);
    cr_expect_eq(pl.roomiest_low, 2, "9%% is the most headroom");
    cr_expect_eq(pl.closest, -1, "they fit");
    free(pl.order);
}

Test(plan, speeds_within_the_uncertainty_tie_and_headroom_breaks_it)
{
    cpb_plan_cand c[4];
    cpb_plan pl;
    /* the README's case: 0.01% faster with 6% headroom against 20% */
    fake2(&c[0], 127.61, 94, "cudnn");
    fake2(&c[1], 127.60, 80, "cudnn");
    fake2(&c[2], 127.0, 76, "cudnn");  /* 0.5% slower, 24%: the roomiest of the tied */
    fake2(&c[3], 120.0, 50, "cudnn");  /* 6% slower: not tied */
    rank(&pl, c, 4, 0.05, 0);
    cr_expect_eq(pl.recommended, 2);
    cr_expect(c[0].tie && c[1].tie && c[2].tie && !c[3].tie);
    cr_expect_eq(pl.ties, 2);
    cr_expect_eq(pl.fastest, 0);
    free(pl.order);
    /* no tie: the fastest, unmarked */
    c[1].row.tokens_per_s_per_gpu = 110;
    c[2].row.tokens_per_s_per_gpu = 100;
    rank(&pl, c, 4, 0.05, 0);
    cr_expect_eq(pl.recommended, 0);
    cr_expect_eq(pl.ties, 0);
    cr_expect(!c[0].tie);
    cr_expect_eq(pl.runner_up, 3, "the next eligible one");
    free(pl.order);
    /* equal headroom among the tied: the faster */
    fake2(&c[0], 100, 80, "cudnn");
    fake2(&c[1], 101, 80, "cudnn");
    rank(&pl, c, 2, 0.10, 0);
    cr_expect_eq(pl.recommended, 1);
    free(pl.order);
}

Test(plan, uncalibrated_is_marked_and_recommended_only_when_nothing_calibrated_fits)
{
    cpb_plan_cand c[3];
    cpb_plan pl;
    fake2(&c[0], 400, 60, "own");   /* --attn own */
    fake2(&c[1], 300, 60, "mixed"); /* bwd on our kernels (--upipe-bwd delta) */
    fake2(&c[2], 100, 60, "cudnn");
    rank(&pl, c, 3, 0.10, 0);
    cr_expect(c[0].uncalibrated && c[1].uncalibrated && !c[2].uncalibrated);
    cr_expect_eq(pl.recommended, 2);
    cr_expect_eq(pl.rec_uncalibrated, 0);
    cr_expect_eq(pl.best_calibrated, 2);
    free(pl.order);
    /* the calibrated one under the floor: the uncalibrated recommended, and said so */
    c[2].need = 95;
    rank(&pl, c, 3, 0.10, 0);
    cr_expect_eq(pl.recommended, 0);
    cr_expect_eq(pl.rec_uncalibrated, 1);
    cr_expect_eq(pl.runner_up, 1, "the next of its kind");
    free(pl.order);
    /* the calibrated one does not fit at all: the same */
    c[2].need = 60;
    c[2].bound = CPB_BOUND_DEVICE_MEM;
    rank(&pl, c, 3, 0.10, 0);
    cr_expect_eq(pl.recommended, 0);
    cr_expect_eq(pl.rec_uncalibrated, 1);
    free(pl.order);
    cr_expect(cpb_plan_row_uncalibrated(&c[1].row));
    cr_expect(!cpb_plan_row_uncalibrated(&c[2].row));
}

Test(plan, max_context_ties_within_the_bisection_step)
{
    /* the case: 7.75M uncalibrated at a crawl, 7.5M calibrated 4.5x faster */
    cpb_plan_cand c[3];
    cpb_plan pl;
    fake2(&c[0], 10, 80, "mixed");
    c[0].max_seq = 31 << 18; /* 7.75M */
    fake2(&c[1], 45, 85, "cudnn");
    c[1].max_seq = 30 << 18; /* 7.5M */
    fake2(&c[2], 50, 80, "cudnn");
    c[2].max_seq = 28 << 18; /* 7M: two steps short */
    memset(&pl, 0, sizeof pl);
    pl.c = c;
    pl.n = 3;
    pl.min_headroom = 0.10;
    pl.bisect = 1 << 18;
    cpb_plan_rank(&pl, 1);
    cr_expect_eq(pl.order[0], 0, "the table: the longest first");
    cr_expect_eq(pl.recommended, 1, "calibrated, the longest of those");
    free(pl.order);
    pl.order = NULL;
    /* both calibrated: 7.75M and 7.5M are one step apart, a tie on length; the faster wins */
    snprintf(c[0].row.attn_impl, sizeof c[0].row.attn_impl, "cudnn");
    cpb_plan_rank(&pl, 1);
    cr_expect_eq(pl.recommended, 1);
    free(pl.order);
}

Test(plan, method_filter_and_stacks)
{
    cr_expect(cpb_plan_method_listed(NULL, "ring"));
    cr_expect(cpb_plan_method_listed("", "ring"));
    cr_expect(cpb_plan_method_listed("ulysses,ring", "ring"));
    cr_expect(!cpb_plan_method_listed("ulysses,ring", "rin"));
    cr_expect(!cpb_plan_method_listed("ulysses,ringx", "ring"));
    static cpb_plan pl;
    char err[1024] = "";
    cpb_plan_opts o = opts("llama3-8b", 8, 1 << 20, "layer");
    o.methods = "ulysses,usp";
    cr_assert_eq(cpb_plan_search(&o, &pl, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(pl.methods, 2);
    cr_expect_gt(pl.n, 1);
    for (int i = 0; i < pl.n; i++)
        cr_expect(!strcmp(pl.c[i].m->name, "ulysses") || !strcmp(pl.c[i].m->name, "usp"), "%s", pl.c[i].m->name);
    check_recommendation(&pl);
    cpb_plan_free(&pl);
    o.methods = "ulysses,nosuch";
    cr_expect_eq(cpb_plan_search(&o, &pl, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "nosuch") != NULL, "%s", err);
    /* the stacks come from the frameworks' table */
    char m[256];
    cr_assert(cpb_plan_stack_methods("yunchang", m, sizeof m));
    cr_expect_str_eq(m, "ulysses,ring,usp");
    cr_assert(cpb_plan_stack_methods("deepspeed", m, sizeof m));
    cr_expect_str_eq(m, "ulysses,fpdt");
    cr_assert(cpb_plan_stack_methods("torchtitan", m, sizeof m));
    cr_expect_str_eq(m, "ring");
    cr_assert(cpb_plan_stack_methods("megatron", m, sizeof m));
    cr_expect_str_eq(m, "ulysses,ring,usp,tp");
    cr_expect(!cpb_plan_stack_methods("jax", m, sizeof m));
}

Test(plan, framework_settings_of_a_recommendation)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("llama3-8b", &p), CPB_OK);
    p.C = 8;
    p.S = 4 << 20;
    cpb_knobs_set_int(&p.knobs, "ulysses_degree", 4);
    cpb_knobs_set_int(&p.knobs, "seq_chunk", 512 << 10);
    char out[2048];
    cr_expect_eq(cpb_plan_framework_settings(cpb_method_find("usp"), &p, NULL, out, sizeof out), 2);
    cr_expect(strstr(out, "yunchang: ulysses_degree=4 ring_degree=2") != NULL, "%s", out);
    cr_expect(strstr(out, "--hierarchical-context-parallel-sizes 4 2") != NULL, "%s", out);
    cr_expect_eq(cpb_plan_framework_settings(cpb_method_find("fpdt"), &p, NULL, out, sizeof out), 1);
    cr_expect(strstr(out, "sequence_parallel_size=8, FPDT_Attention chunk_size=524288") != NULL, "%s", out);
    cr_expect_eq(cpb_plan_framework_settings(cpb_method_find("ring"), &p, NULL, out, sizeof out), 3);
    cr_expect(strstr(out, "--context-parallel-size 8 --cp-comm-type p2p") != NULL, "%s", out);
    cr_expect(strstr(out, "context_parallel_degree=8") != NULL, "%s", out);
    cr_expect_eq(cpb_plan_framework_settings(cpb_method_find("upipe"), &p, NULL, out, sizeof out), 0);
    cr_expect(strstr(out, "no framework") != NULL, "%s", out);
    /* one family's (--stack) */
    cr_expect_eq(cpb_plan_framework_settings(cpb_method_find("ring"), &p, "torchtitan", out, sizeof out), 1);
    cr_expect(strstr(out, "megatron") == NULL, "%s", out);
    cr_expect_eq(cpb_plan_framework_settings(cpb_method_find("fpdt"), &p, "megatron", out, sizeof out), 0);
}

/* a candidate the simulator declined (status unsupported: e.g. more trace entries than its
 * bound) is a limit of the tool, counted apart from the errors that make plan exit 1; any
 * other failure stays an error, and a candidate that ran is neither */
Test(plan, a_declined_point_is_not_an_error)
{
    cpb_plan_cand c;
    memset(&c, 0, sizeof c);
    c.bound = CPB_BOUND_ERROR;
    c.row.code = CPB_ERR_UNSUPPORTED;
    cr_expect_eq(cpb_plan_cand_unsimulated(&c), 1);
    c.row.code = CPB_ERR_RACE;
    cr_expect_eq(cpb_plan_cand_unsimulated(&c), 0, "a race is a bug, not a limit");
    c.row.code = CPB_ERR_INVALID;
    cr_expect_eq(cpb_plan_cand_unsimulated(&c), 0);
    c.bound = CPB_BOUND_DEVICE_MEM;
    c.row.code = CPB_ERR_OOM;
    cr_expect_eq(cpb_plan_cand_unsimulated(&c), 0, "out of memory is a result");
    c.bound = CPB_BOUND_COMPUTE;
    c.row.code = CPB_ERR_UNSUPPORTED; /* not possible for a fitting candidate; the bound decides */
    cr_expect_eq(cpb_plan_cand_unsimulated(&c), 0);
}
