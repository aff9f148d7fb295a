/* point.h — the one place a point (a method on a problem) is run, for `cpbench run` and
 * `cpbench sweep` alike: on the simulator (layer or whole-model scope), measured on a
 * backend with a clock (cpu, cuda; collective over the MPI ranks), or in a child process
 * (--isolate).  A runner holds what stays the same from point to point: the backend, its
 * context, the world size, the gpu column. */
#ifndef CPB_POINT_H
#define CPB_POINT_H

#include "cpb_backend.h"
#include "cpb_method.h"
#include "model_scope.h"
#include "row.h"
#include "sim_layer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest world a point may have (--gpus, or the ranks of mpirun): generous for the
 * planner (thousands of GPUs), small enough that no count of ranks overflows an int product
 * (2C, C x heads) and that per-rank tables stay small.  The simulator's own cost grows
 * with C as well: sim_layer.c stops a world that would not fit this machine's memory. */
#define CPB_MAX_GPUS 65536

typedef struct cpb_runner_opts {
    const cpb_backend *be;
    int gpus;            /* world size on a backend that models time (0: 8); on an MPI backend
                            it must equal the ranks when given */
    cpb_sim_opts sim;    /* backends that model time: GPU profile, calibration, capacities */
    cpb_ctx_opts ctx;    /* the others: capacities, --comm, race check (use_mpi is set here) */
    int warmup, iters;   /* measured steps */
    uint64_t seed;
    char options[CPB_ROW_OPTIONS_LEN]; /* the point's `options` column (row.h) */
    /* --isolate: each point in a child `cpbench run` (sweep_isolate.h) */
    int isolate;
    const char *exe;     /* this program */
    int nopts;           /* the sweep's options, after the command name */
    char **opts;
} cpb_runner_opts;

typedef struct cpb_runner {
    cpb_runner_opts o;
    int C;               /* world size */
    int rank;            /* this process among the ranks (0 unless measured under MPI) */
    cpb_ctx *ctx;        /* in-process measured runs: one context for every point */
    char gpu[48];        /* the gpu column ("" when only the trials know it: --isolate) */
} cpb_runner;

/* Set up the runner: world size, gpu column, and the context of a measured backend
 * (collective over the MPI ranks).  CPB_ERR_INVALID for bad options (message in err), any
 * other code when the backend cannot start. */
int cpb_runner_open(cpb_runner *r, const cpb_runner_opts *o, char *err, size_t err_len);
void cpb_runner_close(cpb_runner *r);

/* The point's row before it runs (the columns that name it), to find it among earlier rows. */
void cpb_runner_point_row(const cpb_runner *r, const cpb_method *m, const cpb_problem *p, const char *scope,
                          cpb_row *row);

/* Run method m on p at `scope` ("layer", or "model" on a backend that models time) and
 * fill *row, the same on every rank.  A shape the method refuses is a row with status
 * refused (code CPB_ERR_REFUSED); an OOM is a row with status oom; anything else that goes
 * wrong is a row with status error.  With estimate != NULL a model-scope run also
 * hands back its estimate (for printing; cpb_model_estimate_free it).  Returns CPB_OK when
 * a row was made, or an error for bad input with row->reason set. */
int cpb_run_point(cpb_runner *r, const cpb_method *m, const cpb_problem *p, const char *scope, cpb_row *row,
                  cpb_model_estimate **estimate);

#ifdef __cplusplus
}
#endif
#endif
