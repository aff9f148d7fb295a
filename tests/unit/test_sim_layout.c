/* test_sim_layout.c — the whole model's layout (model_scope_layout.c, plan_layout.c): the
 * GPUs as --cp context-parallel ranks times replicas, --dp agreeing with it or deriving it,
 * the refusals that name the option, the row of a layout with replicas, and which layouts
 * plan tries. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_method.h"
#include "cpb_presets.h"
#include "knobs.h"
#include "model_scope.h"
#include "plan.h"

static cpb_knobs layout(int cp, int dp)
{
    cpb_knobs k;
    memset(&k, 0, sizeof k);
    if (cp) cpb_knobs_set_int(&k, "cp", cp);
    if (dp) cpb_knobs_set_int(&k, "dp", dp);
    return k;
}

Test(sim_layout, cp_and_dp_resolve_to_one_layout)
{
    char err[512];
    int cp;
    /* nothing given: every GPU in the group, the dp knob left as asked */
    cpb_knobs k = layout(0, 0);
    cr_expect_eq(cpb_layout_resolve(&k, 8, &cp, err, sizeof err), CPB_OK);
    cr_expect_eq(cp, 8);
    cr_expect_null(cpb_knobs_find(&k, "dp"));
    /* --cp: the replicas derived; --dp alone: cp derived; both: they agree */
    const int cases[][4] = {{8, 4, 0, 4}, {8, 0, 2, 4}, {8, 2, 4, 2}, {12, 3, 0, 3}, {12, 0, 3, 4}, {6, 6, 0, 6}, {7, 1, 0, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        k = layout(cases[i][1], cases[i][2]);
        cr_assert_eq(cpb_layout_resolve(&k, cases[i][0], &cp, err, sizeof err), CPB_OK, "%s", err);
        cr_expect_eq(cp, cases[i][3], "gpus %d cp %d dp %d", cases[i][0], cases[i][1], cases[i][2]);
        cr_expect_eq(cpb_knobs_find(&k, "dp")->i, cases[i][0] / cp);
    }
}

Test(sim_layout, a_layout_that_does_not_divide_is_refused_by_name)
{
    char err[512];
    int cp;
    cpb_knobs k = layout(3, 0);
    cr_expect_eq(cpb_layout_resolve(&k, 8, &cp, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "--cp 3") && strstr(err, "1, 2, 4, 8"), "%s", err);
    k = layout(0, 3);
    cr_expect_eq(cpb_layout_resolve(&k, 8, &cp, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "--dp 3") != NULL, "%s", err);
    k = layout(4, 4);
    cr_expect_eq(cpb_layout_resolve(&k, 8, &cp, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "disagree") && strstr(err, "--gpus 8"), "%s", err);
    k = layout(16, 0);
    cr_expect_eq(cpb_layout_resolve(&k, 8, &cp, err, sizeof err), CPB_ERR_INVALID, "more ranks than GPUs");
}

Test(sim_layout, plan_tries_the_divisors_of_the_gpus)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    p.C = 12;
    int64_t v[32];
    int n = cpb_layout_cp_candidates(&p, v, 32);
    const int64_t want[] = {1, 2, 3, 4, 6, 12};
    cr_assert_eq(n, 6);
    for (int i = 0; i < n; i++) cr_expect_eq(v[i], want[i]);
    /* --dp alone fixes cp (not searched); a bad one is refused */
    char err[512];
    cpb_knobs g = layout(0, 2);
    cr_expect_eq(cpb_plan_layout_given(&g, 8, err, sizeof err), CPB_OK);
    cr_expect_eq(cpb_knobs_find(&g, "cp")->i, 4);
    g = layout(0, 5);
    cr_expect_eq(cpb_plan_layout_given(&g, 8, err, sizeof err), CPB_ERR_INVALID);
}

Test(sim_layout, plan_leaves_out_layouts_that_cannot_be_the_answer)
{
    cpb_plan_opts o;
    memset(&o, 0, sizeof o);
    cr_assert_eq(cpb_preset_find("llama3-8b", &o.base), CPB_OK);
    o.base.C = 8;
    o.base.S = (int64_t)16 << 20;
    o.base.dtype = CPB_BF16;
    char why[512];
    /* at 16M tokens one GPU's layer inputs (x, dy, dx: 3 x 16M x 4096 x 2 B = 384 GiB) do
     * not fit an 80 GB device; 8 GPUs' (48 GiB) may */
    cpb_knobs c = layout(1, 0);
    cpb_problem p = o.base;
    cr_expect_eq(cpb_plan_layout(&o, &o.given, &c, &p, why, sizeof why), CPB_PLAN_LAYOUT_SKIP);
    c = layout(8, 0);
    p = o.base;
    cr_expect_eq(cpb_plan_layout(&o, &o.given, &c, &p, why, sizeof why), CPB_PLAN_LAYOUT_USE);
    cr_expect_eq(p.C, 8);
    c = layout(4, 0); /* 96 GiB */
    p = o.base;
    cr_expect_eq(cpb_plan_layout(&o, &o.given, &c, &p, why, sizeof why), CPB_PLAN_LAYOUT_SKIP);
    o.base.S = (int64_t)4 << 20; /* 24 GiB at cp 4 */
    c = layout(4, 0);
    p = o.base;
    cr_expect_eq(cpb_plan_layout(&o, &o.given, &c, &p, why, sizeof why), CPB_PLAN_LAYOUT_USE);
    cr_expect_eq(p.C, 4);
    cr_expect_eq(cpb_knobs_find(&c, "dp")->i, 2);
    /* the longest context is at cp = GPUs: smaller groups are not searched ... */
    o.max_context = 1;
    c = layout(4, 0);
    p = o.base;
    cr_expect_eq(cpb_plan_layout(&o, &o.given, &c, &p, why, sizeof why), CPB_PLAN_LAYOUT_SKIP);
    /* ... unless the layout is given */
    cpb_knobs_set_int(&o.given, "cp", 4);
    p = o.base;
    cr_expect_eq(cpb_plan_layout(&o, &o.given, &c, &p, why, sizeof why), CPB_PLAN_LAYOUT_USE);
}

Test(sim_layout, replicas_run_the_trial_on_cp_ranks_and_count_every_gpu)
{
    const cpb_method *m = cpb_method_find("ulysses");
    cr_assert(m);
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("llama3-8b", &p), CPB_OK);
    p.S = 1 << 18;
    p.dtype = CPB_BF16;
    cpb_knobs given = layout(4, 0);
    char err[1024];
    int C;
    cr_assert_eq(cpb_layout_resolve(&given, 8, &C, err, sizeof err), CPB_OK);
    p.C = C;
    cr_assert_eq(cpb_knobs_apply(m, &given, &p, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(cpb_layout_gpus(&p), 8);
    cpb_model_estimate *e = NULL;
    cr_assert_eq(cpb_model_estimate_new(&p, m, NULL, &e, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(e->status, CPB_OK, "%s", e->reason);
    cr_expect_eq(e->attn.world_size, 4, "the attention layer runs on the cp ranks");
    cr_expect_eq(e->setup.cp, 4);
    cr_expect_eq(e->setup.dp, 2);
    /* states sharded over all 8 GPUs */
    cr_expect_eq(e->moment[0].states, (int64_t)(16.0 * e->params / 8));
    static cpb_row r;
    cpb_model_estimate_row(e, &r);
    /* per GPU: one replica's S over its 4 GPUs; the job's tokens/s: both replicas' */
    cr_expect_float_eq(r.tokens_per_s_per_gpu, (double)p.S / e->step_s / 4, 1e-9 * r.tokens_per_s_per_gpu);
    cr_expect_float_eq(r.tokens_per_s, 2.0 * p.S / e->step_s, 1e-9 * r.tokens_per_s);
    char v[128], o[64];
    cpb_setup_part_value(&e->setup, CPB_PART_CP, v, sizeof v);
    cpb_setup_part_origin(&e->setup, CPB_PART_CP, o, sizeof o);
    cr_expect(strstr(v, "4") && strcmp(o, "command line") == 0, "%s [%s]", v, o);
    cpb_setup_part_origin(&e->setup, CPB_PART_DP, o, sizeof o);
    cr_expect_str_eq(o, "derived: GPUs / --cp");
    cpb_model_estimate_free(e);
}

/* the header of a sweep (the layout given) and of a plan (cp searched unless given) */
static char *given_block(const cpb_knobs *k, int gpus, int search)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(cpb_setup_print_given(f, k, gpus, search, "# "), CPB_OK);
    fclose(f);
    return buf;
}

Test(sim_layout, the_assumptions_block_says_where_the_layout_came_from)
{
    cpb_knobs k = layout(4, 0);
    cpb_knobs_set_int(&k, "lora_rank", 16);
    char *b = given_block(&k, 8, 0);
    cr_expect(strstr(b, "context parallel    4 (the attention layer's ranks) [command line]") != NULL, "%s", b);
    cr_expect(strstr(b, "replicas            2 (8 GPUs = cp 4 x 2) [derived: GPUs / --cp]") != NULL, "%s", b);
    cr_expect(strstr(b, "LoRA rank           16 (LoRA") != NULL, "%s", b);
    free(b);
    k = layout(0, 0);
    b = given_block(&k, 8, 0);
    cr_expect(strstr(b, "context parallel    8 (the attention layer's ranks) [default: every GPU]") != NULL, "%s", b);
    free(b);
    b = given_block(&k, 6, 1);
    cr_expect(strstr(b, "context parallel    searched: each divisor of the 6 GPUs [plan's search]") != NULL, "%s", b);
    free(b);
    /* a plan with the layout given does not search it */
    k = layout(0, 3);
    b = given_block(&k, 6, 1);
    cr_expect(strstr(b, "context parallel    2 (the attention layer's ranks) [derived: GPUs / --dp]") != NULL, "%s", b);
    cr_expect(strstr(b, "replicas            3 (6 GPUs = cp 2 x 3) [command line]") != NULL, "%s", b);
    free(b);
}

/* Under --tp T a GPU holds 1/T of every weight matrix: a state replicated across the
 * data-parallel ranks counts 1/T per GPU, a state sharded over every GPU is unchanged, and
 * --cp counts the CP degree alone (a replica is cp x T GPUs). */
Test(sim_layout, tp_divides_the_replicated_states_and_the_replica)
{
    cpb_setup s;
    memset(&s, 0, sizeof s);
    s.dev_rep = 6, s.dev_sh = 10, s.host_rep = 2, s.host_sh = 4;
    double dev1, host1, dev4, host4;
    s.tp = 1;
    cpb_setup_state_bytes(&s, 1e9, 1e9, 64, &dev1, &host1);
    s.tp = 4;
    cpb_setup_state_bytes(&s, 1e9, 1e9, 64, &dev4, &host4);
    cr_expect_float_eq(dev1, (6 + 10.0 / 64) * 1e9, 1, "tp 1: %g", dev1);
    cr_expect_float_eq(dev4, (6.0 / 4 + 10.0 / 64) * 1e9, 1, "tp 4: the replicated 6 bytes count 1/4: %g", dev4);
    cr_expect_float_eq(host4, (2.0 / 4 + 4.0 / 64) * 1e9, 1, "tp 4, host: %g", host4);

    cpb_knobs k = {0};
    char err[256] = "";
    int world = 0;
    cpb_knobs_set_int(&k, "cp", 4);
    cpb_knobs_set_int(&k, "tp", 2);
    cr_assert_eq(cpb_layout_resolve(&k, 16, &world, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(world, 8, "--cp 4 --tp 2 on 16 GPUs: a replica of 8 ranks, not %d", world);
    cr_expect_eq(cpb_knob_int(&(cpb_problem){.knobs = k}, "dp"), 2, "two replicas");
    cpb_knobs bad = {0};
    cpb_knobs_set_int(&bad, "cp", 4);
    cpb_knobs_set_int(&bad, "tp", 4);
    cr_expect_neq(cpb_layout_resolve(&bad, 8, &world, err, sizeof err), CPB_OK, "--cp 4 x --tp 4 is 16 GPUs, not 8");
    cr_expect(strstr(err, "--tp 4") != NULL, "the message names --tp: %s", err);
}
