/* usp.h — USP (Unified Sequence Parallelism): Ulysses inside a node times a zigzag ring
 * across nodes (DESIGN.md section 4, "usp and hybrid upipe"; grid and token layout in
 * common/grid.h).
 *
 * Per rank: hq = H/u query heads and hk kv heads (G/u, or 1 replicated kv head when
 * G < u) of the Ulysses group's two zigzag chunks (2c tokens) after the exchange.
 * Forward: q, k, v projected for the local tokens straight into packed send buffers (RoPE
 * at the global positions), exchanged seq->head inside the Ulysses group and permuted to
 * ring order, zigzag ring attention over the ring group, o permuted back, exchanged
 * head->seq and unpacked, y = o Wo.  Saves the head-sharded q, packed K,V, o and lse (and
 * x, which the harness keeps), as ulysses does.  Backward mirrors it. */
#ifndef CPB_USP_H
#define CPB_USP_H

#include "common/a2a.h"
#include "common/grid.h"
#include "common/ring_attn.h"
#include "cpb_method.h"

typedef struct usp_shape {
    cpb_grid g;
    int64_t s, D;
    int H, G, d, hq, hk;
    int64_t Nq, Nk;           /* elements of a head tensor: 2c*hq*d (= s*H*d), 2c*hk*d */
    cpb_a2a_map qmap, kvmap;  /* over the Ulysses group (C = u) */
    cpb_a2a_seq seq;          /* x, positions, RoPE base */
    cpb_ring_cfg ring;        /* the ring over the ring group */
} usp_shape;

/* what forward keeps: q [2c][hq][d] and o (ring order), packed K,V [2][2c][hk][d] (ring
 * order), lse fp32 [hq][2c] */
typedef struct usp_state {
    cpb_buf *q, *kv, *o, *lse;
} usp_state;

int usp_shape_of(cpb_ctx *ctx, const cpb_layer *L, usp_shape *sh);
/* [2c][n][d] view of a ring-order head tensor */
cpb_view usp_ring_view(const usp_shape *sh, cpb_buf *b, int64_t off, int n);

int usp_forward(cpb_ctx *ctx, cpb_layer *L, void *state);
int usp_backward(cpb_ctx *ctx, cpb_layer *L, void *state);

#endif
