/* usp_fwd.c — USP forward: project, exchange seq->head inside the Ulysses group, permute
 * to ring order, zigzag ring attention over the ring group, and back (see usp.h). */
#include <stdlib.h>

#include "usp/usp.h"

#define ST CPB_STREAM_COMPUTE

static int range_end(cpb_ctx *ctx, int rc)
{
    int rc2 = cpb_range_pop(ctx);
    return rc != CPB_OK ? rc : rc2;
}

/* Project one tensor for the local tokens into the packed `send` (a buffer dead at that
 * moment, usually dst itself, so no separate send buffer is needed), exchange it inside
 * the Ulysses group into `recv` and permute it to ring order into dst at dst_off. */
static int project_exchange(cpb_ctx *ctx, const usp_shape *sh, const char *what, const cpb_a2a_map *m, cpb_buf *w,
                            int w_heads, int rope, int n, cpb_buf *send, cpb_buf *recv, cpb_buf *dst, int64_t dst_off)
{
    cpb_a2a_seq sq = sh->seq;
    if (!rope) sq.rope_base = 0;
    int64_t ne = cpb_a2a_elems(m, sh->s, sh->d);
    CPB_TRY(cpb_range_push(ctx, "%s", what));
    CPB_TRY(cpb_range_push(ctx, "proj"));
    CPB_TRY(range_end(ctx, cpb_a2a_project(ctx, ST, m, &sq, w, w_heads, send)));
    CPB_TRY(cpb_grid_a2a(ctx, ST, &sh->g, send, 0, recv, 0, ne));
    CPB_TRY(cpb_grid_to_ring(ctx, ST, &sh->g, (int64_t)n * sh->d, recv, 0, dst, dst_off));
    return cpb_range_pop(ctx);
}

static int qkv(cpb_ctx *ctx, cpb_layer *L, const usp_shape *sh, usp_state *st)
{
    cpb_dtype dt = L->p.dtype;
    cpb_buf *recv = NULL;
    CPB_TRY(cpb_alloc(ctx, &st->q, sh->Nq, dt, CPB_TAG_SAVED, "q_head"));
    CPB_TRY(cpb_alloc(ctx, &recv, sh->Nq, dt, CPB_TAG_A2A, "qkv_recv")); /* Nq >= Nk: shared */
    /* q: q_head is the send buffer until the permutation overwrites it */
    CPB_TRY(project_exchange(ctx, sh, "q", &sh->qmap, L->wq, sh->H, 1, sh->hq, st->q, recv, st->q, 0));
    /* K,V packed [K | V]: V first, sent from the K half, so that K is sent from there
     * afterwards and no send buffer is needed */
    CPB_TRY(cpb_alloc(ctx, &st->kv, 2 * sh->Nk, dt, CPB_TAG_SAVED, "kv_head"));
    CPB_TRY(project_exchange(ctx, sh, "v", &sh->kvmap, L->wv, sh->G, 0, sh->hk, st->kv, recv, st->kv, sh->Nk));
    CPB_TRY(project_exchange(ctx, sh, "k", &sh->kvmap, L->wk, sh->G, 1, sh->hk, st->kv, recv, st->kv, 0));
    return cpb_free(ctx, ST, &recv);
}

/* o (ring order) back to sequence layout, then y = o Wo */
static int out(cpb_ctx *ctx, cpb_layer *L, const usp_shape *sh, usp_state *st)
{
    cpb_dtype dt = L->p.dtype;
    cpb_buf *send = NULL, *recv = NULL, *oseq = NULL;
    CPB_TRY(cpb_alloc(ctx, &send, sh->Nq, dt, CPB_TAG_A2A, "o_send"));
    CPB_TRY(cpb_grid_to_a2a(ctx, ST, &sh->g, (int64_t)sh->hq * sh->d, st->o, 0, send, 0));
    CPB_TRY(cpb_alloc(ctx, &recv, sh->Nq, dt, CPB_TAG_A2A, "o_recv"));
    CPB_TRY(cpb_grid_a2a(ctx, ST, &sh->g, send, 0, recv, 0, sh->Nq));
    CPB_TRY(cpb_free(ctx, ST, &send));
    CPB_TRY(cpb_alloc(ctx, &oseq, sh->s * sh->H * sh->d, dt, CPB_TAG_ATTN, "o_seq"));
    CPB_TRY(cpb_a2a_unpack(ctx, ST, &sh->qmap, sh->s, sh->d, recv, oseq, sh->H));
    CPB_TRY(cpb_free(ctx, ST, &recv));
    int64_t hd = (int64_t)sh->H * sh->d;
    CPB_TRY(cpb_gemm(ctx, ST, 0, 0, 1.0f, cpb_mat(oseq, 0, sh->s, hd, hd), cpb_mat(L->wo, 0, hd, sh->D, sh->D), 0.0f,
                     cpb_mat(L->y, 0, sh->s, sh->D, sh->D)));
    return cpb_free(ctx, ST, &oseq);
}

static int forward_body(cpb_ctx *ctx, cpb_layer *L, const usp_shape *sh, usp_state *st)
{
    CPB_TRY(qkv(ctx, L, sh, st));
    CPB_TRY(cpb_range_push(ctx, "ring"));
    CPB_TRY(cpb_alloc(ctx, &st->o, sh->Nq, L->p.dtype, CPB_TAG_SAVED, "o_head"));
    CPB_TRY(cpb_alloc(ctx, &st->lse, 2 * sh->g.c * sh->hq, CPB_FP32, CPB_TAG_SAVED, "lse"));
    int64_t cc = 2 * sh->g.c;
    CPB_TRY(range_end(ctx, cpb_ring_attn_fwd(ctx, &sh->ring, usp_ring_view(sh, st->q, 0, sh->hq), st->kv,
                                             usp_ring_view(sh, st->o, 0, sh->hq),
                                             cpb_lse_view(st->lse, cc, 0, sh->hq, 0, cc))));
    CPB_TRY(cpb_range_push(ctx, "out"));
    return range_end(ctx, out(ctx, L, sh, st));
}

int usp_forward(cpb_ctx *ctx, cpb_layer *L, void **state)
{
    usp_state *st = calloc(1, sizeof *st);
    if (!st) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "usp: out of host memory for the state");
    *state = st;
    usp_shape sh;
    CPB_TRY(usp_shape_of(ctx, L, &sh));
    CPB_TRY(cpb_range_push(ctx, "usp/fwd"));
    return range_end(ctx, forward_body(ctx, L, &sh, st));
}
