/* model_config.c — a Hugging Face config.json as a model (model_config.h), parsed with
 * Jansson (Debian's libjansson). */
#include "model_config.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_presets.h"
#include "input_file.h"
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
        /* the range itself, so that the fix is in the message */
        snprintf(got, sizeof got, "expected %s in 1..%lld, got %lld", x <= 0 ? "a positive integer" : "an integer",
                 (long long)max, (long long)x);
        return fail(R, key, got, NULL);
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

static int tied(const reader *R, int *out)
{
    json_t *v = field(R, "tie_word_embeddings");
    *out = 0;
    if (!v) return CPB_OK;
    if (!json_is_boolean(v)) {
        char got[64];
        snprintf(got, sizeof got, ", got %s", type_name(v));
        return fail(R, "tie_word_embeddings", "expected true or false", got);
    }
    *out = json_is_true(v);
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
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        unsigned char b[sizeof(double)];
        memcpy(b, &vals[i], sizeof b);
        for (size_t k = 0; k < sizeof b; k++) h = (h ^ b[k]) * 1099511628211ull;
    }
    snprintf(m->name, sizeof m->name, "%s~%06x", base, (unsigned)(h & 0xffffff));
}

/* the largest config.json read: real ones are a few KB */
#define MAX_CONFIG_BYTES ((size_t)4 << 20)

int cpb_model_config_read(const char *path, cpb_model_def *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof out[0]);
    /* the checked opener: a FIFO, a device or a directory is refused before any read (a FIFO
     * would block json_load_file forever) */
    char *text;
    size_t n;
    int rc = cpb_input_read(path, "--model-config", MAX_CONFIG_BYTES, &text, &n, err, err_len);
    if (rc != CPB_OK) {
        size_t l = strlen(err);
        snprintf(err + l, err_len - l, " (--model-config takes a Hugging Face config.json)");
        return rc == CPB_ERR_IO ? CPB_ERR_INVALID : rc;
    }
    rc = cpb_model_config_parse(text, n, path, out, err, err_len);
    free(text);
    return rc;
}

int cpb_model_config_parse(const char *text, size_t n, const char *path, cpb_model_def *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof out[0]);
    json_error_t je;
    json_t *root = json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        snprintf(err, err_len, "--model-config %s: not JSON (line %d, column %d: %s); expected a Hugging Face "
                 "config.json", path, je.line, je.column, je.text);
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
    if ((rc = tied(&R, &out->tied)) != CPB_OK) goto out;
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
static cpb_model_def registered[MAX_CONFIGS];
static cpb_model_spec specs[MAX_CONFIGS];
static int n_registered;

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
        registered[n_registered] = m;
        const cpb_model_def *r = &registered[n_registered];
        specs[n_registered] = (cpb_model_spec){r->name, r->layers, r->ffn, r->vocab, r->tied, r->source};
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
