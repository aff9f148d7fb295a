/* kern_elementwise.cu — launchers of the element-wise kernels (kern_elementwise.cuh). */
#include "kern_elementwise.cuh"
#include "cuda_launch.cuh"

using namespace cpbk_elementwise;

extern "C" cudaError_t cpbk_copy(cudaStream_t s, kview dst, kview src)
{
    int64_t n = kv_count(dst);
    if (n == 0) return cudaSuccess;
    CPBK_LAUNCH(copy_kernel, cpbk_blocks(n, kThreads), kThreads, 0, s, dst, src, n);
    return cudaGetLastError();
}

extern "C" cudaError_t cpbk_fill(cudaStream_t s, kview dst, float value)
{
    int64_t n = kv_count(dst);
    if (n == 0) return cudaSuccess;
    CPBK_LAUNCH(fill_kernel, cpbk_blocks(n, kThreads), kThreads, 0, s, dst, value, n);
    return cudaGetLastError();
}

extern "C" cudaError_t cpbk_axpby(cudaStream_t s, float alpha, kview x, float beta, kview y)
{
    int64_t n = kv_count(y);
    if (n == 0) return cudaSuccess;
    CPBK_LAUNCH(axpby_kernel, cpbk_blocks(n, kThreads), kThreads, 0, s, alpha, x, beta, y, n);
    return cudaGetLastError();
}

extern "C" cudaError_t cpbk_fill_random(cudaStream_t s, kview dst, uint64_t seed, int64_t base, float scale)
{
    int64_t n = kv_count(dst);
    if (n == 0) return cudaSuccess;
    CPBK_LAUNCH(fill_random_kernel, cpbk_blocks(n, kThreads), kThreads, 0, s, dst, seed, base, scale, n);
    return cudaGetLastError();
}

extern "C" cudaError_t cpbk_from_f32(cudaStream_t s, kview dst, const float *src)
{
    int64_t n = kv_count(dst);
    if (n == 0) return cudaSuccess;
    CPBK_LAUNCH(from_f32_kernel, cpbk_blocks(n, kThreads), kThreads, 0, s, dst, src, n);
    return cudaGetLastError();
}

extern "C" cudaError_t cpbk_to_f32(cudaStream_t s, float *dst, kview src)
{
    int64_t n = kv_count(src);
    if (n == 0) return cudaSuccess;
    CPBK_LAUNCH(to_f32_kernel, cpbk_blocks(n, kThreads), kThreads, 0, s, dst, src, n);
    return cudaGetLastError();
}
