/* fingerprint.h — the numeric fingerprint of a trial: the norms of y, dx and the assembled
 * dW (the nccl-tests lesson: every run checks its data).  Every method at one point gets the
 * same seeded inputs, so their fingerprints agree within the dtype's bar; at 1M-5M tokens on
 * GPUs, where no fp64 reference is in reach, that is the correctness signal.
 *
 * Accounting: cpb_fingerprint runs after a trial's steps, outside every timed region and
 * after the row took the trial's memory (its tracked peak, the pool's reserved and
 * device-used high-waters), so it changes none of them; on the simulator its ops and
 * collectives are recorded in the set-up phase, which the timing model does not time.
 * Its buffers (tag temp): 3 fp32 sums, one weight matrix in fp32 padded to a multiple of
 * the ranks, and a 1/C slice of it. */
#ifndef CPB_FINGERPRINT_H
#define CPB_FINGERPRINT_H

#include <stdint.h>
#include <stdio.h>

#include "cpb_method.h"
#include "row.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { CPB_FP_Y, CPB_FP_DX, CPB_FP_DW, CPB_FP_COUNT };

/* Collective over ctx's world: the L2 norms of the layer's y and dx (sequence shards: the
 * ranks' sums of squares add) and of the full dW = Wq, Wk, Wv, Wo gradients as verify
 * assembles them (each rank's pieces put in their heads' places and summed over the ranks
 * by a reduce-scatter, so partial sums and shards both come out right, without gathering
 * the full dW on one rank).  0 on a backend without data.  On failure (e.g. no room for
 * the temporary) every rank gets NaN and the error code. */
int cpb_fingerprint(cpb_ctx *ctx, const cpb_layer *L, double norms[CPB_FP_COUNT]);

/* the relative difference two fingerprints of one point may have: the dtype's bar of
 * verify (fp32 1e-4, bf16 3e-2) */
double cpb_fingerprint_bar(const char *dtype);

/* Compare the fingerprints of the methods at each point of rows (same model, backend, gpu,
 * scope, dtype, world, length, shape and seed; status ok and finite norms).  A method
 * disagrees when one of its norms is farther than the bar from the median of the point's
 * methods.  Points whose norms are all 0 (a backend without data) are not compared.  Prints
 * one line per disagreement to out (NULL: silent); returns the number of points with one,
 * and *compared (may be NULL) the number of points with two or more methods. */
int cpb_fingerprint_compare(const cpb_row *rows, int64_t n, FILE *out, int *compared);

#ifdef __cplusplus
}
#endif
#endif
