/* sd_cublas.cpp — the cuBLAS calls the cuda backend makes (cuBLAS Library User Guide,
 * "cuBLAS Helper Function Reference": cublasCreate, cublasDestroy, cublasSetStream,
 * cublasSetWorkspace, cublasGetStatusName, cublasGetStatusString; "cuBLAS Extension
 * Function Reference": cublasGemmStridedBatchedEx, with the 64-bit integer interface).
 *
 * Rules kept: a handle belongs to the device current at cublasCreate; cublasSetStream
 * resets the workspace to cuBLAS's default pool (so a workspace set before it is no longer
 * used: the stand-in fails a GEMM that then runs on the default pool, since this backend
 * owes every byte to the tracked allocator); a user workspace is device memory aligned to
 * 256 bytes; the GEMM's leading dimensions obey lda >= max(1, m or k), ldb >= max(1, k or
 * n), ldc >= max(1, m), the sizes are not negative, the types are a combination the table
 * of cublasGemmEx lists for CUBLAS_COMPUTE_32F, and C is not read when beta is 0.
 * The product is column-major, op(A) op(B) accumulated in fp32 in k order, C rounded to
 * its type (bf16: round to nearest even). */
#include <cublas_v2.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "cpb_bf16.h"
#include "sd_internal.h"

struct cublasContext {
    int device = 0;
    cudaStream_t stream = nullptr;
    void *ws = nullptr;
    size_t ws_bytes = 0;
    bool user_ws = false;       /* cublasSetWorkspace since the last cublasSetStream */
    bool ws_was_reset = false;  /* cublasSetStream dropped a user workspace */
};

using namespace sd;

namespace {

const char *kHelper = "cuBLAS Library, cuBLAS Helper Function Reference";
const char *kGemm = "cuBLAS Library, cublasGemmEx / cublasGemmStridedBatchedEx";

bool live(cublasHandle_t h)
{
    return h != nullptr;
}

float load(const void *p, cudaDataType t, int64_t i)
{
    if (t == CUDA_R_16BF) return cpb_bf16_to_f32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

void store(void *p, cudaDataType t, int64_t i, float v)
{
    if (t == CUDA_R_16BF) ((uint16_t *)p)[i] = cpb_f32_to_bf16(v);
    else ((float *)p)[i] = v;
}

size_t esize(cudaDataType t)
{
    return t == CUDA_R_16BF ? 2 : 4;
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
    count("cublasCreate");
    if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
    Device *d = current();
    if (!d) return CUBLAS_STATUS_NOT_INITIALIZED;
    cublasContext *h = new cublasContext;
    h->device = current_device();
    std::lock_guard<std::recursive_mutex> lk(lock());
    d->internal += 32ll << 20; /* the default workspace pool (the size recommended for Hopper) */
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
    count("cublasDestroy");
    if (!live(handle)) {
        violation("cuBLAS handle", kHelper, "cublasDestroy of a handle that is not live");
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    /* cublasDestroy synchronizes the handle's stream: its GEMMs finish first */
    if (Stream *s = stream_of(handle->stream, handle->device)) sync_stream(s);
    std::lock_guard<std::recursive_mutex> lk(lock());
    if (Device *d = sd::device(handle->device)) d->internal -= 32ll << 20;
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

/* cublasSetStream: later calls run on the stream; the workspace goes back to the default
 * pool, unconditionally */
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId)
{
    count("cublasSetStream");
    if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (streamId && !is_stream(streamId)) {
        violation("stream handle", kHelper, "cublasSetStream with %p, which is not a live stream", (void *)streamId);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    handle->stream = streamId;
    if (handle->user_ws) handle->ws_was_reset = true;
    handle->user_ws = false;
    handle->ws = nullptr;
    handle->ws_bytes = 0;
    return CUBLAS_STATUS_SUCCESS;
}

/* cublasSetWorkspace: a user-owned device buffer for the calls that follow (size 0 too:
 * then no workspace at all); the pointer must be aligned to at least 256 bytes */
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace, size_t workspaceSizeInBytes)
{
    count("cublasSetWorkspace");
    if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if ((uintptr_t)workspace % 256) {
        violation("workspace alignment", kHelper, "cublasSetWorkspace(%p): the workspace must be aligned to 256 bytes",
                  workspace);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (workspace && workspaceSizeInBytes) {
        Gen *g = find(workspace);
        if (!g || g->kind == K_PINNED || (uintptr_t)workspace + workspaceSizeInBytes > (uintptr_t)g->base + g->size) {
            violation("workspace memory", kHelper, "cublasSetWorkspace(%p, %zu bytes): not that much live device memory",
                      workspace, workspaceSizeInBytes);
            return CUBLAS_STATUS_INVALID_VALUE;
        }
    }
    handle->ws = workspace;
    handle->ws_bytes = workspaceSizeInBytes;
    handle->user_ws = true;
    handle->ws_was_reset = false;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusName(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "<unknown>";
    }
}

const char *cublasGetStatusString(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    default: return "unknown error";
    }
}

cublasStatus_t cublasGemmStridedBatchedEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                             int64_t m, int64_t n, int64_t k, const void *alpha, const void *A,
                                             cudaDataType Atype, int64_t lda, long long int strideA, const void *B,
                                             cudaDataType Btype, int64_t ldb, long long int strideB, const void *beta,
                                             void *C, cudaDataType Ctype, int64_t ldc, long long int strideC,
                                             int64_t batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    count("cublasGemmStridedBatchedEx");
    (void)algo;
    if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;
    if ((transa != CUBLAS_OP_N && transa != CUBLAS_OP_T && transa != CUBLAS_OP_C) ||
        (transb != CUBLAS_OP_N && transb != CUBLAS_OP_T && transb != CUBLAS_OP_C) || m < 0 || n < 0 || k < 0 ||
        batchCount < 0 || !alpha || !beta) {
        violation("GEMM arguments", kGemm, "m %lld n %lld k %lld batch %lld, transa %d transb %d", (long long)m,
                  (long long)n, (long long)k, (long long)batchCount, (int)transa, (int)transb);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    int64_t lda_min = ta ? k : m, ldb_min = tb ? n : k;
    if (lda < (lda_min > 1 ? lda_min : 1) || ldb < (ldb_min > 1 ? ldb_min : 1) || ldc < (m > 1 ? m : 1)) {
        violation("leading dimensions", kGemm,
                  "lda %lld (needs >= %lld: %s), ldb %lld (needs >= %lld: %s), ldc %lld (needs >= %lld) for column-major "
                  "m %lld n %lld k %lld",
                  (long long)lda, (long long)(lda_min > 1 ? lda_min : 1), ta ? "k, A transposed" : "m", (long long)ldb,
                  (long long)(ldb_min > 1 ? ldb_min : 1), tb ? "n, B transposed" : "k", (long long)ldc,
                  (long long)(m > 1 ? m : 1), (long long)m, (long long)n, (long long)k);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    bool types_ok = computeType == CUBLAS_COMPUTE_32F && Atype == Btype &&
                    ((Atype == CUDA_R_16BF && (Ctype == CUDA_R_16BF || Ctype == CUDA_R_32F)) ||
                     (Atype == CUDA_R_32F && Ctype == CUDA_R_32F));
    if (!types_ok) {
        violation("GEMM type combination", kGemm, "A %d, B %d, C %d with compute type %d is not in the table",
                  (int)Atype, (int)Btype, (int)Ctype, (int)computeType);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (m == 0 || n == 0 || batchCount == 0) return CUBLAS_STATUS_SUCCESS;
    if (!handle->user_ws && handle->ws_was_reset) {
        violation("cublasSetStream resets the workspace", "cuBLAS Library, cublasSetStream / cublasSetWorkspace",
                  "a GEMM runs on cuBLAS's default workspace pool: cublasSetStream dropped the workspace given by "
                  "cublasSetWorkspace; set it again after cublasSetStream");
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    if (sticky()) return CUBLAS_STATUS_EXECUTION_FAILED;
    Stream *s = stream_of(handle->stream, handle->device);
    if (!s) return CUBLAS_STATUS_NOT_INITIALIZED;
    float al = *(const float *)alpha, be = *(const float *)beta;
    size_t ea = esize(Atype), ec = esize(Ctype);
    /* the elements each operand spans over the batch */
    int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    auto span = [&](int64_t rows, int64_t cols, int64_t ld, long long stride) {
        return (int64_t)((batchCount - 1) * (stride > 0 ? stride : 0) + (cols - 1) * ld + rows);
    };
    std::lock_guard<std::recursive_mutex> lk(lock());
    uint64_t seq = next_seq(s);
    const char *what = "cublasGemmStridedBatchedEx";
    if (k > 0 && (touch(s, seq, A, (size_t)span(ar, ac, lda, strideA) * ea, what, true) ||
                  touch(s, seq, B, (size_t)span(br, bc, ldb, strideB) * ea, what, true)))
        return CUBLAS_STATUS_EXECUTION_FAILED;
    if (touch(s, seq, C, (size_t)span(m, n, ldc, strideC) * ec, what, true)) return CUBLAS_STATUS_EXECUTION_FAILED;
    if (handle->ws && handle->ws_bytes && touch(s, seq, handle->ws, handle->ws_bytes, "cuBLAS workspace", true))
        return CUBLAS_STATUS_EXECUTION_FAILED;
    if (((uintptr_t)A % ea) || ((uintptr_t)B % ea) || ((uintptr_t)C % ec)) {
        violation("alignment", kGemm, "A %p, B %p, C %p are not aligned to their elements", A, B, C);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    enqueue(s, what, [=] {
        /* op(A) as fp32 rows, op(B) column by column: dot products in k order */
        std::vector<float> arow((size_t)(m * k)), bcol((size_t)k);
        for (int64_t b = 0; b < batchCount; b++) {
            const void *Ab = (const char *)A + (size_t)(b * strideA) * ea;
            const void *Bb = (const char *)B + (size_t)(b * strideB) * ea;
            void *Cb = (char *)C + (size_t)(b * strideC) * ec;
            for (int64_t i = 0; i < m; i++)
                for (int64_t l = 0; l < k; l++) arow[(size_t)(i * k + l)] = load(Ab, Atype, ta ? l + i * lda : i + l * lda);
            for (int64_t j = 0; j < n; j++) {
                for (int64_t l = 0; l < k; l++) bcol[(size_t)l] = load(Bb, Btype, tb ? j + l * ldb : l + j * ldb);
                for (int64_t i = 0; i < m; i++) {
                    const float *ai = arow.data() + i * k;
                    float acc = 0.0f;
                    for (int64_t l = 0; l < k; l++) acc += ai[l] * bcol[(size_t)l];
                    int64_t ci = i + j * ldc;
                    float r = al * acc;
                    if (be != 0.0f) r += be * load(Cb, Ctype, ci); /* beta 0: C need not be valid input */
                    store(Cb, Ctype, ci, r);
                }
            }
        }
        return cudaSuccess;
    });
    return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
