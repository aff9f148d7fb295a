/* ulysses.c — DeepSpeed Ulysses: the method struct, forward and backward (DESIGN.md
 * section 4).  See ulysses.h for the data flow. */
#include "common/grad_acc.h"
#include "ulysses/ulysses.h"

typedef struct uly_state {
    cpb_uly_saved sv;
} uly_state;

static int uly_check(const cpb_problem *p, char *why, size_t why_len)
{
    return cpb_uly_check("ulysses", p, why, why_len);
}

static int uly_forward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    uly_state *s = state;
    cpb_uly_shape u;
    CPB_TRY(cpb_uly_shape_of(L, &u));
    return cpb_uly_forward(ctx, L, &u, NULL, &s->sv);
}

/* exchange a head-layout gradient [S][n][d] head->seq and fold it into dW and dx; the head
 * tensor, dead once sent, lays the chunks side by side for the one dx GEMM (Ulysses' maps
 * are consecutive columns of W: no gathered weights) */
static int grad_back(cpb_ctx *ctx, const cpb_uly_shape *u, const cpb_a2a_map *m, cpb_buf **grad_head, cpb_buf *w,
                     int w_heads, int rope, cpb_buf *dw, cpb_buf *dx)
{
    cpb_a2a_seq sq = u->seq;
    if (!rope) sq.rope_base = 0;
    cpb_buf *recv = NULL;
    CPB_TRY(cpb_alloc(ctx, &recv, cpb_a2a_elems(m, u->s, u->d), (*grad_head)->dtype, CPB_TAG_A2A, "grad_recv"));
    CPB_RANGE(ctx, cpb_a2a_exchange(ctx, CPB_STREAM_COMPUTE, m, u->s, u->d, *grad_head, recv), "a2a");
    CPB_RANGE(ctx,
              cpb_a2a_grad_project(ctx, CPB_STREAM_COMPUTE, m, &sq, recv, *grad_head, NULL, w, w_heads, dw, dx),
              "proj");
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, grad_head));
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &recv);
}

/* dWo = o_seq^T dy, with o brought back to sequence layout (only head-sharded o is saved);
 * dO = dy Wo^T, projected per destination into the packed send buffer and exchanged */
static int grad_wo(cpb_ctx *ctx, cpb_layer *L, const cpb_uly_shape *u, cpb_buf **t, cpb_buf **do_head)
{
    const cpb_dtype dt = L->p.dtype;
    const int64_t nq = cpb_a2a_elems(&u->qmap, u->s, u->d);
    cpb_buf *recv = NULL, *dsend = NULL;
    CPB_TRY(cpb_alloc(ctx, &recv, nq, dt, CPB_TAG_A2A, "o_recv"));
    CPB_RANGE(ctx, cpb_a2a_exchange(ctx, CPB_STREAM_COMPUTE, &u->qmap, u->s, u->d, t[ULY_O], recv), "a2a");
    CPB_TRY(cpb_a2a_grad_wo(ctx, CPB_STREAM_COMPUTE, &u->qmap, &u->seq, recv, 0, L->dy, L->dwo));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &recv));
    CPB_TRY(cpb_alloc(ctx, &dsend, nq, dt, CPB_TAG_GRAD_ACT, "do_send"));
    CPB_TRY(cpb_a2a_out_grad(ctx, CPB_STREAM_COMPUTE, &u->qmap, &u->seq, L->dy, L->wo, dsend));
    CPB_TRY(cpb_alloc(ctx, do_head, nq, dt, CPB_TAG_GRAD_ACT, "do_head"));
    CPB_RANGE(ctx, cpb_a2a_exchange(ctx, CPB_STREAM_COMPUTE, &u->qmap, u->s, u->d, dsend, *do_head), "a2a");
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &dsend);
}

/* attention backward on the head-sharded tensors; frees them and dO */
static int attend_back(cpb_ctx *ctx, cpb_layer *L, const cpb_uly_shape *u, cpb_buf **t, cpb_buf **do_head,
                       cpb_buf **dq, cpb_buf **dk, cpb_buf **dv)
{
    const cpb_dtype dt = L->p.dtype;
    const int64_t nq = cpb_a2a_elems(&u->qmap, u->s, u->d), nkv = cpb_a2a_elems(&u->kvmap, u->s, u->d);
    CPB_TRY(cpb_alloc(ctx, dq, nq, dt, CPB_TAG_GRAD_ACT, "dq_head"));
    CPB_TRY(cpb_alloc(ctx, dk, nkv, dt, CPB_TAG_GRAD_ACT, "dk_head"));
    CPB_TRY(cpb_alloc(ctx, dv, nkv, dt, CPB_TAG_GRAD_ACT, "dv_head"));
    cpb_attn_args a = {0};
    a.q = cpb_a2a_head_view(t[ULY_Q], u->S, u->hc, u->d);
    a.k = cpb_a2a_head_view(t[ULY_K], u->S, u->hk, u->d);
    a.v = cpb_a2a_head_view(t[ULY_V], u->S, u->hk, u->d);
    a.o = cpb_a2a_head_view(t[ULY_O], u->S, u->hc, u->d);
    a.lse = cpb_lse_view(t[ULY_LSE], u->S, 0, u->hc, 0, u->S);
    a.causal = 1;
    a.d_o = cpb_a2a_head_view(*do_head, u->S, u->hc, u->d);
    a.dq = cpb_a2a_head_view(*dq, u->S, u->hc, u->d);
    a.dk = cpb_a2a_head_view(*dk, u->S, u->hk, u->d);
    a.dv = cpb_a2a_head_view(*dv, u->S, u->hk, u->d);
    CPB_TRY(cpb_attn_bwd(ctx, CPB_STREAM_COMPUTE, &a));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, do_head));
    for (int i = 0; i < ULY_NSAVED; i++) CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &t[i]));
    return CPB_OK;
}

static int uly_backward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    uly_state *s = state;
    cpb_uly_shape u;
    CPB_TRY(cpb_uly_shape_of(L, &u));
    cpb_buf **t = s->sv.t;
    cpb_buf *dx = NULL, *do_head = NULL, *dq = NULL, *dk = NULL, *dv = NULL;
    CPB_TRY(cpb_zero_dw(ctx, L));
    CPB_TRY(cpb_dx_begin(ctx, L, &dx));
    CPB_RANGE(ctx, grad_wo(ctx, L, &u, t, &do_head), "wo");
    CPB_RANGE(ctx, attend_back(ctx, L, &u, t, &do_head, &dq, &dk, &dv), "attn");
    CPB_RANGE(ctx, grad_back(ctx, &u, &u.qmap, &dq, L->wq, u.H, 1, L->dwq, dx), "dq");
    CPB_RANGE(ctx, grad_back(ctx, &u, &u.kvmap, &dk, L->wk, u.G, 1, L->dwk, dx), "dk");
    CPB_RANGE(ctx, grad_back(ctx, &u, &u.kvmap, &dv, L->wv, u.G, 0, L->dwv, dx), "dv");
    return CPB_OK;
}

const cpb_method cpb_method_ulysses = {
    .name = "ulysses",
    .summary = "DeepSpeed Ulysses: all-to-all seq->head, local attention on H/C heads, all-to-all back",
    .check = uly_check,
    .token_layout = cpb_layout_contiguous,
    .weight_shard = NULL,
    .state_size = sizeof(uly_state),
    .forward = uly_forward,
    .backward = uly_backward,
};
