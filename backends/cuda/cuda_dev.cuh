/* cuda_dev.cuh — device helpers shared by the kernels: strided view element access with
 * 64-bit offsets, bf16 <-> fp32, warp reductions, launch geometry. */
#ifndef CPB_CUDA_DEV_CUH
#define CPB_CUDA_DEV_CUH

#include <cuda_bf16.h>
#include <stdint.h>

#include "cuda_kernels.h"

/* the block's dynamic shared memory (the CPU emulator of backends/cuda/emu provides its
 * own) */
#ifdef CPB_CUDA_EMU
#include "emu/emu.h"
#define CPBK_DYN_SMEM(T, name) T *name = reinterpret_cast<T *>(cpb_emu_smem())
#else
#define CPBK_DYN_SMEM(T, name) extern __shared__ __align__(16) T name[]
#endif

/* offset of element (r, h, c) of a view */
__device__ __forceinline__ int64_t kv_off(const kview &v, int64_t r, int64_t h, int64_t c)
{
    return r * v.rs + h * v.hs + c;
}

__device__ __forceinline__ float kv_get(const kview &v, int64_t off)
{
    if (v.bf16) return __bfloat162float(((const __nv_bfloat16 *)v.p)[off]);
    return ((const float *)v.p)[off];
}

__device__ __forceinline__ void kv_put(const kview &v, int64_t off, float x)
{
    if (v.bf16) ((__nv_bfloat16 *)v.p)[off] = __float2bfloat16_rn(x);
    else ((float *)v.p)[off] = x;
}

/* logical index i (row-major over rows, heads, dim) -> element offset */
__device__ __forceinline__ int64_t kv_lin(const kview &v, int64_t i)
{
    int64_t c = i % v.dim, t = i / v.dim;
    int64_t h = t % v.heads, r = t / v.heads;
    return kv_off(v, r, h, c);
}

__device__ __forceinline__ float warp_sum(float x)
{
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

__device__ __forceinline__ float warp_max(float x)
{
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

/* grid-stride launch geometry for n elements (capped: the loops stride) */
static inline unsigned int cpbk_blocks(int64_t n, int threads)
{
    int64_t b = (n + threads - 1) / threads;
    if (b < 1) b = 1;
    if (b > 65535LL * 16) b = 65535LL * 16;
    return (unsigned int)b;
}

static inline int64_t kv_count(const kview &v)
{
    return v.rows * v.heads * v.dim;
}

#endif
