/* cuda_attn.cuh — the attention kernel families behind cpbk_attn_fwd / cpbk_attn_bwd
 * (kern_attn.cu picks one per call). */
#ifndef CPB_CUDA_ATTN_CUH
#define CPB_CUDA_ATTN_CUH

#include "cuda_kernels.h"

/* largest head dim any path handles */
#define CPBK_MAX_HEAD_DIM 256

/* any head dim <= 256: fp32 CUDA-core math, one warp per row (kern_attn_generic.cu) */
cudaError_t cpbk_attn_fwd_generic(cudaStream_t s, const kattn *a);
cudaError_t cpbk_attn_bwd_generic(cudaStream_t s, const kattn *a);

/* head dim 64 or 128, bf16 q/k/v: bf16 tensor-core MMA (kern_attn_tc.cu); returns
 * cudaErrorNotSupported when the shape is not one it handles */
int cpbk_attn_tc_applies(const kattn *a);
cudaError_t cpbk_attn_fwd_tc(cudaStream_t s, const kattn *a);
/* backward also needs dO aligned and the fp32 dq workspace (a->dq_acc) */
int cpbk_attn_tc_bwd_applies(const kattn *a);
cudaError_t cpbk_attn_bwd_tc(cudaStream_t s, const kattn *a);

#endif
