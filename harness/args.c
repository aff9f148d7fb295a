/* args.c — option table, parser and problem builder shared by every subcommand. */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpb_presets.h"
#include "input_file.h"
#include "model_config.h"
#include "model_scope.h"
#include "registry.h"

#define CPB_STR_(x) #x
#define CPB_STR(x) CPB_STR_(x)

typedef enum opt_kind {
    OPT_FLAG,     /* int set to 1 */
    OPT_INT,      /* positive int (sizes with suffix accepted) */
    OPT_INT0,     /* non-negative int */
    OPT_SIZE,     /* positive int64 with K/M/G */
    OPT_UINT64,   /* seed */
    OPT_DOUBLE,   /* > 0 */
    OPT_STR,      /* const char * into argv: a file written (--out, --dump) */
    OPT_INFILE,   /* const char * into argv: a file read (its canonical text has its contents' hash) */
    OPT_NAME,     /* copied into a char array, checked against `choices` ("" = free) */
    OPT_METHOD,   /* name, comma list or all; each name checked against the registry */
    OPT_MODEL,    /* preset name */
    OPT_MODEL_CONFIG, /* a config.json, read and registered as a model (model_config.h) */
    OPT_BACKEND,  /* a backend this build knows of (registry.h; it may still be absent) */
    OPT_DTYPE,
    OPT_SIZELIST, /* a,b,c */
    OPT_FILES,    /* FILE... up to the next option */
} opt_kind;

/* the commands an option is for (a bit per cpb_cmd_id) and the backends it means
 * something on: an option a command would ignore is refused (cpb_args_check_command) */
#define CMD(name) (1u << CPB_CMD_##name)
#define C_PROBLEM (CMD(verify) | CMD(run) | CMD(sweep))
#define C_CTX (C_PROBLEM | CMD(selftest) | CMD(bench_kernels))
#define C_POINTS (CMD(run) | CMD(sweep))
enum { BE_SIM = 1, BE_CPU = 2, BE_CUDA = 4, BE_MEASURED = BE_CPU | BE_CUDA, BE_ALL = 7 };

typedef struct opt_def {
    const char *name;
    opt_kind kind;
    size_t off;
    size_t cap;          /* char array size for OPT_NAME / OPT_METHOD / OPT_MODEL; OPT_FILES: offset
                            of the file count */
    const char *choices; /* '|'-separated, for OPT_NAME */
    const char *arg, *help;
    cpb_opt_role role;   /* what the option is to a result (args.h) */
    unsigned cmds;       /* the commands that use it */
    unsigned backends;   /* the backends it means something on */
    const char *example; /* a valid value other than the default (tests) */
} opt_def;

#define F(field) offsetof(cpb_args, field)
#define CAP(field) sizeof(((cpb_args *)0)->field)
#define COL CPB_OPT_COLUMN
#define KEY CPB_OPT_KEY
#define NONE CPB_OPT_NONE

static const opt_def opts[] = {
    {"--method", OPT_METHOD, F(method), CAP(method), NULL, "M|M1,M2|all", "method(s) to run (see `cpbench list`)", COL, C_PROBLEM | CMD(plan), BE_ALL, "ring"},
    {"--model", OPT_MODEL, F(model), CAP(model), NULL, "PRESET", "model preset (see `cpbench list`)", COL, C_PROBLEM | CMD(plan), BE_ALL, "llama3-8b"},
    {"--model-config", OPT_MODEL_CONFIG, F(model_config), 0, NULL, "FILE",
     "a Hugging Face config.json instead of a preset (any model: its shape, layers, MLP, vocabulary)", COL,
     C_PROBLEM | CMD(plan), BE_ALL, NULL},
    {"--hidden", OPT_SIZE, F(hidden), 0, NULL, "N", "override hidden size D", COL, C_PROBLEM | CMD(plan), BE_ALL, "512"},
    {"--heads", OPT_INT, F(heads), 0, NULL, "N", "override query heads H", COL, C_PROBLEM | CMD(plan), BE_ALL, "16"},
    {"--kv-heads", OPT_INT, F(kv_heads), 0, NULL, "N", "override key/value heads G", COL, C_PROBLEM | CMD(plan), BE_ALL, "4"},
    {"--head-dim", OPT_INT, F(head_dim), 0, NULL, "N", "override head dim d (even)", COL, C_PROBLEM | CMD(plan), BE_ALL, "32"},
    {"--rope-base", OPT_DOUBLE, F(rope_base), 0, NULL, "F", "override RoPE base (> 1)", KEY, C_PROBLEM | CMD(plan), BE_ALL, "500000"},
    {"--seq", OPT_SIZE, F(seq), 0, NULL, "S", "global sequence length (128K = 131072)", COL, CMD(verify) | CMD(run) | CMD(plan), BE_ALL, "2048"},
    {"--dtype", OPT_DTYPE, F(dtype), 0, NULL, "fp32|bf16", "storage dtype (default bf16)", COL, C_PROBLEM | CMD(plan), BE_ALL, "fp32"},
    {"--seed", OPT_UINT64, F(seed), 0, NULL, "N", "input seed (default 1; backends with data)", COL, C_PROBLEM, BE_MEASURED, "7"},
    {"--backend", OPT_BACKEND, F(backend), CAP(backend), NULL, "cpu|sim|cuda", "backend (default cpu)", COL,
     C_CTX | CMD(device_props) | CMD(plan), BE_ALL, "cpu"},
    {"--gpus", OPT_INT, F(gpus), 0, NULL, "N", "world size (sim; --isolate on cpu/cuda), at most " CPB_STR(CPB_MAX_GPUS), COL, C_POINTS | CMD(plan), BE_ALL, "8"},
    {"--gpus-per-node", OPT_INT, F(gpus_per_node), 0, NULL, "N", "sim: GPUs per node (default 8)", KEY, C_POINTS | CMD(plan), BE_SIM, "4"},
    {"--gpu", OPT_NAME, F(gpu), CAP(gpu), "", "PROFILE", "sim GPU profile (h100-sxm = h100, h200, a100-80g, a100-40g, h800, a800-80g, h100-pcie, h100-nvl, b200)", COL, C_POINTS | CMD(plan), BE_SIM, "h200"},
    {"--scope", OPT_NAME, F(scope), CAP(scope), "layer|model", "layer|model", "scope of a row: one attention layer or the whole model (sim); default layer for run and sweep, model for plan", COL, C_POINTS | CMD(plan), BE_ALL, "model"},
    {"--mem-cap", OPT_SIZE, F(mem_cap), 0, NULL, "BYTES", "device memory capacity (80G ok)", KEY, C_CTX | CMD(plan), BE_ALL, "40G"},
    {"--host-mem-cap", OPT_SIZE, F(host_mem_cap), 0, NULL, "BYTES", "pinned host capacity per rank", KEY, C_CTX | CMD(plan), BE_ALL, "8G"},
    {"--comm", OPT_NAME, F(comm), CAP(comm), "nccl|mpi", "nccl|mpi", "cuda collectives (default nccl)", KEY, C_CTX, BE_CUDA, "mpi"},
    {"--calibration", OPT_INFILE, F(calibration), 0, NULL, "FILE", "sim: measured profile constants", KEY, C_POINTS | CMD(plan), BE_SIM, NULL},
    {"--sim-ranks", OPT_NAME, F(sim_ranks), CAP(sim_ranks), "auto|exact|symmetric", "auto|exact|symmetric",
     "sim: every rank, or one per class of ranks alike by symmetry (default auto: exact up to 64 ranks)", NONE,
     C_POINTS | CMD(plan), BE_SIM, "symmetric"},
    {"--no-race-check", OPT_FLAG, F(no_race_check), 0, NULL, NULL, "skip the stream-race check", KEY, C_CTX | CMD(plan), BE_ALL, NULL},
    {"--warmup", OPT_INT0, F(warmup), 0, NULL, "N", "warm-up steps (default 1)", COL, C_POINTS | CMD(bench_kernels), BE_MEASURED, "2"},
    {"--iters", OPT_INT, F(iters), 0, NULL, "N", "measured steps (default 3)", COL, C_POINTS | CMD(bench_kernels), BE_MEASURED, "5"},
    {"--profile-iter", OPT_INT0, F(profile_iter), 0, NULL, "N", "bracket iteration N for nsys", NONE, C_POINTS, BE_MEASURED, "1"},
    {"--isolate", OPT_FLAG, F(isolate), 0, NULL, NULL, "sweep: run each trial in its own process", NONE, CMD(sweep), BE_ALL, NULL},
    {"--max-context", OPT_FLAG, F(max_context), 0, NULL, NULL, "plan: the longest context each candidate fits", NONE,
     CMD(plan), BE_SIM, NULL},
    {"--methods", OPT_METHOD, F(methods), CAP(methods), NULL, "M1,M2", "plan: search only these methods", NONE, CMD(plan), BE_SIM, "ulysses,usp"},
    {"--stack", OPT_NAME, F(stack), CAP(stack), "deepspeed|megatron|yunchang|torchtitan", "deepspeed|megatron|yunchang|torchtitan",
     "plan: search only the methods this framework family has (driver/plan_frameworks.c)", NONE, CMD(plan), BE_SIM, "yunchang"},
    {"--min-headroom", OPT_INT0, F(min_headroom), 0, NULL, "PCT", "plan: recommend only candidates leaving this % of the "
     "usable memory free (default 10)", NONE, CMD(plan), BE_SIM, "15"},
    {"--top", OPT_INT, F(top), 0, NULL, "N", "plan: print the table's first N rows only", NONE, CMD(plan), BE_SIM, "10"},
    {"--timeout", OPT_DOUBLE, F(timeout), 0, NULL, "SECONDS", "end every rank when a trial makes no progress this long; sim: "
     "stop a point still simulating after this long (default 1800)", NONE, C_CTX | CMD(plan), BE_ALL, "600"},
    {"--seq-start", OPT_SIZE, F(seq_start), 0, NULL, "S", "sweep (and run --scope model): first length", NONE, C_POINTS | CMD(bench_kernels) | CMD(plan), BE_ALL, "64K"},
    {"--seq-stop", OPT_SIZE, F(seq_stop), 0, NULL, "S", "sweep (and run --scope model): last length", NONE, C_POINTS | CMD(bench_kernels) | CMD(plan), BE_ALL, "8M"},
    {"--factor", OPT_DOUBLE, F(factor), 0, NULL, "F", "sweep: growth factor (default 2)", NONE, CMD(sweep), BE_ALL, "4"},
    {"--bisect", OPT_SIZE, F(bisect), 0, NULL, "STEP", "sweep: bisect after the first OOM down to STEP", NONE, C_POINTS | CMD(plan), BE_ALL, "16K"},
    {"--seq-list", OPT_SIZELIST, F(seq_list), 0, NULL, "a,b,c", "sweep: these lengths", NONE, CMD(sweep), BE_ALL, "128K,1M"},
    {"--dump", OPT_STR, F(dump), 0, NULL, "FILE", "verify: write inputs and results (HDF5)", NONE, CMD(verify), BE_ALL, NULL},
    {"--out", OPT_STR, F(out), 0, NULL, "FILE", "results file (HDF5, appended)", NONE, C_POINTS | CMD(bench_kernels) | CMD(plan), BE_ALL, NULL},
    {"--force", OPT_FLAG, F(force), 0, NULL, NULL, "--out/--dump may replace a file that is not theirs", NONE,
     C_POINTS | CMD(verify) | CMD(bench_kernels) | CMD(plan), BE_ALL, NULL},
    {"--cases", OPT_FILES, F(cases), F(n_cases), NULL, "FILE...", "verify: run the case files' lines for this world size", NONE, CMD(verify), BE_ALL, NULL},
    {"--results", OPT_FILES, F(results), F(n_results), NULL, "FILE...", "fingerprints: the results files to compare", NONE, CMD(fingerprints), BE_ALL, NULL},
    {"--expect-refuse", OPT_FLAG, F(expect_refuse), 0, NULL, NULL, "verify: a refusal passes, acceptance fails", NONE, CMD(verify), BE_ALL, NULL},
    {"--format", OPT_NAME, F(format), CAP(format), "text|json|flat", "text|json|flat",
     "list: for people (text), or for scripts: JSON, or its leaves as PATH<TAB>VALUE lines (flat)", NONE, CMD(list), BE_ALL, "json"},
};
#define NOPTS ((int)(sizeof opts / sizeof opts[0]))
_Static_assert(NOPTS <= CPB_ARGS_MAX_OPTS, "raise CPB_ARGS_MAX_OPTS");

int cpb_args_option_count(void) { return NOPTS; }
const char *cpb_args_option_name(int i) { return i >= 0 && i < NOPTS ? opts[i].name : NULL; }
cpb_opt_role cpb_args_option_role(int i) { return i >= 0 && i < NOPTS ? opts[i].role : CPB_OPT_ROLE_UNSET; }
unsigned cpb_args_option_commands(int i) { return i >= 0 && i < NOPTS ? opts[i].cmds : 0; }
const char *cpb_args_option_example(int i) { return i >= 0 && i < NOPTS ? opts[i].example : NULL; }
const char *cpb_args_option_arg(int i) { return i >= 0 && i < NOPTS && opts[i].kind != OPT_FLAG ? opts[i].arg : NULL; }

static unsigned backend_kind(const char *name);
int cpb_args_option_on_backend(int i, const char *be_name)
{
    return i >= 0 && i < NOPTS && (opts[i].backends & backend_kind(be_name)) != 0;
}

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
    a->timeout = CPB_ARGS_DEFAULT_TIMEOUT_S;
    a->min_headroom = 10;
}

/* the largest value an integer option takes: every count is bounded so that no product of
 * it elsewhere can overflow */
static int64_t int_max(const opt_def *o)
{
    if (o->off == F(gpus) || o->off == F(gpus_per_node)) return CPB_MAX_GPUS;
    if (o->off == F(warmup) || o->off == F(iters) || o->off == F(profile_iter)) return CPB_ARGS_MAX_STEPS;
    if (o->off == F(heads) || o->off == F(kv_heads)) return CPB_MAX_HEADS;
    return 0x7fffffff;
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

/* each comma-separated name must be a registered method, listed once (or the whole value
 * "all") */
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
        /* a method twice would run (and write) its points twice */
        for (const char *q = v; q < p;) {
            const char *c2 = strchr(q, ',');
            size_t l2 = (size_t)(c2 - q);
            if (l2 == len && strncmp(q, name, len) == 0) {
                snprintf(err, err_len, "--method '%s': %s is listed twice; give each method once", v, name);
                return -1;
            }
            q = c2 + 1;
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
    case OPT_INT0: {
        int64_t x, max = int_max(o);
        if (cpb_parse_size(v, &x) != 0 || x > max || (o->kind == OPT_INT && x == 0)) {
            snprintf(err, err_len, "%s '%s': expected a %s integer of at most %lld (K/M/G suffixes allowed)", o->name,
                     v, o->kind == OPT_INT0 ? "non-negative" : "positive", (long long)max);
            return -1;
        }
        *(int *)base = (int)x;
        return 0;
    }
    case OPT_SIZE: {
        int64_t x;
        if (cpb_parse_size(v, &x) != 0 || x <= 0) {
            snprintf(err, err_len, "%s '%s': expected a positive size such as 4096, 128K, 1.5M or 2G "
                     "(binary suffixes, must be a whole number of at most 2^63 - 1)", o->name, v);
            return -1;
        }
        *(int64_t *)base = x;
        return 0;
    }
    case OPT_UINT64: {
        uint64_t x;
        if (cpb_parse_decimal_u64(v, (uint64_t)INT64_MAX, &x) != 0) {
            snprintf(err, err_len, "%s '%s': expected a decimal integer from 0 to %lld (digits only)", o->name, v,
                     (long long)INT64_MAX);
            return -1;
        }
        *(uint64_t *)base = x;
        return 0;
    }
    case OPT_DOUBLE: {
        /* the one strict parser: strtod alone would take blanks, signs, "inf", "nan", hex
         * and hex-float ("0x10", "0x1p1") */
        double d;
        if (cpb_parse_decimal(v, &d) != 0 || !(d > 0)) {
            snprintf(err, err_len, "%s '%s': expected a positive decimal number such as 2, 0.5 or 1e6 (digits, no "
                     "sign, no hex)", o->name, v);
            return -1;
        }
        *(double *)base = d;
        return 0;
    }
    case OPT_STR:
    case OPT_INFILE:
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
            int64_t x;
            if (len == 0 || len >= sizeof item) x = -1;
            else {
                memcpy(item, p, len);
                item[len] = 0;
                if (cpb_parse_size(item, &x) != 0) x = -1;
            }
            if (x <= 0) {
                snprintf(err, err_len, "--seq-list '%s': expected positive sizes separated by commas, "
                         "e.g. 128K,1M,3M", v);
                return -1;
            }
            if (a->n_seq_list >= CPB_ARGS_MAX_SEQS) {
                snprintf(err, err_len, "--seq-list: more than %d lengths", CPB_ARGS_MAX_SEQS);
                return -1;
            }
            a->seq_list[a->n_seq_list++] = x;
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
    unsigned char seen[CPB_ARGS_MAX_OPTS] = {0}, knob_seen[CPB_MAX_KNOBS] = {0};
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
        int oi = -1;
        for (int k = 0; k < NOPTS; k++)
            if (strcmp(opts[k].name, name) == 0) oi = k;
        const opt_def *o = oi >= 0 ? &opts[oi] : NULL;
        const cpb_knob *knob = o ? NULL : knob_named(name);
        if (knob) { /* a method option, from the methods' tables */
            int ki = cpb_knob_index(knob->name);
            if (ki >= 0 && ki < CPB_MAX_KNOBS && knob_seen[ki]++) {
                snprintf(err, err_len, "%s is given twice: give it once", name);
                return CPB_ERR_INVALID;
            }
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
        if (seen[oi]++) {
            snprintf(err, err_len, "%s is given twice: give it once", o->name);
            return CPB_ERR_INVALID;
        }
        a->given[oi] = 1;
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

/* ---------------------------------------------------------------- options a command ignores */

/* the option of field `off` was given */
static int given_field(const cpb_args *a, size_t off)
{
    for (int i = 0; i < NOPTS; i++)
        if (opts[i].off == off) return a->given[i];
    return 0;
}


static unsigned backend_kind(const char *name)
{
    if (strcmp(name, "sim") == 0) return BE_SIM;
    if (strcmp(name, "cuda") == 0) return BE_CUDA;
    return BE_CPU;
}

static const char *kind_names(unsigned k)
{
    switch (k) {
    case BE_SIM: return "the sim backend";
    case BE_CPU: return "the cpu backend";
    case BE_CUDA: return "the cuda backend";
    case BE_MEASURED: return "the cpu and cuda backends";
    default: return "every backend";
    }
}

static const char *command_name(cpb_cmd_id cmd)
{
    static const char *const names[] = {
#define X(name, mpi) #name,
#include "commands.def"
#undef X
    };
    return cmd < CPB_CMD_COUNT ? names[cmd] : "?";
}

/* "run", "sweep, run": the commands of a mask, for messages */
static void commands_of(unsigned mask, char *out, size_t len)
{
    out[0] = 0;
    for (int c = 0; c < CPB_CMD_COUNT; c++)
        if (mask & (1u << c)) {
            size_t n = strlen(out);
            snprintf(out + n, len - n, "%s%s", n ? ", " : "", command_name((cpb_cmd_id)c));
        }
    for (char *p = out; *p; p++)
        if (*p == '_') *p = '-';
}

/* a knob given on the command line that no method of the command and no kind of point of
 * its backend and scope takes */
static int check_knobs(const cpb_args *a, cpb_cmd_id cmd, const char *be_name, char *err, size_t len)
{
    if (a->knobs.n == 0) return CPB_OK;
    char opt[64];
    if (!((C_PROBLEM | CMD(plan)) & (1u << cmd))) {
        cpb_knob_option(cpb_knob_at(cpb_knob_index(a->knobs.v[0].name)), opt, sizeof opt);
        snprintf(err, len, "%s is an option of a method or of the simulator; `cpbench %s` does not use it", opt,
                 command_name(cmd));
        return CPB_ERR_INVALID;
    }
    const cpb_method *ms[64];
    char why[512];
    int nm = a->method[0] ? cpb_args_methods(a, ms, 64, why, sizeof why) : 0;
    if (nm < 0) nm = 0; /* the command reports a bad --method */
    for (int i = 0; i < a->knobs.n; i++) {
        const char *name = a->knobs.v[i].name;
        const cpb_knob *k = cpb_knob_at(cpb_knob_index(name));
        if (!k) continue;
        cpb_knob_option(k, opt, sizeof opt);
        const cpb_knob *general = cpb_knob_of(NULL, name);
        if (general) { /* the driver's: a kind of point */
            if (general->points == CPB_KNOB_TIMING_MODEL_POINTS && backend_kind(be_name) != BE_SIM) {
                snprintf(err, len, "%s is an option of the simulator's points; the %s backend does not use it (use "
                         "--backend sim)", opt, be_name);
                return CPB_ERR_INVALID;
            }
            /* plan's scope is the whole model unless --scope says otherwise */
            const char *scope = cmd == CPB_CMD_plan && !a->scope_given ? "model" : a->scope;
            if (general->points == CPB_KNOB_MODEL_SCOPE_POINTS && strcmp(scope, "model") != 0) {
                snprintf(err, len, "%s is an option of the whole-model estimate; give --scope model (--backend sim)", opt);
                return CPB_ERR_INVALID;
            }
            continue;
        }
        if (nm == 0) continue; /* no --method: the command says it is required */
        int taken = 0;
        for (int j = 0; j < nm; j++)
            for (const cpb_knob *mk = ms[j]->knobs; mk && mk->name; mk++) taken |= strcmp(mk->name, name) == 0;
        if (!taken) {
            char who[256] = "";
            for (int j = 0, w = 0; j < cpb_method_count(); j++)
                for (const cpb_knob *mk = cpb_method_at(j)->knobs; mk && mk->name; mk++)
                    if (strcmp(mk->name, name) == 0) {
                        size_t l = strlen(who);
                        snprintf(who + l, sizeof who - l, "%s%s", w++ ? ", " : "", cpb_method_at(j)->name);
                    }
            snprintf(err, len, "%s is an option of %s; none of the methods given (--method %s) takes it", opt, who,
                     a->method);
            return CPB_ERR_INVALID;
        }
    }
    return CPB_OK;
}

int cpb_args_check_command(const cpb_args *a, cpb_cmd_id cmd, char *err, size_t len)
{
    const int tool = cmd == CPB_CMD_selftest || cmd == CPB_CMD_bench_kernels || cmd == CPB_CMD_device_props;
    /* the tools default to the cuda backend, plan searches on the simulator */
    const char *be_name = !a->backend_given && tool ? "cuda" : !a->backend_given && cmd == CPB_CMD_plan ? "sim" : a->backend;
    const unsigned be = backend_kind(be_name);
    char cmds[128];
    for (int i = 0; i < NOPTS; i++) {
        if (!a->given[i]) continue;
        const opt_def *o = &opts[i];
        if (!(o->cmds & (1u << cmd))) {
            commands_of(o->cmds, cmds, sizeof cmds);
            snprintf(err, len, "%s: `cpbench %s` does not use this option (it is for: %s); leave it out", o->name,
                     command_name(cmd), cmds);
            for (char *p = err; *p && p < err + len; p++)
                if (*p == '_') *p = '-';
            return CPB_ERR_INVALID;
        }
        if (!(o->backends & be)) {
            snprintf(err, len, "%s means something only on %s; the %s backend does not use it: leave it out", o->name,
                     kind_names(o->backends), be_name);
            return CPB_ERR_INVALID;
        }
    }
#define GIVEN(field) given_field(a, F(field))
    if (cmd == CPB_CMD_run && strcmp(a->scope, "model") != 0 && (GIVEN(seq_start) || GIVEN(seq_stop) || GIVEN(bisect))) {
        snprintf(err, len, "--seq-start, --seq-stop and --bisect: `cpbench run` uses them only with --scope model (the "
                 "largest-context search); a sweep of lengths is `cpbench sweep`");
        return CPB_ERR_INVALID;
    }
    if (GIVEN(force) && !GIVEN(out) && !GIVEN(dump)) {
        snprintf(err, len, "--force lets --out or --dump replace a file that is not theirs: give one of them, or leave "
                 "--force out");
        return CPB_ERR_INVALID;
    }
    if (a->profile_iter >= 0 && (be & BE_MEASURED) && a->profile_iter >= a->warmup + a->iters) {
        snprintf(err, len, "--profile-iter %d: a trial runs iterations 0 to %d (--warmup %d + --iters %d)",
                 a->profile_iter, a->warmup + a->iters - 1, a->warmup, a->iters);
        return CPB_ERR_INVALID;
    }
#undef GIVEN
    return check_knobs(a, cmd, be_name, err, len);
}

/* ---------------------------------------------------------------- canonical text, point options */

/* FNV-1a 64 of bytes, continuing from h */
static uint64_t fnv1a_bytes(const void *p, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++) {
        h ^= ((const unsigned char *)p)[i];
        h *= 1099511628211ull;
    }
    return h;
}
#define FNV1A_SEED 1469598103934665603ull

/* the largest calibration file read (a few hundred bytes are usual) */
#define MAX_CALIBRATION_BYTES ((size_t)1 << 20)
/* the most bytes of an input file hashed into the canonical text (a model config or a
 * case file is a few KB; a results file of --results may be large: its first bytes and its
 * size stand for it) */
#define MAX_HASHED_BYTES ((size_t)16 << 20)

/* "PATH fnv1a64:HASH" of an input file (its contents: ranks that read different files at
 * one path disagree), or "PATH (unreadable: why)"; the checked opener refuses FIFOs and
 * devices, so this never blocks */
static void input_file_text(const char *opt, const char *path, char *out, size_t len)
{
    int fd;
    char why[512];
    if (cpb_input_open(path, opt, &fd, why, sizeof why) != CPB_OK) {
        snprintf(out, len, "%s (unreadable: %s)", path, why);
        return;
    }
    uint64_t h = FNV1A_SEED;
    unsigned char buf[65536];
    size_t total = 0;
    ssize_t k;
    while (total < MAX_HASHED_BYTES && (k = read(fd, buf, sizeof buf)) != 0) {
        if (k < 0) {
            if (errno == EINTR) continue;
            close(fd);
            snprintf(out, len, "%s (unreadable: %s)", path, strerror(errno));
            return;
        }
        h = fnv1a_bytes(buf, (size_t)k, h);
        total += (size_t)k;
    }
    struct stat st;
    const long long size = fstat(fd, &st) == 0 ? (long long)st.st_size : -1;
    close(fd);
    snprintf(out, len, "%s fnv1a64:%016llx size:%lld", path, (unsigned long long)h, size);
}

/* option o's value in a, canonical (the same value whatever its spelling, and the same on
 * every rank given the same arguments: never an address).  Every kind has its case and
 * there is no default, so that a new kind without one is a compiler warning (-Wswitch),
 * not a hash of whatever bytes its field holds. */
static void value_text(const opt_def *o, const cpb_args *a, char *out, size_t len)
{
    const char *base = (const char *)a + o->off;
    out[0] = 0;
    switch (o->kind) {
    case OPT_FLAG: snprintf(out, len, "1"); return;
    case OPT_INT:
    case OPT_INT0: snprintf(out, len, "%d", *(const int *)base); return;
    case OPT_SIZE: snprintf(out, len, "%lld", (long long)*(const int64_t *)base); return;
    case OPT_UINT64: snprintf(out, len, "%llu", (unsigned long long)*(const uint64_t *)base); return;
    case OPT_DOUBLE: snprintf(out, len, "%.17g", *(const double *)base); return;
    case OPT_STR: snprintf(out, len, "%s", *(const char *const *)base ? *(const char *const *)base : ""); return;
    case OPT_INFILE:
    case OPT_MODEL_CONFIG: {
        const char *path = *(const char *const *)base;
        if (path) input_file_text(o->name, path, out, len);
        return;
    }
    case OPT_NAME:
    case OPT_METHOD:
    case OPT_MODEL:
    case OPT_BACKEND: snprintf(out, len, "%s", base); return; /* char arrays of the struct */
    case OPT_DTYPE: snprintf(out, len, "%s", cpb_dtype_name(a->dtype)); return;
    case OPT_SIZELIST:
        for (int i = 0; i < a->n_seq_list; i++) {
            size_t n = strlen(out);
            snprintf(out + n, len - n, "%s%lld", i ? "," : "", (long long)a->seq_list[i]);
        }
        return;
    case OPT_FILES: {
        const char *const *files = (const char *const *)base;
        int n = *(const int *)((const char *)a + o->cap);
        for (int i = 0; i < n; i++) {
            size_t l = strlen(out);
            char one[1024];
            input_file_text(o->name, files[i], one, sizeof one);
            snprintf(out + l, len - l, "%s%s", i ? " " : "", one);
        }
        return;
    }
    }
    snprintf(out, len, "(option kind %d has no canonical text: a bug)", (int)o->kind);
}

size_t cpb_args_canonical(const cpb_args *a, char *out, size_t len)
{
    size_t n = 0;
    char v[4096];
    if (!len) return 0;
    out[0] = 0;
    for (int i = 0; i < NOPTS && n < len; i++) {
        if (!a->given[i]) continue;
        value_text(&opts[i], a, v, sizeof v);
        n += (size_t)snprintf(out + n, len - n, "%s=%s\n", opts[i].name, v);
    }
    for (int i = 0; i < a->knobs.n && n < len; i++) {
        const cpb_knob_value *k = &a->knobs.v[i];
        const cpb_knob *d = cpb_knob_at(cpb_knob_index(k->name));
        if (d && d->type == CPB_KNOB_CHOICE) n += (size_t)snprintf(out + n, len - n, "%s=%s\n", k->name, k->s);
        else n += (size_t)snprintf(out + n, len - n, "%s=%lld\n", k->name, (long long)k->i);
    }
    return n < len ? n : len - 1;
}

uint64_t cpb_args_agreement_hash(const cpb_args *a, const char *cmd)
{
    static char canon[CPB_ARGS_CANONICAL_MAX];
    size_t n = cpb_args_canonical(a, canon, sizeof canon);
    uint64_t h = fnv1a_bytes(cmd, strlen(cmd), FNV1A_SEED);
    return fnv1a_bytes(canon, n, h);
}

/* FNV-1a of a calibration file's bytes (through the checked opener: a FIFO or /dev/zero is
 * refused before any read); CPB_OK or the opener's code with a message */
static int hash_file(const char *path, uint64_t *h, char *err, size_t len)
{
    char *buf;
    size_t n;
    int rc = cpb_input_read(path, "--calibration", MAX_CALIBRATION_BYTES, &buf, &n, err, len);
    if (rc != CPB_OK) return rc;
    *h = fnv1a_bytes(buf, n, FNV1A_SEED);
    free(buf);
    return CPB_OK;
}

int cpb_args_point_options(const cpb_args *a, const char *be_name, char *out, size_t len, char *err, size_t err_len)
{
    const unsigned be = backend_kind(be_name);
    size_t n = 0;
    out[0] = 0;
    for (int i = 0; i < NOPTS; i++) {
        const opt_def *o = &opts[i];
        if (o->role != CPB_OPT_KEY || !a->given[i] || !(o->backends & be)) continue;
        char v[64];
        if (o->off == F(calibration)) {
            uint64_t h;
            if (hash_file(a->calibration, &h, err, err_len) != CPB_OK) return CPB_ERR_INVALID;
            snprintf(v, sizeof v, "fnv1a64:%016llx", (unsigned long long)h);
        } else {
            value_text(o, a, v, sizeof v);
        }
        int k = snprintf(out + n, len - n, "%s%s=%s", n ? ";" : "", o->name + 2, v);
        if (k < 0 || (size_t)k >= len - n) {
            snprintf(err, err_len, "the options of the point do not fit the %zu-byte options column", len - 1);
            return CPB_ERR_INVALID;
        }
        n += (size_t)k;
    }
    return CPB_OK;
}

/* ---------------------------------------------------------------- what the driver gets */

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
    o->timeout_s = a->timeout; /* the simulator's watchdog: per point (sim_layer.c) */
    if (o->ranks < 0) o->ranks = CPB_SIM_RANKS_AUTO; /* the parser accepts only the three names */
}

int cpb_args_runner_opts(const cpb_args *a, const cpb_backend *be, const char *exe, int nopts, char **opts_,
                         cpb_runner_opts *o, char *err, size_t err_len)
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
    o->opts = opts_;
    return cpb_args_point_options(a, be->name, o->options, sizeof o->options, err, err_len);
}

/* ---------------------------------------------------------------- the problem */

/* a * b when both are positive and the product is at most max, else -1 */
static int64_t mul_within(int64_t a, int64_t b, int64_t max)
{
    int64_t r;
    if (a <= 0 || b <= 0 || __builtin_mul_overflow(a, b, &r) || r > max) return -1;
    return r;
}

/* the most elements a tensor of the layer may have: its bytes in fp64 (the reference) and
 * sums of a few of them stay far inside int64 */
#define MAX_TENSOR_ELEMS ((int64_t)1 << 56)

int cpb_problem_check_sizes(const cpb_problem *p, char *err, size_t len)
{
    const int64_t hd = mul_within(p->H, p->d, 0x7fffffff), gd = mul_within(p->G, p->d, 0x7fffffff);
    if (hd < 0 || gd < 0) {
        snprintf(err, len, "--heads %d x --head-dim %d (and --kv-heads %d x %d) must stay below 2^31: choose a smaller "
                 "--head-dim", p->H, p->d, p->G, p->d);
        return CPB_ERR_INVALID;
    }
    int64_t widest = p->D > hd ? p->D : hd; /* columns of the widest [S][.] tensor */
    if (mul_within(p->D, hd, MAX_TENSOR_ELEMS) < 0) {
        snprintf(err, len, "--hidden %lld x H*d %lld: the weights would hold more than 2^56 elements, beyond cpbench's "
                 "int64 sizes", (long long)p->D, (long long)hd);
        return CPB_ERR_INVALID;
    }
    if (mul_within(p->S, widest, MAX_TENSOR_ELEMS) < 0) {
        snprintf(err, len, "--seq %lld with rows of %lld elements (--hidden %lld, heads x head dim %lld): the layer's "
                 "tensors would hold more than 2^56 elements, beyond cpbench's int64 sizes; --seq at most %lld here",
                 (long long)p->S, (long long)widest, (long long)p->D, (long long)hd,
                 (long long)(MAX_TENSOR_ELEMS / widest));
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
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
    if (C <= 0 || C > CPB_MAX_GPUS) {
        snprintf(err, err_len, "world size %d: need 1 to %d ranks (--gpus N on the sim backend)", C, CPB_MAX_GPUS);
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
    CPB_TRY(cpb_problem_check_sizes(p, err, err_len));
    if (p->S % C) {
        snprintf(err, err_len, "--seq %lld is not divisible by the %d ranks: choose a multiple of %d",
                 (long long)p->S, C, C);
        return CPB_ERR_INVALID;
    }
    /* the whole model's layout: C GPUs as --cp ranks x replicas (checked here, before any
     * point runs); a point's world is the context-parallel group (model_scope_layout.c) */
    cpb_knobs given = a->knobs;
    int cp;
    CPB_TRY(cpb_layout_resolve(&given, C, &cp, err, err_len));
    if (!m) return CPB_OK;
    p->C = cp;
    return cpb_knobs_apply(m, &given, p, err, err_len);
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
        if (cpb_method_count() > max) goto too_many;
        for (int i = 0; i < cpb_method_count(); i++) out[n++] = cpb_method_at(i);
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
    snprintf(err, err_len, "--method %s names more than %d method%s", a->method, max, max == 1 ? "" : "s");
    return -1;
}

/* cmd < 0: every option (the global help); else only the options the command takes */
static void usage_of(FILE *f, int cmd)
{
    const unsigned bit = cmd < 0 ? ~0u : 1u << cmd;
    if (cmd < 0) fprintf(f, "Options (each command takes those it uses; sizes take binary K, M, G, T suffixes):\n");
    else {
        char n[32];
        commands_of(bit, n, sizeof n); /* the name as typed: bench-kernels */
        fprintf(f, "Options of `cpbench %s` (sizes take binary K, M, G, T suffixes):\n", n);
    }
    int shown = 0;
    for (int k = 0; k < NOPTS; k++) {
        if (!(opts[k].cmds & bit)) continue;
        shown++;
        char left[64];
        snprintf(left, sizeof left, "%s%s%s", opts[k].name, opts[k].arg ? " " : "",
                 opts[k].arg ? opts[k].arg : "");
        const char *help = opts[k].help;
        /* the backend's default is the command's (cpb_args_check_command) */
        if (cmd >= 0 && strcmp(opts[k].name, "--backend") == 0) {
            if (cmd == CPB_CMD_plan) help = "backend (default sim: plan searches on the simulator)";
            else if (cmd == CPB_CMD_selftest || cmd == CPB_CMD_bench_kernels || cmd == CPB_CMD_device_props)
                help = "backend (default cuda)";
        }
        fprintf(f, "  %-28s %s\n", left, help);
    }
    if (!shown) fprintf(f, "  (none)\n");
    /* the methods' and the simulator's options are for the commands that run methods */
    if (!((C_PROBLEM | CMD(plan)) & bit)) return;
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

void cpb_args_usage(FILE *f)
{
    usage_of(f, -1);
}

void cpb_args_command_usage(FILE *f, cpb_cmd_id cmd)
{
    usage_of(f, (int)cmd);
}

int cpb_args_command_takes(cpb_cmd_id cmd, const char *option)
{
    for (int k = 0; k < NOPTS; k++)
        if (strcmp(opts[k].name, option) == 0) return (opts[k].cmds & (1u << cmd)) != 0;
    return -1;
}
