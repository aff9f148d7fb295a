/* metp.c — memory-efficient tensor parallelism (the second seed paper, DESIGN.md section 4,
 * "metp").
 *
 * Weights are sharded like tp (rank r owns head group r); activations stay sequence-
 * sharded (zigzag).  Outer loop over the C head groups j, every rank on the same group:
 * group j's shard is broadcast from rank j (the next one prefetched into a second buffer,
 * metp_shards), q, k, v of group j are projected for the local tokens, an inner zigzag
 * ring (methods/common/ring_attn) rotates group j's K,V over the sequence, and o_j Wo_j is
 * accumulated into y locally (no all-reduce).  Only one group's q, k, v exist at a time.
 *
 * y and dx are sums over the C groups, accumulated straight into the layer's y and dx
 * (each GEMM sums in fp32 and rounds once to the storage dtype).  An fp32 accumulator
 * would cost s*D*4 bytes, twice x — at Llama3-8B, 8M tokens on 8 ranks, 16 GiB, half of
 * METP's intermediate memory; tp sums its C partials in the storage dtype as well (its
 * reduce-scatters), so both see the same kind of rounding; fp32 runs sum in fp32.
 *
 * What forward saves: o (all heads, [s][H*d], storage dtype) and lse (fp32 [H][s]) — the
 * sequence-sharded attention output, which FlashAttention's backward needs (through
 * delta = rowsum(dO * o)) and which is as small as x; q, k, v are recomputed per group in
 * backward, as DESIGN says.  Recomputing o as well would cost a second ring forward per
 * group for s*H*d elements of memory; we keep it.
 *
 * Backward repeats the outer loop: dO_j = dy Wo_j^T, q, k, v of group j recomputed, the
 * ring backward (dK,dV travel back to their owners), dx accumulated locally, and
 * group j's dW reduced to its owner, rank j, while the next group computes.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/proj_bwd.h"
#include "common/ring_attn.h"
#include "cpb_method.h"
#include "metp/metp_shards.h"


typedef struct metp_state {
    cpb_buf *o;   /* [s][H*d] storage dtype, group j at columns [j*hq*d, (j+1)*hq*d) */
    cpb_buf *lse; /* fp32 [H][s] */
} metp_state;

static int metp_check(const cpb_problem *p, char *why, size_t why_len)
{
    if (p->C <= 0 || p->H % p->C) {
        snprintf(why, why_len, "metp shards heads: H = %d query heads must be a multiple of C = %d", p->H, p->C);
        return CPB_ERR_INVALID;
    }
    if (!(p->G % p->C == 0 || p->C % p->G == 0)) {
        snprintf(why, why_len, "metp shards kv heads: G = %d must be a multiple or a divisor of C = %d", p->G,
                 p->C);
        return CPB_ERR_INVALID;
    }
    if (p->S % (2 * (int64_t)p->C)) {
        snprintf(why, why_len, "metp (zigzag ring inside) needs the sequence (S = %lld) to be a multiple of 2C = %d",
                 (long long)p->S, 2 * p->C);
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

/* what every group's loop body needs */
typedef struct metp_run {
    cpb_layer *L;
    metp_state *st;
    cpb_ring_cfg cfg;
    metp_shards W;
    int64_t s, D, hqd, hkd, Hd;
} metp_run;

static int run_open(cpb_ctx *ctx, cpb_layer *L, metp_state *st, metp_run *R)
{
    const cpb_problem *p = &L->p;
    R->L = L;
    R->st = st;
    R->cfg.g = NULL;
    CPB_TRY(cpb_stream(ctx, "comm", &R->cfg.comm_stream));
    R->cfg.c = p->S / (2 * (int64_t)p->C);
    R->cfg.hq = L->shard.nq;
    R->cfg.hk = L->shard.nkv;
    R->cfg.d = p->d;
    R->cfg.dtype = p->dtype;
    R->cfg.kv_scratch = 1; /* a group's K,V is dead after its ring (recomputed in backward) */
    R->cfg.layout = CPB_BLK_ZIGZAG;
    R->cfg.inner = 0;
    R->s = L->s;
    R->D = p->D;
    R->hqd = (int64_t)R->cfg.hq * p->d;
    R->hkd = (int64_t)R->cfg.hk * p->d;
    R->Hd = (int64_t)p->H * p->d;
    if (L->s != 2 * R->cfg.c)
        return cpb_fail(ctx, CPB_ERR_INVALID, "metp: %lld local tokens, expected 2 chunks of %lld",
                        (long long)L->s, (long long)R->cfg.c);
    return metp_shards_open(ctx, L, R->cfg.comm_stream, &R->W);
}

/* group j's columns of the saved o, as heads and as a matrix; its rows of lse */
static cpb_view o_heads(const metp_run *R, int j)
{
    return cpb_heads(R->st->o, j * R->hqd, R->s, R->cfg.hq, R->cfg.d, R->Hd, R->cfg.d);
}

static cpb_view o_mat(const metp_run *R, int j)
{
    return cpb_mat(R->st->o, j * R->hqd, R->s, R->hqd, R->Hd);
}

static cpb_view lse_of(const metp_run *R, int j)
{
    return cpb_lse_view(R->st->lse, R->s, (int64_t)j * R->cfg.hq, R->cfg.hq, 0, R->s);
}

static cpb_view q_heads(const metp_run *R, cpb_buf *b)
{
    return cpb_heads(b, 0, R->s, R->cfg.hq, R->cfg.d, R->hqd, R->cfg.d);
}

/* q and packed K,V of group j for the local tokens (forward, and recomputed in backward) */
static int project(cpb_ctx *ctx, metp_run *R, const metp_group_w *w, cpb_buf **q, cpb_buf **kv)
{
    cpb_layer *L = R->L;
    CPB_TRY(cpb_alloc(ctx, q, R->s * R->hqd, L->p.dtype, CPB_TAG_QKV, "q_group"));
    CPB_TRY(cpb_alloc(ctx, kv, cpb_ring_kv_elems(&R->cfg), L->p.dtype, CPB_TAG_QKV, "kv_group"));
    return cpb_ring_project(ctx, &R->cfg, cpb_mat(L->x, 0, R->s, R->D, R->D), w->wq, w->wk, w->wv, &L->tokens,
                            L->p.rope_base, q_heads(R, *q), *kv);
}

/* ---------------------------------------------------------------- forward */

static int fwd_group(cpb_ctx *ctx, metp_run *R, int j)
{
    int C = R->L->p.C;
    if (j + 1 < C) CPB_TRY(metp_shards_fetch(ctx, &R->W, j + 1)); /* prefetch */
    metp_group_w w;
    CPB_TRY(metp_shards_get(ctx, &R->W, j, &w));
    cpb_buf *q = NULL, *kv = NULL;
    CPB_TRY(project(ctx, R, &w, &q, &kv));
    CPB_TRY(cpb_ring_attn_fwd(ctx, &R->cfg, q_heads(R, q), kv, o_heads(R, j), lse_of(R, j)));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &kv));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &q));
    /* y += o_j Wo_j: the group's share of the output, summed locally */
    return cpb_gemm(ctx, CPB_STREAM_COMPUTE, 0, 0, 1.0f, o_mat(R, j), w.wo, j ? 1.0f : 0.0f,
                    cpb_mat(R->L->y, 0, R->s, R->D, R->D));
}

static int forward_body(cpb_ctx *ctx, cpb_layer *L, metp_state *st)
{
    metp_run R;
    CPB_TRY(run_open(ctx, L, st, &R));
    CPB_TRY(cpb_alloc(ctx, &st->o, R.s * R.Hd, L->p.dtype, CPB_TAG_ATTN, "o"));
    CPB_TRY(cpb_alloc(ctx, &st->lse, R.s * L->p.H, CPB_FP32, CPB_TAG_ATTN, "lse"));
    CPB_TRY(metp_shards_fetch(ctx, &R.W, 0));
    for (int j = 0; j < L->p.C; j++) {
        CPB_RANGE(ctx, fwd_group(ctx, &R, j), "group%d", j);
    }
    return metp_shards_close(ctx, &R.W);
}

/* ---------------------------------------------------------------- backward */

typedef struct bwd_acc {
    cpb_buf *dw;       /* fp32 gradient pack of the current group */
    cpb_event dw_free; /* the previous group's reduce has read the pack */
} bwd_acc;

static int bwd_group(cpb_ctx *ctx, metp_run *R, int j, bwd_acc *A)
{
    cpb_layer *L = R->L;
    int C = L->p.C;
    int64_t s = R->s, D = R->D, hqd = R->hqd, hkd = R->hkd;
    if (j + 1 < C) CPB_TRY(metp_shards_fetch(ctx, &R->W, j + 1));
    metp_group_w w;
    CPB_TRY(metp_shards_get(ctx, &R->W, j, &w));
    cpb_view dy = cpb_mat(L->dy, 0, s, D, D);

    /* dO of the group's heads only */
    cpb_buf *d_o = NULL, *q = NULL, *kv = NULL, *dq = NULL, *dkv = NULL;
    CPB_TRY(cpb_alloc(ctx, &d_o, s * hqd, L->p.dtype, CPB_TAG_GRAD_ACT, "dO_group"));
    CPB_TRY(cpb_gemm(ctx, CPB_STREAM_COMPUTE, 0, 1, 1.0f, dy, w.wo, 0.0f, cpb_mat(d_o, 0, s, hqd, hqd)));

    /* recompute q, K, V of the group; the inner ring backward */
    CPB_TRY(project(ctx, R, &w, &q, &kv));
    CPB_TRY(cpb_alloc(ctx, &dq, s * hqd, CPB_FP32, CPB_TAG_GRAD_ACT, "dq_group"));
    CPB_TRY(cpb_alloc(ctx, &dkv, cpb_ring_kv_elems(&R->cfg), CPB_FP32, CPB_TAG_GRAD_ACT, "dkv_group"));
    cpb_view no_delta = {0};
    CPB_TRY(cpb_ring_attn_bwd(ctx, &R->cfg, q_heads(R, q), kv, o_heads(R, j), q_heads(R, d_o), lse_of(R, j),
                              no_delta, q_heads(R, dq), dkv));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &d_o));

    /* RoPE backward in fp32; gradients into the dead q, K,V buffers in the storage dtype */
    CPB_TRY(cpb_rope(ctx, CPB_STREAM_COMPUTE, q_heads(R, dq), &L->tokens, L->p.rope_base, 1));
    CPB_TRY(cpb_rope(ctx, CPB_STREAM_COMPUTE, cpb_ring_k(&R->cfg, dkv), &L->tokens, L->p.rope_base, 1));
    CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_whole(q), cpb_whole(dq)));
    CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_whole(kv), cpb_whole(dkv)));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &dkv));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &dq));
    cpb_view dqm = cpb_mat(q, 0, s, hqd, hqd);
    cpb_view dkm = cpb_mat(kv, 0, s, hkd, hkd), dvm = cpb_mat(kv, s * hkd, s, hkd, hkd);

    /* dx += d(q, k, v) W_j^T, summed locally */
    cpb_view dx = cpb_mat(L->dx, 0, s, D, D);
    cpb_qkv_views grad = {dqm, dkm, dvm};
    CPB_TRY(cpb_proj_bwd_dx(ctx, CPB_STREAM_COMPUTE, grad, (cpb_qkv_views){w.wq, w.wk, w.wv}, j ? 1.0f : 0.0f, dx));

    /* the group's dW partials (pack free once the previous group's reduce read it) */
    if (j > 0) CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, A->dw_free));
    metp_group_w g = metp_grad_views(&R->W, A->dw);
    cpb_view x = cpb_mat(L->x, 0, s, D, D);
    CPB_TRY(cpb_proj_bwd_dw(ctx, CPB_STREAM_COMPUTE, x, grad, 0.0f, (cpb_qkv_views){g.wq, g.wk, g.wv}));
    CPB_TRY(cpb_gemm(ctx, CPB_STREAM_COMPUTE, 1, 0, 1.0f, o_mat(R, j), dy, 0.0f, g.wo));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &kv));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &q));
    /* to the owner, rank j, while the next group computes */
    return metp_grads_reduce(ctx, &R->W, A->dw, j, &A->dw_free);
}

static int backward_body(cpb_ctx *ctx, cpb_layer *L, metp_state *st)
{
    metp_run R;
    CPB_TRY(run_open(ctx, L, st, &R));
    bwd_acc A = {NULL, {-1}};
    CPB_TRY(cpb_alloc(ctx, &A.dw, metp_shard_elems(L), CPB_FP32, CPB_TAG_GATHER, "dw_group"));
    CPB_TRY(metp_shards_fetch(ctx, &R.W, 0));
    for (int j = 0; j < L->p.C; j++) {
        CPB_RANGE(ctx, bwd_group(ctx, &R, j, &A), "group%d", j);
    }
    CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, A.dw_free)); /* the last reduce */
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &A.dw));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &st->lse));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &st->o));
    return metp_shards_close(ctx, &R.W);
}

static int metp_forward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    return forward_body(ctx, L, state);
}

static int metp_backward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    return backward_body(ctx, L, state);
}

const cpb_method cpb_method_metp = {
    .name = "metp",
    .summary = "METP: head-group weight shards broadcast in turn, inner zigzag ring per group",
    .check = metp_check,
    .token_layout = cpb_layout_zigzag,
    .weight_shard = cpb_shard_head_group,
    .state_size = sizeof(metp_state),
    .forward = metp_forward,
    .backward = metp_backward,
};
