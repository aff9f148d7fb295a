/* cpu_gemm.c — C = alpha * op(A) * op(B) + beta * C, row-major, batched over heads, with
 * OpenBLAS.  fp32 operands whose rows BLAS can address (leading dimension >= columns) are
 * passed in place; bf16 operands (and odd strides) are converted into fp32 scratch first,
 * and a bf16 C is accumulated in fp32 scratch and rounded once on the way back. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_load_store.h"

/* one batch entry of an operand, as BLAS sees it */
typedef struct mat {
    float *p;
    int64_t ld;
    int owned; /* p is scratch */
} mat;

static int blas_addressable(const cpb_view *v)
{
    return v->buf->dtype == CPB_FP32 &&
           (v->rows <= 1 || (v->row_stride >= v->dim && v->row_stride <= INT32_MAX));
}

/* the rows x dim matrix of batch entry b of v, as fp32 BLAS can read */
static int mat_of(cpb_ctx *ctx, const cpb_view *v, int64_t b, int load, mat *m, const char *what)
{
    int64_t off = v->off + b * v->head_stride;
    if (blas_addressable(v)) {
        m->p = (float *)v->buf->ptr + off;
        m->ld = v->rows <= 1 ? (v->dim > 0 ? v->dim : 1) : v->row_stride;
        m->owned = 0;
        return CPB_OK;
    }
    m->p = cpu_scratch(ctx, v->rows * v->dim, what);
    if (!m->p) return CPB_ERR_NOMEM_HOST;
    m->ld = v->dim > 0 ? v->dim : 1;
    m->owned = 1;
    if (load)
        for (int64_t r = 0; r < v->rows; r++) cpu_ld_n(v->buf, off + r * v->row_stride, v->dim, m->p + r * v->dim);
    return CPB_OK;
}

static void mat_release(mat *m)
{
    if (m->owned) free(m->p);
    m->p = NULL;
}

/* C <- beta * C without reading C when beta == 0 (it may hold NaN garbage) */
static void scale_c(const cpb_view *c, int64_t b, float beta, float *row)
{
    int64_t off = c->off + b * c->head_stride;
    for (int64_t r = 0; r < c->rows; r++) {
        int64_t at = off + r * c->row_stride;
        if (beta == 0.0f) {
            memset(row, 0, sizeof(float) * (size_t)c->dim);
        } else {
            cpu_ld_n(c->buf, at, c->dim, row);
            for (int64_t j = 0; j < c->dim; j++) row[j] *= beta;
        }
        cpu_st_n(c->buf, at, c->dim, row, 0);
    }
}

int cpu_gemm(cpb_ctx *ctx, const cpb_op *op)
{
    const cpb_view *a = &op->u.gemm.a, *bv = &op->u.gemm.b, *c = &op->u.gemm.c;
    int64_t m = op->u.gemm.m, n = op->u.gemm.n, k = op->u.gemm.k, batch = op->u.gemm.batch;
    float alpha = op->u.gemm.alpha, beta = op->u.gemm.beta;
    if (m == 0 || n == 0 || batch == 0) return CPB_OK;
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
        return cpb_fail(ctx, CPB_ERR_UNSUPPORTED, "%s: a GEMM dimension above 2^31 (m %lld, n %lld, k %lld); split it",
                        op->name, (long long)m, (long long)n, (long long)k);
    if (k == 0 || alpha == 0.0f) {
        /* no product: only C's scaling remains */
        float *row = cpu_scratch(ctx, n, "gemm row");
        if (!row) return CPB_ERR_NOMEM_HOST;
        for (int64_t b = 0; b < batch; b++) scale_c(c, b, beta, row);
        free(row);
        return CPB_OK;
    }
    /* a broadcast operand (one head) is converted once for the whole batch */
    int rc = CPB_OK;
    mat A = {0}, B = {0};
    if (a->heads == 1) rc = mat_of(ctx, a, 0, 1, &A, "gemm A");
    if (rc == CPB_OK && bv->heads == 1) rc = mat_of(ctx, bv, 0, 1, &B, "gemm B");
    for (int64_t b = 0; b < batch && rc == CPB_OK; b++) {
        mat C = {0};
        if (a->heads != 1) rc = mat_of(ctx, a, b, 1, &A, "gemm A");
        if (rc == CPB_OK && bv->heads != 1) rc = mat_of(ctx, bv, b, 1, &B, "gemm B");
        if (rc == CPB_OK) rc = mat_of(ctx, c, b, beta != 0.0f, &C, "gemm C");
        if (rc == CPB_OK) {
            /* BLAS need not read C when beta == 0, but zero it so NaN garbage cannot leak
             * whatever the BLAS does */
            if (beta == 0.0f)
                for (int64_t r = 0; r < m; r++) memset(C.p + r * C.ld, 0, sizeof(float) * (size_t)n);
            cblas_sgemm(CblasRowMajor, op->u.gemm.ta ? CblasTrans : CblasNoTrans,
                        op->u.gemm.tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha, A.p,
                        (int)A.ld, B.p, (int)B.ld, beta, C.p, (int)C.ld);
            if (C.owned) {
                int64_t off = c->off + b * c->head_stride;
                for (int64_t r = 0; r < m; r++) cpu_st_n(c->buf, off + r * c->row_stride, n, C.p + r * n, 0);
            }
        }
        if (a->heads != 1) mat_release(&A);
        if (bv->heads != 1) mat_release(&B);
        mat_release(&C);
    }
    mat_release(&A);
    mat_release(&B);
    return rc;
}
