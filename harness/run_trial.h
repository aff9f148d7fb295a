/* run_trial.h — one trial turned into a results row: every column of the results table
 * (issue 5) plus the details `cpbench run` prints.  Shared by `cpbench run` and, later, the
 * sweep driver and the results writer. */
#ifndef CPB_RUN_TRIAL_H
#define CPB_RUN_TRIAL_H

#include <stdio.h>

#include "cpb_backend.h"
#include "cpb_method.h"
#include "cpb_sim.h"
#include "args.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cpb_run_row {
    /* ---- the results table's columns */
    char method[32];
    char model[32];
    char backend[8];
    char gpu[32];               /* sim: the profile; cpu: "cpu"; cuda: the device name */
    int world_size;
    int64_t seq_len;
    int head_chunk;
    int64_t seq_chunk;
    char scope[8];              /* "layer" or "model" */
    char framework[16];         /* model scope: the training setup; "" on layer rows */
    int64_t host_ram;           /* sim: --host-ram as asked (0 = the profile's) */
    char status[16];            /* "ok", "oom", "skipped" (refused shape), "error" */
    char reason[1024];
    int64_t peak_bytes;         /* tracked high-water of the worst rank */
    int64_t reserved_bytes;     /* = peak on cpu and sim (DESIGN section 3) */
    int64_t device_used_bytes;  /* cuda only; 0 elsewhere */
    int64_t intermediate_bytes;
    int64_t host_peak_bytes;
    int64_t model_state_bytes;  /* model scope: the peak's three buckets (0 on layer rows) */
    int64_t attn_act_bytes;
    int64_t other_bytes;
    double step_s, fwd_s, bwd_s;
    double tokens_per_s, tokens_per_s_per_gpu, tflops_per_gpu;
    double comm_bytes;
    double timestamp;           /* seconds since the epoch when the row was made */
    /* ---- details (printed, not columns) */
    int code;                   /* cpb_status of the trial */
    int worst_rank;
    int64_t at_peak[CPB_TAG_COUNT];  /* breakdown by tag at the worst rank's peak */
    int64_t tag_peak[CPB_TAG_COUNT];
    int64_t fwd_peak, bwd_peak;
    int64_t capacity;           /* device capacity the trial ran against (0 = none) */
    int nstreams;
    char stream_names[CPB_MAX_STREAMS][24];
    double stream_busy_s[CPB_MAX_STREAMS]; /* sim only */
    double pcie_bytes;
    int iters;                  /* measured iterations (cpu/cuda) */
} cpb_run_row;

/* Model FLOPs of one layer (DESIGN section 6): causal attention counts the lower
 * triangle, fwd 2*S*S*H*d, bwd 2.5x fwd; projections 2*S*D*(H+2G)*d + 2*S*H*d*D forward,
 * twice that backward. */
void cpb_layer_model_flops(const cpb_problem *p, double *fwd, double *bwd);

/* the row's status string for a cpb_status (refusals are "skipped") */
const char *cpb_run_status_name(int code);

/* Simulate method m on p (cpb_sim_layer) and fill the row.  Returns CPB_OK when a row was
 * made (the trial may still be OOM or refused: row->status), or an error for bad input
 * (unknown profile, ...) with row->reason set. */
/* the simulator options of the command line (--gpu, --calibration, --mem-cap, ...) */
void cpb_sim_opts_from_args(const cpb_args *a, cpb_sim_opts *o);
int cpb_run_sim(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o, cpb_run_row *row);

/* Run the real trial on ctx (cpu or cuda; collective over the ranks): set-up with device
 * fill, `warmup` + `iters` forward+backward steps; step time = median over iterations of
 * the slowest rank; memory = the largest peak over the ranks.  Every rank gets the same
 * row.  Returns CPB_OK when a row was made. */
int cpb_run_measured(cpb_ctx *ctx, const cpb_problem *p, const cpb_method *m, int warmup, int iters,
                     uint64_t seed, cpb_run_row *row);

/* human-readable report of a row (memory with the breakdown, times) */
void cpb_run_row_print(FILE *f, const cpb_run_row *row);

#ifdef __cplusplus
}
#endif
#endif
