/* cuda_backend.c — the cuda backend's life cycle: its place among the MPI ranks (one rank
 * per GPU, or several ranks on one GPU with --comm mpi), device choice, streams, ordering
 * events, host sync, the clock, NVTX ranges, the optional hooks of cpb_backend.h (device
 * probe and info, library versions, attention kernel choice, profiler range) and the
 * backend table. */
#include <cuda_profiler_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn_cudnn.h"
#include "cuda_internal.h"

int cuda_fail(cpb_ctx *ctx, cudaError_t e, const char *what)
{
    int code = e == cudaErrorMemoryAllocation ? CPB_ERR_OOM : CPB_ERR_BACKEND;
    const char *hint = e == cudaErrorMemoryAllocation
                           ? "the device is out of memory beyond the tracked capacity: lower --mem-cap or --seq"
                       : e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice
                           ? "no usable GPU or driver: run on a GPU machine (cpbench list says what is present)"
                           : "a CUDA error: rerun with CUDA_LAUNCH_BLOCKING=1 and compute-sanitizer to locate it";
    (void)cudaGetLastError(); /* handled here: not the next launch's error */
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

int cuda_probe(char *why, size_t why_len)
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

static int cuda_device_info(cpb_ctx *ctx, cpb_device_info *out)
{
    memset(out, 0, sizeof *out);
    struct cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, cuda_st(ctx)->device);
    if (e != cudaSuccess) {
        snprintf(out->name, sizeof out->name, "unknown");
        return cuda_fail(ctx, e, "cudaGetDeviceProperties");
    }
    snprintf(out->name, sizeof out->name, "%s", prop.name);
    out->total_bytes = (int64_t)prop.totalGlobalMem;
    out->num_sms = prop.multiProcessorCount;
    out->max_pitch_bytes = (int64_t)cuda_st(ctx)->mem_pitch; /* cudaDevAttrMaxPitch, read at init */
    return CPB_OK;
}

/* cuDNN by weak reference: recorded once a build links it */

static void cuda_versions(cpb_backend_versions *out)
{
    memset(out, 0, sizeof *out);
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    if (cudaDriverGetVersion(&drv) == cudaSuccess && drv > 0)
        snprintf(out->runtime, sizeof out->runtime, "runtime %d.%d, driver %d.%d", rt / 1000, (rt % 1000) / 10,
                 drv / 1000, (drv % 1000) / 10);
    else /* no NVIDIA driver on this machine */
        snprintf(out->runtime, sizeof out->runtime, "runtime %d.%d, no driver", rt / 1000, (rt % 1000) / 10);
    (void)cudaGetLastError();
#ifdef CPB_HAVE_NCCL
    int v = 0;
    if (ncclGetVersion(&v) == ncclSuccess) /* NCCL >= 2.9: major*10000 + minor*100 + patch */
        snprintf(out->comm, sizeof out->comm, "%d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
#endif
    cpb_cudnn_attn_version(out->dnn, sizeof out->dnn);
}

/* ---------------------------------------------------------------- init / finalize */

/* main started MPI (cpb_backend.h: mpi_world) */
static int init_mpi(cpb_ctx *ctx, cuda_state *st)
{
    st->use_mpi = 1;
    if (MPI_Comm_rank(MPI_COMM_WORLD, &ctx->rank) != MPI_SUCCESS ||
        MPI_Comm_size(MPI_COMM_WORLD, &ctx->world) != MPI_SUCCESS)
        return cpb_fail(ctx, CPB_ERR_COMM, "cuda backend: MPI_COMM_WORLD is not usable (start the program with mpirun)");
    /* ranks on this node: the shared-memory split names the local rank */
    MPI_Comm local;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, ctx->rank, MPI_INFO_NULL, &local) != MPI_SUCCESS)
        return cpb_fail(ctx, CPB_ERR_COMM, "cuda backend: MPI_Comm_split_type (node-local ranks) failed");
    MPI_Comm_rank(local, &st->local_rank);
    MPI_Comm_size(local, &st->local_size);
    st->local = local;
    return CPB_OK;
}

/* The GPU this rank runs on, and how many ranks of its node share it.  Ranks are told apart
 * from GPUs by device identity (PCI bus id), not by counting: under SLURM's
 * --gpus-per-task=1 every rank sees one device, device 0, and each is a different GPU. */
static int choose_device(cpb_ctx *ctx, cuda_state *st, int ndev)
{
    st->device = st->local_rank % ndev;
    char bus[32] = "";
    CUDA_TRY(ctx, cudaDeviceGetPCIBusId(bus, (int)sizeof bus, st->device));
    st->gpu_sharers = 1;
    if (st->local == MPI_COMM_NULL) return CPB_OK;
    char *all = calloc((size_t)st->local_size, sizeof bus);
    if (!all) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "cuda backend: out of host memory");
    MPI_Allgather(bus, (int)sizeof bus, MPI_CHAR, all, (int)sizeof bus, MPI_CHAR, st->local);
    int shared = 0;
    for (int r = 0; r < st->local_size; r++) shared += strcmp(all + r * sizeof bus, bus) == 0;
    free(all);
    st->gpu_sharers = shared;
    int worst = shared;
    MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (ctx->world > 1 && !st->comm_mpi && worst > 1)
        return cpb_fail(ctx, CPB_ERR_INVALID,
                        "cuda backend: %d ranks on one node share a GPU (this rank: %d on %s): NCCL refuses two ranks "
                        "on one GPU; start one rank per GPU, or use --comm mpi for a correctness run on a shared GPU",
                        worst, shared, bus);
    return CPB_OK;
}

static int cuda_init(cpb_ctx *ctx)
{
    cuda_state *st = calloc(1, sizeof *st);
    if (!st) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "cuda backend: out of host memory for its state");
    ctx->bs = st;
    st->local_size = 1;
    st->local = MPI_COMM_NULL;
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
    int ndev = cuda_probe(why, sizeof why);
    if (ndev <= 0)
        return cpb_fail(ctx, CPB_ERR_UNSUPPORTED, "cuda backend: no GPU present (%s); use --backend cpu or sim here", why);
    CPB_TRY(choose_device(ctx, st, ndev));
    CUDA_TRY(ctx, cudaSetDevice(st->device));
    CUDA_TRY(ctx, cudaFree(0)); /* create the context now: it belongs to the baseline */
    int pitch = 0;
    CUDA_TRY(ctx, cudaDeviceGetAttribute(&pitch, cudaDevAttrMaxPitch, st->device));
    st->mem_pitch = (size_t)pitch;
    CPB_TRY(cuda_mem_init(ctx));
    /* the device timer's events, with timing (the ordering events have none) */
    for (int i = 0; i < CPB_TIME_MARKS; i++) CUDA_TRY(ctx, cudaEventCreateWithFlags(&st->tmark[i], cudaEventDefault));
#ifdef CPB_HAVE_NVTX
    st->nvtx = nvtxDomainCreateA("cpbench");
#endif
    st->t0 = wall_s();
    const char *ak = getenv("CPB_CUDA_ATTN");
    st->attn_generic = ak && strcmp(ak, "generic") == 0;
    return CPB_OK;
}

/* "generic": attention on the generic kernels only (any head dim, fp32 CUDA-core math),
 * also where the tensor-core kernels apply; "auto": the fastest applicable kernel.  For
 * the self-test, which checks both, and as a fallback should a faster kernel misbehave. */
static int cuda_set_attn_kernels(cpb_ctx *ctx, const char *which)
{
    if (strcmp(which, "generic") != 0 && strcmp(which, "auto") != 0)
        return cpb_fail(ctx, CPB_ERR_INVALID, "cuda backend: attention kernels '%s': expected auto or generic", which);
    cuda_st(ctx)->attn_generic = strcmp(which, "generic") == 0;
    return CPB_OK;
}

/* cuDNN attention: compiled in, and its library loaded here? (attn_cudnn.h) */
static int cuda_attn_cudnn(char *why, size_t why_len)
{
    return cpb_cudnn_attn_status(why, why_len);
}

static int cuda_profiler(cpb_ctx *ctx, int on)
{
    CUDA_TRY(ctx, on ? cudaProfilerStart() : cudaProfilerStop());
    return CPB_OK;
}

static void cuda_finalize(cpb_ctx *ctx)
{
    cuda_state *st = cuda_st(ctx);
    if (!st) return;
    cudaSetDevice(st->device);
    for (int s = 0; s < CPB_MAX_STREAMS; s++)
        if (st->streams[s]) cudaStreamSynchronize(st->streams[s]);
    for (int s = 0; s < CPB_MAX_STREAMS; s++)
        if (st->blas[s]) cublasDestroy(st->blas[s]);
    for (int i = 0; i < st->nevents_cap; i++)
        if (st->events[i]) cudaEventDestroy(st->events[i]);
    for (int s = 0; s < CPB_MAX_STREAMS; s++)
        for (int i = 0; i < CUDA_PROGRESS_EVENTS; i++)
            if (st->prog[s][i]) cudaEventDestroy(st->prog[s][i]);
    for (int i = 0; i < CPB_TIME_MARKS; i++)
        if (st->tmark[i]) cudaEventDestroy(st->tmark[i]);
    for (int s = 0; s < CPB_MAX_STREAMS; s++)
        if (st->tjoin[s]) cudaEventDestroy(st->tjoin[s]);
    free(st->events);
    cpb_cudnn_attn_shutdown();
    cuda_pinned_fini(ctx);
    cuda_mem_fini(ctx);
    for (int s = 0; s < CPB_MAX_STREAMS; s++)
        if (st->streams[s]) cudaStreamDestroy(st->streams[s]);
#ifdef CPB_HAVE_NVTX
    if (st->nvtx) nvtxDomainDestroy(st->nvtx);
#endif
    int mpi_fin = 0;
    MPI_Finalized(&mpi_fin); /* main finalizes MPI; a context ended after that has no communicator left to free */
    if (st->local != MPI_COMM_NULL && !mpi_fin) MPI_Comm_free(&st->local);
    free(st);
    ctx->bs = NULL;
}

/* ---------------------------------------------------------------- streams and events */

static int cuda_stream_create(cpb_ctx *ctx, int id, const char *name)
{
    cuda_state *st = cuda_st(ctx);
    if (id < 0 || id >= CPB_MAX_STREAMS)
        return cpb_fail(ctx, CPB_ERR_INVALID, "cuda backend: stream id %d out of range", id);
    /* the cuBLAS handle is start-up memory: part of the baseline */
    size_t free0 = 0, free1 = 0, total = 0;
    cudaMemGetInfo(&free0, &total);
    /* every stream but compute carries collectives or transfers that attention must not
     * hold up: the greatest priority */
    int least = 0, greatest = 0;
    CUDA_TRY(ctx, cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CUDA_TRY(ctx, cudaStreamCreateWithPriority(&st->streams[id], cudaStreamNonBlocking,
                                               id == CPB_STREAM_COMPUTE ? least : greatest));
    cublasStatus_t bs = cublasCreate(&st->blas[id]);
    if (bs != CUBLAS_STATUS_SUCCESS) return cublas_fail(ctx, bs, "cublasCreate");
    bs = cublasSetStream(st->blas[id], st->streams[id]);
    if (bs != CUBLAS_STATUS_SUCCESS) return cublas_fail(ctx, bs, "cublasSetStream");
    /* until the tracked workspace exists, cuBLAS works without one (no hidden memory);
     * should this cuBLAS refuse that, its own default workspace stays (in the baseline) */
    (void)cublasSetWorkspace(st->blas[id], NULL, 0);
    cudaMemGetInfo(&free1, &total);
    cuda_mem_rebaseline(ctx, (int64_t)free0 - (int64_t)free1);
    /* the watchdog's progress events (cuda_comm.c) and the device timer's join event, made
     * now rather than in a step */
    for (int i = 0; i < CUDA_PROGRESS_EVENTS; i++)
        CUDA_TRY(ctx, cudaEventCreateWithFlags(&st->prog[id][i], cudaEventDisableTiming));
    CUDA_TRY(ctx, cudaEventCreateWithFlags(&st->tjoin[id], cudaEventDisableTiming));
    (void)name;
    /* no NCCL communicator yet: one is made for a group on this stream at the group's first
     * collective here (cuda_comm.c) */
    return CPB_OK;
}

/* The event of runtime id `ev`: slot ev - ev_base.  Slots are reused after every cuda_sync
 * (all their records are complete then), so a step creates no events once the first one
 * made them. */
static int event_slot(cpb_ctx *ctx, int ev, cudaEvent_t *out)
{
    cuda_state *st = cuda_st(ctx);
    if (ev < st->ev_base) return cpb_fail(ctx, CPB_ERR_INVALID, "cuda backend: event %d was recorded before the last sync", ev);
    int slot = ev - st->ev_base;
    if (slot >= st->nevents_cap) {
        int cap = st->nevents_cap ? st->nevents_cap : 256;
        while (cap <= slot) cap *= 2;
        cudaEvent_t *e = realloc(st->events, sizeof *e * (size_t)cap);
        if (!e) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "cuda backend: out of host memory for events");
        memset(e + st->nevents_cap, 0, sizeof *e * (size_t)(cap - st->nevents_cap));
        st->events = e;
        st->nevents_cap = cap;
    }
    if (!st->events[slot]) CUDA_TRY(ctx, cudaEventCreateWithFlags(&st->events[slot], cudaEventDisableTiming));
    *out = st->events[slot];
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
    if (ev < cuda_st(ctx)->ev_base) return CPB_OK; /* recorded before the last sync: complete */
    cudaEvent_t e = NULL;
    CPB_TRY(event_slot(ctx, ev, &e));
    CUDA_TRY(ctx, cudaStreamWaitEvent(cuda_st(ctx)->streams[stream], e, 0));
    return CPB_OK;
}

/* the host waits for this context's streams (not the whole device: other ranks may share
 * it in --comm mpi runs), watching the NCCL communicators meanwhile (cuda_comm.c); then
 * every event recorded so far is complete and its slot free again */
static int cuda_sync(cpb_ctx *ctx)
{
    CPB_TRY(cuda_wait_streams(ctx));
    cuda_st(ctx)->ev_base = ctx->nevents;
    return CPB_OK;
}

/* wall clock: called after cpb_sync, so every stream's work up to here is done */
static double cuda_clock(cpb_ctx *ctx)
{
    return wall_s() - cuda_st(ctx)->t0;
}

/* The device timer (cpb_time_mark).  A mark is a timing event on the compute stream after
 * it waited for every other stream's work so far: one point after all of it, on one stream,
 * so two marks' events compare on the same stream.  The wait adds no order a measured
 * region lacks: marks are taken at a phase's start (after cpb_sync: every stream idle) and
 * end (right before cpb_sync). */
static int cuda_time_mark(cpb_ctx *ctx, int mark)
{
    cuda_state *st = cuda_st(ctx);
    cudaStream_t compute = st->streams[CPB_STREAM_COMPUTE];
    for (int s = 0; s < ctx->nstreams; s++) {
        if (s == CPB_STREAM_COMPUTE || !st->streams[s]) continue;
        CUDA_TRY(ctx, cudaEventRecord(st->tjoin[s], st->streams[s]));
        CUDA_TRY(ctx, cudaStreamWaitEvent(compute, st->tjoin[s], 0));
    }
    CUDA_TRY(ctx, cudaEventRecord(st->tmark[mark], compute));
    return CPB_OK;
}

static int cuda_time_elapsed(cpb_ctx *ctx, int from, int to, double *seconds)
{
    cuda_state *st = cuda_st(ctx);
    float ms = 0;
    cudaError_t e = cudaEventElapsedTime(&ms, st->tmark[from], st->tmark[to]);
    if (e == cudaErrorNotReady) {
        (void)cudaGetLastError();
        return cpb_fail(ctx, CPB_ERR_INVALID, "cuda backend: time marks %d and %d are not both complete: read an "
                        "interval after cpb_sync", from, to);
    }
    if (e != cudaSuccess) return cuda_fail(ctx, e, "cudaEventElapsedTime (a time mark not set?)");
    *seconds = 1e-3 * (double)ms;
    return CPB_OK;
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
    .summary = "cuBLAS GEMMs, cuDNN's fused attention or our kernels (--attn), NCCL (or MPI staging), one rank per GPU",
    .has_data = 1,
    .models_time = 0,
    .mpi_world = 1,
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
    .time_mark = cuda_time_mark,
    .time_elapsed = cuda_time_elapsed,
    .timer_name = "cuda events",
    .probe = cuda_probe,
    .device_info = cuda_device_info,
    .versions = cuda_versions,
    .mem_highwater = cuda_mem_highwater,
    .mem_highwater_reset = cuda_mem_highwater_reset,
    .mem_trial = cuda_mem_trial,
    .set_attn_kernels = cuda_set_attn_kernels,
    .attn_cudnn = cuda_attn_cudnn,
    .attn_plan_stats = cpb_cudnn_attn_plan_stats,
    .profiler = cuda_profiler,
    .print_device_props = cuda_print_device_props,
};

const cpb_backend *cpb_backend_cuda_get(void)
{
    return &cuda_backend;
}
