/* ulysses.h — DeepSpeed Ulysses (DESIGN.md section 4), shared with offload.
 *
 * Per rank: hc = H/C query heads and hk kv heads (G/C, or 1 replicated kv head when
 * G < C) after the exchange.  Forward: q, k, v projected straight into packed seq->head
 * send buffers (RoPE at the global positions), exchanged one at a time, causal attention
 * over all S tokens, o exchanged back and unpacked, y = o Wo.  Saved for backward: the
 * head-sharded q, k, v, o, lse (and the layer input x, which the harness keeps).  The
 * Wo input (o in sequence layout) is not saved: backward exchanges o again for dWo. */
#ifndef CPB_ULYSSES_H
#define CPB_ULYSSES_H

#include "common/a2a.h"
#include "cpb_method.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { ULY_Q, ULY_K, ULY_V, ULY_O, ULY_LSE, ULY_NSAVED };

typedef struct cpb_uly_shape {
    int64_t S, s, D;
    int H, G, d, C, hc, hk;
    cpb_a2a_map qmap, kvmap;
    cpb_a2a_seq seq;      /* x, positions, RoPE base */
} cpb_uly_shape;

/* what forward keeps for backward: head tensors [S][hc|hk][d] and lse [hc][S] fp32 */
typedef struct cpb_uly_saved {
    cpb_buf *t[ULY_NSAVED];
} cpb_uly_saved;

/* Hooks that let offload move the saved tensors to the host as they appear. */
typedef struct cpb_uly_hooks {
    void *user;
    /* tensor `which` was just written on the compute stream */
    int (*produced)(cpb_ctx *ctx, void *user, int which, cpb_buf *b);
    /* the forward will not touch it again; the hook may free it (and set *b to NULL) */
    int (*done)(cpb_ctx *ctx, void *user, int which, cpb_buf **b);
} cpb_uly_hooks;

/* the constraint check shared by the Ulysses family; `name` starts the message */
int cpb_uly_check(const char *name, const cpb_problem *p, char *why, size_t why_len);
int cpb_uly_shape_of(const cpb_layer *L, cpb_uly_shape *u);

/* forward (ranges are the caller's); hooks may be NULL */
int cpb_uly_forward(cpb_ctx *ctx, cpb_layer *L, const cpb_uly_shape *u, const cpb_uly_hooks *hooks,
                    cpb_uly_saved *sv);

#ifdef __cplusplus
}
#endif
#endif
