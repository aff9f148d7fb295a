/* cpu_attention_bwd.c — blocked attention backward (FlashAttention-2 math).  With
 * P = exp(scale * q k^T - lse) recomputed tile by tile from the forward's lse:
 *   dV += P^T dO,  dP = dO V^T,  dS = P * (dP - delta),  dQ += scale dS K,
 *   dK += scale dS^T Q,  delta = rowsum(dO * o).
 * The fp32 workspace (op->u.attn.ws, cpb_attn_bwd_workspace_elems) holds the dq
 * accumulator as [hq][sq][d], followed, when the caller gave no delta, by delta as
 * [hq][sq].  dK, dV accumulate in fp32 scratch per kv head over its query heads (GQA) and
 * are stored (or added, with accumulate) once. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_attention.h"
#include "cpu_internal.h"

typedef struct bwd_bufs {
    float *k, *v, *q, *dout, *dk, *dv; /* dense fp32 heads */
    float *p, *dp;                     /* one ATTN_BQ x ATTN_BK tile each */
    float *lse, *delta;                /* one query head's statistics */
} bwd_bufs;

/* delta of query head h, from the caller's view or computed from o and dO into ws */
static void head_delta(const cpb_attn_args *a, int64_t h, float *ws_delta, const bwd_bufs *B, float *out)
{
    int64_t sq = a->q.rows, d = a->q.dim;
    if (a->delta.buf) {
        for (int64_t i = 0; i < sq; i++) out[i] = cpu_ld_stat(&a->delta, i, h);
        return;
    }
    float *orow = B->p; /* the tile is free here; d <= ATTN_BQ * ATTN_BK is checked */
    for (int64_t i = 0; i < sq; i++) {
        cpu_ld_vec(&a->o, i, h, orow);
        float s = 0.0f;
        for (int64_t c = 0; c < d; c++) s += orow[c] * B->dout[i * d + c];
        out[i] = s;
    }
    memcpy(ws_delta + h * sq, out, sizeof(float) * (size_t)sq);
}

/* query block [i0, i0+bq) of query head h: all visible key tiles */
static void bwd_block(const cpb_attn_args *a, int64_t i0, int64_t bq, float scale, const bwd_bufs *B,
                      float *dq)
{
    int64_t d = a->q.dim, sk = a->k.rows;
    int64_t kend = attn_visible(a, i0 + bq - 1, sk);
    const float *q = B->q + i0 * d, *dout = B->dout + i0 * d;
    for (int64_t j0 = 0; j0 < kend; j0 += ATTN_BK) {
        int64_t bk = kend - j0 < ATTN_BK ? kend - j0 : ATTN_BK;
        const float *k = B->k + j0 * d, *v = B->v + j0 * d;
        /* P = exp(scale q k^T - lse), masked entries and empty rows 0 */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)bq, (int)bk, (int)d, scale, q, (int)d, k, (int)d,
                    0.0f, B->p, ATTN_BK);
        for (int64_t i = 0; i < bq; i++) {
            float *prow = B->p + i * ATTN_BK;
            float lse = B->lse[i0 + i];
            int64_t vis = attn_visible(a, i0 + i, sk) - j0;
            if (lse == -INFINITY) vis = 0; /* the row saw no key: it has no gradient */
            for (int64_t j = 0; j < bk; j++) prow[j] = j < vis ? expf(prow[j] - lse) : 0.0f;
        }
        /* dV += P^T dO */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)bk, (int)d, (int)bq, 1.0f, B->p, ATTN_BK, dout,
                    (int)d, 1.0f, B->dv + j0 * d, (int)d);
        /* dP = dO V^T, then dS = P * (dP - delta) in place */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)bq, (int)bk, (int)d, 1.0f, dout, (int)d, v, (int)d,
                    0.0f, B->dp, ATTN_BK);
        for (int64_t i = 0; i < bq; i++) {
            float dl = B->delta[i0 + i];
            float *prow = B->p + i * ATTN_BK, *dprow = B->dp + i * ATTN_BK;
            for (int64_t j = 0; j < bk; j++) dprow[j] = prow[j] * (dprow[j] - dl);
        }
        /* dQ += scale dS K,  dK += scale dS^T Q */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)bq, (int)d, (int)bk, scale, B->dp, ATTN_BK, k,
                    (int)d, 1.0f, dq + i0 * d, (int)d);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)bk, (int)d, (int)bq, scale, B->dp, ATTN_BK, q,
                    (int)d, 1.0f, B->dk + j0 * d, (int)d);
    }
}

int cpu_attn_bwd(cpb_ctx *ctx, const cpb_op *op)
{
    const cpb_attn_args *a = op->u.attn.a;
    int64_t sq = a->q.rows, hq = a->q.heads, d = a->q.dim;
    int64_t sk = a->k.rows, hk = a->k.heads, group = hq / hk;
    if (d <= 0 || d > ATTN_BQ * ATTN_BK || sq > INT32_MAX || sk > INT32_MAX)
        return cpb_fail(ctx, CPB_ERR_UNSUPPORTED, "%s: head dim %lld (or sequence) outside what the cpu backend's "
                        "attention supports (1..%d)", op->name, (long long)d, ATTN_BQ * ATTN_BK);
    if (!op->u.attn.ws || op->u.attn.ws->nelem < cpb_attn_bwd_workspace_elems(a))
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: attention backward workspace missing or smaller than "
                        "cpb_attn_bwd_workspace_elems()", op->name);
    float scale = attn_scale(a);
    float *ws = (float *)op->u.attn.ws->ptr;
    float *ws_delta = ws + sq * hq * d;
    int64_t n = 4 * sk * d + 2 * sq * d + 2 * ATTN_BQ * ATTN_BK + 2 * sq;
    float *base = cpu_scratch(ctx, n, "attention backward operands");
    if (!base) return CPB_ERR_NOMEM_HOST;
    bwd_bufs B;
    B.k = base;
    B.v = B.k + sk * d;
    B.dk = B.v + sk * d;
    B.dv = B.dk + sk * d;
    B.q = B.dv + sk * d;
    B.dout = B.q + sq * d;
    B.p = B.dout + sq * d;
    B.dp = B.p + ATTN_BQ * ATTN_BK;
    B.lse = B.dp + ATTN_BQ * ATTN_BK;
    B.delta = B.lse + sq;
    for (int64_t kh = 0; kh < hk; kh++) {
        attn_load_head(&a->k, kh, B.k);
        attn_load_head(&a->v, kh, B.v);
        memset(B.dk, 0, sizeof(float) * (size_t)(2 * sk * d)); /* dk and dv */
        for (int64_t h = kh * group; h < (kh + 1) * group; h++) {
            float *dq = ws + h * sq * d;
            memset(dq, 0, sizeof(float) * (size_t)(sq * d));
            attn_load_head(&a->q, h, B.q);
            attn_load_head(&a->d_o, h, B.dout);
            for (int64_t i = 0; i < sq; i++) B.lse[i] = cpu_ld_stat(&a->lse, i, h);
            head_delta(a, h, ws_delta, &B, B.delta);
            for (int64_t i0 = 0; i0 < sq; i0 += ATTN_BQ)
                bwd_block(a, i0, sq - i0 < ATTN_BQ ? sq - i0 : ATTN_BQ, scale, &B, dq);
            for (int64_t i = 0; i < sq; i++) cpu_st_vec(&a->dq, i, h, dq + i * d, a->accumulate);
        }
        for (int64_t j = 0; j < sk; j++) {
            cpu_st_vec(&a->dk, j, kh, B.dk + j * d, a->accumulate);
            cpu_st_vec(&a->dv, j, kh, B.dv + j * d, a->accumulate);
        }
    }
    free(base);
    return CPB_OK;
}
