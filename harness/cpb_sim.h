/* cpb_sim.h — the simulator driver (harness/sim_*.c; the backend itself is backends/sim): replay a method's schedule for every rank of a world
 * of any size in one process (no data), with exact tracked memory and a modelled time. */
#ifndef CPB_SIM_H
#define CPB_SIM_H

#include "cpb_backend.h"
#include "cpb_method.h"
#include "trial.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cpb_sim_opts {
    const char *gpu;          /* profile name: h100-sxm (default), h200, a100-80g, a100-40g */
    const char *calibration;  /* optional calibration file overriding profile constants */
    int gpus_per_node;        /* 0 = 8 */
    int64_t mem_cap;          /* device capacity in bytes; 0 = the profile's usable memory */
    int64_t host_mem_cap;     /* pinned host capacity per rank; 0 = profile's share */
    int64_t host_ram;         /* host memory of one node in bytes; 0 = the profile's */
    const char *framework;    /* model scope: training setup (NULL = torchtitan) */
    int no_race_check;        /* 1 = skip the stream-race check */
} cpb_sim_opts;

typedef struct cpb_sim_result {
    int status;               /* CPB_OK, CPB_ERR_OOM, CPB_ERR_INVALID, CPB_ERR_RACE, ... */
    char reason[1024];
    int worst_rank;           /* rank with the largest device peak */
    cpb_trial_result mem;     /* that rank's trial result (memory fields) */
    double fwd_s, bwd_s, step_s;          /* modelled */
    double tokens_per_s, tokens_per_s_per_gpu, tflops_per_gpu;
    int nstreams;
    char stream_names[CPB_MAX_STREAMS][24];
    double stream_busy_s[CPB_MAX_STREAMS]; /* the slowest rank's busy time per stream */
    double comm_bytes;        /* bytes sent by the busiest rank */
    double pcie_bytes;
} cpb_sim_result;

struct cpb_gpu_profile;
/* The GPU profile the options select (--gpu), with the calibration file, --gpus-per-node
 * and --host-ram applied.  CPB_ERR_INVALID / CPB_ERR_IO with a message for bad input. */
int cpb_sim_profile(const cpb_sim_opts *o, struct cpb_gpu_profile *prof, char *err, size_t err_len);

/* Run method m on problem p (p->C ranks) on the simulator.  Returns CPB_OK when the
 * simulation ran, even if the trial itself ended in OOM (then r->status says so);
 * returns an error only for bad input (unknown profile, ...), with r->reason set. */
int cpb_sim_layer(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o,
                  cpb_sim_result *r);

#ifdef __cplusplus
}
#endif
#endif
