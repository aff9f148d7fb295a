/* cuda_mem.c — device memory behind the tracked allocator: a stream-ordered CUDA memory
 * pool with no hidden cross-stream reuse, the reserved and device-used high-waters of
 * DESIGN section 3, pinned host buffers (kept across steps), and the pinned staging area
 * of --comm mpi.
 *
 * Driver-level used memory is sampled when the high-waters are read and reset, not after
 * every allocation: within a trial it only grows (the pool keeps what it reserved, release
 * threshold unlimited), so its value at the end is the high-water.  Between trials the
 * pool is trimmed (cuda_mem_trial), so a trial's reserved bytes are its own, not the
 * largest earlier trial's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if (ctx->opts.capacity <= 0) ctx->dev.capacity = ((int64_t)fr) / (st->gpu_sharers > 0 ? st->gpu_sharers : 1);
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

/* The trial starts here: the high-waters restart, and the baseline becomes everything the
 * device uses outside the pool now.  Called after the warm-up step, it takes in what NCCL
 * connected lazily (its buffers, per communication pattern, at the first use) and cuBLAS
 * and cuDNN set up.  What appeared outside the pool since the last baseline is not the
 * tracked allocator's to use: a default capacity gives it up, so that the tracked
 * allocator's OOM comes before the device's.  (Only on a GPU this rank has to itself: with
 * --comm mpi the other ranks' pools on the same GPU are outside this one, and the default
 * capacity already divided the GPU among them; NCCL, the memory meant here, needs a GPU
 * per rank anyway.) */
int cuda_mem_highwater_reset(cpb_ctx *ctx)
{
    cuda_state *st = cuda_st(ctx);
    uint64_t zero = 0, reserved = 0; /* zero resets the high-water to the current reserved size */
    CUDA_TRY(ctx, cudaMemPoolSetAttribute(st->pool, cudaMemPoolAttrReservedMemHigh, &zero));
    CUDA_TRY(ctx, cudaMemPoolGetAttribute(st->pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
    int64_t base = used_now() - (int64_t)reserved;
    if (st->gpu_sharers <= 1 && base > st->baseline_used) cuda_mem_rebaseline(ctx, base - st->baseline_used);
    st->baseline_used = base;
    st->used_high = 0;
    cuda_mem_sample(ctx);
    return CPB_OK;
}

static void pinned_free_idle(cuda_state *st);

/* A measured trial's phases (cpb_backend.h, mem_trial).  At its start every buffer of the
 * previous trial has been freed on its stream: once those frees ran (the host waits for
 * the streams, which the trim needs: a free the host has not seen complete may count as
 * outstanding), the pool gives back what it kept, and the idle pinned blocks go (no step
 * is in flight, so no cudaFreeHost waits on a collective).  After the warm-up steps the
 * pinned cache is sealed: a timed step takes only blocks the warm-up left. */
int cuda_mem_trial(cpb_ctx *ctx, int phase)
{
    cuda_state *st = cuda_st(ctx);
    if (phase == CPB_MEM_TRIAL_TIMED) {
        st->pinned_sealed = 1;
        return CPB_OK;
    }
    st->pinned_sealed = 0;
    CPB_TRY(cpb_sync(ctx));
    /* keep nothing the trial has not asked for: allocations still outstanding stay anyway */
    CUDA_TRY(ctx, cudaMemPoolTrimTo(st->pool, 0));
    pinned_free_idle(st);
    return CPB_OK;
}

/* ---------------------------------------------------------------- pinned host blocks */

/* Pinned memory is kept across steps, like PyTorch's pinned-memory allocator: the first
 * (warm-up) step allocates it, later steps take the same blocks again, so no
 * cudaMallocHost / cudaFreeHost falls in a measured step.  Both synchronise the device
 * (cudaFreeHost waits for it; a page-locked allocation is an implicit synchronisation,
 * CUDA C Programming Guide), and called while a peer's NCCL kernel waits for this rank they
 * can deadlock the job (NCCL documents such calls as a deadlock risk).  So: idle blocks are
 * freed only between trials (cuda_mem_trial), never to make room mid-step, and once the
 * warm-up has filled the cache a timed step that misses it fails, naming the size.  A
 * released block waits for its free stream's work with an event; the first use of the
 * block on each stream waits on that event (cuda_ready).  The tracked host_peak_bytes is
 * the front-end's, unchanged. */
static size_t pinned_size(int64_t bytes)
{
    size_t g = (size_t)1 << 16;
    return ((size_t)bytes + g - 1) / g * g;
}

static cuda_pinned *pinned_of(cuda_state *st, const void *p)
{
    for (int i = 0; i < st->npinned; i++)
        if (st->pinned[i].p == p) return &st->pinned[i];
    return NULL;
}

static int pinned_take(cpb_ctx *ctx, cpb_buf *buf)
{
    cuda_state *st = cuda_st(ctx);
    size_t want = pinned_size(buf->bytes);
    for (int i = 0; i < st->npinned; i++)
        if (!st->pinned[i].in_use && st->pinned[i].bytes == want) {
            st->pinned[i].in_use = 1;
            st->pinned[i].waited = 0;
            buf->ptr = st->pinned[i].p;
            return CPB_OK;
        }
    if (st->pinned_sealed) {
        buf->ptr = NULL;
        return cpb_fail(ctx, CPB_ERR_BACKEND,
                        "cuda backend: a timed step needs a pinned host block of %lld bytes (%.3f GiB) for '%s' that "
                        "the warm-up step did not leave in the pinned cache; allocating it here (cudaMallocHost) "
                        "would synchronise the device while a peer's NCCL kernel may wait on this rank: a method "
                        "must allocate the same host buffers in every step",
                        (long long)want, want / 1073741824.0, buf->name);
    }
    /* a size no idle block has (a new shape): a new block; idle ones of other sizes stay
     * until the trial ends (freeing them here would synchronise the device mid-step) */
    if (st->npinned == st->pinned_cap) {
        int cap = st->pinned_cap ? 2 * st->pinned_cap : 16;
        cuda_pinned *np = realloc(st->pinned, sizeof *np * (size_t)cap);
        if (!np) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "cuda backend: out of host memory");
        st->pinned = np;
        st->pinned_cap = cap;
    }
    cuda_pinned *b = &st->pinned[st->npinned];
    memset(b, 0, sizeof *b);
    cudaError_t e = cudaMallocHost(&b->p, want);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&b->done, cudaEventDisableTiming);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (b->p) cudaFreeHost(b->p);
        buf->ptr = NULL;
        return cpb_fail(ctx, CPB_ERR_NOMEM_HOST,
                        "cuda backend: cudaMallocHost of %.3f GiB for '%s' failed: %s; the host cannot pin more "
                        "memory (lower --seq or --host-mem-cap)",
                        buf->bytes / 1073741824.0, buf->name, cudaGetErrorString(e));
    }
    b->bytes = want;
    b->in_use = 1;
    st->npinned++;
    buf->ptr = b->p;
    return CPB_OK;
}

/* between trials: the blocks no buffer holds go back to the system */
static void pinned_free_idle(cuda_state *st)
{
    for (int i = 0; i < st->npinned;) {
        if (st->pinned[i].in_use) {
            i++;
            continue;
        }
        cudaFreeHost(st->pinned[i].p);
        cudaEventDestroy(st->pinned[i].done);
        st->pinned[i] = st->pinned[--st->npinned];
    }
}

void cuda_pinned_fini(cpb_ctx *ctx)
{
    cuda_state *st = cuda_st(ctx);
    for (int i = 0; i < st->npinned; i++) {
        cudaFreeHost(st->pinned[i].p);
        cudaEventDestroy(st->pinned[i].done);
    }
    free(st->pinned);
    st->pinned = NULL;
    st->npinned = st->pinned_cap = 0;
}

/* device buffers get their memory at first use (cuda_ready); host buffers now */
int cuda_alloc(cpb_ctx *ctx, cpb_buf *buf)
{
    buf->ptr = NULL;
    if (!buf->host) return CPB_OK;
    return pinned_take(ctx, buf);
}

int cuda_ready(cpb_ctx *ctx, cpb_buf *buf, int stream)
{
    if (!buf) return CPB_OK;
    cuda_state *st = cuda_st(ctx);
    if (buf->host) {
        /* a reused pinned block: this stream waits for the block's previous user, once */
        cuda_pinned *b = pinned_of(st, buf->ptr);
        if (b && b->done_pending && !(b->waited & (1u << stream))) {
            CUDA_TRY(ctx, cudaStreamWaitEvent(st->streams[stream], b->done, 0));
            b->waited |= 1u << stream;
        }
        return CPB_OK;
    }
    if (buf->ptr) return CPB_OK;
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
        /* back to the cache, free once the free stream's work so far is done */
        cuda_pinned *b = pinned_of(st, buf->ptr);
        if (b) {
            cudaError_t e = cudaEventRecord(b->done, st->streams[fs]);
            if (e != cudaSuccess) (void)cudaGetLastError();
            b->done_pending = e == cudaSuccess;
            b->waited = 0;
            b->in_use = 0;
        }
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
