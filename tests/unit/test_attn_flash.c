/* test_attn_flash.c — FlashAttention-2/-3 as simulator-only implementations (--attn
 * fa2|fa3): the published curves and their interpolation, the workspace rule read from
 * FlashAttention's mha_bwd, the route's FlashAttention rules, the refusals (fa3 off Hopper,
 * fa2/fa3 off the simulator), and the implementation recorded per call class (a UPipe
 * `--upipe-bwd delta` row: forward cuDNN, backward our kernels; layer and model scope). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "attn_choice.h"
#include "cpb_attn_route.h"
#include "cpb_backend.h"
#include "cpb_method.h"
#include "cpb_presets.h"
#include "gpu_profiles.h"
#include "knobs.h"
#include "model_scope.h"
#include "registry.h"
#include "row.h"
#include "sim/sim_attn_curves.h"
#include "sim/timeline.h"
#include "sim_layer.h"

/* ---------------------------------------------------------------- curves */

Test(attn_flash, published_points_are_returned_exactly)
{
    /* FA3 paper Fig. 5b/5e/6b and FA2 (Fig. 5b) at d 128 */
    cr_expect_float_eq(cpb_sim_flash_tflops(CPB_ATTN_FA3, 0, 0, 16384, 128), 648, 1e-9);
    cr_expect_float_eq(cpb_sim_flash_tflops(CPB_ATTN_FA3, 0, 1, 2048, 128), 521, 1e-9);
    cr_expect_float_eq(cpb_sim_flash_tflops(CPB_ATTN_FA3, 1, 0, 512, 128), 316, 1e-9);
    cr_expect_float_eq(cpb_sim_flash_tflops(CPB_ATTN_FA3, 0, 0, 4096, 256), 736, 1e-9);
    cr_expect_float_eq(cpb_sim_flash_tflops(CPB_ATTN_FA2, 0, 0, 8192, 128), 370, 1e-9);
    cr_expect_float_eq(cpb_sim_flash_tflops(CPB_ATTN_FA2, 1, 0, 1024, 64), 238, 1e-9);
    cr_expect_float_eq(cpb_sim_flash_tflops(CPB_ATTN_CUDNN, 0, 0, 1024, 64), 0, 1e-9, "no curve for cuDNN");
}

Test(attn_flash, interpolation_in_log_length_and_log_head_dim)
{
    /* halfway between 1K and 2K in log2: the mean of the two points */
    double mid = sqrt(1024.0 * 2048.0);
    cr_expect_float_eq(cpb_sim_flash_tflops(CPB_ATTN_FA3, 0, 0, mid, 128), (565 + 625) / 2.0, 1e-9);
    /* a non-power-of-two length between the points: 3000 between 2K (625) and 4K (638) */
    double t = (log2(3000.0) - 11) / 1.0;
    cr_expect_float_eq(cpb_sim_flash_tflops(CPB_ATTN_FA3, 0, 0, 3000, 128), 625 + 13 * t, 1e-9);
    /* d 96: halfway between 64 and 128 in log2?  No: log2(96) = 6.585, t = 0.585 */
    double td = log2(96.0) - 6;
    cr_expect_float_eq(cpb_sim_flash_tflops(CPB_ATTN_FA3, 0, 1, 16384, 96), 473 + (616 - 473) * td, 1e-9);
    /* outside the published range: the end values */
    cr_expect_float_eq(cpb_sim_flash_tflops(CPB_ATTN_FA3, 0, 0, 100, 128), 467, 1e-9);
    cr_expect_float_eq(cpb_sim_flash_tflops(CPB_ATTN_FA3, 0, 0, 1 << 20, 128), 648, 1e-9);
    cr_expect_float_eq(cpb_sim_flash_tflops(CPB_ATTN_FA3, 0, 0, 16384, 32), 497, 1e-9, "d 32 takes d 64's");
    /* the backward is published for d 64 and 128: d 256 takes d 128's */
    cr_expect_float_eq(cpb_sim_flash_tflops(CPB_ATTN_FA3, 1, 0, 8192, 256), 559, 1e-9);
}

Test(attn_flash, causal_backward_carries_the_forward_mask_ratio)
{
    double expect = 542.0 * 579.0 / 638.0; /* FA3, 4K, d 128: bwd no-mask x fwd causal / fwd no-mask */
    cr_expect_float_eq(cpb_sim_flash_tflops(CPB_ATTN_FA3, 1, 1, 4096, 128), expect, 1e-9);
}

Test(attn_flash, gpu_arch_scales_the_curves)
{
    cpb_gpu_profile h100, a100, pcie;
    char err[256];
    cr_assert_eq(cpb_gpu_profile_get("h100-sxm", &h100, err, sizeof err), CPB_OK);
    cr_assert_eq(cpb_gpu_profile_get("a100-80g", &a100, err, sizeof err), CPB_OK);
    cr_assert_eq(cpb_gpu_profile_get("h100-pcie", &pcie, err, sizeof err), CPB_OK);
    /* Hopper: the measured fraction of the H100 SXM5's peak, on any Hopper peak */
    cr_expect_float_eq(cpb_sim_flash_bench_eff(&h100.hw, CPB_ATTN_FA3, 0, 0, 16384, 128), 648e12 / CPB_FLASH_CURVE_PEAK,
                       1e-12);
    cr_expect_float_eq(cpb_sim_flash_bench_eff(&pcie.hw, CPB_ATTN_FA3, 0, 0, 16384, 128),
                       cpb_sim_flash_bench_eff(&h100.hw, CPB_ATTN_FA3, 0, 0, 16384, 128), 1e-12);
    /* Ampere: FA2's top at the FlashAttention-2 paper's 73% of peak */
    cr_expect_float_eq(cpb_sim_flash_bench_eff(&a100.hw, CPB_ATTN_FA2, 0, 0, 16384, 128), 0.73, 1e-12);
    cr_expect_lt(cpb_sim_flash_bench_eff(&a100.hw, CPB_ATTN_FA2, 0, 1, 1024, 128), 0.73, "short causal calls less");
}

Test(attn_flash, the_timing_model_uses_the_curve_and_the_waves)
{
    cpb_gpu_profile h100;
    char err[256];
    cr_assert_eq(cpb_gpu_profile_get("h100-sxm", &h100, err, sizeof err), CPB_OK);
    /* the benchmark's own call (16K, 16 heads of d 128): exactly the published figure */
    int64_t L = 16384;
    double e = cpb_sim_attn_eff_d(&h100.hw, CPB_ATTN_FA3, 0, L, 16, L * (L + 1) / 2, 128);
    cr_expect_float_eq(e * h100.hw.peak_flops, 616e12 * h100.hw.peak_flops / CPB_FLASH_CURVE_PEAK, 1e9);
    /* one head of a short call leaves SMs idle: less than the benchmark's figure */
    double one = cpb_sim_attn_eff_d(&h100.hw, CPB_ATTN_FA3, 0, 2048, 1, 2048LL * 2048, 128);
    cr_expect_lt(one, cpb_sim_flash_bench_eff(&h100.hw, CPB_ATTN_FA3, 0, 0, 2048, 128));
    /* cuDNN and our kernels keep their own curves */
    cr_expect_float_eq(cpb_sim_attn_eff_d(&h100.hw, CPB_ATTN_CUDNN, 1, L, 16, L * L, 128),
                       cpb_sim_attn_eff_of(&h100.hw, CPB_ATTN_CUDNN, 1, L, 16, L * L), 1e-12);
}

/* ---------------------------------------------------------------- route and workspace */

static cpb_buf bq, bk, bv, bo, blse, bdo, bdq, bdk, bdv;

static cpb_buf *buf(cpb_buf *b, cpb_dtype t)
{
    b->dtype = t;
    b->nelem = (int64_t)1 << 40;
    return b;
}

static cpb_attn_args call(int64_t sq, int64_t sk, int64_t hq, int64_t hk, int64_t d)
{
    cpb_attn_args a;
    memset(&a, 0, sizeof a);
    a.q = cpb_heads(buf(&bq, CPB_BF16), 0, sq, hq, d, hq * d, d);
    a.k = cpb_heads(buf(&bk, CPB_BF16), 0, sk, hk, d, hk * d, d);
    a.v = cpb_heads(buf(&bv, CPB_BF16), 0, sk, hk, d, hk * d, d);
    a.o = cpb_heads(buf(&bo, CPB_BF16), 0, sq, hq, d, hq * d, d);
    a.lse = cpb_lse_view(buf(&blse, CPB_FP32), sq, 0, hq, 0, sq);
    a.d_o = cpb_heads(buf(&bdo, CPB_BF16), 0, sq, hq, d, hq * d, d);
    a.dq = cpb_heads(buf(&bdq, CPB_BF16), 0, sq, hq, d, hq * d, d);
    a.dk = cpb_heads(buf(&bdk, CPB_BF16), 0, sk, hk, d, hk * d, d);
    a.dv = cpb_heads(buf(&bdv, CPB_BF16), 0, sk, hk, d, hk * d, d);
    a.causal = 1;
    return a;
}

static cpb_attn_route route(const cpb_attn_args *a, int bwd, cpb_attn_choice c, int caps)
{
    cpb_attn_route r;
    cpb_attn_route_call(a, bwd, c, caps, &r);
    return r;
}

#define SIM_CAPS (CPB_ATTN_CAP_CUDNN | CPB_ATTN_CAP_FLASH_MODEL)

Test(attn_flash, route_follows_flashattention_rules)
{
    cpb_attn_args a = call(384, 384, 6, 2, 256); /* d 256: FlashAttention's, not cuDNN's */
    cr_expect_eq(route(&a, 0, CPB_ATTN_CHOOSE_FA2, SIM_CAPS).impl, CPB_ATTN_FA2);
    cr_expect_eq(route(&a, 1, CPB_ATTN_CHOOSE_FA3, SIM_CAPS).impl, CPB_ATTN_FA3);
    cr_expect_eq(route(&a, 0, CPB_ATTN_CHOOSE_AUTO, SIM_CAPS).impl, CPB_ATTN_OWN);
    /* bottom-right causal (q the last 96 of 200 keys) is FlashAttention's mask, not cuDNN's */
    a = call(96, 200, 4, 4, 128);
    a.q_pos0 = 104, a.k_pos0 = 0;
    cr_expect_eq(route(&a, 0, CPB_ATTN_CHOOSE_FA3, SIM_CAPS).impl, CPB_ATTN_FA3);
    cr_expect_eq(route(&a, 0, CPB_ATTN_CHOOSE_CUDNN, SIM_CAPS).impl, CPB_ATTN_OWN);
    /* top-left with sq < sk is neither */
    a.q_pos0 = 0;
    cpb_attn_route r = route(&a, 0, CPB_ATTN_CHOOSE_FA2, SIM_CAPS);
    cr_expect_eq(r.impl, CPB_ATTN_OWN);
    cr_expect(strstr(r.why, "general position offsets"), "%s", r.why);
    /* a backward without o goes to our kernels */
    a = call(128, 128, 4, 1, 128);
    a.o.buf = NULL;
    r = route(&a, 1, CPB_ATTN_CHOOSE_FA3, SIM_CAPS);
    cr_expect_eq(r.impl, CPB_ATTN_OWN);
    cr_expect(strstr(r.why, "no o"), "%s", r.why);
    /* int64 offsets: past cuDNN's 2^31 elements still served */
    a = call((int64_t)1 << 22, (int64_t)1 << 22, 8, 8, 128);
    cr_expect_eq(route(&a, 0, CPB_ATTN_CHOOSE_FA3, SIM_CAPS).impl, CPB_ATTN_FA3);
    /* accumulation goes through the temporaries */
    a = call(128, 128, 4, 2, 128);
    a.accumulate = 1;
    r = route(&a, 1, CPB_ATTN_CHOOSE_FA2, SIM_CAPS);
    cr_expect(r.adapt & CPB_ATTN_ADAPT_GRADS);
    cr_expect(r.adapt & CPB_ATTN_ADAPT_LSE);
    /* a backend that does not model FlashAttention: unavailable, with the reason */
    r = route(&a, 1, CPB_ATTN_CHOOSE_FA3, CPB_ATTN_CAP_CUDNN);
    cr_expect(r.unavailable);
    cr_expect(strstr(r.why, "simulator-only") && strstr(r.why, "--backend sim"), "%s", r.why);
    cr_expect_eq(cpb_attn_choice_parse("fa2"), CPB_ATTN_CHOOSE_FA2);
    cr_expect_eq(cpb_attn_choice_parse("fa3"), CPB_ATTN_CHOOSE_FA3);
    cr_expect_str_eq(cpb_attn_impl_name(CPB_ATTN_FA3), "fa3");
}

Test(attn_flash, workspace_rule_of_each_source)
{
    /* FA2 mha_bwd, MHA, d 128, L 1000: softmax_d 4*h*1024 + dq_accum 4*1024*h*128 */
    cpb_attn_args a = call(1000, 1000, 4, 4, 128);
    cr_expect_eq(cpb_attn_flash_workspace_bytes(&a, 1, CPB_ATTN_FA2), 4 * 4 * 1024 + 4 * 1024 * 4 * 128);
    /* GQA adds dk_expanded, dv_expanded: bf16 [sk][hq][d] each */
    a = call(1000, 1000, 12, 4, 128);
    cr_expect_eq(cpb_attn_flash_workspace_bytes(&a, 1, CPB_ATTN_FA2),
                 4 * 12 * 1024 + 4 * 1024 * 12 * 128 + 2 * 2 * 1000 * 12 * 128);
    /* d 40: FA2 rounds the accumulator's head dim to 64 (multiple of 32) */
    a = call(256, 256, 2, 2, 40);
    cr_expect_eq(cpb_attn_flash_workspace_bytes(&a, 1, CPB_ATTN_FA2), 4 * 2 * 256 + 4 * 256 * 2 * 64);
    /* FA3 mha_bwd, causal d 128 (kBlockM 64, kBlockN 128), L 1000 -> 1024 rows, GQA 12/4:
     * softmax_d + lse_log2, dq_accum, dq_semaphore, dk_accum + dv_accum fp32 */
    a = call(1000, 1000, 12, 4, 128);
    int64_t fa3 = 2 * 4 * 12 * 1024 + 4 * 12 * 1024 * 128 + 4 * (1024 / 64) * 12 + 2 * 4 * 4 * 1024 * 128;
    cr_expect_eq(cpb_attn_flash_workspace_bytes(&a, 1, CPB_ATTN_FA3), fa3);
    /* unmasked d 128: kBlockM 80 -> 1040 rows */
    a.causal = 0;
    fa3 = 2 * 4 * 12 * 1040 + 4 * 12 * 1040 * 128 + 4 * (1040 / 80) * 12 + 2 * 4 * 4 * 1024 * 128;
    cr_expect_eq(cpb_attn_flash_workspace_bytes(&a, 1, CPB_ATTN_FA3), fa3);
    /* MHA: no dk/dv accumulators; forward: nothing beyond the lse temporary */
    a = call(1000, 1000, 4, 4, 64);
    cr_expect_eq(cpb_attn_flash_workspace_bytes(&a, 1, CPB_ATTN_FA3), 2 * 4 * 4 * 1024 + 4 * 4 * 1024 * 64 + 4 * 8 * 4);
    cr_expect_eq(cpb_attn_flash_workspace_bytes(&a, 0, CPB_ATTN_FA3), 0);
    /* sized by the longer side: the ranks of a zigzag step allocate alike */
    cpb_attn_args x = call(512, 256, 8, 2, 128), y = call(256, 512, 8, 2, 128);
    cr_expect_eq(cpb_attn_flash_workspace_bytes(&x, 1, CPB_ATTN_FA3), cpb_attn_flash_workspace_bytes(&y, 1, CPB_ATTN_FA3));
}

/* ---------------------------------------------------------------- refusals, rows */

static cpb_problem llama(int64_t S, int C, const char *knob, const char *value, const char *knob2, const char *value2)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("llama3-8b", &p), CPB_OK);
    p.C = C;
    p.S = S;
    p.dtype = CPB_BF16;
    if (knob) cpb_knobs_set_str(&p.knobs, knob, value);
    if (knob2) cpb_knobs_set_str(&p.knobs, knob2, value2);
    return p;
}

Test(attn_flash, fa3_is_refused_off_hopper_and_flash_off_the_simulator)
{
    const cpb_method *m = cpb_method_find("ulysses");
    cr_assert(m);
    cpb_problem p = llama(64 * 1024, 8, "attn", "fa3", NULL, NULL);
    static cpb_row r;
    cpb_sim_opts o = {0};
    o.gpu = "a800-80g";
    cr_assert_eq(cpb_sim_layer(&p, m, &o, &r), CPB_OK);
    cr_expect_str_eq(r.status, "refused");
    cr_expect(strstr(r.reason, "Hopper") && strstr(r.reason, "a800-80g") && strstr(r.reason, "--attn fa2"), "%s",
              r.reason);
    o.gpu = "a100-80g";
    cr_assert_eq(cpb_sim_layer(&p, m, &o, &r), CPB_OK);
    cr_expect_str_eq(r.status, "refused");
    /* fa2 runs on Ampere; fa3 on every Hopper profile */
    cpb_problem p2 = llama(64 * 1024, 8, "attn", "fa2", NULL, NULL);
    o.gpu = "a800-80g";
    cr_assert_eq(cpb_sim_layer(&p2, m, &o, &r), CPB_OK);
    cr_expect_str_eq(r.status, "ok", "%s", r.reason);
    cr_expect_str_eq(r.attn_fwd_impl, "fa2");
    o.gpu = "h800";
    cr_assert_eq(cpb_sim_layer(&p, m, &o, &r), CPB_OK);
    cr_expect_str_eq(r.status, "ok", "%s", r.reason);
    /* the cpu backend has no FlashAttention: refused before anything runs */
    char why[512] = "";
    cr_expect_eq(cpb_attn_backend_refusal(&p, &cpb_backend_cpu, why, sizeof why), CPB_ERR_REFUSED);
    cr_expect(strstr(why, "simulator-only") && strstr(why, "cpu"), "%s", why);
    cr_expect_eq(cpb_attn_backend_refusal(&p, &cpb_backend_sim, why, sizeof why), CPB_OK);
    cpb_problem pc = llama(64 * 1024, 8, "attn", "cudnn", NULL, NULL);
    cr_expect_eq(cpb_attn_backend_refusal(&pc, &cpb_backend_cpu, why, sizeof why), CPB_OK);
    cr_expect(cpb_attn_choice_is_estimate("fa3") && !cpb_attn_choice_is_estimate("cudnn"));
}

Test(attn_flash, rows_record_the_implementation_per_call_class)
{
    const cpb_method *m = cpb_method_find("upipe");
    cr_assert(m);
    static cpb_row r;
    cpb_sim_opts o = {0};
    /* --upipe-bwd delta: forward on cuDNN, backward (no o) on our kernels */
    cpb_problem p = llama(64 * 1024, 8, "upipe_bwd", "delta", NULL, NULL);
    cr_assert_eq(cpb_sim_layer(&p, m, &o, &r), CPB_OK);
    cr_assert_str_eq(r.status, "ok", "%s", r.reason);
    cr_expect_str_eq(r.attn_impl, "mixed");
    cr_expect_str_eq(r.attn_fwd_impl, "cudnn");
    cr_expect_str_eq(r.attn_bwd_impl, "own");
    cr_expect_str_eq(r.estimates, "", "h100-sxm, cuDNN: nothing estimated in the sense of the column");
    /* with fa3 the forward is FlashAttention's, the delta backward still ours; labelled */
    p = llama(64 * 1024, 8, "upipe_bwd", "delta", "attn", "fa3");
    o.gpu = "h800";
    cr_assert_eq(cpb_sim_layer(&p, m, &o, &r), CPB_OK);
    cr_assert_str_eq(r.status, "ok", "%s", r.reason);
    cr_expect_str_eq(r.attn_fwd_impl, "fa3");
    cr_expect_str_eq(r.attn_bwd_impl, "own");
    cr_expect(strstr(r.estimates, "attn.fa3") && strstr(r.estimates, "gpu.a2a_busbw_gbs"), "%s", r.estimates);
    /* the model scope carries the attention layer's classes (it was empty before) */
    cpb_problem pm = llama(64 * 1024, 8, "upipe_bwd", "delta", NULL, NULL);
    char err[1024] = "";
    cpb_knobs given = pm.knobs; /* apply() clears the problem's knobs before reading the given ones */
    cr_assert_eq(cpb_knobs_apply(m, &given, &pm, err, sizeof err), CPB_OK, "%s", err);
    cpb_model_estimate *e = NULL;
    cr_assert_eq(cpb_model_estimate_new(&pm, m, NULL, &e, err, sizeof err), CPB_OK, "%s", err);
    cpb_model_estimate_row(e, &r);
    cpb_model_estimate_free(e);
    cr_expect_str_eq(r.scope, "model");
    cr_expect_str_eq(r.attn_fwd_impl, "cudnn");
    cr_expect_str_eq(r.attn_bwd_impl, "own");
    cr_expect_str_eq(r.attn_impl, "mixed");
}

Test(attn_flash, fa3_predicts_faster_than_fa2_on_hopper)
{
    const cpb_method *m = cpb_method_find("ulysses");
    cr_assert(m);
    static cpb_row r;
    cpb_sim_opts o = {0};
    double step[2];
    const char *impl[2] = {"fa2", "fa3"};
    for (int i = 0; i < 2; i++) {
        cpb_problem p = llama(256 * 1024, 8, "attn", impl[i], NULL, NULL);
        cr_assert_eq(cpb_sim_layer(&p, m, &o, &r), CPB_OK);
        cr_assert_str_eq(r.status, "ok", "%s", r.reason);
        step[i] = r.step_s;
    }
    /* FA3's curve is 1.7-1.8x FA2's at long lengths on the H100 (Fig. 5-6) */
    cr_expect_gt(step[0], 1.4 * step[1], "fa2 %g s, fa3 %g s", step[0], step[1]);
}

/* the model scope's selective recompute of the attention core costs at --attn's ceiling */
Test(attn_flash, recompute_ceiling_follows_the_choice)
{
    cpb_gpu_profile h100;
    char err[256];
    cr_assert_eq(cpb_gpu_profile_get("h100-sxm", &h100, err, sizeof err), CPB_OK);
    cpb_problem p = llama(1 << 20, 8, "attn", "fa3", NULL, NULL);
    cr_expect_float_eq(cpb_attn_fwd_ceiling(&p, &h100.hw), 616e12 / CPB_FLASH_CURVE_PEAK, 1e-12);
    p = llama(1 << 20, 8, "attn", "own", NULL, NULL);
    cr_expect_float_eq(cpb_attn_fwd_ceiling(&p, &h100.hw), h100.hw.attn_own_fwd_eff_max, 1e-12);
    p = llama(1 << 20, 8, NULL, NULL, NULL, NULL);
    cr_expect_float_eq(cpb_attn_fwd_ceiling(&p, &h100.hw), h100.hw.attn_fwd_eff_max, 1e-12);
}

/* --calibration overrides a profile's figure on a simulated row, and the row no longer
 * lists it among its estimates */
Test(attn_flash, calibrated_figure_leaves_the_row_estimates)
{
    const cpb_method *m = cpb_method_find("ulysses");
    cr_assert(m);
    char path[64];
    snprintf(path, sizeof path, "/tmp/cpb_calib_flash_%d.txt", (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("a2a_busbw_gbs = 120\nmem_gib = 79\n", f);
    fclose(f);
    cpb_problem p = llama(64 * 1024, 8, NULL, NULL, NULL, NULL);
    static cpb_row plain, calibrated;
    cpb_sim_opts o = {0};
    o.gpu = "h800";
    cr_assert_eq(cpb_sim_layer(&p, m, &o, &plain), CPB_OK);
    o.calibration = path;
    cr_assert_eq(cpb_sim_layer(&p, m, &o, &calibrated), CPB_OK);
    unlink(path);
    cr_assert_str_eq(calibrated.status, "ok", "%s", calibrated.reason);
    cr_expect(strstr(plain.estimates, "gpu.a2a_busbw_gbs") && strstr(plain.estimates, "gpu.mem_gib"), "%s",
              plain.estimates);
    cr_expect(!strstr(calibrated.estimates, "gpu.a2a_busbw_gbs") && !strstr(calibrated.estimates, "gpu.mem_gib"),
              "%s", calibrated.estimates);
    cr_expect(strstr(calibrated.estimates, "gpu.inter_busbw_gbs"), "%s", calibrated.estimates);
    /* the slower all-to-all shows in the step, the smaller memory in the capacity */
    cr_expect_gt(calibrated.step_s, plain.step_s);
    cr_expect_lt(calibrated.capacity_bytes, plain.capacity_bytes);
}
