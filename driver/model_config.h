/* model_config.h — a model from a Hugging Face config.json (`--model-config FILE`): the
 * attention shape of the layer and what the whole-model estimate needs (layers, MLP size,
 * vocabulary, tied embeddings), registered under a name so that every point of a command
 * finds it as it finds a preset (cpb_model_shape, cpb_model_spec_find).
 *
 * Fields read (a multimodal file's nested `text_config` first, then the top level):
 * hidden_size, num_attention_heads, num_key_value_heads (default: the heads), head_dim
 * (default: hidden_size / num_attention_heads, which must divide), rope_theta or
 * rope_parameters.rope_theta (newer files; per layer type: full_attention's),
 * num_hidden_layers, intermediate_size, vocab_size, tie_word_embeddings (default false;
 * the Gemma types: true).
 *
 * The layer's make-up comes from model_type (text_config's first; without one, from
 * architectures[0], "<Arch>For..."), each known type as its modeling file in transformers
 * builds it (model_config.c, kinds[]): the MLP gated (gate, up, down: Llama, Mistral, Qwen2,
 * Qwen3, Gemma, Phi-3, Granite) or two-matrix (up, activation, down: GPT-NeoX, Phi,
 * Nemotron), whatever hidden_act names (Gemma's GeGLU is gated with a GELU); the linear
 * layers with biases (fixed by the type, as Qwen2's q, k, v, or switched by attention_bias,
 * mlp_bias, qk_layernorm with the type's defaults); the norms (RMSNorm or LayerNorm, per
 * layer).  A file with neither field is a Llama-style decoder (gated, attention_bias and
 * mlp_bias read).  Another model_type is refused, named.
 *
 * Refused, each field named (exit 2), until the estimate models them: a mixture of experts
 * (num_local_experts, num_experts, n_routed_experts, moe_num_experts above 1;
 * num_experts_per_tok, moe_intermediate_size, n_shared_experts, ...); attention over a
 * window (sliding_window unless null, or unless use_sliding_window is false or leaves no
 * layer from max_window_layers on, or layer_types says every layer is full_attention;
 * layer_types with any other type; attention_chunk_size); multi-head latent attention
 * (kv_lora_rank, q_lora_rank). */
#ifndef CPB_MODEL_CONFIG_H
#define CPB_MODEL_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "cpb.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cpb_model_def {
    char name[32];          /* the results' model column: the file's model name and a hash */
    int64_t D;
    int H, G, d;
    double rope_base;
    int layers;
    int64_t ffn, vocab;
    int tied;
    char source[256];       /* where it was read from */
    /* the layer's make-up (cpb_model_spec's fields of the same names) */
    int two_matrix;         /* 1: a two-matrix MLP; 0: gated */
    char act[32];           /* the MLP's activation */
    int qkv_bias, o_bias, mlp_bias, head_bias;
    int norm_bias, norms, qk_norm;
    char model_type[32];    /* as the file names it ("" none) */
} cpb_model_def;

/* Read a config.json.  CPB_ERR_INVALID with a message that names the file, the field and
 * what was expected (missing, wrong type, not positive, head_dim not derivable, heads not
 * a multiple of the kv heads, not JSON, unreadable). */
int cpb_model_config_read(const char *path, cpb_model_def *out, char *err, size_t err_len);

/* Read and register it: its name then works wherever a preset's does, and its whole text
 * is kept for the results file (cpb_model_config_text).  *name_out (may be NULL) gets the
 * name.  CPB_ERR_INVALID as above, or when too many are registered or the file is larger
 * than 1 MiB. */
int cpb_model_config_register(const char *path, char *name_out, size_t name_len, char *err, size_t err_len);

/* The attention shape of model `name` (D, H, G, d, rope base, model): a preset or a
 * registered config.  CPB_ERR_INVALID for an unknown name (out untouched). */
int cpb_model_shape(const char *name, cpb_problem *out);

/* the registered config called `name`, NULL when none is */
const cpb_model_def *cpb_model_config_find(const char *name);
/* its whole-model description (model_scope.h; cpb_model_spec_find looks here after the
 * presets), NULL when none is registered */
struct cpb_model_spec;
const struct cpb_model_spec *cpb_model_config_spec(const char *name);

#ifdef __cplusplus
}
#endif
#endif
