/* head_stages.h — UPipe's head-stage schedule (DESIGN.md section 4, "upipe") over a group
 * of C ranks, for methods that run it inside a sub-group (hupipe: C = the Ulysses degree).
 * The same schedule as methods/upipe/upipe_plan.c, written against a group size rather
 * than the world so both levels of a grid can use it.
 *
 * Stages of U query heads (U a multiple of C dividing H), m = U/C heads per rank per stage.
 *   G >= C: rank r's kv heads are j*C + r, its query heads in order (j*C + r)*g + i for
 *           j, then i = 0..g-1; stage t takes entries t*m .. t*m+m-1 (needs g % m == 0 or
 *           m % g == 0, so a stage uses nk = max(1, m/g) whole kv heads);
 *   G <  C: rep = C/G ranks share kv head r/rep; rank r's query heads are
 *           kv*g + (r mod rep)*(H/C) + t*m + k, k = 0..m-1 (one kv head for all stages). */
#ifndef CPB_HEAD_STAGES_H
#define CPB_HEAD_STAGES_H

#include "common/a2a.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cpb_stages {
    int C, H, G;
    int U, m, g, nk, nstage;
} cpb_stages;

/* U = 0 means the default U = C.  Fails (with a reason naming `name`) when U % C, H % U,
 * or the kv alignment of G >= C does not hold; C, H, G themselves are the caller's to check. */
int cpb_stages_check(const char *name, int C, int H, int G, int U, char *why, size_t why_len);
int cpb_stages_of(int C, int H, int G, int U, cpb_stages *s);
/* stage t's query-head and kv-head maps: chunk r = what group member r works on */
void cpb_stages_maps(const cpb_stages *s, int t, cpb_a2a_map *q, cpb_a2a_map *kv);
/* 1 when stage t works on other kv heads than stage t-1 (always for t == 0) */
int cpb_stages_kv_changes(const cpb_stages *s, int t);
/* 1 when stage t is the last on its kv heads */
int cpb_stages_kv_last(const cpb_stages *s, int t);
/* the largest gathered-weight buffer (elements) any stage's q or kv map needs for the one
 * dx GEMM of cpb_a2a_grad_project; 0 when every map is consecutive columns of W */
int64_t cpb_stages_gather_elems(const cpb_stages *s, int64_t D, int d);

#ifdef __cplusplus
}
#endif
#endif
