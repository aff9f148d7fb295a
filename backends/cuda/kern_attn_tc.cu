/* kern_attn_tc.cu — launchers of the bf16 tensor-core attention kernels
 * (kern_attn_tc.cuh: head dim 64 and 128, FlashAttention-2 style forward and backward). */
#include "cuda_attn.cuh"
#include "kern_attn_tc.cuh"
#include "cuda_launch.cuh"

namespace {

using namespace cpbk_tc;

template <int D>
cudaError_t run_bwd(cudaStream_t s, const kattn &a)
{
    int64_t nq = a.q.rows * a.q.heads * D;
    cudaError_t e = cudaMemsetAsync(a.dq_acc, 0, sizeof(float) * (size_t)nq, s);
    if (e != cudaSuccess) return e;
    if (a.k.rows > 0) {
        size_t smem = sizeof(uint16_t) * ((size_t)(2 * kBK + 2 * kBQ) * (D + kPad) + (size_t)kBK * (kBQ + kPad)) +
                      sizeof(float) * 2 * kBQ;
        e = cudaFuncSetAttribute(bwd_tc_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
        dim3 grid((unsigned)((a.k.rows + kBK - 1) / kBK), (unsigned)a.k.heads);
        CPBK_LAUNCH(bwd_tc_kernel<D>, grid, kWarps * 32, smem, s, a);
        e = cudaGetLastError();
        if (e != cudaSuccess) return e;
    }
    if (nq == 0) return cudaSuccess;
    CPBK_LAUNCH(dq_finish_kernel, walk_blocks(a.dq, dq_acc_view(a), 256), 256, 0, s, a);
    return cudaGetLastError();
}

template <int D>
cudaError_t run(cudaStream_t s, const kattn &a)
{
    size_t smem = sizeof(uint16_t) * (size_t)(kBQ + 2 * kBK) * (D + kPad);
    cudaError_t e = cudaFuncSetAttribute(fwd_tc_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess) return e;
    dim3 grid((unsigned)((a.q.rows + kBQ - 1) / kBQ), (unsigned)a.q.heads);
    CPBK_LAUNCH(fwd_tc_kernel<D>, grid, kWarps * 32, smem, s, a);
    return cudaGetLastError();
}

bool aligned16(const kview &v)
{
    return v.bf16 && ((uintptr_t)v.p % 16) == 0 && (v.rows <= 1 || v.rs % 8 == 0) && (v.heads <= 1 || v.hs % 8 == 0);
}

} // namespace

int cpbk_attn_tc_applies(const kattn *a)
{
    int64_t d = a->q.dim;
    return (d == 64 || d == 128) && aligned16(a->q) && aligned16(a->k) && aligned16(a->v) && a->q.rows > 0;
}

int cpbk_attn_tc_bwd_applies(const kattn *a)
{
    return cpbk_attn_tc_applies(a) && aligned16(a->d_o) && a->dq_acc != NULL;
}

cudaError_t cpbk_attn_bwd_tc(cudaStream_t s, const kattn *a)
{
    if (!cpbk_attn_tc_bwd_applies(a)) return cudaErrorNotSupported;
    return a->q.dim == 64 ? run_bwd<64>(s, *a) : run_bwd<128>(s, *a);
}

cudaError_t cpbk_attn_fwd_tc(cudaStream_t s, const kattn *a)
{
    if (!cpbk_attn_tc_applies(a)) return cudaErrorNotSupported;
    return a->q.dim == 64 ? run<64>(s, *a) : run<128>(s, *a);
}
