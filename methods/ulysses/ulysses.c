/* ulysses.c — DeepSpeed Ulysses: the method struct, forward and backward (DESIGN.md
 * section 4).  See ulysses.h for the data flow. */
#include <stdlib.h>

#include "ulysses/ulysses.h"

#define ST CPB_STREAM_COMPUTE

typedef struct uly_state {
    cpb_uly_saved sv;
} uly_state;

static int uly_check(const cpb_problem *p, char *why, size_t why_len)
{
    return cpb_uly_check("ulysses", p, why, why_len);
}

static int uly_forward(cpb_ctx *ctx, cpb_layer *L, void **state)
{
    cpb_uly_shape u;
    CPB_TRY(cpb_uly_shape_of(L, &u));
    uly_state *s = calloc(1, sizeof *s);
    if (!s) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "ulysses: out of host memory for the state");
    *state = s;
    CPB_TRY(cpb_range_push(ctx, "ulysses/fwd"));
    CPB_TRY(cpb_uly_forward(ctx, L, &u, NULL, &s->sv));
    return cpb_range_pop(ctx);
}

/* exchange a head-layout gradient [S][n][d] head->seq and fold it into dW and dx; the head
 * tensor, dead once sent, lays the chunks side by side for the one dx GEMM (Ulysses' maps
 * are consecutive columns of W: no gathered weights) */
static int grad_back(cpb_ctx *ctx, const cpb_uly_shape *u, const char *what, const cpb_a2a_map *m,
                     cpb_buf **grad_head, cpb_buf *w, int w_heads, int rope, cpb_buf *dw, cpb_buf *dx)
{
    cpb_a2a_seq sq = u->seq;
    if (!rope) sq.rope_base = 0;
    cpb_buf *recv = NULL;
    CPB_TRY(cpb_range_push(ctx, "%s", what));
    CPB_TRY(cpb_alloc(ctx, &recv, cpb_a2a_elems(m, u->s, u->d), (*grad_head)->dtype, CPB_TAG_A2A, "grad_recv"));
    CPB_TRY(cpb_range_push(ctx, "a2a"));
    CPB_TRY(cpb_a2a_range_end(ctx, cpb_a2a_exchange(ctx, ST, m, u->s, u->d, *grad_head, recv)));
    CPB_TRY(cpb_range_push(ctx, "proj"));
    CPB_TRY(cpb_a2a_range_end(ctx, cpb_a2a_grad_project(ctx, ST, m, &sq, recv, *grad_head, NULL, w, w_heads, dw, dx)));
    CPB_TRY(cpb_free(ctx, ST, grad_head));
    CPB_TRY(cpb_free(ctx, ST, &recv));
    return cpb_range_pop(ctx);
}

static int uly_backward_body(cpb_ctx *ctx, cpb_layer *L, const cpb_uly_shape *u, cpb_buf **t)
{
    cpb_dtype dt = L->p.dtype;
    int64_t nq = cpb_a2a_elems(&u->qmap, u->s, u->d), nkv = cpb_a2a_elems(&u->kvmap, u->s, u->d);
    cpb_buf *dx = NULL, *recv = NULL, *dsend = NULL, *do_head = NULL, *dq = NULL, *dk = NULL, *dv = NULL;
    CPB_TRY(cpb_uly_zero_dw(ctx, L));
    CPB_TRY(cpb_uly_dx_begin(ctx, L, &dx));

    /* dWo = o_seq^T dy, with o brought back to sequence layout (only head-sharded o is saved) */
    CPB_TRY(cpb_range_push(ctx, "wo"));
    CPB_TRY(cpb_alloc(ctx, &recv, nq, dt, CPB_TAG_A2A, "o_recv"));
    CPB_TRY(cpb_range_push(ctx, "a2a"));
    CPB_TRY(cpb_a2a_range_end(ctx, cpb_a2a_exchange(ctx, ST, &u->qmap, u->s, u->d, t[ULY_O], recv)));
    CPB_TRY(cpb_a2a_grad_wo(ctx, ST, &u->qmap, &u->seq, recv, 0, L->dy, L->dwo));
    CPB_TRY(cpb_free(ctx, ST, &recv));
    /* dO = dy Wo^T, projected per destination into the packed send buffer */
    CPB_TRY(cpb_alloc(ctx, &dsend, nq, dt, CPB_TAG_GRAD_ACT, "do_send"));
    CPB_TRY(cpb_a2a_out_grad(ctx, ST, &u->qmap, &u->seq, L->dy, L->wo, dsend));
    CPB_TRY(cpb_alloc(ctx, &do_head, nq, dt, CPB_TAG_GRAD_ACT, "do_head"));
    CPB_TRY(cpb_range_push(ctx, "a2a"));
    CPB_TRY(cpb_a2a_range_end(ctx, cpb_a2a_exchange(ctx, ST, &u->qmap, u->s, u->d, dsend, do_head)));
    CPB_TRY(cpb_free(ctx, ST, &dsend));
    CPB_TRY(cpb_range_pop(ctx));

    CPB_TRY(cpb_range_push(ctx, "attn"));
    CPB_TRY(cpb_alloc(ctx, &dq, nq, dt, CPB_TAG_GRAD_ACT, "dq_head"));
    CPB_TRY(cpb_alloc(ctx, &dk, nkv, dt, CPB_TAG_GRAD_ACT, "dk_head"));
    CPB_TRY(cpb_alloc(ctx, &dv, nkv, dt, CPB_TAG_GRAD_ACT, "dv_head"));
    cpb_attn_args a = {0};
    a.q = cpb_a2a_head_view(t[ULY_Q], u->S, u->hc, u->d);
    a.k = cpb_a2a_head_view(t[ULY_K], u->S, u->hk, u->d);
    a.v = cpb_a2a_head_view(t[ULY_V], u->S, u->hk, u->d);
    a.o = cpb_a2a_head_view(t[ULY_O], u->S, u->hc, u->d);
    a.lse = cpb_lse_view(t[ULY_LSE], u->S, 0, u->hc, 0, u->S);
    a.causal = 1;
    a.d_o = cpb_a2a_head_view(do_head, u->S, u->hc, u->d);
    a.dq = cpb_a2a_head_view(dq, u->S, u->hc, u->d);
    a.dk = cpb_a2a_head_view(dk, u->S, u->hk, u->d);
    a.dv = cpb_a2a_head_view(dv, u->S, u->hk, u->d);
    CPB_TRY(cpb_attn_bwd(ctx, ST, &a));
    CPB_TRY(cpb_free(ctx, ST, &do_head));
    for (int i = 0; i < ULY_NSAVED; i++) CPB_TRY(cpb_free(ctx, ST, &t[i]));
    CPB_TRY(cpb_range_pop(ctx));

    CPB_TRY(grad_back(ctx, u, "dq", &u->qmap, &dq, L->wq, u->H, 1, L->dwq, dx));
    CPB_TRY(grad_back(ctx, u, "dk", &u->kvmap, &dk, L->wk, u->G, 1, L->dwk, dx));
    return grad_back(ctx, u, "dv", &u->kvmap, &dv, L->wv, u->G, 0, L->dwv, dx);
}

static int uly_backward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    uly_state *s = state;
    cpb_uly_shape u;
    CPB_TRY(cpb_uly_shape_of(L, &u));
    CPB_TRY(cpb_range_push(ctx, "ulysses/bwd"));
    CPB_TRY(uly_backward_body(ctx, L, &u, s->sv.t));
    return cpb_range_pop(ctx);
}

const cpb_method cpb_method_ulysses = {
    .name = "ulysses",
    .summary = "DeepSpeed Ulysses: all-to-all seq->head, local attention on H/C heads, all-to-all back",
    .check = uly_check,
    .token_layout = cpb_layout_contiguous,
    .weight_shard = NULL,
    .forward = uly_forward,
    .backward = uly_backward,
};
