/* trial.h — one rank's layer trial, shared by verify, run, sweep and the simulator driver:
 * build the layer in the method's layout (token segments, weight shard), allocate its
 * inputs and outputs with the fixed tags, fill them, run forward then backward inside the
 * ranges trial/fwd and trial/bwd, and collect the memory of each phase. */
#ifndef CPB_TRIAL_H
#define CPB_TRIAL_H

#include "cpb_backend.h"
#include "cpb_method.h"
#include "row.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Global (unsharded) inputs in fp32, row-major: x, dy [S][D]; wq [D][H*d]; wk, wv
 * [D][G*d]; wo [H*d][D].  Used by verify; benchmarks fill on the device instead. */
typedef struct cpb_global_inputs {
    const float *x, *dy, *wq, *wk, *wv, *wo;
} cpb_global_inputs;

/* CPB_OK when method m accepts p (its check()), else CPB_ERR_REFUSED with "<m> refuses
 * this shape: <why>" in msg: the one place a refusal is made, so that no other failure is
 * ever recorded as one. */
int cpb_method_refusal(const cpb_method *m, const cpb_problem *p, char *msg, size_t len);

/* Build the layer of ctx's rank for method m and problem p (token layout, shard, fixed-tag
 * buffers).  With in != NULL the rank's pieces of the global inputs are uploaded (after
 * rounding to the storage dtype); otherwise x, dy and weights are filled on the device with
 * cpb_fill_random from `seed` (same global values on every backend).  y, dx, dW are zeroed.
 * Fails with CPB_ERR_REFUSED when m->check refuses p (reason in cpb_errmsg). */
int cpb_trial_setup(cpb_ctx *ctx, const cpb_method *m, const cpb_problem *p,
                    const cpb_global_inputs *in, uint64_t seed, cpb_layer *L);

/* One forward + backward with per-phase memory; frees the method's state.  The layer's own
 * buffers stay allocated (call cpb_free_all to release them).  Fills this rank's outcome in
 * r: code, status and reason, the memory columns and details, the times (on a backend that
 * models time they stay 0: the timing model predicts them), the bytes sent and copied;
 * the columns that name the point are left as they are.  Returns r->code. */
int cpb_trial_step(cpb_ctx *ctx, const cpb_method *m, cpb_layer *L, cpb_row *r);
/* the memory columns and details of r from ctx's high-water marks (cpb_trial_step does
 * this; also for a trial that failed in its set-up) */
void cpb_trial_memory(const cpb_ctx *ctx, cpb_row *r);

#ifdef __cplusplus
}
#endif
#endif
