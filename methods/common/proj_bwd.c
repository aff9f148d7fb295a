/* proj_bwd.c — the projections' dx and dW GEMMs (proj_bwd.h). */
#include "proj_bwd.h"

int cpb_proj_bwd_dx(cpb_ctx *ctx, int stream, cpb_qkv_views g, cpb_qkv_views w, float beta, cpb_view dx)
{
    /* dx = g W^T: the GEMM's transposed-B form reads W [D, width] as [width, D] */
    CPB_TRY(cpb_gemm(ctx, stream, 0, 1, 1.0f, g.q, w.q, beta, dx));
    CPB_TRY(cpb_gemm(ctx, stream, 0, 1, 1.0f, g.k, w.k, 1.0f, dx));
    return cpb_gemm(ctx, stream, 0, 1, 1.0f, g.v, w.v, 1.0f, dx);
}

int cpb_proj_bwd_dw(cpb_ctx *ctx, int stream, cpb_view x, cpb_qkv_views g, float beta, cpb_qkv_views dw)
{
    /* dW = x^T g: x [rows, D] transposed against the gradient [rows, width] */
    CPB_TRY(cpb_gemm(ctx, stream, 1, 0, 1.0f, x, g.q, beta, dw.q));
    CPB_TRY(cpb_gemm(ctx, stream, 1, 0, 1.0f, x, g.k, beta, dw.k));
    return cpb_gemm(ctx, stream, 1, 0, 1.0f, x, g.v, beta, dw.v);
}

int cpb_proj_bwd(cpb_ctx *ctx, int stream, cpb_view x, cpb_qkv_views g, cpb_qkv_views w, cpb_view dx,
                 cpb_qkv_views dw)
{
    CPB_TRY(cpb_proj_bwd_dx(ctx, stream, g, w, 0.0f, dx));
    return cpb_proj_bwd_dw(ctx, stream, x, g, 0.0f, dw);
}

int cpb_proj_out_bwd(cpb_ctx *ctx, int stream, cpb_view dy, cpb_view o, cpb_view wo, cpb_view d_o, cpb_view dwo)
{
    CPB_TRY(cpb_gemm(ctx, stream, 0, 1, 1.0f, dy, wo, 0.0f, d_o));
    return cpb_gemm(ctx, stream, 1, 0, 1.0f, o, dy, 0.0f, dwo);
}
