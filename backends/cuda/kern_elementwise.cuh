/* kern_elementwise.cuh — copy with dtype conversion and strides (also the upload/download
 * conversion, from and to a flat fp32 array), fill, axpby, fill_random.  Element-wise over
 * the logical (row, head, dim) index with 64-bit offsets; host-pinned views work too (UVA: cudaMallocHost memory is addressable
 * from kernels), which is how strided host <-> device copies are done. */
#ifndef CPB_KERN_ELEMENTWISE_CUH
#define CPB_KERN_ELEMENTWISE_CUH

#include "cpb_rand.h"
#include "cuda_dev.cuh"

namespace cpbk_elementwise {


const int kThreads = 256;

__global__ void copy_kernel(kview dst, kview src)
{
    walk(dst, src, [&](int64_t, int64_t od, int64_t os) { kv_put(dst, od, kv_get(src, os)); });
}

__global__ void fill_kernel(kview dst, float value)
{
    walk(dst, dst, [&](int64_t, int64_t od, int64_t) { kv_put(dst, od, value); });
}

__global__ void axpby_kernel(float alpha, kview x, float beta, kview y)
{
    walk(y, x, [&](int64_t, int64_t oy, int64_t ox) {
        float r = alpha * kv_get(x, ox);
        /* beta == 0 overwrites: y's old contents (maybe NaN) must not leak in */
        if (beta != 0.0f) r += beta * kv_get(y, oy);
        kv_put(y, oy, r);
    });
}

__global__ void fill_random_kernel(kview dst, uint64_t seed, int64_t base, float scale)
{
    walk(dst, dst, [&](int64_t i, int64_t od, int64_t) { kv_put(dst, od, scale * cpb_rand_u(seed, base + i)); });
}

/* out[0] = sum of x^2 (+ out[0] when accumulate), by ONE block: each thread sums its share
 * of the walk in double, then a tree over the block's double partials in shared memory
 * (blockDim.x doubles, a power of two and a multiple of 32).  One block keeps it
 * deterministic and needs no workspace; it runs outside any timed region (the
 * fingerprint), so its speed does not matter. */
__global__ void sumsq_kernel(kview x, float *out, int accumulate)
{
    CPBK_DYN_SMEM(double, part);
    double s = 0.0;
    walk(x, x, [&](int64_t, int64_t o, int64_t) {
        double v = kv_get(x, o);
        s += v * v;
    });
    part[threadIdx.x] = s;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = (float)(part[0] + (accumulate ? (double)out[0] : 0.0));
}

} // namespace cpbk_elementwise

#endif
