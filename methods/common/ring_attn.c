/* ring_attn.c — zigzag ring attention forward/backward over a group (see ring_attn.h for
 * the step logic).  Streams: compute is CPB_STREAM_COMPUTE, rotations run on
 * cfg->comm_stream; every hand-over between the two is an event join, so the runtime's
 * race check sees each buffer's writer ordered before its readers. */
#include "common/ring_attn.h"
#include "common/proj_bwd.h"
#include "common/dring_attn.h"

#include <string.h>


typedef struct ring_geom {
    cpb_group *g;
    int R, rr;      /* ring size, my rank in the ring */
    int64_t c;      /* tokens per chunk */
    cpb_blk_geom blk; /* the blocks of each step (common/block_iter.h) */
} ring_geom;

static ring_geom geom_of(cpb_ctx *ctx, const cpb_ring_cfg *cfg)
{
    cpb_group *g = cfg->g ? cfg->g : cpb_world(ctx);
    ring_geom G = {g, g->size, g->rank, cfg->c, {g->size, g->rank, cfg->c, cfg->layout}};
    return G;
}

int cpb_ring_cudnn_may_serve(const cpb_problem *p)
{
    return strcmp(cpb_knob_str(p, "attn"), "own") != 0 && p->dtype == CPB_BF16 && p->d % 8 == 0 && p->d <= 128;
}

int64_t cpb_ring_rows(const cpb_ring_cfg *cfg)
{
    return cpb_blk_chunks(cfg->layout) * cfg->c;
}

static int64_t kv_half(const cpb_ring_cfg *cfg)
{
    return cpb_ring_rows(cfg) * cfg->hk * cfg->d;
}

int64_t cpb_ring_kv_elems(const cpb_ring_cfg *cfg)
{
    return 2 * kv_half(cfg);
}

cpb_view cpb_ring_k(const cpb_ring_cfg *cfg, cpb_buf *kv)
{
    int64_t hkd = (int64_t)cfg->hk * cfg->d;
    return cpb_heads(kv, 0, cpb_ring_rows(cfg), cfg->hk, cfg->d, hkd, cfg->d);
}

cpb_view cpb_ring_v(const cpb_ring_cfg *cfg, cpb_buf *kv)
{
    int64_t hkd = (int64_t)cfg->hk * cfg->d;
    return cpb_heads(kv, kv_half(cfg), cpb_ring_rows(cfg), cfg->hk, cfg->d, hkd, cfg->d);
}

static int check_cfg(cpb_ctx *ctx, const cpb_ring_cfg *cfg, cpb_buf *kv, const char *who)
{
    if (cpb_blk_layout_name(cfg->layout)[0] == '?')
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: unknown ring layout %d (see common/block_iter.h)", who,
                        (int)cfg->layout);
    if (cfg->c <= 0 || cfg->hq <= 0 || cfg->hk <= 0 || cfg->d <= 0 || cfg->hq % cfg->hk)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: bad ring shape (chunk %lld, %d q heads, %d kv heads, d %d)",
                        who, (long long)cfg->c, cfg->hq, cfg->hk, cfg->d);
    if (!kv || kv->nelem != cpb_ring_kv_elems(cfg) || kv->dtype != cfg->dtype)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: the packed K,V buffer must hold %lld %s elements",
                        who, (long long)cpb_ring_kv_elems(cfg), cpb_dtype_name(cfg->dtype));
    return CPB_OK;
}

/* ---------------------------------------------------------------- projection */

int cpb_ring_project(cpb_ctx *ctx, const cpb_ring_cfg *cfg, cpb_view x, cpb_view wq, cpb_view wk,
                     cpb_view wv, const cpb_segs *pos, double rope_base, cpb_view q, cpb_buf *kv)
{
    CPB_TRY(check_cfg(ctx, cfg, kv, "ring project"));
    int64_t s = cpb_ring_rows(cfg), hqd = (int64_t)cfg->hq * cfg->d, hkd = (int64_t)cfg->hk * cfg->d;
    if (q.rows != s || q.heads != cfg->hq || q.dim != cfg->d || (q.heads > 1 && q.head_stride != q.dim))
        return cpb_fail(ctx, CPB_ERR_INVALID, "ring project: q must be [%lld][%d][%d] with adjacent heads",
                        (long long)s, cfg->hq, cfg->d);
    cpb_view qmat = cpb_mat(q.buf, q.off, s, hqd, q.row_stride);
    CPB_TRY(cpb_gemm(ctx, CPB_STREAM_COMPUTE, 0, 0, 1.0f, x, wq, 0.0f, qmat));
    CPB_TRY(cpb_gemm(ctx, CPB_STREAM_COMPUTE, 0, 0, 1.0f, x, wk, 0.0f, cpb_mat(kv, 0, s, hkd, hkd)));
    CPB_TRY(cpb_gemm(ctx, CPB_STREAM_COMPUTE, 0, 0, 1.0f, x, wv, 0.0f, cpb_mat(kv, kv_half(cfg), s, hkd, hkd)));
    CPB_TRY(cpb_rope(ctx, CPB_STREAM_COMPUTE, q, pos, rope_base, 0));
    return cpb_rope(ctx, CPB_STREAM_COMPUTE, cpb_ring_k(cfg, kv), pos, rope_base, 0);
}

/* ---------------------------------------------------------------- rotation */

/* The K,V buffers of a call: [0] is the caller's; [1] and [2] are allocated here.  Step i
 * computes on kv_of(i) while kv_of(i + 1) is received. */
typedef struct kv_ring {
    cpb_buf *b[3];
    int keep; /* the caller's buffer is never a receive buffer */
} kv_ring;

static cpb_buf *kv_of(const kv_ring *K, int i)
{
    if (!K->keep) return K->b[i % 2];
    return i == 0 ? K->b[0] : K->b[1 + (i - 1) % 2];
}

static int kv_ring_open(cpb_ctx *ctx, const cpb_ring_cfg *cfg, const ring_geom *G, cpb_buf *own, kv_ring *K)
{
    K->b[0] = own;
    K->b[1] = K->b[2] = NULL;
    K->keep = !cfg->kv_scratch;
    int extra = G->R < 2 ? 0 : (K->keep && G->R >= 3 ? 2 : 1);
    for (int i = 1; i <= extra; i++)
        CPB_TRY(cpb_alloc(ctx, &K->b[i], cpb_ring_kv_elems(cfg), cfg->dtype, CPB_TAG_KV_RING,
                          i == 1 ? "ring_kv_a" : "ring_kv_b"));
    return CPB_OK;
}

static int kv_ring_close(cpb_ctx *ctx, kv_ring *K)
{
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &K->b[2]));
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &K->b[1]);
}

/* Start moving `cur` to the next rank and receiving the previous rank's block into `nxt`.
 * The comm stream first waits for compute: compute has finished reading `nxt` (it was the
 * previous step's block) and has written the rank's own block. */
static int rotate(cpb_ctx *ctx, const cpb_ring_cfg *cfg, const ring_geom *G, cpb_buf *cur, cpb_buf *nxt,
                  int64_t n, cpb_event *arrived)
{
    CPB_TRY(cpb_stream_join(ctx, cfg->comm_stream, CPB_STREAM_COMPUTE));
    CPB_TRY(cpb_sendrecv(ctx, cfg->comm_stream, G->g, cpb_span(cur, 0, n), (G->rr + 1) % G->R,
                         cpb_span(nxt, 0, n), (G->rr - 1 + G->R) % G->R));
    return cpb_event_record(ctx, cfg->comm_stream, arrived);
}

/* Run step(ctx, arg, i) for i = 0 .. R-1, each in the range "step<i>", a run of alike steps
 * as one cpb_repeat (a ring over R ranks makes R steps per call, and the simulator then
 * records a few of each run, not every one).  Steps are alike when their blocks are
 * (cpb_blk_step_alike) and both send the K,V on: the last step, which does not, stands
 * alone.  Under zigzag a rank's steps are the diagonal, the steps whose source is before
 * it, then those after it, and the last. */
static int ring_steps(cpb_ctx *ctx, const ring_geom *G, cpb_repeat_body step, void *arg)
{
    for (int i = 0; i < G->R;) {
        cpb_blk_step a, b;
        cpb_blk_step_at(&G->blk, i, &a);
        int j = i + 1;
        for (; j < G->R - 1; j++) {
            cpb_blk_step_at(&G->blk, j, &b);
            if (!cpb_blk_step_alike(&a, &b)) break;
        }
        CPB_TRY(cpb_repeat(ctx, i, j, "step", step, arg));
        i = j;
    }
    return CPB_OK;
}

/* ---------------------------------------------------------------- forward */

typedef struct fwd_bufs {
    kv_ring kv;
    cpb_view acc, lse;        /* fp32 o accumulator [2c][hq][d], caller's lse */
    cpb_view part, lpart;     /* one block's fp32 partial [c][hq][d], [hq][c] */
} fwd_bufs;

static int fwd_block(cpb_ctx *ctx, const cpb_ring_cfg *cfg, cpb_view q, cpb_buf *kv, const fwd_bufs *B,
                     const cpb_blk *b)
{
    cpb_attn_args a = {0};
    a.q = cpb_view_rows(q, b->q_row, b->rows);
    a.k = cpb_view_rows(cpb_ring_k(cfg, kv), b->k_row, b->rows);
    a.v = cpb_view_rows(cpb_ring_v(cfg, kv), b->k_row, b->rows);
    a.o = B->part;
    a.lse = B->lpart;
    a.causal = 1; /* exact positions (block_iter.h) */
    a.q_pos0 = b->q_pos0;
    a.k_pos0 = b->k_pos0;
    CPB_TRY(cpb_attn_fwd(ctx, CPB_STREAM_COMPUTE, &a));
    return cpb_lse_merge(ctx, CPB_STREAM_COMPUTE, cpb_view_rows(B->acc, b->q_row, b->rows),
                         cpb_view_rows(B->lse, b->q_row, b->rows), B->part, B->lpart);
}

static int fwd_step(cpb_ctx *ctx, const cpb_ring_cfg *cfg, const ring_geom *G, cpb_view q, const fwd_bufs *B,
                    int i)
{
    cpb_buf *cur = kv_of(&B->kv, i);
    int more = i + 1 < G->R;
    cpb_event kv_arrived = {-1};
    if (more) CPB_TRY(rotate(ctx, cfg, G, cur, kv_of(&B->kv, i + 1), cpb_ring_kv_elems(cfg), &kv_arrived));
    cpb_blk_step st;
    cpb_blk_step_at(&G->blk, i, &st);
    if (st.diag) {
        /* the causal diagonal, written straight into the accumulator */
        cpb_attn_args a = {0};
        a.q = q;
        a.k = cpb_ring_k(cfg, cur);
        a.v = cpb_ring_v(cfg, cur);
        a.o = B->acc;
        a.lse = B->lse;
        a.causal = 1; /* local order is global order (block_iter.h) */
        CPB_TRY(cpb_attn_fwd(ctx, CPB_STREAM_COMPUTE, &a));
    } else {
        for (int b = 0; b < st.n; b++) CPB_TRY(fwd_block(ctx, cfg, q, cur, B, &st.b[b]));
    }
    /* the next block must have arrived before the next step reads it */
    if (more) CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, kv_arrived));
    return CPB_OK;
}

typedef struct fwd_loop {
    const cpb_ring_cfg *cfg;
    const ring_geom *G;
    cpb_view q;
    const fwd_bufs *B;
} fwd_loop;

static int fwd_step_of(cpb_ctx *ctx, void *arg, int i)
{
    const fwd_loop *l = arg;
    return fwd_step(ctx, l->cfg, l->G, l->q, l->B, i);
}

int cpb_ring_attn_fwd(cpb_ctx *ctx, const cpb_ring_cfg *cfg, cpb_view q, cpb_buf *kv, cpb_view o,
                      cpb_view lse)
{
    CPB_TRY(check_cfg(ctx, cfg, kv, "ring attention forward"));
    ring_geom G = geom_of(ctx, cfg);
    if (cfg->inner > 0 && cfg->inner < G.R) return cpb_dring_attn_fwd(ctx, cfg, q, kv, o, lse);
    int64_t c = cfg->c, rows = cpb_ring_rows(cfg), hq = cfg->hq, d = cfg->d;
    cpb_buf *acc = NULL, *part = NULL, *lpart = NULL;
    fwd_bufs B = {{{NULL}, 0}, {0}, lse, {0}, {0}};
    CPB_TRY(kv_ring_open(ctx, cfg, &G, kv, &B.kv));
    CPB_TRY(cpb_alloc(ctx, &acc, rows * hq * d, CPB_FP32, CPB_TAG_ATTN, "ring_o_acc"));
    if (G.R > 1) {
        CPB_TRY(cpb_alloc(ctx, &part, c * hq * d, CPB_FP32, CPB_TAG_ATTN, "ring_o_part"));
        CPB_TRY(cpb_alloc(ctx, &lpart, c * hq, CPB_FP32, CPB_TAG_ATTN, "ring_lse_part"));
    }
    B.acc = cpb_heads(acc, 0, rows, hq, d, hq * d, d);
    if (part) {
        B.part = cpb_heads(part, 0, c, hq, d, hq * d, d);
        B.lpart = cpb_lse_view(lpart, c, 0, hq, 0, c);
    }
    fwd_loop loop = {cfg, &G, q, &B};
    CPB_TRY(ring_steps(ctx, &G, fwd_step_of, &loop));
    /* the merged output in the caller's dtype and layout */
    CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, o, B.acc));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &lpart));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &part));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &acc));
    return kv_ring_close(ctx, &B.kv);
}

/* ---------------------------------------------------------------- backward */

typedef struct bwd_bufs {
    kv_ring kv;
    cpb_buf *dkv[2];          /* travelling fp32 dK,dV: step i accumulates into dkv[i % 2] */
    cpb_buf *blk;             /* one step's dK,dV (storage dtype, as the attention kernel
                                 writes it) before it joins the fp32 travelling sum */
    cpb_view q, d_o, lse, delta, dq;
    cpb_event dkv_arrived;    /* the last travelling-sum receive */
    cpb_view o;               /* the merged output, when the caller has it: cuDNN's backward
                                 derives delta from o and serves only calls that pass it */
} bwd_bufs;

static int bwd_block(cpb_ctx *ctx, const cpb_ring_cfg *cfg, const bwd_bufs *B, cpb_buf *kv, const cpb_blk *b)
{
    cpb_attn_args a = {0};
    a.q = cpb_view_rows(B->q, b->q_row, b->rows);
    a.k = cpb_view_rows(cpb_ring_k(cfg, kv), b->k_row, b->rows);
    a.v = cpb_view_rows(cpb_ring_v(cfg, kv), b->k_row, b->rows);
    a.d_o = cpb_view_rows(B->d_o, b->q_row, b->rows);
    a.lse = cpb_view_rows(B->lse, b->q_row, b->rows);
    a.delta = cpb_view_rows(B->delta, b->q_row, b->rows);
    if (B->o.buf) a.o = cpb_view_rows(B->o, b->q_row, b->rows);
    a.dq = cpb_view_rows(B->dq, b->q_row, b->rows);
    a.dk = cpb_view_rows(cpb_ring_k(cfg, B->blk), b->k_row, b->rows);
    a.dv = cpb_view_rows(cpb_ring_v(cfg, B->blk), b->k_row, b->rows);
    a.causal = 1;
    a.q_pos0 = b->q_pos0;
    a.k_pos0 = b->k_pos0;
    a.accumulate = 1; /* dq sums over steps; blk sums the step's blocks */
    return cpb_attn_bwd(ctx, CPB_STREAM_COMPUTE, &a);
}

static int bwd_step(cpb_ctx *ctx, const cpb_ring_cfg *cfg, const ring_geom *G, bwd_bufs *B, int i)
{
    cpb_buf *cur = kv_of(&B->kv, i), *dcur = B->dkv[i % 2];
    int64_t n = cpb_ring_kv_elems(cfg);
    int more = i + 1 < G->R;
    cpb_event kv_arrived = {-1};
    if (more) CPB_TRY(rotate(ctx, cfg, G, cur, kv_of(&B->kv, i + 1), n, &kv_arrived));
    cpb_blk_step st;
    cpb_blk_step_at(&G->blk, i, &st);
    if (st.diag) {
        /* diagonal: dq and the rank's own dK,dV start here (overwrite) */
        cpb_attn_args a = {0};
        a.q = B->q;
        a.k = cpb_ring_k(cfg, cur);
        a.v = cpb_ring_v(cfg, cur);
        a.d_o = B->d_o;
        a.lse = B->lse;
        a.delta = B->delta;
        a.o = B->o;
        a.dq = B->dq;
        a.dk = cpb_ring_k(cfg, dcur);
        a.dv = cpb_ring_v(cfg, dcur);
        a.causal = 1;
        a.accumulate = 0;
        CPB_TRY(cpb_attn_bwd(ctx, CPB_STREAM_COMPUTE, &a));
    } else {
        /* K and V rows the step touches (zigzag: the source's first chunk, or both) */
        int64_t rows = st.k_rows;
        cpb_view touched_blk = cpb_mat(B->blk, 0, 2, rows * cfg->hk * cfg->d, kv_half(cfg));
        cpb_view touched_sum = cpb_mat(dcur, 0, 2, rows * cfg->hk * cfg->d, kv_half(cfg));
        CPB_TRY(cpb_fill(ctx, CPB_STREAM_COMPUTE, touched_blk, 0.0f));
        for (int b = 0; b < st.n; b++) CPB_TRY(bwd_block(ctx, cfg, B, cur, &st.b[b]));
        /* the travelling sum for this K,V arrived during the step */
        CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, B->dkv_arrived));
        CPB_TRY(cpb_axpby(ctx, CPB_STREAM_COMPUTE, 1.0f, touched_blk, 1.0f, touched_sum));
    }
    if (G->R > 1) {
        /* pass the sum on (it reaches its owner after R hops) and receive the next one */
        CPB_TRY(cpb_stream_join(ctx, cfg->comm_stream, CPB_STREAM_COMPUTE));
        CPB_TRY(cpb_sendrecv(ctx, cfg->comm_stream, G->g, cpb_span(dcur, 0, n), (G->rr + 1) % G->R,
                             cpb_span(B->dkv[(i + 1) % 2], 0, n), (G->rr - 1 + G->R) % G->R));
        CPB_TRY(cpb_event_record(ctx, cfg->comm_stream, &B->dkv_arrived));
    }
    /* wait for the next K,V only: the sum just sent travels while the next step computes */
    if (more) CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, kv_arrived));
    return CPB_OK;
}

typedef struct bwd_loop {
    const cpb_ring_cfg *cfg;
    const ring_geom *G;
    bwd_bufs *B;
} bwd_loop;

static int bwd_step_of(cpb_ctx *ctx, void *arg, int i)
{
    const bwd_loop *l = arg;
    return bwd_step(ctx, l->cfg, l->G, l->B, i);
}

int cpb_ring_attn_bwd(cpb_ctx *ctx, const cpb_ring_cfg *cfg, cpb_view q, cpb_buf *kv, cpb_view o,
                      cpb_view d_o, cpb_view lse, cpb_view delta, cpb_view dq, cpb_buf *dkv)
{
    CPB_TRY(check_cfg(ctx, cfg, kv, "ring attention backward"));
    ring_geom G = geom_of(ctx, cfg);
    int64_t n = cpb_ring_kv_elems(cfg), s = cpb_ring_rows(cfg);
    if (!dkv || dkv->nelem != n || dkv->dtype != CPB_FP32)
        return cpb_fail(ctx, CPB_ERR_INVALID, "ring attention backward: dK,dV must be an fp32 buffer of %lld elements",
                        (long long)n);
    if (cfg->inner > 0 && cfg->inner < G.R) return cpb_dring_attn_bwd(ctx, cfg, q, kv, o, d_o, lse, delta, dq, dkv);
    cpb_buf *dextra = NULL, *blk = NULL, *dbuf = NULL;
    kv_ring K;
    CPB_TRY(kv_ring_open(ctx, cfg, &G, kv, &K));
    if (G.R > 1) {
        CPB_TRY(cpb_alloc(ctx, &dextra, n, CPB_FP32, CPB_TAG_KV_RING, "ring_dkv_next"));
        CPB_TRY(cpb_alloc(ctx, &blk, n, cfg->dtype, CPB_TAG_GRAD_ACT, "ring_dkv_step"));
    }
    if (!delta.buf) {
        /* attention backward needs o only through delta = rowsum(dO * o): once, here */
        CPB_TRY(cpb_alloc(ctx, &dbuf, s * cfg->hq, CPB_FP32, CPB_TAG_GRAD_ACT, "ring_delta"));
        delta = cpb_lse_view(dbuf, s, 0, cfg->hq, 0, s);
        CPB_TRY(cpb_attn_delta(ctx, CPB_STREAM_COMPUTE, o, d_o, delta));
    }
    /* R sends of the travelling sum (none alone): start in the buffer that makes the
     * last receive land in the caller's dkv */
    int nsend = G.R > 1 ? G.R : 0;
    bwd_bufs B = {K, {dkv, dextra}, blk, q, d_o, lse, delta, dq, {-1}, o};
    if (nsend % 2) {
        B.dkv[0] = dextra;
        B.dkv[1] = dkv;
    }
    bwd_loop loop = {cfg, &G, &B};
    CPB_TRY(ring_steps(ctx, &G, bwd_step_of, &loop));
    /* our own dK,dV come back with the last receive */
    if (G.R > 1) CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, B.dkv_arrived));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &dbuf));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &blk));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &dextra));
    return kv_ring_close(ctx, &B.kv);
}

int cpb_ring_grad_project(cpb_ctx *ctx, const cpb_ring_cfg *cfg, cpb_layer *L, cpb_buf **q, cpb_buf **kv,
                          cpb_buf **dq, cpb_buf **dkv)
{
    const cpb_problem *p = &L->p;
    const int64_t s = L->s, D = p->D, hqd = (int64_t)p->H * p->d, hkd = (int64_t)p->G * p->d;
    /* RoPE backward in fp32, then the gradients in the storage dtype for the GEMMs with the
     * weights; q and K,V are dead, so their buffers take them */
    CPB_TRY(cpb_rope(ctx, CPB_STREAM_COMPUTE, cpb_heads(*dq, 0, s, p->H, p->d, hqd, p->d), &L->tokens, p->rope_base, 1));
    CPB_TRY(cpb_rope(ctx, CPB_STREAM_COMPUTE, cpb_ring_k(cfg, *dkv), &L->tokens, p->rope_base, 1));
    CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_whole(*q), cpb_whole(*dq)));
    CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_whole(*kv), cpb_whole(*dkv)));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, dkv));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, dq));
    /* dx = dq Wq^T + dk Wk^T + dv Wv^T; dW = x^T d(q, k, v) */
    cpb_qkv_views grad = {cpb_mat(*q, 0, s, hqd, hqd), cpb_mat(*kv, 0, s, hkd, hkd), cpb_mat(*kv, s * hkd, s, hkd, hkd)};
    cpb_qkv_views w = {cpb_mat(L->wq, 0, D, hqd, hqd), cpb_mat(L->wk, 0, D, hkd, hkd), cpb_mat(L->wv, 0, D, hkd, hkd)};
    cpb_qkv_views dw = {cpb_mat(L->dwq, 0, D, hqd, hqd), cpb_mat(L->dwk, 0, D, hkd, hkd),
                        cpb_mat(L->dwv, 0, D, hkd, hkd)};
    CPB_TRY(cpb_proj_bwd(ctx, CPB_STREAM_COMPUTE, cpb_mat(L->x, 0, s, D, D), grad, w, cpb_mat(L->dx, 0, s, D, D), dw));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, kv));
    return cpb_free(ctx, CPB_STREAM_COMPUTE, q);
}
