/* metp_shards.h — METP's weight shards in flight: the head group j that every rank works
 * on is broadcast from its owner, rank j, into one of two receive buffers while the
 * previous group computes (double buffering), and group j's weight gradients are reduced
 * back to rank j.  All of it runs on one comm stream, the same stream as the inner ring's
 * rotations, so every rank issues its world collectives in one order on one stream (the
 * condition NCCL needs to never deadlock).
 *
 * A group's shard is packed [Wq | Wk | Wv | Wo]: [D][hq*d], [D][hk*d], [D][hk*d],
 * [hq*d][D]; its fp32 gradient pack has the same layout. */
#ifndef METP_SHARDS_H
#define METP_SHARDS_H

#include "cpb_method.h"

typedef struct metp_group_w {
    cpb_view wq, wk, wv, wo; /* matrices of the group's shard */
} metp_group_w;

typedef struct metp_shards {
    cpb_layer *L;
    int comm;
    int64_t D, hqd, hkd;
    cpb_buf *buf[2];     /* receive buffers (none when C = 1: rank 0 owns every group) */
    cpb_event ready[2];  /* broadcast into buf[i] complete */
} metp_shards;

/* elements of one packed shard */
int64_t metp_shard_elems(const cpb_layer *L);
/* allocate the two receive buffers (tag GATHER) */
int metp_shards_open(cpb_ctx *ctx, cpb_layer *L, int comm, metp_shards *W);
/* start the broadcast of group j from rank j into buffer j % 2; compute must be done with
 * that buffer's previous group (the comm stream waits for compute first) */
int metp_shards_fetch(cpb_ctx *ctx, metp_shards *W, int j);
/* the views of group j's shard for compute (compute waits for its broadcast) */
int metp_shards_get(cpb_ctx *ctx, metp_shards *W, int j, metp_group_w *out);
int metp_shards_close(cpb_ctx *ctx, metp_shards *W);

/* views of a packed gradient buffer (fp32) */
metp_group_w metp_grad_views(const metp_shards *W, cpb_buf *pack);
/* sum group j's gradient pack over the ranks into rank j's L->dwq, dwk, dwv, dwo, on the
 * comm stream after compute's writes; `done` marks when the pack may be written again */
int metp_grads_reduce(cpb_ctx *ctx, metp_shards *W, cpb_buf *pack, int j, cpb_event *done);

#endif
