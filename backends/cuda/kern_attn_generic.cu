/* kern_attn_generic.cu — launchers of the generic attention kernels
 * (kern_attn_generic.cuh: any head dim up to 256, fp32 CUDA-core math). */
#include "cuda_attn.cuh"
#include "kern_attn_generic.cuh"
#include "cuda_launch.cuh"

namespace {

using namespace cpbk_generic;

template <typename K>
cudaError_t launch(K kernel, dim3 grid, size_t smem, cudaStream_t s, const kattn &a)
{
    /* above 48 KiB of dynamic shared memory a kernel must opt in */
    if (smem > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
    }
    CPBK_LAUNCH(kernel, grid, kRows * 32, smem, s, a);
    return cudaGetLastError();
}

/* grid.y is limited to 65535 heads, grid.x to 2^31-1 row blocks: both ample */
template <int NT>
cudaError_t run_fwd(cudaStream_t s, const kattn &a)
{
    int d = (int)a.q.dim;
    size_t smem = sizeof(float) * (size_t)(2 * kTile * (d + 1) + kRows * d);
    dim3 grid((unsigned)((a.q.rows + kRows - 1) / kRows), (unsigned)a.q.heads);
    return launch(fwd_kernel<NT>, grid, smem, s, a);
}

template <int NT>
cudaError_t run_bwd(cudaStream_t s, const kattn &a)
{
    int d = (int)a.q.dim;
    if (a.q.rows > 0) { /* no grid of zero blocks; dk, dv are still written (zeros) */
        size_t smem_dq = sizeof(float) * (size_t)(2 * kTile * (d + 1) + 2 * kRows * d);
        dim3 gq((unsigned)((a.q.rows + kRows - 1) / kRows), (unsigned)a.q.heads);
        cudaError_t e = launch(dq_kernel<NT>, gq, smem_dq, s, a);
        if (e != cudaSuccess) return e;
    }
    if (a.k.rows == 0) return cudaSuccess;
    size_t smem_kv = sizeof(float) * (size_t)(2 * kTile * (d + 1) + 2 * kRows * d + 2 * kTile);
    dim3 gk((unsigned)((a.k.rows + kRows - 1) / kRows), (unsigned)a.k.heads);
    return launch(dkdv_kernel<NT>, gk, smem_kv, s, a);
}

} // namespace

cudaError_t cpbk_attn_fwd_generic(cudaStream_t s, const kattn *a)
{
    if (a->q.rows == 0) return cudaSuccess;
    int d = (int)a->q.dim;
    if (d <= 32) return run_fwd<1>(s, *a);
    if (d <= 64) return run_fwd<2>(s, *a);
    if (d <= 128) return run_fwd<4>(s, *a);
    if (d <= CPBK_MAX_HEAD_DIM) return run_fwd<8>(s, *a);
    return cudaErrorInvalidValue;
}

cudaError_t cpbk_attn_bwd_generic(cudaStream_t s, const kattn *a)
{
    int d = (int)a->q.dim;
    if (d <= 32) return run_bwd<1>(s, *a);
    if (d <= 64) return run_bwd<2>(s, *a);
    if (d <= 128) return run_bwd<4>(s, *a);
    if (d <= CPBK_MAX_HEAD_DIM) return run_bwd<8>(s, *a);
    return cudaErrorInvalidValue;
}
