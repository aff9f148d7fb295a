/* dring_attn.c — double-ring attention forward and backward (see dring_attn.h).  Streams:
 * compute; the inner ring's rotations on cfg->comm_stream; the outer ring's on "comm_outer",
 * so an outer transfer overlaps the inner steps.  Every hand-over is an event or a join. */
#include <stdio.h>

#include "common/dring_attn.h"
#include "common/grid.h"

int cpb_dring_inner(const cpb_problem *p)
{
    if (!cpb_knobs_find(&p->knobs, "inner_ring")) return 0;
    int64_t w = cpb_knob_int(p, "inner_ring");
    if (w) return (int)w;
    int u = cpb_grid_degree(p), R = u > 0 && p->C % u == 0 ? p->C / u : 1, best = 1;
    for (int v = 1; v <= R; v++)
        if (R % v == 0 && (int64_t)v * u <= 8) best = v;
    return best;
}

typedef struct dgeom {
    cpb_group *g;
    int R, rr, w, nw, win, i;
    int inext, iprev, onext, oprev; /* ring ranks of the inner and outer neighbours */
    int outer_stream;
    cpb_blk_geom blk;
} dgeom;

static int dgeom_of(cpb_ctx *ctx, const cpb_ring_cfg *cfg, dgeom *G)
{
    G->g = cfg->g ? cfg->g : cpb_world(ctx);
    G->R = G->g->size;
    G->rr = G->g->rank;
    G->w = cfg->inner;
    if (G->w < 1 || G->w >= G->R || G->R % G->w)
        return cpb_fail(ctx, CPB_ERR_INVALID, "double ring: inner rings of %d ranks must divide the ring of %d and be "
                        "smaller", G->w, G->R);
    G->nw = G->R / G->w;
    G->win = G->rr / G->w;
    G->i = G->rr % G->w;
    G->inext = G->win * G->w + (G->i + 1) % G->w;
    G->iprev = G->win * G->w + (G->i - 1 + G->w) % G->w;
    G->onext = ((G->win + 1) % G->nw) * G->w + G->i;
    G->oprev = ((G->win - 1 + G->nw) % G->nw) * G->w + G->i;
    G->blk = (cpb_blk_geom){G->R, G->rr, cfg->c, cfg->layout};
    return cpb_stream(ctx, "comm_outer", &G->outer_stream);
}

/* the ring rank whose K,V outer step o, inner step k reads */
static int src_of(const dgeom *G, int o, int k)
{
    return ((G->win - o) % G->nw + G->nw) % G->nw * G->w + ((G->i - k) % G->w + G->w) % G->w;
}

/* `stream` sends `send` to ring rank dst and receives `recv` from src, after compute and,
 * when other >= 0, the other comm stream (whatever last read `recv` or wrote `send`);
 * `done` marks the end.  The inner ring never waits for the outer one (that is the
 * overlap); the outer one waits for the inner ring's sends of the buffer it refills. */
static int exchange(cpb_ctx *ctx, const dgeom *G, int stream, int other, cpb_buf *send, int dst, cpb_buf *recv,
                    int src, int64_t n, cpb_event *done)
{
    CPB_TRY(cpb_stream_join(ctx, stream, CPB_STREAM_COMPUTE));
    if (other >= 0) CPB_TRY(cpb_stream_join(ctx, stream, other));
    CPB_TRY(cpb_sendrecv(ctx, stream, G->g, cpb_span(send, 0, n), dst, cpb_span(recv, 0, n), src));
    return cpb_event_record(ctx, stream, done);
}

/* The K,V buffers: the caller's (outer step 0's start), two for the inner rotation, the
 * outer arrivals (start of step o >= 1 in outer[(o-1) % 2]).  Same on every rank. */
typedef struct dkv_bufs {
    cpb_buf *own, *inner[2], *outer[2];
} dkv_bufs;

static int kv_open(cpb_ctx *ctx, const cpb_ring_cfg *cfg, const dgeom *G, cpb_buf *own, dkv_bufs *K)
{
    int64_t n = cpb_ring_kv_elems(cfg);
    K->own = own;
    K->inner[0] = K->inner[1] = K->outer[0] = K->outer[1] = NULL;
    static const char *const in_names[2] = {"dring_kv_in_a", "dring_kv_in_b"};
    static const char *const out_names[2] = {"dring_kv_out_a", "dring_kv_out_b"};
    for (int b = 0; b < (G->w > 2 ? 2 : G->w - 1); b++)
        CPB_TRY(cpb_alloc(ctx, &K->inner[b], n, cfg->dtype, CPB_TAG_KV_RING, in_names[b]));
    for (int b = 0; b < (G->nw > 2 ? 2 : G->nw - 1); b++)
        CPB_TRY(cpb_alloc(ctx, &K->outer[b], n, cfg->dtype, CPB_TAG_KV_RING, out_names[b]));
    return CPB_OK;
}

static int kv_close(cpb_ctx *ctx, dkv_bufs *K)
{
    for (int b = 1; b >= 0; b--) CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &K->outer[b]));
    for (int b = 1; b >= 0; b--) CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &K->inner[b]));
    return CPB_OK;
}

/* the K,V inner step k of outer step o computes on, and the one it receives into */
static cpb_buf *kv_start(const dkv_bufs *K, int o)
{
    return o == 0 ? K->own : K->outer[(o - 1) % 2];
}
static cpb_buf *kv_cur(const dkv_bufs *K, int o, int k)
{
    return k == 0 ? kv_start(K, o) : K->inner[(k - 1) % 2];
}

/* at the start of outer step o: send its start K,V on and receive the next step's */
static int outer_prefetch(cpb_ctx *ctx, const cpb_ring_cfg *cfg, const dgeom *G, const dkv_bufs *K, int o,
                          cpb_event *arrived)
{
    if (o + 1 >= G->nw) return CPB_OK;
    return exchange(ctx, G, G->outer_stream, cfg->comm_stream, kv_start(K, o), G->onext, K->outer[o % 2], G->oprev,
                    cpb_ring_kv_elems(cfg), arrived);
}

/* at inner step k: pass the current K,V around the window */
static int inner_rotate(cpb_ctx *ctx, const cpb_ring_cfg *cfg, const dgeom *G, const dkv_bufs *K, int o, int k,
                        cpb_event *arrived)
{
    return exchange(ctx, G, cfg->comm_stream, -1, kv_cur(K, o, k), G->inext, K->inner[k % 2], G->iprev,
                    cpb_ring_kv_elems(cfg), arrived);
}

/* ---------------------------------------------------------------- forward */

/* Run step(ctx, arg, k) for the inner steps k = 0 .. w-1 of outer step oo, each in the
 * range "outer<oo>/step<k>", a run of alike steps as one cpb_repeat (as ring_attn.c's
 * ring_steps does): the first step (the window's own K,V, and in backward the start of the
 * window's sum) and the last (which rotates nothing on) stand alone; steps between are
 * alike when their blocks are (cpb_blk_step_alike). */
static int inner_steps(cpb_ctx *ctx, const dgeom *G, int oo, cpb_repeat_body step, void *arg)
{
    char label[32];
    snprintf(label, sizeof label, "outer%d/step", oo);
    for (int k = 0; k < G->w;) {
        int j = k + 1;
        if (k > 0) {
            cpb_blk_step a, b;
            cpb_blk_step_src(&G->blk, src_of(G, oo, k), &a);
            for (; j < G->w - 1; j++) {
                cpb_blk_step_src(&G->blk, src_of(G, oo, j), &b);
                if (!cpb_blk_step_alike(&a, &b)) break;
            }
        }
        CPB_TRY(cpb_repeat(ctx, k, j, label, step, arg));
        k = j;
    }
    return CPB_OK;
}

typedef struct fwd_v {
    cpb_view q, acc, lse, part, lpart;
} fwd_v;

static int fwd_step(cpb_ctx *ctx, const cpb_ring_cfg *cfg, const dgeom *G, const fwd_v *V, cpb_buf *kv, int src)
{
    cpb_blk_step st;
    cpb_blk_step_src(&G->blk, src, &st);
    for (int b = 0; b < st.n; b++) {
        const cpb_blk *bk = &st.b[b];
        cpb_attn_args a = {0};
        a.q = cpb_view_rows(V->q, bk->q_row, bk->rows);
        a.k = cpb_view_rows(cpb_ring_k(cfg, kv), bk->k_row, bk->rows);
        a.v = cpb_view_rows(cpb_ring_v(cfg, kv), bk->k_row, bk->rows);
        a.o = st.diag ? V->acc : V->part;
        a.lse = st.diag ? V->lse : V->lpart;
        a.causal = 1; /* exact positions (block_iter.h) */
        a.q_pos0 = bk->q_pos0;
        a.k_pos0 = bk->k_pos0;
        CPB_TRY(cpb_attn_fwd(ctx, CPB_STREAM_COMPUTE, &a));
        if (!st.diag)
            CPB_TRY(cpb_lse_merge(ctx, CPB_STREAM_COMPUTE, cpb_view_rows(V->acc, bk->q_row, bk->rows),
                                  cpb_view_rows(V->lse, bk->q_row, bk->rows), V->part, V->lpart));
    }
    return CPB_OK;
}

/* one inner step of the forward: rotate the K,V on, attend to the current one */
typedef struct fwd_loop {
    const cpb_ring_cfg *cfg;
    const dgeom *G;
    const dkv_bufs *K;
    const fwd_v *V;
    int oo;
} fwd_loop;

static int fwd_inner(cpb_ctx *ctx, void *arg, int k)
{
    const fwd_loop *l = arg;
    cpb_event in_arrived = {-1};
    const int more = k + 1 < l->G->w;
    if (more) CPB_TRY(inner_rotate(ctx, l->cfg, l->G, l->K, l->oo, k, &in_arrived));
    CPB_TRY(fwd_step(ctx, l->cfg, l->G, l->V, kv_cur(l->K, l->oo, k), src_of(l->G, l->oo, k)));
    if (more) CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, in_arrived));
    return CPB_OK;
}

int cpb_dring_attn_fwd(cpb_ctx *ctx, const cpb_ring_cfg *cfg, cpb_view q, cpb_buf *kv, cpb_view o, cpb_view lse)
{
    dgeom G;
    CPB_TRY(dgeom_of(ctx, cfg, &G));
    int64_t c = cfg->c, rows = cpb_ring_rows(cfg), hq = cfg->hq, d = cfg->d;
    dkv_bufs K;
    cpb_buf *acc = NULL, *part = NULL, *lpart = NULL;
    CPB_TRY(kv_open(ctx, cfg, &G, kv, &K));
    CPB_TRY(cpb_alloc(ctx, &acc, rows * hq * d, CPB_FP32, CPB_TAG_ATTN, "ring_o_acc"));
    CPB_TRY(cpb_alloc(ctx, &part, c * hq * d, CPB_FP32, CPB_TAG_ATTN, "ring_o_part"));
    CPB_TRY(cpb_alloc(ctx, &lpart, c * hq, CPB_FP32, CPB_TAG_ATTN, "ring_lse_part"));
    fwd_v V = {q, cpb_heads(acc, 0, rows, hq, d, hq * d, d), lse, cpb_heads(part, 0, c, hq, d, hq * d, d),
               cpb_lse_view(lpart, c, 0, hq, 0, c)};
    for (int oo = 0; oo < G.nw; oo++) {
        cpb_event out_arrived = {-1};
        CPB_TRY(outer_prefetch(ctx, cfg, &G, &K, oo, &out_arrived));
        fwd_loop loop = {cfg, &G, &K, &V, oo};
        CPB_TRY(inner_steps(ctx, &G, oo, fwd_inner, &loop));
        if (oo + 1 < G.nw) CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, out_arrived));
    }
    CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, o, V.acc));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &lpart));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &part));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &acc));
    return kv_close(ctx, &K);
}

/* ---------------------------------------------------------------- backward */

typedef struct bwd_v {
    cpb_view q, o, d_o, lse, delta, dq;
    cpb_buf *blk; /* one step's dK,dV in the storage dtype, as the kernel writes them */
} bwd_v;

/* step (o, k): dq, and the step's dK,dV into `sum` (the inner travelling sum of this K,V):
 * overwritten on the diagonal, else added (after `arrived`, when the sum came in) */
static int bwd_step(cpb_ctx *ctx, const cpb_ring_cfg *cfg, const dgeom *G, const bwd_v *V, cpb_buf *kv, int src,
                    cpb_buf *sum, const cpb_event *arrived)
{
    cpb_blk_step st;
    cpb_blk_step_src(&G->blk, src, &st);
    int64_t half = cpb_ring_rows(cfg) * cfg->hk * cfg->d;
    cpb_view tb = cpb_mat(V->blk, 0, 2, st.k_rows * cfg->hk * cfg->d, half);
    cpb_view ts = cpb_mat(sum, 0, 2, st.k_rows * cfg->hk * cfg->d, half);
    if (!st.diag) CPB_TRY(cpb_fill(ctx, CPB_STREAM_COMPUTE, tb, 0.0f));
    for (int b = 0; b < st.n; b++) {
        const cpb_blk *bk = &st.b[b];
        cpb_attn_args a = {0};
        a.q = cpb_view_rows(V->q, bk->q_row, bk->rows);
        a.k = cpb_view_rows(cpb_ring_k(cfg, kv), bk->k_row, bk->rows);
        a.v = cpb_view_rows(cpb_ring_v(cfg, kv), bk->k_row, bk->rows);
        a.d_o = cpb_view_rows(V->d_o, bk->q_row, bk->rows);
        a.lse = cpb_view_rows(V->lse, bk->q_row, bk->rows);
        a.delta = cpb_view_rows(V->delta, bk->q_row, bk->rows);
        if (V->o.buf) a.o = cpb_view_rows(V->o, bk->q_row, bk->rows);
        a.dq = cpb_view_rows(V->dq, bk->q_row, bk->rows);
        cpb_buf *dst = st.diag ? sum : V->blk;
        a.dk = cpb_view_rows(cpb_ring_k(cfg, dst), bk->k_row, bk->rows);
        a.dv = cpb_view_rows(cpb_ring_v(cfg, dst), bk->k_row, bk->rows);
        a.causal = 1;
        a.q_pos0 = bk->q_pos0;
        a.k_pos0 = bk->k_pos0;
        a.accumulate = !st.diag; /* the diagonal (the first step) starts dq and the own sum */
        CPB_TRY(cpb_attn_bwd(ctx, CPB_STREAM_COMPUTE, &a));
    }
    if (st.diag) return CPB_OK;
    if (arrived) CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, *arrived));
    else CPB_TRY(cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_whole(sum), 0.0f)); /* a window's first visit */
    return cpb_axpby(ctx, CPB_STREAM_COMPUTE, 1.0f, tb, 1.0f, ts);
}

/* one inner step of the backward: rotate the K,V on, its gradients into the window's
 * travelling sum, which goes on around the window */
typedef struct bwd_loop {
    const cpb_ring_cfg *cfg;
    const dgeom *G;
    const dkv_bufs *K;
    const bwd_v *V;
    cpb_buf **isum;
    cpb_event *isum_arrived; /* the last sum received: set by every step */
    int64_t n;
    int oo;
} bwd_loop;

static int bwd_inner(cpb_ctx *ctx, void *arg, int k)
{
    const bwd_loop *l = arg;
    const dgeom *G = l->G;
    cpb_event in_arrived = {-1};
    const int more = k + 1 < G->w;
    if (more) CPB_TRY(inner_rotate(ctx, l->cfg, G, l->K, l->oo, k, &in_arrived));
    cpb_buf *sum = l->isum[G->w > 1 ? k % 2 : 0];
    CPB_TRY(bwd_step(ctx, l->cfg, G, l->V, kv_cur(l->K, l->oo, k), src_of(G, l->oo, k), sum,
                     k ? l->isum_arrived : NULL));
    if (G->w > 1) /* the sum goes on around the window; the next one comes in */
        CPB_TRY(exchange(ctx, G, l->cfg->comm_stream, -1, sum, G->inext, l->isum[(k + 1) % 2], G->iprev, l->n,
                         l->isum_arrived));
    if (more) CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, in_arrived));
    return CPB_OK;
}

int cpb_dring_attn_bwd(cpb_ctx *ctx, const cpb_ring_cfg *cfg, cpb_view q, cpb_buf *kv, cpb_view o, cpb_view d_o,
                       cpb_view lse, cpb_view delta, cpb_view dq, cpb_buf *dkv)
{
    dgeom G;
    CPB_TRY(dgeom_of(ctx, cfg, &G));
    int64_t n = cpb_ring_kv_elems(cfg), rows = cpb_ring_rows(cfg);
    dkv_bufs K;
    cpb_buf *isum[2] = {NULL, NULL}, *oextra = NULL, *blk = NULL, *dbuf = NULL;
    CPB_TRY(kv_open(ctx, cfg, &G, kv, &K));
    for (int b = 0; b < (G.w > 1 ? 2 : 1); b++)
        CPB_TRY(cpb_alloc(ctx, &isum[b], n, CPB_FP32, CPB_TAG_KV_RING, b ? "dring_dkv_in_b" : "dring_dkv_in_a"));
    CPB_TRY(cpb_alloc(ctx, &oextra, n, CPB_FP32, CPB_TAG_KV_RING, "dring_dkv_out"));
    CPB_TRY(cpb_alloc(ctx, &blk, n, cfg->dtype, CPB_TAG_GRAD_ACT, "ring_dkv_step"));
    if (!delta.buf) {
        CPB_TRY(cpb_alloc(ctx, &dbuf, rows * cfg->hq, CPB_FP32, CPB_TAG_GRAD_ACT, "ring_delta"));
        delta = cpb_lse_view(dbuf, rows, 0, cfg->hq, 0, rows);
        CPB_TRY(cpb_attn_delta(ctx, CPB_STREAM_COMPUTE, o, d_o, delta));
    }
    bwd_v V = {q, o, d_o, lse, delta, dq, blk};
    /* the outer sum of step o lives in osum[o % 2]; nw sends, the last receive lands in
     * osum[nw % 2], which is the caller's dkv */
    cpb_buf *osum[2] = {dkv, oextra};
    if (G.nw % 2) osum[0] = oextra, osum[1] = dkv;
    cpb_event osum_arrived = {-1};
    for (int oo = 0; oo < G.nw; oo++) {
        cpb_event out_arrived = {-1}, isum_arrived = {-1};
        CPB_TRY(outer_prefetch(ctx, cfg, &G, &K, oo, &out_arrived));
        bwd_loop loop = {cfg, &G, &K, &V, isum, &isum_arrived, n, oo};
        CPB_TRY(inner_steps(ctx, &G, oo, bwd_inner, &loop));
        /* the window's sum for this outer step's K,V is back; add it to the outer sum */
        cpb_buf *wsum = isum[G.w > 1 ? G.w % 2 : 0];
        if (G.w > 1) CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, isum_arrived));
        if (oo == 0) {
            CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_whole(osum[0]), cpb_whole(wsum)));
        } else {
            CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, osum_arrived));
            CPB_TRY(cpb_axpby(ctx, CPB_STREAM_COMPUTE, 1.0f, cpb_whole(wsum), 1.0f, cpb_whole(osum[oo % 2])));
        }
        CPB_TRY(exchange(ctx, &G, G.outer_stream, cfg->comm_stream, osum[oo % 2], G.onext, osum[(oo + 1) % 2],
                         G.oprev, n, &osum_arrived));
        if (oo + 1 < G.nw) CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, out_arrived));
    }
    /* our own dK,dV come back with the last outer receive */
    CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, osum_arrived));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &dbuf));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &blk));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &oextra));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &isum[1]));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &isum[0]));
    return kv_close(ctx, &K);
}
