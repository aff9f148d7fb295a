/* fpdt_bwd.c — FPDT backward.  After the dO/delta pass (fpdt_bwd_prep.c): outer loop over
 * KV chunks i, inner loop over Q chunks j >= i.  K_i, V_i and the fp32 dK_i, dV_i
 * accumulators stay on the device for the outer step (K_{i+1}, V_{i+1} are prefetched into
 * the other slot); every (i, j) block fetches q_j, dO_j, lse_j, o_j (or delta_j with
 * --fpdt-bwd delta) and the fp32 dq_j
 * accumulator from the host into one of two slots while the previous block computes, and
 * writes dq_j back.  dq_i's last contribution is block (i, i), the first of step i, so at
 * the end of step i dq_i, dK_i, dV_i are final: RoPE backward, a2a (head->seq), dx_i and the
 * dW contributions of chunk i happen there.  Host<->device traffic is O(u^2) chunks. */
#include <stdlib.h>

#include "common/grad_acc.h"
#include "common/proj_bwd.h"
#include "fpdt_bwd.h"

static int alloc_host(fpdt_bwd *B)
{
    const fpdt_dims *m = B->m;
    CPB_TRY(cpb_alloc_host(B->ctx, &B->do_h, m->u * m->nq, m->E, CPB_TAG_GRAD_ACT, "fpdt_dO_host"));
    if (!m->bwd_o)
        CPB_TRY(cpb_alloc_host(B->ctx, &B->dl_h, m->u * m->nlse, CPB_FP32, CPB_TAG_GRAD_ACT, "fpdt_delta_host"));
    /* chunk 0's dq is final in block (0, 0) and never leaves the device */
    if (m->u > 1)
        CPB_TRY(cpb_alloc_host(B->ctx, &B->dq_h, (m->u - 1) * m->nq, CPB_FP32, CPB_TAG_GRAD_ACT, "fpdt_dq_host"));
    return CPB_OK;
}

static int alloc_loop(fpdt_bwd *B)
{
    cpb_ctx *ctx = B->ctx;
    const fpdt_dims *m = B->m;
    const cpb_dtype E = m->E;
    const int64_t npairs = m->u * (m->u + 1) / 2;
    B->nkv_slots = m->u < 2 ? 1 : 2;
    B->nq_slots = npairs < 2 ? 1 : 2;
    for (int s = 0; s < B->nkv_slots; s++) {
        CPB_TRY(cpb_alloc(ctx, &B->kf[s], m->nkv, E, CPB_TAG_FETCH, "fpdt_k_fetch"));
        CPB_TRY(cpb_alloc(ctx, &B->vf[s], m->nkv, E, CPB_TAG_FETCH, "fpdt_v_fetch"));
    }
    CPB_TRY(cpb_alloc(ctx, &B->dka, m->nkv, CPB_FP32, CPB_TAG_GRAD_ACT, "fpdt_dk_acc"));
    CPB_TRY(cpb_alloc(ctx, &B->dva, m->nkv, CPB_FP32, CPB_TAG_GRAD_ACT, "fpdt_dv_acc"));
    for (int s = 0; s < B->nq_slots; s++) {
        CPB_TRY(cpb_alloc(ctx, &B->qf[s], m->nq, E, CPB_TAG_FETCH, "fpdt_q_fetch"));
        CPB_TRY(cpb_alloc(ctx, &B->dof[s], m->nq, E, CPB_TAG_FETCH, "fpdt_dO_fetch"));
        CPB_TRY(cpb_alloc(ctx, &B->lsef[s], m->nlse, CPB_FP32, CPB_TAG_FETCH, "fpdt_lse_fetch"));
        if (m->bwd_o)
            CPB_TRY(cpb_alloc(ctx, &B->of[s], m->nq, E, CPB_TAG_FETCH, "fpdt_o_fetch"));
        else
            CPB_TRY(cpb_alloc(ctx, &B->delf[s], m->nlse, CPB_FP32, CPB_TAG_FETCH, "fpdt_delta_fetch"));
        CPB_TRY(cpb_alloc(ctx, &B->dqa[s], m->nq, CPB_FP32, CPB_TAG_GRAD_ACT, "fpdt_dq_acc"));
    }
    const int64_t Hd = (int64_t)m->H * m->d, Gd = (int64_t)m->G * m->d;
    CPB_TRY(cpb_alloc(ctx, &B->dqs, m->nq, E, CPB_TAG_A2A, "fpdt_dq_send"));
    CPB_TRY(cpb_alloc(ctx, &B->dks, m->nkv, E, CPB_TAG_A2A, "fpdt_dk_send"));
    CPB_TRY(cpb_alloc(ctx, &B->dvs, m->nkv, E, CPB_TAG_A2A, "fpdt_dv_send"));
    CPB_TRY(cpb_alloc(ctx, &B->dqr, m->nq, E, CPB_TAG_A2A, "fpdt_dq_recv"));
    CPB_TRY(cpb_alloc(ctx, &B->dkr, m->nkv, E, CPB_TAG_A2A, "fpdt_dk_recv"));
    CPB_TRY(cpb_alloc(ctx, &B->dvr, m->nkv, E, CPB_TAG_A2A, "fpdt_dv_recv"));
    CPB_TRY(cpb_alloc(ctx, &B->dqseq, m->c * Hd, E, CPB_TAG_GRAD_ACT, "fpdt_dq_seq"));
    CPB_TRY(cpb_alloc(ctx, &B->dkseq, m->c * Gd, E, CPB_TAG_GRAD_ACT, "fpdt_dk_seq"));
    CPB_TRY(cpb_alloc(ctx, &B->dvseq, m->c * Gd, E, CPB_TAG_GRAD_ACT, "fpdt_dv_seq"));
    CPB_TRY(cpb_alloc(ctx, &B->dxa, m->c * m->D, CPB_FP32, CPB_TAG_GRAD_ACT, "fpdt_dx_acc"));
    return CPB_OK;
}

static int free_all(fpdt_bwd *B)
{
    cpb_ctx *ctx = B->ctx;
    fpdt_state *st = B->st;
    cpb_buf **all[] = {&B->kf[0], &B->vf[0], &B->kf[1], &B->vf[1], &B->dka, &B->dva, &B->qf[0], &B->dof[0],
                       &B->lsef[0], &B->delf[0], &B->dqa[0], &B->qf[1], &B->dof[1], &B->lsef[1], &B->delf[1],
                       &B->dqa[1], &B->of[0], &B->of[1], &B->dqs, &B->dks, &B->dvs, &B->dqr, &B->dkr, &B->dvr, &B->dqseq,
                       &B->dkseq, &B->dvseq, &B->dxa, &B->do_h, &B->dl_h, &B->dq_h, &st->q_h, &st->k_h,
                       &st->v_h, &st->lse_h, &st->o_h, &st->os_h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CPB_TRY(cpb_free(ctx, B->comp, all[i]));
    return CPB_OK;
}

/* K_i, V_i into kv slot s, once compute is done with the slot */
static int fetch_kv(fpdt_bwd *B, int64_t i, int s)
{
    cpb_ctx *ctx = B->ctx;
    const fpdt_dims *m = B->m;
    CPB_TRY(cpb_stream_join(ctx, B->copy, B->comp));
    CPB_TRY(cpb_copy(ctx, B->copy, cpb_whole(B->kf[s]), cpb_span(B->st->k_h, i * m->nkv, m->nkv)));
    CPB_TRY(cpb_copy(ctx, B->copy, cpb_whole(B->vf[s]), cpb_span(B->st->v_h, i * m->nkv, m->nkv)));
    return cpb_event_record(ctx, B->copy, &B->ev_kv[s]);
}

/* what block (i, j) needs of Q chunk j into q slot s; dq_j's partial sum exists from i > 0 */
static int fetch_q(fpdt_bwd *B, int64_t i, int64_t j, int s)
{
    cpb_ctx *ctx = B->ctx;
    const fpdt_dims *m = B->m;
    fpdt_state *st = B->st;
    CPB_TRY(cpb_stream_join(ctx, B->copy, B->comp));
    CPB_TRY(cpb_copy(ctx, B->copy, cpb_whole(B->qf[s]), cpb_span(st->q_h, j * m->nq, m->nq)));
    CPB_TRY(cpb_copy(ctx, B->copy, cpb_whole(B->dof[s]), cpb_span(B->do_h, j * m->nq, m->nq)));
    CPB_TRY(cpb_copy(ctx, B->copy, cpb_whole(B->lsef[s]), cpb_span(st->lse_h, j * m->nlse, m->nlse)));
    if (m->bwd_o)
        CPB_TRY(cpb_copy(ctx, B->copy, cpb_whole(B->of[s]), cpb_span(st->o_h, j * m->nq, m->nq)));
    else
        CPB_TRY(cpb_copy(ctx, B->copy, cpb_whole(B->delf[s]), cpb_span(B->dl_h, j * m->nlse, m->nlse)));
    if (i > 0) CPB_TRY(cpb_copy(ctx, B->copy, cpb_whole(B->dqa[s]), cpb_span(B->dq_h, (j - 1) * m->nq, m->nq)));
    return cpb_event_record(ctx, B->copy, &B->ev_q[s]);
}

/* block (i, j), the n-th of the whole loop, in q slot n % 2 */
static int block(fpdt_bwd *B, int64_t i, int64_t j, int64_t n)
{
    cpb_ctx *ctx = B->ctx;
    const fpdt_dims *m = B->m;
    const int s = (int)(n % 2), kvs = (int)(i % 2);
    const int last = i == m->u - 1 && j == m->u - 1;
    const int64_t ni = j + 1 < m->u ? i : i + 1, nj = j + 1 < m->u ? j + 1 : i + 1;
    /* the next block's inputs come in while this one computes, except when it needs the
     * dq_j this block is about to write back (block (u-2, u-1) then (u-1, u-1)) */
    const int defer = !last && nj == j;
    if (!last && !defer) CPB_RANGE(ctx, fetch_q(B, ni, nj, s ^ 1), "fetch");
    CPB_TRY(cpb_stream_wait(ctx, B->comp, B->ev_q[s]));
    if (i == 0) CPB_TRY(cpb_fill(ctx, B->comp, cpb_whole(B->dqa[s]), 0.0f));
    cpb_attn_args a = {0};
    a.q = fpdt_head_view(m, B->qf[s], 0, m->hq);
    a.k = fpdt_head_view(m, B->kf[kvs], 0, m->hk);
    a.v = fpdt_head_view(m, B->vf[kvs], 0, m->hk);
    a.lse = fpdt_lse_view(m, B->lsef[s], 0);
    if (m->bwd_o)
        a.o = fpdt_head_view(m, B->of[s], 0, m->hq);
    else
        a.delta = fpdt_lse_view(m, B->delf[s], 0);
    a.d_o = fpdt_head_view(m, B->dof[s], 0, m->hq);
    a.dq = fpdt_head_view(m, B->dqa[s], 0, m->hq);
    a.dk = fpdt_head_view(m, B->dka, 0, m->hk);
    a.dv = fpdt_head_view(m, B->dva, 0, m->hk);
    a.causal = i == j;
    a.q_pos0 = j * m->chunk;
    a.k_pos0 = i * m->chunk;
    a.accumulate = 1;
    CPB_TRY(cpb_attn_bwd(ctx, B->comp, &a));
    if (j > i) {
        /* dq_j still misses KV chunks i+1..j: back to the host */
        CPB_TRY(cpb_stream_join(ctx, B->copy, B->comp));
        CPB_TRY(cpb_copy(ctx, B->copy, cpb_span(B->dq_h, (j - 1) * m->nq, m->nq), cpb_whole(B->dqa[s])));
    } else {
        /* dq_i is final: RoPE backward in fp32, then to the storage dtype for the a2a */
        cpb_segs pos;
        fpdt_chunk_positions(m, i, &pos);
        CPB_TRY(cpb_rope(ctx, B->comp, a.dq, &pos, m->base, 1));
        CPB_TRY(cpb_copy(ctx, B->comp, cpb_whole(B->dqs), cpb_whole(B->dqa[s])));
    }
    if (defer) CPB_RANGE(ctx, fetch_q(B, ni, nj, s ^ 1), "fetch");
    return CPB_OK;
}

/* chunk i's dq, dK, dV are final: a2a back, dW and dx_i */
static int finish(fpdt_bwd *B, int64_t i)
{
    cpb_ctx *ctx = B->ctx;
    cpb_layer *L = B->L;
    const fpdt_dims *m = B->m;
    const int comp = B->comp;
    const int64_t D = m->D, Hd = (int64_t)m->H * m->d, Gd = (int64_t)m->G * m->d;
    const int64_t kblk = (int64_t)m->hk * m->d;
    cpb_segs pos;
    fpdt_chunk_positions(m, i, &pos);
    CPB_TRY(cpb_rope(ctx, comp, fpdt_head_view(m, B->dka, 0, m->hk), &pos, m->base, 1));
    CPB_TRY(cpb_copy(ctx, comp, cpb_whole(B->dks), cpb_whole(B->dka)));
    CPB_TRY(cpb_copy(ctx, comp, cpb_whole(B->dvs), cpb_whole(B->dva)));
    CPB_TRY(cpb_all_to_all(ctx, comp, NULL, cpb_whole(B->dqs), cpb_whole(B->dqr)));
    CPB_TRY(cpb_all_to_all(ctx, comp, NULL, cpb_whole(B->dks), cpb_whole(B->dkr)));
    CPB_TRY(cpb_all_to_all(ctx, comp, NULL, cpb_whole(B->dvs), cpb_whole(B->dvr)));
    /* replicated kv heads (G < C): each replica's gradient is summed here */
    CPB_TRY(fpdt_unpack(ctx, comp, m, B->dqr, m->C, (int64_t)m->hq * m->d, 1, B->dqseq));
    CPB_TRY(fpdt_unpack(ctx, comp, m, B->dkr, m->nb, kblk, m->rep, B->dkseq));
    CPB_TRY(fpdt_unpack(ctx, comp, m, B->dvr, m->nb, kblk, m->rep, B->dvseq));
    cpb_view x_i = fpdt_rows(m, L->x, i, D);
    cpb_view dq = cpb_mat(B->dqseq, 0, m->c, Hd, Hd);
    cpb_view dk = cpb_mat(B->dkseq, 0, m->c, Gd, Gd);
    cpb_view dv = cpb_mat(B->dvseq, 0, m->c, Gd, Gd);
    cpb_qkv_views grad = {dq, dk, dv};
    cpb_qkv_views dw = {cpb_mat(L->dwq, 0, D, Hd, Hd), cpb_mat(L->dwk, 0, D, Gd, Gd), cpb_mat(L->dwv, 0, D, Gd, Gd)};
    CPB_TRY(cpb_proj_bwd_dw(ctx, comp, x_i, grad, 1.0f, dw));
    /* dx_i in fp32, rounded once to the storage dtype */
    cpb_view dxa = cpb_mat(B->dxa, 0, m->c, D, D);
    cpb_qkv_views w = {cpb_mat(L->wq, 0, D, Hd, Hd), cpb_mat(L->wk, 0, D, Gd, Gd), cpb_mat(L->wv, 0, D, Gd, Gd)};
    CPB_TRY(cpb_proj_bwd_dx(ctx, comp, grad, w, 0.0f, dxa));
    return cpb_copy(ctx, comp, fpdt_rows(m, L->dx, i, D), dxa);
}

static int kv_step(fpdt_bwd *B, int64_t i, int64_t *n)
{
    cpb_ctx *ctx = B->ctx;
    const fpdt_dims *m = B->m;
    if (i + 1 < m->u) CPB_RANGE(ctx, fetch_kv(B, i + 1, (int)((i + 1) % 2)), "fetch_kv");
    CPB_TRY(cpb_stream_wait(ctx, B->comp, B->ev_kv[i % 2]));
    CPB_TRY(cpb_fill(ctx, B->comp, cpb_whole(B->dka), 0.0f));
    CPB_TRY(cpb_fill(ctx, B->comp, cpb_whole(B->dva), 0.0f));
    for (int64_t j = i; j < m->u; j++, (*n)++) CPB_RANGE(ctx, block(B, i, j, *n), "q%lld", (long long)j);
    CPB_RANGE(ctx, finish(B, i), "finish");
    return CPB_OK;
}

static int bwd_run(fpdt_bwd *B)
{
    cpb_ctx *ctx = B->ctx;
    cpb_layer *L = B->L;
    const int comp = B->comp;
    /* backward overwrites the dW partials: start from zero, every chunk adds its part */
    CPB_TRY(cpb_zero_dw(ctx, L));
    CPB_TRY(alloc_host(B));
    CPB_RANGE(ctx, fpdt_bwd_prep(B), "prep");
    CPB_TRY(alloc_loop(B));
    CPB_RANGE(ctx, fetch_kv(B, 0, 0), "fetch_kv");
    CPB_RANGE(ctx, fetch_q(B, 0, 0, 0), "fetch");
    int64_t n = 0;
    for (int64_t i = 0; i < B->m->u; i++) CPB_RANGE(ctx, kv_step(B, i, &n), "kv%lld", (long long)i);
    /* the last dq write-backs are done before anything is freed */
    CPB_TRY(cpb_stream_join(ctx, comp, B->copy));
    return free_all(B);
}

int fpdt_pipe_backward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    fpdt_state *st = state;
    if (!st) return cpb_fail(ctx, CPB_ERR_INVALID, "fpdt backward: no forward state");
    fpdt_bwd B = {.ctx = ctx, .L = L, .st = st, .m = &st->m, .comp = CPB_STREAM_COMPUTE};
    CPB_TRY(cpb_stream(ctx, "copy", &B.copy));
    return bwd_run(&B);
}
