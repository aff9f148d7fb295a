/* fpdt_fwd.c — FPDT forward.  Per chunk i: project x_i into the all-to-all slots, a2a
 * (seq->head), RoPE at the chunk's global positions, offload q_i, K_i, V_i to pinned host;
 * attention of q_i against its own K_i, V_i (causal diagonal) and then against K_k, V_k for
 * k < i fetched back from the host into two alternating slots (the fetch of k+1 overlaps
 * the attention of k), merged by log-sum-exp into an fp32 accumulator; a2a (head->seq) of
 * o_i; y_i = o_i Wo; o_i (both layouts) and lse_i go to the host.  Device memory is a fixed
 * set of chunk-sized buffers, reused by every chunk. */
#include <stdlib.h>

#include "fpdt.h"

typedef struct fwd {
    cpb_ctx *ctx;
    cpb_layer *L;
    fpdt_state *st;
    const fpdt_dims *m;
    int comp, copy;               /* compute (and all-to-alls), host<->device copies */
    cpb_buf *qs, *ks, *vs;        /* packed send buffers; qs also receives o */
    cpb_buf *qh, *kh, *vh;        /* this chunk's q, K, V, head layout */
    cpb_buf *kf[2], *vf[2];       /* fetched earlier K, V chunks (double buffer) */
    cpb_buf *op, *lp;             /* one attention block's o (storage) and lse */
    cpb_buf *oa, *la;             /* the fp32 o accumulator and its lse */
    cpb_buf *os;                  /* o in sequence layout [c][H*d], the Wo GEMM's input */
    int nfetch;                   /* fetch slots: min(2, u-1) */
    cpb_event ev_kv[2];           /* slot's fetch done (on copy) */
    cpb_event ev_off;             /* previous chunk's offloads done (on copy) */
} fwd;

static int alloc_host(fwd *F)
{
    cpb_ctx *ctx = F->ctx;
    const fpdt_dims *m = F->m;
    fpdt_state *st = F->st;
    CPB_TRY(cpb_alloc_host(ctx, &st->q_h, m->u * m->nq, m->E, CPB_TAG_SAVED, "fpdt_q_host"));
    CPB_TRY(cpb_alloc_host(ctx, &st->k_h, m->u * m->nkv, m->E, CPB_TAG_SAVED, "fpdt_k_host"));
    CPB_TRY(cpb_alloc_host(ctx, &st->v_h, m->u * m->nkv, m->E, CPB_TAG_SAVED, "fpdt_v_host"));
    CPB_TRY(cpb_alloc_host(ctx, &st->o_h, m->u * m->nq, m->E, CPB_TAG_SAVED, "fpdt_o_host"));
    CPB_TRY(cpb_alloc_host(ctx, &st->os_h, m->u * m->nq, m->E, CPB_TAG_SAVED, "fpdt_oseq_host"));
    CPB_TRY(cpb_alloc_host(ctx, &st->lse_h, m->u * m->nlse, CPB_FP32, CPB_TAG_SAVED, "fpdt_lse_host"));
    return CPB_OK;
}

static int alloc_device(fwd *F)
{
    cpb_ctx *ctx = F->ctx;
    const fpdt_dims *m = F->m;
    const cpb_dtype E = m->E;
    CPB_TRY(cpb_alloc(ctx, &F->qs, m->nq, E, CPB_TAG_A2A, "fpdt_q_send"));
    CPB_TRY(cpb_alloc(ctx, &F->ks, m->nkv, E, CPB_TAG_A2A, "fpdt_k_send"));
    CPB_TRY(cpb_alloc(ctx, &F->vs, m->nkv, E, CPB_TAG_A2A, "fpdt_v_send"));
    CPB_TRY(cpb_alloc(ctx, &F->qh, m->nq, E, CPB_TAG_QKV, "fpdt_q"));
    CPB_TRY(cpb_alloc(ctx, &F->kh, m->nkv, E, CPB_TAG_QKV, "fpdt_k"));
    CPB_TRY(cpb_alloc(ctx, &F->vh, m->nkv, E, CPB_TAG_QKV, "fpdt_v"));
    F->nfetch = m->u - 1 < 2 ? (int)(m->u - 1) : 2;
    for (int s = 0; s < F->nfetch; s++) {
        CPB_TRY(cpb_alloc(ctx, &F->kf[s], m->nkv, E, CPB_TAG_FETCH, s ? "fpdt_k_fetch1" : "fpdt_k_fetch0"));
        CPB_TRY(cpb_alloc(ctx, &F->vf[s], m->nkv, E, CPB_TAG_FETCH, s ? "fpdt_v_fetch1" : "fpdt_v_fetch0"));
    }
    CPB_TRY(cpb_alloc(ctx, &F->op, m->nq, E, CPB_TAG_ATTN, "fpdt_o_block"));
    if (m->u > 1) CPB_TRY(cpb_alloc(ctx, &F->lp, m->nlse, CPB_FP32, CPB_TAG_ATTN, "fpdt_lse_block"));
    CPB_TRY(cpb_alloc(ctx, &F->oa, m->nq, CPB_FP32, CPB_TAG_ATTN, "fpdt_o_acc"));
    CPB_TRY(cpb_alloc(ctx, &F->la, m->nlse, CPB_FP32, CPB_TAG_ATTN, "fpdt_lse_acc"));
    CPB_TRY(cpb_alloc(ctx, &F->os, m->nq, E, CPB_TAG_ATTN, "fpdt_o_seq"));
    return CPB_OK;
}

static int free_device(fwd *F)
{
    cpb_ctx *ctx = F->ctx;
    cpb_buf **all[] = {&F->qs, &F->ks, &F->vs, &F->qh, &F->kh, &F->vh, &F->kf[0], &F->vf[0],
                       &F->kf[1], &F->vf[1], &F->op, &F->lp, &F->oa, &F->la, &F->os};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CPB_TRY(cpb_free(ctx, F->comp, all[i]));
    return CPB_OK;
}

/* fetch K_k, V_k from the host into slot s, once compute is done with the slot */
static int fetch_kv(fwd *F, int64_t k, int s)
{
    cpb_ctx *ctx = F->ctx;
    const fpdt_dims *m = F->m;
    CPB_TRY(cpb_stream_join(ctx, F->copy, F->comp));
    CPB_TRY(cpb_copy(ctx, F->copy, cpb_whole(F->kf[s]), cpb_span(F->st->k_h, k * m->nkv, m->nkv)));
    CPB_TRY(cpb_copy(ctx, F->copy, cpb_whole(F->vf[s]), cpb_span(F->st->v_h, k * m->nkv, m->nkv)));
    return cpb_event_record(ctx, F->copy, &F->ev_kv[s]);
}

/* project, a2a (seq->head), RoPE; then q, K, V start their way to the host */
static int qkv_chunk(fwd *F, int64_t i)
{
    cpb_ctx *ctx = F->ctx;
    cpb_layer *L = F->L;
    const fpdt_dims *m = F->m;
    const int64_t d = m->d;
    cpb_view x_i = fpdt_rows(m, L->x, i, m->D);
    CPB_TRY(fpdt_project_packed(ctx, F->comp, m, x_i, L->wq, m->C, m->hq * d, 1, F->qs));
    CPB_TRY(fpdt_project_packed(ctx, F->comp, m, x_i, L->wk, m->nb, m->hk * d, m->rep, F->ks));
    CPB_TRY(fpdt_project_packed(ctx, F->comp, m, x_i, L->wv, m->nb, m->hk * d, m->rep, F->vs));
    /* q, K, V of the previous chunk must have reached the host before they are overwritten */
    if (i > 0) CPB_TRY(cpb_stream_wait(ctx, F->comp, F->ev_off));
    CPB_TRY(cpb_all_to_all(ctx, F->comp, NULL, cpb_whole(F->qs), cpb_whole(F->qh)));
    CPB_TRY(cpb_all_to_all(ctx, F->comp, NULL, cpb_whole(F->ks), cpb_whole(F->kh)));
    CPB_TRY(cpb_all_to_all(ctx, F->comp, NULL, cpb_whole(F->vs), cpb_whole(F->vh)));
    /* after the a2a the chunk is the contiguous global segment i on every rank, so RoPE is
     * one call per tensor here (as in DeepSpeed's fpdt_layer; RoPE acts per token, so
     * before or after the a2a gives the same values) */
    cpb_segs pos;
    fpdt_chunk_positions(m, i, &pos);
    CPB_TRY(cpb_rope(ctx, F->comp, fpdt_head_view(m, F->qh, 0, m->hq), &pos, m->base, 0));
    CPB_TRY(cpb_rope(ctx, F->comp, fpdt_head_view(m, F->kh, 0, m->hk), &pos, m->base, 0));
    return CPB_OK;
}

static int offload_qkv(fwd *F, int64_t i)
{
    cpb_ctx *ctx = F->ctx;
    const fpdt_dims *m = F->m;
    fpdt_state *st = F->st;
    CPB_TRY(cpb_stream_join(ctx, F->copy, F->comp));
    CPB_TRY(cpb_copy(ctx, F->copy, cpb_span(st->q_h, i * m->nq, m->nq), cpb_whole(F->qh)));
    CPB_TRY(cpb_copy(ctx, F->copy, cpb_span(st->k_h, i * m->nkv, m->nkv), cpb_whole(F->kh)));
    CPB_TRY(cpb_copy(ctx, F->copy, cpb_span(st->v_h, i * m->nkv, m->nkv), cpb_whole(F->vh)));
    return CPB_OK;
}

static cpb_attn_args attn_args(fwd *F, cpb_buf *k, cpb_buf *v, cpb_buf *lse, int causal, int64_t qi, int64_t ki)
{
    const fpdt_dims *m = F->m;
    cpb_attn_args a = {0};
    a.q = fpdt_head_view(m, F->qh, 0, m->hq);
    a.k = fpdt_head_view(m, k, 0, m->hk);
    a.v = fpdt_head_view(m, v, 0, m->hk);
    a.o = fpdt_head_view(m, F->op, 0, m->hq);
    a.lse = fpdt_lse_view(m, lse, 0);
    a.causal = causal;
    a.q_pos0 = qi * m->chunk;
    a.k_pos0 = ki * m->chunk;
    return a;
}

/* o_i = attention of q_i over K,V chunks 0..i, merged by lse in fp32 */
static int attend_chunk(fwd *F, int64_t i)
{
    cpb_ctx *ctx = F->ctx;
    const fpdt_dims *m = F->m;
    /* the diagonal block with the chunk's own K, V (no fetch needed); o_part, lse_acc were
     * read by the previous chunk's offload, which qkv_chunk already waited for */
    cpb_attn_args a = attn_args(F, F->kh, F->vh, F->la, 1, i, i);
    CPB_TRY(cpb_attn_fwd(ctx, F->comp, &a));
    cpb_view oacc = fpdt_head_view(m, F->oa, 0, m->hq);
    CPB_TRY(cpb_copy(ctx, F->comp, oacc, a.o));
    for (int64_t k = 0; k < i; k++) {
        int s = (int)(k % 2);
        /* the fetch of the next block overlaps this block's attention */
        if (k + 1 < i) CPB_RANGE(ctx, fetch_kv(F, k + 1, (int)((k + 1) % 2)), "fetch%lld", (long long)(k + 1));
        CPB_TRY(cpb_stream_wait(ctx, F->comp, F->ev_kv[s]));
        cpb_attn_args b = attn_args(F, F->kf[s], F->vf[s], F->lp, 0, i, k);
        CPB_TRY(cpb_attn_fwd(ctx, F->comp, &b));
        CPB_TRY(cpb_lse_merge(ctx, F->comp, oacc, fpdt_lse_view(m, F->la, 0), b.o, b.lse));
    }
    return CPB_OK;
}

/* a2a (head->seq) of o_i, y_i = o_i Wo, and o_i, lse_i to the host */
static int output_chunk(fwd *F, int64_t i)
{
    cpb_ctx *ctx = F->ctx;
    cpb_layer *L = F->L;
    const fpdt_dims *m = F->m;
    fpdt_state *st = F->st;
    const int64_t Hd = (int64_t)m->H * m->d;
    CPB_TRY(cpb_copy(ctx, F->comp, cpb_whole(F->op), cpb_whole(F->oa)));
    CPB_TRY(cpb_all_to_all(ctx, F->comp, NULL, cpb_whole(F->op), cpb_whole(F->qs)));
    CPB_TRY(fpdt_unpack(ctx, F->comp, m, F->qs, m->C, (int64_t)m->hq * m->d, 1, F->os));
    CPB_TRY(cpb_gemm(ctx, F->comp, 0, 0, 1.0f, cpb_mat(F->os, 0, m->c, Hd, Hd), cpb_mat(L->wo, 0, Hd, m->D, m->D),
                     0.0f, fpdt_rows(m, L->y, i, m->D)));
    CPB_TRY(cpb_stream_join(ctx, F->copy, F->comp));
    CPB_TRY(cpb_copy(ctx, F->copy, cpb_span(st->o_h, i * m->nq, m->nq), cpb_whole(F->op)));
    CPB_TRY(cpb_copy(ctx, F->copy, cpb_span(st->os_h, i * m->nq, m->nq), cpb_whole(F->os)));
    CPB_TRY(cpb_copy(ctx, F->copy, cpb_span(st->lse_h, i * m->nlse, m->nlse), cpb_whole(F->la)));
    return cpb_event_record(ctx, F->copy, &F->ev_off);
}

static int chunk_step(fwd *F, int64_t i)
{
    /* the first earlier KV block starts coming back while this chunk is projected */
    if (i > 0) CPB_RANGE(F->ctx, fetch_kv(F, 0, 0), "fetch0");
    CPB_RANGE(F->ctx, qkv_chunk(F, i), "qkv");
    CPB_RANGE(F->ctx, offload_qkv(F, i), "offload");
    CPB_RANGE(F->ctx, attend_chunk(F, i), "attn");
    CPB_RANGE(F->ctx, output_chunk(F, i), "out");
    return CPB_OK;
}

static int fwd_run(fwd *F)
{
    CPB_TRY(alloc_host(F));
    CPB_TRY(alloc_device(F));
    for (int64_t i = 0; i < F->m->u; i++) CPB_RANGE(F->ctx, chunk_step(F, i), "chunk%lld", (long long)i);
    /* the last offloads finish before the device buffers go */
    CPB_TRY(cpb_stream_join(F->ctx, F->comp, F->copy));
    return free_device(F);
}

int fpdt_pipe_forward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    fpdt_state *st = state;
    char why[512];
    if (fpdt_dims_init(&L->p, cpb_rank(ctx), &st->m, why, sizeof why) != CPB_OK)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s", why);
    fwd F = {.ctx = ctx, .L = L, .st = st, .m = &st->m, .comp = CPB_STREAM_COMPUTE};
    CPB_TRY(cpb_stream(ctx, "copy", &F.copy));
    return fwd_run(&F);
}
