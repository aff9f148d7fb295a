/* hupipe.h — hybrid UPipe: UPipe's head stages inside each Ulysses group times a zigzag
 * ring across the groups (DESIGN.md section 4, "usp and hybrid upipe"; the grid and its
 * token layout in common/grid.h, the stage schedule in common/head_stages.h with the
 * Ulysses degree u in place of C).
 *
 * Per stage of U query heads (--head-chunk, default u; m = U/u per rank): project the
 * stage's q heads (and k, v at a kv change) for the local tokens, exchange seq->head inside
 * the Ulysses group, permute to ring order, zigzag ring attention of the stage over the
 * ring group, o back into the stage's columns of the sequence-layout o.  y = o Wo once.
 * Saves x, o [s][H*d] and the per-stage lse only; backward per stage as upipe does, with
 * the ring backward for the attention. */
#ifndef CPB_HUPIPE_H
#define CPB_HUPIPE_H

#include "common/head_stages.h"
#include "usp/usp.h"

typedef struct hupipe_plan {
    usp_shape sh;     /* grid, sequence side, the ring (hq, hk set per stage here) */
    cpb_stages st;    /* over the Ulysses group */
    int64_t Nm, Nkm;  /* elements of a stage's head tensor: 2c*m*d, 2c*nk*d */
} hupipe_plan;

/* what forward saves: o [s][H*d] (sequence layout) and lse fp32 [H/u][2c] (ring order;
 * stage t: heads t*m .. t*m+m-1) */
typedef struct hupipe_state {
    cpb_buf *oseq, *lse;
} hupipe_state;

int hupipe_check(const cpb_problem *p, char *why, size_t why_len);
int hupipe_plan_of(cpb_ctx *ctx, const cpb_layer *L, hupipe_plan *pl);
/* the ring of stage t (m query heads, nk kv heads); kv_scratch when t is the last stage on
 * its kv heads, whose K,V are dead after its attention */
cpb_ring_cfg hupipe_ring(const hupipe_plan *pl, int t);
/* fp32 [m][2c] lse view of stage t */
cpb_view hupipe_lse(const hupipe_plan *pl, cpb_buf *lse, int t);

/* project one stage tensor for the local tokens into `send` (packed), exchange it inside
 * the Ulysses group into `recv` and permute it to ring order into dst at dst_off */
int hupipe_project(cpb_ctx *ctx, const hupipe_plan *pl, const char *what, const cpb_a2a_map *m, cpb_buf *w,
                   int w_heads, int rope, cpb_buf *send, cpb_buf *recv, cpb_buf *dst, int64_t dst_off);
/* stage t's K,V (ring order, packed [K | V]) into kv; `tmp` holds Nkm elements */
int hupipe_project_kv(cpb_ctx *ctx, cpb_layer *L, const hupipe_plan *pl, const cpb_a2a_map *kvm, cpb_buf *tmp,
                      cpb_buf *kv);

int hupipe_forward(cpb_ctx *ctx, cpb_layer *L, void *state);
int hupipe_backward(cpb_ctx *ctx, cpb_layer *L, void *state);

#endif
