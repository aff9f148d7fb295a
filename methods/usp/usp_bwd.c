/* usp_bwd.c — USP backward, the forward's mirror: dWo from o brought back to sequence
 * layout, dO = dy Wo^T exchanged seq->head and permuted to ring order, the zigzag ring
 * backward (fp32 dq here, fp32 dK,dV back from their trip around the ring), then each of
 * dq, dk, dv permuted to a2a order, exchanged head->seq and folded into dW and dx (one GEMM
 * each, dx in the storage dtype). */
#include "common/grad_acc.h"
#include "usp/usp.h"

/* dWo = o_seq^T dy, o exchanged back from the saved ring-order o */
static int grad_wo(cpb_ctx *ctx, cpb_layer *L, const usp_shape *sh, const usp_state *st)
{
    cpb_buf *send = NULL, *recv = NULL;
    CPB_TRY(cpb_alloc(ctx, &send, sh->Nq, L->p.dtype, CPB_TAG_A2A, "o_send"));
    CPB_TRY(cpb_grid_to_a2a(ctx, CPB_STREAM_COMPUTE, &sh->g, (int64_t)sh->hq * sh->d, st->o, 0, send, 0));
    CPB_TRY(cpb_alloc(ctx, &recv, sh->Nq, L->p.dtype, CPB_TAG_A2A, "o_recv"));
    CPB_TRY(cpb_grid_a2a(ctx, CPB_STREAM_COMPUTE, &sh->g, send, 0, recv, 0, sh->Nq));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &send));
    CPB_TRY(cpb_a2a_grad_wo(ctx, CPB_STREAM_COMPUTE, &sh->qmap, &sh->seq, recv, 0, L->dy, L->dwo));
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &recv);
}

/* dO for every local head, packed, exchanged, and permuted to ring order in place */
static int out_grad(cpb_ctx *ctx, cpb_layer *L, const usp_shape *sh, cpb_buf **d_o)
{
    cpb_buf *recv = NULL;
    CPB_TRY(cpb_alloc(ctx, d_o, sh->Nq, L->p.dtype, CPB_TAG_GRAD_ACT, "do_head"));
    CPB_TRY(cpb_a2a_out_grad(ctx, CPB_STREAM_COMPUTE, &sh->qmap, &sh->seq, L->dy, L->wo, *d_o));
    CPB_TRY(cpb_alloc(ctx, &recv, sh->Nq, L->p.dtype, CPB_TAG_A2A, "do_recv"));
    CPB_TRY(cpb_grid_a2a(ctx, CPB_STREAM_COMPUTE, &sh->g, *d_o, 0, recv, 0, sh->Nq));
    CPB_TRY(cpb_grid_to_ring(ctx, CPB_STREAM_COMPUTE, &sh->g, (int64_t)sh->hq * sh->d, recv, 0, *d_o, 0));
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &recv);
}

/* One projection's gradient: grad32 (fp32, ring order, at g_off) -> `send` in a2a order
 * and the storage dtype -> exchanged head->seq into recv -> dW and dx.  `send`, free once
 * sent, lays the chunks side by side for the dx GEMM (cpb_a2a_grad_project). */
static int grad_back(cpb_ctx *ctx, const usp_shape *sh, const cpb_a2a_map *m, int n,
                     cpb_buf *grad32, int64_t g_off, cpb_buf *send, cpb_buf *recv, cpb_buf *wg, cpb_buf *w,
                     int w_heads, int rope, cpb_buf *dw, cpb_buf *dx)
{
    cpb_a2a_seq sq = sh->seq;
    if (!rope) sq.rope_base = 0;
    CPB_TRY(cpb_grid_to_a2a(ctx, CPB_STREAM_COMPUTE, &sh->g, (int64_t)n * sh->d, grad32, g_off, send, 0));
    CPB_TRY(cpb_grid_a2a(ctx, CPB_STREAM_COMPUTE, &sh->g, send, 0, recv, 0, cpb_a2a_elems(m, sh->s, sh->d)));
    CPB_RANGE(ctx, cpb_a2a_grad_project(ctx, CPB_STREAM_COMPUTE, m, &sq, recv, send, wg, w, w_heads, dw, dx),
              "proj");
    return CPB_OK;
}

static int backward_body(cpb_ctx *ctx, cpb_layer *L, const usp_shape *sh, usp_state *st)
{
    cpb_dtype dt = L->p.dtype;
    cpb_buf *dx = NULL, *d_o = NULL, *dq = NULL, *dkv = NULL, *recv = NULL, *wg = NULL;
    CPB_TRY(cpb_zero_dw(ctx, L));
    CPB_TRY(cpb_dx_begin(ctx, L, &dx));
    CPB_RANGE(ctx, grad_wo(ctx, L, sh, st), "wo");
    CPB_RANGE(ctx, out_grad(ctx, L, sh, &d_o), "do");

    /* the ring backward; K,V are dead afterwards, so the rotation may reuse their buffer */
    cpb_ring_cfg cfg = sh->ring;
    cfg.kv_scratch = 1;
    int64_t cc = 2 * sh->g.c;
    CPB_TRY(cpb_alloc(ctx, &dq, sh->Nq, CPB_FP32, CPB_TAG_GRAD_ACT, "dq32"));
    CPB_TRY(cpb_alloc(ctx, &dkv, 2 * sh->Nk, CPB_FP32, CPB_TAG_GRAD_ACT, "dkv32"));
    cpb_view no_delta = {0};
    CPB_RANGE(ctx,
              cpb_ring_attn_bwd(ctx, &cfg, usp_ring_view(sh, st->q, 0, sh->hq), st->kv,
                                usp_ring_view(sh, st->o, 0, sh->hq), usp_ring_view(sh, d_o, 0, sh->hq),
                                cpb_lse_view(st->lse, cc, 0, sh->hq, 0, cc), no_delta,
                                usp_ring_view(sh, dq, 0, sh->hq), dkv),
              "ring");
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &d_o));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &st->lse));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &st->o));

    /* dq, dk, dv back to the sequence side; q's and K,V's buffers carry the sends */
    CPB_TRY(cpb_alloc(ctx, &recv, sh->Nq, dt, CPB_TAG_A2A, "grad_recv"));
    CPB_RANGE(ctx, grad_back(ctx, sh, &sh->qmap, sh->hq, dq, 0, st->q, recv, NULL, L->wq, sh->H, 1, L->dwq, dx),
              "dq");
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &dq));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &st->q));
    if (cpb_a2a_needs_gather(&sh->kvmap)) /* replicated kv heads (G < u) */
        CPB_TRY(cpb_alloc(ctx, &wg, cpb_a2a_gather_elems(&sh->kvmap, sh->D, sh->d), dt, CPB_TAG_GATHER, "w_gather"));
    CPB_RANGE(ctx, grad_back(ctx, sh, &sh->kvmap, sh->hk, dkv, 0, st->kv, recv, wg, L->wk, sh->G, 1, L->dwk, dx),
              "dk");
    CPB_RANGE(ctx,
              grad_back(ctx, sh, &sh->kvmap, sh->hk, dkv, sh->Nk, st->kv, recv, wg, L->wv, sh->G, 0, L->dwv, dx),
              "dv");
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &wg));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &recv));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &dkv));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &st->kv));
    return CPB_OK;
}

int usp_backward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    usp_shape sh;
    CPB_TRY(usp_shape_of(ctx, L, &sh));
    return backward_body(ctx, L, &sh, state);
}
