/* cuda_gemm.c — cpb_gemm on cuBLAS: bf16 (or fp32) inputs, fp32 accumulation, C in bf16
 * or fp32, batched over the views' heads with the head stride as the batch stride (0 =
 * broadcast).  The runtime's views are row-major; cuBLAS is column-major, so
 * C = op(A) op(B) (row-major, m x n) is computed as C^T = op(B)^T op(A)^T (column-major,
 * n x m): the operands swap places and each keeps its own transpose flag. */
#include <stdio.h>

#include "cuda_internal.h"

int cublas_fail(cpb_ctx *ctx, cublasStatus_t s, const char *what)
{
    return cpb_fail(ctx, s == CUBLAS_STATUS_ALLOC_FAILED ? CPB_ERR_OOM : CPB_ERR_BACKEND,
                    "cuda backend: %s failed: %s (%s); check the GEMM shapes and strides in the message above, "
                    "or rerun with CUBLAS_LOGINFO_DBG=1",
                    what, cublasGetStatusString(s), cublasGetStatusName(s));
}

/* leading dimension of a row-major view: its row stride, at least one row's width */
static int64_t ld_of(const cpb_view *v)
{
    int64_t ld = v->rows > 1 ? v->row_stride : v->dim;
    return ld < v->dim ? v->dim : (ld < 1 ? 1 : ld);
}

/* Hand cuBLAS the stream's workspace.  The front-end (cpb_gemm) allocates it through the
 * tracked allocator at the stream's first GEMM, on every backend, so the tracked bytes are
 * the same everywhere; cuda_release forgets it when the trial's buffers are freed. */
static int workspace(cpb_ctx *ctx, int stream, cpb_buf *ws)
{
    cuda_state *st = cuda_st(ctx);
    if (!ws || st->gemm_ws[stream] == ws) return CPB_OK;
    CPB_TRY(cuda_ready(ctx, ws, stream));
    cublasStatus_t s = cublasSetWorkspace(st->blas[stream], ws->ptr, (size_t)ws->bytes);
    if (s != CUBLAS_STATUS_SUCCESS) return cublas_fail(ctx, s, "cublasSetWorkspace");
    st->gemm_ws[stream] = ws;
    return CPB_OK;
}

int cuda_gemm(cpb_ctx *ctx, const cpb_op *op)
{
    cuda_state *st = cuda_st(ctx);
    const cpb_view *A = &op->u.gemm.a, *B = &op->u.gemm.b, *C = &op->u.gemm.c;
    int64_t m = op->u.gemm.m, n = op->u.gemm.n, k = op->u.gemm.k, batch = op->u.gemm.batch;
    if (m == 0 || n == 0 || batch == 0) return CPB_OK;
    cpb_dtype ab = A->buf->dtype, cd = C->buf->dtype;
    if (ab == CPB_FP32 && cd == CPB_BF16)
        return cpb_fail(ctx, CPB_ERR_UNSUPPORTED,
                        "%s: fp32 inputs with a bf16 output are not a cuBLAS combination; give C an fp32 "
                        "buffer or the inputs bf16",
                        op->name);
    CPB_TRY(workspace(ctx, op->stream, op->u.gemm.ws));
    cudaDataType tin = ab == CPB_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    cudaDataType tout = cd == CPB_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    float alpha = op->u.gemm.alpha, beta = op->u.gemm.beta;
    cublasStatus_t s = cublasGemmStridedBatchedEx_64(
        st->blas[op->stream], op->u.gemm.tb ? CUBLAS_OP_T : CUBLAS_OP_N, op->u.gemm.ta ? CUBLAS_OP_T : CUBLAS_OP_N,
        n, m, k, &alpha, cuda_vptr(B), tin, ld_of(B), (long long)(B->heads > 1 ? B->head_stride : 0), cuda_vptr(A),
        tin, ld_of(A), (long long)(A->heads > 1 ? A->head_stride : 0), &beta, cuda_vptr(C), tout, ld_of(C),
        (long long)C->head_stride, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) {
        char what[CPB_RANGE_LEN + 200];
        snprintf(what, sizeof what, "%s: cublasGemmStridedBatchedEx (m %lld n %lld k %lld batch %lld, ta %d tb %d)",
                 op->name, (long long)m, (long long)n, (long long)k, (long long)batch, op->u.gemm.ta, op->u.gemm.tb);
        return cublas_fail(ctx, s, what);
    }
    return CPB_OK;
}
