/* model_config.c — a Hugging Face config.json as a model (model_config.h), parsed with
 * Jansson (Debian's libjansson). */
#include "model_config.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_presets.h"
#include "model_scope.h"

typedef struct reader {
    const char *path;
    json_t *text;      /* text_config, or NULL */
    json_t *top;
    char *err;
    size_t err_len;
} reader;

/* the field `key`: text_config's, else the top level's; NULL when neither has it (a JSON
 * null counts as absent, as transformers reads it) */
static json_t *field(const reader *R, const char *key)
{
    json_t *v = R->text ? json_object_get(R->text, key) : NULL;
    if (!v || json_is_null(v)) v = json_object_get(R->top, key);
    return v && !json_is_null(v) ? v : NULL;
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number with a fraction";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

static int fail(const reader *R, const char *key, const char *fmt, const char *what)
{
    snprintf(R->err, R->err_len, "--model-config %s: %s: %s%s", R->path, key, fmt, what ? what : "");
    return CPB_ERR_INVALID;
}

/* a positive integer field; absent: *out = def when def > 0, else an error */
static int positive(const reader *R, const char *key, int64_t def, int64_t max, int64_t *out)
{
    json_t *v = field(R, key);
    char got[128];
    if (!v) {
        if (def > 0) {
            *out = def;
            return CPB_OK;
        }
        return fail(R, key, "missing (expected a positive integer)", NULL);
    }
    if (!json_is_integer(v)) {
        if (json_is_string(v)) snprintf(got, sizeof got, ", got a string (\"%.40s\")", json_string_value(v));
        else snprintf(got, sizeof got, ", got %s", type_name(v));
        return fail(R, key, "expected a positive integer", got);
    }
    json_int_t x = json_integer_value(v);
    if (x <= 0 || x > max) {
        snprintf(got, sizeof got, ", got %lld", (long long)x);
        return fail(R, key, x <= 0 ? "expected a positive integer" : "expected an integer in range", got);
    }
    *out = (int64_t)x;
    return CPB_OK;
}

/* the RoPE base: rope_theta, or rope_parameters.rope_theta (newer files), or per layer
 * type rope_parameters.full_attention.rope_theta */
static int rope_base(const reader *R, double *out)
{
    json_t *v = field(R, "rope_theta");
    const char *key = "rope_theta";
    json_t *rp = field(R, "rope_parameters");
    if (!v && rp) {
        if (!json_is_object(rp)) {
            char got[64];
            snprintf(got, sizeof got, ", got %s", type_name(rp));
            return fail(R, "rope_parameters", "expected an object with rope_theta", got);
        }
        key = "rope_parameters.rope_theta";
        v = json_object_get(rp, "rope_theta");
        if (!v) {
            /* one set of parameters per layer type: the full-attention layers' */
            json_t *full = json_object_get(rp, "full_attention");
            if (json_is_object(full)) {
                key = "rope_parameters.full_attention.rope_theta";
                v = json_object_get(full, "rope_theta");
            }
        }
    }
    if (!v) return fail(R, "rope_theta", "missing (expected a number > 1, or rope_parameters.rope_theta)", NULL);
    if (!json_is_number(v) || !(json_number_value(v) > 1.0) || !isfinite(json_number_value(v))) {
        char got[64];
        if (json_is_number(v)) snprintf(got, sizeof got, ", got %g", json_number_value(v));
        else snprintf(got, sizeof got, ", got %s", type_name(v));
        return fail(R, key, "expected a number > 1", got);
    }
    *out = json_number_value(v);
    return CPB_OK;
}

static int tied(const reader *R, int def, int *out)
{
    json_t *v = field(R, "tie_word_embeddings");
    *out = def;
    if (!v) return CPB_OK;
    if (!json_is_boolean(v)) {
        char got[64];
        snprintf(got, sizeof got, ", got %s", type_name(v));
        return fail(R, "tie_word_embeddings", "expected true or false", got);
    }
    *out = json_is_true(v);
    return CPB_OK;
}

/* ---------------------------------------------------------------- the layer's make-up */

/* What a model_type's layer is made of, from its modeling file in Hugging Face
 * transformers (src/transformers/models/<type>/modeling_<type>.py): the MLP's matrices
 * (gated: gate_proj, up_proj, down_proj, or gate_up_proj fused; two-matrix: one up and one
 * down projection around the activation), the linear layers with biases (fixed, or
 * switched by a config field and its default in configuration_<type>.py), the norms. */
typedef struct kind {
    const char *type;        /* model_type */
    const char *arch;        /* architectures[0] is "<arch>For..." (files without model_type) */
    int two_matrix;
    int norm_bias, norms, qk_norm;
    int qkv_bias, o_bias, mlp_bias, head_bias;       /* fixed biases */
    const char *attn_bias_key; int attn_bias_def;    /* a field switching q, k, v and o biases */
    const char *qkv_bias_key; int qkv_bias_def;      /* ... q, k and v only */
    const char *mlp_bias_key; int mlp_bias_def;      /* ... the MLP's */
    const char *qk_norm_key;                         /* ... a q and a k norm per head */
    int tied_def;                                    /* tie_word_embeddings' default */
    const char *act;                                 /* hidden_act's default */
} kind;

static const kind kinds[] = {
    /* LlamaAttention q/k/v/o_proj bias=config.attention_bias; LlamaMLP gate/up/down_proj
     * bias=config.mlp_bias; LlamaRMSNorm input_layernorm, post_attention_layernorm */
    {"llama", "Llama", 0, 0, 2, 0, 0, 0, 0, 0, "attention_bias", 0, NULL, 0, "mlp_bias", 0, NULL, 0, "silu"},
    /* MistralAttention and MistralMLP: no biases */
    {"mistral", "Mistral", 0, 0, 2, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, "silu"},
    /* Qwen2Attention: q, k, v_proj bias=True, o_proj bias=False */
    {"qwen2", "Qwen2", 0, 0, 2, 0, 1, 0, 0, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, "silu"},
    /* Qwen3Attention: q/k/v/o_proj bias=config.attention_bias; q_norm, k_norm RMSNorm(head_dim) */
    {"qwen3", "Qwen3", 0, 0, 2, 1, 0, 0, 0, 0, "attention_bias", 0, NULL, 0, NULL, 0, NULL, 0, "silu"},
    /* GemmaAttention bias=config.attention_bias; GemmaMLP gated (GeGLU); embeddings tied by default */
    {"gemma", "Gemma", 0, 0, 2, 0, 0, 0, 0, 0, "attention_bias", 0, NULL, 0, NULL, 0, NULL, 1, "gelu_pytorch_tanh"},
    /* Gemma2DecoderLayer: input, post_attention, pre_feedforward, post_feedforward norms */
    {"gemma2", "Gemma2", 0, 0, 4, 0, 0, 0, 0, 0, "attention_bias", 0, NULL, 0, NULL, 0, NULL, 1, "gelu_pytorch_tanh"},
    /* Gemma3: Gemma2's four norms and q_norm, k_norm RMSNorm(head_dim) */
    {"gemma3_text", "Gemma3", 0, 0, 4, 1, 0, 0, 0, 0, "attention_bias", 0, NULL, 0, NULL, 0, NULL, 1,
     "gelu_pytorch_tanh"},
    /* PhiAttention q, k, v_proj and dense bias=True; PhiMLP fc1, fc2 (nn.Linear, biased);
     * one nn.LayerNorm per layer (attention and MLP in parallel); lm_head bias=True;
     * qk_layernorm: q_layernorm, k_layernorm LayerNorm(head_dim) */
    {"phi", "Phi", 1, 1, 1, 0, 1, 1, 1, 1, NULL, 0, NULL, 0, NULL, 0, "qk_layernorm", 0, "gelu_new"},
    /* Phi3Attention qkv_proj, o_proj and Phi3MLP gate_up_proj, down_proj: no biases */
    {"phi3", "Phi3", 0, 0, 2, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, "silu"},
    /* GPTNeoXAttention query_key_value, dense bias=config.attention_bias (default True);
     * GPTNeoXMLP dense_h_to_4h, dense_4h_to_h (nn.Linear, biased); nn.LayerNorm x2 */
    {"gpt_neox", "GPTNeoX", 1, 1, 2, 0, 0, 0, 1, 0, "attention_bias", 1, NULL, 0, NULL, 0, NULL, 0, "gelu"},
    /* NemotronAttention bias=config.attention_bias; NemotronMLP up_proj, down_proj
     * bias=config.mlp_bias, relu2; NemotronLayerNorm1P (weight and bias) x2 */
    {"nemotron", "Nemotron", 1, 1, 2, 0, 0, 0, 0, 0, "attention_bias", 0, NULL, 0, "mlp_bias", 0, NULL, 0, "relu2"},
    /* GraniteAttention bias=config.attention_bias; GraniteMLP bias=config.mlp_bias */
    {"granite", "Granite", 0, 0, 2, 0, 0, 0, 0, 0, "attention_bias", 0, NULL, 0, "mlp_bias", 0, NULL, 0, "silu"},
};
#define NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

/* a Llama-style layer for a file that names no model_type or architecture */
static const kind llama_style = {"", "", 0, 0, 2, 0, 0, 0, 0, 0, "attention_bias", 0, NULL, 0, "mlp_bias", 0, NULL, 0,
                                 "silu"};

static int known_types(char *buf, size_t len)
{
    size_t n = 0;
    for (int i = 0; i < NKINDS && n < len; i++) n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", kinds[i].type);
    return 0;
}

/* the kind of the file's model: its model_type (text_config's first), else its
 * architectures[0]; *out = &llama_style when it names neither */
static int kind_of(const reader *R, const kind **out, char *type, size_t type_len)
{
    json_t *v = field(R, "model_type");
    type[0] = 0;
    if (v) {
        if (!json_is_string(v)) {
            char got[64];
            snprintf(got, sizeof got, ", got %s", type_name(v));
            return fail(R, "model_type", "expected a string", got);
        }
        snprintf(type, type_len, "%s", json_string_value(v));
        for (int i = 0; i < NKINDS; i++)
            if (strcmp(kinds[i].type, type) == 0) {
                *out = &kinds[i];
                return CPB_OK;
            }
        char known[256], got[512];
        known_types(known, sizeof known);
        snprintf(got, sizeof got, " '%.40s': how its layer is made (a gated or a two-matrix MLP, which biases, which "
                 "norms) is not known to cpbench, so its memory and time cannot be estimated; known: %s", type, known);
        return fail(R, "model_type", "not modelled, refused:", got);
    }
    json_t *a = field(R, "architectures");
    const char *arch = json_is_array(a) && json_is_string(json_array_get(a, 0)) ? json_string_value(json_array_get(a, 0))
                                                                               : NULL;
    if (arch) {
        for (int i = 0; i < NKINDS; i++) {
            size_t n = strlen(kinds[i].arch);
            if (strncmp(arch, kinds[i].arch, n) == 0 && strncmp(arch + n, "For", 3) == 0) {
                *out = &kinds[i];
                snprintf(type, type_len, "%s", kinds[i].type);
                return CPB_OK;
            }
        }
        char known[256], got[512];
        known_types(known, sizeof known);
        snprintf(got, sizeof got, " '%.60s' (and no model_type): how its layer is made is not known to cpbench; known "
                 "model types: %s", arch, known);
        return fail(R, "architectures", "not modelled, refused:", got);
    }
    *out = &llama_style;
    return CPB_OK;
}

/* a boolean field `key` (absent: def) */
static int flag(const reader *R, const char *key, int def, int *out)
{
    json_t *v = key ? field(R, key) : NULL;
    *out = def;
    if (!v) return CPB_OK;
    if (!json_is_boolean(v)) {
        char got[64];
        snprintf(got, sizeof got, ", got %s", type_name(v));
        return fail(R, key, "expected true or false", got);
    }
    *out = json_is_true(v);
    return CPB_OK;
}

/* the MLP's activation: hidden_activation (Gemma's), hidden_act, else the kind's default */
static int activation(const reader *R, const kind *k, char *out, size_t len)
{
    const char *keys[] = {"hidden_activation", "hidden_act"};
    snprintf(out, len, "%s", k->act);
    for (int i = 0; i < 2; i++) {
        json_t *v = field(R, keys[i]);
        if (!v) continue;
        if (!json_is_string(v)) {
            char got[64];
            snprintf(got, sizeof got, ", got %s", type_name(v));
            return fail(R, keys[i], "expected a string (the activation's name)", got);
        }
        snprintf(out, len, "%s", json_string_value(v));
        return CPB_OK;
    }
    return CPB_OK;
}

/* the fields that make a model something the estimate does not describe */
typedef struct refusal {
    char text[900];
    size_t n;
} refusal;

static void refuse_add(refusal *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse_add(refusal *r, const char *fmt, ...)
{
    if (r->n >= sizeof r->text) return;
    if (r->n) r->n += (size_t)snprintf(r->text + r->n, sizeof r->text - r->n, "; ");
    if (r->n >= sizeof r->text) return;
    va_list ap;
    va_start(ap, fmt);
    r->n += (size_t)vsnprintf(r->text + r->n, sizeof r->text - r->n, fmt, ap);
    va_end(ap);
}

/* a field's value in a message: the integer, or what it is */
static void value_text(const json_t *v, char *buf, size_t len)
{
    if (json_is_integer(v)) snprintf(buf, len, "%lld", (long long)json_integer_value(v));
    else if (json_is_true(v)) snprintf(buf, len, "true");
    else snprintf(buf, len, "%s", type_name(v));
}

/* "key = value" appended to a comma-separated list of len bytes holding *n */
static void list_add(char *list, size_t len, size_t *n, const char *key, const json_t *v)
{
    char val[64];
    value_text(v, val, sizeof val);
    if (*n < len) *n += (size_t)snprintf(list + *n, len - *n, "%s%s = %s", *n ? ", " : "", key, val);
}

/* set: an integer above `above`, true, or any other value that is not null, false or a
 * number (what a model that has the feature writes) */
static int is_set(const json_t *v, json_int_t above)
{
    if (!v || json_is_false(v)) return 0;
    if (json_is_integer(v)) return json_integer_value(v) > above;
    if (json_is_real(v)) return json_real_value(v) > (double)above;
    return 1;
}

/* Mixture of experts, sliding-window or chunked attention, multi-head latent attention:
 * each field found is named in r. */
static int unmodelled(const reader *R, int64_t layers, refusal *r)
{
    char val[64], list[400] = "";
    size_t n = 0;
    /* a mixture of experts: an expert count above 1 (transformers' Mixtral, Qwen2-MoE /
     * Qwen3-MoE, DeepSeek, DBRX-style names), or the routing's and the experts' sizes */
    static const char *const experts[] = {"num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"};
    static const char *const routing[] = {"num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
                                          "moe_topk", "num_shared_experts"};
    for (size_t i = 0; i < sizeof experts / sizeof experts[0]; i++) {
        json_t *v = field(R, experts[i]);
        if (is_set(v, 1)) list_add(list, sizeof list, &n, experts[i], v);
    }
    for (size_t i = 0; i < sizeof routing / sizeof routing[0]; i++) {
        json_t *v = field(R, routing[i]);
        if (is_set(v, 0)) list_add(list, sizeof list, &n, routing[i], v);
    }
    if (n)
        refuse_add(r, "%s: a mixture of experts (the experts' weights, the router and the token dispatch are not "
                   "modelled; estimated as a dense model it would be wrong in both memory and time)", list);
    /* sliding-window or chunked attention: attention over a window of keys is not the
     * causal attention the methods and the timing model run */
    json_t *lt = field(R, "layer_types");
    if (lt) {
        if (!json_is_array(lt)) {
            char got[64];
            snprintf(got, sizeof got, ", got %s", type_name(lt));
            return fail(R, "layer_types", "expected an array of the layers' attention types", got);
        }
        size_t total = json_array_size(lt), other = 0;
        const char *first = NULL;
        for (size_t i = 0; i < total; i++) {
            json_t *e = json_array_get(lt, i);
            const char *t = json_is_string(e) ? json_string_value(e) : "?";
            if (strcmp(t, "full_attention") != 0) {
                other++;
                if (!first) first = t;
            }
        }
        if (other)
            refuse_add(r, "layer_types: %zu of %zu layers are not full attention (the first: '%.40s'): attention "
                       "limited to a window or of another kind is not modelled", other, total, first);
    }
    json_t *sw = field(R, "sliding_window");
    if (!lt && is_set(sw, 0)) {
        value_text(sw, val, sizeof val);
        json_t *use = field(R, "use_sliding_window");
        if (use && json_is_boolean(use)) {
            /* Qwen2 / Qwen3: the window is used only with use_sliding_window, and then by
             * the layers from max_window_layers on (Qwen2Config.layer_types) */
            json_t *mwl = field(R, "max_window_layers");
            int64_t from = json_is_integer(mwl) ? (int64_t)json_integer_value(mwl) : 0;
            if (from < 0) from = 0;
            int64_t sliding = from >= layers ? 0 : layers - from;
            if (json_is_true(use) && sliding > 0)
                refuse_add(r, "use_sliding_window = true, sliding_window = %s: layers %lld to %lld of %lld attend over a "
                           "window of keys (max_window_layers = %lld); sliding-window attention is not modelled", val,
                           (long long)from, (long long)layers - 1, (long long)layers, (long long)from);
        } else {
            refuse_add(r, "sliding_window = %s: attention over a window of keys is not the causal attention cpbench "
                       "models (a file with sliding_window null, use_sliding_window false or layer_types all "
                       "full_attention has none)", val);
        }
    }
    json_t *chunk = field(R, "attention_chunk_size");
    if (is_set(chunk, 0)) {
        value_text(chunk, val, sizeof val);
        refuse_add(r, "attention_chunk_size = %s: chunked local attention is not modelled", val);
    }
    /* multi-head latent attention (DeepSeek-V2/V3): low-rank compressed keys and values */
    static const char *const mla[] = {"kv_lora_rank", "q_lora_rank"};
    n = 0;
    list[0] = 0;
    for (size_t i = 0; i < sizeof mla / sizeof mla[0]; i++) {
        json_t *v = field(R, mla[i]);
        if (is_set(v, 0)) list_add(list, sizeof list, &n, mla[i], v);
    }
    if (n)
        refuse_add(r, "%s: multi-head latent attention (keys and values through a low-rank latent) is not modelled",
                   list);
    return CPB_OK;
}

/* the results' model column: the model's name (_name_or_path's last part, else the
 * file's folder for a config.json, else the file's stem), then a hash of the values, so
 * that two files of one name but other values never share a point */
static void make_name(const reader *R, cpb_model_def *m)
{
    char base[256] = "";
    json_t *np = json_object_get(R->top, "_name_or_path");
    if (json_is_string(np) && json_string_value(np)[0]) {
        const char *s = json_string_value(np), *slash = strrchr(s, '/');
        snprintf(base, sizeof base, "%s", slash && slash[1] ? slash + 1 : s);
    } else {
        char path[256];
        snprintf(path, sizeof path, "%s", R->path);
        char *slash = strrchr(path, '/');
        const char *file = slash ? slash + 1 : path;
        if (strcmp(file, "config.json") == 0 && slash) {
            *slash = 0;
            char *up = strrchr(path, '/');
            snprintf(base, sizeof base, "%s", up ? up + 1 : path);
        } else {
            snprintf(base, sizeof base, "%s", file);
            char *dot = strrchr(base, '.');
            if (dot && dot != base) *dot = 0;
        }
    }
    for (char *c = base; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' ||
              *c == '-' || *c == '_'))
            *c = '_';
    if (!base[0]) snprintf(base, sizeof base, "config");
    base[24] = 0;
    uint64_t h = 1469598103934665603ull;
    const double vals[] = {(double)m->D, m->H, m->G, m->d, m->rope_base, m->layers, (double)m->ffn, (double)m->vocab,
                           m->tied};
    /* the layer's make-up, only where it is not Llama's (so that a Llama-style file keeps
     * the name it had before these were read) */
    const double more[] = {m->two_matrix, m->qkv_bias, m->o_bias, m->mlp_bias, m->head_bias, m->norm_bias,
                           m->norms == 2 ? 0 : m->norms, m->qk_norm};
    int llama_like = 1;
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) llama_like &= more[i] == 0;
    for (size_t i = 0; i < sizeof vals / sizeof vals[0] + (llama_like ? 0 : sizeof more / sizeof more[0]); i++) {
        double x = i < sizeof vals / sizeof vals[0] ? vals[i] : more[i - sizeof vals / sizeof vals[0]];
        unsigned char b[sizeof(double)];
        memcpy(b, &x, sizeof b);
        for (size_t k = 0; k < sizeof b; k++) h = (h ^ b[k]) * 1099511628211ull;
    }
    snprintf(m->name, sizeof m->name, "%s~%06x", base, (unsigned)(h & 0xffffff));
}

int cpb_model_config_read(const char *path, cpb_model_def *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof out[0]);
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        FILE *f = fopen(path, "rb");
        if (!f) {
            snprintf(err, err_len, "--model-config %s: cannot be read (%s); give the path of a Hugging Face config.json",
                     path, je.text);
        } else {
            fclose(f);
            snprintf(err, err_len, "--model-config %s: not JSON (line %d, column %d: %s); expected a Hugging Face "
                     "config.json", path, je.line, je.column, je.text);
        }
        return CPB_ERR_INVALID;
    }
    reader R = {path, NULL, root, err, err_len};
    int rc = CPB_OK;
    if (!json_is_object(root)) {
        snprintf(err, err_len, "--model-config %s: expected a JSON object (a Hugging Face config.json), got %s", path,
                 type_name(root));
        rc = CPB_ERR_INVALID;
        goto out;
    }
    json_t *tc = json_object_get(root, "text_config");
    if (tc && !json_is_null(tc)) {
        if (!json_is_object(tc)) {
            char got[64];
            snprintf(got, sizeof got, ", got %s", type_name(tc));
            rc = fail(&R, "text_config", "expected an object (the text model's fields)", got);
            goto out;
        }
        R.text = tc;
    }
    int64_t D, H, G, d, L, F, V;
    if ((rc = positive(&R, "hidden_size", 0, INT64_C(1) << 40, &D)) != CPB_OK) goto out;
    if ((rc = positive(&R, "num_attention_heads", 0, CPB_MAX_HEADS, &H)) != CPB_OK) goto out;
    if ((rc = positive(&R, "num_key_value_heads", H, CPB_MAX_HEADS, &G)) != CPB_OK) goto out;
    if (!field(&R, "head_dim") && D % H) {
        char got[128];
        snprintf(got, sizeof got, ": hidden_size %lld is not a multiple of num_attention_heads %lld", (long long)D,
                 (long long)H);
        rc = fail(&R, "head_dim", "missing and cannot be derived", got);
        goto out;
    }
    if ((rc = positive(&R, "head_dim", D / H, 1 << 16, &d)) != CPB_OK) goto out;
    if (d % 2) {
        char got[64];
        snprintf(got, sizeof got, ", got %lld", (long long)d);
        rc = fail(&R, "head_dim", "expected an even number (RoPE rotates pairs)", got);
        goto out;
    }
    if (H % G) {
        char got[128];
        snprintf(got, sizeof got, ": %lld query heads, %lld kv heads", (long long)H, (long long)G);
        rc = fail(&R, "num_key_value_heads", "expected a divisor of num_attention_heads", got);
        goto out;
    }
    if ((rc = rope_base(&R, &out->rope_base)) != CPB_OK) goto out;
    if ((rc = positive(&R, "num_hidden_layers", 0, 1 << 20, &L)) != CPB_OK) goto out;
    if ((rc = positive(&R, "intermediate_size", 0, INT64_C(1) << 40, &F)) != CPB_OK) goto out;
    if ((rc = positive(&R, "vocab_size", 0, INT64_C(1) << 40, &V)) != CPB_OK) goto out;
    /* what the estimate cannot describe is refused, each field named */
    refusal no = {"", 0};
    if ((rc = unmodelled(&R, L, &no)) != CPB_OK) goto out;
    if (no.n) {
        snprintf(err, err_len, "--model-config %s: not modelled, refused: %s", path, no.text);
        rc = CPB_ERR_INVALID;
        goto out;
    }
    /* the layer's make-up from its model_type (kinds[] above) and the fields that switch it */
    const kind *k = NULL;
    if ((rc = kind_of(&R, &k, out->model_type, sizeof out->model_type)) != CPB_OK) goto out;
    out->two_matrix = k->two_matrix;
    out->norm_bias = k->norm_bias;
    out->norms = k->norms;
    out->qkv_bias = k->qkv_bias;
    out->o_bias = k->o_bias;
    out->mlp_bias = k->mlp_bias;
    out->head_bias = k->head_bias;
    out->qk_norm = k->qk_norm;
    int on;
    if ((rc = flag(&R, k->attn_bias_key, k->attn_bias_def, &on)) != CPB_OK) goto out;
    if (k->attn_bias_key) out->qkv_bias = out->o_bias = on;
    if ((rc = flag(&R, k->qkv_bias_key, k->qkv_bias_def, &on)) != CPB_OK) goto out;
    if (k->qkv_bias_key) out->qkv_bias = on;
    if ((rc = flag(&R, k->mlp_bias_key, k->mlp_bias_def, &on)) != CPB_OK) goto out;
    if (k->mlp_bias_key) out->mlp_bias = on;
    if ((rc = flag(&R, k->qk_norm_key, 0, &on)) != CPB_OK) goto out;
    if (k->qk_norm_key) out->qk_norm = on;
    if ((rc = activation(&R, k, out->act, sizeof out->act)) != CPB_OK) goto out;
    if ((rc = tied(&R, k->tied_def, &out->tied)) != CPB_OK) goto out;
    out->D = D;
    out->H = (int)H;
    out->G = (int)G;
    out->d = (int)d;
    out->layers = (int)L;
    out->ffn = F;
    out->vocab = V;
    snprintf(out->source, sizeof out->source, "%s", path);
    make_name(&R, out);
out:
    json_decref(root);
    return rc;
}

/* ---------------------------------------------------------------- the registry */

#define MAX_CONFIGS 8
#define MAX_CONFIG_TEXT ((long)1 << 20)
static cpb_model_def registered[MAX_CONFIGS];
static cpb_model_spec specs[MAX_CONFIGS];
static char *texts[MAX_CONFIGS]; /* each file's text, kept until the process ends */
static int n_registered;

/* the whole text of the file at path (malloc'd, NUL-terminated), NULL with a message */
static char *read_text(const char *path, char *err, size_t err_len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long len = -1;
    if (f && fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    if (f && len >= 0 && len <= MAX_CONFIG_TEXT && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1)) &&
        fread(buf, 1, (size_t)len, f) == (size_t)len) {
        buf[len] = 0;
    } else {
        free(buf);
        buf = NULL;
        if (len > MAX_CONFIG_TEXT)
            snprintf(err, err_len, "--model-config %s: larger than %ld bytes; a config.json is a few KiB", path,
                     MAX_CONFIG_TEXT);
        else snprintf(err, err_len, "--model-config %s: cannot be read again to keep its text", path);
    }
    if (f) fclose(f);
    return buf;
}

const cpb_model_spec *cpb_model_config_spec(const char *name)
{
    for (int i = 0; name && i < n_registered; i++)
        if (strcmp(registered[i].name, name) == 0) return &specs[i];
    return NULL;
}

const cpb_model_def *cpb_model_config_find(const char *name)
{
    for (int i = 0; name && i < n_registered; i++)
        if (strcmp(registered[i].name, name) == 0) return &registered[i];
    return NULL;
}

int cpb_model_config_register(const char *path, char *name_out, size_t name_len, char *err, size_t err_len)
{
    cpb_model_def m;
    CPB_TRY(cpb_model_config_read(path, &m, err, err_len));
    if (!cpb_model_config_find(m.name)) {
        if (n_registered >= MAX_CONFIGS) {
            snprintf(err, err_len, "--model-config: more than %d model files", MAX_CONFIGS);
            return CPB_ERR_INVALID;
        }
        char *text = read_text(path, err, err_len);
        if (!text) return CPB_ERR_INVALID;
        registered[n_registered] = m;
        texts[n_registered] = text;
        const cpb_model_def *r = &registered[n_registered];
        specs[n_registered] = (cpb_model_spec){r->name, r->layers, r->ffn, r->vocab, r->tied, r->source,
                                               .two_matrix = r->two_matrix, .act = r->act, .qkv_bias = r->qkv_bias,
                                               .o_bias = r->o_bias, .mlp_bias = r->mlp_bias, .head_bias = r->head_bias,
                                               .norm_bias = r->norm_bias, .norms = r->norms, .qk_norm = r->qk_norm,
                                               .model_type = r->model_type, .config_text = text};
        n_registered++;
    }
    if (name_out) snprintf(name_out, name_len, "%s", m.name);
    return CPB_OK;
}

int cpb_model_shape(const char *name, cpb_problem *out)
{
    if (cpb_preset_find(name, out) == CPB_OK) return CPB_OK;
    const cpb_model_def *m = cpb_model_config_find(name);
    if (!m) return CPB_ERR_INVALID;
    out->D = m->D;
    out->H = m->H;
    out->G = m->G;
    out->d = m->d;
    out->rope_base = m->rope_base;
    snprintf(out->model, sizeof out->model, "%s", m->name);
    return CPB_OK;
}
