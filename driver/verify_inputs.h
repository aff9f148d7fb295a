/* verify_inputs.h — the seeded global inputs of a layer trial, one definition for both
 * paths: cpb_trial_setup fills a rank's shards on the device with cpb_fill_random, and
 * verify generates the same global tensors on the host (cpb_rand.h), so a benchmark run and
 * a verification with the same seed see the same numbers on every backend.
 *
 * Tensor t uses the seed stream seed * CPB_INPUT_COUNT + t.  Element indices:
 * - x, dy [S][D]: pos * D + col (row-major), so a token segment is one contiguous fill;
 * - wq [D][H*d], wk, wv [D][G*d]: head-major, (head * D + row) * d + col, so the columns of
 *   one head (a strided [D][d] view of a shard) are one fill with base head * D * d;
 * - wo [H*d][D]: row-major, the rows of head h are one fill with base h * d * D. */
#ifndef CPB_VERIFY_INPUTS_H
#define CPB_VERIFY_INPUTS_H

#include "cpb.h"
#include "trial.h"

typedef enum cpb_input_id {
    CPB_INPUT_X = 0, CPB_INPUT_WQ, CPB_INPUT_WK, CPB_INPUT_WV, CPB_INPUT_WO, CPB_INPUT_DY,
    CPB_INPUT_COUNT
} cpb_input_id;

/* seed stream of tensor t */
uint64_t cpb_input_seed(uint64_t seed, cpb_input_id t);
/* the uniform [-1, 1) scale of tensor t: weights keep activations O(1) and attention scores
 * of order 1 (sharp enough that a wrong mask or position changes the result) */
float cpb_input_scale(const cpb_problem *p, cpb_input_id t);

/* Host copies of the global inputs (fp32, rounded to p->dtype), as cpb_global_inputs
 * wants them.  Returns CPB_OK or CPB_ERR_NOMEM_HOST. */
typedef struct cpb_host_inputs {
    float *x, *dy, *wq, *wk, *wv, *wo;
} cpb_host_inputs;
int cpb_host_inputs_make(const cpb_problem *p, uint64_t seed, cpb_host_inputs *out);
void cpb_host_inputs_free(cpb_host_inputs *in);
cpb_global_inputs cpb_host_inputs_view(const cpb_host_inputs *in);

#endif
