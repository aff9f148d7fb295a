/* ring_attn.h — ring attention over a group of ranks (zigzag, contiguous or striped), forward and backward.
 *
 * Shared by ring (the whole world is the ring), metp (an inner ring per head group), a
 * hybrid usp (a ring over the ring group of a Ulysses x ring grid) and dring (the same ring
 * cut into inner rings: cfg->inner, common/dring_attn.h); allgather uses its projection
 * and packed K,V views.  The caller owns the
 * projections; this module owns the rotation of K,V (and dK,dV in backward) and the
 * step logic.
 *
 * Layouts and step logic are common/block_iter.h's: zigzag (the default; the ring's share
 * of the sequence is cut into 2R chunks of c tokens, group rank rr holds chunk rr in local
 * rows [0, c) and chunk 2R-1-rr in rows [c, 2c)), contiguous and striped (one "chunk" of
 * c tokens per rank).  Positions inside the ring are ring positions (only their order
 * matters to the causal masks, so a ring over a sub-sequence works the same).  Step i
 * works on the K,V of source rank src = rr - i (mod R); this module supplies only where
 * that K,V comes from: the rotation.  Under zigzag every step after 0 is two c x c blocks
 * (equal work on every rank); every layout issues the same ops of the same sizes on
 * every rank (DESIGN section 3).
 *
 * K and V travel packed in one buffer, [2][rows][hk][d]: K rows, then V rows, so one
 * sendrecv moves both.  Rotation is double buffered on the caller's comm stream: the
 * next block arrives while the current one is computed.
 */
#ifndef CPB_RING_ATTN_H
#define CPB_RING_ATTN_H

#include "common/block_iter.h"
#include "cpb.h"
#include "cpb_method.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cpb_ring_cfg {
    cpb_group *g;     /* the ring (NULL = world) */
    int comm_stream;  /* stream of the rotations (sendrecv) */
    int64_t c;        /* tokens per chunk: local rows = cpb_ring_rows (2c under zigzag) */
    int hq, hk, d;    /* local query heads, kv heads, head dim */
    cpb_dtype dtype;  /* storage dtype of q and the packed K,V */
    int kv_scratch;   /* 1: the caller's K,V buffer is dead after the call and may take part
                         in the rotation (two K,V buffers in all); 0: it is kept intact (saved
                         for backward), so R >= 3 rotates through two more buffers */
    cpb_blk_layout layout; /* which tokens a rank holds (CPB_BLK_ZIGZAG = 0) */
    int inner;        /* ranks per inner ring of a double ring (common/dring_attn.h); 0 or the
                         ring's size: one ring */
} cpb_ring_cfg;

/* 1 when cuDNN may serve p's attention calls (docs/attention.md: --attn is not `own`, bf16,
 * head dim a multiple of 8 up to 128).  A schedule whose calls have masks or lengths that
 * differ by rank (ring's striped and contiguous layouts, allgather's TE schedule) would
 * then run cuDNN on some ranks and our kernels on others, or cuDNN's temporaries sized by
 * rank-dependent lengths: the ranks would allocate differently (DESIGN section 3). */
int cpb_ring_cudnn_may_serve(const cpb_problem *p);

/* local rows (tokens) of a rank: cpb_blk_chunks(layout) * c */
int64_t cpb_ring_rows(const cpb_ring_cfg *cfg);
/* elements of a packed K,V buffer: 2 * rows * hk * d */
int64_t cpb_ring_kv_elems(const cpb_ring_cfg *cfg);
/* views of the K or V half of a packed buffer, as [rows][hk][d] */
cpb_view cpb_ring_k(const cpb_ring_cfg *cfg, cpb_buf *kv);
cpb_view cpb_ring_v(const cpb_ring_cfg *cfg, cpb_buf *kv);

/* Project q and the packed K,V for the local tokens and apply RoPE at `pos`:
 * q = x Wq (into q, [rows][hq][d]), K = x Wk, V = x Wv into kv.  x is [rows][D]; wq is
 * [D][hq*d], wk and wv are [D][hk*d] (any leading dimensions). */
int cpb_ring_project(cpb_ctx *ctx, const cpb_ring_cfg *cfg, cpb_view x, cpb_view wq, cpb_view wk,
                     cpb_view wv, const cpb_segs *pos, double rope_base, cpb_view q, cpb_buf *kv);

/* Forward.  q [rows][hq][d]; kv: the rank's own packed K,V (overwritten only with
 * cfg->kv_scratch).
 * Writes o ([rows][hq][d], any dtype, may be strided) and lse (fp32 [hq][rows] view).
 * Temporaries: the K,V ring buffers, an fp32 o accumulator, one block's fp32 partial. */
int cpb_ring_attn_fwd(cpb_ctx *ctx, const cpb_ring_cfg *cfg, cpb_view q, cpb_buf *kv, cpb_view o,
                      cpb_view lse);

/* Backward.  q, kv, lse as in forward; d_o [rows][hq][d]; delta = rowsum(dO * o) as an fp32
 * [hq][rows] view, or delta.buf == NULL to compute it here from o.  Writes dq (fp32
 * [rows][hq][d]) and dkv (fp32 packed [2][rows][hk][d]: the gradients of this rank's own K,V,
 * after their R hops around the ring). */
int cpb_ring_attn_bwd(cpb_ctx *ctx, const cpb_ring_cfg *cfg, cpb_view q, cpb_buf *kv, cpb_view o,
                      cpb_view d_o, cpb_view lse, cpb_view delta, cpb_view dq, cpb_buf *dkv);

/* The backward's tail for a schedule whose q and packed K,V are laid out as this module's
 * (ring, allgather): RoPE backward in fp32 on dq and dK (at the layer's tokens), the
 * gradients copied in the storage dtype into the dead q and K,V buffers, then the shared
 * projection epilogue (common/proj_bwd.h: dx and the dWq, dWk, dWv partials, overwritten).
 * Frees dq, dkv, kv and q (all four pointers are NULL after). */
int cpb_ring_grad_project(cpb_ctx *ctx, const cpb_ring_cfg *cfg, cpb_layer *L, cpb_buf **q, cpb_buf **kv,
                          cpb_buf **dq, cpb_buf **dkv);

#ifdef __cplusplus
}
#endif
#endif
