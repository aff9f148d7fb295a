/* fpdt_bwd_prep.c — the first pass of FPDT's backward, once per chunk j: dO_j = dy_j Wo^T
 * straight into the all-to-all slots, a2a (seq->head), and dWo += o_j^T dy_j (o_j in
 * sequence layout, fetched from the host); dO_j goes to the host.  With --fpdt-bwd delta
 * it also computes delta_j = rowsum(dO_j * o_j) from o_j in head layout (fetched) and sends
 * it to the host, so each (i, j) block of the KV loop fetches q_j, dO_j, lse_j, delta_j and
 * o's host copies are freed here; with --fpdt-bwd o (the default) the blocks fetch o_j
 * instead and the attention backward derives delta (cuDNN's way), so o stays on the host. */
#include "fpdt_bwd.h"

typedef struct prep {
    fpdt_bwd *B;
    cpb_buf *dys, *doh, *of, *osf, *dl;
    cpb_event ev_in, ev_off;
} prep;

static int prep_chunk(prep *P, int64_t j)
{
    fpdt_bwd *B = P->B;
    cpb_ctx *ctx = B->ctx;
    cpb_layer *L = B->L;
    const fpdt_dims *m = B->m;
    fpdt_state *st = B->st;
    const int64_t D = m->D, blk = (int64_t)m->hq * m->d, Hd = (int64_t)m->H * m->d;
    /* o_j in sequence layout (and in head layout for delta), once compute is done with the
     * previous chunk's */
    CPB_TRY(cpb_stream_join(ctx, B->copy, B->comp));
    if (!m->bwd_o) CPB_TRY(cpb_copy(ctx, B->copy, cpb_whole(P->of), cpb_span(st->o_h, j * m->nq, m->nq)));
    CPB_TRY(cpb_copy(ctx, B->copy, cpb_whole(P->osf), cpb_span(st->os_h, j * m->nq, m->nq)));
    CPB_TRY(cpb_event_record(ctx, B->copy, &P->ev_in));
    /* slot m of the send buffer: dy_j times the rows of Wo that belong to rank m's heads */
    cpb_view dy_j = fpdt_rows(m, L->dy, j, D);
    cpb_view wo = cpb_heads(L->wo, 0, blk, m->C, D, D, blk * D);
    cpb_view send = cpb_heads(P->dys, 0, m->c, m->C, blk, blk, m->c * blk);
    CPB_TRY(cpb_gemm(ctx, B->comp, 0, 1, 1.0f, dy_j, wo, 0.0f, send));
    if (j > 0) CPB_TRY(cpb_stream_wait(ctx, B->comp, P->ev_off)); /* doh (and dl) reached the host */
    CPB_TRY(cpb_all_to_all(ctx, B->comp, NULL, cpb_whole(P->dys), cpb_whole(P->doh)));
    CPB_TRY(cpb_stream_wait(ctx, B->comp, P->ev_in));
    if (!m->bwd_o)
        CPB_TRY(cpb_attn_delta(ctx, B->comp, fpdt_head_view(m, P->of, 0, m->hq),
                               fpdt_head_view(m, P->doh, 0, m->hq), fpdt_lse_view(m, P->dl, 0)));
    CPB_TRY(cpb_gemm(ctx, B->comp, 1, 0, 1.0f, cpb_mat(P->osf, 0, m->c, Hd, Hd), dy_j, 1.0f,
                     cpb_mat(L->dwo, 0, Hd, D, D)));
    CPB_TRY(cpb_stream_join(ctx, B->copy, B->comp));
    CPB_TRY(cpb_copy(ctx, B->copy, cpb_span(B->do_h, j * m->nq, m->nq), cpb_whole(P->doh)));
    if (!m->bwd_o) CPB_TRY(cpb_copy(ctx, B->copy, cpb_span(B->dl_h, j * m->nlse, m->nlse), cpb_whole(P->dl)));
    return cpb_event_record(ctx, B->copy, &P->ev_off);
}

int fpdt_bwd_prep(fpdt_bwd *B)
{
    cpb_ctx *ctx = B->ctx;
    const fpdt_dims *m = B->m;
    prep P = {.B = B};
    CPB_TRY(cpb_alloc(ctx, &P.dys, m->nq, m->E, CPB_TAG_A2A, "fpdt_dO_send"));
    CPB_TRY(cpb_alloc(ctx, &P.doh, m->nq, m->E, CPB_TAG_GRAD_ACT, "fpdt_dO"));
    if (!m->bwd_o) CPB_TRY(cpb_alloc(ctx, &P.of, m->nq, m->E, CPB_TAG_FETCH, "fpdt_o_fetch"));
    CPB_TRY(cpb_alloc(ctx, &P.osf, m->nq, m->E, CPB_TAG_FETCH, "fpdt_oseq_fetch"));
    if (!m->bwd_o) CPB_TRY(cpb_alloc(ctx, &P.dl, m->nlse, CPB_FP32, CPB_TAG_GRAD_ACT, "fpdt_delta"));
    for (int64_t j = 0; j < m->u; j++) CPB_RANGE(ctx, prep_chunk(&P, j), "dO%lld", (long long)j);
    CPB_TRY(cpb_stream_join(ctx, B->comp, B->copy));
    /* o in head layout stays on the host when the KV loop loads it */
    cpb_buf **all[] = {&P.dys, &P.doh, &P.of, &P.osf, &P.dl, &B->st->os_h, m->bwd_o ? NULL : &B->st->o_h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) CPB_TRY(cpb_free(ctx, B->comp, all[i]));
    return CPB_OK;
}
