/* fpdt_ds_fwd.c — the forward of DeepSpeed's FPDT (fpdt_ds.h), after
 * _FPDTGPUOffloadingAttentionImpl_.forward (deepspeed/sequence/fpdt_layer.py, 0.17.4) and
 * FPDT_Attention.forward.  Per chunk i: one projection of the chunk into a qkv buffer, the
 * layer input's chunk to the host (general stream), q, K, V each packed, exchanged and
 * rotated, a barrier, a sync, q/K/V to the host (offload stream); then the blocks k = 0..i,
 * each an attention call merged into the fp32 output, the next block's K,V loaded on the
 * offload stream meanwhile, and a sync after every block; o converted, exchanged back and
 * kept on the device in sequence layout; o and lse to the host (general stream).  At the
 * end the chunks' outputs are concatenated and projected by Wo; the first chunk's q, K, V,
 * o, lse are loaded for the backward. */
#include <stdlib.h>

#include "fpdt_ds.h"

/* q, K, V of chunk i: project into qkv, pack, exchange, rotate; a barrier after the
 * exchanges (fpdt_layer.py: dist.barrier() after the three single_all_to_all) */
static int qkv_chunk(fpdt_ds *D, int64_t i, cpb_buf **qd, cpb_buf **kd, cpb_buf **vd)
{
    cpb_ctx *ctx = D->ctx;
    cpb_layer *L = D->L;
    const fpdt_dims *m = &D->m;
    const int64_t d = m->d, Hd = (int64_t)m->H * d, Gd = (int64_t)m->G * d, W = Hd + 2 * Gd;
    cpb_view x_i = fpdt_rows(m, L->x, i, m->D);
    cpb_buf *qkv = NULL;
    CPB_TRY(cpb_alloc(ctx, &qkv, m->c * W, m->E, CPB_TAG_QKV, "fpdt_qkv"));
    /* x_i [Wq | Wk | Wv]: DeepSpeed's one fused GEMM, here one per weight */
    CPB_TRY(cpb_gemm(ctx, D->comp, 0, 0, 1.0f, x_i, cpb_mat(L->wq, 0, m->D, Hd, Hd), 0.0f, cpb_mat(qkv, 0, m->c, Hd, W)));
    CPB_TRY(cpb_gemm(ctx, D->comp, 0, 0, 1.0f, x_i, cpb_mat(L->wk, 0, m->D, Gd, Gd), 0.0f, cpb_mat(qkv, Hd, m->c, Gd, W)));
    CPB_TRY(cpb_gemm(ctx, D->comp, 0, 0, 1.0f, x_i, cpb_mat(L->wv, 0, m->D, Gd, Gd), 0.0f,
                     cpb_mat(qkv, Hd + Gd, m->c, Gd, W)));
    /* the layer input's chunk goes to the host on the general stream (SequenceChunk) */
    CPB_TRY(cpb_alloc_host(ctx, &D->xh[i], m->c * m->D, m->E, CPB_TAG_SAVED, "fpdt_x_host"));
    CPB_TRY(cpb_copy(ctx, D->gen, cpb_mat(D->xh[i], 0, m->c, m->D, m->D), x_i));
    /* each of q, K, V: the contiguous per-destination copy, the exchange, a new head tensor */
    struct { int64_t col, n, blk; int nblocks, rep; cpb_buf **out; const char *name; } t[3] = {
        {0, m->nq, (int64_t)m->hq * d, m->C, 1, qd, "fpdt_q"},
        {Hd, m->nkv, (int64_t)m->hk * d, m->nb, m->rep, kd, "fpdt_k"},
        {Hd + Gd, m->nkv, (int64_t)m->hk * d, m->nb, m->rep, vd, "fpdt_v"},
    };
    for (int j = 0; j < 3; j++) {
        cpb_buf *send = NULL;
        const int64_t slot = m->c * t[j].blk;
        CPB_TRY(cpb_alloc(ctx, &send, t[j].n, m->E, CPB_TAG_A2A, "fpdt_send"));
        for (int r = 0; r < t[j].rep; r++)
            CPB_TRY(cpb_copy(ctx, D->comp, cpb_heads(send, r * slot, m->c, t[j].nblocks, t[j].blk, t[j].blk, t[j].rep * slot),
                             cpb_heads(qkv, t[j].col, m->c, t[j].nblocks, t[j].blk, W, t[j].blk)));
        CPB_TRY(cpb_alloc(ctx, t[j].out, t[j].n, m->E, CPB_TAG_QKV, t[j].name));
        CPB_TRY(cpb_all_to_all(ctx, D->comp, NULL, cpb_whole(send), cpb_whole(*t[j].out)));
        CPB_TRY(cpb_free(ctx, D->comp, &send));
    }
    CPB_TRY(cpb_free(ctx, D->comp, &qkv));
    CPB_TRY(fpdt_ds_barrier(D, D->comp));
    cpb_segs pos;
    fpdt_chunk_positions(m, i, &pos);
    CPB_TRY(cpb_rope(ctx, D->comp, fpdt_head_view(m, *qd, 0, m->hq), &pos, m->base, 0));
    return cpb_rope(ctx, D->comp, fpdt_head_view(m, *kd, 0, m->hk), &pos, m->base, 0);
}

/* chunk 0's o and lse for the backward's first block, once on the host */
static int load_o0(fpdt_ds *D)
{
    CPB_TRY(cpb_stream_join(D->ctx, D->off, D->gen));
    CPB_TRY(fpdt_ds_load(D, D->off, D->oh[0], CPB_TAG_FETCH, "fpdt_o_load", &D->o[0]));
    return fpdt_ds_load(D, D->off, D->lh[0], CPB_TAG_FETCH, "fpdt_lse_load", &D->lse[0]);
}

/* the blocks of chunk i; kcur/vcur hold K,V chunk *cur_idx (or nothing) on entry and exit */
static int blocks(fpdt_ds *D, int64_t i, cpb_buf *qd, cpb_buf **kown, cpb_buf **vown, cpb_buf **kcur,
                  cpb_buf **vcur, int64_t *cur_idx, cpb_buf **oa, cpb_buf **la)
{
    cpb_ctx *ctx = D->ctx;
    const fpdt_dims *m = &D->m;
    for (int64_t k = 0; k <= i; k++) {
        int own = k == i;
        cpb_buf *kb = own ? *kown : *kcur, *vb = own ? *vown : *vcur;
        if (!own && *cur_idx != k)
            return cpb_fail(ctx, CPB_ERR_INVALID, "fpdt (deepspeed): K,V chunk %lld is not on the device for block "
                            "(%lld, %lld)", (long long)k, (long long)i, (long long)k);
        cpb_buf *ob = NULL, *lb = NULL;
        CPB_TRY(cpb_alloc(ctx, &ob, m->nq, m->E, CPB_TAG_ATTN, "fpdt_block_out"));
        CPB_TRY(cpb_alloc(ctx, &lb, m->nlse, CPB_FP32, CPB_TAG_ATTN, "fpdt_block_lse"));
        cpb_attn_args a = {0};
        a.q = fpdt_head_view(m, qd, 0, m->hq);
        a.k = fpdt_head_view(m, kb, 0, m->hk);
        a.v = fpdt_head_view(m, vb, 0, m->hk);
        a.o = fpdt_head_view(m, ob, 0, m->hq);
        a.lse = fpdt_lse_view(m, lb, 0);
        a.causal = own;
        a.q_pos0 = i * m->chunk;
        a.k_pos0 = k * m->chunk;
        CPB_TRY(cpb_attn_fwd(ctx, D->comp, &a));
        if (k == 0) { /* update_out_and_lse's first call: out = block_out.to(float32) */
            CPB_TRY(cpb_alloc(ctx, oa, m->nq, CPB_FP32, CPB_TAG_ATTN, "fpdt_out_acc"));
            CPB_TRY(cpb_alloc(ctx, la, m->nlse, CPB_FP32, CPB_TAG_ATTN, "fpdt_lse_acc"));
            CPB_TRY(cpb_copy(ctx, D->comp, cpb_whole(*oa), cpb_whole(ob)));
            CPB_TRY(cpb_copy(ctx, D->comp, cpb_whole(*la), cpb_whole(lb)));
        } else {
            CPB_TRY(cpb_lse_merge(ctx, D->comp, fpdt_head_view(m, *oa, 0, m->hq), fpdt_lse_view(m, *la, 0), a.o, a.lse));
        }
        CPB_TRY(cpb_free(ctx, D->comp, &ob));
        CPB_TRY(cpb_free(ctx, D->comp, &lb));
        /* the next block's K,V: k+1, or chunk 0 for the next chunk's first block; loaded on
         * the offload stream unless it is this chunk's own (resident) or the block's */
        int last = i == m->u - 1 && own, keep = 0;
        cpb_buf *kn = NULL, *vn = NULL;
        int64_t next = k < i ? k + 1 : 0;
        if (!last) {
            if (next == k) keep = 1; /* chunk 0's own K,V serve chunk 1's first block */
            else if (next != i) {
                CPB_TRY(fpdt_ds_load(D, D->off, D->kh[next], CPB_TAG_FETCH, "fpdt_k_load", &kn));
                CPB_TRY(fpdt_ds_load(D, D->off, D->vh[next], CPB_TAG_FETCH, "fpdt_v_load", &vn));
            }
        } else { /* the backward's first block, loaded ahead */
            CPB_TRY(fpdt_ds_load(D, D->off, D->qh[0], CPB_TAG_FETCH, "fpdt_q_load", &D->q[0]));
            CPB_TRY(fpdt_ds_load(D, D->off, D->kh[0], CPB_TAG_FETCH, "fpdt_k_load", &D->k[0]));
            CPB_TRY(fpdt_ds_load(D, D->off, D->vh[0], CPB_TAG_FETCH, "fpdt_v_load", &D->v[0]));
            /* o and lse of chunk 0 went out on the general stream (with one chunk they
             * come only after this block: fwd_run loads them then) */
            if (m->u > 1) CPB_TRY(load_o0(D));
        }
        CPB_TRY(fpdt_ds_sync_compute(D));
        if (keep) { /* the block's K,V stay: they are the next block's */
            *kcur = *kown, *vcur = *vown, *cur_idx = k;
            *kown = *vown = NULL;
            continue;
        }
        if (own) {
            CPB_TRY(cpb_free(ctx, D->comp, kown));
            CPB_TRY(cpb_free(ctx, D->comp, vown));
        } else {
            CPB_TRY(cpb_free(ctx, D->comp, kcur));
            CPB_TRY(cpb_free(ctx, D->comp, vcur));
            *cur_idx = -1;
        }
        if (kn) *kcur = kn, *vcur = vn, *cur_idx = next;
    }
    return CPB_OK;
}

/* o of chunk i: to the storage dtype, exchanged back into the chunk's sequence-layout
 * output (kept on the device), and to the host with its lse (general stream) */
static int output_chunk(fpdt_ds *D, int64_t i, cpb_buf **oa, cpb_buf **la, cpb_buf **fo)
{
    cpb_ctx *ctx = D->ctx;
    const fpdt_dims *m = &D->m;
    cpb_buf *ot = NULL, *recv = NULL, *ot2 = NULL;
    CPB_TRY(cpb_alloc(ctx, &ot, m->nq, m->E, CPB_TAG_ATTN, "fpdt_out"));
    CPB_TRY(cpb_copy(ctx, D->comp, cpb_whole(ot), cpb_whole(*oa)));
    CPB_TRY(cpb_alloc(ctx, &recv, m->nq, m->E, CPB_TAG_A2A, "fpdt_out_recv"));
    CPB_TRY(cpb_all_to_all(ctx, D->comp, NULL, cpb_whole(ot), cpb_whole(recv)));
    CPB_TRY(cpb_free(ctx, D->comp, &ot));
    CPB_TRY(cpb_alloc(ctx, fo, m->c * m->H * m->d, m->E, CPB_TAG_ATTN, "fpdt_final_output"));
    CPB_TRY(fpdt_unpack(ctx, D->comp, m, recv, m->C, (int64_t)m->hq * m->d, 1, *fo));
    CPB_TRY(cpb_free(ctx, D->comp, &recv));
    /* global_o.append(SequenceChunk(cur_attn_output.to(dtype))) on the general stream */
    CPB_TRY(cpb_stream_join(ctx, D->gen, D->comp));
    CPB_TRY(cpb_alloc(ctx, &ot2, m->nq, m->E, CPB_TAG_ATTN, "fpdt_out"));
    CPB_TRY(cpb_copy(ctx, D->gen, cpb_whole(ot2), cpb_whole(*oa)));
    CPB_TRY(fpdt_ds_store(D, D->gen, ot2, CPB_TAG_SAVED, "fpdt_o_host", &D->oh[i]));
    CPB_TRY(fpdt_ds_store(D, D->gen, *la, CPB_TAG_SAVED, "fpdt_lse_host", &D->lh[i]));
    CPB_TRY(cpb_free(ctx, D->gen, &ot2));
    CPB_TRY(cpb_free(ctx, D->gen, oa));
    return cpb_free(ctx, D->gen, la);
}

static int fwd_run(fpdt_ds *D)
{
    cpb_ctx *ctx = D->ctx;
    cpb_layer *L = D->L;
    const fpdt_dims *m = &D->m;
    const int64_t Hd = (int64_t)m->H * m->d;
    cpb_buf **fo = calloc((size_t)m->u, sizeof *fo);
    if (!fo) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "fpdt: out of host memory");
    cpb_buf *kcur = NULL, *vcur = NULL;
    int64_t cur_idx = -1;
    int rc = CPB_OK;
    for (int64_t i = 0; i < m->u && rc == CPB_OK; i++) {
        cpb_buf *qd = NULL, *kd = NULL, *vd = NULL, *oa = NULL, *la = NULL;
        rc = cpb_range_push(ctx, "chunk%lld", (long long)i);
        if (rc == CPB_OK) rc = qkv_chunk(D, i, &qd, &kd, &vd);
        /* SequenceChunk(q/k/v, is_in_use=True): host copies on the offload stream after
         * a sync; the device copies stay for the blocks */
        if (rc == CPB_OK) rc = fpdt_ds_sync_compute(D);
        if (rc == CPB_OK) rc = fpdt_ds_store(D, D->off, qd, CPB_TAG_SAVED, "fpdt_q_host", &D->qh[i]);
        if (rc == CPB_OK) rc = fpdt_ds_store(D, D->off, kd, CPB_TAG_SAVED, "fpdt_k_host", &D->kh[i]);
        if (rc == CPB_OK) rc = fpdt_ds_store(D, D->off, vd, CPB_TAG_SAVED, "fpdt_v_host", &D->vh[i]);
        if (rc == CPB_OK) rc = blocks(D, i, qd, &kd, &vd, &kcur, &vcur, &cur_idx, &oa, &la);
        if (rc == CPB_OK) rc = cpb_free(ctx, D->comp, &qd); /* global_q[i].offload() */
        if (rc == CPB_OK) rc = output_chunk(D, i, &oa, &la, &fo[i]);
        if (rc == CPB_OK) rc = cpb_range_pop(ctx);
    }
    /* compute_stream.wait_stream(general_offload_stream); synchronize; torch.cat */
    if (rc == CPB_OK && m->u == 1) rc = load_o0(D);
    if (rc == CPB_OK) rc = cpb_stream_join(ctx, D->comp, D->gen);
    if (rc == CPB_OK) rc = fpdt_ds_host_waits(D, D->comp);
    if (rc == CPB_OK) rc = cpb_alloc(ctx, &D->cat, m->c * m->u * Hd, m->E, CPB_TAG_SAVED, "fpdt_output_cat");
    for (int64_t i = 0; i < m->u && rc == CPB_OK; i++) {
        rc = cpb_copy(ctx, D->comp, cpb_mat(D->cat, i * m->c * Hd, m->c, Hd, Hd), cpb_mat(fo[i], 0, m->c, Hd, Hd));
        if (rc == CPB_OK) rc = cpb_free(ctx, D->comp, &fo[i]);
    }
    free(fo);
    CPB_TRY(rc);
    /* the dense layer: y = cat Wo (the cat is its saved input) */
    return cpb_gemm(ctx, D->comp, 0, 0, 1.0f, cpb_mat(D->cat, 0, m->c * m->u, Hd, Hd),
                    cpb_mat(L->wo, 0, Hd, m->D, m->D), 0.0f, cpb_mat(L->y, 0, m->c * m->u, m->D, m->D));
}

int fpdt_ds_forward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    fpdt_ds *D = state;
    CPB_TRY(fpdt_ds_init(ctx, L, D));
    D->comp = CPB_STREAM_COMPUTE;
    CPB_TRY(cpb_stream(ctx, "offload", &D->off));
    CPB_TRY(cpb_stream(ctx, "general_offload", &D->gen));
    CPB_TRY(cpb_alloc(ctx, &D->barrier, 1, CPB_FP32, CPB_TAG_TEMP, "barrier"));
    return fwd_run(D);
}
