/* test_sim_pp.c — pipeline parallelism of the whole-model estimate (model_scope_pp.c): the
 * layout tp x cp x pp x dp and its refusals, the stages' layers (even and Megatron's uneven
 * first / last), the micro-batches in flight (Megatron's schedules.py warm-up counts), the
 * pipeline's time (bubble and sends, hand-worked), the per-GPU rates over every GPU, the
 * worst rank's memory and the assumptions line. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_method.h"
#include "cpb_presets.h"
#include "knobs.h"
#include "model_scope.h"
#include "model_scope_pp.h"

static cpb_knobs knobs(int tp, int cp, int pp)
{
    cpb_knobs k;
    memset(&k, 0, sizeof k);
    if (tp) cpb_knobs_set_int(&k, "tp", tp);
    if (cp) cpb_knobs_set_int(&k, "cp", cp);
    if (pp) cpb_knobs_set_int(&k, "pp", pp);
    return k;
}

Test(sim_pp, the_layout_is_tp_cp_pp_dp)
{
    char err[1024];
    int C;
    /* 16 GPUs = tp 2 x cp 2 x pp 2 x dp 2: the attention layer's world tp x cp = 4 */
    cpb_knobs k = knobs(2, 2, 2);
    cr_assert_eq(cpb_layout_resolve(&k, 16, &C, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(C, 4);
    cr_expect_eq(cpb_knobs_find(&k, "dp")->i, 2);
    cpb_problem p;
    memset(&p, 0, sizeof p);
    p.C = C;
    p.knobs = k;
    cr_expect_eq(cpb_layout_gpus(&p), 16);
    /* nothing but --pp: every GPU of a stage in the context-parallel group */
    k = knobs(0, 0, 4);
    cr_assert_eq(cpb_layout_resolve(&k, 8, &C, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(C, 2);
    /* a pp that does not divide the GPUs, and a cp that does not divide a stage's GPUs */
    k = knobs(0, 0, 3);
    cr_expect_eq(cpb_layout_resolve(&k, 8, &C, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "--pp 3") && strstr(err, "1, 2, 4, 8"), "%s", err);
    k = knobs(0, 8, 2);
    cr_expect_eq(cpb_layout_resolve(&k, 8, &C, err, sizeof err), CPB_ERR_INVALID, "cp 8 x pp 2 is 16 GPUs, not 8");
    cr_expect(strstr(err, "--cp 8") && strstr(err, "--pp 2"), "%s", err);
    /* plan's cp candidates are a stage's divisors (pp is never searched) */
    p.C = 12;
    memset(&p.knobs, 0, sizeof p.knobs);
    cpb_knobs_set_int(&p.knobs, "pp", 2);
    int64_t v[32];
    int n = cpb_layout_cp_candidates(&p, v, 32);
    cr_expect_eq(n, 4, "the divisors of 6: 1, 2, 3, 6");
    cr_expect_eq(v[n - 1], 6);
}

static int plan_of(int layers, int m, int pp, int vpp, int first, int last, cpb_pp_plan *pl, char *err, size_t len)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    if (pp) cpb_knobs_set_int(&p.knobs, "pp", pp);
    if (vpp) cpb_knobs_set_int(&p.knobs, "vpp", vpp);
    if (first) cpb_knobs_set_int(&p.knobs, "pp_first_layers", first);
    if (last) cpb_knobs_set_int(&p.knobs, "pp_last_layers", last);
    return cpb_pp_plan_of(&p, layers, m, pl, err, len);
}

Test(sim_pp, layers_split_evenly_or_as_megatrons_uneven_stages_or_are_refused)
{
    char err[512];
    cpb_pp_plan pl;
    cr_assert_eq(plan_of(32, 8, 4, 0, 0, 0, &pl, err, sizeof err), CPB_OK, "%s", err);
    cr_expect(pl.first == 8 && pl.mid == 8 && pl.last == 8);
    /* L % pp != 0: refused, naming the option and the uneven-stage alternative */
    cr_expect_eq(plan_of(126, 8, 16, 0, 0, 0, &pl, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "--pp 16") && strstr(err, "126") && strstr(err, "--pp-first-layers"), "%s", err);
    /* Llama 3 405B: 126 layers on 16 stages, one fewer on the first and the last (7 + 14 x 8 + 7) */
    cr_assert_eq(plan_of(126, 16, 16, 0, 7, 7, &pl, err, sizeof err), CPB_OK, "%s", err);
    cr_expect(pl.first == 7 && pl.mid == 8 && pl.last == 7, "%d %d %d", pl.first, pl.mid, pl.last);
    /* only the first given: 30 = 6 + 3 x 8 */
    cr_assert_eq(plan_of(30, 8, 4, 0, 6, 0, &pl, err, sizeof err), CPB_OK, "%s", err);
    cr_expect(pl.first == 6 && pl.mid == 8 && pl.last == 8);
    cr_expect_eq(plan_of(30, 8, 4, 0, 5, 0, &pl, err, sizeof err), CPB_ERR_INVALID, "25 over 3 stages");
    cr_expect(strstr(err, "--pp-first-layers 5") != NULL, "%s", err);
    /* interleaved: the layers must divide by pp x vpp; not with uneven stages; not without pp */
    cr_expect_eq(plan_of(32, 8, 2, 3, 0, 0, &pl, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "--vpp 3") != NULL, "%s", err);
    cr_expect_eq(plan_of(32, 8, 2, 2, 0, 0, &pl, err, sizeof err), CPB_OK);
    cr_expect_eq(plan_of(32, 8, 4, 2, 7, 0, &pl, err, sizeof err), CPB_ERR_INVALID);
    cr_expect_eq(plan_of(32, 8, 0, 2, 0, 0, &pl, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "--pp > 1") != NULL, "%s", err);
    cr_expect_eq(plan_of(4, 8, 8, 0, 0, 0, &pl, err, sizeof err), CPB_ERR_INVALID, "more stages than layers");
}

Test(sim_pp, micro_batches_in_flight_follow_megatrons_warmup)
{
    char err[512];
    cpb_pp_plan pl;
    cpb_pp_rank k;
    /* 1F1B (schedules.py: warm-up min(pp - rank - 1, m), one more in the steady state) */
    cr_assert_eq(plan_of(32, 8, 4, 0, 0, 0, &pl, err, sizeof err), CPB_OK);
    const double want[4] = {4, 3, 2, 1};
    for (int r = 0; r < 4; r++) {
        cpb_pp_rank_of(&pl, r, &k);
        cr_expect_eq(k.in_flight, want[r], "rank %d: %g", r, k.in_flight);
        cr_expect_eq(k.live_layers, want[r] * 8);
    }
    cpb_pp_rank_of(&pl, 0, &k);
    cr_expect(k.first && !k.last);
    /* fewer micro-batches than stages: all m */
    cr_assert_eq(plan_of(32, 2, 4, 0, 0, 0, &pl, err, sizeof err), CPB_OK);
    cpb_pp_rank_of(&pl, 0, &k);
    cr_expect_eq(k.in_flight, 2);
    /* interleaved pp 4, v 2, m 8: rank 0 warms up (4-1) 2 + (2-1) 4 = 10 chunks, 11 in flight
     * = 5.5 micro-batches = pp (1 + (pp-1)/(pp v)) (Korthikanti et al. sec. 4.2.3) */
    cr_assert_eq(plan_of(32, 8, 4, 2, 0, 0, &pl, err, sizeof err), CPB_OK);
    cpb_pp_rank_of(&pl, 0, &k);
    cr_expect_float_eq(k.in_flight, 4 * (1 + 3.0 / 8), 1e-12);
    cr_expect_float_eq(k.live_layers, 5.5 * 8, 1e-12);
    /* the last rank: (v - 1) pp = 4 chunks warm-up, 5 in flight */
    cpb_pp_rank_of(&pl, 3, &k);
    cr_expect_float_eq(k.in_flight, 2.5, 1e-12);
    /* m == pp: every chunk's forward first (all m v = 8 chunks: 4 micro-batches) */
    cr_assert_eq(plan_of(32, 4, 4, 2, 0, 0, &pl, err, sizeof err), CPB_OK);
    cpb_pp_rank_of(&pl, 0, &k);
    cr_expect_float_eq(k.in_flight, 4, 1e-12);
}

Test(sim_pp, the_step_is_m_slowest_stages_plus_the_bubble_and_the_sends)
{
    char err[512];
    cpb_pp_plan pl;
    cpb_sim_hw hw;
    memset(&hw, 0, sizeof hw);
    hw.gpus_per_node = 8;
    hw.sendrecv_busbw = 100e9;
    hw.inter_busbw = 50e9;
    hw.coll_lat = 0;
    hw.inter_lat = 1e-5;
    /* 4 stages of 2 layers, 8 micro-batches, 1 s per layer, no head, no message:
     * (m + pp - 1) x 2 s = 22 s, the bubble (pp - 1) x 2 = 6 s */
    cr_assert_eq(plan_of(8, 8, 4, 0, 0, 0, &pl, err, sizeof err), CPB_OK);
    cr_expect_float_eq(cpb_pp_step(&pl, 1.0, 0.0, 0.0, &hw, 2), 22.0, 1e-12);
    cr_expect_float_eq(pl.bubble_s, 6.0, 1e-12);
    cr_expect_eq(pl.msg_inter, 0);
    /* the LM head and loss (1 s) on the last rank set the pace: 8 x 3 + (2 + 2 + 2) = 30 s */
    cr_expect_float_eq(cpb_pp_step(&pl, 1.0, 1.0, 0.0, &hw, 2), 30.0, 1e-12);
    /* sends: 1 GB over NVLink (stride 2 < 8 GPUs per node) at 100 GB/s: 0.01 s each, two per
     * slot of the m + pp - 1 = 11: 0.22 s */
    cpb_pp_step(&pl, 1.0, 0.0, 1e9, &hw, 2);
    cr_expect_float_eq(pl.p2p_s, 0.22, 1e-12);
    cr_expect_float_eq(pl.pipe_s, 22.22, 1e-12);
    /* neighbours 8 ranks apart: the network (1 GB / 50 GB/s + 10 us) */
    cpb_pp_step(&pl, 1.0, 0.0, 1e9, &hw, 8);
    cr_expect_eq(pl.msg_inter, 1);
    cr_expect_float_eq(pl.msg_s, 0.02 + 1e-5, 1e-12);
    /* interleaved v = 2 (paper sec. 2.2.2: bubble / v): 16 + 6 / 2 = 19 s; only the fill's
     * and drain's 2 (pp - 1) sends exposed */
    cr_assert_eq(plan_of(8, 8, 4, 2, 0, 0, &pl, err, sizeof err), CPB_OK);
    cr_expect_float_eq(cpb_pp_step(&pl, 1.0, 0.0, 0.0, &hw, 2), 19.0, 1e-12);
    cpb_pp_step(&pl, 1.0, 0.0, 1e9, &hw, 2);
    cr_expect_float_eq(pl.messages, 6.0, 1e-12);
    /* no pipeline: m x the stage, nothing else */
    cr_assert_eq(plan_of(8, 8, 0, 0, 0, 0, &pl, err, sizeof err), CPB_OK);
    cr_expect_float_eq(cpb_pp_step(&pl, 1.0, 0.5, 1e9, &hw, 2), 8 * 8.5, 1e-12);
}

/* llama2-7b (32 layers) with ring on the layout given, m micro-batches */
static cpb_model_estimate *estimate(int gpus, int cp, int pp, int m, cpb_problem *out)
{
    const cpb_method *meth = cpb_method_find("ring");
    cr_assert(meth);
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("llama2-7b", &p), CPB_OK);
    p.S = 8192;
    p.dtype = CPB_BF16;
    cpb_knobs given = knobs(0, cp, pp);
    cpb_knobs_set_str(&given, "framework", "megatron");
    cpb_knobs_set_str(&given, "ckpt", "none");
    cpb_knobs_set_int(&given, "grad_accum", m);
    char err[1024];
    int C;
    cr_assert_eq(cpb_layout_resolve(&given, gpus, &C, err, sizeof err), CPB_OK, "%s", err);
    p.C = C;
    cr_assert_eq(cpb_knobs_apply(meth, &given, &p, err, sizeof err), CPB_OK, "%s", err);
    /* a device large enough for both layouts (their memory is compared, not checked) */
    cpb_sim_opts o;
    memset(&o, 0, sizeof o);
    o.mem_cap = (int64_t)1 << 40;
    cpb_model_estimate *e = NULL;
    cr_assert_eq(cpb_model_estimate_new(&p, meth, &o, &e, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(e->status, CPB_OK, "%s", e->reason);
    *out = p;
    return e;
}

Test(sim_pp, rates_are_over_every_gpu_and_memory_is_the_worst_ranks)
{
    cpb_problem p1, p2;
    /* 8 GPUs: cp 1 x pp 2 x dp 4 against cp 1 x dp 4 on 4 GPUs (the same stage layout) */
    cpb_model_estimate *e2 = estimate(8, 1, 2, 8, &p2);
    cpb_model_estimate *e1 = estimate(4, 1, 0, 8, &p1);
    cr_expect_eq(cpb_layout_gpus(&p2), 8);
    cr_expect_eq(e2->setup.dp, 4);
    cr_expect_eq(e2->pp.pp, 2);
    /* the model FLOPs of a step are the same 8 sequences per replica; per GPU over all
     * tp x cp x pp x dp GPUs: the step's FLOPs x 4 replicas / 8 GPUs / step (hand-worked) */
    cr_expect_float_eq(e2->model_flops, e1->model_flops, 1e-9 * e1->model_flops);
    static cpb_row r;
    cpb_model_estimate_row(e2, &r);
    const double per_gpu = e2->model_flops * 4 / 8 / e2->step_s / 1e12;
    cr_expect_float_eq(r.tflops_per_gpu, per_gpu, 1e-9 * per_gpu);
    cr_expect_float_eq(r.mfu_megatron, e2->model_flops_megatron * 4 / 8 / e2->step_s / 1e12 / r.peak_tflops,
                       1e-9 * r.mfu_megatron);
    cr_expect_float_eq(r.tokens_per_s_per_gpu, 8.0 * 8192 * 4 / 8 / e2->step_s, 1e-9 * r.tokens_per_s_per_gpu);
    /* the step: the same layer time; 8 micro-batches of the last stage (16 layers, head,
     * loss) plus the first stage's 16 layers, plus the sends, the optimizer and the
     * per-step collectives */
    cr_expect_float_eq(e2->layer_s, e1->layer_s, 1e-12);
    const double last = 16 * e2->layer_s + e2->head_s + e2->loss_s;
    cr_expect_float_eq(e2->pp.pipe_s, 8 * last + 16 * e2->layer_s + e2->pp.p2p_s, 1e-9 * e2->pp.pipe_s);
    cr_expect_float_eq(e2->step_s, e2->pp.pipe_s + e2->optimizer_s + e2->step_comm_s, 1e-12);
    /* memory: the first rank (2 micro-batches of 16 layers in flight) holds what the whole
     * model's 32 layers hold without PP: the same kept activations */
    cr_expect_eq(e2->pp_worst_rank, 0);
    cr_expect_float_eq(e2->pp_worst.in_flight, 2, 0);
    cr_expect_eq(e2->moment[CPB_MOMENT_ATTN_BWD].ckpt, e1->moment[CPB_MOMENT_ATTN_BWD].ckpt);
    /* its states: 16 layers and the embedding, sharded as without PP over its 4 GPUs */
    cpb_model_param_count c;
    cpb_model_params(&p2, e2->spec, &c);
    double dev, host;
    cpb_setup_state_bytes(&e2->setup, 16 * c.layer + c.embed, 16 * c.layer + c.embed, 4, &dev, &host);
    cr_expect_eq(e2->moment[e2->peak_moment].states, (int64_t)dev);
    /* the first rank has no loss moment */
    cr_expect_eq(e2->moment[CPB_MOMENT_LOSS].total, 0);
    cpb_model_estimate_free(e1);
    cpb_model_estimate_free(e2);
    /* one micro-batch: one in flight on the first rank, 15 of its 16 layers kept at the
     * attention backward against 31 of 32 */
    e2 = estimate(8, 1, 2, 1, &p2);
    e1 = estimate(4, 1, 0, 1, &p1);
    cr_expect_float_eq(e2->pp_worst.in_flight, 1, 0);
    cr_expect(e2->moment[CPB_MOMENT_ATTN_BWD].ckpt < e1->moment[CPB_MOMENT_ATTN_BWD].ckpt);
    cpb_model_estimate_free(e1);
    cpb_model_estimate_free(e2);
}

Test(sim_pp, a_model_whose_layers_do_not_split_is_refused_before_it_runs)
{
    const cpb_method *meth = cpb_method_find("ring");
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("llama2-7b", &p), CPB_OK);
    p.S = 8192;
    p.dtype = CPB_BF16;
    cpb_knobs given = knobs(0, 0, 3);
    char err[1024];
    int C;
    cr_assert_eq(cpb_layout_resolve(&given, 6, &C, err, sizeof err), CPB_OK, "%s", err);
    p.C = C;
    cr_assert_eq(cpb_knobs_apply(meth, &given, &p, err, sizeof err), CPB_OK, "%s", err);
    cpb_model_estimate *e = NULL;
    cr_expect_eq(cpb_model_estimate_new(&p, meth, NULL, &e, err, sizeof err), CPB_ERR_INVALID);
    cr_expect_null(e);
    cr_expect(strstr(err, "--pp 3") && strstr(err, "32 layers"), "%s", err);
}

Test(sim_pp, the_assumptions_block_names_the_pipeline_and_its_origin)
{
    cpb_knobs k = knobs(0, 2, 2);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(cpb_setup_print_given(f, &k, 8, 0, "# "), CPB_OK);
    fclose(f);
    cr_expect(strstr(buf, "pipeline            2 (stages; 1F1B, Megatron's schedule) [command line]") != NULL, "%s", buf);
    cr_expect(strstr(buf, "replicas            2 (8 GPUs = cp 2 x tp 1 x pp 2 x 2)") != NULL, "%s", buf);
    free(buf);
    k = knobs(0, 2, 0);
    buf = NULL;
    f = open_memstream(&buf, &len);
    cr_assert_eq(cpb_setup_print_given(f, &k, 8, 0, "# "), CPB_OK);
    fclose(f);
    cr_expect(strstr(buf, "pipeline            1 (none) [default: none]") != NULL, "%s", buf);
    free(buf);
}
