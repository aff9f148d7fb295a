/* offload.h — activation offloading on top of Ulysses (DESIGN.md section 4).
 *
 * Forward is Ulysses' (same allocations, so the same transient peak); each saved tensor
 * (x and the head-sharded q, k, v, o, lse) is copied to pinned host memory on the "copy"
 * stream as soon as it is produced and freed on the device after its last forward use.
 * Backward goes head group by head group (og = --offload-group heads per rank): the next
 * group's q, k, v, o, lse are fetched into the other of two device slots while the current
 * group computes, so the backward holds two head groups, not all heads.  (x's host copy
 * stands for the layer input a checkpointed model would offload; the backward uses the
 * layer's own x, which the trial keeps on the device for every method.)
 *
 * Host layout: q and o group-major [ng][S][og][d] so a group's fetch is one contiguous
 * span; lse [hc][S] (a group is contiguous already); k, v [S][hk][d] (a group fetches the
 * kv heads its query heads use). */
#ifndef CPB_OFFLOAD_H
#define CPB_OFFLOAD_H

#include "ulysses/ulysses.h"

typedef struct off_state {
    int copy;                 /* copy stream */
    int og, ng;               /* heads per group, groups per rank */
    cpb_buf *hx, *hq, *hk, *hv, *ho, *hlse; /* pinned host */
} off_state;

/* the default and the check of --offload-group for H/C heads per rank */
int offload_group_of(const cpb_problem *p);
/* the local kv heads [*a, *a + *nk) that group b's query heads use */
void offload_group_kv(const cpb_uly_shape *u, int og, int b, int *a, int *nk);

int offload_forward(cpb_ctx *ctx, cpb_layer *L, void *state);
int offload_backward(cpb_ctx *ctx, cpb_layer *L, void *state);

#endif
