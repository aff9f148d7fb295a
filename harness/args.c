/* args.c — option table, parser and problem builder shared by every subcommand. */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_presets.h"
#include "model_config.h"
#include "registry.h"

typedef enum opt_kind {
    OPT_FLAG,     /* int set to 1 */
    OPT_INT,      /* positive int (sizes with suffix accepted) */
    OPT_INT0,     /* non-negative int */
    OPT_SIZE,     /* positive int64 with K/M/G */
    OPT_UINT64,   /* seed */
    OPT_DOUBLE,   /* > 0 */
    OPT_STR,      /* const char * into argv */
    OPT_NAME,     /* copied into a char array, checked against `choices` ("" = free) */
    OPT_METHOD,   /* name, comma list or all; each name checked against the registry */
    OPT_MODEL,    /* preset name */
    OPT_MODEL_CONFIG, /* a config.json, read and registered as a model (model_config.h) */
    OPT_BACKEND,  /* a backend this build knows of (registry.h; it may still be absent) */
    OPT_DTYPE,
    OPT_SIZELIST, /* a,b,c */
    OPT_FILES,    /* FILE... up to the next option */
} opt_kind;

typedef struct opt_def {
    const char *name;
    opt_kind kind;
    size_t off;
    size_t cap;          /* char array size for OPT_NAME / OPT_METHOD / OPT_MODEL; OPT_FILES: offset
                            of the file count */
    const char *choices; /* '|'-separated, for OPT_NAME */
    const char *arg, *help;
} opt_def;

#define F(field) offsetof(cpb_args, field)
#define CAP(field) sizeof(((cpb_args *)0)->field)

static const opt_def opts[] = {
    {"--method", OPT_METHOD, F(method), CAP(method), NULL, "M|M1,M2|all", "method(s) to run (see `cpbench list`)"},
    {"--model", OPT_MODEL, F(model), CAP(model), NULL, "PRESET", "model preset (see `cpbench list`)"},
    {"--model-config", OPT_MODEL_CONFIG, F(model_config), 0, NULL, "FILE",
     "a Hugging Face config.json instead of a preset (any model: its shape, layers, MLP, vocabulary)"},
    {"--hidden", OPT_SIZE, F(hidden), 0, NULL, "N", "override hidden size D"},
    {"--heads", OPT_INT, F(heads), 0, NULL, "N", "override query heads H"},
    {"--kv-heads", OPT_INT, F(kv_heads), 0, NULL, "N", "override key/value heads G"},
    {"--head-dim", OPT_INT, F(head_dim), 0, NULL, "N", "override head dim d (even)"},
    {"--rope-base", OPT_DOUBLE, F(rope_base), 0, NULL, "F", "override RoPE base (> 1)"},
    {"--seq", OPT_SIZE, F(seq), 0, NULL, "S", "global sequence length (128K = 131072)"},
    {"--dtype", OPT_DTYPE, F(dtype), 0, NULL, "fp32|bf16", "storage dtype (default bf16)"},
    {"--seed", OPT_UINT64, F(seed), 0, NULL, "N", "input seed (default 1)"},
    {"--backend", OPT_BACKEND, F(backend), CAP(backend), NULL, "cpu|sim|cuda", "backend (default cpu)"},
    {"--gpus", OPT_INT, F(gpus), 0, NULL, "N", "simulated world size"},
    {"--gpus-per-node", OPT_INT, F(gpus_per_node), 0, NULL, "N", "GPUs per node (default 8)"},
    {"--gpu", OPT_NAME, F(gpu), CAP(gpu), "", "PROFILE", "sim GPU profile (h100-sxm, h200, a100-80g, a100-40g)"},
    {"--scope", OPT_NAME, F(scope), CAP(scope), "layer|model", "layer|model", "sim: one layer or whole-model estimate"},
    {"--mem-cap", OPT_SIZE, F(mem_cap), 0, NULL, "BYTES", "device memory capacity (80G ok)"},
    {"--host-mem-cap", OPT_SIZE, F(host_mem_cap), 0, NULL, "BYTES", "pinned host capacity per rank"},
    {"--comm", OPT_NAME, F(comm), CAP(comm), "nccl|mpi", "nccl|mpi", "cuda collectives (default nccl)"},
    {"--calibration", OPT_STR, F(calibration), 0, NULL, "FILE", "sim: measured profile constants"},
    {"--sim-ranks", OPT_NAME, F(sim_ranks), CAP(sim_ranks), "auto|exact|symmetric", "auto|exact|symmetric",
     "sim: every rank, or one per class of ranks alike by symmetry (default auto: exact up to 64 ranks)"},
    {"--no-race-check", OPT_FLAG, F(no_race_check), 0, NULL, NULL, "skip the stream-race check"},
    {"--warmup", OPT_INT0, F(warmup), 0, NULL, "N", "warm-up steps (default 1)"},
    {"--iters", OPT_INT, F(iters), 0, NULL, "N", "measured steps (default 3)"},
    {"--profile-iter", OPT_INT0, F(profile_iter), 0, NULL, "N", "bracket iteration N for nsys"},
    {"--isolate", OPT_FLAG, F(isolate), 0, NULL, NULL, "run each trial in its own process"},
    {"--max-context", OPT_FLAG, F(max_context), 0, NULL, NULL, "plan: the longest context each candidate fits"},
    {"--seq-start", OPT_SIZE, F(seq_start), 0, NULL, "S", "sweep: first length"},
    {"--seq-stop", OPT_SIZE, F(seq_stop), 0, NULL, "S", "sweep: last length"},
    {"--factor", OPT_DOUBLE, F(factor), 0, NULL, "F", "sweep: growth factor (default 2)"},
    {"--bisect", OPT_SIZE, F(bisect), 0, NULL, "STEP", "sweep: bisect after the first OOM down to STEP"},
    {"--seq-list", OPT_SIZELIST, F(seq_list), 0, NULL, "a,b,c", "sweep: these lengths"},
    {"--dump", OPT_STR, F(dump), 0, NULL, "FILE", "verify: write inputs and results (HDF5)"},
    {"--out", OPT_STR, F(out), 0, NULL, "FILE", "results file (HDF5, appended)"},
    {"--cases", OPT_FILES, F(cases), F(n_cases), NULL, "FILE...", "verify: run the case files' lines for this world size"},
    {"--results", OPT_FILES, F(results), F(n_results), NULL, "FILE...", "fingerprints: the results files to compare"},
    {"--expect-refuse", OPT_FLAG, F(expect_refuse), 0, NULL, NULL, "verify: a refusal passes, acceptance fails"},
};
#define NOPTS ((int)(sizeof opts / sizeof opts[0]))

void cpb_args_defaults(cpb_args *a)
{
    memset(a, 0, sizeof *a);
    a->dtype = CPB_BF16;
    a->seed = 1;
    snprintf(a->backend, sizeof a->backend, "cpu");
    snprintf(a->scope, sizeof a->scope, "layer");
    snprintf(a->comm, sizeof a->comm, "nccl");
    a->warmup = 1;
    a->iters = 3;
    a->profile_iter = -1;
    a->factor = 2.0;
}

static int parse_int(const char *s, int allow_zero, int *out)
{
    int64_t v;
    if (cpb_parse_size(s, &v) != 0 || v > 0x7fffffff || (!allow_zero && v == 0)) return -1;
    *out = (int)v;
    return 0;
}

static const char *method_names(void)
{
    static char names[512];
    size_t len = 0;
    names[0] = 0;
    for (int i = 0; i < cpb_method_count(); i++)
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "",
                                cpb_method_at(i)->name);
    if (!cpb_method_count()) snprintf(names, sizeof names, "(none compiled in)");
    return names;
}

/* each comma-separated name must be a registered method (or the whole value "all") */
static int check_methods(const char *v, char *err, size_t err_len)
{
    if (strcmp(v, "all") == 0) return 0;
    const char *p = v;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char name[64];
        if (len == 0 || len >= sizeof name) {
            snprintf(err, err_len, "--method '%s': empty or overlong name in the list; give a name, "
                     "a comma list or 'all' (methods: %s)", v, method_names());
            return -1;
        }
        memcpy(name, p, len);
        name[len] = 0;
        if (!cpb_method_find(name)) {
            snprintf(err, err_len, "--method: unknown method '%s'; known methods: %s, or 'all'",
                     name, method_names());
            return -1;
        }
        if (!comma) return 0;
        p = comma + 1;
    }
}

static int parse_value(const opt_def *o, const char *v, cpb_args *a, char *err, size_t err_len)
{
    char *base = (char *)a + o->off;
    switch (o->kind) {
    case OPT_FLAG: return 0;
    case OPT_INT:
    case OPT_INT0:
        if (parse_int(v, o->kind == OPT_INT0, (int *)base) != 0) {
            snprintf(err, err_len, "%s '%s': expected a %s integer (K/M/G suffixes allowed)", o->name,
                     v, o->kind == OPT_INT0 ? "non-negative" : "positive");
            return -1;
        }
        return 0;
    case OPT_SIZE: {
        int64_t s;
        if (cpb_parse_size(v, &s) != 0 || s <= 0) {
            snprintf(err, err_len, "%s '%s': expected a positive size such as 4096, 128K, 1.5M or 2G "
                     "(binary suffixes, must be a whole number)", o->name, v);
            return -1;
        }
        *(int64_t *)base = s;
        return 0;
    }
    case OPT_UINT64: {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(v, &end, 0);
        if (errno || *end || !*v || *v == '-') {
            snprintf(err, err_len, "%s '%s': expected a non-negative integer", o->name, v);
            return -1;
        }
        *(uint64_t *)base = s;
        return 0;
    }
    case OPT_DOUBLE: {
        char *end;
        double d = strtod(v, &end);
        if (*end || !*v || !(d > 0) || !isfinite(d)) {
            snprintf(err, err_len, "%s '%s': expected a positive number", o->name, v);
            return -1;
        }
        *(double *)base = d;
        return 0;
    }
    case OPT_STR:
        if (!*v) {
            snprintf(err, err_len, "%s: empty file name", o->name);
            return -1;
        }
        *(const char **)base = v;
        return 0;
    case OPT_NAME:
    case OPT_MODEL:
    case OPT_METHOD:
    case OPT_BACKEND:
        if (strlen(v) >= o->cap || !*v) {
            snprintf(err, err_len, "%s '%s': empty or longer than %zu characters", o->name, v, o->cap - 1);
            return -1;
        }
        if (o->kind == OPT_NAME && o->choices[0] && !cpb_in_choices(v, o->choices)) {
            snprintf(err, err_len, "%s '%s': expected one of %s", o->name, v, o->choices);
            return -1;
        }
        if (o->kind == OPT_MODEL) {
            cpb_problem tmp;
            if (cpb_preset_find(v, &tmp) != CPB_OK) {
                snprintf(err, err_len, "--model: unknown preset '%s'; presets: %s", v, cpb_preset_names());
                return -1;
            }
        }
        if (o->kind == OPT_METHOD && check_methods(v, err, err_len) != 0) return -1;
        if (o->kind == OPT_BACKEND) {
            a->backend_given = 1;
            if (!cpb_backend_known(v)) {
                char why[256];
                cpb_backend_find(v, why, sizeof why);
                snprintf(err, err_len, "--backend: %s", why);
                return -1;
            }
        }
        snprintf(base, o->cap, "%s", v);
        if (o->off == F(scope)) a->scope_given = 1;
        return 0;
    case OPT_DTYPE:
        if (strcmp(v, "fp32") == 0) a->dtype = CPB_FP32;
        else if (strcmp(v, "bf16") == 0) a->dtype = CPB_BF16;
        else {
            snprintf(err, err_len, "--dtype '%s': expected fp32 or bf16", v);
            return -1;
        }
        return 0;
    case OPT_SIZELIST: {
        a->n_seq_list = 0;
        const char *p = v;
        for (;;) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            char item[48];
            int64_t s;
            if (len == 0 || len >= sizeof item) s = -1;
            else {
                memcpy(item, p, len);
                item[len] = 0;
                if (cpb_parse_size(item, &s) != 0) s = -1;
            }
            if (s <= 0) {
                snprintf(err, err_len, "--seq-list '%s': expected positive sizes separated by commas, "
                         "e.g. 128K,1M,3M", v);
                return -1;
            }
            if (a->n_seq_list >= CPB_ARGS_MAX_SEQS) {
                snprintf(err, err_len, "--seq-list: more than %d lengths", CPB_ARGS_MAX_SEQS);
                return -1;
            }
            a->seq_list[a->n_seq_list++] = s;
            if (!comma) return 0;
            p = comma + 1;
        }
    }
    case OPT_MODEL_CONFIG:
        if (!*v) {
            snprintf(err, err_len, "--model-config: empty file name");
            return -1;
        }
        if (cpb_model_config_register(v, a->model, sizeof a->model, err, err_len) != CPB_OK) return -1;
        a->model_config = v;
        return 0;
    case OPT_FILES: break; /* handled by the caller */
    }
    return 0;
}

/* the knob whose option is `name` ("--head-chunk"), NULL when none is */
static const cpb_knob *knob_named(const char *name)
{
    for (int i = 0; i < cpb_knob_count(); i++) {
        char opt[64];
        cpb_knob_option(cpb_knob_at(i), opt, sizeof opt);
        if (strcmp(opt, name) == 0) return cpb_knob_at(i);
    }
    return NULL;
}

int cpb_args_parse(int argc, char **argv, cpb_args *a, char *err, size_t err_len)
{
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            a->help = 1;
            continue;
        }
        /* --opt=value is accepted too */
        char name[64];
        const char *eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
        size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
        if (nlen >= sizeof name) nlen = sizeof name - 1;
        memcpy(name, arg, nlen);
        name[nlen] = 0;
        const opt_def *o = NULL;
        for (int k = 0; k < NOPTS; k++)
            if (strcmp(opts[k].name, name) == 0) o = &opts[k];
        const cpb_knob *knob = o ? NULL : knob_named(name);
        if (knob) { /* a method option, from the methods' tables */
            const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v) {
                snprintf(err, err_len, "%s: missing value (expected %s)", name, knob->arg ? knob->arg : "a value");
                return CPB_ERR_INVALID;
            }
            if (cpb_knob_parse(knob, v, &a->knobs, err, err_len) != CPB_OK) return CPB_ERR_INVALID;
            continue;
        }
        if (!o) {
            if (strncmp(arg, "-", 1) == 0)
                snprintf(err, err_len, "unknown option '%s'; `cpbench --help` lists the options", name);
            else
                snprintf(err, err_len, "unexpected argument '%s': options start with --; "
                         "`cpbench --help` lists them", arg);
            return CPB_ERR_INVALID;
        }
        if (o->kind == OPT_FLAG) {
            if (eq) {
                snprintf(err, err_len, "%s takes no value", o->name);
                return CPB_ERR_INVALID;
            }
            *(int *)((char *)a + o->off) = 1;
            continue;
        }
        if (o->kind == OPT_FILES) {
            /* every following argument up to the next option is a file */
            const char **files = (const char **)((char *)a + o->off);
            int *count = (int *)((char *)a + o->cap), n0 = *count;
            if (eq && eq[1]) files[(*count)++] = eq + 1;
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
                if (*count >= CPB_ARGS_MAX_FILES) {
                    snprintf(err, err_len, "%s: more than %d files", o->name, CPB_ARGS_MAX_FILES);
                    return CPB_ERR_INVALID;
                }
                files[(*count)++] = argv[++i];
            }
            if (*count == n0) {
                snprintf(err, err_len, "%s: missing value (expected %s)", o->name, o->arg);
                return CPB_ERR_INVALID;
            }
            continue;
        }
        const char *v;
        if (eq) v = eq + 1;
        else if (i + 1 < argc && !(strncmp(argv[i + 1], "--", 2) == 0 && argv[i + 1][2] != 0 &&
                                   !(argv[i + 1][2] >= '0' && argv[i + 1][2] <= '9')))
            v = argv[++i];
        else {
            snprintf(err, err_len, "%s: missing value (expected %s)", o->name, o->arg);
            return CPB_ERR_INVALID;
        }
        if ((o->kind == OPT_MODEL && a->model_config) || (o->kind == OPT_MODEL_CONFIG && a->model[0] && !a->model_config)) {
            snprintf(err, err_len, "give --model PRESET or --model-config FILE, not both");
            return CPB_ERR_INVALID;
        }
        if (parse_value(o, v, a, err, err_len) != 0) return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

void cpb_args_ctx_opts(const cpb_args *a, cpb_ctx_opts *o)
{
    memset(o, 0, sizeof *o);
    o->capacity = a->mem_cap;
    o->host_capacity = a->host_mem_cap;
    o->race_check = !a->no_race_check;
    o->comm = a->comm[0] ? a->comm : NULL;
}

void cpb_args_sim_opts(const cpb_args *a, cpb_sim_opts *o)
{
    memset(o, 0, sizeof *o);
    o->gpu = a->gpu[0] ? a->gpu : NULL;
    o->calibration = a->calibration;
    o->gpus_per_node = a->gpus_per_node;
    o->mem_cap = a->mem_cap;
    o->host_mem_cap = a->host_mem_cap;
    o->no_race_check = a->no_race_check;
    o->ranks = a->sim_ranks[0] ? cpb_sim_ranks_parse(a->sim_ranks) : CPB_SIM_RANKS_AUTO;
    if (o->ranks < 0) o->ranks = CPB_SIM_RANKS_AUTO; /* the parser accepts only the three names */
}

void cpb_args_runner_opts(const cpb_args *a, const cpb_backend *be, const char *exe, int nopts, char **opts,
                          cpb_runner_opts *o)
{
    memset(o, 0, sizeof *o);
    o->be = be;
    o->gpus = a->gpus;
    cpb_args_sim_opts(a, &o->sim);
    cpb_args_ctx_opts(a, &o->ctx);
    o->warmup = a->warmup;
    o->iters = a->iters;
    o->seed = a->seed;
    o->isolate = a->isolate;
    o->exe = exe;
    o->nopts = nopts;
    o->opts = opts;
}

int cpb_args_problem(const cpb_args *a, const cpb_method *m, int C, cpb_problem *p, char *err, size_t err_len)
{
    memset(p, 0, sizeof *p);
    if (!a->model[0]) {
        snprintf(err, err_len, "--model is required (presets: %s; override fields with --hidden, "
                 "--heads, --kv-heads, --head-dim, --rope-base), or --model-config FILE", cpb_preset_names());
        return CPB_ERR_INVALID;
    }
    if (cpb_model_shape(a->model, p) != CPB_OK) {
        snprintf(err, err_len, "--model: unknown preset '%s'; presets: %s", a->model, cpb_preset_names());
        return CPB_ERR_INVALID;
    }
    if (a->hidden) p->D = a->hidden;
    if (a->heads) p->H = a->heads;
    if (a->kv_heads) p->G = a->kv_heads;
    if (a->head_dim) p->d = a->head_dim;
    if (a->rope_base > 0) p->rope_base = a->rope_base;
    p->S = a->seq;
    p->C = C;
    p->dtype = a->dtype;
    if (p->S <= 0) {
        snprintf(err, err_len, "--seq is required: the global sequence length, e.g. --seq 128K");
        return CPB_ERR_INVALID;
    }
    if (C <= 0) {
        snprintf(err, err_len, "world size %d: need at least one rank (--gpus N on the sim backend)", C);
        return CPB_ERR_INVALID;
    }
    if (p->H > CPB_MAX_HEADS || p->G > CPB_MAX_HEADS) {
        snprintf(err, err_len, "--heads %d / --kv-heads %d: at most %d heads are supported", p->H, p->G,
                 CPB_MAX_HEADS);
        return CPB_ERR_INVALID;
    }
    if (p->H % p->G) {
        snprintf(err, err_len, "--heads %d is not a multiple of --kv-heads %d (GQA needs H %% G == 0)",
                 p->H, p->G);
        return CPB_ERR_INVALID;
    }
    if (p->d % 2) {
        snprintf(err, err_len, "--head-dim %d must be even (RoPE rotates pairs)", p->d);
        return CPB_ERR_INVALID;
    }
    if (!(p->rope_base > 1.0)) {
        snprintf(err, err_len, "--rope-base %g must be greater than 1", p->rope_base);
        return CPB_ERR_INVALID;
    }
    if (p->S % C) {
        snprintf(err, err_len, "--seq %lld is not divisible by the %d ranks: choose a multiple of %d",
                 (long long)p->S, C, C);
        return CPB_ERR_INVALID;
    }
    return m ? cpb_knobs_apply(m, &a->knobs, p, err, err_len) : CPB_OK;
}

int cpb_args_methods(const cpb_args *a, const cpb_method **out, int max, char *err, size_t err_len)
{
    if (!a->method[0]) {
        snprintf(err, err_len, "--method is required: a name, a comma list or 'all' (methods: %s)",
                 method_names());
        return -1;
    }
    if (check_methods(a->method, err, err_len) != 0) return -1;
    int n = 0;
    if (strcmp(a->method, "all") == 0) {
        for (int i = 0; i < cpb_method_count(); i++) {
            if (n >= max) goto too_many;
            out[n++] = cpb_method_at(i);
        }
        if (!n) {
            snprintf(err, err_len, "--method all: no methods are compiled in");
            return -1;
        }
        return n;
    }
    const char *p = a->method;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char name[64];
        memcpy(name, p, len); /* length checked by check_methods */
        name[len] = 0;
        if (n >= max) goto too_many;
        out[n++] = cpb_method_find(name);
        if (!comma) return n;
        p = comma + 1;
    }
too_many:
    snprintf(err, err_len, "--method: more than %d methods", max);
    return -1;
}

void cpb_args_usage(FILE *f)
{
    fprintf(f, "Options (every command parses all of them; sizes take binary K, M, G, T suffixes):\n");
    for (int k = 0; k < NOPTS; k++) {
        char left[64];
        snprintf(left, sizeof left, "%s%s%s", opts[k].name, opts[k].arg ? " " : "",
                 opts[k].arg ? opts[k].arg : "");
        fprintf(f, "  %-28s %s\n", left, opts[k].help);
    }
    fprintf(f, "Method options (each method takes its own; see `cpbench list`) and the simulator's:\n");
    for (int i = 0; i < cpb_knob_count(); i++) {
        const cpb_knob *k = cpb_knob_at(i);
        char left[64], who[256] = "";
        cpb_knob_option(k, left, sizeof left);
        size_t n = strlen(left);
        snprintf(left + n, sizeof left - n, " %s", k->arg ? k->arg : "V");
        for (int j = 0, w = 0; j < cpb_method_count(); j++)
            for (const cpb_knob *mk = cpb_method_at(j)->knobs; mk && mk->name; mk++)
                if (strcmp(mk->name, k->name) == 0) {
                    size_t l = strlen(who);
                    snprintf(who + l, sizeof who - l, "%s%s", w++ ? ", " : "", cpb_method_at(j)->name);
                }
        fprintf(f, "  %-28s %s: %s\n", left, who[0] ? who : cpb_knob_points_name(k), k->help ? k->help : "");
    }
}
