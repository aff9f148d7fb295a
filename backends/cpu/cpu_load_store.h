/* cpu_load_store.h — element access to a view's storage (bf16 or fp32) for the cpu
 * backend.  All math is fp32; bf16 stores round to nearest even (cpb_bf16.h), the same
 * rounding the GPU applies, so the backends store identical values for identical math. */
#ifndef CPU_LOAD_STORE_H
#define CPU_LOAD_STORE_H

#include "cpb.h"
#include "cpb_bf16.h"

/* element offset of (row r, head h, column c) inside the view's buffer */
static inline int64_t cpu_at(const cpb_view *v, int64_t r, int64_t h, int64_t c)
{
    return v->off + r * v->row_stride + h * v->head_stride + c;
}

static inline float cpu_ld(const cpb_buf *b, int64_t i)
{
    if (b->dtype == CPB_BF16) return cpb_bf16_to_f32(((const uint16_t *)b->ptr)[i]);
    return ((const float *)b->ptr)[i];
}

static inline void cpu_st(cpb_buf *b, int64_t i, float x)
{
    if (b->dtype == CPB_BF16) ((uint16_t *)b->ptr)[i] = cpb_f32_to_bf16(x);
    else ((float *)b->ptr)[i] = x;
}

/* load `n` consecutive elements starting at element i into out[0..n) */
static inline void cpu_ld_n(const cpb_buf *b, int64_t i, int64_t n, float *out)
{
    if (b->dtype == CPB_BF16) {
        const uint16_t *p = (const uint16_t *)b->ptr + i;
        for (int64_t j = 0; j < n; j++) out[j] = cpb_bf16_to_f32(p[j]);
    } else {
        const float *p = (const float *)b->ptr + i;
        for (int64_t j = 0; j < n; j++) out[j] = p[j];
    }
}

/* store (accumulate = 0) or add (accumulate = 1) n values at element i */
static inline void cpu_st_n(cpb_buf *b, int64_t i, int64_t n, const float *in, int accumulate)
{
    if (b->dtype == CPB_BF16) {
        uint16_t *p = (uint16_t *)b->ptr + i;
        for (int64_t j = 0; j < n; j++)
            p[j] = cpb_f32_to_bf16(accumulate ? cpb_bf16_to_f32(p[j]) + in[j] : in[j]);
    } else {
        float *p = (float *)b->ptr + i;
        for (int64_t j = 0; j < n; j++) p[j] = accumulate ? p[j] + in[j] : in[j];
    }
}

/* one (row, head) vector of a view: dim elements */
static inline void cpu_ld_vec(const cpb_view *v, int64_t r, int64_t h, float *out)
{
    cpu_ld_n(v->buf, cpu_at(v, r, h, 0), v->dim, out);
}

static inline void cpu_st_vec(const cpb_view *v, int64_t r, int64_t h, const float *in, int accumulate)
{
    cpu_st_n(v->buf, cpu_at(v, r, h, 0), v->dim, in, accumulate);
}

/* a per-row statistic (lse, delta: dim 1 views) */
static inline float cpu_ld_stat(const cpb_view *v, int64_t r, int64_t h)
{
    return cpu_ld(v->buf, cpu_at(v, r, h, 0));
}

static inline void cpu_st_stat(const cpb_view *v, int64_t r, int64_t h, float x)
{
    cpu_st(v->buf, cpu_at(v, r, h, 0), x);
}

#endif
