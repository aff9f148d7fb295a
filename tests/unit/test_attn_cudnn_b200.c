/* test_attn_cudnn_b200.c — cuDNN's attention on the b200 profile from NVIDIA's measured
 * curve (backends/sim/sim_attn_curves.c: cudnn-frontend @9793df5,
 * benchmark/sdpa_benchmark_training/artifacts/sdpa_bf16_benchmark_results_NVIDIA_B200.csv):
 * the benchmark's own call reproduces its published TFLOP/s, other calls are read off the
 * curve, the other profiles keep their form, and a calibration replaces the curve. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cpb.h"
#include "cpb_attn_route.h"
#include "gpu_profiles.h"
#include "sim/sim_attn_curves.h"
#include "sim/timeline.h"

static cpb_gpu_profile get(const char *name)
{
    cpb_gpu_profile p;
    char err[256] = "";
    cr_assert_eq(cpb_gpu_profile_get(name, &p, err, sizeof err), CPB_OK, "%s: %s", name, err);
    return p;
}

static int has_estimate(const cpb_gpu_profile *p, const char *key)
{
    const char *s = cpb_gpu_profile_estimates(p);
    size_t n = strlen(key);
    for (const char *at = strstr(s, key); at; at = strstr(at + 1, key))
        if ((at == s || at[-1] == ',') && (at[n] == ',' || at[n] == 0)) return 1;
    return 0;
}

/* the benchmark's call: batch 1, 128 query heads, d 128, causal, length L */
static double bench_tflops(const cpb_gpu_profile *p, int bwd, int64_t L)
{
    return cpb_sim_attn_eff_d(&p->hw, CPB_ATTN_CUDNN, bwd, L, 128, L * (L + 1) / 2, 128) * p->hw.peak_flops / 1e12;
}

Test(attn_cudnn_b200, the_benchmark_call_reproduces_the_published_tflops)
{
    cpb_gpu_profile b200 = get("b200");
    /* by hand from the CSV's pyt_cudnn times at 32K and the script's flops(): causal
     * forward 4 * 1 * 32768 * 32768 * 128 * 128 / 2 = 3.5184372e13 FLOP in 24.611 ms,
     * backward 2.5 times that in 78.227 ms */
    const double f = 4.0 * 32768 * 32768 * 128 * 128 / 2;
    cr_expect_float_eq(bench_tflops(&b200, 0, 32768), f / 24.611e-3 / 1e12, 0.05, "fwd %g",
                       bench_tflops(&b200, 0, 32768));
    cr_expect_float_eq(bench_tflops(&b200, 1, 32768), 2.5 * f / 78.227e-3 / 1e12, 0.05, "bwd %g",
                       bench_tflops(&b200, 1, 32768));
    /* 64K: 97.192 ms forward, 332.507 ms backward */
    const double f64 = 4.0 * 65536 * 65536 * 128 * 128 / 2;
    cr_expect_float_eq(bench_tflops(&b200, 0, 65536), f64 / 97.192e-3 / 1e12, 0.05);
    cr_expect_float_eq(bench_tflops(&b200, 1, 65536), 2.5 * f64 / 332.507e-3 / 1e12, 0.05);
    /* the table's own columns, and between points: linear in log2(length) */
    cr_expect_float_eq(cpb_sim_cudnn_tflops(CPB_CUDNN_CURVE_B200, 0, 16384), 1349.763, 1e-9);
    cr_expect_float_eq(cpb_sim_cudnn_tflops(CPB_CUDNN_CURVE_B200, 1, 131072), 1023.503, 1e-9);
    cr_expect_float_eq(cpb_sim_cudnn_tflops(CPB_CUDNN_CURVE_B200, 0, 16384 * 1.4142135623730951),
                       (1349.763 + 1429.616) / 2, 1e-6);
    /* outside 512..128K: the end values */
    cr_expect_float_eq(cpb_sim_cudnn_tflops(CPB_CUDNN_CURVE_B200, 0, 1 << 20), 1330.234, 1e-9);
    cr_expect_float_eq(cpb_sim_cudnn_tflops(CPB_CUDNN_CURVE_B200, 1, 256), 38.041, 1e-9);
    cr_expect_float_eq(cpb_sim_cudnn_tflops(CPB_CUDNN_CURVE_NONE, 0, 16384), 0, 1e-12);
}

Test(attn_cudnn_b200, other_calls_are_read_off_the_curve)
{
    cpb_gpu_profile b200 = get("b200");
    /* an unmasked ring step, 16K queries x 32K keys, 128 heads: the causal curve at twice
     * its keys per row (64K); 128 row blocks x 128 heads fill the SMs as the benchmark's */
    int64_t q = 16384, k = 32768;
    double e = cpb_sim_attn_eff_d(&b200.hw, CPB_ATTN_CUDNN, 0, q, 128, q * k, 128);
    cr_expect_float_eq(e * b200.hw.peak_flops / 1e12, 1448.032, 5.0, "unmasked %g", e * b200.hw.peak_flops / 1e12);
    /* one head of a short call leaves SMs idle: below the benchmark's figure */
    double one = cpb_sim_attn_eff_d(&b200.hw, CPB_ATTN_CUDNN, 0, 4096, 1, 4096LL * 4097 / 2, 128);
    cr_expect_lt(one, cpb_sim_cudnn_bench_eff(&b200.hw, CPB_CUDNN_CURVE_B200, 0, 4096));
    /* our kernels keep their Hopper-fraction form on the b200 */
    cr_expect_float_eq(cpb_sim_attn_eff_d(&b200.hw, CPB_ATTN_OWN, 1, q, 128, q * k, 128),
                       cpb_sim_attn_eff_of(&b200.hw, CPB_ATTN_OWN, 1, q, 128, q * k), 1e-12);
    /* no other profile has a measured cuDNN curve: their cuDNN form is unchanged */
    for (int i = 0; i < cpb_gpu_profile_count(); i++) {
        cpb_gpu_profile p = get(cpb_gpu_profile_name_at(i));
        if (strcmp(p.name, "b200") == 0) continue;
        cr_expect_eq(p.hw.attn_fwd_curve, CPB_CUDNN_CURVE_NONE, "%s", p.name);
        cr_expect_eq(p.hw.attn_bwd_curve, CPB_CUDNN_CURVE_NONE, "%s", p.name);
        cr_expect_float_eq(cpb_sim_attn_eff_d(&p.hw, CPB_ATTN_CUDNN, 0, q, 128, q * (q + 1) / 2, 128),
                           cpb_sim_attn_eff_of(&p.hw, CPB_ATTN_CUDNN, 0, q, 128, q * (q + 1) / 2), 1e-12, "%s",
                           p.name);
    }
}

Test(attn_cudnn_b200, measured_passes_leave_the_estimates_and_calibration_replaces_them)
{
    cpb_gpu_profile p = get("b200");
    cr_expect(!has_estimate(&p, "attn_fwd_tflops") && !has_estimate(&p, "attn_bwd_tflops"), "%s", p.estimated);
    cr_expect(has_estimate(&p, "attn_cudnn_off_curve") && has_estimate(&p, "gemm_tflops"), "%s", p.estimated);
    char line[1024];
    cpb_gpu_profile_attn_model(&p, line, sizeof line);
    cr_expect(strstr(line, "cudnn 1430/1124 TFLOP/s fwd/bwd at 32K causal d 128") && strstr(line, "@9793df5"), "%s",
              line);

    /* a forward ceiling measured on the user's GPU replaces the forward curve only */
    char path[64], err[256] = "";
    snprintf(path, sizeof path, "/tmp/cpb_calib_b200cudnn_%d.txt", (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("attn_fwd_tflops = 1200\n", f);
    fclose(f);
    cr_assert_eq(cpb_gpu_profile_calibrate(&p, path, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(p.hw.attn_fwd_curve, CPB_CUDNN_CURVE_NONE);
    cr_expect_eq(p.hw.attn_bwd_curve, CPB_CUDNN_CURVE_B200);
    cr_expect(has_estimate(&p, "attn_cudnn_off_curve"), "the backward is still read off the curve: %s", p.estimated);
    int64_t L = 32768;
    cr_expect_float_eq(cpb_sim_attn_eff_d(&p.hw, CPB_ATTN_CUDNN, 0, L, 128, L * (L + 1) / 2, 128),
                       cpb_sim_attn_eff_of(&p.hw, CPB_ATTN_CUDNN, 0, L, 128, L * (L + 1) / 2), 1e-12);
    /* both passes calibrated: nothing is read off the curve */
    f = fopen(path, "w");
    cr_assert(f);
    fputs("attn_bwd_tflops = 900\n", f);
    fclose(f);
    cr_assert_eq(cpb_gpu_profile_calibrate(&p, path, err, sizeof err), CPB_OK, "%s", err);
    unlink(path);
    cr_expect_eq(p.hw.attn_bwd_curve, CPB_CUDNN_CURVE_NONE);
    cr_expect(!has_estimate(&p, "attn_cudnn_off_curve"), "%s", p.estimated);
}
