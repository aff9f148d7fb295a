/* grad_acc.c — the dW and dx accumulators of a backward (grad_acc.h). */
#include "common/grad_acc.h"

int cpb_zero_dw(cpb_ctx *ctx, cpb_layer *L)
{
    cpb_buf *dw[4] = {L->dwq, L->dwk, L->dwv, L->dwo};
    for (int i = 0; i < 4; i++) CPB_TRY(cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_whole(dw[i]), 0.0f));
    return CPB_OK;
}

int cpb_dx_acc_begin(cpb_ctx *ctx, cpb_layer *L, cpb_buf **dx32)
{
    if (L->dx->dtype == CPB_FP32) {
        *dx32 = L->dx;
    } else {
        CPB_TRY(cpb_alloc(ctx, dx32, L->s * L->p.D, CPB_FP32, CPB_TAG_GRAD_ACT, "dx_acc"));
    }
    return cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_whole(*dx32), 0.0f);
}

int cpb_dx_acc_end(cpb_ctx *ctx, cpb_layer *L, cpb_buf **dx32)
{
    if (*dx32 == L->dx) {
        *dx32 = NULL;
        return CPB_OK;
    }
    CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_whole(L->dx), cpb_whole(*dx32)));
    return cpb_free(ctx, CPB_STREAM_COMPUTE, dx32);
}
