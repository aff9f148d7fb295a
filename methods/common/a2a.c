/* a2a.c — Ulysses building blocks (see a2a.h). */
#include <string.h>

#include "common/a2a.h"

int cpb_a2a_map_q(cpb_a2a_map *m, int C, int H)
{
    if (C <= 0 || H % C || H > CPB_MAX_HEADS) return CPB_ERR_INVALID;
    m->C = C;
    m->n = H / C;
    for (int h = 0; h < H; h++) m->head[h] = h;
    return CPB_OK;
}

int cpb_a2a_map_kv(cpb_a2a_map *m, int C, int G)
{
    if (C <= 0 || G <= 0 || C > CPB_MAX_HEADS || G > CPB_MAX_HEADS) return CPB_ERR_INVALID;
    m->C = C;
    if (G >= C) {
        if (G % C) return CPB_ERR_INVALID;
        m->n = G / C;
        for (int h = 0; h < G; h++) m->head[h] = h;
    } else {
        if (C % G) return CPB_ERR_INVALID;
        int rep = C / G; /* members sharing one kv head */
        m->n = 1;
        for (int j = 0; j < C; j++) m->head[j] = j / rep;
    }
    return CPB_OK;
}

int64_t cpb_a2a_elems(const cpb_a2a_map *m, int64_t rows, int d)
{
    return (int64_t)m->C * rows * m->n * d;
}

cpb_view cpb_a2a_head_view(cpb_buf *b, int64_t rows, int n, int d)
{
    return cpb_heads(b, 0, rows, n, d, (int64_t)n * d, d);
}

cpb_view cpb_a2a_delta_view(cpb_buf *delta, int64_t S, int n)
{
    return cpb_heads(delta, 0, S, n, 1, n, 1);
}

/* ---------------------------------------------------------------- runs of heads */

/* A chunk's heads as nrun runs of L consecutive heads, run r starting at h0 + r*stride.
 * regular = 0 when the list has no such shape (then callers go head by head). */
typedef struct runs {
    int regular;
    int h0, L, nrun, stride;
} runs;

static runs runs_of(const cpb_a2a_map *m, int j)
{
    const int *h = m->head + (size_t)j * m->n;
    int n = m->n;
    runs r = {1, h[0], 1, 1, 1};
    while (r.L < n && h[r.L] == h[0] + r.L) r.L++;
    if (n % r.L) {
        r.regular = 0;
        return r;
    }
    r.nrun = n / r.L;
    r.stride = r.nrun > 1 ? h[r.L] - h[0] : r.L;
    for (int i = 0; i < n && r.regular; i++)
        if (h[i] != h[0] + (i / r.L) * r.stride + i % r.L) r.regular = 0;
    if (r.nrun > 1 && r.stride < r.L) r.regular = 0; /* overlapping runs: go head by head */
    return r;
}

/* the pieces of chunk j an op loops over: the regular runs as one batch, or single heads */
typedef struct piece {
    int slot0;   /* first slot of the piece in the chunk */
    int h0;      /* first global head */
    int L;       /* consecutive heads per batch entry */
    int nb;      /* batch entries */
    int stride;  /* heads between batch entries */
} piece;

static int pieces_of(const cpb_a2a_map *m, int j, piece *out)
{
    runs r = runs_of(m, j);
    if (r.regular) {
        out[0] = (piece){0, r.h0, r.L, r.nrun, r.stride};
        return 1;
    }
    for (int i = 0; i < m->n; i++) out[i] = (piece){i, m->head[(size_t)j * m->n + i], 1, 1, 1};
    return m->n;
}

/* chunk j's slots [p.slot0, ...) of a packed buffer as [rows][nb][L*d] */
static cpb_view packed_piece(const cpb_a2a_map *m, cpb_buf *b, int64_t rows, int d, int j, const piece *p)
{
    int64_t n = m->n;
    int64_t off = (int64_t)j * rows * n * d + (int64_t)p->slot0 * d;
    return cpb_heads(b, off, rows, p->nb, (int64_t)p->L * d, n * d, (int64_t)p->L * d);
}

/* the piece's heads as columns of a [rows][heads][d] tensor (weights, seq-layout o) */
static cpb_view cols_piece(cpb_buf *b, int64_t rows, int heads, int d, const piece *p)
{
    return cpb_heads(b, (int64_t)p->h0 * d, rows, p->nb, (int64_t)p->L * d, (int64_t)heads * d,
                     (int64_t)p->stride * d);
}

/* the piece's heads as row blocks of Wo [H*d][D] */
static cpb_view wo_rows_piece(cpb_buf *wo, int64_t D, int d, const piece *p)
{
    return cpb_heads(wo, (int64_t)p->h0 * d * D, (int64_t)p->L * d, p->nb, D, D, (int64_t)p->stride * d * D);
}

/* does chunk j carry exactly the heads of an earlier chunk?  (replicated kv) */
static int same_as_earlier(const cpb_a2a_map *m, int j)
{
    for (int k = 0; k < j; k++)
        if (memcmp(m->head + (size_t)k * m->n, m->head + (size_t)j * m->n, sizeof(int) * (size_t)m->n) == 0)
            return k;
    return -1;
}

static cpb_view chunk_view(const cpb_a2a_map *m, cpb_buf *b, int64_t rows, int d, int j)
{
    return cpb_heads(b, (int64_t)j * rows * m->n * d, rows, m->n, d, (int64_t)m->n * d, d);
}

/* ---------------------------------------------------------------- whole maps as one batch */

/* A map whose chunks are rep copies of nb blocks (chunk j carries block j / rep), each
 * block one run of n consecutive heads, block b starting at head h0 + b*cs with cs >= n
 * (blocks do not overlap).  Every map the Ulysses family uses has this shape (a stage of
 * upipe: one head every g; ulysses: consecutive heads; replicated kv heads: rep > 1), and
 * then each op over the map is ONE batched GEMM or copy whose batch is the blocks, as the
 * references do one GEMM per projection (or per stage); regular = 0 sends an op down the
 * per-chunk path. */
typedef struct blocks {
    int regular;
    int rep, nb, n, h0, cs;
} blocks;

static blocks blocks_of(const cpb_a2a_map *m)
{
    blocks b = {0, 1, m->C, m->n, m->head[0], m->n};
    const int n = m->n, C = m->C;
    if (C <= 0 || n <= 0) return b;
    while (b.rep < C && memcmp(m->head, m->head + (size_t)b.rep * n, sizeof(int) * (size_t)n) == 0) b.rep++;
    if (C % b.rep) return b;
    b.nb = C / b.rep;
    for (int j = 0; j < C; j++) {
        const int *h = m->head + (size_t)j * n, *first = m->head + (size_t)(j / b.rep) * b.rep * n;
        if (memcmp(h, first, sizeof(int) * (size_t)n) != 0) return b;
        for (int i = 1; i < n; i++)
            if (h[i] != h[0] + i) return b;
    }
    if (b.nb > 1) b.cs = m->head[(size_t)b.rep * n] - b.h0;
    if (b.cs < n) return b;
    for (int k = 0; k < b.nb; k++)
        if (m->head[(size_t)k * b.rep * n] != b.h0 + k * b.cs) return b;
    b.regular = 1;
    return b;
}

/* the blocks' columns of a [rows][heads][d] tensor (weights, seq-layout o) as a batch */
static cpb_view block_cols(const blocks *b, cpb_buf *t, int64_t rows, int heads, int d)
{
    return cpb_heads(t, (int64_t)b->h0 * d, rows, b->nb, (int64_t)b->n * d, (int64_t)heads * d, (int64_t)b->cs * d);
}

/* the blocks' row blocks of Wo [H*d][D] as a batch */
static cpb_view block_wo_rows(const blocks *b, cpb_buf *wo, int64_t D, int d)
{
    return cpb_heads(wo, (int64_t)b->h0 * d * D, (int64_t)b->n * d, b->nb, D, D, (int64_t)b->cs * d * D);
}

/* replica t of every block in a packed buffer, as a batch [rows][nb][n*d] */
static cpb_view block_packed(const blocks *b, cpb_buf *p, int64_t rows, int d, int t)
{
    int64_t chunk = rows * b->n * d;
    return cpb_heads(p, t * chunk, rows, b->nb, (int64_t)b->n * d, (int64_t)b->n * d, b->rep * chunk);
}

/* the blocks side by side, [rows][nb * n*d] (scratch for the dx GEMM, gathered weights) */
static cpb_view block_side(const blocks *b, cpb_buf *t, int64_t rows, int d)
{
    int64_t w = (int64_t)b->n * d;
    return cpb_heads(t, 0, rows, b->nb, w, b->nb * w, w);
}

/* the blocks' columns are one contiguous span of W */
static int block_contiguous(const blocks *b)
{
    return b->nb == 1 || b->cs == b->n;
}

/* RoPE (forward or backward) of replica 0 of every block: one call when a chunk holds one
 * head (the blocks are then one strided batch of heads), else one call per block */
static int block_rope(cpb_ctx *ctx, int st, const blocks *b, const cpb_a2a_map *m, const cpb_a2a_seq *sq,
                      cpb_buf *packed, int inverse)
{
    if (b->n == 1)
        return cpb_rope(ctx, st, cpb_heads(packed, 0, sq->s, b->nb, sq->d, sq->d, (int64_t)b->rep * sq->s * sq->d),
                        sq->pos, sq->rope_base, inverse);
    for (int k = 0; k < b->nb; k++)
        CPB_TRY(cpb_rope(ctx, st, chunk_view(m, packed, sq->s, sq->d, k * b->rep), sq->pos, sq->rope_base, inverse));
    return CPB_OK;
}

/* ---------------------------------------------------------------- forward pieces */

int cpb_a2a_project(cpb_ctx *ctx, int st, const cpb_a2a_map *m, const cpb_a2a_seq *sq,
                    cpb_buf *w, int w_heads, cpb_buf *packed)
{
    cpb_view x = cpb_mat(sq->x, 0, sq->s, sq->D, sq->D);
    blocks b = blocks_of(m);
    if (b.regular) {
        /* one GEMM for every block, RoPE on the blocks, then the replicas copied */
        CPB_TRY(cpb_gemm(ctx, st, 0, 0, 1.0f, x, block_cols(&b, w, sq->D, w_heads, sq->d), 0.0f,
                         block_packed(&b, packed, sq->s, sq->d, 0)));
        if (sq->rope_base > 0) CPB_TRY(block_rope(ctx, st, &b, m, sq, packed, 0));
        for (int t = 1; t < b.rep; t++)
            CPB_TRY(cpb_copy(ctx, st, block_packed(&b, packed, sq->s, sq->d, t), block_packed(&b, packed, sq->s, sq->d, 0)));
        return CPB_OK;
    }
    piece ps[CPB_MAX_HEADS];
    for (int j = 0; j < m->C; j++) {
        int k = same_as_earlier(m, j);
        if (k >= 0) { /* a replica: the same kv head, already projected and rotated */
            CPB_TRY(cpb_copy(ctx, st, chunk_view(m, packed, sq->s, sq->d, j),
                             chunk_view(m, packed, sq->s, sq->d, k)));
            continue;
        }
        int np = pieces_of(m, j, ps);
        for (int i = 0; i < np; i++)
            CPB_TRY(cpb_gemm(ctx, st, 0, 0, 1.0f, x, cols_piece(w, sq->D, w_heads, sq->d, &ps[i]), 0.0f,
                             packed_piece(m, packed, sq->s, sq->d, j, &ps[i])));
        if (sq->rope_base > 0)
            CPB_TRY(cpb_rope(ctx, st, chunk_view(m, packed, sq->s, sq->d, j), sq->pos, sq->rope_base, 0));
    }
    return CPB_OK;
}

int cpb_a2a_exchange(cpb_ctx *ctx, int st, const cpb_a2a_map *m, int64_t rows, int d,
                     cpb_buf *send, cpb_buf *recv)
{
    int64_t n = cpb_a2a_elems(m, rows, d);
    return cpb_all_to_all(ctx, st, NULL, cpb_span(send, 0, n), cpb_span(recv, 0, n));
}

int cpb_a2a_unpack(cpb_ctx *ctx, int st, const cpb_a2a_map *m, int64_t rows, int d,
                   cpb_buf *packed, cpb_buf *dst, int dst_heads)
{
    blocks b = blocks_of(m);
    if (b.regular && b.rep == 1)
        return cpb_copy(ctx, st, block_cols(&b, dst, rows, dst_heads, d), block_packed(&b, packed, rows, d, 0));
    piece ps[CPB_MAX_HEADS];
    for (int j = 0; j < m->C; j++) {
        int np = pieces_of(m, j, ps);
        for (int i = 0; i < np; i++)
            CPB_TRY(cpb_copy(ctx, st, cols_piece(dst, rows, dst_heads, d, &ps[i]),
                             packed_piece(m, packed, rows, d, j, &ps[i])));
    }
    return CPB_OK;
}

int cpb_a2a_pack(cpb_ctx *ctx, int st, const cpb_a2a_map *m, int64_t rows, int d,
                 cpb_buf *src, int src_heads, cpb_buf *packed)
{
    blocks b = blocks_of(m);
    if (b.regular && b.rep == 1)
        return cpb_copy(ctx, st, block_packed(&b, packed, rows, d, 0), block_cols(&b, src, rows, src_heads, d));
    piece ps[CPB_MAX_HEADS];
    for (int j = 0; j < m->C; j++) {
        int np = pieces_of(m, j, ps);
        for (int i = 0; i < np; i++)
            CPB_TRY(cpb_copy(ctx, st, packed_piece(m, packed, rows, d, j, &ps[i]),
                             cols_piece(src, rows, src_heads, d, &ps[i])));
    }
    return CPB_OK;
}

/* ---------------------------------------------------------------- backward pieces */

int cpb_a2a_needs_gather(const cpb_a2a_map *m)
{
    blocks b = blocks_of(m);
    if (b.regular) return !block_contiguous(&b);
    for (int i = 1; i < m->C * m->n; i++)
        if (m->head[i] != m->head[0] + i) return 1;
    return 0;
}

int64_t cpb_a2a_gather_elems(const cpb_a2a_map *m, int64_t D, int d)
{
    blocks b = blocks_of(m);
    return D * (b.regular ? b.nb : m->C) * m->n * d;
}

int64_t cpb_a2a_gather_need(const cpb_a2a_map *m, int64_t D, int d)
{
    return cpb_a2a_needs_gather(m) ? cpb_a2a_gather_elems(m, D, d) : 0;
}

/* the per-chunk path of cpb_a2a_grad_project, for maps that are not regular blocks */
static int grad_project_chunks(cpb_ctx *ctx, int st, const cpb_a2a_map *m, const cpb_a2a_seq *sq, cpb_buf *packed,
                               cpb_buf *scratch, cpb_buf *wg, cpb_buf *w, int w_heads, cpb_buf *dw, cpb_buf *dx)
{
    piece ps[CPB_MAX_HEADS];
    int64_t s = sq->s, D = sq->D, n = m->n, K = (int64_t)m->C * m->n * sq->d;
    int d = sq->d;
    cpb_view x = cpb_mat(sq->x, 0, s, D, D);
    for (int j = 0; j < m->C; j++) {
        if (sq->rope_base > 0)
            CPB_TRY(cpb_rope(ctx, st, chunk_view(m, packed, s, d, j), sq->pos, sq->rope_base, 1));
        int np = pieces_of(m, j, ps);
        for (int i = 0; i < np; i++) /* dW[:, heads] += x^T g, one batch entry per run */
            CPB_TRY(cpb_gemm(ctx, st, 1, 0, 1.0f, x, packed_piece(m, packed, s, d, j, &ps[i]), 1.0f,
                             cols_piece(dw, D, w_heads, d, &ps[i])));
        /* chunk j side by side with the others: columns [j*n*d, (j+1)*n*d) of scratch */
        CPB_TRY(cpb_copy(ctx, st, cpb_heads(scratch, (int64_t)j * n * d, s, n, d, K, d),
                         chunk_view(m, packed, s, d, j)));
    }
    cpb_view wmat = cpb_mat(w, (int64_t)m->head[0] * d, D, K, (int64_t)w_heads * d);
    if (cpb_a2a_needs_gather(m)) {
        if (!wg)
            return cpb_fail(ctx, CPB_ERR_INVALID, "a2a gradient: heads not consecutive in '%s' and no gather buffer",
                            w->name);
        for (int j = 0; j < m->C; j++) {
            int np = pieces_of(m, j, ps);
            for (int i = 0; i < np; i++) {
                cpb_view dst = cpb_heads(wg, ((int64_t)j * n + ps[i].slot0) * d, D, ps[i].nb, (int64_t)ps[i].L * d,
                                         K, (int64_t)ps[i].L * d);
                CPB_TRY(cpb_copy(ctx, st, dst, cols_piece(w, D, w_heads, d, &ps[i])));
            }
        }
        wmat = cpb_mat(wg, 0, D, K, K);
    }
    /* dx += g W^T over all chunks at once */
    return cpb_gemm(ctx, st, 0, 1, 1.0f, cpb_mat(scratch, 0, s, K, K), wmat, 1.0f, cpb_mat(dx, 0, s, D, D));
}

int cpb_a2a_grad_project(cpb_ctx *ctx, int st, const cpb_a2a_map *m, const cpb_a2a_seq *sq,
                         cpb_buf *packed, cpb_buf *scratch, cpb_buf *wg, cpb_buf *w, int w_heads,
                         cpb_buf *dw, cpb_buf *dx)
{
    blocks b = blocks_of(m);
    if (!b.regular) return grad_project_chunks(ctx, st, m, sq, packed, scratch, wg, w, w_heads, dw, dx);
    const int64_t s = sq->s, D = sq->D, K = (int64_t)b.nb * b.n * sq->d;
    const int d = sq->d;
    /* the replicas of a block carry the gradients of one head: their sum is its gradient
     * (RoPE is linear and the replicas share the positions, so sum first, rotate once) */
    for (int t = 1; t < b.rep; t++)
        CPB_TRY(cpb_axpby(ctx, st, 1.0f, block_packed(&b, packed, s, d, t), 1.0f, block_packed(&b, packed, s, d, 0)));
    if (sq->rope_base > 0) CPB_TRY(block_rope(ctx, st, &b, m, sq, packed, 1));
    /* dW[:, blocks] += x^T g: one GEMM batched over the blocks */
    cpb_view x = cpb_mat(sq->x, 0, s, D, D);
    CPB_TRY(cpb_gemm(ctx, st, 1, 0, 1.0f, x, block_packed(&b, packed, s, d, 0), 1.0f, block_cols(&b, dw, D, w_heads, d)));
    /* dx += g W[:, blocks]^T: a sum over the blocks, so one GEMM over them side by side
     * (k = nb*n*d), with the blocks' gradients in scratch and, when the blocks are not
     * consecutive columns of W, their columns gathered into wg */
    cpb_view g = cpb_mat(packed, 0, s, K, K);
    if (b.nb > 1) {
        if (!scratch)
            return cpb_fail(ctx, CPB_ERR_INVALID, "a2a gradient of '%s': %d blocks need a scratch buffer for the dx GEMM",
                            w->name, b.nb);
        CPB_TRY(cpb_copy(ctx, st, block_side(&b, scratch, s, d), block_packed(&b, packed, s, d, 0)));
        g = cpb_mat(scratch, 0, s, K, K);
    }
    cpb_view wmat = cpb_mat(w, (int64_t)b.h0 * d, D, K, (int64_t)w_heads * d);
    if (!block_contiguous(&b)) {
        if (!wg)
            return cpb_fail(ctx, CPB_ERR_INVALID, "a2a gradient: heads of '%s' are not consecutive columns and no gather "
                            "buffer was given (cpb_a2a_needs_gather)", w->name);
        CPB_TRY(cpb_copy(ctx, st, block_side(&b, wg, D, d), block_cols(&b, w, D, w_heads, d)));
        wmat = cpb_mat(wg, 0, D, K, K);
    }
    return cpb_gemm(ctx, st, 0, 1, 1.0f, g, wmat, 1.0f, cpb_mat(dx, 0, s, D, D));
}

int cpb_a2a_out_grad(cpb_ctx *ctx, int st, const cpb_a2a_map *m, const cpb_a2a_seq *sq,
                     cpb_buf *dy, cpb_buf *wo, cpb_buf *packed)
{
    cpb_view g = cpb_mat(dy, 0, sq->s, sq->D, sq->D);
    blocks b = blocks_of(m);
    if (b.regular) {
        CPB_TRY(cpb_gemm(ctx, st, 0, 1, 1.0f, g, block_wo_rows(&b, wo, sq->D, sq->d), 0.0f,
                         block_packed(&b, packed, sq->s, sq->d, 0)));
        for (int t = 1; t < b.rep; t++)
            CPB_TRY(cpb_copy(ctx, st, block_packed(&b, packed, sq->s, sq->d, t), block_packed(&b, packed, sq->s, sq->d, 0)));
        return CPB_OK;
    }
    piece ps[CPB_MAX_HEADS];
    for (int j = 0; j < m->C; j++) {
        int np = pieces_of(m, j, ps);
        for (int i = 0; i < np; i++)
            CPB_TRY(cpb_gemm(ctx, st, 0, 1, 1.0f, g, wo_rows_piece(wo, sq->D, sq->d, &ps[i]), 0.0f,
                             packed_piece(m, packed, sq->s, sq->d, j, &ps[i])));
    }
    return CPB_OK;
}

int cpb_a2a_grad_wo(cpb_ctx *ctx, int st, const cpb_a2a_map *m, const cpb_a2a_seq *sq,
                    cpb_buf *o, int o_heads, cpb_buf *dy, cpb_buf *dwo)
{
    cpb_view g = cpb_mat(dy, 0, sq->s, sq->D, sq->D);
    blocks b = blocks_of(m);
    if (b.regular && b.rep == 1) {
        cpb_view a = o_heads ? block_cols(&b, o, sq->s, o_heads, sq->d) : block_packed(&b, o, sq->s, sq->d, 0);
        return cpb_gemm(ctx, st, 1, 0, 1.0f, a, g, 1.0f, block_wo_rows(&b, dwo, sq->D, sq->d));
    }
    piece ps[CPB_MAX_HEADS];
    for (int j = 0; j < m->C; j++) {
        int np = pieces_of(m, j, ps);
        for (int i = 0; i < np; i++) {
            cpb_view a = o_heads ? cols_piece(o, sq->s, o_heads, sq->d, &ps[i])
                                 : packed_piece(m, o, sq->s, sq->d, j, &ps[i]);
            CPB_TRY(cpb_gemm(ctx, st, 1, 0, 1.0f, a, g, 1.0f, wo_rows_piece(dwo, sq->D, sq->d, &ps[i])));
        }
    }
    return CPB_OK;
}

int cpb_a2a_delta(cpb_ctx *ctx, int st, const cpb_a2a_map *m, const cpb_a2a_seq *sq,
                  cpb_buf *o, int o_heads, cpb_buf *d_o, cpb_buf *delta)
{
    int64_t s = sq->s, n = m->n;
    int d = sq->d;
    blocks b = blocks_of(m);
    if (b.regular && b.rep == 1 && n == 1) {
        /* one head per chunk: every chunk in one call, a batch of strided heads */
        cpb_view ov = cpb_heads(o, (int64_t)b.h0 * d, s, b.nb, d, (int64_t)o_heads * d, (int64_t)b.cs * d);
        cpb_view dv = cpb_heads(d_o, 0, s, b.nb, d, d, s * d);
        cpb_view dl = cpb_heads(delta, 0, s, b.nb, 1, 1, s);
        return cpb_attn_delta(ctx, st, ov, dv, dl);
    }
    for (int j = 0; j < m->C; j++) {
        if (b.regular && b.rep == 1) { /* the chunk's n consecutive heads in one call */
            int h = m->head[(size_t)j * m->n];
            cpb_view ov = cpb_heads(o, (int64_t)h * d, s, m->n, d, (int64_t)o_heads * d, d);
            cpb_view dv = cpb_heads(d_o, (int64_t)j * s * n * d, s, m->n, d, n * d, d);
            cpb_view dl = cpb_heads(delta, (int64_t)j * s * n, s, m->n, 1, n, 1);
            CPB_TRY(cpb_attn_delta(ctx, st, ov, dv, dl));
            continue;
        }
        /* one head at a time: the o heads may be any columns of the seq-layout tensor */
        for (int i = 0; i < m->n; i++) {
            int h = m->head[(size_t)j * m->n + i];
            cpb_view ov = cpb_heads(o, (int64_t)h * d, s, 1, d, (int64_t)o_heads * d, d);
            cpb_view dv = cpb_heads(d_o, (int64_t)j * s * n * d + (int64_t)i * d, s, 1, d, n * d, d);
            cpb_view dl = cpb_heads(delta, (int64_t)j * s * n + i, s, 1, 1, n, 1);
            CPB_TRY(cpb_attn_delta(ctx, st, ov, dv, dl));
        }
    }
    return CPB_OK;
}
