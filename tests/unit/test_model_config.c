/* test_model_config.c — Hugging Face config.json files as models (driver/model_config.h):
 * real configurations (Llama-3-8B, Qwen3-32B, a multimodal file with text_config, newer
 * files with rope_parameters, per layer type too) read to the values of their release, the
 * Llama-3-8B file giving exactly the llama3-8b preset's shape and whole-model description,
 * and bad files refused with the field and what was expected. */
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
    /* one set per layer type: the full-attention layers' base; tied embeddings */
    m = read_ok(HF "gemma-3-12b-layer-types.json");
    cr_expect_eq(m.rope_base, 1e6);
    cr_expect_eq(m.d, 256);
    cr_expect_eq(m.G, 8);
    cr_expect_eq(m.tied, 1);
    cr_expect_eq(m.vocab, 262208);
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
    refused(HF "bad/no-such-file.json", "does not exist", "config.json"); /* the checked opener's words */
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
