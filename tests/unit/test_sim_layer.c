/* test_sim_layer.c — the simulator driver: GPU profiles (unknown ones refused, calibration
 * files), OOM as a result, refusals, and the symmetric-allocation rule. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpb_method.h"
#include "cpb_presets.h"
#include "sim_layer.h"
#include "gpu_profiles.h"
#include "row.h"

Test(sim_profiles, unknown_profile_is_refused_with_the_valid_ones)
{
    cpb_gpu_profile p;
    char err[256] = "";
    cr_expect_eq(cpb_gpu_profile_get("v100", &p, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "v100") && strstr(err, "h100-sxm") && strstr(err, "a100-40g"), "%s", err);
    cr_expect_eq(cpb_gpu_profile_get(NULL, &p, err, sizeof err), CPB_OK);
    cr_expect_str_eq(p.name, "h100-sxm", "the default profile");
    for (int i = 0; i < cpb_gpu_profile_count(); i++) {
        cr_assert_eq(cpb_gpu_profile_get(cpb_gpu_profile_name_at(i), &p, err, sizeof err), CPB_OK);
        cr_expect_gt(cpb_gpu_profile_usable(&p), 30LL << 30, "%s: usable memory", p.name);
        cr_expect_lt(cpb_gpu_profile_usable(&p), p.mem_bytes, "%s: a reserve", p.name);
        cr_expect_gt(p.hw.peak_flops, 1e14);
        cr_expect_gt(p.hw.attn_fwd_eff_max, p.hw.attn_bwd_eff_max, "%s: backward attention is less efficient", p.name);
    }
}

Test(sim_profiles, sim_layer_refuses_unknown_profile)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cpb_preset_find("tiny", &p);
    p.C = 2;
    p.S = 128;
    if (cpb_method_count() == 0) return;
    cpb_sim_opts o = {0};
    o.gpu = "tpu-v5";
    cpb_row r;
    cr_expect_eq(cpb_sim_layer(&p, cpb_method_at(0), &o, &r), CPB_ERR_INVALID);
    cr_expect(strstr(r.reason, "tpu-v5") != NULL, "%s", r.reason);
}

static const char *write_tmp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/cpb_calib_%d.txt", (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
    return path;
}

Test(sim_profiles, calibration_file_overrides)
{
    cpb_gpu_profile p;
    char err[256] = "";
    cr_assert_eq(cpb_gpu_profile_get("h100-sxm", &p, err, sizeof err), CPB_OK);
    const char *path = write_tmp("# measured by bench-kernels\n"
                                 "attn_fwd_tflops = 600\n"
                                 "  gemm_tflops=700   # cuBLAS\n"
                                 "\n"
                                 "a2a_busbw_gbs = 300\n"
                                 "pcie_gbs = 50\n"
                                 "mem_gib = 79\n");
    cr_assert_eq(cpb_gpu_profile_calibrate(&p, path, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_float_eq(p.hw.attn_fwd_eff_max * p.hw.peak_flops, 600e12, 1e3);
    cr_expect_float_eq(p.hw.gemm_eff_max * p.hw.peak_flops, 700e12, 1e3);
    cr_expect_float_eq(p.hw.a2a_busbw, 300e9, 1);
    cr_expect_float_eq(p.hw.pcie_gpu_bw, 50e9, 1);
    cr_expect_eq(p.mem_bytes, 79LL << 30);
    path = write_tmp("attn_fwd_tflops = 600\nwarp_speed = 9\n");
    cr_expect_eq(cpb_gpu_profile_calibrate(&p, path, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, ":2:") && strstr(err, "warp_speed"), "names line and key: %s", err);
    path = write_tmp("pcie_gbs = fast\n");
    cr_expect_eq(cpb_gpu_profile_calibrate(&p, path, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "not a number"), "%s", err);
    unlink(path);
    /* a missing file is bad input (exit 2), as every input file of the checked opener */
    cr_expect_eq(cpb_gpu_profile_calibrate(&p, "/nonexistent/calib.txt", err, sizeof err), CPB_ERR_INVALID);
}

/* ---- a toy method: one saved buffer, optionally sized by rank (breaks the rule), and
 * planted bugs: a range left open, a view past the end of its buffer */

static int toy_asym, toy_open_range, toy_bad_view;

static int toy_check(const cpb_problem *p, char *why, size_t n)
{
    if (p->S % p->C) {
        snprintf(why, n, "S %lld must be a multiple of C %d", (long long)p->S, p->C);
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

static int toy_layout(const cpb_problem *p, int rank, cpb_segs *out)
{
    return cpb_layout_contiguous(p, rank, out);
}

static int toy_forward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    cpb_buf *saved;
    int64_t n = L->s * L->p.D * (toy_asym ? 1 + cpb_rank(ctx) : 1);
    CPB_TRY(cpb_alloc(ctx, &saved, n, CPB_BF16, CPB_TAG_SAVED, "saved"));
    CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_span(saved, toy_bad_view ? 1 : 0, L->s * L->p.D),
                     cpb_whole(L->x)));
    CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_whole(L->y), cpb_whole(L->x)));
    if (toy_open_range) CPB_TRY(cpb_range_push(ctx, "never popped"));
    *(cpb_buf **)state = saved;
    return CPB_OK;
}

static int toy_backward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    cpb_buf *saved = *(cpb_buf **)state;
    CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_whole(L->dx), cpb_whole(L->dy)));
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &saved);
}

static const cpb_method toy = {"toy", "test method", toy_check, toy_layout, NULL, sizeof(cpb_buf *), toy_forward,
                               toy_backward, NULL};

static cpb_problem toy_problem(int C, int64_t S)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cpb_preset_find("llama3-8b", &p);
    p.C = C;
    p.S = S;
    p.dtype = CPB_BF16;
    return p;
}

Test(sim_layer, exact_bytes_of_a_known_schedule)
{
    toy_asym = 0;
    cpb_problem p = toy_problem(4, 4096);
    cpb_row r;
    cr_assert_eq(cpb_sim_layer(&p, &toy, NULL, &r), CPB_OK, "%s", r.reason);
    cr_assert_eq(r.code, CPB_OK, "%s", r.reason);
    int64_t s = 1024, D = 4096, act = s * D * 2;
    int64_t weights = 2 * (D * 32 * 128 + 2 * D * 8 * 128 + 32 * 128 * D); /* bf16 */
    int64_t grads = 2 * weights;                                            /* fp32 */
    int64_t expect = 4 * act + weights + grads + act;                       /* x dy y dx + saved */
    cr_expect_eq(r.peak_bytes, expect, "peak %lld, expected %lld", (long long)r.peak_bytes, (long long)expect);
    cr_expect_eq(r.intermediate_bytes, act);
    cr_expect_eq(r.at_peak_bytes[CPB_TAG_SAVED], act);
}

Test(sim_layer, asymmetric_allocations_are_refused_naming_the_ranks)
{
    toy_asym = 1;
    cpb_problem p = toy_problem(4, 4096);
    cpb_row r;
    cr_assert_eq(cpb_sim_layer(&p, &toy, NULL, &r), CPB_OK);
    cr_expect_eq(r.code, CPB_ERR_INVALID);
    cr_expect_str_eq(r.status, "error", "a broken rule is a bug of the method, never a refusal");
    cr_expect(strstr(r.reason, "symmetric") && strstr(r.reason, "rank 0") && strstr(r.reason, "rank 1"), "%s",
              r.reason);
    toy_asym = 0;
}

/* a method's bugs are errors (rerun on resume, a non-zero exit), never "refused": only the
 * method's check() refuses */
Test(sim_layer, method_bugs_are_errors_not_refusals)
{
    static const struct { int *flag; const char *what, *says; } bugs[] = {
        {&toy_open_range, "a range left open", "open"},
        {&toy_bad_view, "a view past its buffer", "saved"},
    };
    cpb_problem p = toy_problem(4, 4096);
    cpb_row r;
    for (size_t i = 0; i < sizeof bugs / sizeof bugs[0]; i++) {
        *bugs[i].flag = 1;
        cr_assert_eq(cpb_sim_layer(&p, &toy, NULL, &r), CPB_OK);
        *bugs[i].flag = 0;
        cr_expect_str_eq(r.status, "error", "%s: %s", bugs[i].what, r.reason);
        cr_expect_neq(r.code, CPB_ERR_REFUSED, "%s", bugs[i].what);
        cr_expect(strstr(r.reason, bugs[i].says) != NULL, "%s: the reason says '%s': %s", bugs[i].what, bugs[i].says,
                  r.reason);
    }
    cr_assert_eq(cpb_sim_layer(&p, &toy, NULL, &r), CPB_OK);
    cr_expect_str_eq(r.status, "ok", "without a planted bug: %s", r.reason);
}

Test(sim_layer, oom_is_a_result)
{
    toy_asym = 0;
    cpb_problem p = toy_problem(8, (int64_t)8 << 20); /* 8M tokens: 1M per rank */
    cpb_sim_opts o = {0};
    o.mem_cap = 20LL << 30;                            /* x, dy, y, dx = 32 GiB */
    cpb_row r;
    cr_assert_eq(cpb_sim_layer(&p, &toy, &o, &r), CPB_OK);
    cr_expect_eq(r.code, CPB_ERR_OOM, "%s", r.reason);
    cr_expect(strstr(r.reason, "out of device memory") != NULL, "%s", r.reason);
}

Test(sim_layer, refusal_is_a_result)
{
    cpb_problem p = toy_problem(3, 1000);
    cpb_row r;
    cr_assert_eq(cpb_sim_layer(&p, &toy, NULL, &r), CPB_OK);
    cr_expect_eq(r.code, CPB_ERR_REFUSED);
    cr_expect_str_eq(r.status, "refused");
    cr_expect(strstr(r.reason, "multiple of C") != NULL, "%s", r.reason);
}

Test(sim_layer, model_flops_of_design_section_6)
{
    cpb_problem p = toy_problem(8, 1 << 20);
    double f, b;
    cpb_layer_model_flops(&p, &f, &b);
    double S = 1 << 20, attn = 2 * S * S * 32 * 128, proj = 2 * S * 4096 * 48 * 128 + 2 * S * 4096 * 4096;
    cr_expect_float_eq(f, attn + proj, 1e3);
    cr_expect_float_eq(b, 2.5 * attn + 2 * proj, 1e3);
}
