/* kern_elementwise.cuh — copy with dtype conversion and strides, fill, axpby, fill_random,
 * upload/download conversion.  Element-wise over the logical (row, head, dim) index with
 * 64-bit offsets; host-pinned views work too (UVA: cudaMallocHost memory is addressable
 * from kernels), which is how strided host <-> device copies are done. */
#ifndef CPB_KERN_ELEMENTWISE_CUH
#define CPB_KERN_ELEMENTWISE_CUH

#include "cpb_rand.h"
#include "cuda_dev.cuh"

namespace cpbk_elementwise {


const int kThreads = 256;

__global__ void copy_kernel(kview dst, kview src, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        kv_put(dst, kv_lin(dst, i), kv_get(src, kv_lin(src, i)));
}

__global__ void fill_kernel(kview dst, float value, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        kv_put(dst, kv_lin(dst, i), value);
}

__global__ void axpby_kernel(float alpha, kview x, float beta, kview y, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t oy = kv_lin(y, i);
        float r = alpha * kv_get(x, kv_lin(x, i));
        /* beta == 0 overwrites: y's old contents (maybe NaN) must not leak in */
        if (beta != 0.0f) r += beta * kv_get(y, oy);
        kv_put(y, oy, r);
    }
}

__global__ void fill_random_kernel(kview dst, uint64_t seed, int64_t base, float scale, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        kv_put(dst, kv_lin(dst, i), scale * cpb_rand_u(seed, base + i));
}

__global__ void from_f32_kernel(kview dst, const float *src, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        kv_put(dst, kv_lin(dst, i), src[i]);
}

__global__ void to_f32_kernel(float *dst, kview src, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = kv_get(src, kv_lin(src, i));
}

} // namespace cpbk_elementwise

#endif
