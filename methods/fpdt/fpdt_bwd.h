/* fpdt_bwd.h — the backward's working set, shared by its two phases: fpdt_bwd_prep.c (dO
 * and delta of every chunk, dWo) and fpdt_bwd.c (the loop over KV chunks). */
#ifndef CPB_FPDT_BWD_H
#define CPB_FPDT_BWD_H

#include "fpdt.h"

typedef struct fpdt_bwd {
    cpb_ctx *ctx;
    cpb_layer *L;
    fpdt_state *st;
    const fpdt_dims *m;
    int comp, copy;
    /* pinned host, made by backward */
    cpb_buf *do_h;            /* [u][chunk][hq][d] dO, head layout ("dO-to-be") */
    cpb_buf *dl_h;            /* [u][hq][chunk] fp32 delta = rowsum(dO * o) (--fpdt-bwd delta) */
    cpb_buf *dq_h;            /* [u-1][chunk][hq][d] fp32 dq accumulators of chunks 1..u-1 */
    /* the KV loop, on the device */
    cpb_buf *kf[2], *vf[2];   /* K_i, V_i of this outer step and the next (prefetch) */
    cpb_buf *dka, *dva;       /* fp32 dK_i, dV_i accumulators */
    cpb_buf *qf[2], *dof[2];  /* q_j, dO_j (double buffer) */
    cpb_buf *lsef[2], *delf[2]; /* lse_j, delta_j (fp32; delta with --fpdt-bwd delta) */
    cpb_buf *of[2];           /* o_j, head layout (--fpdt-bwd o: the attention derives delta) */
    cpb_buf *dqa[2];          /* fp32 dq_j accumulator */
    int nkv_slots, nq_slots;
    /* finishing chunk i: a2a back, dx_i, dW */
    cpb_buf *dqs, *dks, *dvs; /* head side, storage dtype (send) */
    cpb_buf *dqr, *dkr, *dvr; /* packed sequence side (receive) */
    cpb_buf *dqseq, *dkseq, *dvseq; /* [c][H*d], [c][G*d], [c][G*d] */
    cpb_buf *dxa;             /* fp32 [c][D] dx_i accumulator */
    cpb_event ev_kv[2], ev_q[2];
} fpdt_bwd;

/* dO_j = dy_j Wo^T and its a2a to head layout, dWo, and with --fpdt-bwd delta delta_j;
 * dO_j (and delta_j) go to the host; o's sequence-layout copy is freed at the end, its
 * head-layout copy too unless the KV loop loads it (--fpdt-bwd o). */
int fpdt_bwd_prep(fpdt_bwd *B);

#endif
