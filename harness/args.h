/* args.h — the one option set and parser of every cpbench subcommand, and the problem built
 * from it.  Every option is parsed here (so no subcommand has its own parser); a subcommand
 * reads the fields it uses.  Bad options are a value (CPB_ERR_INVALID == 2, the exit code),
 * with a message that names the option and what it accepts. */
#ifndef CPB_ARGS_H
#define CPB_ARGS_H

#include <stdio.h>

#include "cpb.h"
#include "cpb_backend.h"
#include "cpb_method.h"
#include "knobs.h"
#include "point.h"
#include "sim_layer.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CPB_ARGS_MAX_SEQS 64
#define CPB_ARGS_MAX_FILES 64
/* room for every option of the table in args.c (a unit test checks it is enough) */
#define CPB_ARGS_MAX_OPTS 64
/* the watchdog's default (--timeout): a trial step that makes no progress this long on a
 * world of several ranks ends every rank */
#define CPB_ARGS_DEFAULT_TIMEOUT_S 1800.0
/* the most warm-up or timed steps of a trial */
#define CPB_ARGS_MAX_STEPS 1000000

/* the commands of commands.def, as numbers (which options a command takes: args.c) */
typedef enum cpb_cmd_id {
#define X(name, mpi) CPB_CMD_##name,
#include "commands.def"
#undef X
    CPB_CMD_COUNT
} cpb_cmd_id;

/* What an option is to a result (every option of the table says, a unit test checks):
 *   COLUMN  its value is a column of the row and part of the point key (--seq, --seed)
 *   KEY     it changes the result but is not a column of its own: it goes into the row's
 *           `options` column, and so into the point key (--mem-cap, --calibration)
 *   NONE    it does not change a result (--out, --isolate, the sweep's choice of points) */
typedef enum cpb_opt_role { CPB_OPT_ROLE_UNSET = 0, CPB_OPT_COLUMN, CPB_OPT_KEY, CPB_OPT_NONE } cpb_opt_role;

typedef struct cpb_args {
    /* what to run */
    char method[512];        /* --method: a name, a comma list, or "all"; "" = not given */
    char model[32];          /* --model preset, or the name --model-config registered; "" = not given */
    const char *model_config; /* --model-config FILE (a Hugging Face config.json; model_config.h) */
    int64_t hidden;          /* --hidden, --heads, ...: overrides of the preset, 0 = keep */
    int heads, kv_heads, head_dim;
    double rope_base;
    int64_t seq;             /* --seq (global tokens); 0 = not given */
    cpb_dtype dtype;         /* --dtype fp32|bf16 (default bf16) */
    uint64_t seed;           /* --seed (default 1; decimal, at most 2^63 - 1) */
    /* method options as given (--head-chunk 8, ...: the knobs of the method tables,
     * knobs.h); each method takes its own, the rest keep their defaults */
    cpb_knobs knobs;
    /* where it runs */
    char backend[8];         /* --backend cpu|sim|cuda (default cpu) */
    int backend_given;       /* --backend was on the command line */
    int gpus;                /* --gpus N (sim world size; 0 = not given); at most CPB_MAX_GPUS */
    int gpus_per_node;       /* --gpus-per-node N (0 = default 8) */
    char gpu[32];            /* --gpu PROFILE (sim; "" = default profile) */
    char scope[8];           /* --scope layer|model (default layer; plan: model) */
    int scope_given;         /* --scope was on the command line */
    int max_context;         /* --max-context (plan) */
    char methods[512];       /* --methods m1,m2 (plan: search only these; "" = every method) */
    char stack[16];          /* --stack FAMILY (plan: the methods of a framework family) */
    int min_headroom;        /* --min-headroom PCT (plan; default 10) */
    int top;                 /* --top N (plan: the table's first N rows; 0 = all) */
    int64_t mem_cap;         /* --mem-cap BYTES (0 = the device's) */
    int64_t host_mem_cap;    /* --host-mem-cap BYTES (0 = unlimited / profile) */
    char comm[8];            /* --comm nccl|mpi (cuda; default nccl) */
    const char *calibration; /* --calibration FILE */
    int no_race_check;       /* --no-race-check */
    char sim_ranks[12];      /* --sim-ranks auto|exact|symmetric (sim; default auto) */
    /* measurement */
    int warmup, iters;       /* --warmup N (default 1), --iters N (default 3) */
    int profile_iter;        /* --profile-iter N (-1 = none) */
    int isolate;             /* --isolate */
    double timeout;          /* --timeout SECONDS: the watchdog (default CPB_ARGS_DEFAULT_TIMEOUT_S) */
    /* sweeps */
    int64_t seq_start, seq_stop; /* --seq-start, --seq-stop (0 = not given) */
    double factor;           /* --factor (default 2) */
    int64_t bisect;          /* --bisect STEP (0 = no bisection) */
    int64_t seq_list[CPB_ARGS_MAX_SEQS]; /* --seq-list a,b,c */
    int n_seq_list;
    /* files */
    const char *dump;        /* --dump FILE (verify) */
    const char *out;         /* --out FILE (results) */
    int force;               /* --force: --out / --dump may replace a file that is not their own */
    const char *cases[CPB_ARGS_MAX_FILES]; /* --cases FILE... (verify) */
    int n_cases;
    const char *results[CPB_ARGS_MAX_FILES]; /* --results FILE... (fingerprints) */
    int n_results;
    /* verify */
    int expect_refuse;       /* --expect-refuse */
    /* list */
    char format[8];          /* --format text|json|flat ("" = text) */
    int help;                /* --help / -h */
    unsigned char given[CPB_ARGS_MAX_OPTS]; /* option i of the table was given */
} cpb_args;

void cpb_args_defaults(cpb_args *a);

/* Parse argv[0..argc) (the subcommand's options, without the program and command names)
 * into a, on top of what is already there (a case line of `verify --cases` sets its own
 * values over the command line's).  String options point into argv.  An option given twice
 * in argv is refused.  Returns CPB_OK or CPB_ERR_INVALID with a message in err. */
int cpb_args_parse(int argc, char **argv, cpb_args *a, char *err, size_t err_len);

/* CPB_OK when every option given is one command `cmd` uses on its backend (--backend, or
 * cuda for the tools when not given) and the options agree with each other; else
 * CPB_ERR_INVALID naming the option that would be ignored or the conflict. */
int cpb_args_check_command(const cpb_args *a, cpb_cmd_id cmd, char *err, size_t err_len);

/* The options given, one canonical "name=value" per line in table order (sizes in bytes,
 * numbers in full), the knobs after them: what every rank compares to know they were given
 * the same arguments.  Returns the length (truncated to len - 1). */
size_t cpb_args_canonical(const cpb_args *a, char *out, size_t len);
/* room for the canonical text of every option at once */
#define CPB_ARGS_CANONICAL_MAX 16384
/* What ranks compare to agree they were given the same command `cmd` and options: FNV-1a
 * of cmd and cpb_args_canonical's text, in which every option kind has its canonical value
 * (never an address) and an input file (--model-config, --calibration, --cases, --results)
 * is its path and a hash of its contents, so ranks that read different files disagree. */
uint64_t cpb_args_agreement_hash(const cpb_args *a, const char *cmd);

/* The KEY options (cpb_opt_role) given that apply to backend `be_name`, canonical
 * ("mem-cap=42949672960;calibration=fnv1a64:0123456789abcdef"; a calibration file by the
 * hash of its contents): a point's `options` column.  CPB_ERR_INVALID with a message when it
 * does not fit in len or the calibration file cannot be read. */
int cpb_args_point_options(const cpb_args *a, const char *be_name, char *out, size_t len, char *err, size_t err_len);

/* the option table, for tests and the documentation: its size, and option i's name, role,
 * commands (a bit per cpb_cmd_id) and a valid value other than the default (NULL for a
 * flag or when none can be given without a file) */
int cpb_args_option_count(void);
const char *cpb_args_option_name(int i);
cpb_opt_role cpb_args_option_role(int i);
unsigned cpb_args_option_commands(int i);
const char *cpb_args_option_example(int i);
/* option i's value placeholder ("N", "FILE", "FILE..."), NULL for a flag */
const char *cpb_args_option_arg(int i);
/* 1 when option i means something on the backend named be_name */
int cpb_args_option_on_backend(int i, const char *be_name);

/* Build the problem of method m for world size C: preset (--model) + overrides + sequence +
 * dtype + m's knobs (the given ones, else their defaults; cpb_knobs_apply), with basic
 * validation (H % G, S % C, even head dim, every product of sizes within int64:
 * cpb_problem_check_sizes).  m NULL: no knobs.  Returns CPB_OK, CPB_ERR_INVALID (bad
 * input) or CPB_ERR_REFUSED (a knob's check refuses it for m at this shape), with a message
 * naming the option and the constraint. */
int cpb_args_problem(const cpb_args *a, const cpb_method *m, int C, cpb_problem *p, char *err, size_t err_len);
/* CPB_OK when every size product of p (tensors of S x D, S x H*d, D x H*d, ... elements,
 * H*d as an int) stays within cpbench's limits, else CPB_ERR_INVALID with a message that
 * names the sizes and the largest --seq that would fit. */
int cpb_problem_check_sizes(const cpb_problem *p, char *err, size_t err_len);
/* context options of a measured run (--mem-cap, --host-mem-cap, --comm, --no-race-check;
 * use_mpi is the driver's to set) */
void cpb_args_ctx_opts(const cpb_args *a, cpb_ctx_opts *o);
/* the simulator's options (--gpu, --calibration, --gpus-per-node, --mem-cap, ...) */
void cpb_args_sim_opts(const cpb_args *a, cpb_sim_opts *o);
/* a point runner's options for backend be: the world, the simulator's and the context's
 * options, the measurement, the point's `options` column; --isolate with this program's
 * path `exe` and the command's options `nopts`, `opts` (after the command name).
 * CPB_ERR_INVALID with a message when the options column cannot be made. */
int cpb_args_runner_opts(const cpb_args *a, const cpb_backend *be, const char *exe, int nopts, char **opts,
                         cpb_runner_opts *o, char *err, size_t err_len);

/* The methods --method names, in registry order for "all" and in the given order for a
 * list.  Returns the count (>= 1), or -1 with a message (not given, unknown name, a name
 * twice, more than max). */
int cpb_args_methods(const cpb_args *a, const cpb_method **out, int max, char *err,
                     size_t err_len);

/* the options part of `cpbench --help` */
void cpb_args_usage(FILE *f);
/* the options part of `cpbench CMD --help`: only the options (and method options) CMD takes */
void cpb_args_command_usage(FILE *f, cpb_cmd_id cmd);
/* 1 when CMD takes OPTION ("--seq"), 0 when not, -1 for an option the table lacks */
int cpb_args_command_takes(cpb_cmd_id cmd, const char *option);

#ifdef __cplusplus
}
#endif
#endif
