/* test_mfu.c — model FLOPs and MFU under the two conventions of results/README.md:
 * `causal` (cpbench's count: DESIGN section 6's layer, the MLP's and the LM head's GEMMs)
 * and `megatron` (Megatron-LM's num_floating_point_operations), each against its formula
 * written out here, against each other, against Megatron-LM's older closed form, and
 * through a whole-model row and a layer row of the simulator. */
#include <criterion/criterion.h>
#include <string.h>

#include "cpb_method.h"
#include "cpb_presets.h"
#include "flops_nemo.h"
#include "knobs.h"
#include "measured.h"
#include "model_scope.h"
#include "sim_layer.h"

static cpb_problem preset(const char *name, int64_t S, int C)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find(name, &p), CPB_OK);
    p.S = S;
    p.C = C;
    p.dtype = CPB_BF16;
    return p;
}

Test(mfu, causal_convention_written_out)
{
    cpb_problem p = preset("llama3-8b", 1 << 20, 8);
    const cpb_model_spec *sp = cpb_model_spec_find("llama3-8b");
    const double S = 1 << 20, D = 4096, H = 32, G = 8, d = 128, F = 14336, V = 128256, L = 32;
    double causal, megatron;
    cpb_model_flops(&p, sp, &causal, &megatron);
    /* per layer: attention core 2 S^2 H d forward (the lower triangle of 4 S^2 H d), 2.5x
     * that backward; projections 2 S D (H + 2G) d + 2 S H d D forward, 2x backward; MLP
     * 3 GEMMs of 2 S D F, forward and 2x backward; the LM head 2 S D V, forward and 2x
     * backward */
    const double core = 2 * S * S * H * d, proj = 2 * S * D * (H + 2 * G) * d + 2 * S * H * d * D;
    const double want = L * (3.5 * core + 3 * proj + 3 * 3 * 2 * S * D * F) + 3 * 2 * S * D * V;
    cr_expect_float_eq(causal, want, 1e-12 * want);
}

Test(mfu, megatron_convention_written_out)
{
    cpb_problem p = preset("llama3-8b", 1 << 20, 8);
    const cpb_model_spec *sp = cpb_model_spec_find("llama3-8b");
    const double S = 1 << 20, D = 4096, H = 32, G = 8, d = 128, F = 14336, V = 128256, L = 32;
    double causal, megatron;
    cpb_model_flops(&p, sp, &causal, &megatron);
    /* Megatron-LM transformer_flops(): B s [ 3 x 2 x D x F x 3 (SwiGLU) x L
     *   + L x 3 x 2 x (D (Hd + Gd + Gd) + Hd s/2 x 2 + Hd D) + 3 x 2 x D x V ] at B = 1 */
    const double want = S * (6 * D * F * 3 * L + L * 6 * (D * (H * d + 2 * G * d) + H * d * S / 2 * 2 + H * d * D) +
                             6 * D * V);
    cr_expect_float_eq(megatron, want, 1e-12 * want);
    /* = 6 x the matrices' parameters (the LM head's counted, the embedding and norms not)
     * x tokens + 6 S^2 H d per layer */
    cpb_model_param_count c;
    cpb_model_params(&p, sp, &c);
    const double matrices = c.total - c.embed - L * c.norm - c.final_norm + (sp->tied ? V * D : 0);
    cr_expect_float_eq(megatron, 6 * matrices * S + L * 6 * S * S * H * d, 1e-12 * want);
    /* Megatron-LM's older closed form (expansion factor 12, GQA ratio, SwiGLU 3/2, the
     * causal half of the attention core) is the same count */
    const double older = 12 * S * L * D * D *
                         ((1 + G / H + S / D / 2) * (H * d / D) + F / D * 1.5 + V / (2 * L * D));
    cr_expect_float_eq(megatron, older, 1e-12 * want);
    /* the conventions differ only in the attention core's backward: 2.5x the forward
     * (7 S^2 H d per layer) against 2x (6 S^2 H d) */
    cr_expect_float_eq(causal - megatron, L * S * S * H * d, 1e-9 * want);
}

Test(mfu, two_matrix_mlp_and_tied_head)
{
    /* a two-matrix MLP is 2 GEMMs in both conventions; a tied LM head is still a GEMM */
    cpb_model_spec sp = *cpb_model_spec_find("llama3-8b");
    cpb_problem p = preset("llama3-8b", 1 << 16, 8);
    double c3, m3, c2, m2, ct, mt;
    cpb_model_flops(&p, &sp, &c3, &m3);
    sp.two_matrix = 1;
    cpb_model_flops(&p, &sp, &c2, &m2);
    const double S = 1 << 16, D = 4096, F = 14336, L = 32;
    cr_expect_float_eq(c3 - c2, L * 3 * 2 * S * D * F, 1e-9 * c3);
    cr_expect_float_eq(m3 - m2, L * 6 * D * F * S, 1e-9 * m3);
    sp.tied = 1;
    cpb_model_flops(&p, &sp, &ct, &mt);
    cr_expect_eq(ct, c2);
    cr_expect_eq(mt, m2);
}

Test(mfu, layer_flops_are_the_models_attention_part)
{
    /* a layer row's megatron FLOPs: its projections and core, as one layer of the model's */
    cpb_problem p = preset("llama3-8b", 1 << 20, 8);
    const cpb_model_spec *sp = cpb_model_spec_find("llama3-8b");
    double causal, megatron, f, b;
    cpb_model_flops(&p, sp, &causal, &megatron);
    cpb_layer_model_flops(&p, &f, &b);
    const double S = 1 << 20, D = 4096, F = 14336, V = 128256, L = 32;
    cr_expect_float_eq(L * cpb_layer_megatron_flops(&p) + S * (6 * 3 * D * F * L + 6 * D * V), megatron, 1e-12 * megatron);
    cr_expect_float_eq(L * (f + b) + L * 3 * 3 * 2 * S * D * F + 3 * 2 * S * D * V, causal, 1e-12 * causal);
}

/* a whole-model row of the simulator: TFLOP/s per GPU = FLOPs / (C x step), MFU = that over
 * the profile's peak, both conventions */
Test(mfu, model_row_carries_both_conventions)
{
    cpb_problem p = preset("llama3-8b", 1 << 20, 8);
    const cpb_method *m = cpb_method_find("ulysses");
    cr_assert(m);
    char err[1024] = "";
    cr_assert_eq(cpb_knobs_apply(m, NULL, &p, err, sizeof err), CPB_OK, "%s", err);
    cpb_model_estimate *e = NULL;
    cr_assert_eq(cpb_model_estimate_new(&p, m, NULL, &e, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(e->status, CPB_OK, "%s", e->reason);
    static cpb_row r;
    cpb_model_estimate_row(e, &r);
    cr_expect_eq(r.peak_tflops, 989.0, "the h100-sxm profile's dense bf16 peak");
    cr_expect_float_eq(r.tflops_per_gpu, e->model_flops / 8 / e->step_s / 1e12, 1e-9);
    cr_expect_float_eq(r.tflops_per_gpu_megatron, e->model_flops_megatron / 8 / e->step_s / 1e12, 1e-9);
    cr_expect_float_eq(r.mfu_causal, r.tflops_per_gpu / 989.0, 1e-12);
    cr_expect_float_eq(r.mfu_megatron, r.tflops_per_gpu_megatron / 989.0, 1e-12);
    cr_expect_float_eq(r.tflops_per_gpu_nemo, e->model_flops_nemo / 8 / e->step_s / 1e12, 1e-9);
    cr_expect_float_eq(r.mfu_nemo, r.tflops_per_gpu_nemo / 989.0, 1e-12);
    cr_expect(r.mfu_megatron < r.mfu_causal && r.mfu_causal < 1, "%g %g", r.mfu_megatron, r.mfu_causal);
    cr_expect_eq(r.model_layers, 32);
    cr_expect_eq(r.model_params, e->params);
    cpb_model_estimate_free(e);
}

Test(mfu, layer_row_carries_both_conventions)
{
    cpb_problem p = preset("llama3-8b", 1 << 18, 8);
    const cpb_method *m = cpb_method_find("ulysses");
    cr_assert(m);
    char err[1024] = "";
    cr_assert_eq(cpb_knobs_apply(m, NULL, &p, err, sizeof err), CPB_OK, "%s", err);
    cpb_sim_opts o;
    memset(&o, 0, sizeof o);
    o.gpu = "a100-80g";
    static cpb_row r;
    cr_assert_eq(cpb_sim_layer(&p, m, &o, &r), CPB_OK);
    cr_assert_eq(r.code, CPB_OK, "%s", r.reason);
    double f, b;
    cpb_layer_model_flops(&p, &f, &b);
    cr_expect_eq(r.peak_tflops, 312.0);
    cr_expect_float_eq(r.tflops_per_gpu, (f + b) / 8 / r.step_s / 1e12, 1e-9);
    cr_expect_float_eq(r.mfu_megatron, cpb_layer_megatron_flops(&p) / 8 / r.step_s / 1e12 / 312.0, 1e-9);
    cr_expect_float_eq(r.mfu_nemo, cpb_layer_nemo_flops(&p) / 8 / r.step_s / 1e12 / 312.0, 1e-9);
}

/* convention nemo (flops_nemo.h): NeMo's flops_formulas.py llama2() at v2.3.0rc2,
 * gbs S L D^2 (12 + 12 G/H + 18 F/D + 12 S/D + 6 V/(L D)), worked by hand for Llama2-7B at
 * 4096 tokens: L D^2 = 32 x 4096^2 = 536,870,912 and the bracket 12 + 12 + 48.375 + 12 +
 * 1.46484375 = 85.83984375, so 46,084,915,200 FLOPs per token.  NVIDIA's NeMo 24.03-era
 * table (NeMo-Framework-Launcher examples/README.md @693244ac) printed 694 model
 * TFLOP/s/GPU beside 15066 tokens/s/GPU for it: this count gives 694.3, the causal-half
 * count 645.8, so the table used this one. */
Test(mfu, nemo_convention_hand_computed)
{
    cpb_problem p = preset("llama2-7b", 4096, 8);
    const cpb_model_spec *sp = cpb_model_spec_find("llama2-7b");
    cr_assert(sp);
    const double per_token = 46084915200.0;
    cr_expect_float_eq(cpb_model_nemo_flops(&p, sp), per_token * 4096, 1e-12 * per_token * 4096);
    cr_expect_eq((int)(cpb_model_nemo_flops(&p, sp) / 4096 * 15066 / 1e12 + 0.5), 694);
    double causal, megatron;
    cpb_model_flops(&p, sp, &causal, &megatron);
    cr_expect_eq((int)(megatron / 4096 * 15066 / 1e12 + 0.5), 646, "the causal-half count does not give 694");
    /* H d = D here, so nemo = megatron + the other causal half of the core, 6 L S^2 H d */
    const double S = 4096, L = 32, H = 32, d = 128;
    cr_expect_float_eq(cpb_model_nemo_flops(&p, sp) - megatron, 6 * L * S * S * H * d, 1e-9 * megatron);
    /* one layer's attention part: S D^2 (12 + 12 G/H) + 12 S^2 D */
    cr_expect_float_eq(cpb_layer_nemo_flops(&p), S * 4096.0 * 4096 * 24 + 12 * S * S * 4096, 1.0);
}

/* the same formula with GQA and NeMo's later table: Llama3-8B at 8192 tokens, bracket
 * 12 + 12 x 8/32 + 18 x 14336/4096 + 12 x 2 + 6 x 128256/(32 x 4096) = 107.87109375, NeMo
 * 24.07's performance_summary.md printed 697 TFLOP/s/GPU beside 12036 tokens/s/GPU; and a
 * two-matrix MLP counts 6 m F/D = 12 F/D, as flops_formulas.py's nemotron() */
Test(mfu, nemo_convention_gqa_and_two_matrix_mlp)
{
    cpb_problem p = preset("llama3-8b", 8192, 8);
    const cpb_model_spec *sp = cpb_model_spec_find("llama3-8b");
    cr_assert(sp);
    const double want = 8192.0 * 32 * 4096 * 4096 * 107.87109375;
    cr_expect_float_eq(cpb_model_nemo_flops(&p, sp), want, 1e-12 * want);
    cr_expect_eq((int)(cpb_model_nemo_flops(&p, sp) / 8192 * 12036 / 1e12 + 0.5), 697);
    cpb_model_spec two = *sp;
    two.two_matrix = 1;
    cr_assert_eq(cpb_model_mlp_matrices(&two), 2);
    cr_expect_float_eq(cpb_model_nemo_flops(&p, sp) - cpb_model_nemo_flops(&p, &two), 6.0 * 8192 * 4096 * 14336 * 32,
                       1e-9 * want);
}

/* a measured row's peak: the profile of the device the cuda backend names, none otherwise */
Test(mfu, measured_rows_take_the_profile_of_their_device)
{
    cr_expect_eq(cpb_device_peak_tflops("NVIDIA H100 80GB HBM3"), 989.0);
    cr_expect_eq(cpb_device_peak_tflops("NVIDIA H200"), 989.0);
    cr_expect_eq(cpb_device_peak_tflops("NVIDIA A100-SXM4-80GB"), 312.0);
    cr_expect_eq(cpb_device_peak_tflops("NVIDIA A100-PCIE-40GB"), 312.0);
    cr_expect_eq(cpb_device_peak_tflops("NVIDIA H100 PCIe"), 0.0, "another part, another peak: none guessed");
    cr_expect_eq(cpb_device_peak_tflops("NVIDIA L40S"), 0.0);
    cr_expect_eq(cpb_device_peak_tflops("cpu"), 0.0);
}
