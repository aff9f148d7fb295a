/* kern_rope_stats.cu — launchers of the RoPE, delta and lse-merge kernels (kern_rope_stats.cuh). */
#include "kern_rope_stats.cuh"
#include "cuda_launch.cuh"

using namespace cpbk_rope_stats;

extern "C" cudaError_t cpbk_rope(cudaStream_t s, kview x, const kseg_inline *segs, int nseg, double base, int inverse)
{
    int64_t n = x.rows * x.heads * (x.dim / 2);
    if (n == 0 || nseg <= 0) return cudaSuccess;
    if (nseg > CPBK_ROPE_INLINE_SEGS) return cudaErrorInvalidValue;
    CPBK_LAUNCH(rope_kernel, cpbk_blocks(n, kThreads), kThreads, 0, s, x, *segs, nseg, base, inverse, n);
    return cudaGetLastError();
}

extern "C" cudaError_t cpbk_delta(cudaStream_t s, kview o, kview d_o, kview delta)
{
    int64_t items = o.rows * o.heads;
    if (items == 0) return cudaSuccess;
    CPBK_LAUNCH(delta_kernel, cpbk_blocks(items * 32, kThreads), kThreads, 0, s, o, d_o, delta, items);
    return cudaGetLastError();
}

extern "C" cudaError_t cpbk_lse_merge(cudaStream_t s, kview o_acc, kview lse_acc, kview o_part,
                                      kview lse_part)
{
    int64_t items = o_acc.rows * o_acc.heads;
    if (items == 0) return cudaSuccess;
    CPBK_LAUNCH(merge_kernel, cpbk_blocks(items * 32, kThreads), kThreads, 0, s, o_acc, lse_acc, o_part, lse_part, items);
    return cudaGetLastError();
}
