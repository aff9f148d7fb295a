/* ag_attn.h — all-gather context-parallel attention over a group: every rank gathers the
 * group's K,V (kv heads only, a few at a time) and computes its own queries against them;
 * the backward reduce-scatters the gathered dK,dV back to their owners.
 *
 * Layout and blocks are those of common/block_iter.h (zigzag here): step i computes
 * against slot src = rr - i of the gathered K,V, the block the ring would compute at its
 * step i with the K,V it received.  So every rank issues the same ops of the same sizes in
 * the same order (DESIGN section 3), and the result equals ring's.
 *
 * kv heads are gathered `hs` at a time (--kv-head-stride, ring-flash-attention's
 * heads_k_stride): a group of hs kv heads and their hs*g query heads is packed, gathered
 * on the comm stream into one of two buffers while the previous group is computed (double
 * buffering), so the gathered K,V never hold more than 2 groups' worth.
 *
 * te = 1: TransformerEngine's schedule (AttnFuncWithCPAndKVAllGather) instead of the
 * blocks: the gathered K,V are reordered into sequence order, and each local chunk (global
 * chunk ch) makes one call against the whole prefix [0, (ch+1)c) with a bottom-right
 * causal mask (q_pos0 - k_pos0 = sk - sq, which our kernels serve); its output is final,
 * no merge.  The calls' key lengths differ by rank ((rr+1)c and (2R-rr)c: equal sums). */
#ifndef CPB_AG_ATTN_H
#define CPB_AG_ATTN_H

#include "common/ring_attn.h"

typedef struct ag_cfg {
    cpb_ring_cfg r;     /* group, comm stream, chunk, heads, storage dtype, layout (zigzag) */
    int hs;             /* kv heads per gather: divides r.hk */
    cpb_dtype grad_dt;  /* dtype of the gathered dK,dV accumulator and its reduce-scatter */
    int te;             /* 1: TransformerEngine's one call per local chunk (above) */
} ag_cfg;

/* Forward.  q [rows][hq][d], kv the rank's packed K,V [2][rows][hk][d] (kept intact);
 * writes o ([rows][hq][d], any dtype) and lse (fp32 [hq][rows]). */
int ag_attn_fwd(cpb_ctx *ctx, const ag_cfg *cfg, cpb_view q, cpb_buf *kv, cpb_view o, cpb_view lse);

/* Backward.  q, kv, o, lse as in forward, d_o [rows][hq][d]; writes dq (fp32
 * [rows][hq][d]) and dkv (fp32 packed [2][rows][hk][d]: the gradients of this rank's own
 * K,V, summed over every rank that read them). */
int ag_attn_bwd(cpb_ctx *ctx, const ag_cfg *cfg, cpb_view q, cpb_buf *kv, cpb_view o, cpb_view d_o,
                cpb_view lse, cpb_view dq, cpb_buf *dkv);

#endif
