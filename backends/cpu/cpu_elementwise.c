/* cpu_elementwise.c — copy (any dtypes, strides, host <-> device), fill, axpby,
 * fill_random, the sum of squares, the attention delta, and the log-sum-exp merge of partial attention
 * outputs.  Every op walks its views (row, head) vector by vector, dim contiguous. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_rand.h"
#include "cpu_internal.h"
#include "cpu_load_store.h"

int cpu_copy(cpb_ctx *ctx, const cpb_op *op)
{
    const cpb_view *dst = &op->u.copy.dst, *src = &op->u.copy.src;
    size_t es = cpb_dtype_size(dst->buf->dtype);
    if (dst->buf->dtype == src->buf->dtype) {
        /* same storage: byte copies (memmove: the views may share a buffer) */
        for (int64_t r = 0; r < dst->rows; r++)
            for (int64_t h = 0; h < dst->heads; h++)
                memmove((char *)dst->buf->ptr + cpu_at(dst, r, h, 0) * es,
                        (const char *)src->buf->ptr + cpu_at(src, r, h, 0) * es, es * (size_t)dst->dim);
        return CPB_OK;
    }
    float *vec = cpu_scratch(ctx, dst->dim, "copy row");
    if (!vec) return CPB_ERR_NOMEM_HOST;
    for (int64_t r = 0; r < dst->rows; r++)
        for (int64_t h = 0; h < dst->heads; h++) {
            cpu_ld_vec(src, r, h, vec);
            cpu_st_vec(dst, r, h, vec, 0);
        }
    free(vec);
    return CPB_OK;
}

int cpu_fill(cpb_ctx *ctx, const cpb_op *op)
{
    const cpb_view *dst = &op->u.fill.dst;
    float *vec = cpu_scratch(ctx, dst->dim, "fill row");
    if (!vec) return CPB_ERR_NOMEM_HOST;
    for (int64_t j = 0; j < dst->dim; j++) vec[j] = op->u.fill.value;
    for (int64_t r = 0; r < dst->rows; r++)
        for (int64_t h = 0; h < dst->heads; h++) cpu_st_vec(dst, r, h, vec, 0);
    free(vec);
    return CPB_OK;
}

int cpu_axpby(cpb_ctx *ctx, const cpb_op *op)
{
    const cpb_view *x = &op->u.axpby.x, *y = &op->u.axpby.y;
    float alpha = op->u.axpby.alpha, beta = op->u.axpby.beta;
    float *xv = cpu_scratch(ctx, 2 * x->dim, "axpby rows");
    if (!xv) return CPB_ERR_NOMEM_HOST;
    float *yv = xv + x->dim;
    for (int64_t r = 0; r < x->rows; r++)
        for (int64_t h = 0; h < x->heads; h++) {
            cpu_ld_vec(x, r, h, xv);
            if (beta != 0.0f) {
                cpu_ld_vec(y, r, h, yv);
                for (int64_t j = 0; j < x->dim; j++) yv[j] = alpha * xv[j] + beta * yv[j];
            } else {
                /* beta == 0 overwrites: y's old contents (maybe NaN) do not matter */
                for (int64_t j = 0; j < x->dim; j++) yv[j] = alpha * xv[j];
            }
            cpu_st_vec(y, r, h, yv, 0);
        }
    free(xv);
    return CPB_OK;
}

int cpu_fill_random(cpb_ctx *ctx, const cpb_op *op)
{
    const cpb_view *dst = &op->u.rnd.dst;
    float *vec = cpu_scratch(ctx, dst->dim, "fill_random row");
    if (!vec) return CPB_ERR_NOMEM_HOST;
    for (int64_t r = 0; r < dst->rows; r++)
        for (int64_t h = 0; h < dst->heads; h++) {
            /* logical index, row-major over the view */
            int64_t i0 = op->u.rnd.base + (r * dst->heads + h) * dst->dim;
            for (int64_t j = 0; j < dst->dim; j++) vec[j] = op->u.rnd.scale * cpb_rand_u(op->u.rnd.seed, i0 + j);
            cpu_st_vec(dst, r, h, vec, 0);
        }
    free(vec);
    return CPB_OK;
}

int cpu_sumsq(cpb_ctx *ctx, const cpb_op *op)
{
    const cpb_view *x = &op->u.sumsq.x, *out = &op->u.sumsq.out;
    float *vec = cpu_scratch(ctx, x->dim, "sumsq row");
    if (!vec) return CPB_ERR_NOMEM_HOST;
    double s = 0.0; /* double: the fingerprint of a billion elements keeps fp32's digits */
    for (int64_t r = 0; r < x->rows; r++)
        for (int64_t h = 0; h < x->heads; h++) {
            cpu_ld_vec(x, r, h, vec);
            for (int64_t j = 0; j < x->dim; j++) s += (double)vec[j] * vec[j];
        }
    free(vec);
    if (op->u.sumsq.accumulate) s += cpu_ld_stat(out, 0, 0);
    cpu_st_stat(out, 0, 0, (float)s);
    return CPB_OK;
}

int cpu_attn_delta(cpb_ctx *ctx, const cpb_op *op)
{
    const cpb_view *o = &op->u.delta.o, *d_o = &op->u.delta.d_o, *delta = &op->u.delta.delta;
    float *ov = cpu_scratch(ctx, 2 * o->dim, "delta rows");
    if (!ov) return CPB_ERR_NOMEM_HOST;
    float *gv = ov + o->dim;
    for (int64_t r = 0; r < o->rows; r++)
        for (int64_t h = 0; h < o->heads; h++) {
            cpu_ld_vec(o, r, h, ov);
            cpu_ld_vec(d_o, r, h, gv);
            float s = 0.0f;
            for (int64_t j = 0; j < o->dim; j++) s += ov[j] * gv[j];
            cpu_st_stat(delta, r, h, s);
        }
    free(ov);
    return CPB_OK;
}

/* lse' = max + log1p(exp(min - max)): never exp of an lse itself, which overflows fp32
 * for lse > 88.  The larger side gets weight 1 / (1 + e), the other e / (1 + e), with
 * e = exp(min - max). */
int cpu_lse_merge(cpb_ctx *ctx, const cpb_op *op)
{
    const cpb_view *oa = &op->u.merge.o_acc, *la = &op->u.merge.lse_acc;
    const cpb_view *opart = &op->u.merge.o_part, *lp = &op->u.merge.lse_part;
    float *av = cpu_scratch(ctx, 2 * oa->dim, "lse_merge rows");
    if (!av) return CPB_ERR_NOMEM_HOST;
    float *pv = av + oa->dim;
    for (int64_t r = 0; r < oa->rows; r++)
        for (int64_t h = 0; h < oa->heads; h++) {
            float l_acc = cpu_ld_stat(la, r, h), l_part = cpu_ld_stat(lp, r, h);
            if (l_part == -INFINITY) continue; /* the partial saw no key */
            cpu_ld_vec(opart, r, h, pv);
            if (l_acc == -INFINITY) {
                /* nothing accumulated yet: take the partial as is */
                cpu_st_vec(oa, r, h, pv, 0);
                cpu_st_stat(la, r, h, l_part);
                continue;
            }
            /* weights from the difference of the two lse values only: exp(l - l_new)
             * would inherit l_new's rounding (6e-5 at lse ~ 1000) */
            float mx = fmaxf(l_acc, l_part), mn = fminf(l_acc, l_part);
            float e = expf(mn - mx), inv = 1.0f / (1.0f + e);
            float l_new = mx + log1pf(e);
            float wa = l_acc >= l_part ? inv : e * inv, wp = l_acc >= l_part ? e * inv : inv;
            cpu_ld_vec(oa, r, h, av);
            for (int64_t j = 0; j < oa->dim; j++) av[j] = av[j] * wa + pv[j] * wp;
            cpu_st_vec(oa, r, h, av, 0);
            cpu_st_stat(la, r, h, l_new);
        }
    free(av);
    return CPB_OK;
}
