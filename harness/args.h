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
    uint64_t seed;           /* --seed (default 1) */
    /* method options as given (--head-chunk 8, ...: the knobs of the method tables,
     * knobs.h); each method takes its own, the rest keep their defaults */
    cpb_knobs knobs;
    /* where it runs */
    char backend[8];         /* --backend cpu|sim|cuda (default cpu) */
    int backend_given;       /* --backend was on the command line */
    int gpus;                /* --gpus N (sim world size; 0 = not given) */
    int gpus_per_node;       /* --gpus-per-node N (0 = default 8) */
    char gpu[32];            /* --gpu PROFILE (sim; "" = default profile) */
    char scope[8];           /* --scope layer|model (default layer; plan: model) */
    int scope_given;         /* --scope was on the command line */
    int max_context;         /* --max-context (plan) */
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
    /* sweeps */
    int64_t seq_start, seq_stop; /* --seq-start, --seq-stop (0 = not given) */
    double factor;           /* --factor (default 2) */
    int64_t bisect;          /* --bisect STEP (0 = no bisection) */
    int64_t seq_list[CPB_ARGS_MAX_SEQS]; /* --seq-list a,b,c */
    int n_seq_list;
    /* files */
    const char *dump;        /* --dump FILE (verify) */
    const char *out;         /* --out FILE (results) */
    const char *cases[CPB_ARGS_MAX_FILES]; /* --cases FILE... (verify) */
    int n_cases;
    const char *results[CPB_ARGS_MAX_FILES]; /* --results FILE... (fingerprints) */
    int n_results;
    /* verify */
    int expect_refuse;       /* --expect-refuse */
    int help;                /* --help / -h */
} cpb_args;

void cpb_args_defaults(cpb_args *a);

/* Parse argv[0..argc) (the subcommand's options, without the program and command names)
 * into a, on top of what is already there.  String options point into argv.  Returns
 * CPB_OK or CPB_ERR_INVALID with a message in err. */
int cpb_args_parse(int argc, char **argv, cpb_args *a, char *err, size_t err_len);


/* Build the problem of method m for world size C: preset (--model) + overrides + sequence +
 * dtype + m's knobs (the given ones, else their defaults; cpb_knobs_apply), with basic
 * validation (H % G, S % C, even head dim, the knobs' checks).  m NULL: no knobs.  Returns
 * CPB_OK or CPB_ERR_INVALID with a message naming the option and the constraint. */
int cpb_args_problem(const cpb_args *a, const cpb_method *m, int C, cpb_problem *p, char *err, size_t err_len);
/* context options of a measured run (--mem-cap, --host-mem-cap, --comm, --no-race-check;
 * use_mpi is the driver's to set) */
void cpb_args_ctx_opts(const cpb_args *a, cpb_ctx_opts *o);
/* the simulator's options (--gpu, --calibration, --gpus-per-node, --mem-cap, ...) */
void cpb_args_sim_opts(const cpb_args *a, cpb_sim_opts *o);
/* a point runner's options for backend be: the world, the simulator's and the context's
 * options, the measurement; --isolate with this program's path `exe` and the command's
 * options `nopts`, `opts` (after the command name) */
void cpb_args_runner_opts(const cpb_args *a, const cpb_backend *be, const char *exe, int nopts, char **opts,
                          cpb_runner_opts *o);

/* The methods --method names, in registry order for "all" and in the given order for a
 * list.  Returns the count (>= 1), or -1 with a message (not given, unknown name, too many). */
int cpb_args_methods(const cpb_args *a, const cpb_method **out, int max, char *err,
                     size_t err_len);

/* the options part of `cpbench --help` */
void cpb_args_usage(FILE *f);

#ifdef __cplusplus
}
#endif
#endif
