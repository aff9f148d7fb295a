/* test_cpu_gemm.c — cpb_gemm on the cpu backend against a double-precision reference:
 * all four transposes, odd sizes, padded leading dimensions, batches over heads with a
 * head stride, a broadcast operand, beta 0 (over NaN garbage) and beta 1, bf16 inputs
 * with fp32 or bf16 C. */
#include <string.h>

#include "test_cpu_util.h"

typedef struct operand {
    cpb_buf *b;
    cpb_view v;
    float *x; /* stored values, [rows][heads][dim] */
} operand;

/* a rows x cols matrix per head, leading dimension cols + 3, heads apart by a gap */
static operand make(cpb_ctx *ctx, int64_t rows, int64_t cols, int64_t heads, cpb_dtype dt, uint64_t seed,
                    const char *name)
{
    operand o;
    int64_t ld = cols + 3, hs = rows * ld + 5;
    o.b = t_buf(ctx, 7 + heads * hs, dt, name);
    o.v = cpb_heads(o.b, 7, rows, heads, cols, ld, hs);
    o.x = t_fill_view(ctx, o.v, seed, 1.0f);
    return o;
}

static double el(const operand *o, int64_t b, int64_t r, int64_t c)
{
    int64_t hb = o->v.heads == 1 ? 0 : b;
    return o->x[(r * o->v.heads + hb) * o->v.dim + c];
}

static void gemm_case(int ta, int tb, int64_t m, int64_t n, int64_t k, int64_t batch, int broadcast_b, cpb_dtype dt_ab,
                      cpb_dtype dt_c, float alpha, float beta, double tol)
{
    cpb_ctx *ctx = t_ctx();
    operand A = make(ctx, ta ? k : m, ta ? m : k, batch, dt_ab, 1, "A");
    operand B = make(ctx, tb ? n : k, tb ? k : n, broadcast_b ? 1 : batch, dt_ab, 2, "B");
    operand C = make(ctx, m, n, batch, dt_c, 3, "C");
    if (beta == 0.0f) {
        /* garbage: beta == 0 must not read it */
        cr_assert_eq(cpb_fill(ctx, 0, C.v, NAN), CPB_OK);
    }
    float *before = t_get(ctx, cpb_whole(C.b));
    cr_assert_eq(cpb_gemm(ctx, 0, ta, tb, alpha, A.v, B.v, beta, C.v), CPB_OK, "%s", cpb_errmsg(ctx));
    double *ref = t_dalloc(m * batch * n);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t l = 0; l < k; l++)
                    s += (ta ? el(&A, b, l, i) : el(&A, b, i, l)) * (tb ? el(&B, b, j, l) : el(&B, b, l, j));
                double c0 = beta != 0.0f ? C.x[(i * batch + b) * n + j] : 0.0;
                ref[(i * batch + b) * n + j] = alpha * s + beta * c0;
            }
    float *got = t_get(ctx, C.v);
    double e = t_relerr(got, ref, m * batch * n, 1e-6);
    cr_log_info("gemm ta %d tb %d m %lld n %lld k %lld batch %lld bcast %d %s->%s beta %g: rel err %.3g", ta, tb,
                (long long)m, (long long)n, (long long)k, (long long)batch, broadcast_b, cpb_dtype_name(dt_ab),
                cpb_dtype_name(dt_c), beta, e);
    cr_assert(e <= tol, "gemm error %g > %g", e, tol);
    /* nothing outside C's view changed (padding between rows and heads) */
    float *after = t_get(ctx, cpb_whole(C.b));
    int64_t ld = C.v.row_stride, hs = C.v.head_stride;
    for (int64_t i = 0; i < C.b->nelem; i++) {
        int64_t rel = i - 7, h = rel >= 0 ? rel / hs : -1, r = rel >= 0 ? (rel % hs) / ld : -1;
        int64_t c = rel >= 0 ? (rel % hs) % ld : -1;
        int inside = rel >= 0 && h < batch && r < m && c < n;
        if (!inside)
            cr_assert(memcmp(&before[i], &after[i], sizeof(float)) == 0, "element %lld outside C changed",
                      (long long)i);
    }
    free(before), free(after), free(got), free(ref), free(A.x), free(B.x), free(C.x);
    cpb_ctx_destroy(ctx);
}

Test(cpu_gemm, all_transposes_fp32)
{
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            gemm_case(ta, tb, 7, 5, 11, 1, 0, CPB_FP32, CPB_FP32, 1.0f, 0.0f, 1e-6);
            gemm_case(ta, tb, 13, 9, 17, 3, 0, CPB_FP32, CPB_FP32, 0.5f, 1.0f, 1e-6);
        }
}

Test(cpu_gemm, batched_broadcast_and_beta)
{
    gemm_case(0, 1, 6, 10, 4, 4, 1, CPB_FP32, CPB_FP32, 1.0f, 0.0f, 1e-6);
    gemm_case(1, 0, 6, 10, 4, 4, 1, CPB_FP32, CPB_FP32, -2.0f, 1.0f, 1e-6);
    gemm_case(0, 0, 1, 3, 1, 2, 0, CPB_FP32, CPB_FP32, 1.0f, 0.25f, 1e-6);
}

Test(cpu_gemm, bf16_inputs)
{
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            /* fp32 C: exact products of the bf16 inputs, summed in fp32 */
            gemm_case(ta, tb, 9, 7, 33, 2, tb, CPB_BF16, CPB_FP32, 1.0f, 1.0f, 1e-6);
            /* bf16 C: one rounding at the end */
            gemm_case(ta, tb, 9, 7, 33, 2, 0, CPB_BF16, CPB_BF16, 1.0f, 0.0f, 8e-3);
        }
}

Test(cpu_gemm, zero_k_scales_c)
{
    /* k = 0: C = beta * C (nothing to multiply) */
    cpb_ctx *ctx = t_ctx();
    cpb_buf *a = t_buf(ctx, 4, CPB_FP32, "a"), *b = t_buf(ctx, 4, CPB_FP32, "b"), *c = t_buf(ctx, 6, CPB_FP32, "c");
    float cv[6] = {1, 2, 3, 4, 5, 6}, got[6];
    cr_assert_eq(cpb_upload(ctx, cpb_whole(c), cv), CPB_OK);
    cr_assert_eq(cpb_gemm(ctx, 0, 0, 0, 1.0f, cpb_mat(a, 0, 2, 0, 1), cpb_mat(b, 0, 0, 3, 3), 2.0f,
                          cpb_mat(c, 0, 2, 3, 3)),
                 CPB_OK, "%s", cpb_errmsg(ctx));
    cr_assert_eq(cpb_download(ctx, cpb_whole(c), got), CPB_OK);
    for (int i = 0; i < 6; i++) cr_assert_float_eq(got[i], 2.0f * cv[i], 0.0f);
    cpb_ctx_destroy(ctx);
}

Test(cpu_gemm, shape_mismatch_is_refused)
{
    cpb_ctx *ctx = t_ctx();
    cpb_buf *a = t_buf(ctx, 12, CPB_FP32, "a"), *b = t_buf(ctx, 12, CPB_FP32, "b"), *c = t_buf(ctx, 12, CPB_FP32, "c");
    int rc = cpb_gemm(ctx, 0, 0, 0, 1.0f, cpb_mat(a, 0, 3, 4, 4), cpb_mat(b, 0, 3, 4, 4), 0.0f, cpb_mat(c, 0, 3, 4, 4));
    cr_assert_eq(rc, CPB_ERR_INVALID);
    cr_assert(strstr(cpb_errmsg(ctx), "shapes do not match") != NULL, "message: %s", cpb_errmsg(ctx));
    cpb_ctx_destroy(ctx);
}
