/* a2a.h — the Ulysses building blocks shared by ulysses, upipe, offload (and a hybrid usp):
 * head maps, projections straight into packed all-to-all send buffers, the exchange, the
 * unpacking, and the gradients of the projections on the sequence side.
 *
 * Packed layout.  A packed buffer holds C chunks, one per member of the group, each
 * [rows][n][d] contiguous: chunk j is what goes to (seq->head) or came from (head->seq)
 * member j.  A head map says which global head sits in slot i of chunk j.
 *
 *   seq->head: rank r projects the heads of every chunk for its s tokens into the packed
 *              send buffer; after the all-to-all, the receive buffer is [C][s][n][d] =
 *              [S][n][d], the n heads of chunk r for all S tokens in global order (the
 *              layout is contiguous, so rank j's tokens are rows [j*s, (j+1)*s)).
 *   head->seq: the head tensor [S][n][d] is itself a packed send buffer (chunk j = rank j's
 *              tokens); the receive buffer's chunk j holds this rank's s tokens of the heads
 *              of member j's chunk.
 *
 * KV replication (G < C): several chunks carry the same kv head; the projection computes it
 * once and copies it, and on the way back the gradients of the replicas are summed by
 * accumulating every chunk into the fp32 dW and dx accumulators.
 *
 * The heads of a chunk need not be contiguous (upipe's stages take strided heads).  When
 * the chunks are copies of blocks of consecutive heads at a constant stride (every map of
 * the family: a2a.c, blocks_of), each op is ONE GEMM or copy batched over the blocks (the
 * views' heads with head_stride), as the references issue one GEMM per projection or
 * stage; any other head list falls back to one op per chunk (a batch over its runs) or
 * per head.
 */
#ifndef CPB_A2A_H
#define CPB_A2A_H

#include "cpb.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which global head sits in each slot of each chunk: head[j*n + i]. */
typedef struct cpb_a2a_map {
    int C, n;
    int head[CPB_MAX_HEADS];
} cpb_a2a_map;

/* Ulysses maps: chunk j = query heads [j*H/C, (j+1)*H/C) */
int cpb_a2a_map_q(cpb_a2a_map *m, int C, int H);
/* chunk j = kv heads [j*G/C, ...) when G >= C; the kv head of member j's query heads,
 * j / (C/G), when G < C (replicated) */
int cpb_a2a_map_kv(cpb_a2a_map *m, int C, int G);
/* element count of a packed buffer of `rows` rows per chunk */
int64_t cpb_a2a_elems(const cpb_a2a_map *m, int64_t rows, int d);

/* Sequence-side operands of the projections: x [s][D], weights with w_heads heads of d. */
typedef struct cpb_a2a_seq {
    int64_t s, D;
    int d;
    cpb_buf *x;          /* [s][D] storage dtype */
    const cpb_segs *pos; /* global positions of x's rows (RoPE) */
    double rope_base;    /* 0: no RoPE (v) */
} cpb_a2a_seq;

/* packed[j] = RoPE(x * W[:, heads of chunk j]).  Chunks repeating an earlier chunk's heads
 * are copied from it. */
int cpb_a2a_project(cpb_ctx *ctx, int st, const cpb_a2a_map *m, const cpb_a2a_seq *sq,
                    cpb_buf *w, int w_heads, cpb_buf *packed);

/* all-to-all of the first cpb_a2a_elems(m, rows, d) elements of send into recv */
int cpb_a2a_exchange(cpb_ctx *ctx, int st, const cpb_a2a_map *m, int64_t rows, int d,
                     cpb_buf *send, cpb_buf *recv);

/* chunk j <- the heads of chunk j of src [rows][src_heads][d] (a seq-layout tensor): the
 * inverse of cpb_a2a_unpack, for a saved tensor that travels seq->head as it is */
int cpb_a2a_pack(cpb_ctx *ctx, int st, const cpb_a2a_map *m, int64_t rows, int d,
                 cpb_buf *src, int src_heads, cpb_buf *packed);

/* dst [rows][dst_heads][d] (a seq-layout tensor), heads of chunk j <- chunk j */
int cpb_a2a_unpack(cpb_ctx *ctx, int st, const cpb_a2a_map *m, int64_t rows, int d,
                   cpb_buf *packed, cpb_buf *dst, int dst_heads);

/* Gradient of the projection, from a packed head->seq receive buffer holding dL/d(proj
 * output) for this rank's tokens: the replicas of a replicated head summed, RoPE backward
 * in place (when sq->rope_base > 0), then dw[:, heads] += x^T g (one GEMM batched over the
 * map's blocks) and dx += g W[:, heads]^T as ONE GEMM over all of them (k = the map's
 * heads x d), as the references do one addmm per projection or stage.  For that GEMM the
 * blocks are laid side by side in `scratch` ([s][heads*d]; the head tensor that was just
 * sent is free for it; unused when the map is one block), and when the heads are not
 * consecutive columns of W those columns are gathered into `wg` ([D][heads*d],
 * cpb_a2a_gather_elems; NULL when cpb_a2a_needs_gather says no).  dw is fp32; dx
 * accumulates in its own dtype (ulysses, upipe, offload, usp, hupipe). */
int cpb_a2a_grad_project(cpb_ctx *ctx, int st, const cpb_a2a_map *m, const cpb_a2a_seq *sq,
                         cpb_buf *packed, cpb_buf *scratch, cpb_buf *wg, cpb_buf *w, int w_heads,
                         cpb_buf *dw, cpb_buf *dx);
/* 1 when the map's heads are not consecutive columns of W: cpb_a2a_grad_project then needs
 * the gathered weight buffer of cpb_a2a_gather_elems(m, D, d) elements */
int cpb_a2a_needs_gather(const cpb_a2a_map *m);
int64_t cpb_a2a_gather_elems(const cpb_a2a_map *m, int64_t D, int d);
/* the gathered-weight elements map m needs: cpb_a2a_gather_elems when it needs them, else 0
 * (a method sizes one gather buffer for the largest need over its maps) */
int64_t cpb_a2a_gather_need(const cpb_a2a_map *m, int64_t D, int d);

/* dO of the chunk heads from the layer's output gradient: packed[j] = dy Wo[rows of the
 * heads of chunk j]^T.  dy [s][D], wo [H*d][D]. */
int cpb_a2a_out_grad(cpb_ctx *ctx, int st, const cpb_a2a_map *m, const cpb_a2a_seq *sq,
                     cpb_buf *dy, cpb_buf *wo, cpb_buf *packed);

/* dWo rows of the chunk heads += o^T dy, where o comes either from a packed head->seq
 * receive buffer (o_heads == 0) or from a seq-layout [s][o_heads][d] tensor. */
int cpb_a2a_grad_wo(cpb_ctx *ctx, int st, const cpb_a2a_map *m, const cpb_a2a_seq *sq,
                    cpb_buf *o, int o_heads, cpb_buf *dy, cpb_buf *dwo);

/* delta = rowsum(dO * o) for the chunk heads, before the exchange: o is seq-layout
 * [s][o_heads][d], d_o packed, delta packed fp32 [C][s][n] (token-major, so the received
 * [S][n] is one strided view: cpb_a2a_delta_view). */
int cpb_a2a_delta(cpb_ctx *ctx, int st, const cpb_a2a_map *m, const cpb_a2a_seq *sq,
                  cpb_buf *o, int o_heads, cpb_buf *d_o, cpb_buf *delta);
/* the received token-major delta [S][n] as an fp32 [heads][tokens] view */
cpb_view cpb_a2a_delta_view(cpb_buf *delta, int64_t S, int n);

/* [rows][n][d] view of a contiguous head tensor */
cpb_view cpb_a2a_head_view(cpb_buf *b, int64_t rows, int n, int d);


#ifdef __cplusplus
}
#endif
#endif
