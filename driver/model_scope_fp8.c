/* model_scope_fp8.c — the HBM traffic of fp8 linear layers' casts (`--linear-dtype fp8`),
 * per the framework's fp8 library (cpb_framework.fp8, model_scope_framework.c).
 *
 * An fp8 GEMM reads fp8 operands, so every linear first casts its bf16 operands: the
 * input x [T, K] and the weight w [K, N] in each forward pass, the output gradient dy
 * [T, N] in the backward; and a GEMM library that wants a fixed operand layout copies the
 * fp8 tensors it gets in the other one.  These passes are memory bound and come on top of
 * the GEMMs (model_scope.c times the GEMMs at the profile's fp8 peak).
 *
 * Bytes per element of each tensor, from the library's code (the framework's `fp8`):
 *   fwd_x, fwd_w   per forward pass (the forward and, with full checkpointing, the
 *                  recompute): the input's and the weight's casts
 *   bwd_x, bwd_dy, bwd_w   once in the backward
 * A linear's bytes in a step:
 *   passes * (fwd_x T K + fwd_w K N) + bwd_x T K + bwd_dy T N + bwd_w K N,
 * and the weight's terms once per tile when the MLP runs in tiles of the sequence (each
 * tile is a separate call of the linear, which casts its weight again). */
#include "model_scope.h"

double cpb_fp8_linear_cast_bytes(const cpb_fp8_casts *c, double T, double K, double N, double fwd_passes,
                                 double calls)
{
    if (!c || T <= 0 || K <= 0 || N <= 0) return 0.0;
    if (calls < 1) calls = 1;
    double fwd = c->fwd_x * T * K + c->fwd_w * K * N * calls;
    double bwd = c->bwd_x * T * K + c->bwd_dy * T * N + c->bwd_w * K * N * calls;
    return fwd_passes * fwd + bwd;
}

/* The MLP's linears: gated (3 matrices) gate and up [D -> F] and down [F -> D]; two-matrix
 * up and down.  T tokens per step in `calls` tiles. */
double cpb_fp8_mlp_cast_bytes(const cpb_fp8_casts *c, double T, double D, double F, int matrices,
                              double fwd_passes, double calls)
{
    double up = cpb_fp8_linear_cast_bytes(c, T, D, F, fwd_passes, calls);
    double down = cpb_fp8_linear_cast_bytes(c, T, F, D, fwd_passes, calls);
    return (matrices == 3 ? 2 : 1) * up + down;
}
