/* cpu_attention_fwd.c — blocked attention forward with online softmax (FlashAttention):
 * for each query block, key blocks are visited in order keeping a running row max m, a
 * running sum l and an fp32 output accumulator; fully masked key blocks are skipped.
 * Output o = acc / l, lse = m + log(l) (natural log); rows that see no key get o = 0 and
 * lse = -inf.  GQA: query head h reads kv head h / (hq / hk). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_attention.h"
#include "cpu_internal.h"

/* one query block [i0, i0+bq) of query head h against the visible keys */
static void fwd_block(const cpb_attn_args *a, int64_t h, int64_t i0, int64_t bq, const float *q,
                      const float *k, const float *v, float scale, float *s, float *m, float *l,
                      float *acc)
{
    int64_t d = a->q.dim, sk = a->k.rows;
    int64_t kend = attn_visible(a, i0 + bq - 1, sk); /* the last row sees the most keys */
    for (int64_t i = 0; i < bq; i++) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
    }
    memset(acc, 0, sizeof(float) * (size_t)(bq * d));
    for (int64_t j0 = 0; j0 < kend; j0 += ATTN_BK) {
        int64_t bk = kend - j0 < ATTN_BK ? kend - j0 : ATTN_BK;
        /* s = scale * q_blk k_blk^T */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)bq, (int)bk, (int)d, scale, q + i0 * d, (int)d,
                    k + j0 * d, (int)d, 0.0f, s, ATTN_BK);
        for (int64_t i = 0; i < bq; i++) {
            float *srow = s + i * ATTN_BK;
            int64_t vis = attn_visible(a, i0 + i, sk) - j0; /* visible columns of this tile */
            if (vis > bk) vis = bk;
            float mx = m[i];
            for (int64_t j = 0; j < vis; j++) mx = srow[j] > mx ? srow[j] : mx; /* not fmaxf: a call per element */
            if (mx == -INFINITY) {
                /* nothing visible yet: the row stays empty */
                for (int64_t j = 0; j < bk; j++) srow[j] = 0.0f;
                continue;
            }
            float corr = expf(m[i] - mx); /* 0 when m was -inf */
            float sum = 0.0f;
            for (int64_t j = 0; j < bk; j++) {
                float p = j < vis ? expf(srow[j] - mx) : 0.0f;
                srow[j] = p;
                sum += p;
            }
            l[i] = l[i] * corr + sum;
            m[i] = mx;
            if (corr != 1.0f)
                for (int64_t c = 0; c < d; c++) acc[i * d + c] *= corr;
        }
        /* acc += p v_blk */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)bq, (int)d, (int)bk, 1.0f, s, ATTN_BK,
                    v + j0 * d, (int)d, 1.0f, acc, (int)d);
    }
    for (int64_t i = 0; i < bq; i++) {
        float *orow = acc + i * d;
        float lse;
        if (l[i] > 0.0f) {
            float inv = 1.0f / l[i];
            for (int64_t c = 0; c < d; c++) orow[c] *= inv;
            lse = m[i] + logf(l[i]);
        } else {
            memset(orow, 0, sizeof(float) * (size_t)d);
            lse = -INFINITY;
        }
        cpu_st_vec(&a->o, i0 + i, h, orow, 0);
        cpu_st_stat(&a->lse, i0 + i, h, lse);
    }
}

int cpu_attn_fwd(cpb_ctx *ctx, const cpb_op *op)
{
    const cpb_attn_args *a = op->u.attn.a;
    int64_t sq = a->q.rows, hq = a->q.heads, d = a->q.dim;
    int64_t sk = a->k.rows, hk = a->k.heads, group = hq / hk;
    if (sq == 0 || hq == 0) return CPB_OK;
    if (d <= 0 || d > INT32_MAX / ATTN_BK || sq > INT32_MAX || sk > INT32_MAX)
        return cpb_fail(ctx, CPB_ERR_UNSUPPORTED, "%s: head dim %lld or sequence outside what the cpu backend's "
                        "attention supports", op->name, (long long)d);
    float scale = attn_scale(a);
    /* dense fp32 copies of one kv head's K, V and one query head's Q, plus one tile */
    int64_t n = 2 * sk * d + sq * d + ATTN_BQ * ATTN_BK + 2 * ATTN_BQ + ATTN_BQ * d;
    float *k = cpu_scratch(ctx, n, "attention forward operands");
    if (!k) return CPB_ERR_NOMEM_HOST;
    float *v = k + sk * d, *q = v + sk * d, *s = q + sq * d, *m = s + ATTN_BQ * ATTN_BK, *l = m + ATTN_BQ;
    float *acc = l + ATTN_BQ;
    for (int64_t kh = 0; kh < hk; kh++) {
        attn_load_head(&a->k, kh, k);
        attn_load_head(&a->v, kh, v);
        for (int64_t h = kh * group; h < (kh + 1) * group; h++) {
            attn_load_head(&a->q, h, q);
            for (int64_t i0 = 0; i0 < sq; i0 += ATTN_BQ) {
                int64_t bq = sq - i0 < ATTN_BQ ? sq - i0 : ATTN_BQ;
                fwd_block(a, h, i0, bq, q, k, v, scale, s, m, l, acc);
            }
        }
    }
    free(k);
    return CPB_OK;
}
