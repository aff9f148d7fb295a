/* test_model_config.c — Hugging Face config.json files as models (driver/model_config.h):
 * real configurations (Llama-3-8B, Qwen3-32B, a multimodal file with text_config, newer
 * files with rope_parameters, per layer type too) read to the values of their release, the
 * Llama-3-8B file giving exactly the llama3-8b preset's shape and whole-model description,
 * bad files refused with the field and what was expected, models the estimate cannot
 * describe (mixture of experts, sliding-window or chunked attention, latent attention, an
 * unknown model_type) refused by the field, and the parameter count of each layer make-up
 * against published counts. */
#include <criterion/criterion.h>
#include <string.h>

#include "cpb_method.h"
#include "cpb_presets.h"
#include "knobs.h"
#include "model_config.h"
#include "model_scope.h"

#define HF CPB_TEST_DATA "/hf/"

static cpb_model_def read_ok(const char *file)
{
    cpb_model_def m;
    char err[1024] = "";
    cr_assert_eq(cpb_model_config_read(file, &m, err, sizeof err), CPB_OK, "%s: %s", file, err);
    return m;
}

Test(model_config, llama3_8b_is_the_preset)
{
    cpb_model_def m = read_ok(HF "Meta-Llama-3-8B.json");
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("llama3-8b", &p), CPB_OK);
    cr_expect_eq(m.D, p.D);
    cr_expect_eq(m.H, p.H);
    cr_expect_eq(m.G, p.G);
    cr_expect_eq(m.d, p.d, "head_dim derived: 4096 / 32");
    cr_expect_eq(m.rope_base, p.rope_base);
    const cpb_model_spec *s = cpb_model_spec_find("llama3-8b");
    cr_assert(s);
    cr_expect_eq(m.layers, s->layers);
    cr_expect_eq(m.ffn, s->ffn);
    cr_expect_eq(m.vocab, s->vocab);
    cr_expect_eq(m.tied, s->tied);
    cr_expect(strncmp(m.name, "Meta-Llama-3-8B~", 16) == 0, "name %s", m.name);
}

Test(model_config, qwen3_32b_explicit_head_dim_and_integer_rope)
{
    cpb_model_def m = read_ok(HF "Qwen3-32B.json");
    cr_expect_eq(m.D, 5120);
    cr_expect_eq(m.H, 64);
    cr_expect_eq(m.G, 8);
    cr_expect_eq(m.d, 128, "head_dim given: H*d = 8192 != D");
    cr_expect_eq(m.rope_base, 1e6);
    cr_expect_eq(m.layers, 64);
    cr_expect_eq(m.ffn, 25600);
    cr_expect_eq(m.vocab, 151936);
}

Test(model_config, multimodal_text_config)
{
    /* the vision tower's fields (hidden_size 1024, 16 heads, ...) must not be taken */
    cpb_model_def m = read_ok(HF "Mistral-Small-3.1-24B.json");
    cr_expect_eq(m.D, 5120);
    cr_expect_eq(m.H, 32);
    cr_expect_eq(m.G, 8);
    cr_expect_eq(m.d, 128);
    cr_expect_eq(m.rope_base, 1e9);
    cr_expect_eq(m.layers, 40);
    cr_expect_eq(m.ffn, 32768);
    cr_expect_eq(m.vocab, 131072);
}

Test(model_config, rope_parameters)
{
    cpb_model_def m = read_ok(HF "Llama-3.1-8B-rope-parameters.json");
    cr_expect_eq(m.rope_base, 500000.0);
    cr_expect_eq(m.H, 32);
    /* one set per layer type: the full-attention layers' base (a made-up file whose
     * layer_types are all full attention, so its sliding_window is unused); tied */
    m = read_ok(HF "layer-types-all-full.json");
    cr_expect_eq(m.rope_base, 1e6);
    cr_expect_eq(m.d, 128);
    cr_expect_eq(m.G, 8);
    cr_expect_eq(m.tied, 1);
    cr_expect_eq(m.vocab, 151936);
}

Test(model_config, registered_model_works_like_a_preset)
{
    char name[32], err[1024] = "";
    cr_assert_eq(cpb_model_config_register(HF "Qwen3-32B.json", name, sizeof name, err, sizeof err), CPB_OK, "%s", err);
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_model_shape(name, &p), CPB_OK);
    cr_expect_eq(p.D, 5120);
    cr_expect_str_eq(p.model, name);
    const cpb_model_spec *s = cpb_model_spec_find(name);
    cr_assert(s, "the whole-model description of %s", name);
    cr_expect_eq(s->layers, 64);
    cr_expect_eq(cpb_model_shape("no-such-model", &p), CPB_ERR_INVALID);
    /* the same file twice is one model */
    char again[32];
    cr_assert_eq(cpb_model_config_register(HF "Qwen3-32B.json", again, sizeof again, err, sizeof err), CPB_OK);
    cr_expect_str_eq(again, name);
}

static void refused(const char *file, const char *want1, const char *want2)
{
    cpb_model_def m;
    char err[1024] = "";
    cr_expect_eq(cpb_model_config_read(file, &m, err, sizeof err), CPB_ERR_INVALID, "%s was accepted", file);
    cr_expect(strstr(err, want1) != NULL, "%s: message '%s' lacks '%s'", file, err, want1);
    if (want2) cr_expect(strstr(err, want2) != NULL, "%s: message '%s' lacks '%s'", file, err, want2);
    cr_expect(strstr(err, file) != NULL, "the message names the file: %s", err);
}

Test(model_config, bad_files_are_refused_naming_the_field)
{
    refused(HF "bad/missing-layers.json", "num_hidden_layers: missing", "positive integer");
    refused(HF "bad/hidden-string.json", "hidden_size: expected a positive integer", "got a string (\"4096\")");
    refused(HF "bad/head-dim-not-divisible.json", "head_dim: missing and cannot be derived",
            "hidden_size 4096 is not a multiple of num_attention_heads 24");
    refused(HF "bad/negative-ffn.json", "intermediate_size: expected a positive integer", "got -14336");
    refused(HF "bad/truncated.json", "not JSON", "line");
    refused(HF "bad/kv-heads-not-divisor.json", "num_key_value_heads: expected a divisor of num_attention_heads",
            "32 query heads, 5 kv heads");
    refused(HF "bad/rope-theta-below-one.json", "rope_theta: expected a number > 1", "got 0.5");
    refused(HF "bad/rope-theta-missing.json", "rope_theta: missing", "rope_parameters.rope_theta");
    refused(HF "bad/vocab-fraction.json", "vocab_size: expected a positive integer", "a number with a fraction");
    refused(HF "bad/duplicate-key.json", "not JSON", "duplicate");
    refused(HF "bad/array.json", "expected a JSON object", "an array");
    refused(HF "bad/text-config-array.json", "text_config: expected an object", "an array");
    refused(HF "bad/odd-head-dim.json", "head_dim: expected an even number", "got 127");
    refused(HF "bad/no-such-file.json", "cannot be read", "config.json");
    refused(HF "bad/attention-bias-string.json", "attention_bias: expected true or false", "a string");
}

/* ---------------------------------------------------------------- what it cannot describe */

Test(model_config, mixture_of_experts_is_refused_by_name)
{
    /* mistralai/Mixtral-8x7B-v0.1: "7.24B" as a dense model; it has 46.7B parameters */
    refused(HF "refused/Mixtral-8x7B-v0.1.json", "not modelled, refused: num_local_experts = 8",
            "num_experts_per_tok = 2: a mixture of experts");
    refused(HF "refused/Qwen3-30B-A3B.json", "num_experts = 128", "moe_intermediate_size = 768");
    /* deepseek-ai/DeepSeek-V3: both, named */
    refused(HF "refused/DeepSeek-V3.json", "n_routed_experts = 256", "kv_lora_rank = 512, q_lora_rank = 1536: "
            "multi-head latent attention");
}

Test(model_config, latent_attention_is_refused_by_name)
{
    /* a made-up dense model with multi-head latent attention: only that is named (its
     * expert fields are null) */
    cpb_model_def m;
    char err[1024] = "";
    refused(HF "refused/mla-dense.json", "kv_lora_rank = 512: multi-head latent attention", NULL);
    cpb_model_config_read(HF "refused/mla-dense.json", &m, err, sizeof err);
    cr_expect(strstr(err, "experts") == NULL, "%s", err);
    cr_expect(strstr(err, "q_lora_rank") == NULL, "q_lora_rank is null: %s", err);
}

Test(model_config, sliding_window_is_refused_by_name)
{
    refused(HF "refused/Mistral-7B-v0.1.json", "sliding_window = 4096: attention over a window", NULL);
    /* google/gemma-3-12b: a window of 1024 (five of six layers) */
    refused(HF "refused/gemma-3-12b.json", "sliding_window = 1024", NULL);
    refused(HF "refused/layer-types-sliding.json", "layer_types: 3 of 4 layers are not full attention",
            "'sliding_attention'");
    refused(HF "refused/qwen2-use-sliding-window.json", "use_sliding_window = true, sliding_window = 32768",
            "layers 21 to 23 of 24");
    refused(HF "refused/chunked-attention.json", "attention_chunk_size = 8192: chunked local attention", NULL);
    /* not sliding: sliding_window null (Mistral-Small-3.1, Mixtral), use_sliding_window
     * false (Qwen2, Qwen3), layer_types all full_attention */
    read_ok(HF "Mistral-Small-3.1-24B.json");
    read_ok(HF "Qwen2-0.5B.json");
    read_ok(HF "Qwen3-32B.json");
    read_ok(HF "layer-types-all-full.json");
}

Test(model_config, unknown_model_type_is_refused_by_name)
{
    refused(HF "refused/unknown-model-type.json", "model_type: not modelled, refused: 'jamba'", "known: llama, ");
    refused(HF "refused/unknown-architecture.json", "architectures: not modelled, refused: 'FalconMambaForCausalLM'",
            "known model types");
}

/* ---------------------------------------------------------------- the layer's make-up */

/* the parameter count of a config file, as the whole-model estimate counts it */
static double params_of(const char *file, cpb_model_def *def)
{
    char name[32], err[1024] = "";
    cr_assert_eq(cpb_model_config_register(file, name, sizeof name, err, sizeof err), CPB_OK, "%s: %s", file, err);
    if (def) *def = *cpb_model_config_find(name);
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_model_shape(name, &p), CPB_OK);
    const cpb_model_spec *sp = cpb_model_spec_find(name);
    cr_assert(sp);
    cpb_model_param_count c;
    cpb_model_params(&p, sp, &c);
    return c.total;
}

/* Published parameter counts (the sum of the checkpoints' tensors; each model card's
 * rounded figure in brackets): every field the count depends on is exercised. */
Test(model_config, parameter_counts_of_real_configs)
{
    cpb_model_def m;
    /* gated MLP, no biases, untied: 8,030,261,248 ("8B") */
    cr_expect_eq(params_of(HF "Meta-Llama-3-8B.json", &m), 8030261248.0);
    /* tie_word_embeddings true: 1,235,814,400 ("1.23B") */
    cr_expect_eq(params_of(HF "Llama-3.2-1B.json", &m), 1235814400.0);
    cr_expect_eq(m.tied, 1);
    /* Qwen2's q, k, v biases, tied: 494,032,768 ("0.49B") */
    cr_expect_eq(params_of(HF "Qwen2-0.5B.json", &m), 494032768.0);
    cr_expect(m.qkv_bias && !m.o_bias && !m.mlp_bias, "qwen2: q, k, v biased, o not");
    /* Phi-2: a two-matrix GELU MLP (fc1, fc2), biases on every linear layer and the LM
     * head, one LayerNorm per layer: 2,779,683,840 ("2.7B") */
    cr_expect_eq(params_of(HF "Phi-2.json", &m), 2779683840.0);
    cr_expect_eq(m.two_matrix, 1);
    cr_expect_str_eq(m.act, "gelu_new");
    cr_expect(m.qkv_bias && m.o_bias && m.mlp_bias && m.head_bias && m.norm_bias && m.norms == 1);
    /* Gemma: a GELU MLP that is gated (GeGLU: gate_proj, up_proj, down_proj), embeddings
     * tied by the type's default: 2,506,172,416 ("2.51B") */
    cr_expect_eq(params_of(HF "gemma-2b.json", &m), 2506172416.0);
    cr_expect_eq(m.two_matrix, 0, "gelu, and still gated");
    cr_expect_eq(m.tied, 1, "GemmaConfig ties by default");
    /* Qwen3's q and k norms per head: 32,762,123,264 ("32.8B"; 31.2B without embeddings) */
    cr_expect_eq(params_of(HF "Qwen3-32B.json", &m), 32762123264.0);
    cr_expect_eq(m.qk_norm, 1);
}

Test(model_config, attention_and_mlp_biases_count)
{
    cpb_model_def m;
    double plain = params_of(HF "Meta-Llama-3-8B.json", NULL);
    double biased = params_of(HF "llama3-8b-biases.json", &m);
    cr_expect(m.qkv_bias && m.o_bias && m.mlp_bias);
    /* per layer: q, k, v biases (H + 2G) d, o's D; gate and up's 2F, down's D */
    cr_expect_eq(biased - plain, 32.0 * ((32 + 2 * 8) * 128 + 4096 + 2 * 14336 + 4096));
    cr_expect_neq(m.name[0], 0);
    cr_expect(strncmp(m.name, "llama3-8b-biases~", 17) == 0, "%s", m.name);
}

/* A two-matrix MLP against the gated one of the same shape: 2/3 of the MLP's parameters,
 * FLOPs and time, half its tile buffers. */
Test(model_config, two_matrix_mlp_in_the_estimate)
{
    char gated[32], plain[32], err[1024] = "";
    cr_assert_eq(cpb_model_config_register(HF "Meta-Llama-3-8B.json", gated, sizeof gated, err, sizeof err), CPB_OK);
    cr_assert_eq(cpb_model_config_register(HF "llama3-8b-two-matrix.json", plain, sizeof plain, err, sizeof err),
                 CPB_OK, "%s", err);
    const cpb_method *m = cpb_method_find("ulysses");
    cr_assert(m);
    cpb_problem a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    cr_assert_eq(cpb_model_shape(gated, &a), CPB_OK);
    cr_assert_eq(cpb_model_shape(plain, &b), CPB_OK);
    a.S = b.S = 1 << 20;
    a.C = b.C = 8;
    a.dtype = b.dtype = CPB_BF16;
    cr_assert_eq(cpb_knobs_apply(m, NULL, &a, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(cpb_knobs_apply(m, NULL, &b, err, sizeof err), CPB_OK, "%s", err);
    cpb_model_estimate *ea = NULL, *eb = NULL;
    cr_assert_eq(cpb_model_estimate_new(&a, m, NULL, &ea, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(cpb_model_estimate_new(&b, m, NULL, &eb, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(ea->attn.code, CPB_OK);
    cr_expect_float_eq(eb->mlp_layer_s / ea->mlp_layer_s, 2.0 / 3.0, 1e-12);
    cr_expect_float_eq((double)eb->moment[CPB_MOMENT_MLP_BWD].work / (double)ea->moment[CPB_MOMENT_MLP_BWD].work, 0.5,
                       1e-9);
    /* parameters: the MLP's third, and Nemotron's LayerNorm biases (2 per layer + final) */
    const double D = 4096, F = 14336, L = 32;
    cr_expect_eq(ea->params - eb->params, L * D * F - (2 * L + 1) * D);
    /* model FLOPs: the MLP's third of 3 passes x 3 GEMMs, under both conventions */
    cr_expect_float_eq(ea->model_flops - eb->model_flops, L * 3 * 2 * (double)a.S * D * F, 1e-9 * ea->model_flops);
    cr_expect_float_eq(ea->model_flops_megatron - eb->model_flops_megatron, 6 * L * D * F * (double)a.S,
                       1e-9 * ea->model_flops_megatron);
    char desc[256];
    cpb_model_spec_describe(eb->spec, desc, sizeof desc);
    cr_expect(strstr(desc, "two-matrix MLP (up, down; relu2)") != NULL, "%s", desc);
    cpb_model_spec_describe(ea->spec, desc, sizeof desc);
    cr_expect(strstr(desc, "gated MLP (gate, up, down; silu)") != NULL, "%s", desc);
    cpb_model_estimate_free(ea);
    cpb_model_estimate_free(eb);
}

/* the qwen3-32b preset and the Qwen3-32B file describe the same model */
Test(model_config, qwen3_32b_preset_is_the_file)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("qwen3-32b", &p), CPB_OK);
    cpb_model_param_count c;
    cpb_model_params(&p, cpb_model_spec_find("qwen3-32b"), &c);
    cr_expect_eq(c.total, params_of(HF "Qwen3-32B.json", NULL));
}

/* the Llama-3-8B file predicts what the preset predicts, memory and time */
Test(model_config, llama3_8b_file_predicts_as_the_preset)
{
    char name[32], err[1024] = "";
    cr_assert_eq(cpb_model_config_register(HF "Meta-Llama-3-8B.json", name, sizeof name, err, sizeof err), CPB_OK);
    const cpb_method *m = cpb_method_find("upipe");
    cr_assert(m);
    cpb_problem a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    cr_assert_eq(cpb_preset_find("llama3-8b", &a), CPB_OK);
    cr_assert_eq(cpb_model_shape(name, &b), CPB_OK);
    a.S = b.S = 1 << 20;
    a.C = b.C = 8;
    a.dtype = b.dtype = CPB_BF16;
    cr_assert_eq(cpb_knobs_apply(m, NULL, &a, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(cpb_knobs_apply(m, NULL, &b, err, sizeof err), CPB_OK, "%s", err);
    cpb_model_estimate *ea = NULL, *eb = NULL;
    cr_assert_eq(cpb_model_estimate_new(&a, m, NULL, &ea, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(cpb_model_estimate_new(&b, m, NULL, &eb, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(ea->status, CPB_OK);
    cr_expect_eq(eb->status, CPB_OK);
    cr_expect_eq(ea->params, eb->params);
    cr_expect_eq(ea->moment[ea->peak_moment].total, eb->moment[eb->peak_moment].total);
    cr_expect_eq(ea->step_s, eb->step_s);
    cpb_model_estimate_free(ea);
    cpb_model_estimate_free(eb);
}
