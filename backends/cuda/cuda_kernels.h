/* cuda_kernels.h — C launchers of the cuda backend's own kernels (defined in the .cu
 * files).  Every launcher enqueues on `s` and returns the launch error (cudaSuccess or the
 * reason); shapes were validated by the runtime front-end before we get here. */
#ifndef CPB_CUDA_KERNELS_H
#define CPB_CUDA_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A view as kernels see it: p points at the view's first element (offset applied);
 * element (r, h, c) is at p + r*rs + h*hs + c, in bf16 (bf16 = 1) or fp32. */
typedef struct kview {
    void *p;
    int bf16;
    int64_t rows, heads, dim, rs, hs;
} kview;

cudaError_t cpbk_copy(cudaStream_t s, kview dst, kview src);
cudaError_t cpbk_fill(cudaStream_t s, kview dst, float value);
/* y = alpha*x + beta*y (beta == 0: y is not read) */
cudaError_t cpbk_axpby(cudaStream_t s, float alpha, kview x, float beta, kview y);
cudaError_t cpbk_fill_random(cudaStream_t s, kview dst, uint64_t seed, int64_t base, float scale);
/* out[0] = sum of x^2 (+ out[0] when accumulate); one block, double partials */
cudaError_t cpbk_sumsq(cudaStream_t s, kview x, float *out, int accumulate);
/* fp32 contiguous [n] on the device <-> view (upload / download) */
cudaError_t cpbk_from_f32(cudaStream_t s, kview dst, const float *src);
cudaError_t cpbk_to_f32(cudaStream_t s, float *dst, kview src);

/* RoPE positions as a segment table: nseg+1 start rows (prefix sums) then nseg start
 * positions, at most CPBK_ROPE_INLINE_SEGS segments, passed as a kernel argument (callers
 * with more segments launch once per group of segments) */
#define CPBK_ROPE_INLINE_SEGS 64
typedef struct kseg_inline {
    int64_t t[2 * CPBK_ROPE_INLINE_SEGS + 1];
} kseg_inline;
cudaError_t cpbk_rope(cudaStream_t s, kview x, const kseg_inline *segs, int nseg, double base, int inverse);
/* delta (fp32 [heads][rows] view with dim 1) = rowsum(dO * o) */
cudaError_t cpbk_delta(cudaStream_t s, kview o, kview d_o, kview delta);
cudaError_t cpbk_lse_merge(cudaStream_t s, kview o_acc, kview lse_acc, kview o_part,
                           kview lse_part);

typedef struct kattn {
    kview q, k, v, o, lse;
    kview d_o, delta, dq, dk, dv;
    int causal, accumulate;
    int64_t q_pos0, k_pos0;
    float scale;
    float *dq_acc; /* fp32 [sq][hq][d] workspace (backward) */
    int generic;   /* 1: the generic kernels even where a faster family applies */
} kattn;

cudaError_t cpbk_attn_fwd(cudaStream_t s, const kattn *a);
/* a->delta must be set (computed by cpbk_delta beforehand when the caller gave none) */
cudaError_t cpbk_attn_bwd(cudaStream_t s, const kattn *a);

#ifdef __cplusplus
}
#endif
#endif
