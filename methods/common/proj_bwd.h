/* proj_bwd.h — the projections' backward epilogue shared by methods: once a method holds
 * the gradients of q, k and v (RoPE already undone) as matrices over its rows, dx and the
 * dWq, dWk, dWv partials are six GEMMs that every schedule writes alike.  They are two calls
 * here, so that a schedule that puts something between them (a stream wait, a buffer it
 * allocates, a reduction it starts) keeps its order; cpb_proj_bwd is both, dx first, for a
 * schedule with nothing between them.
 *
 * Why one place: the order of the dx GEMMs (q, then k, then v, each adding into dx) is the
 * order of the floating-point sum, so every method that shares it gets bit-identical dx
 * for the same gradients, and a change (a fused GEMM, another precision) is made once. */
#ifndef CPB_PROJ_BWD_H
#define CPB_PROJ_BWD_H

#include "cpb_method.h"

#ifdef __cplusplus
extern "C" {
#endif

/* one matrix per projection: q, k, v (gradients [rows, width], weights [D, width], dW
 * [D, width]) */
typedef struct cpb_qkv_views {
    cpb_view q, k, v;
} cpb_qkv_views;

/* dx = beta * dx + dq Wq^T + dk Wk^T + dv Wv^T on `stream` (beta 0: dx is overwritten;
 * beta 1: a stage or head group adds its share) */
int cpb_proj_bwd_dx(cpb_ctx *ctx, int stream, cpb_qkv_views grad, cpb_qkv_views w, float beta, cpb_view dx);
/* dW = beta * dW + x^T d(q, k, v) for the three projections on `stream` */
int cpb_proj_bwd_dw(cpb_ctx *ctx, int stream, cpb_view x, cpb_qkv_views grad, float beta, cpb_qkv_views dw);
/* the output projection's backward, where every backward starts: dO = dy Wo^T (dy
 * [rows, D], Wo [width, D], dO [rows, width]) and dWo = o^T dy (overwritten) */
int cpb_proj_out_bwd(cpb_ctx *ctx, int stream, cpb_view dy, cpb_view o, cpb_view wo, cpb_view d_o, cpb_view dwo);
/* both: dx (overwritten) then the dW partials (overwritten) */
int cpb_proj_bwd(cpb_ctx *ctx, int stream, cpb_view x, cpb_qkv_views grad, cpb_qkv_views w, cpb_view dx,
                 cpb_qkv_views dw);

#ifdef __cplusplus
}
#endif
#endif
