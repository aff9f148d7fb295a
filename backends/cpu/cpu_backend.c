/* cpu_backend.c — the cpu backend: life cycle (MPI ranks or a single process), memory, streams
 * and events (program order), data in and out, the clock, and the dispatch of ops. */
#include <cblas.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_internal.h"
#include "cpu_load_store.h"

float *cpu_scratch(cpb_ctx *ctx, int64_t nelem, const char *what)
{
    size_t bytes = (size_t)(nelem > 0 ? nelem : 1) * sizeof(float);
    float *p = malloc(bytes);
    if (!p)
        cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "cpu backend: out of host memory for %.1f MiB of fp32 scratch (%s)",
                 bytes / 1048576.0, what);
    return p;
}

static int cpu_init(cpb_ctx *ctx)
{
    ctx->bs = NULL;
    ctx->rank = 0;
    ctx->world = 1;
    if (!ctx->opts.use_mpi) return CPB_OK;
    /* main started MPI (cpb_backend.h: mpi_world) */
    if (MPI_Comm_rank(MPI_COMM_WORLD, &ctx->rank) != MPI_SUCCESS ||
        MPI_Comm_size(MPI_COMM_WORLD, &ctx->world) != MPI_SUCCESS)
        return cpb_fail(ctx, CPB_ERR_COMM, "cpu backend: MPI_COMM_WORLD is not usable (start the program with mpirun)");
#ifdef OPENBLAS_VERSION
    /* ranks share the machine's cores: one BLAS thread each unless the user chose */
    if (ctx->world > 1 && !getenv("OPENBLAS_NUM_THREADS")) openblas_set_num_threads(1);
#endif
    return CPB_OK;
}

static void cpu_finalize(cpb_ctx *ctx)
{
    ctx->bs = NULL;
}

static int cpu_alloc(cpb_ctx *ctx, cpb_buf *buf)
{
    /* aligned_alloc needs a size that is a multiple of the alignment */
    size_t bytes = ((size_t)buf->bytes + 63) & ~(size_t)63;
    buf->ptr = aligned_alloc(64, bytes);
    if (!buf->ptr)
        return cpb_fail(ctx, buf->host ? CPB_ERR_NOMEM_HOST : CPB_ERR_OOM,
                        "cpu backend: malloc of %.3f GiB for '%s' failed; the machine is out of memory "
                        "(lower --seq or set a capacity)",
                        buf->bytes / 1073741824.0, buf->name);
    return CPB_OK;
}

static void cpu_release(cpb_ctx *ctx, cpb_buf *buf)
{
    (void)ctx;
    free(buf->ptr); /* program order: every op on the buffer has finished */
    buf->ptr = NULL;
}

/* streams and events: ops run when issued, so every ordering already holds */
static int cpu_stream_create(cpb_ctx *ctx, int id, const char *name)
{
    (void)ctx, (void)id, (void)name;
    return CPB_OK;
}

static int cpu_event_record(cpb_ctx *ctx, int stream, int ev)
{
    (void)ctx, (void)stream, (void)ev;
    return CPB_OK;
}

static int cpu_stream_wait(cpb_ctx *ctx, int stream, int ev)
{
    (void)ctx, (void)stream, (void)ev;
    return CPB_OK;
}

static int cpu_sync(cpb_ctx *ctx)
{
    (void)ctx;
    return CPB_OK;
}

static int cpu_run_op(cpb_ctx *ctx, const cpb_op *op)
{
    switch (op->kind) {
    case CPB_OP_GEMM: return cpu_gemm(ctx, op);
    case CPB_OP_ROPE: return cpu_rope(ctx, op);
    case CPB_OP_ATTN_FWD: return cpu_attn_fwd(ctx, op);
    case CPB_OP_ATTN_BWD: return cpu_attn_bwd(ctx, op);
    case CPB_OP_ATTN_DELTA: return cpu_attn_delta(ctx, op);
    case CPB_OP_LSE_MERGE: return cpu_lse_merge(ctx, op);
    case CPB_OP_COPY: return cpu_copy(ctx, op);
    case CPB_OP_FILL: return cpu_fill(ctx, op);
    case CPB_OP_AXPBY: return cpu_axpby(ctx, op);
    case CPB_OP_FILL_RANDOM: return cpu_fill_random(ctx, op);
    case CPB_OP_SUMSQ: return cpu_sumsq(ctx, op);
    default: break;
    }
    return cpb_fail(ctx, CPB_ERR_UNSUPPORTED, "%s: cpu backend has no op of kind %d", op->name, (int)op->kind);
}

/* fp32 program array, row-major over (rows, heads, dim) <-> view */
static int cpu_upload(cpb_ctx *ctx, cpb_view dst, const float *src)
{
    (void)ctx;
    for (int64_t r = 0; r < dst.rows; r++)
        for (int64_t h = 0; h < dst.heads; h++)
            cpu_st_vec(&dst, r, h, src + (r * dst.heads + h) * dst.dim, 0);
    return CPB_OK;
}

static int cpu_download(cpb_ctx *ctx, cpb_view src, float *dst)
{
    (void)ctx;
    for (int64_t r = 0; r < src.rows; r++)
        for (int64_t h = 0; h < src.heads; h++) cpu_ld_vec(&src, r, h, dst + (r * src.heads + h) * src.dim);
    return CPB_OK;
}

static double cpu_clock(cpb_ctx *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const cpb_backend cpb_backend_cpu = {
    .name = "cpu",
    .summary = "real math on the CPU (BLAS GEMMs, fp32 math), one MPI rank per process",
    .has_data = 1,
    .models_time = 0,
    .mpi_world = 1,
    .init = cpu_init,
    .finalize = cpu_finalize,
    .alloc = cpu_alloc,
    .release = cpu_release,
    .stream_create = cpu_stream_create,
    .event_record = cpu_event_record,
    .stream_wait = cpu_stream_wait,
    .sync = cpu_sync,
    .run_op = cpu_run_op,
    .run_coll = cpu_run_coll,
    .group_create = cpu_group_create,
    .group_destroy = cpu_group_destroy,
    .upload = cpu_upload,
    .download = cpu_download,
    .range_push = NULL,
    .range_pop = NULL,
    .clock = cpu_clock,
};
