/* fpdt_ds_bwd.c — the backward of DeepSpeed's FPDT (fpdt_ds.h), after
 * _FPDTGPUOffloadingAttentionImpl_.backward (deepspeed/sequence/fpdt_layer.py, 0.17.4),
 * preceded by the dense layer's backward (dWo, and the full grad_output dy Wo^T) and
 * followed by the concatenation of the per-chunk input gradients.
 *
 * Outer loop over K,V chunks i, inner loop over q chunks j >= i.  Block (i, j): fresh
 * dq, dk, dv in the storage dtype from the attention backward (o given, delta derived);
 * meanwhile the offload stream frees the previous block's dq, loads the next block's fp32
 * dq, q, o, lse and dO (in the first outer step the next chunk's dO is exchanged there
 * instead, with a barrier, and sent to the host); a sync; the block's gradients added into
 * the fp32 dq_j (on the device) and dK, dV accumulators; dq_j written back to the host on
 * the offload stream.  After outer step i: dq_i, dK_i, dV_i to the storage dtype, RoPE
 * backward, exchanged back, a barrier, the dW contributions and the chunk's input
 * gradient; the next K,V chunk (offload stream) and layer input chunk (general stream)
 * loaded; a sync. */
#include <stdlib.h>

#include "fpdt_ds.h"

/* dO of chunk j: its rows of grad_output packed per destination, exchanged on `stream` */
static int exchange_grad_output(fpdt_ds *D, int stream, cpb_buf *go, int64_t j, cpb_buf **dev)
{
    cpb_ctx *ctx = D->ctx;
    const fpdt_dims *m = &D->m;
    const int64_t blk = (int64_t)m->hq * m->d, Hd = (int64_t)m->H * m->d;
    cpb_buf *send = NULL;
    CPB_TRY(cpb_alloc(ctx, &send, m->nq, m->E, CPB_TAG_A2A, "fpdt_dO_send"));
    CPB_TRY(cpb_copy(ctx, stream, cpb_heads(send, 0, m->c, m->C, blk, blk, m->c * blk),
                     cpb_heads(go, j * m->c * Hd, m->c, m->C, blk, Hd, blk)));
    CPB_TRY(cpb_alloc(ctx, dev, m->nq, m->E, CPB_TAG_GRAD_ACT, "fpdt_dO"));
    CPB_TRY(cpb_all_to_all(ctx, stream, NULL, cpb_whole(send), cpb_whole(*dev)));
    return cpb_free(ctx, stream, &send);
}

/* what block (i, j) needs of q chunk j, loaded (or, for dO, exchanged) on the offload
 * stream; dq_j's partial sums come back from the host */
static int load_q(fpdt_ds *D, cpb_buf *go, int64_t j)
{
    CPB_TRY(fpdt_ds_load(D, D->off, D->dqh[j], CPB_TAG_GRAD_ACT, "fpdt_dq", &D->dq[j]));
    CPB_TRY(fpdt_ds_load(D, D->off, D->qh[j], CPB_TAG_FETCH, "fpdt_q_load", &D->q[j]));
    CPB_TRY(fpdt_ds_load(D, D->off, D->oh[j], CPB_TAG_FETCH, "fpdt_o_load", &D->o[j]));
    CPB_TRY(fpdt_ds_load(D, D->off, D->lh[j], CPB_TAG_FETCH, "fpdt_lse_load", &D->lse[j]));
    if (D->doh[j]) return fpdt_ds_load(D, D->off, D->doh[j], CPB_TAG_FETCH, "fpdt_dO_load", &D->d_o[j]);
    CPB_TRY(exchange_grad_output(D, D->off, go, j, &D->d_o[j]));
    CPB_TRY(fpdt_ds_barrier(D, D->off));
    return fpdt_ds_store(D, D->off, D->d_o[j], CPB_TAG_GRAD_ACT, "fpdt_dO_host", &D->doh[j]);
}

/* block (i, j); *last_j is the previous block's q chunk, *next_j the next block's */
static int block(fpdt_ds *D, cpb_buf *go, int64_t i, int64_t j, int64_t *last_j, int64_t *next_j, cpb_buf *dka,
                 cpb_buf *dva, int first)
{
    cpb_ctx *ctx = D->ctx;
    const fpdt_dims *m = &D->m;
    cpb_buf *dqt = NULL, *dkt = NULL, *dvt = NULL;
    CPB_TRY(cpb_alloc(ctx, &dqt, m->nq, m->E, CPB_TAG_GRAD_ACT, "fpdt_dq_this"));
    CPB_TRY(cpb_alloc(ctx, &dkt, m->nkv, m->E, CPB_TAG_GRAD_ACT, "fpdt_dk_this"));
    CPB_TRY(cpb_alloc(ctx, &dvt, m->nkv, m->E, CPB_TAG_GRAD_ACT, "fpdt_dv_this"));
    CPB_TRY(cpb_fill(ctx, D->comp, cpb_whole(dqt), 0.0f));
    CPB_TRY(cpb_fill(ctx, D->comp, cpb_whole(dkt), 0.0f));
    CPB_TRY(cpb_fill(ctx, D->comp, cpb_whole(dvt), 0.0f));
    cpb_attn_args a = {0};
    a.q = fpdt_head_view(m, D->q[j], 0, m->hq);
    a.k = fpdt_head_view(m, D->k[i], 0, m->hk);
    a.v = fpdt_head_view(m, D->v[i], 0, m->hk);
    a.o = fpdt_head_view(m, D->o[j], 0, m->hq);
    a.lse = fpdt_lse_view(m, D->lse[j], 0);
    a.d_o = fpdt_head_view(m, D->d_o[j], 0, m->hq);
    a.dq = fpdt_head_view(m, dqt, 0, m->hq);
    a.dk = fpdt_head_view(m, dkt, 0, m->hk);
    a.dv = fpdt_head_view(m, dvt, 0, m->hk);
    a.causal = i == j;
    a.q_pos0 = j * m->chunk;
    a.k_pos0 = i * m->chunk;
    CPB_TRY(cpb_attn_bwd(ctx, D->comp, &a));
    /* the next block: (i, j+1), or (i+1, i+1) after the last q chunk; in the last outer
     * step fpdt_layer.py keeps the previous choice, which is this block: nothing to load */
    if (i != m->u - 1) *next_j = j != m->u - 1 ? j + 1 : i + 1;
    int can_offload = *next_j != j;
    if (can_offload) {
        if (!first && *last_j != i) CPB_TRY(cpb_free(ctx, D->off, &D->dq[*last_j])); /* dq[last].offload() */
        CPB_TRY(load_q(D, go, *next_j));
    }
    CPB_TRY(fpdt_ds_sync_compute(D));
    CPB_TRY(cpb_axpby(ctx, D->comp, 1.0f, cpb_whole(dqt), 1.0f, cpb_whole(D->dq[j])));
    CPB_TRY(cpb_axpby(ctx, D->comp, 1.0f, cpb_whole(dkt), 1.0f, cpb_whole(dka)));
    CPB_TRY(cpb_axpby(ctx, D->comp, 1.0f, cpb_whole(dvt), 1.0f, cpb_whole(dva)));
    CPB_TRY(cpb_free(ctx, D->comp, &dqt));
    CPB_TRY(cpb_free(ctx, D->comp, &dkt));
    CPB_TRY(cpb_free(ctx, D->comp, &dvt));
    /* dq[j].overwrite_to_cpu() on the offload stream */
    CPB_TRY(cpb_stream_join(ctx, D->off, D->comp));
    CPB_TRY(cpb_copy(ctx, D->off, cpb_whole(D->dqh[j]), cpb_whole(D->dq[j])));
    if (can_offload) {
        cpb_buf **gone[] = {&D->q[j], &D->o[j], &D->lse[j], &D->d_o[j]};
        for (size_t t = 0; t < sizeof gone / sizeof gone[0]; t++) CPB_TRY(cpb_free(ctx, D->comp, gone[t]));
    }
    *last_j = j;
    return CPB_OK;
}

/* chunk i's dq, dK, dV are final: to the storage dtype, RoPE backward, exchanged back,
 * a barrier, dW and the chunk's input gradient */
static int finish(fpdt_ds *D, int64_t i, cpb_buf *dka, cpb_buf *dva, cpb_buf *gl)
{
    cpb_ctx *ctx = D->ctx;
    cpb_layer *L = D->L;
    const fpdt_dims *m = &D->m;
    const int64_t Dm = m->D, Hd = (int64_t)m->H * m->d, Gd = (int64_t)m->G * m->d;
    cpb_segs pos;
    fpdt_chunk_positions(m, i, &pos);
    struct { cpb_buf *acc; int64_t n; int heads, rope, nblocks, rep; int64_t blk, width; const char *name; } t[3] = {
        {D->dq[i], m->nq, m->hq, 1, m->C, 1, (int64_t)m->hq * m->d, Hd, "fpdt_dq_seq"},
        {dka, m->nkv, m->hk, 1, m->nb, m->rep, (int64_t)m->hk * m->d, Gd, "fpdt_dk_seq"},
        {dva, m->nkv, m->hk, 0, m->nb, m->rep, (int64_t)m->hk * m->d, Gd, "fpdt_dv_seq"},
    };
    cpb_buf *seq[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; k++) {
        cpb_buf *h = NULL, *recv = NULL;
        CPB_TRY(cpb_alloc(ctx, &h, t[k].n, m->E, CPB_TAG_GRAD_ACT, "fpdt_grad"));
        CPB_TRY(cpb_copy(ctx, D->comp, cpb_whole(h), cpb_whole(t[k].acc)));
        if (t[k].rope) CPB_TRY(cpb_rope(ctx, D->comp, fpdt_head_view(m, h, 0, t[k].heads), &pos, m->base, 1));
        CPB_TRY(cpb_alloc(ctx, &recv, t[k].n, m->E, CPB_TAG_A2A, "fpdt_grad_recv"));
        CPB_TRY(cpb_all_to_all(ctx, D->comp, NULL, cpb_whole(h), cpb_whole(recv)));
        CPB_TRY(cpb_free(ctx, D->comp, &h));
        CPB_TRY(cpb_alloc(ctx, &seq[k], m->c * t[k].width, m->E, CPB_TAG_GRAD_ACT, t[k].name));
        /* replicated kv heads (G < C): each replica's gradient is summed here */
        CPB_TRY(fpdt_unpack(ctx, D->comp, m, recv, t[k].nblocks, t[k].blk, t[k].rep, seq[k]));
        CPB_TRY(cpb_free(ctx, D->comp, &recv));
    }
    /* general_offload_stream.synchronize(); compute waits for it; dist.barrier() */
    CPB_TRY(fpdt_ds_host_waits(D, D->gen));
    CPB_TRY(fpdt_ds_barrier(D, D->comp));
    cpb_view x_i = cpb_mat(D->x[i], 0, m->c, Dm, Dm);
    cpb_buf *w[3] = {L->wq, L->wk, L->wv}, *dw[3] = {L->dwq, L->dwk, L->dwv};
    for (int k = 0; k < 3; k++) {
        cpb_view g = cpb_mat(seq[k], 0, m->c, t[k].width, t[k].width);
        CPB_TRY(cpb_gemm(ctx, D->comp, 1, 0, 1.0f, x_i, g, 1.0f, cpb_mat(dw[k], 0, Dm, t[k].width, t[k].width)));
        CPB_TRY(cpb_gemm(ctx, D->comp, 0, 1, 1.0f, g, cpb_mat(w[k], 0, Dm, t[k].width, t[k].width), 1.0f,
                         cpb_mat(gl, 0, m->c, Dm, Dm)));
    }
    for (int k = 0; k < 3; k++) CPB_TRY(cpb_free(ctx, D->comp, &seq[k]));
    return cpb_free(ctx, D->comp, &D->dq[i]); /* dq[i].offload(); dq[i] = None */
}

static int bwd_run(fpdt_ds *D)
{
    cpb_ctx *ctx = D->ctx;
    cpb_layer *L = D->L;
    const fpdt_dims *m = &D->m;
    const int64_t u = m->u, Hd = (int64_t)m->H * m->d, s = m->c * u;
    /* the dense layer's backward: dWo from its saved input, the full grad_output */
    cpb_buf *go = NULL, *dka = NULL, *dva = NULL;
    CPB_TRY(cpb_fill(ctx, D->comp, cpb_whole(L->dwo), 0.0f));
    CPB_TRY(cpb_gemm(ctx, D->comp, 1, 0, 1.0f, cpb_mat(D->cat, 0, s, Hd, Hd), cpb_mat(L->dy, 0, s, m->D, m->D), 0.0f,
                     cpb_mat(L->dwo, 0, Hd, m->D, m->D)));
    CPB_TRY(cpb_alloc(ctx, &go, s * Hd, m->E, CPB_TAG_GRAD_ACT, "fpdt_grad_output"));
    CPB_TRY(cpb_gemm(ctx, D->comp, 0, 1, 1.0f, cpb_mat(L->dy, 0, s, m->D, m->D), cpb_mat(L->wo, 0, Hd, m->D, m->D),
                     0.0f, cpb_mat(go, 0, s, Hd, Hd)));
    CPB_TRY(cpb_free(ctx, D->comp, &D->cat));
    /* grad_layernorm_output: one zeroed [c][D] per chunk */
    cpb_buf **gl = calloc((size_t)u, sizeof *gl);
    if (!gl) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "fpdt: out of host memory");
    int rc = CPB_OK;
    for (int64_t i = 0; i < u && rc == CPB_OK; i++) {
        rc = cpb_alloc(ctx, &gl[i], m->c * m->D, m->E, CPB_TAG_GRAD_ACT, "fpdt_grad_input");
        if (rc == CPB_OK) rc = cpb_fill(ctx, D->comp, cpb_whole(gl[i]), 0.0f);
    }
    cpb_buf *dw[3] = {L->dwq, L->dwk, L->dwv};
    for (int k = 0; k < 3 && rc == CPB_OK; k++) rc = cpb_fill(ctx, D->comp, cpb_whole(dw[k]), 0.0f);
    if (rc == CPB_OK) rc = fpdt_ds_load(D, D->gen, D->xh[0], CPB_TAG_FETCH, "fpdt_x_load", &D->x[0]);
    if (rc == CPB_OK) rc = exchange_grad_output(D, D->comp, go, 0, &D->d_o[0]);
    if (rc == CPB_OK) rc = cpb_sync(ctx); /* get_accelerator().synchronize() */
    /* on the offload stream: dO_0 and chunk 0's zeroed dq to the host; the host zero-fills
     * the pinned dq of the other chunks; fp32 dK, dV accumulators */
    if (rc == CPB_OK) rc = fpdt_ds_store(D, D->off, D->d_o[0], CPB_TAG_GRAD_ACT, "fpdt_dO_host", &D->doh[0]);
    if (rc == CPB_OK) rc = cpb_alloc(ctx, &D->dq[0], m->nq, CPB_FP32, CPB_TAG_GRAD_ACT, "fpdt_dq");
    if (rc == CPB_OK) rc = cpb_fill(ctx, D->off, cpb_whole(D->dq[0]), 0.0f);
    if (rc == CPB_OK) rc = fpdt_ds_store(D, D->off, D->dq[0], CPB_TAG_GRAD_ACT, "fpdt_dq_host", &D->dqh[0]);
    for (int64_t j = 1; j < u && rc == CPB_OK; j++) {
        rc = cpb_alloc_host(ctx, &D->dqh[j], m->nq, CPB_FP32, CPB_TAG_GRAD_ACT, "fpdt_dq_host");
        if (rc == CPB_OK) rc = cpb_fill(ctx, D->off, cpb_whole(D->dqh[j]), 0.0f);
    }
    /* the host filled them: nothing issued afterwards starts earlier */
    if (rc == CPB_OK) rc = fpdt_ds_host_waits(D, D->off);
    if (rc == CPB_OK) rc = cpb_alloc(ctx, &dka, m->nkv, CPB_FP32, CPB_TAG_GRAD_ACT, "fpdt_dk_acc");
    if (rc == CPB_OK) rc = cpb_alloc(ctx, &dva, m->nkv, CPB_FP32, CPB_TAG_GRAD_ACT, "fpdt_dv_acc");
    if (rc == CPB_OK) rc = cpb_fill(ctx, D->off, cpb_whole(dka), 0.0f);
    if (rc == CPB_OK) rc = cpb_fill(ctx, D->off, cpb_whole(dva), 0.0f);
    int64_t last_j = 0, next_j = 0;
    for (int64_t i = 0; i < u && rc == CPB_OK; i++) {
        rc = cpb_range_push(ctx, "kv%lld", (long long)i);
        for (int64_t j = i; j < u && rc == CPB_OK; j++) {
            rc = cpb_range_push(ctx, "q%lld", (long long)j);
            if (rc == CPB_OK) rc = block(D, go, i, j, &last_j, &next_j, dka, dva, i == 0 && j == 0);
            if (rc == CPB_OK) rc = cpb_range_pop(ctx);
        }
        if (rc == CPB_OK) rc = fpdt_ds_sync_compute(D);
        if (rc == CPB_OK) rc = finish(D, i, dka, dva, gl[i]);
        /* fresh fp32 dK, dV accumulators for the next K,V chunk (del; torch.zeros) */
        if (rc == CPB_OK) rc = cpb_free(ctx, D->comp, &dka);
        if (rc == CPB_OK) rc = cpb_free(ctx, D->comp, &dva);
        if (i + 1 < u) {
            if (rc == CPB_OK) rc = cpb_alloc(ctx, &dka, m->nkv, CPB_FP32, CPB_TAG_GRAD_ACT, "fpdt_dk_acc");
            if (rc == CPB_OK) rc = cpb_alloc(ctx, &dva, m->nkv, CPB_FP32, CPB_TAG_GRAD_ACT, "fpdt_dv_acc");
            if (rc == CPB_OK) rc = cpb_fill(ctx, D->comp, cpb_whole(dka), 0.0f);
            if (rc == CPB_OK) rc = cpb_fill(ctx, D->comp, cpb_whole(dva), 0.0f);
            if (rc == CPB_OK) rc = fpdt_ds_load(D, D->off, D->kh[i + 1], CPB_TAG_FETCH, "fpdt_k_load", &D->k[i + 1]);
            if (rc == CPB_OK) rc = fpdt_ds_load(D, D->off, D->vh[i + 1], CPB_TAG_FETCH, "fpdt_v_load", &D->v[i + 1]);
            if (rc == CPB_OK) rc = fpdt_ds_load(D, D->gen, D->xh[i + 1], CPB_TAG_FETCH, "fpdt_x_load", &D->x[i + 1]);
        }
        if (rc == CPB_OK) rc = fpdt_ds_sync_compute(D);
        cpb_buf **gone[] = {&D->x[i], &D->k[i], &D->v[i]};
        for (size_t t = 0; t < sizeof gone / sizeof gone[0] && rc == CPB_OK; t++) rc = cpb_free(ctx, D->comp, gone[t]);
        if (rc == CPB_OK) rc = cpb_range_pop(ctx);
    }
    /* torch.cat(grad_layernorm_output): the layer's dx */
    for (int64_t i = 0; i < u && rc == CPB_OK; i++) {
        rc = cpb_copy(ctx, D->comp, fpdt_rows(m, L->dx, i, m->D), cpb_mat(gl[i], 0, m->c, m->D, m->D));
        if (rc == CPB_OK) rc = cpb_free(ctx, D->comp, &gl[i]);
    }
    free(gl);
    CPB_TRY(rc);
    CPB_TRY(cpb_free(ctx, D->comp, &go));
    return fpdt_ds_release(D);
}

int fpdt_ds_backward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    fpdt_ds *D = state;
    if (!D) return cpb_fail(ctx, CPB_ERR_INVALID, "fpdt backward: no forward state");
    D->ctx = ctx;
    D->L = L;
    return bwd_run(D);
}
