/* cuda_mem.c — device memory behind the tracked allocator: a stream-ordered CUDA memory
 * pool with no hidden cross-stream reuse, the reserved and device-used high-waters of
 * DESIGN section 3, pinned host buffers, and the pinned staging area of --comm mpi. */
#include <stdio.h>
#include <stdlib.h>

#include "cuda_internal.h"

static int64_t used_now(void)
{
    size_t fr = 0, total = 0;
    if (cudaMemGetInfo(&fr, &total) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return (int64_t)total - (int64_t)fr;
}

int cuda_mem_init(cpb_ctx *ctx)
{
    cuda_state *st = cuda_st(ctx);
    struct cudaMemPoolProps props = {0};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = st->device;
    CUDA_TRY(ctx, cudaMemPoolCreate(&st->pool, &props));
    /* keep freed memory in the pool (like PyTorch's caching allocator): the reserved
     * high-water is then what the method needed at most */
    uint64_t keep = UINT64_MAX;
    CUDA_TRY(ctx, cudaMemPoolSetAttribute(st->pool, cudaMemPoolAttrReleaseThreshold, &keep));
    /* reuse a freed block on another stream only through dependencies the method made
     * itself (events): no opportunistic reuse, no dependencies inserted by the driver */
    int off = 0, on = 1;
    CUDA_TRY(ctx, cudaMemPoolSetAttribute(st->pool, cudaMemPoolReuseAllowOpportunistic, &off));
    CUDA_TRY(ctx, cudaMemPoolSetAttribute(st->pool, cudaMemPoolReuseAllowInternalDependencies, &off));
    CUDA_TRY(ctx, cudaMemPoolSetAttribute(st->pool, cudaMemPoolReuseFollowEventDependencies, &on));

    size_t fr = 0, total = 0;
    CUDA_TRY(ctx, cudaMemGetInfo(&fr, &total));
    st->total_mem = (int64_t)total;
    st->baseline_used = (int64_t)total - (int64_t)fr;
    st->used_high = 0;
    /* default capacity: what is left after start-up, shared by the ranks on this GPU */
    if (ctx->opts.capacity <= 0) {
        int per_gpu = 1;
        int ndev = cuda_probe(NULL, 0);
        if (ndev > 0 && st->local_size > ndev) per_gpu = (st->local_size + ndev - 1) / ndev;
        ctx->dev.capacity = ((int64_t)fr) / per_gpu;
    }
    return CPB_OK;
}

void cuda_mem_fini(cpb_ctx *ctx)
{
    cuda_state *st = cuda_st(ctx);
    if (st->stage) cudaFreeHost(st->stage);
    st->stage = NULL;
    st->stage_bytes = 0;
    if (st->pool) cudaMemPoolDestroy(st->pool);
    st->pool = NULL;
}

void cuda_mem_sample(cpb_ctx *ctx)
{
    cuda_state *st = cuda_st(ctx);
    int64_t u = used_now() - st->baseline_used;
    if (u > st->used_high) st->used_high = u;
}

void cuda_mem_rebaseline(cpb_ctx *ctx, int64_t startup_bytes)
{
    cuda_state *st = cuda_st(ctx);
    if (startup_bytes > 0) st->baseline_used += startup_bytes;
    /* a default capacity shrinks by what start-up took */
    if (ctx->opts.capacity <= 0 && startup_bytes > 0 && ctx->dev.capacity > startup_bytes)
        ctx->dev.capacity -= startup_bytes;
}

int cuda_mem_highwater(cpb_ctx *ctx, int64_t *reserved, int64_t *device_used)
{
    cuda_state *st = cuda_st(ctx);
    uint64_t hi = 0;
    CUDA_TRY(ctx, cudaMemPoolGetAttribute(st->pool, cudaMemPoolAttrReservedMemHigh, &hi));
    cuda_mem_sample(ctx);
    if (reserved) *reserved = (int64_t)hi;
    if (device_used) *device_used = st->used_high;
    return CPB_OK;
}

int cuda_mem_highwater_reset(cpb_ctx *ctx)
{
    cuda_state *st = cuda_st(ctx);
    uint64_t zero = 0; /* resets the high-water to the current reserved size */
    CUDA_TRY(ctx, cudaMemPoolSetAttribute(st->pool, cudaMemPoolAttrReservedMemHigh, &zero));
    st->used_high = 0;
    cuda_mem_sample(ctx);
    return CPB_OK;
}

/* device buffers get their memory at first use (cuda_ready); host buffers now */
int cuda_alloc(cpb_ctx *ctx, cpb_buf *buf)
{
    buf->ptr = NULL;
    if (!buf->host) return CPB_OK;
    cudaError_t e = cudaMallocHost(&buf->ptr, (size_t)buf->bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        buf->ptr = NULL;
        return cpb_fail(ctx, CPB_ERR_NOMEM_HOST,
                        "cuda backend: cudaMallocHost of %.3f GiB for '%s' failed: %s; the host cannot pin more "
                        "memory (lower --seq or --host-mem-cap)",
                        buf->bytes / 1073741824.0, buf->name, cudaGetErrorString(e));
    }
    return CPB_OK;
}

int cuda_ready(cpb_ctx *ctx, cpb_buf *buf, int stream)
{
    if (!buf || buf->ptr) return CPB_OK;
    cuda_state *st = cuda_st(ctx);
    cudaError_t e = cudaMallocFromPoolAsync(&buf->ptr, (size_t)buf->bytes, st->pool, st->streams[stream]);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        buf->ptr = NULL;
        if (e == cudaErrorMemoryAllocation)
            return cpb_fail(ctx, CPB_ERR_OOM,
                            "cuda backend: the device ran out of memory allocating '%s' (%.3f GiB, %s) although "
                            "the tracked capacity allowed it (fragmentation, or other processes on the GPU): "
                            "lower --mem-cap or --seq",
                            buf->name, buf->bytes / 1073741824.0, cpb_tag_name(buf->tag));
        return cuda_fail(ctx, e, "cudaMallocFromPoolAsync");
    }
    cuda_mem_sample(ctx);
    return CPB_OK;
}

int cuda_ready_view(cpb_ctx *ctx, const cpb_view *v, int stream)
{
    return v->buf ? cuda_ready(ctx, v->buf, stream) : CPB_OK;
}

void cuda_release(cpb_ctx *ctx, cpb_buf *buf)
{
    cuda_state *st = cuda_st(ctx);
    /* the GEMM workspace of a stream is a tracked buffer: forget it when it goes */
    for (int s = 0; s < CPB_MAX_STREAMS; s++)
        if (st->gemm_ws[s] == buf) {
            st->gemm_ws[s] = NULL;
            if (st->blas[s]) cublasSetWorkspace(st->blas[s], NULL, 0);
        }
    if (!buf->ptr) return;
    int fs = buf->free_stream >= 0 && buf->free_stream < CPB_MAX_STREAMS && st->streams[buf->free_stream]
                 ? buf->free_stream
                 : CPB_STREAM_COMPUTE;
    if (buf->host) {
        /* after the free stream's work; cudaFreeHost itself waits for the device */
        cudaStreamSynchronize(st->streams[fs]);
        cudaFreeHost(buf->ptr);
    } else {
        cudaFreeAsync(buf->ptr, st->streams[fs]);
    }
    buf->ptr = NULL;
}

int cuda_stage(cpb_ctx *ctx, size_t bytes)
{
    cuda_state *st = cuda_st(ctx);
    if (bytes <= st->stage_bytes) return CPB_OK;
    if (st->stage) cudaFreeHost(st->stage);
    st->stage = NULL;
    st->stage_bytes = 0;
    size_t want = bytes < ((size_t)1 << 20) ? ((size_t)1 << 20) : bytes;
    cudaError_t e = cudaMallocHost(&st->stage, want);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        st->stage = NULL;
        return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "cuda backend: cannot pin %.3f GiB of host staging memory: %s",
                        want / 1073741824.0, cudaGetErrorString(e));
    }
    st->stage_bytes = want;
    return CPB_OK;
}
