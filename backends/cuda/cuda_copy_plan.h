/* cuda_copy_plan.h — how a same-dtype copy between two views goes to the copy engines,
 * within the device's limits (pure C, no CUDA: unit-tested in tests/unit).
 *
 * cudaMemcpy2DAsync refuses a pitch above the device's memPitch (2147483647 bytes on an
 * H100), so a contiguous copy, however large, is one 1-D copy; a strided one is one 2-D
 * copy when both pitches fit, else one 1-D copy per row when there are few rows, else the
 * copy kernel (which reads and writes pinned host memory through its mapped address). */
#ifndef CPB_CUDA_COPY_PLAN_H
#define CPB_CUDA_COPY_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "cpb.h"

typedef enum cuda_copy_kind {
    CUDA_COPY_NONE,   /* nothing to copy */
    CUDA_COPY_1D,     /* one contiguous copy of `width` bytes */
    CUDA_COPY_2D,     /* `height` rows of `width` bytes, pitches dpitch / spitch */
    CUDA_COPY_ROWS,   /* the same rows, one 1-D copy each (a pitch above memPitch) */
    CUDA_COPY_KERNEL, /* a layout (or dtype change) the copy engines cannot do */
} cuda_copy_kind;

typedef struct cuda_copy_plan {
    cuda_copy_kind kind;
    size_t width, height, dpitch, spitch; /* bytes, rows */
} cuda_copy_plan;

/* rows above which per-row copies cost more than the kernel */
#define CUDA_COPY_MAX_ROW_COPIES 64

/* dst and src have the same dtype of es bytes and the same element count; mem_pitch is the
 * device's cudaDevAttrMaxPitch */
cuda_copy_plan cuda_plan_copy(const cpb_view *dst, const cpb_view *src, size_t es, size_t mem_pitch);

#endif
