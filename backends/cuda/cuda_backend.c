/* cuda_backend.c — the cuda backend's life cycle: MPI (one rank per GPU, or several ranks
 * on one GPU with --comm mpi), device choice, streams, ordering events, host sync, the
 * clock, NVTX ranges, and the backend table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_internal.h"

/* MPI is initialised once per process: by the first context that needs it unless the
 * program did it itself, and finalised (only if we initialised it) when the last cuda
 * context using MPI is destroyed (the cpu backend follows the same rule). */
static int mpi_users;
static int mpi_inited_here;

int cuda_fail(cpb_ctx *ctx, cudaError_t e, const char *what)
{
    int code = e == cudaErrorMemoryAllocation ? CPB_ERR_OOM : CPB_ERR_BACKEND;
    const char *hint = e == cudaErrorMemoryAllocation
                           ? "the device is out of memory beyond the tracked capacity: lower --mem-cap or --seq"
                       : e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice
                           ? "no usable GPU or driver: run on a GPU machine (cpbench list says what is present)"
                           : "a CUDA error: rerun with CUDA_LAUNCH_BLOCKING=1 and compute-sanitizer to locate it";
    return cpb_fail(ctx, code, "cuda backend: %s failed: %s (%s); %s", what, cudaGetErrorString(e),
                    cudaGetErrorName(e), hint);
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---------------------------------------------------------------- device probe */

int cpb_cuda_device_count(char *why, size_t why_len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (why) snprintf(why, why_len, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
        return 0;
    }
    if (n == 0 && why) snprintf(why, why_len, "the CUDA driver reports no devices");
    return n;
}

int cpb_cuda_ctx_device(const cpb_ctx *ctx)
{
    if (!ctx || ctx->be != cpb_backend_cuda_get() || !ctx->bs) return -1;
    return ((const cuda_state *)ctx->bs)->device;
}

int cpb_cuda_device_info(int dev, char *name, size_t name_len, int64_t *total_bytes, int *num_sms)
{
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        if (name && name_len) snprintf(name, name_len, "unknown");
        if (total_bytes) *total_bytes = 0;
        if (num_sms) *num_sms = 0;
        return CPB_ERR_BACKEND;
    }
    if (num_sms) *num_sms = prop.multiProcessorCount;
    if (name && name_len) snprintf(name, name_len, "%s", prop.name);
    if (total_bytes) *total_bytes = (int64_t)prop.totalGlobalMem;
    return CPB_OK;
}

/* ---------------------------------------------------------------- init / finalize */

static int init_mpi(cpb_ctx *ctx, cuda_state *st)
{
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (finalized)
        return cpb_fail(ctx, CPB_ERR_COMM, "cuda backend: MPI was already finalized in this process; keep one "
                                           "context alive for the whole run");
    if (!inited) {
        if (MPI_Init(NULL, NULL) != MPI_SUCCESS)
            return cpb_fail(ctx, CPB_ERR_COMM, "cuda backend: MPI_Init failed (start the program with mpirun)");
        mpi_inited_here = 1;
    }
    mpi_users++;
    st->use_mpi = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ctx->world);
    /* ranks on this node: the shared-memory split names the local rank */
    MPI_Comm local;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, ctx->rank, MPI_INFO_NULL, &local) != MPI_SUCCESS)
        return cpb_fail(ctx, CPB_ERR_COMM, "cuda backend: MPI_Comm_split_type (node-local ranks) failed");
    MPI_Comm_rank(local, &st->local_rank);
    MPI_Comm_size(local, &st->local_size);
    MPI_Comm_free(&local);
    return CPB_OK;
}

static int cuda_init(cpb_ctx *ctx)
{
    cuda_state *st = calloc(1, sizeof *st);
    if (!st) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "cuda backend: out of host memory for its state");
    ctx->bs = st;
    st->local_size = 1;
    st->comm_mpi = ctx->opts.comm && strcmp(ctx->opts.comm, "mpi") == 0;
    if (ctx->opts.comm && ctx->opts.comm[0] && !st->comm_mpi && strcmp(ctx->opts.comm, "nccl") != 0)
        return cpb_fail(ctx, CPB_ERR_INVALID, "cuda backend: --comm '%s' is not nccl or mpi", ctx->opts.comm);
#ifndef CPB_HAVE_NCCL
    st->comm_mpi = 1; /* built without NCCL: MPI staging is the only transport */
#endif
    ctx->rank = 0;
    ctx->world = 1;
    if (ctx->opts.use_mpi) CPB_TRY(init_mpi(ctx, st));

    char why[256];
    int ndev = cpb_cuda_device_count(why, sizeof why);
    if (ndev <= 0)
        return cpb_fail(ctx, CPB_ERR_UNSUPPORTED, "cuda backend: no GPU present (%s); use --backend cpu or sim here", why);
    if (ctx->world > 1 && !st->comm_mpi && st->local_size > ndev)
        return cpb_fail(ctx, CPB_ERR_INVALID,
                        "cuda backend: %d ranks on this node but %d GPU(s): NCCL refuses two ranks on one GPU; "
                        "start one rank per GPU, or use --comm mpi for a correctness run on a shared GPU",
                        st->local_size, ndev);
    st->device = st->local_rank % ndev;
    CUDA_TRY(ctx, cudaSetDevice(st->device));
    CUDA_TRY(ctx, cudaFree(0)); /* create the context now: it belongs to the baseline */
    CPB_TRY(cuda_mem_init(ctx));
#ifdef CPB_HAVE_NVTX
    st->nvtx = nvtxDomainCreateA("cpbench");
#endif
    st->t0 = wall_s();
    const char *ak = getenv("CPB_CUDA_ATTN");
    st->attn_generic = ak && strcmp(ak, "generic") == 0;
    return CPB_OK;
}

int cpb_cuda_set_attn_generic(cpb_ctx *ctx, int generic)
{
    if (!ctx || ctx->be != cpb_backend_cuda_get() || !ctx->bs) return CPB_ERR_INVALID;
    cuda_st(ctx)->attn_generic = generic != 0;
    return CPB_OK;
}

static void cuda_finalize(cpb_ctx *ctx)
{
    cuda_state *st = cuda_st(ctx);
    if (!st) return;
    cudaSetDevice(st->device);
    for (int s = 0; s < CPB_MAX_STREAMS; s++)
        if (st->streams[s]) cudaStreamSynchronize(st->streams[s]);
    for (int s = 0; s < CPB_MAX_STREAMS; s++) {
        if (st->blas[s]) cublasDestroy(st->blas[s]);
        if (st->seg_dev[s]) cudaFree(st->seg_dev[s]);
    }
    for (int i = 0; i < st->nevents_cap; i++)
        if (st->events[i]) cudaEventDestroy(st->events[i]);
    free(st->events);
    cuda_mem_fini(ctx);
    for (int s = 0; s < CPB_MAX_STREAMS; s++)
        if (st->streams[s]) cudaStreamDestroy(st->streams[s]);
#ifdef CPB_HAVE_NVTX
    if (st->nvtx) nvtxDomainDestroy(st->nvtx);
#endif
    if (st->use_mpi && --mpi_users == 0 && mpi_inited_here) {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Finalize();
        mpi_inited_here = 0;
    }
    free(st);
    ctx->bs = NULL;
}

/* ---------------------------------------------------------------- streams and events */

static int cuda_stream_create(cpb_ctx *ctx, int id, const char *name)
{
    cuda_state *st = cuda_st(ctx);
    if (id < 0 || id >= CPB_MAX_STREAMS)
        return cpb_fail(ctx, CPB_ERR_INVALID, "cuda backend: stream id %d out of range", id);
    /* cuBLAS handle and RoPE segment table are start-up memory: part of the baseline */
    size_t free0 = 0, free1 = 0, total = 0;
    cudaMemGetInfo(&free0, &total);
    CUDA_TRY(ctx, cudaStreamCreateWithFlags(&st->streams[id], cudaStreamNonBlocking));
    cublasStatus_t bs = cublasCreate(&st->blas[id]);
    if (bs != CUBLAS_STATUS_SUCCESS) return cublas_fail(ctx, bs, "cublasCreate");
    bs = cublasSetStream(st->blas[id], st->streams[id]);
    if (bs != CUBLAS_STATUS_SUCCESS) return cublas_fail(ctx, bs, "cublasSetStream");
    /* until the tracked workspace exists, cuBLAS works without one (no hidden memory);
     * should this cuBLAS refuse that, its own default workspace stays (in the baseline) */
    (void)cublasSetWorkspace(st->blas[id], NULL, 0);
    CUDA_TRY(ctx, cudaMalloc((void **)&st->seg_dev[id], sizeof(int64_t) * (2 * CPB_MAX_SEGS + 1)));
    cudaMemGetInfo(&free1, &total);
    cuda_mem_rebaseline(ctx, (int64_t)free0 - (int64_t)free1);
    (void)name;
    return CPB_OK;
}

static int event_slot(cpb_ctx *ctx, int ev, cudaEvent_t *out)
{
    cuda_state *st = cuda_st(ctx);
    if (ev < 0) return cpb_fail(ctx, CPB_ERR_INVALID, "cuda backend: event id %d", ev);
    if (ev >= st->nevents_cap) {
        int cap = st->nevents_cap ? st->nevents_cap : 256;
        while (cap <= ev) cap *= 2;
        cudaEvent_t *e = realloc(st->events, sizeof *e * (size_t)cap);
        if (!e) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "cuda backend: out of host memory for events");
        memset(e + st->nevents_cap, 0, sizeof *e * (size_t)(cap - st->nevents_cap));
        st->events = e;
        st->nevents_cap = cap;
    }
    if (!st->events[ev]) CUDA_TRY(ctx, cudaEventCreateWithFlags(&st->events[ev], cudaEventDisableTiming));
    *out = st->events[ev];
    return CPB_OK;
}

static int cuda_event_record(cpb_ctx *ctx, int stream, int ev)
{
    cudaEvent_t e = NULL;
    CPB_TRY(event_slot(ctx, ev, &e));
    CUDA_TRY(ctx, cudaEventRecord(e, cuda_st(ctx)->streams[stream]));
    return CPB_OK;
}

static int cuda_stream_wait(cpb_ctx *ctx, int stream, int ev)
{
    cudaEvent_t e = NULL;
    CPB_TRY(event_slot(ctx, ev, &e));
    CUDA_TRY(ctx, cudaStreamWaitEvent(cuda_st(ctx)->streams[stream], e, 0));
    return CPB_OK;
}

/* the host waits for this context's streams (not the whole device: other ranks may share
 * it in --comm mpi runs) */
static int cuda_sync(cpb_ctx *ctx)
{
    cuda_state *st = cuda_st(ctx);
    for (int s = 0; s < ctx->nstreams; s++)
        if (st->streams[s]) CUDA_TRY(ctx, cudaStreamSynchronize(st->streams[s]));
    return CPB_OK;
}

/* wall clock: called after cpb_sync, so every stream's work up to here is done */
static double cuda_clock(cpb_ctx *ctx)
{
    return wall_s() - cuda_st(ctx)->t0;
}

/* ---------------------------------------------------------------- NVTX */

static void cuda_range_push(cpb_ctx *ctx, const char *name)
{
#ifdef CPB_HAVE_NVTX
    nvtxEventAttributes_t at;
    memset(&at, 0, sizeof at);
    at.version = NVTX_VERSION;
    at.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    at.messageType = NVTX_MESSAGE_TYPE_ASCII;
    at.message.ascii = name;
    nvtxDomainRangePushEx(cuda_st(ctx)->nvtx, &at);
#else
    (void)ctx;
    (void)name;
#endif
}

static void cuda_range_pop(cpb_ctx *ctx)
{
#ifdef CPB_HAVE_NVTX
    nvtxDomainRangePop(cuda_st(ctx)->nvtx);
#else
    (void)ctx;
#endif
}

static const cpb_backend cuda_backend = {
    .name = "cuda",
    .init = cuda_init,
    .finalize = cuda_finalize,
    .alloc = cuda_alloc,
    .release = cuda_release,
    .stream_create = cuda_stream_create,
    .event_record = cuda_event_record,
    .stream_wait = cuda_stream_wait,
    .sync = cuda_sync,
    .run_op = cuda_run_op,
    .run_coll = cuda_run_coll,
    .group_create = cuda_group_create,
    .group_destroy = cuda_group_destroy,
    .upload = cuda_upload,
    .download = cuda_download,
    .range_push = cuda_range_push,
    .range_pop = cuda_range_pop,
    .clock = cuda_clock,
};

const cpb_backend *cpb_backend_cuda_get(void)
{
    return &cuda_backend;
}
