/* test_sim_lora.c — LoRA in the whole-model estimate (--lora-rank): the adapters'
 * parameter count, the bytes per parameter of a frozen base beside trainable adapters,
 * the FLOPs a frozen linear layer's backward skips (causal convention) and the costs the
 * step loses and gains, each against its formula written out here. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "cpb_method.h"
#include "cpb_presets.h"
#include "knobs.h"
#include "model_scope.h"

static const cpb_method *ulysses(void)
{
    const cpb_method *m = cpb_method_find("ulysses");
    return m ? m : cpb_method_at(0);
}

/* model `name` on C GPUs at S with the given knobs ("name=value", NULL-ended) */
static cpb_problem problem(const char *name, int C, int64_t S, const char *const *kv)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find(name, &p), CPB_OK);
    p.C = C;
    p.S = S;
    p.dtype = CPB_BF16;
    cpb_knobs given;
    memset(&given, 0, sizeof given);
    for (int i = 0; kv && kv[i]; i++) {
        char k[64];
        const char *eq = strchr(kv[i], '=');
        cr_assert(eq);
        snprintf(k, sizeof k, "%.*s", (int)(eq - kv[i]), kv[i]);
        char err[256];
        cr_assert_eq(cpb_knob_parse(cpb_knob_at(cpb_knob_index(k)), eq + 1, &given, err, sizeof err), CPB_OK, "%s", err);
    }
    char err[512] = "";
    cr_assert_eq(cpb_knobs_apply(ulysses(), &given, &p, err, sizeof err), CPB_OK, "%s", err);
    return p;
}

static cpb_model_estimate *estimate(const char *const *kv)
{
    cpb_problem p = problem("llama3-8b", 8, 1 << 18, kv);
    cpb_model_estimate *e = NULL;
    char err[1024] = "";
    cr_assert_eq(cpb_model_estimate_new(&p, ulysses(), NULL, &e, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(e->attn.code, CPB_OK, "%s", e->attn.reason);
    return e;
}

Test(sim_lora, adapters_on_every_linear_layer_but_the_head)
{
    /* r (in + out) per adapted matrix: q [D -> H d], k, v [D -> G d], o [H d -> D], gate and
     * up [D -> F], down [F -> D]; Llama3-8B at r = 16 gives PEFT's "trainable params:
     * 41,943,040" for target_modules="all-linear" */
    cpb_problem p = problem("llama3-8b", 8, 1 << 16, (const char *[]){"lora_rank=16", NULL});
    cpb_model_param_count c;
    cpb_model_params(&p, cpb_model_spec_find("llama3-8b"), &c);
    const double r = 16, D = 4096, Hd = 32 * 128, Gd = 8 * 128, F = 14336;
    cr_expect_float_eq(c.lora_attn, r * ((D + Hd) + 2 * (D + Gd) + (Hd + D)), 1e-9);
    cr_expect_float_eq(c.lora_mlp, r * 3 * (D + F), 1e-9);
    cr_expect_float_eq(c.lora_total, 41943040.0, 1e-6);
    /* a two-matrix MLP (up, down) and H d != D (qwen3-32b's 64 x 128 = 8192 vs D 5120) */
    cpb_model_spec two = *cpb_model_spec_find("llama3-8b");
    two.two_matrix = 1;
    cpb_model_params(&p, &two, &c);
    cr_expect_float_eq(c.lora_mlp, r * 2 * (D + F), 1e-9);
    cpb_problem q = problem("qwen3-32b", 8, 1 << 16, (const char *[]){"lora_rank=8", NULL});
    cpb_model_params(&q, cpb_model_spec_find("qwen3-32b"), &c);
    cr_expect_float_eq(c.lora_attn, 8.0 * ((5120 + 8192) + 2 * (5120 + 1024) + (8192 + 5120)), 1e-9);
    cr_expect_float_eq(c.lora_total, 64 * (c.lora_attn + 8.0 * 3 * (5120 + 25600)), 1e-6);
    /* rank 0: no adapters */
    cpb_problem z = problem("llama3-8b", 8, 1 << 16, NULL);
    cpb_model_params(&z, cpb_model_spec_find("llama3-8b"), &c);
    cr_expect_eq(c.lora_rank, 0);
    cr_expect_float_eq(c.lora_total, 0.0, 1e-12);
}

Test(sim_lora, a_frozen_base_holds_its_weights_only)
{
    cpb_model_estimate *full = estimate((const char *[]){"framework=torchtitan", NULL});
    cpb_model_estimate *lora = estimate((const char *[]){"framework=torchtitan", "lora_rank=16", NULL});
    const double P = full->params, T = 41943040.0;
    /* FSDP2: the base's bf16 weights sharded (2 / 8), the adapters' fp32 master, grads and
     * Adam m, v sharded (16 / 8) */
    cr_expect_float_eq(lora->setup.base_dev_sh, 2.0, 1e-12);
    cr_expect_float_eq(lora->setup.dev_sh, 16.0, 1e-12);
    cr_expect_eq(lora->moment[0].states, (int64_t)(16.0 * T / 8 + 2.0 * P / 8));
    cr_expect_lt(lora->moment[0].states, full->moment[0].states / 7);
    cpb_model_estimate_free(lora);
    /* Megatron's distributed optimizer (stage 1): the frozen base replicated in bf16, the
     * adapters 6 replicated + 12 sharded */
    lora = estimate((const char *[]){"framework=megatron", "lora_rank=16", NULL});
    cr_expect_float_eq(lora->setup.base_dev_rep, 2.0, 1e-12);
    cr_expect_eq(lora->moment[0].states, (int64_t)((12.0 / 8 + 6.0) * T + 2.0 * P));
    cpb_model_estimate_free(lora);
    /* parameter offload: the frozen base in host memory, the optimizer's states there too */
    lora = estimate((const char *[]){"framework=alst", "param_offload=on", "lora_rank=16", NULL});
    cr_expect_float_eq(lora->setup.base_host_sh, 2.0, 1e-12);
    cr_expect_float_eq(lora->setup.base_dev_sh + lora->setup.base_dev_rep, 0.0, 1e-12);
    cr_expect_eq(lora->host_states, (int64_t)(16.0 * T / 8 + 2.0 * P / 8 + 2.0 * T / 8));
    /* the bytes-per-parameter text names both */
    char b[512];
    cpb_setup_bytes_text(&lora->setup, b, sizeof b);
    cr_expect(strstr(b, "frozen base 2 = bf16 weights only") && strstr(b, "LoRA adapters (trainable) 18 ="), "%s", b);
    cpb_model_estimate_free(lora);
    cpb_model_estimate_free(full);
}

Test(sim_lora, causal_flops_skip_the_frozen_weight_gradients)
{
    cpb_problem p = problem("llama3-8b", 8, 1 << 20, NULL), q = problem("llama3-8b", 8, 1 << 20, (const char *[]){"lora_rank=16", NULL});
    const cpb_model_spec *sp = cpb_model_spec_find("llama3-8b");
    double c0, m0, c1, m1;
    cpb_model_flops(&p, sp, &c0, &m0);
    cpb_model_flops(&q, sp, &c1, &m1);
    const double S = 1 << 20, D = 4096, H = 32, G = 8, d = 128, F = 14336, V = 128256, L = 32;
    /* each frozen matrix loses its weight-gradient GEMM (one forward's FLOPs); the adapters
     * add 2 S r (in + out) forward, twice that backward */
    const double proj = 2 * S * D * (H + 2 * G) * d + 2 * S * H * d * D;
    const double want = c0 - L * (proj + 3 * 2 * S * D * F) - 2 * S * D * V + 6 * S * 41943040.0;
    cr_expect_float_eq(c1, want, 1e-12 * want);
    /* megatron keeps its formula: 6 x the model's matrices x tokens + the attention term */
    cr_expect_float_eq(m1, m0, 1e-12 * m0);
}

Test(sim_lora, a_step_loses_the_frozen_gradients_and_gains_the_adapters)
{
    cpb_model_estimate *full = estimate((const char *[]){"framework=torchtitan", NULL});
    cpb_model_estimate *lora = estimate((const char *[]){"framework=torchtitan", "lora_rank=16", NULL});
    /* the MLP's backward: dX only, one forward-equivalent fewer; no per-tile weight gradient */
    cr_expect_float_eq(lora->mlp_passes, full->mlp_passes - 1, 1e-12);
    cr_expect_eq(lora->mlp_acc_s, 0);
    cr_expect_gt(full->mlp_acc_s, 0);
    /* the LM head: forward and dX, 2/3 of forward + dX + dW at the same GEMM shape */
    cr_expect_float_eq(lora->head_s, full->head_s * 2 / 3, 1e-9 * full->head_s);
    /* the optimizer over the adapters only */
    cr_expect_float_eq(lora->optimizer_s, full->optimizer_s * 41943040.0 / full->params, 1e-9 * full->optimizer_s);
    /* no LM-head gradient at the loss; the attention trace's weight gradients out */
    cr_expect_lt(lora->moment[CPB_MOMENT_LOSS].gathered, full->moment[CPB_MOMENT_LOSS].gathered);
    cr_expect_lt(lora->moment[CPB_MOMENT_ATTN_BWD].attn_fixed, full->moment[CPB_MOMENT_ATTN_BWD].attn_fixed);
    cr_expect_eq(lora->moment[CPB_MOMENT_ATTN_BWD].attn_act, full->moment[CPB_MOMENT_ATTN_BWD].attn_act);
    /* the adapters cost something in the attention layer and the projections' dW is saved:
     * their sum is the estimate's, and the step is not slower than the MLP and head it saves */
    cr_expect_neq(lora->lora_attn_s, 0);
    cr_expect_float_eq(lora->attn_layer_s, full->attn_layer_s + lora->lora_attn_s, 1e-9);
    cr_expect_lt(lora->step_s, full->step_s);
    cpb_model_estimate_free(lora);
    cpb_model_estimate_free(full);
}

Test(sim_lora, the_assumptions_block_says_lora)
{
    cpb_model_estimate *e = estimate((const char *[]){"framework=deepspeed", "lora_rank=8", NULL});
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cpb_setup_print_assumptions(f, &e->setup, "");
    fclose(f);
    cr_expect(strstr(buf, "LoRA rank           8 (LoRA: a frozen base, adapters of rank 8") != NULL, "%s", buf);
    cr_expect(strstr(buf, "[command line]") != NULL, "%s", buf);
    cr_expect(strstr(buf, "frozen base 2 = fp16 weights only") != NULL, "%s", buf);
    free(buf);
    cpb_model_estimate_free(e);
}

Test(sim_lora, a_rank_above_the_smallest_side_is_refused)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("llama3-8b", &p), CPB_OK);
    p.C = 8;
    p.S = 1 << 16;
    p.dtype = CPB_BF16;
    cpb_knobs given;
    memset(&given, 0, sizeof given);
    cpb_knobs_set_int(&given, "lora_rank", 1025); /* k, v: 8 x 128 = 1024 */
    char err[512] = "";
    cr_expect_eq(cpb_knobs_apply(ulysses(), &given, &p, err, sizeof err), CPB_ERR_REFUSED);
    cr_expect(strstr(err, "--lora-rank 1025") && strstr(err, "at most 1024"), "%s", err);
    cpb_knobs_set_int(&given, "lora_rank", 1024);
    cr_expect_eq(cpb_knobs_apply(ulysses(), &given, &p, err, sizeof err), CPB_OK, "%s", err);
}
