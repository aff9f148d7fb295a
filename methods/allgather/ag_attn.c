/* ag_attn.c — all-gather attention, forward and backward (see ag_attn.h).  Streams: the
 * compute stream packs and computes, the comm stream gathers and reduce-scatters; each
 * hand-over is an event or a join, so the race check sees every writer ordered before its
 * readers. */
#include "allgather/ag_attn.h"

#include <string.h>

typedef struct ag_geom {
    cpb_group *g;
    int R, rr, ng;      /* group size, my rank, kv-head groups */
    int64_t rows, c, d;
    int hs, hsq;        /* kv heads and query heads of a group */
    int64_t nsl;        /* elements of one rank's K,V slice of a group: [2][rows][hs][d] */
    cpb_blk_geom blk;
} ag_geom;

static int geom_of(cpb_ctx *ctx, const ag_cfg *cfg, cpb_buf *kv, const char *who, ag_geom *G)
{
    const cpb_ring_cfg *r = &cfg->r;
    if (r->c <= 0 || r->hk <= 0 || r->hq % r->hk || cfg->hs <= 0 || r->hk % cfg->hs)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: bad shape (chunk %lld, %d q heads, %d kv heads, %d kv heads per "
                        "gather): the kv heads per gather must divide the kv heads", who, (long long)r->c, r->hq,
                        r->hk, cfg->hs);
    if (!kv || kv->nelem != cpb_ring_kv_elems(r) || kv->dtype != r->dtype)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: the packed K,V buffer must hold %lld %s elements", who,
                        (long long)cpb_ring_kv_elems(r), cpb_dtype_name(r->dtype));
    G->g = r->g ? r->g : cpb_world(ctx);
    G->R = G->g->size;
    G->rr = G->g->rank;
    G->ng = r->hk / cfg->hs;
    G->rows = cpb_ring_rows(r);
    G->c = r->c;
    G->d = r->d;
    G->hs = cfg->hs;
    G->hsq = cfg->hs * (r->hq / r->hk);
    G->nsl = 2 * G->rows * cfg->hs * r->d;
    G->blk = (cpb_blk_geom){G->R, G->rr, r->c, r->layout};
    return CPB_OK;
}

/* K or V (half 0 or 1) of slot `slot` of a [R][2][rows][hs][d] buffer, or of a rank's
 * packed [2][rows][hs][d] slice (slot 0) */
static cpb_view slot_half(const ag_geom *G, cpb_buf *b, int slot, int half)
{
    int64_t hsd = (int64_t)G->hs * G->d;
    return cpb_heads(b, slot * G->nsl + half * G->rows * hsd, G->rows, G->hs, G->d, hsd, G->d);
}

/* the rank's own K,V of kv-head group j: a view of its packed [2][rows][hk][d] */
static cpb_view own_half(const ag_cfg *cfg, const ag_geom *G, cpb_buf *kv, int j, int half)
{
    cpb_view v = half ? cpb_ring_v(&cfg->r, kv) : cpb_ring_k(&cfg->r, kv);
    return cpb_view_heads(v, (int64_t)j * G->hs, G->hs);
}

/* Gather group j's K,V of every rank into `dst` on the comm stream (event `done`).  With
 * one group the packed K,V is sent as it is; otherwise the group's heads are first packed
 * into `send` on the compute stream (the previous gather, which read it, has been waited
 * for by the caller). */
static int gather(cpb_ctx *ctx, const ag_cfg *cfg, const ag_geom *G, cpb_buf *kv, cpb_buf *send, int j,
                  cpb_buf *dst, cpb_event *done)
{
    cpb_view src = cpb_whole(kv);
    if (G->ng > 1) {
        for (int h = 0; h < 2; h++)
            CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, slot_half(G, send, 0, h), own_half(cfg, G, kv, j, h)));
        src = cpb_whole(send);
    }
    /* the comm stream waits for the pack and for the compute that last read `dst` */
    CPB_TRY(cpb_stream_join(ctx, cfg->r.comm_stream, CPB_STREAM_COMPUTE));
    CPB_TRY(cpb_all_gather(ctx, cfg->r.comm_stream, G->g, src, cpb_span(dst, 0, G->R * G->nsl)));
    return cpb_event_record(ctx, cfg->r.comm_stream, done);
}

/* the gather buffers of a call: two when there are several groups (double buffering) */
typedef struct ag_bufs {
    cpb_buf *send, *kv[2];
} ag_bufs;

static int bufs_open(cpb_ctx *ctx, const ag_cfg *cfg, const ag_geom *G, ag_bufs *B)
{
    B->send = B->kv[0] = B->kv[1] = NULL;
    if (G->ng > 1) CPB_TRY(cpb_alloc(ctx, &B->send, G->nsl, cfg->r.dtype, CPB_TAG_GATHER, "ag_send"));
    for (int i = 0; i < (G->ng > 1 ? 2 : 1); i++)
        CPB_TRY(cpb_alloc(ctx, &B->kv[i], G->R * G->nsl, cfg->r.dtype, CPB_TAG_GATHER, i ? "ag_kv_b" : "ag_kv_a"));
    return CPB_OK;
}

static int bufs_close(cpb_ctx *ctx, ag_bufs *B)
{
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &B->kv[1]));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &B->kv[0]));
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &B->send);
}

/* Wait for group j's K,V and start gathering group j+1 into the other buffer */
static int next_group(cpb_ctx *ctx, const ag_cfg *cfg, const ag_geom *G, cpb_buf *kv, const ag_bufs *B, int j,
                      cpb_event *arrived)
{
    if (j == 0) CPB_TRY(gather(ctx, cfg, G, kv, B->send, 0, B->kv[0], &arrived[0]));
    CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, arrived[j % 2]));
    if (j + 1 < G->ng) CPB_TRY(gather(ctx, cfg, G, kv, B->send, j + 1, B->kv[(j + 1) % 2], &arrived[(j + 1) % 2]));
    return CPB_OK;
}

/* ---------------------------------------------------------------- TE: sequence order */

/* Between slot order [R][2][rows][hs][d] (slot j: chunks j and 2R-1-j) and sequence order
 * [2][2Rc][hs][d] (K rows, then V rows): the first chunks of every slot in one strided copy
 * per half (they are in increasing order), the second chunks (decreasing) one copy each. */
static int reorder(cpb_ctx *ctx, const ag_geom *G, cpb_buf *slots, cpb_buf *seq, int to_seq)
{
    int64_t hsd = (int64_t)G->hs * G->d, c = G->c, S = 2 * (int64_t)G->R * c;
    for (int h = 0; h < 2; h++) {
        cpb_view a = cpb_heads(slots, h * G->rows * hsd, c, G->R, hsd, hsd, G->nsl);
        cpb_view b = cpb_heads(seq, h * S * hsd, c, G->R, hsd, hsd, c * hsd);
        CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, to_seq ? b : a, to_seq ? a : b));
        for (int j = 0; j < G->R; j++) {
            cpb_view x = cpb_mat(slots, j * G->nsl + h * G->rows * hsd + c * hsd, c, hsd, hsd);
            cpb_view y = cpb_mat(seq, h * S * hsd + (2 * (int64_t)G->R - 1 - j) * c * hsd, c, hsd, hsd);
            CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, to_seq ? y : x, to_seq ? x : y));
        }
    }
    return CPB_OK;
}

/* K or V (half) of a sequence-order buffer, its first n rows */
static cpb_view seq_half(const ag_geom *G, cpb_buf *seq, int half, int64_t n)
{
    int64_t hsd = (int64_t)G->hs * G->d, S = 2 * (int64_t)G->R * G->c;
    return cpb_heads(seq, half * S * hsd, n, G->hs, G->d, hsd, G->d);
}

/* local chunk a's global chunk and the one call it makes (rows of q, prefix of K,V) */
static void te_call(const ag_geom *G, int a, cpb_blk *b)
{
    int64_t ch = a ? 2 * (int64_t)G->R - 1 - G->rr : G->rr;
    b->q_row = a * G->c;
    b->k_row = 0;
    b->rows = (ch + 1) * G->c; /* keys: the whole prefix; queries: c */
    b->q_pos0 = ch * G->c;
    b->k_pos0 = 0;
}

/* ---------------------------------------------------------------- forward */

typedef struct fwd_views {
    cpb_view q, acc, lse, part, lpart; /* group j's query heads, its fp32 accumulator and lse */
} fwd_views;

static int fwd_group(cpb_ctx *ctx, const ag_geom *G, cpb_buf *gk, const fwd_views *V)
{
    for (int i = 0; i < G->R; i++) {
        cpb_blk_step st;
        cpb_blk_step_at(&G->blk, i, &st);
        cpb_view k = slot_half(G, gk, st.src, 0), v = slot_half(G, gk, st.src, 1);
        for (int b = 0; b < st.n; b++) {
            const cpb_blk *bk = &st.b[b];
            cpb_attn_args a = {0};
            a.q = cpb_view_rows(V->q, bk->q_row, bk->rows);
            a.k = cpb_view_rows(k, bk->k_row, bk->rows);
            a.v = cpb_view_rows(v, bk->k_row, bk->rows);
            a.causal = 1; /* exact positions (block_iter.h) */
            a.q_pos0 = bk->q_pos0;
            a.k_pos0 = bk->k_pos0;
            /* the diagonal starts the accumulator; later blocks are merged into it by lse */
            a.o = st.diag ? V->acc : V->part;
            a.lse = st.diag ? V->lse : V->lpart;
            CPB_TRY(cpb_attn_fwd(ctx, CPB_STREAM_COMPUTE, &a));
            if (!st.diag)
                CPB_TRY(cpb_lse_merge(ctx, CPB_STREAM_COMPUTE, cpb_view_rows(V->acc, bk->q_row, bk->rows),
                                      cpb_view_rows(V->lse, bk->q_row, bk->rows), V->part, V->lpart));
        }
    }
    return CPB_OK;
}

/* TE: each local chunk's one call, straight into o and lse */
static int fwd_group_te(cpb_ctx *ctx, const ag_geom *G, cpb_buf *seq, cpb_view q, cpb_view o, cpb_view lse)
{
    for (int ai = 0; ai < 2; ai++) {
        cpb_blk b;
        te_call(G, ai, &b);
        cpb_attn_args a = {0};
        a.q = cpb_view_rows(q, b.q_row, G->c);
        a.k = seq_half(G, seq, 0, b.rows);
        a.v = seq_half(G, seq, 1, b.rows);
        a.o = cpb_view_rows(o, b.q_row, G->c);
        a.lse = cpb_view_rows(lse, b.q_row, G->c);
        a.causal = 1; /* bottom-right: the chunk's last query sees the whole prefix */
        a.q_pos0 = b.q_pos0;
        a.k_pos0 = b.k_pos0;
        CPB_TRY(cpb_attn_fwd(ctx, CPB_STREAM_COMPUTE, &a));
    }
    return CPB_OK;
}

int ag_attn_fwd(cpb_ctx *ctx, const ag_cfg *cfg, cpb_view q, cpb_buf *kv, cpb_view o, cpb_view lse)
{
    ag_geom G;
    CPB_TRY(geom_of(ctx, cfg, kv, "all-gather attention forward", &G));
    ag_bufs B;
    cpb_buf *acc = NULL, *part = NULL, *lpart = NULL;
    CPB_TRY(bufs_open(ctx, cfg, &G, &B));
    if (cfg->te) {
        cpb_buf *seq = NULL;
        CPB_TRY(cpb_alloc(ctx, &seq, G.R * G.nsl, cfg->r.dtype, CPB_TAG_GATHER, "ag_kv_seq"));
        cpb_event arrived[2] = {{-1}, {-1}};
        for (int j = 0; j < G.ng; j++) {
            CPB_RANGE(ctx, next_group(ctx, cfg, &G, kv, &B, j, arrived), "gather%d", j);
            CPB_TRY(reorder(ctx, &G, B.kv[j % 2], seq, 1));
            int64_t h0 = (int64_t)j * G.hsq;
            CPB_RANGE(ctx,
                      fwd_group_te(ctx, &G, seq, cpb_view_heads(q, h0, G.hsq), cpb_view_heads(o, h0, G.hsq),
                                   cpb_view_heads(lse, h0, G.hsq)),
                      "group%d", j);
        }
        CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &seq));
        return bufs_close(ctx, &B);
    }
    /* one group's fp32 accumulator and one block's partial, reused by every group */
    CPB_TRY(cpb_alloc(ctx, &acc, G.rows * G.hsq * G.d, CPB_FP32, CPB_TAG_ATTN, "ag_o_acc"));
    if (G.R > 1) {
        CPB_TRY(cpb_alloc(ctx, &part, G.c * G.hsq * G.d, CPB_FP32, CPB_TAG_ATTN, "ag_o_part"));
        CPB_TRY(cpb_alloc(ctx, &lpart, G.c * G.hsq, CPB_FP32, CPB_TAG_ATTN, "ag_lse_part"));
    }
    fwd_views V;
    memset(&V, 0, sizeof V);
    V.acc = cpb_heads(acc, 0, G.rows, G.hsq, G.d, G.hsq * G.d, G.d);
    if (part) {
        V.part = cpb_heads(part, 0, G.c, G.hsq, G.d, G.hsq * G.d, G.d);
        V.lpart = cpb_lse_view(lpart, G.c, 0, G.hsq, 0, G.c);
    }
    cpb_event arrived[2] = {{-1}, {-1}};
    for (int j = 0; j < G.ng; j++) {
        CPB_RANGE(ctx, next_group(ctx, cfg, &G, kv, &B, j, arrived), "gather%d", j);
        V.q = cpb_view_heads(q, (int64_t)j * G.hsq, G.hsq);
        V.lse = cpb_view_heads(lse, (int64_t)j * G.hsq, G.hsq);
        CPB_RANGE(ctx, fwd_group(ctx, &G, B.kv[j % 2], &V), "group%d", j);
        /* the group's merged output in the caller's dtype and layout */
        CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_view_heads(o, (int64_t)j * G.hsq, G.hsq), V.acc));
    }
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &lpart));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &part));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &acc));
    return bufs_close(ctx, &B);
}

/* ---------------------------------------------------------------- backward */

typedef struct bwd_views {
    cpb_view q, o, d_o, lse, delta, dq; /* group j's query heads */
} bwd_views;

/* every block of group j, each rank's dK,dV summed into its slot of dg (zeroed) */
static int bwd_group(cpb_ctx *ctx, const ag_geom *G, cpb_buf *gk, cpb_buf *dg, const bwd_views *V)
{
    for (int i = 0; i < G->R; i++) {
        cpb_blk_step st;
        cpb_blk_step_at(&G->blk, i, &st);
        cpb_view k = slot_half(G, gk, st.src, 0), v = slot_half(G, gk, st.src, 1);
        cpb_view dk = slot_half(G, dg, st.src, 0), dv = slot_half(G, dg, st.src, 1);
        for (int b = 0; b < st.n; b++) {
            const cpb_blk *bk = &st.b[b];
            cpb_attn_args a = {0};
            a.q = cpb_view_rows(V->q, bk->q_row, bk->rows);
            a.k = cpb_view_rows(k, bk->k_row, bk->rows);
            a.v = cpb_view_rows(v, bk->k_row, bk->rows);
            a.o = cpb_view_rows(V->o, bk->q_row, bk->rows);
            a.d_o = cpb_view_rows(V->d_o, bk->q_row, bk->rows);
            a.lse = cpb_view_rows(V->lse, bk->q_row, bk->rows);
            a.delta = cpb_view_rows(V->delta, bk->q_row, bk->rows);
            a.dq = cpb_view_rows(V->dq, bk->q_row, bk->rows);
            a.dk = cpb_view_rows(dk, bk->k_row, bk->rows);
            a.dv = cpb_view_rows(dv, bk->k_row, bk->rows);
            a.causal = 1;
            a.q_pos0 = bk->q_pos0;
            a.k_pos0 = bk->k_pos0;
            a.accumulate = 1; /* dq sums over every block, a slot over its blocks (both zeroed) */
            CPB_TRY(cpb_attn_bwd(ctx, CPB_STREAM_COMPUTE, &a));
        }
    }
    return CPB_OK;
}

/* TE: each local chunk's one call, dK,dV summed into the sequence-order dseq (zeroed) */
static int bwd_group_te(cpb_ctx *ctx, const ag_geom *G, cpb_buf *seq, cpb_buf *dseq, const bwd_views *V)
{
    for (int ai = 0; ai < 2; ai++) {
        cpb_blk b;
        te_call(G, ai, &b);
        cpb_attn_args a = {0};
        a.q = cpb_view_rows(V->q, b.q_row, G->c);
        a.k = seq_half(G, seq, 0, b.rows);
        a.v = seq_half(G, seq, 1, b.rows);
        a.o = cpb_view_rows(V->o, b.q_row, G->c);
        a.d_o = cpb_view_rows(V->d_o, b.q_row, G->c);
        a.lse = cpb_view_rows(V->lse, b.q_row, G->c);
        a.delta = cpb_view_rows(V->delta, b.q_row, G->c);
        a.dq = cpb_view_rows(V->dq, b.q_row, G->c);
        a.dk = seq_half(G, dseq, 0, b.rows);
        a.dv = seq_half(G, dseq, 1, b.rows);
        a.causal = 1;
        a.q_pos0 = b.q_pos0;
        a.k_pos0 = b.k_pos0;
        a.accumulate = 1; /* the two chunks' prefixes overlap */
        CPB_TRY(cpb_attn_bwd(ctx, CPB_STREAM_COMPUTE, &a));
    }
    return CPB_OK;
}

int ag_attn_bwd(cpb_ctx *ctx, const ag_cfg *cfg, cpb_view q, cpb_buf *kv, cpb_view o, cpb_view d_o,
                cpb_view lse, cpb_view dq, cpb_buf *dkv)
{
    ag_geom G;
    CPB_TRY(geom_of(ctx, cfg, kv, "all-gather attention backward", &G));
    if (!dkv || dkv->nelem != cpb_ring_kv_elems(&cfg->r) || dkv->dtype != CPB_FP32)
        return cpb_fail(ctx, CPB_ERR_INVALID, "all-gather attention backward: dK,dV must be an fp32 buffer of %lld "
                        "elements", (long long)cpb_ring_kv_elems(&cfg->r));
    int64_t hq = cfg->r.hq;
    ag_bufs B;
    cpb_buf *delta = NULL, *dg = NULL, *drecv = NULL;
    /* attention backward needs o only through delta = rowsum(dO * o): once, here */
    CPB_TRY(cpb_alloc(ctx, &delta, G.rows * hq, CPB_FP32, CPB_TAG_GRAD_ACT, "ag_delta"));
    cpb_view dl = cpb_lse_view(delta, G.rows, 0, hq, 0, G.rows);
    CPB_TRY(cpb_attn_delta(ctx, CPB_STREAM_COMPUTE, o, d_o, dl));
    CPB_TRY(cpb_fill(ctx, CPB_STREAM_COMPUTE, dq, 0.0f));
    CPB_TRY(bufs_open(ctx, cfg, &G, &B));
    CPB_TRY(cpb_alloc(ctx, &dg, G.R * G.nsl, cfg->grad_dt, CPB_TAG_GRAD_ACT, "ag_dkv"));
    /* the reduce-scatter lands in the caller's dK,dV when it has their layout and dtype */
    int direct = G.ng == 1 && cfg->grad_dt == CPB_FP32;
    if (!direct) CPB_TRY(cpb_alloc(ctx, &drecv, G.nsl, cfg->grad_dt, CPB_TAG_GRAD_ACT, "ag_dkv_mine"));
    cpb_buf *seq = NULL, *dseq = NULL; /* TE: K,V and dK,dV in sequence order */
    if (cfg->te) {
        CPB_TRY(cpb_alloc(ctx, &seq, G.R * G.nsl, cfg->r.dtype, CPB_TAG_GATHER, "ag_kv_seq"));
        CPB_TRY(cpb_alloc(ctx, &dseq, G.R * G.nsl, cfg->grad_dt, CPB_TAG_GRAD_ACT, "ag_dkv_seq"));
    }
    cpb_event arrived[2] = {{-1}, {-1}}, scattered = {-1};
    for (int j = 0; j < G.ng; j++) {
        CPB_RANGE(ctx, next_group(ctx, cfg, &G, kv, &B, j, arrived), "gather%d", j);
        int64_t h0 = (int64_t)j * G.hsq;
        bwd_views V = {cpb_view_heads(q, h0, G.hsq),   cpb_view_heads(o, h0, G.hsq),
                       cpb_view_heads(d_o, h0, G.hsq), cpb_view_heads(lse, h0, G.hsq),
                       cpb_view_heads(dl, h0, G.hsq),  cpb_view_heads(dq, h0, G.hsq)};
        /* the previous group's reduce-scatter has read dg before it is zeroed again */
        if (j > 0 && direct) CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, scattered));
        if (cfg->te) {
            /* dseq is summed into, then dg is wholly written from it */
            CPB_TRY(reorder(ctx, &G, B.kv[j % 2], seq, 1));
            CPB_TRY(cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_whole(dseq), 0.0f));
            CPB_RANGE(ctx, bwd_group_te(ctx, &G, seq, dseq, &V), "group%d", j);
            CPB_TRY(reorder(ctx, &G, dg, dseq, 0));
        } else {
            CPB_TRY(cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_whole(dg), 0.0f));
            CPB_RANGE(ctx, bwd_group(ctx, &G, B.kv[j % 2], dg, &V), "group%d", j);
        }
        /* each rank's slot back to it, summed over the ranks that read it */
        CPB_TRY(cpb_stream_join(ctx, cfg->r.comm_stream, CPB_STREAM_COMPUTE));
        CPB_TRY(cpb_reduce_scatter(ctx, cfg->r.comm_stream, G.g, cpb_whole(dg),
                                   direct ? cpb_whole(dkv) : cpb_whole(drecv)));
        CPB_TRY(cpb_event_record(ctx, cfg->r.comm_stream, &scattered));
        if (!direct) {
            /* into the caller's fp32 dK,dV at the group's heads; the next group's zeroing
             * of dg is behind this wait too */
            CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, scattered));
            for (int h = 0; h < 2; h++)
                CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, own_half(cfg, &G, dkv, j, h), slot_half(&G, drecv, 0, h)));
        }
    }
    if (direct) CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, scattered));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &dseq));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &seq));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &drecv));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &dg));
    CPB_TRY(bufs_close(ctx, &B));
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &delta);
}
