/* test_cuda_copy_plan.c — how the cuda backend sends same-dtype copies to the copy
 * engines (backends/cuda/cuda_copy_plan.c, plain C): within memPitch, contiguous copies of
 * any size as one 1-D copy, strided ones as 2-D copies or row by row. */
#include <criterion/criterion.h>

#include "cpb.h"
#include "../../backends/cuda/cuda_copy_plan.c"

/* an H100's cudaDevAttrMaxPitch */
#define H100_PITCH ((size_t)2147483647)

static cpb_buf buf(int64_t n)
{
    cpb_buf b = {0};
    b.nelem = n;
    return b;
}

Test(cuda_copy_plan, contiguous_above_2GiB_is_one_1d_copy)
{
    /* offload's x at 5M tokens: 5.4 GB in one row */
    int64_t n = 2700LL << 20;
    cpb_buf d = buf(n), s = buf(n);
    cpb_view dv = cpb_whole(&d), sv = cpb_whole(&s);
    cuda_copy_plan p = cuda_plan_copy(&dv, &sv, 2, H100_PITCH);
    cr_assert_eq(p.kind, CUDA_COPY_1D);
    cr_assert_eq(p.width, (size_t)n * 2);
    /* and as [rows][D], both packed */
    cpb_view dm = cpb_mat(&d, 0, n / 4096, 4096, 4096), sm = cpb_mat(&s, 0, n / 4096, 4096, 4096);
    p = cuda_plan_copy(&dm, &sm, 2, H100_PITCH);
    cr_assert_eq(p.kind, CUDA_COPY_1D);
    cr_assert_eq(p.width, (size_t)n * 2);
}

Test(cuda_copy_plan, strided_rows_are_2d_within_mem_pitch)
{
    cpb_buf d = buf(100 * 64), s = buf(100 * 80);
    cpb_view dv = cpb_mat(&d, 0, 100, 48, 64), sv = cpb_mat(&s, 3, 100, 48, 80);
    cuda_copy_plan p = cuda_plan_copy(&dv, &sv, 4, H100_PITCH);
    cr_assert_eq(p.kind, CUDA_COPY_2D);
    cr_assert(p.width == 48 * 4 && p.height == 100 && p.dpitch == 64 * 4 && p.spitch == 80 * 4);
    /* the same copy on a device whose pitch limit is below 320 bytes: row by row, or the
     * kernel once rows are many */
    p = cuda_plan_copy(&dv, &sv, 4, 256);
    cr_assert_eq(p.kind, CUDA_COPY_KERNEL, "100 rows > %d row copies", CUDA_COPY_MAX_ROW_COPIES);
    cpb_view d8 = cpb_view_rows(dv, 0, 8), s8 = cpb_view_rows(sv, 0, 8);
    p = cuda_plan_copy(&d8, &s8, 4, 256);
    cr_assert_eq(p.kind, CUDA_COPY_ROWS);
    cr_assert(p.height == 8 && p.width == 48 * 4 && p.spitch == 320);
}

Test(cuda_copy_plan, never_a_pitch_above_the_limit)
{
    /* 1-row views used to become 2-D copies with pitch = width: every plan for every shape
     * has pitches within the limit, or is 1-D / per row / the kernel */
    const size_t limit = 512;
    for (int64_t rows = 1; rows <= 70; rows += 23)
        for (int64_t dim = 1; dim <= 300; dim += 37)
            for (int64_t pad = 0; pad <= 200; pad += 100) {
                cpb_buf d = buf(rows * (dim + pad) + 8), s = buf(rows * (dim + pad) + 8);
                cpb_view dv = cpb_mat(&d, 1, rows, dim, dim + pad), sv = cpb_mat(&s, 2, rows, dim, dim);
                cuda_copy_plan p = cuda_plan_copy(&dv, &sv, 4, limit);
                if (p.kind == CUDA_COPY_2D) cr_assert(p.dpitch <= limit && p.spitch <= limit);
                if (p.kind == CUDA_COPY_1D) cr_assert_eq(p.width, (size_t)(rows * dim * 4));
                if (p.kind == CUDA_COPY_ROWS) cr_assert(rows <= CUDA_COPY_MAX_ROW_COPIES);
                cr_assert(pad || p.kind == CUDA_COPY_1D, "packed rows: one 1-D copy");
            }
}

Test(cuda_copy_plan, head_slices)
{
    /* heads 1..2 of [5][4][16]: each row one run of 2 heads -> 2-D with pitch 4 heads */
    cpb_buf d = buf(5 * 4 * 16), s = buf(5 * 2 * 16);
    cpb_view dv = cpb_heads(&d, 16, 5, 2, 16, 64, 16), sv = cpb_heads(&s, 0, 5, 2, 16, 32, 16);
    cuda_copy_plan p = cuda_plan_copy(&dv, &sv, 2, H100_PITCH);
    cr_assert_eq(p.kind, CUDA_COPY_2D);
    cr_assert(p.width == 32 * 2 && p.height == 5 && p.dpitch == 64 * 2 && p.spitch == 32 * 2);
    /* strided heads of several rows: not runs, the kernel */
    cpb_view dh = cpb_heads(&d, 0, 5, 2, 16, 64, 32);
    p = cuda_plan_copy(&dh, &sv, 2, H100_PITCH);
    cr_assert_eq(p.kind, CUDA_COPY_KERNEL);
    /* empty */
    cpb_view e = cpb_view_rows(dv, 0, 0);
    p = cuda_plan_copy(&e, &e, 2, H100_PITCH);
    cr_assert_eq(p.kind, CUDA_COPY_NONE);
}
