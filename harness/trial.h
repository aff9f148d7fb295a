/* trial.h — one rank's layer trial, shared by verify, run, sweep and the simulator driver:
 * build the layer in the method's layout (token segments, weight shard), allocate its
 * inputs and outputs with the fixed tags, fill them, run forward then backward inside the
 * ranges trial/fwd and trial/bwd, and collect the memory of each phase. */
#ifndef CPB_TRIAL_H
#define CPB_TRIAL_H

#include "cpb_backend.h"
#include "cpb_method.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Global (unsharded) inputs in fp32, row-major: x, dy [S][D]; wq [D][H*d]; wk, wv
 * [D][G*d]; wo [H*d][D].  Used by verify; benchmarks fill on the device instead. */
typedef struct cpb_global_inputs {
    const float *x, *dy, *wq, *wk, *wv, *wo;
} cpb_global_inputs;

typedef struct cpb_phase_mem {
    int64_t peak;                     /* device high-water during the phase */
    int64_t intermediate_peak;        /* high-water of non-fixed tags during the phase */
    int64_t live_end;                 /* device bytes live when the phase ends */
    int64_t host_peak;                /* pinned host high-water during the phase */
    int64_t at_peak[CPB_TAG_COUNT];   /* breakdown by tag at the phase's peak */
    int64_t tag_peak[CPB_TAG_COUNT];  /* per-tag high-water during the phase */
} cpb_phase_mem;

typedef struct cpb_trial_result {
    int status;                /* CPB_OK, CPB_ERR_OOM, ... */
    char reason[1024];         /* message when status != OK */
    cpb_mem_stats dev, host;   /* whole trial (inputs included) */
    cpb_phase_mem fwd, bwd;    /* bwd peaks are measured from the end of forward */
    double fwd_s, bwd_s, step_s; /* backend clock (cpu/cuda); 0 on sim */
    double flops, comm_bytes, pcie_bytes;
    uint64_t alloc_hash;       /* allocation-sequence hash (symmetry check across ranks) */
} cpb_trial_result;

/* Build the layer of ctx's rank for method m and problem p (token layout, shard, fixed-tag
 * buffers).  With in != NULL the rank's pieces of the global inputs are uploaded (after
 * rounding to the storage dtype); otherwise x, dy and weights are filled on the device with
 * cpb_fill_random from `seed` (same global values on every backend).  y, dx, dW are zeroed.
 * Fails with CPB_ERR_INVALID when m->check refuses p (reason in cpb_errmsg). */
int cpb_trial_setup(cpb_ctx *ctx, const cpb_method *m, const cpb_problem *p,
                    const cpb_global_inputs *in, uint64_t seed, cpb_layer *L);

/* One forward + backward with per-phase memory; frees the method's state.  The layer's own
 * buffers stay allocated (call cpb_free_all to release them). */
int cpb_trial_step(cpb_ctx *ctx, const cpb_method *m, cpb_layer *L, cpb_trial_result *r);

#ifdef __cplusplus
}
#endif
#endif
