/* usp_fwd.c — USP forward: project, exchange seq->head inside the Ulysses group, permute
 * to ring order, zigzag ring attention over the ring group, and back (see usp.h). */
#include "usp/usp.h"

/* Project one tensor for the local tokens into the packed `send` (a buffer dead at that
 * moment, usually dst itself, so no separate send buffer is needed), exchange it inside
 * the Ulysses group into `recv` and permute it to ring order into dst at dst_off. */
static int project_exchange(cpb_ctx *ctx, const usp_shape *sh, const cpb_a2a_map *m, cpb_buf *w, int w_heads,
                            int rope, int n, cpb_buf *send, cpb_buf *recv, cpb_buf *dst, int64_t dst_off)
{
    cpb_a2a_seq sq = sh->seq;
    if (!rope) sq.rope_base = 0;
    int64_t ne = cpb_a2a_elems(m, sh->s, sh->d);
    CPB_RANGE(ctx, cpb_a2a_project(ctx, CPB_STREAM_COMPUTE, m, &sq, w, w_heads, send), "proj");
    CPB_TRY(cpb_grid_a2a(ctx, CPB_STREAM_COMPUTE, &sh->g, send, 0, recv, 0, ne));
    return cpb_grid_to_ring(ctx, CPB_STREAM_COMPUTE, &sh->g, (int64_t)n * sh->d, recv, 0, dst, dst_off);
}

static int qkv(cpb_ctx *ctx, cpb_layer *L, const usp_shape *sh, usp_state *st)
{
    cpb_dtype dt = L->p.dtype;
    cpb_buf *recv = NULL;
    CPB_TRY(cpb_alloc(ctx, &st->q, sh->Nq, dt, CPB_TAG_SAVED, "q_head"));
    CPB_TRY(cpb_alloc(ctx, &recv, sh->Nq, dt, CPB_TAG_A2A, "qkv_recv")); /* Nq >= Nk: shared */
    /* q: q_head is the send buffer until the permutation overwrites it */
    CPB_RANGE(ctx, project_exchange(ctx, sh, &sh->qmap, L->wq, sh->H, 1, sh->hq, st->q, recv, st->q, 0), "q");
    /* K,V packed [K | V]: V first, sent from the K half, so that K is sent from there
     * afterwards and no send buffer is needed */
    CPB_TRY(cpb_alloc(ctx, &st->kv, 2 * sh->Nk, dt, CPB_TAG_SAVED, "kv_head"));
    CPB_RANGE(ctx, project_exchange(ctx, sh, &sh->kvmap, L->wv, sh->G, 0, sh->hk, st->kv, recv, st->kv, sh->Nk), "v");
    CPB_RANGE(ctx, project_exchange(ctx, sh, &sh->kvmap, L->wk, sh->G, 1, sh->hk, st->kv, recv, st->kv, 0), "k");
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &recv);
}

/* o (ring order) back to sequence layout, then y = o Wo */
static int out(cpb_ctx *ctx, cpb_layer *L, const usp_shape *sh, usp_state *st)
{
    cpb_dtype dt = L->p.dtype;
    cpb_buf *send = NULL, *recv = NULL, *oseq = NULL;
    CPB_TRY(cpb_alloc(ctx, &send, sh->Nq, dt, CPB_TAG_A2A, "o_send"));
    CPB_TRY(cpb_grid_to_a2a(ctx, CPB_STREAM_COMPUTE, &sh->g, (int64_t)sh->hq * sh->d, st->o, 0, send, 0));
    CPB_TRY(cpb_alloc(ctx, &recv, sh->Nq, dt, CPB_TAG_A2A, "o_recv"));
    CPB_TRY(cpb_grid_a2a(ctx, CPB_STREAM_COMPUTE, &sh->g, send, 0, recv, 0, sh->Nq));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &send));
    CPB_TRY(cpb_alloc(ctx, &oseq, sh->s * sh->H * sh->d, dt, CPB_TAG_ATTN, "o_seq"));
    CPB_TRY(cpb_a2a_unpack(ctx, CPB_STREAM_COMPUTE, &sh->qmap, sh->s, sh->d, recv, oseq, sh->H));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &recv));
    int64_t hd = (int64_t)sh->H * sh->d;
    CPB_TRY(cpb_gemm(ctx, CPB_STREAM_COMPUTE, 0, 0, 1.0f, cpb_mat(oseq, 0, sh->s, hd, hd),
                     cpb_mat(L->wo, 0, hd, sh->D, sh->D), 0.0f, cpb_mat(L->y, 0, sh->s, sh->D, sh->D)));
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &oseq);
}

static int forward_body(cpb_ctx *ctx, cpb_layer *L, const usp_shape *sh, usp_state *st)
{
    CPB_TRY(qkv(ctx, L, sh, st));
    CPB_TRY(cpb_alloc(ctx, &st->o, sh->Nq, L->p.dtype, CPB_TAG_SAVED, "o_head"));
    CPB_TRY(cpb_alloc(ctx, &st->lse, 2 * sh->g.c * sh->hq, CPB_FP32, CPB_TAG_SAVED, "lse"));
    int64_t cc = 2 * sh->g.c;
    CPB_RANGE(ctx,
              cpb_ring_attn_fwd(ctx, &sh->ring, usp_ring_view(sh, st->q, 0, sh->hq), st->kv,
                                usp_ring_view(sh, st->o, 0, sh->hq), cpb_lse_view(st->lse, cc, 0, sh->hq, 0, cc)),
              "ring");
    CPB_RANGE(ctx, out(ctx, L, sh, st), "out");
    return CPB_OK;
}

int usp_forward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    usp_shape sh;
    CPB_TRY(usp_shape_of(ctx, L, &sh));
    return forward_body(ctx, L, &sh, state);
}
