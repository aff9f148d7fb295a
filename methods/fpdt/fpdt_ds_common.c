/* fpdt_ds_common.c — the pieces DeepSpeed's FPDT schedule (fpdt_ds.h) builds on: its
 * per-chunk tables, its synchronisation points, and SequenceChunk's load and offload. */
#include "fpdt_ds.h"

int fpdt_ds_init(cpb_ctx *ctx, cpb_layer *L, fpdt_ds *D)
{
    char why[512];
    if (fpdt_dims_init(&L->p, cpb_rank(ctx), &D->m, why, sizeof why) != CPB_OK)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s", why);
    D->ctx = ctx;
    D->L = L;
    return CPB_OK;
}

int fpdt_ds_release(fpdt_ds *D)
{
    cpb_ctx *ctx = D->ctx;
    /* every stream's work is done before anything goes */
    int rc = cpb_stream_join(ctx, D->comp, D->off);
    if (rc == CPB_OK) rc = cpb_stream_join(ctx, D->comp, D->gen);
    cpb_buf **tables[] = {D->xh, D->qh, D->kh, D->vh, D->oh, D->lh, D->doh, D->dqh,
                          D->q,  D->k,  D->v,  D->o,  D->lse, D->d_o, D->dq, D->x};
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (int64_t i = 0; i < D->m.u && rc == CPB_OK; i++) rc = cpb_free(ctx, D->comp, &tables[t][i]);
    if (rc == CPB_OK) rc = cpb_free(ctx, D->comp, &D->cat);
    if (rc == CPB_OK) rc = cpb_free(ctx, D->comp, &D->barrier);
    return rc;
}

int fpdt_ds_host_waits(fpdt_ds *D, int stream)
{
    cpb_event ev;
    CPB_TRY(cpb_event_record(D->ctx, stream, &ev));
    const int streams[3] = {D->comp, D->off, D->gen};
    for (int i = 0; i < 3; i++)
        if (streams[i] != stream) CPB_TRY(cpb_stream_wait(D->ctx, streams[i], ev));
    return CPB_OK;
}

int fpdt_ds_sync_compute(fpdt_ds *D)
{
    CPB_TRY(cpb_stream_join(D->ctx, D->comp, D->off));
    return fpdt_ds_host_waits(D, D->comp);
}

int fpdt_ds_barrier(fpdt_ds *D, int stream)
{
    CPB_TRY(cpb_all_reduce(D->ctx, stream, NULL, cpb_whole(D->barrier)));
    return fpdt_ds_host_waits(D, stream);
}

int fpdt_ds_load(fpdt_ds *D, int stream, cpb_buf *h, cpb_tag tag, const char *name, cpb_buf **dev)
{
    CPB_TRY(cpb_alloc(D->ctx, dev, h->nelem, h->dtype, tag, name));
    return cpb_copy(D->ctx, stream, cpb_whole(*dev), cpb_whole(h));
}

int fpdt_ds_store(fpdt_ds *D, int stream, cpb_buf *dev, cpb_tag tag, const char *name, cpb_buf **h)
{
    CPB_TRY(cpb_alloc_host(D->ctx, h, dev->nelem, dev->dtype, tag, name));
    return cpb_copy(D->ctx, stream, cpb_whole(*h), cpb_whole(dev));
}
