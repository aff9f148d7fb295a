/* kern_attn.cu — which attention kernel runs a call.  The generic kernels handle every
 * shape; a faster family is preferred where it applies. */
#include "cuda_attn.cuh"

extern "C" cudaError_t cpbk_attn_fwd(cudaStream_t s, const kattn *a)
{
    if (a->q.dim > CPBK_MAX_HEAD_DIM) return cudaErrorInvalidValue;
    if (!a->generic && cpbk_attn_tc_applies(a)) return cpbk_attn_fwd_tc(s, a);
    return cpbk_attn_fwd_generic(s, a);
}

extern "C" cudaError_t cpbk_attn_bwd(cudaStream_t s, const kattn *a)
{
    if (a->q.dim > CPBK_MAX_HEAD_DIM) return cudaErrorInvalidValue;
    if (!a->generic && cpbk_attn_tc_bwd_applies(a)) return cpbk_attn_bwd_tc(s, a);
    return cpbk_attn_bwd_generic(s, a);
}
