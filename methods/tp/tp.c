/* tp.c — Megatron tensor parallelism with sequence parallelism (DESIGN.md section 4, "tp";
 * METP's baseline).
 *
 * Rank r owns head group r (H/C query heads and their kv heads, replicated when G < C) and
 * holds a contiguous sequence shard of x.  Forward: all-gather x, project the group's
 * q, k, v for all S tokens, causal attention, y partial = o Wo[rows of group r],
 * reduce-scatter of y back to sequence shards.  Like Megatron it keeps only its x shard:
 * backward all-gathers x again (while the attention backward runs), all-gathers dy and
 * reduce-scatters dx.  Saves q, k, v, o (S tokens, the group's heads) and lse.
 * Full-sequence activation buffers (gathered x and dy, the y and dx partials before their
 * reduce-scatter) are tagged GATHER.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cpb_method.h"
#include "common/proj_bwd.h"


typedef struct tp_state {
    cpb_buf *q, *k, *v; /* [S][hq][d], [S][hk][d] after RoPE */
    cpb_buf *o, *lse;   /* [S][hq*d] storage, fp32 [hq][S] */
} tp_state;

/* sizes of one rank's head group */
typedef struct tp_dims {
    int64_t S, s, D, hqd, hkd;
    int hq, hk, d;
    cpb_segs all; /* positions 0 .. S-1 */
} tp_dims;

static int tp_check(const cpb_problem *p, char *why, size_t why_len)
{
    if (p->C <= 0 || p->H % p->C) {
        snprintf(why, why_len, "tp shards heads: H = %d query heads must be a multiple of C = %d", p->H, p->C);
        return CPB_ERR_INVALID;
    }
    if (!(p->G % p->C == 0 || p->C % p->G == 0)) {
        snprintf(why, why_len, "tp shards kv heads: G = %d must be a multiple or a divisor of C = %d", p->G, p->C);
        return CPB_ERR_INVALID;
    }
    if (p->S % p->C) {
        snprintf(why, why_len, "tp needs the sequence (S = %lld) to be a multiple of C = %d", (long long)p->S, p->C);
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

static tp_dims dims_of(const cpb_layer *L)
{
    tp_dims z;
    z.S = L->p.S;
    z.s = L->s;
    z.D = L->p.D;
    z.hq = L->shard.nq;
    z.hk = L->shard.nkv;
    z.d = L->p.d;
    z.hqd = (int64_t)z.hq * z.d;
    z.hkd = (int64_t)z.hk * z.d;
    cpb_segs_clear(&z.all);
    cpb_segs_add(&z.all, 0, z.S);
    return z;
}

static cpb_view heads(cpb_buf *b, int64_t rows, int h, int d)
{
    return cpb_heads(b, 0, rows, h, d, (int64_t)h * d, d);
}

static int forward_body(cpb_ctx *ctx, cpb_layer *L, tp_state *st)
{
    const cpb_problem *p = &L->p;
    tp_dims z = dims_of(L);
    int comm;
    CPB_TRY(cpb_stream(ctx, "comm", &comm));
    cpb_buf *xg = NULL, *yp = NULL;

    /* x over the whole sequence (contiguous layout: rank order is sequence order) */
    CPB_TRY(cpb_alloc(ctx, &xg, z.S * z.D, p->dtype, CPB_TAG_GATHER, "x_gathered"));
    CPB_TRY(cpb_stream_join(ctx, comm, CPB_STREAM_COMPUTE)); /* x was written on compute */
    CPB_TRY(cpb_all_gather(ctx, comm, NULL, cpb_whole(L->x), cpb_whole(xg)));
    CPB_TRY(cpb_stream_join(ctx, CPB_STREAM_COMPUTE, comm));

    /* the group's q, k, v for all S tokens */
    cpb_view x = cpb_mat(xg, 0, z.S, z.D, z.D);
    CPB_TRY(cpb_alloc(ctx, &st->q, z.S * z.hqd, p->dtype, CPB_TAG_QKV, "q"));
    CPB_TRY(cpb_alloc(ctx, &st->k, z.S * z.hkd, p->dtype, CPB_TAG_QKV, "k"));
    CPB_TRY(cpb_alloc(ctx, &st->v, z.S * z.hkd, p->dtype, CPB_TAG_QKV, "v"));
    CPB_TRY(cpb_gemm(ctx, CPB_STREAM_COMPUTE, 0, 0, 1.0f, x, cpb_mat(L->wq, 0, z.D, z.hqd, z.hqd), 0.0f,
                     cpb_mat(st->q, 0, z.S, z.hqd, z.hqd)));
    CPB_TRY(cpb_gemm(ctx, CPB_STREAM_COMPUTE, 0, 0, 1.0f, x, cpb_mat(L->wk, 0, z.D, z.hkd, z.hkd), 0.0f,
                     cpb_mat(st->k, 0, z.S, z.hkd, z.hkd)));
    CPB_TRY(cpb_gemm(ctx, CPB_STREAM_COMPUTE, 0, 0, 1.0f, x, cpb_mat(L->wv, 0, z.D, z.hkd, z.hkd), 0.0f,
                     cpb_mat(st->v, 0, z.S, z.hkd, z.hkd)));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &xg)); /* Megatron keeps only the shard */
    CPB_TRY(cpb_rope(ctx, CPB_STREAM_COMPUTE, heads(st->q, z.S, z.hq, z.d), &z.all, p->rope_base, 0));
    CPB_TRY(cpb_rope(ctx, CPB_STREAM_COMPUTE, heads(st->k, z.S, z.hk, z.d), &z.all, p->rope_base, 0));

    /* local causal attention over the whole sequence */
    CPB_TRY(cpb_alloc(ctx, &st->o, z.S * z.hqd, p->dtype, CPB_TAG_ATTN, "o"));
    CPB_TRY(cpb_alloc(ctx, &st->lse, z.S * z.hq, CPB_FP32, CPB_TAG_ATTN, "lse"));
    cpb_attn_args a = {0};
    a.q = heads(st->q, z.S, z.hq, z.d);
    a.k = heads(st->k, z.S, z.hk, z.d);
    a.v = heads(st->v, z.S, z.hk, z.d);
    a.o = heads(st->o, z.S, z.hq, z.d);
    a.lse = cpb_lse_view(st->lse, z.S, 0, z.hq, 0, z.S);
    a.causal = 1;
    CPB_TRY(cpb_attn_fwd(ctx, CPB_STREAM_COMPUTE, &a));

    /* y partial over the group's rows of Wo, summed and scattered to sequence shards */
    CPB_TRY(cpb_alloc(ctx, &yp, z.S * z.D, p->dtype, CPB_TAG_GATHER, "y_partial"));
    CPB_TRY(cpb_gemm(ctx, CPB_STREAM_COMPUTE, 0, 0, 1.0f, cpb_mat(st->o, 0, z.S, z.hqd, z.hqd),
                     cpb_mat(L->wo, 0, z.hqd, z.D, z.D), 0.0f, cpb_mat(yp, 0, z.S, z.D, z.D)));
    CPB_TRY(cpb_stream_join(ctx, comm, CPB_STREAM_COMPUTE));
    CPB_TRY(cpb_reduce_scatter(ctx, comm, NULL, cpb_whole(yp), cpb_whole(L->y)));
    CPB_TRY(cpb_stream_join(ctx, CPB_STREAM_COMPUTE, comm));
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &yp);
}

static int backward_body(cpb_ctx *ctx, cpb_layer *L, tp_state *st)
{
    const cpb_problem *p = &L->p;
    tp_dims z = dims_of(L);
    int comm;
    CPB_TRY(cpb_stream(ctx, "comm", &comm));
    cpb_buf *dyg = NULL, *xg = NULL, *d_o = NULL, *dq = NULL, *dk = NULL, *dv = NULL, *dxp = NULL;

    /* dy over the whole sequence; dO = dy Wo^T, dWo = o^T dy */
    CPB_TRY(cpb_alloc(ctx, &dyg, z.S * z.D, p->dtype, CPB_TAG_GATHER, "dy_gathered"));
    CPB_TRY(cpb_stream_join(ctx, comm, CPB_STREAM_COMPUTE)); /* dy was written on compute */
    CPB_TRY(cpb_all_gather(ctx, comm, NULL, cpb_whole(L->dy), cpb_whole(dyg)));
    CPB_TRY(cpb_stream_join(ctx, CPB_STREAM_COMPUTE, comm));
    cpb_view dy = cpb_mat(dyg, 0, z.S, z.D, z.D);
    CPB_TRY(cpb_alloc(ctx, &d_o, z.S * z.hqd, p->dtype, CPB_TAG_GRAD_ACT, "dO"));
    CPB_TRY(cpb_gemm(ctx, CPB_STREAM_COMPUTE, 0, 1, 1.0f, dy, cpb_mat(L->wo, 0, z.hqd, z.D, z.D), 0.0f,
                     cpb_mat(d_o, 0, z.S, z.hqd, z.hqd)));
    CPB_TRY(cpb_gemm(ctx, CPB_STREAM_COMPUTE, 1, 0, 1.0f, cpb_mat(st->o, 0, z.S, z.hqd, z.hqd), dy, 0.0f,
                     cpb_mat(L->dwo, 0, z.hqd, z.D, z.D)));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &dyg));

    /* x is gathered again for dW while the attention backward runs */
    CPB_TRY(cpb_alloc(ctx, &xg, z.S * z.D, p->dtype, CPB_TAG_GATHER, "x_gathered"));
    CPB_TRY(cpb_all_gather(ctx, comm, NULL, cpb_whole(L->x), cpb_whole(xg)));
    cpb_event x_ready;
    CPB_TRY(cpb_event_record(ctx, comm, &x_ready));

    CPB_TRY(cpb_alloc(ctx, &dq, z.S * z.hqd, p->dtype, CPB_TAG_GRAD_ACT, "dq"));
    CPB_TRY(cpb_alloc(ctx, &dk, z.S * z.hkd, p->dtype, CPB_TAG_GRAD_ACT, "dk"));
    CPB_TRY(cpb_alloc(ctx, &dv, z.S * z.hkd, p->dtype, CPB_TAG_GRAD_ACT, "dv"));
    cpb_attn_args a = {0};
    a.q = heads(st->q, z.S, z.hq, z.d);
    a.k = heads(st->k, z.S, z.hk, z.d);
    a.v = heads(st->v, z.S, z.hk, z.d);
    a.o = heads(st->o, z.S, z.hq, z.d);
    a.lse = cpb_lse_view(st->lse, z.S, 0, z.hq, 0, z.S);
    a.d_o = heads(d_o, z.S, z.hq, z.d);
    a.dq = heads(dq, z.S, z.hq, z.d);
    a.dk = heads(dk, z.S, z.hk, z.d);
    a.dv = heads(dv, z.S, z.hk, z.d);
    a.causal = 1;
    CPB_TRY(cpb_attn_bwd(ctx, CPB_STREAM_COMPUTE, &a));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &d_o));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &st->lse));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &st->o));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &st->v));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &st->k));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &st->q));
    CPB_TRY(cpb_rope(ctx, CPB_STREAM_COMPUTE, a.dq, &z.all, p->rope_base, 1));
    CPB_TRY(cpb_rope(ctx, CPB_STREAM_COMPUTE, a.dk, &z.all, p->rope_base, 1));

    /* dW of the group's shard = x^T d(q, k, v) */
    cpb_view dqm = cpb_mat(dq, 0, z.S, z.hqd, z.hqd);
    cpb_view dkm = cpb_mat(dk, 0, z.S, z.hkd, z.hkd), dvm = cpb_mat(dv, 0, z.S, z.hkd, z.hkd);
    CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, x_ready));
    cpb_view x = cpb_mat(xg, 0, z.S, z.D, z.D);
    cpb_qkv_views grad = {dqm, dkm, dvm};
    cpb_qkv_views dw = {cpb_mat(L->dwq, 0, z.D, z.hqd, z.hqd), cpb_mat(L->dwk, 0, z.D, z.hkd, z.hkd),
                        cpb_mat(L->dwv, 0, z.D, z.hkd, z.hkd)};
    CPB_TRY(cpb_proj_bwd_dw(ctx, CPB_STREAM_COMPUTE, x, grad, 0.0f, dw));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &xg));

    /* dx partial over the group's columns, summed and scattered to sequence shards */
    CPB_TRY(cpb_alloc(ctx, &dxp, z.S * z.D, p->dtype, CPB_TAG_GATHER, "dx_partial"));
    cpb_view dxm = cpb_mat(dxp, 0, z.S, z.D, z.D);
    cpb_qkv_views w = {cpb_mat(L->wq, 0, z.D, z.hqd, z.hqd), cpb_mat(L->wk, 0, z.D, z.hkd, z.hkd),
                       cpb_mat(L->wv, 0, z.D, z.hkd, z.hkd)};
    CPB_TRY(cpb_proj_bwd_dx(ctx, CPB_STREAM_COMPUTE, grad, w, 0.0f, dxm));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &dv));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &dk));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &dq));
    CPB_TRY(cpb_stream_join(ctx, comm, CPB_STREAM_COMPUTE));
    CPB_TRY(cpb_reduce_scatter(ctx, comm, NULL, cpb_whole(dxp), cpb_whole(L->dx)));
    CPB_TRY(cpb_stream_join(ctx, CPB_STREAM_COMPUTE, comm));
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &dxp);
}

static int tp_forward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    return forward_body(ctx, L, state);
}

static int tp_backward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    return backward_body(ctx, L, state);
}

const cpb_method cpb_method_tp = {
    .name = "tp",
    .summary = "Megatron tensor parallelism + sequence parallelism: all-gather x, head group per rank",
    .check = tp_check,
    .token_layout = cpb_layout_contiguous,
    .weight_shard = cpb_shard_head_group,
    .state_size = sizeof(tp_state),
    .forward = tp_forward,
    .backward = tp_backward,
};
