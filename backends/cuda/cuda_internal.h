/* cuda_internal.h — state and helpers shared by the cuda backend's host files (C).
 * Kernels live in the .cu files behind the launchers of cuda_kernels.h. */
#ifndef CPB_CUDA_INTERNAL_H
#define CPB_CUDA_INTERNAL_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <mpi.h>

#ifdef CPB_HAVE_NCCL
#include <nccl.h>
#endif
#ifdef CPB_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

#include "cpb_backend.h"

/* per-group communicators: MPI for bootstrap and --comm mpi, NCCL per stream so collectives
 * on different streams never share (and serialize on) one communicator; an NCCL one only
 * for the streams that carry the group's collectives, made at their first use by every
 * member together (cuda_comm.c) */
typedef struct cuda_group {
    MPI_Comm mpi; /* MPI_COMM_NULL when the world is one process without MPI */
#ifdef CPB_HAVE_NCCL
    ncclComm_t nccl[CPB_MAX_STREAMS];
    unsigned char aborted[CPB_MAX_STREAMS]; /* ncclCommAbort'ed: never made again */
#endif
} cuda_group;

/* a pinned host block, kept across trials (cuda_mem.c) */
typedef struct cuda_pinned {
    void *p;
    size_t bytes;
    int in_use;
    cudaEvent_t done;    /* recorded on the free stream when the block was last released */
    int done_pending;    /* a stream must wait on `done` before its first use of the block */
    unsigned waited;     /* streams (bits) that have waited since */
} cuda_pinned;

typedef struct cuda_state {
    int device;
    int use_mpi;       /* MPI ranks */
    int comm_mpi;      /* --comm mpi: collectives staged through host memory over MPI */
    int local_rank, local_size;
    MPI_Comm local;    /* this node's ranks (MPI_COMM_NULL without MPI) */
    cudaStream_t streams[CPB_MAX_STREAMS];
    /* ordering events (timing disabled), reused: runtime event id `id` uses slot id - ev_base;
     * ids below ev_base were recorded before the last cuda_sync and are complete */
    cudaEvent_t *events;
    int nevents_cap;
    int ev_base;
    cudaMemPool_t pool;
    cublasHandle_t blas[CPB_MAX_STREAMS]; /* one per stream: each has its own workspace */
    cpb_buf *gemm_ws[CPB_MAX_STREAMS];    /* tracked GEMM workspace per stream (lazy) */
    size_t mem_pitch;                     /* cudaDevAttrMaxPitch: the largest 2-D copy pitch */
    int gpu_sharers;                      /* node-local ranks on this GPU (PCI bus id), this one included */
    /* events after collectives, per stream: the watchdog's signs of progress (cuda_comm.c) */
#define CUDA_PROGRESS_EVENTS 32
    cudaEvent_t prog[CPB_MAX_STREAMS][CUDA_PROGRESS_EVENTS];
    unsigned prog_head[CPB_MAX_STREAMS], prog_tail[CPB_MAX_STREAMS];
    cuda_pinned *pinned;                  /* pinned host blocks, reused across steps */
    int npinned, pinned_cap;
    int pinned_sealed;                    /* a timed step: a block the cache lacks is an error */
    /* the device timer (cpb_time_mark): timing events made at start-up, never in a step;
     * tjoin[s], recorded on stream s, lets a mark on the compute stream wait for s */
    cudaEvent_t tmark[CPB_TIME_MARKS];
    cudaEvent_t tjoin[CPB_MAX_STREAMS];
    int64_t total_mem;
    int64_t baseline_used; /* device bytes used outside the pool: CUDA/cuBLAS/NCCL start-up */
    int64_t used_high;     /* high-water of (used - baseline) */
    void *stage;           /* pinned host staging for --comm mpi and uploads */
    size_t stage_bytes;
    double t0;             /* wall clock origin */
    int attn_generic;      /* CPB_CUDA_ATTN=generic or the set_attn_kernels hook */
#ifdef CPB_HAVE_NVTX
    nvtxDomainHandle_t nvtx;
#endif
} cuda_state;

static inline cuda_state *cuda_st(cpb_ctx *ctx)
{
    return (cuda_state *)ctx->bs;
}

/* errors as values: name the call, the CUDA message and what to do */
/* (clears the thread's last CUDA error: a handled error is not reported again by the next
 * kernel launch's cudaGetLastError) */
int cuda_fail(cpb_ctx *ctx, cudaError_t e, const char *what);
int cublas_fail(cpb_ctx *ctx, cublasStatus_t s, const char *what);

#define CUDA_TRY(ctx, call)                                                                \
    do {                                                                                   \
        cudaError_t cuda_try_e_ = (call);                                                  \
        if (cuda_try_e_ != cudaSuccess) return cuda_fail((ctx), cuda_try_e_, #call);       \
    } while (0)

/* element address of a view's origin */
static inline void *cuda_vptr(const cpb_view *v)
{
    return (char *)v->buf->ptr + v->off * (int64_t)cpb_dtype_size(v->buf->dtype);
}

/* the backend's hooks (cpb_backend.h): devices present (cuda_backend.c), memory
 * high-waters (cuda_mem.c), every device property (cuda_props.c) */
int cuda_probe(char *why, size_t why_len);
int cuda_mem_highwater(cpb_ctx *ctx, int64_t *reserved, int64_t *device_used);
int cuda_mem_highwater_reset(cpb_ctx *ctx);
int cuda_mem_trial(cpb_ctx *ctx, int phase);
int cuda_print_device_props(int dev, FILE *out);
/* the backend table with those hooks (cuda_backend.c): what the plugin's entry point hands
 * out (cuda_plugin.c) */
const cpb_backend *cpb_backend_cuda_get(void);

/* memory (cuda_mem.c) */
int cuda_mem_init(cpb_ctx *ctx);
void cuda_mem_fini(cpb_ctx *ctx);
void cuda_mem_sample(cpb_ctx *ctx);          /* update the device-used high-water */
void cuda_pinned_fini(cpb_ctx *ctx);
void cuda_mem_rebaseline(cpb_ctx *ctx, int64_t startup_bytes); /* NCCL start-up mid-run */
int cuda_alloc(cpb_ctx *ctx, cpb_buf *buf);
/* Device memory is taken from the pool on the buffer's first-use stream (stream-ordered
 * allocation: a block freed on another stream is reused only when that free is ordered
 * before this stream's work).  Every op and collective calls this for its operands. */
int cuda_ready(cpb_ctx *ctx, cpb_buf *buf, int stream);
int cuda_ready_view(cpb_ctx *ctx, const cpb_view *v, int stream);
void cuda_release(cpb_ctx *ctx, cpb_buf *buf);
int cuda_stage(cpb_ctx *ctx, size_t bytes); /* grow the pinned staging buffer */

/* ops (cuda_ops.c, cuda_gemm.c) */
int cuda_run_op(cpb_ctx *ctx, const cpb_op *op);
int cuda_gemm(cpb_ctx *ctx, const cpb_op *op);
int cuda_upload(cpb_ctx *ctx, cpb_view dst, const float *src);
int cuda_download(cpb_ctx *ctx, cpb_view src, float *dst);

/* collectives (cuda_comm.c) */
int cuda_group_create(cpb_ctx *ctx, cpb_group *g);
void cuda_group_destroy(cpb_ctx *ctx, cpb_group *g);
int cuda_run_coll(cpb_ctx *ctx, const cpb_coll *c);
/* the host waits for this context's streams while watching its NCCL communicators */
int cuda_wait_streams(cpb_ctx *ctx);

#endif
