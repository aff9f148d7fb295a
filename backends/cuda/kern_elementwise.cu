/* kern_elementwise.cu — launchers of the element-wise kernels (kern_elementwise.cuh). */
#include "kern_elementwise.cuh"
#include "cuda_launch.cuh"

using namespace cpbk_elementwise;

extern "C" cudaError_t cpbk_copy(cudaStream_t s, kview dst, kview src)
{
    if (kv_count(dst) == 0) return cudaSuccess;
    CPBK_LAUNCH(copy_kernel, walk_blocks(dst, src, kThreads), kThreads, 0, s, dst, src);
    return cudaGetLastError();
}

extern "C" cudaError_t cpbk_fill(cudaStream_t s, kview dst, float value)
{
    if (kv_count(dst) == 0) return cudaSuccess;
    CPBK_LAUNCH(fill_kernel, walk_blocks(dst, dst, kThreads), kThreads, 0, s, dst, value);
    return cudaGetLastError();
}

extern "C" cudaError_t cpbk_axpby(cudaStream_t s, float alpha, kview x, float beta, kview y)
{
    if (kv_count(y) == 0) return cudaSuccess;
    CPBK_LAUNCH(axpby_kernel, walk_blocks(y, x, kThreads), kThreads, 0, s, alpha, x, beta, y);
    return cudaGetLastError();
}

extern "C" cudaError_t cpbk_fill_random(cudaStream_t s, kview dst, uint64_t seed, int64_t base, float scale)
{
    if (kv_count(dst) == 0) return cudaSuccess;
    CPBK_LAUNCH(fill_random_kernel, walk_blocks(dst, dst, kThreads), kThreads, 0, s, dst, seed, base, scale);
    return cudaGetLastError();
}

extern "C" cudaError_t cpbk_sumsq(cudaStream_t s, kview x, float *out, int accumulate)
{
    const int threads = 512;
    CPBK_LAUNCH(sumsq_kernel, 1, threads, threads * sizeof(double), s, x, out, accumulate);
    return cudaGetLastError();
}

/* a flat fp32 array in the logical order of v */
static kview flat_f32(const float *p, const kview &v)
{
    kview f = v;
    f.p = (void *)p;
    f.bf16 = 0;
    f.hs = v.dim;
    f.rs = v.heads * v.dim;
    return f;
}

extern "C" cudaError_t cpbk_from_f32(cudaStream_t s, kview dst, const float *src)
{
    return cpbk_copy(s, dst, flat_f32(src, dst));
}

extern "C" cudaError_t cpbk_to_f32(cudaStream_t s, float *dst, kview src)
{
    return cpbk_copy(s, flat_f32(dst, src), src);
}
