/* test_fp8_casts.c — the fp8 linears' cast traffic (driver/model_scope_fp8.c) on hand-computed
 * cases, and its place in the whole-model estimate: torchao's rule under the torchtitan
 * presets, nothing where the framework's fp8 library is not modelled, nothing in bf16. */
#include <criterion/criterion.h>
#include <string.h>

#include "cpb_method.h"
#include "cpb_presets.h"
#include "knobs.h"
#include "gpu_profiles.h"
#include "model_scope.h"

static const cpb_fp8_casts torchao = {.fwd_x = 5, .fwd_w = 5, .bwd_x = 2, .bwd_dy = 7, .bwd_w = 2};

/* T 10, K 3, N 4: x 30, w 12, dy 40 elements */
Test(fp8_casts, one_linear_by_hand)
{
    /* 2 forward passes: 2 (5*30 + 5*12) = 420; backward 2*30 + 7*40 + 2*12 = 364 */
    cr_expect_float_eq(cpb_fp8_linear_cast_bytes(&torchao, 10, 3, 4, 2, 1), 784.0, 1e-12);
    /* 1 forward pass: 210 + 364 */
    cr_expect_float_eq(cpb_fp8_linear_cast_bytes(&torchao, 10, 3, 4, 1, 1), 574.0, 1e-12);
    /* 3 tiles: the weight cast in each: 2 (150 + 180) + 60 + 280 + 72 */
    cr_expect_float_eq(cpb_fp8_linear_cast_bytes(&torchao, 10, 3, 4, 2, 3), 1072.0, 1e-12);
}

Test(fp8_casts, mlp_by_hand)
{
    /* up [3 -> 4]: 784; down [4 -> 3]: 2 (5*40 + 5*12) + 2*40 + 7*30 + 2*12 = 834 */
    cr_expect_float_eq(cpb_fp8_mlp_cast_bytes(&torchao, 10, 3, 4, 3, 2, 1), 2 * 784.0 + 834.0, 1e-12);
    cr_expect_float_eq(cpb_fp8_mlp_cast_bytes(&torchao, 10, 3, 4, 2, 2, 1), 784.0 + 834.0, 1e-12);
}

Test(fp8_casts, not_modelled_is_zero)
{
    const cpb_fp8_casts none = {0};
    cr_expect_eq(cpb_fp8_mlp_cast_bytes(&none, 10, 3, 4, 3, 2, 1), 0.0);
    cr_expect_eq(cpb_fp8_linear_cast_bytes(NULL, 10, 3, 4, 2, 1), 0.0);
    cr_expect_eq(cpb_fp8_linear_cast_bytes(&torchao, 0, 3, 4, 2, 1), 0.0);
}

static cpb_model_estimate *estimate(const char *framework, const char *linear)
{
    const cpb_method *m = cpb_method_find("ulysses");
    cr_assert(m != NULL);
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("llama3-8b", &p), CPB_OK);
    p.C = 8;
    p.S = 8 * 4096;
    p.dtype = CPB_BF16;
    char err[1024] = "";
    cr_assert_eq(cpb_knobs_apply(m, NULL, &p, err, sizeof err), CPB_OK, "%s", err);
    cpb_knobs_set_str(&p.knobs, "framework", framework);
    cpb_knobs_set_str(&p.knobs, "linear_dtype", linear);
    cpb_model_estimate *e = NULL;
    cr_assert_eq(cpb_model_estimate_new(&p, m, NULL, &e, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(e->status, CPB_OK, "%s", e->reason);
    return e;
}

/* Llama3-8B, 4096 tokens per GPU, torchtitan-cp (untiled MLP, full checkpointing: forward
 * and recompute): gate and up 12 T D + 7 T F + 12 D F each, down 12 T F + 7 T D + 12 D F:
 * 31 T D + 26 T F + 36 D F = 4,160,749,568 bytes per layer at the profile's HBM bandwidth */
Test(fp8_casts, torchtitan_cp_llama_layer)
{
    cpb_gpu_profile prof;
    char err[256];
    cr_assert_eq(cpb_gpu_profile_get("h100-sxm", &prof, err, sizeof err), CPB_OK, "%s", err);
    cpb_model_estimate *f8 = estimate("torchtitan-cp", "fp8"), *bf = estimate("torchtitan-cp", "bf16");
    cr_expect_float_eq(f8->fp8_cast_s * prof.hw.hbm_bw, 4160749568.0, 1e-3);
    cr_expect_eq(bf->fp8_cast_s, 0.0, "no casts in bf16");
    cr_expect_gt(f8->mlp_layer_s, f8->fp8_cast_s, "the casts are part of the MLP's time");
    cpb_model_estimate_free(f8);
    cpb_model_estimate_free(bf);
}

/* a framework whose fp8 library is not modelled (DeepSpeed) counts no casts */
Test(fp8_casts, unmodelled_framework_counts_none)
{
    cpb_model_estimate *e = estimate("deepspeed", "fp8");
    cr_expect_eq(e->fp8_cast_s, 0.0);
    cpb_model_estimate_free(e);
}
