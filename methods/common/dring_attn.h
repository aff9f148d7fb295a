/* dring_attn.h — double-ring attention (LoongTrain's 2D-Attention, Gu et al. 2024,
 * arXiv 2406.18485, "double-ring-attention"): ring attention whose ring of R ranks is cut
 * into R/w windows of w consecutive ring ranks (cpb_ring_cfg.inner = w).
 *
 * Rank rr = win*w + i.  Outer step o (0 .. R/w-1) starts from the K,V of rank (win-o, i):
 * its own at o = 0, later the one the outer ring brought, sent by rank (win-1, i) during
 * the previous outer step (so the outer transfer overlaps a whole inner ring).  Inside an
 * outer step the K,V rotate around the window (w inner steps, double buffered): at inner
 * step k the rank holds the K,V of (win-o, i-k).  Every rank visits every source once; the
 * blocks are common/block_iter.h's for that source.  With the grid of common/grid.h (ring
 * ranks u apart) a window spans w*u consecutive ranks: when that fits in a node the inner
 * rings run on NVLink and only the outer ring crosses the network, as LoongTrain places
 * them.
 *
 * Backward: the dK,dV of the K,V being visited travel around the window with it (fp32)
 * and come back to the rank that started the outer step with that K,V; that window sum is
 * added to an outer travelling sum, which goes around the outer ring and reaches the
 * K,V's owner after R/w outer steps. */
#ifndef CPB_DRING_ATTN_H
#define CPB_DRING_ATTN_H

#include "common/ring_attn.h"

/* The inner ring size of p's double ring: --inner-ring, or when that is 0 the largest w
 * dividing the ring degree R whose window (w rings ranks, u apart: w*u consecutive ranks)
 * fits a node of 8 GPUs (common/grid.h makes the same node assumption); 0 when p has no
 * inner_ring knob (usp, hupipe: one ring). */
int cpb_dring_inner(const cpb_problem *p);

/* as cpb_ring_attn_fwd / _bwd, for 1 <= cfg->inner < R dividing R */
int cpb_dring_attn_fwd(cpb_ctx *ctx, const cpb_ring_cfg *cfg, cpb_view q, cpb_buf *kv, cpb_view o, cpb_view lse);
int cpb_dring_attn_bwd(cpb_ctx *ctx, const cpb_ring_cfg *cfg, cpb_view q, cpb_buf *kv, cpb_view o, cpb_view d_o,
                       cpb_view lse, cpb_view delta, cpb_view dq, cpb_buf *dkv);

#endif
