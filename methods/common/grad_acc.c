/* grad_acc.c — the dW and dx accumulators of a backward (grad_acc.h). */
#include "common/grad_acc.h"

int cpb_zero_dw(cpb_ctx *ctx, cpb_layer *L)
{
    cpb_buf *dw[4] = {L->dwq, L->dwk, L->dwv, L->dwo};
    for (int i = 0; i < 4; i++) CPB_TRY(cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_whole(dw[i]), 0.0f));
    return CPB_OK;
}

int cpb_dx_begin(cpb_ctx *ctx, cpb_layer *L, cpb_buf **dx)
{
    *dx = L->dx;
    return cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_whole(L->dx), 0.0f);
}
