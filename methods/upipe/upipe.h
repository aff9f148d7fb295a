/* upipe.h — UPipe ("Untied Ulysses", the seed paper; DESIGN.md section 4): Ulysses in
 * stages of U query heads (m = U/C per rank per stage) that reuse one set of projection
 * and all-to-all buffers, so the head-sharded activations exist for one stage at a time.
 *
 * Head schedule (GQA): each rank's query heads are ordered so that consecutive stages
 * share K,V, which are projected and exchanged only when the stage moves to new kv heads.
 *   G >= C: rank r's kv heads are j*C + r (j = 0..G/C-1), its query heads in order
 *           (j*C + r)*g + i for j, then i; stage t takes entries t*m .. t*m+m-1.
 *   G <  C: rep = C/G ranks share kv head r/rep; rank r's query heads are
 *           kv*g + (r mod rep)*(H/C) + t*m + k, k = 0..m-1 (K,V exchanged once).
 * The stage's heads are strided columns of Wq (and rows of Wo): the shared a2a helpers
 * address them with one batched GEMM per stage and projection; the backward's one dx GEMM
 * per stage reads them gathered side by side (upipe_gather_elems, a tracked buffer). */
#ifndef CPB_UPIPE_H
#define CPB_UPIPE_H

#include "ulysses/ulysses.h"

typedef struct upipe_plan {
    cpb_uly_shape u;
    int U, m, nstage;
    int nk;  /* kv heads per rank per stage */
    int g;   /* query heads per kv head */
} upipe_plan;

int upipe_check(const cpb_problem *p, char *why, size_t why_len);
int upipe_plan_of(const cpb_layer *L, upipe_plan *pl);
/* the stage's query-head and kv-head maps (chunk r = what rank r works on) */
void upipe_stage_maps(const upipe_plan *pl, int t, cpb_a2a_map *q, cpb_a2a_map *kv);
/* 1 when stage t works on other kv heads than stage t-1 (always for t == 0) */
int upipe_kv_changes(const upipe_plan *pl, int t);
/* elements of the gathered-weight buffer the stages' dx GEMMs need (0: none) */
int64_t upipe_gather_elems(const upipe_plan *pl);

int upipe_forward(cpb_ctx *ctx, cpb_layer *L, void *state);
int upipe_backward(cpb_ctx *ctx, cpb_layer *L, void *state);

/* what forward saves: o before Wo [s][H*d] (sequence-sharded) and lse [H/C][S], the
 * head-sharded statistics of every stage (stage t: heads t*m .. t*m+m-1) */
typedef struct upipe_state {
    cpb_buf *oseq, *lse;
} upipe_state;

#endif
