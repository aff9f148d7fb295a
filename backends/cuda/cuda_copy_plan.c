/* cuda_copy_plan.c — see cuda_copy_plan.h */
#include "cuda_copy_plan.h"

/* A view whose rows are each one contiguous run (heads packed, or one head) as `height`
 * runs of `width` elements with a pitch; 0 when it is not that. */
static int as_runs(const cpb_view *v, int64_t *width, int64_t *height, int64_t *pitch)
{
    if (v->heads == 1 || v->head_stride == v->dim) {
        *width = v->heads * v->dim;
        *height = v->rows;
        *pitch = v->rows > 1 ? v->row_stride : *width;
        return *pitch >= *width;
    }
    if (v->rows == 1) { /* one row of strided heads */
        *width = v->dim;
        *height = v->heads;
        *pitch = v->head_stride;
        return *pitch >= *width;
    }
    return 0;
}

cuda_copy_plan cuda_plan_copy(const cpb_view *dst, const cpb_view *src, size_t es, size_t mem_pitch)
{
    cuda_copy_plan p = {CUDA_COPY_KERNEL, 0, 0, 0, 0};
    int64_t wd, hd, pd, ws, hs, ps;
    if (dst->rows * dst->heads * dst->dim == 0) {
        p.kind = CUDA_COPY_NONE;
        return p;
    }
    if (!as_runs(dst, &wd, &hd, &pd) || !as_runs(src, &ws, &hs, &ps) || wd != ws || hd != hs) return p;
    p.width = (size_t)wd * es;
    p.height = (size_t)hd;
    p.dpitch = (size_t)pd * es;
    p.spitch = (size_t)ps * es;
    if (hd == 1 || (pd == wd && ps == wd)) { /* both contiguous: one copy of everything */
        p.kind = CUDA_COPY_1D;
        p.width *= p.height;
        p.height = 1;
        p.dpitch = p.spitch = p.width;
        return p;
    }
    if (p.dpitch <= mem_pitch && p.spitch <= mem_pitch) p.kind = CUDA_COPY_2D;
    else if (hd <= CUDA_COPY_MAX_ROW_COPIES) p.kind = CUDA_COPY_ROWS;
    return p;
}
