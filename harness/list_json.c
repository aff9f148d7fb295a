/* list_json.c — what `cpbench list` knows as a JSON tree, and the tree's flat form
 * (list_json.h).  The same sources as the text form (cmd_list.c): the method registry,
 * the knob list, the presets, the backend registry, the simulator's GPU profiles and the
 * model scope's frameworks. */
#include "list_json.h"

#include <stdint.h>
#include <string.h>

#include "attn_choice.h"
#include "cpb_method.h"
#include "cpb_presets.h"
#include "gpu_profiles.h"
#include "knobs.h"
#include "model_scope.h"
#include "registry.h"

/* set when an allocation of the tree failed: cpb_list_json then returns no tree rather
 * than one with fields missing */
static int out_of_memory;

/* o[key] = v and a[] += v, taking v; a NULL o, a or v (out of memory) is noted */
static void put(json_t *o, const char *key, json_t *v)
{
    if (!o || !v || json_object_set_new(o, key, v) != 0) out_of_memory = 1;
}

static void add(json_t *a, json_t *v)
{
    if (!a || !v || json_array_append_new(a, v) != 0) out_of_memory = 1;
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static const char *knob_type_name(cpb_knob_type t)
{
    switch (t) {
    case CPB_KNOB_INT: return "int";
    case CPB_KNOB_TOKENS: return "tokens";
    case CPB_KNOB_CHOICE: return "choice";
    case CPB_KNOB_BYTES: return "bytes";
    }
    return "unknown";
}

/* "a|b|c" as ["a", "b", "c"] (the table's machine form of the choices) */
static json_t *choices_array(const char *choices)
{
    if (!choices) return json_null();
    json_t *a = json_array();
    for (const char *p = choices; a;) {
        size_t len = strcspn(p, "|");
        add(a, json_stringn(p, len));
        if (!p[len]) break;
        p += len + 1;
    }
    return a;
}

static json_t *option_json(const cpb_knob *k)
{
    char opt[64];
    cpb_knob_option(k, opt, sizeof opt);
    json_t *o = json_object();
    put(o, "option", json_string(opt));
    put(o, "name", json_string(k->name));
    put(o, "arg", str_or_null(k->arg));
    put(o, "type", json_string(knob_type_name(k->type)));
    put(o, "default", str_or_null(k->def));
    put(o, "choices", choices_array(k->type == CPB_KNOB_CHOICE ? k->choices : NULL));
    put(o, "help", str_or_null(k->help));
    return o;
}

static json_t *methods_json(void)
{
    json_t *a = json_array();
    for (int i = 0; i < cpb_method_count() && a; i++) {
        const cpb_method *m = cpb_method_at(i);
        json_t *o = json_object(), *opts = json_array();
        for (const cpb_knob *k = m->knobs; k && k->name && opts; k++) add(opts, option_json(k));
        put(o, "name", json_string(m->name));
        put(o, "summary", str_or_null(m->summary));
        put(o, "options", opts);
        add(a, o);
    }
    return a;
}

/* the knobs that are not a method's: every point's (cpb_knob_of(NULL, name) finds them) */
static json_t *point_options_json(void)
{
    json_t *a = json_array();
    for (int i = 0; i < cpb_knob_count() && a; i++) {
        const cpb_knob *k = cpb_knob_of(NULL, cpb_knob_at(i)->name);
        if (!k) continue;
        json_t *o = option_json(k);
        put(o, "points", json_string(cpb_knob_points_name(k)));
        add(a, o);
    }
    return a;
}

static json_t *models_json(void)
{
    json_t *a = json_array();
    for (int i = 0; i < cpb_preset_count() && a; i++) {
        const cpb_preset *p = cpb_preset_at(i);
        json_t *o = json_object();
        put(o, "name", json_string(p->name));
        put(o, "hidden", json_integer((json_int_t)p->D));
        put(o, "heads", json_integer(p->H));
        put(o, "kv_heads", json_integer(p->G));
        put(o, "head_dim", json_integer(p->d));
        put(o, "rope_base", json_real(p->rope_base));
        put(o, "notes", str_or_null(p->notes));
        add(a, o);
    }
    return a;
}

/* backend i: whether it is there to run, the loader's description, its devices */
static json_t *backend_json(int i)
{
    char why[8192] = "", how[8192] = "";
    json_t *o = json_object();
    const cpb_backend *be = cpb_backend_at(i, why, sizeof why);
    if (!be) {
        put(o, "present", json_false());
        put(o, "description", json_string(why));
        put(o, "summary", json_null());
        put(o, "devices", json_null());
        put(o, "devices_why", json_null());
        return o;
    }
    int loaded = cpb_backend_describe_at(i, how, sizeof how);
    put(o, "present", json_boolean(loaded));
    put(o, "description", json_string(how));
    put(o, "summary", loaded ? str_or_null(be->summary) : json_null());
    int n = -1;
    why[0] = 0;
    if (loaded && be->probe) n = be->probe(why, sizeof why);
    put(o, "devices", n >= 0 ? json_integer(n) : json_null());
    put(o, "devices_why", n == 0 ? json_string(why[0] ? why : "none found") : json_null());
    return o;
}

static json_t *backends_json(const cpb_backend **cuda)
{
    json_t *o = json_object();
    for (int i = 0; i < cpb_backend_count() && o; i++) {
        char why[64];
        const char *name = cpb_backend_name_at(i);
        put(o, name, backend_json(i));
        if (!strcmp(name, "cuda")) *cuda = cpb_backend_at(i, why, sizeof why);
    }
    return o;
}

/* cuDNN's state as the cuda backend says it (cpb_backend.attn_cudnn: 0 not compiled in, 1
 * compiled in but not usable here, 2 usable; why: its whole text, whatever it names) */
static json_t *attention_json(const cpb_backend *cuda)
{
    char why[2048] = "";
    int st = 0;
    if (!cuda) snprintf(why, sizeof why, "not compiled in: no cuda backend in this build");
    else if (!cuda->attn_cudnn) snprintf(why, sizeof why, "not compiled in: the cuda plugin is not loaded");
    else st = cuda->attn_cudnn(why, sizeof why);
    json_t *o = json_object(), *impls = json_array(), *dnn = json_object();
    if (impls) {
        add(impls, json_string("cudnn"));
        add(impls, json_string("own"));
    }
    put(dnn, "compiled_in", json_boolean(st >= 1));
    put(dnn, "usable", json_boolean(st == 2));
    put(dnn, "why", json_string(why[0] ? why : "no detail"));
    put(o, "implementations", impls);
    put(o, "cudnn", dnn);
    return o;
}

static json_t *gpu_profiles_json(void)
{
    json_t *a = json_array();
    for (int i = 0; i < cpb_gpu_profile_count() && a; i++) {
        cpb_gpu_profile p;
        char err[256];
        if (cpb_gpu_profile_get(cpb_gpu_profile_name_at(i), &p, err, sizeof err) != CPB_OK) continue;
        json_t *o = json_object();
        put(o, "name", json_string(p.name));
        put(o, "description", str_or_null(p.description));
        put(o, "memory_bytes", json_integer((json_int_t)p.mem_bytes));
        put(o, "sm_arch", json_integer(p.hw.sm_arch));
        put(o, "peak_bf16_flops", json_real(p.hw.peak_flops));
        put(o, "peak_fp8_flops", json_real(p.fp8_flops));
        put(o, "hbm_bytes_per_s", json_real(p.hw.hbm_bw));
        put(o, "intra_node_busbw_bytes_per_s", json_real(p.hw.a2a_busbw));
        put(o, "inter_node_busbw_bytes_per_s", json_real(p.hw.inter_busbw));
        put(o, "host_bytes_per_gpu", json_integer((json_int_t)cpb_gpu_profile_host_per_gpu(&p)));
        put(o, "gpus_per_node", json_integer(p.hw.gpus_per_node));
        /* the figures that are estimates, by their calibration keys (gpu_profiles.h) */
        json_t *est = json_array();
        for (const char *s = cpb_gpu_profile_estimates(&p); est && s && *s;) {
            const char *comma = strchr(s, ',');
            size_t len = comma ? (size_t)(comma - s) : strlen(s);
            add(est, json_stringn(s, len));
            s += len + (comma ? 1 : 0);
        }
        put(o, "estimates", est);
        json_t *al = json_array();
        const char *target = NULL;
        for (int k = 0; al && cpb_gpu_profile_alias_at(k, &target); k++)
            if (strcmp(target, p.name) == 0) add(al, json_string(cpb_gpu_profile_alias_at(k, NULL)));
        put(o, "aliases", al);
        put(o, "default", json_boolean(strcmp(p.name, CPB_GPU_DEFAULT) == 0));
        add(a, o);
    }
    return a;
}

/* the frameworks are the choices of the --framework knob; each is described by the model
 * scope (cpb_framework_find) */
static json_t *frameworks_json(void)
{
    json_t *a = json_array();
    const cpb_knob *k = cpb_knob_at(cpb_knob_index("framework"));
    json_t *names = choices_array(k ? k->choices : NULL); /* null (no such knob): no frameworks */
    size_t i;
    json_t *name;
    json_array_foreach(names, i, name) {
        /* a choice the model scope does not describe would be refused by it: nulls say so */
        const cpb_framework *f = cpb_framework_find(json_string_value(name));
        json_t *o = json_object();
        put(o, "name", json_copy(name));
        put(o, "summary", str_or_null(f ? f->summary : NULL));
        put(o, "source", str_or_null(f ? f->source : NULL));
        put(o, "default", json_boolean(f && f == cpb_framework_find(NULL)));
        /* its parts, by knob (the values `cpbench list` prints), and the bytes per parameter
         * of the model states derived from them */
        cpb_setup s;
        if (f && cpb_setup_of_preset(f, &s) == CPB_OK) {
            json_t *parts = json_object();
            for (int p = 0; p < CPB_PART_COUNT; p++) {
                char v[128];
                cpb_setup_part_short(&s, p, v, sizeof v);
                put(parts, cpb_setup_part_knob(p), json_string(v));
            }
            put(o, "parts", parts);
            json_t *b = json_object();
            put(b, "device_replicated", json_real(s.dev_rep));
            put(b, "device_sharded", json_real(s.dev_sh));
            put(b, "host_replicated", json_real(s.host_rep));
            put(b, "host_sharded", json_real(s.host_sh));
            put(o, "bytes_per_parameter", b);
        } else {
            put(o, "parts", json_null());
            put(o, "bytes_per_parameter", json_null());
        }
        add(a, o);
    }
    json_decref(names);
    return a;
}

json_t *cpb_list_json(void)
{
    json_t *o = json_object();
    const cpb_backend *cuda = NULL;
    out_of_memory = 0;
    put(o, "schema", json_integer(CPB_LIST_SCHEMA));
    put(o, "methods", methods_json());
    put(o, "point_options", point_options_json());
    put(o, "models", models_json());
    put(o, "backends", backends_json(&cuda));
    put(o, "attention", attention_json(cuda));
    put(o, "gpu_profiles", gpu_profiles_json());
    put(o, "frameworks", frameworks_json());
    if (out_of_memory) {
        json_decref(o);
        return NULL;
    }
    return o;
}
