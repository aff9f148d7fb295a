/* metp_shards.c — broadcast of head-group weight shards and reduction of their gradients
 * (see metp_shards.h). */
#include "metp/metp_shards.h"


int64_t metp_shard_elems(const cpb_layer *L)
{
    int64_t hqd = (int64_t)L->shard.nq * L->p.d, hkd = (int64_t)L->shard.nkv * L->p.d;
    return 2 * L->p.D * hqd + 2 * L->p.D * hkd;
}

static metp_group_w pack_views(const metp_shards *W, cpb_buf *b)
{
    int64_t D = W->D, q = D * W->hqd, k = D * W->hkd;
    metp_group_w w = {cpb_mat(b, 0, D, W->hqd, W->hqd), cpb_mat(b, q, D, W->hkd, W->hkd),
                      cpb_mat(b, q + k, D, W->hkd, W->hkd), cpb_mat(b, q + 2 * k, W->hqd, D, D)};
    return w;
}

static metp_group_w own_views(const metp_shards *W)
{
    cpb_layer *L = W->L;
    int64_t D = W->D;
    metp_group_w w = {cpb_mat(L->wq, 0, D, W->hqd, W->hqd), cpb_mat(L->wk, 0, D, W->hkd, W->hkd),
                      cpb_mat(L->wv, 0, D, W->hkd, W->hkd), cpb_mat(L->wo, 0, W->hqd, D, D)};
    return w;
}

metp_group_w metp_grad_views(const metp_shards *W, cpb_buf *pack)
{
    return pack_views(W, pack);
}

int metp_shards_open(cpb_ctx *ctx, cpb_layer *L, int comm, metp_shards *W)
{
    W->L = L;
    W->comm = comm;
    W->D = L->p.D;
    W->hqd = (int64_t)L->shard.nq * L->p.d;
    W->hkd = (int64_t)L->shard.nkv * L->p.d;
    W->buf[0] = W->buf[1] = NULL;
    W->ready[0].id = W->ready[1].id = -1;
    if (L->p.C == 1) return CPB_OK;
    for (int i = 0; i < 2; i++)
        CPB_TRY(cpb_alloc(ctx, &W->buf[i], metp_shard_elems(L), L->p.dtype, CPB_TAG_GATHER,
                          i ? "w_shard_b" : "w_shard_a"));
    return CPB_OK;
}

/* a matrix view as the contiguous span a collective needs */
static cpb_view span_of(cpb_view m)
{
    return cpb_span(m.buf, m.off, m.rows * m.dim);
}

int metp_shards_fetch(cpb_ctx *ctx, metp_shards *W, int j)
{
    if (W->L->p.C == 1) return CPB_OK;
    /* the root sends its own shard; the others receive into buffer j % 2 */
    int root = cpb_rank(ctx) == j;
    metp_group_w w = root ? own_views(W) : pack_views(W, W->buf[j % 2]);
    CPB_TRY(cpb_stream_join(ctx, W->comm, CPB_STREAM_COMPUTE));
    CPB_TRY(cpb_broadcast(ctx, W->comm, NULL, span_of(w.wq), j));
    CPB_TRY(cpb_broadcast(ctx, W->comm, NULL, span_of(w.wk), j));
    CPB_TRY(cpb_broadcast(ctx, W->comm, NULL, span_of(w.wv), j));
    CPB_TRY(cpb_broadcast(ctx, W->comm, NULL, span_of(w.wo), j));
    return cpb_event_record(ctx, W->comm, &W->ready[j % 2]);
}

int metp_shards_get(cpb_ctx *ctx, metp_shards *W, int j, metp_group_w *out)
{
    if (W->L->p.C == 1) {
        *out = own_views(W);
        return CPB_OK;
    }
    /* the owner waits too: a broadcast is in place, an access to its own shard */
    CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, W->ready[j % 2]));
    *out = cpb_rank(ctx) == j ? own_views(W) : pack_views(W, W->buf[j % 2]);
    return CPB_OK;
}

int metp_shards_close(cpb_ctx *ctx, metp_shards *W)
{
    /* the last broadcasts were waited for by compute before their group ran */
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &W->buf[1]));
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &W->buf[0]);
}

int metp_grads_reduce(cpb_ctx *ctx, metp_shards *W, cpb_buf *pack, int j, cpb_event *done)
{
    cpb_layer *L = W->L;
    metp_group_w g = pack_views(W, pack);
    /* rank j receives; the others pass their own dW views, which a reduce leaves alone */
    CPB_TRY(cpb_stream_join(ctx, W->comm, CPB_STREAM_COMPUTE));
    CPB_TRY(cpb_reduce(ctx, W->comm, NULL, span_of(g.wq), cpb_whole(L->dwq), j));
    CPB_TRY(cpb_reduce(ctx, W->comm, NULL, span_of(g.wk), cpb_whole(L->dwk), j));
    CPB_TRY(cpb_reduce(ctx, W->comm, NULL, span_of(g.wv), cpb_whole(L->dwv), j));
    CPB_TRY(cpb_reduce(ctx, W->comm, NULL, span_of(g.wo), cpb_whole(L->dwo), j));
    return cpb_event_record(ctx, W->comm, done);
}
