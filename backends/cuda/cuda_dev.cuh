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

/* the logical (row-major over rows, heads, dim) order is the memory order */
__host__ __device__ __forceinline__ bool kv_flat(const kview &v)
{
    return (v.heads == 1 || v.hs == v.dim) && (v.rows == 1 || v.rs == v.heads * v.dim);
}

/* Visit every element of views a and b (same shape): f(i, offset in a, offset in b) with i
 * the logical index.  Contiguous views are one flat run; otherwise a warp takes one (row,
 * head) run and its lanes that run's elements, so offsets cost one division per run, not
 * two per element. */
template <class F>
__device__ __forceinline__ void walk(const kview &a, const kview &b, F f)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x, t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (kv_flat(a) && kv_flat(b)) {
        const int64_t n = a.rows * a.heads * a.dim;
        for (int64_t i = t; i < n; i += stride) f(i, i, i);
        return;
    }
    const int lane = threadIdx.x & 31;
    const int64_t runs = a.rows * a.heads;
    for (int64_t rh = t >> 5; rh < runs; rh += stride >> 5) {
        const int64_t r = rh / a.heads, h = rh - r * a.heads;
        const int64_t oa = r * a.rs + h * a.hs, ob = r * b.rs + h * b.hs, i0 = rh * a.dim;
        for (int64_t c = lane; c < a.dim; c += 32) f(i0 + c, oa + c, ob + c);
    }
}

/* blocks of `threads` for a walk of v (and a view of its shape): a thread per element when
 * both are flat, a warp per run otherwise; capped, the loops stride */
static inline unsigned int walk_blocks(const kview &v, const kview &w, int threads)
{
    return cpbk_blocks(kv_flat(v) && kv_flat(w) ? kv_count(v) : v.rows * v.heads * 32, threads);
}

#endif
