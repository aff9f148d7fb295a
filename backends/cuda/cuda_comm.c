/* cuda_comm.c — groups and collectives of the cuda backend.
 *
 * NCCL (default): one communicator per (group, stream), so collectives on different streams
 * never share (and serialize on) one, and only for the streams that carry the group's
 * collectives: NCCL's buffers take device memory per communicator, and a stream that only
 * computes or copies needs none.  A communicator is made at the group's first collective on
 * its stream, in a round that every member of the group joins at its own first use of a
 * communicator it lacks: the members exchange the stream names they need, and all of them
 * make the union, in name order.  So the members make the same communicators in the same
 * order even when their first uses differ (rank 0 on stream "a" first, rank 1 on "b"), and
 * every member ends a round with the same set.  Before each, the members check that they
 * all make the same one (same members, same stream name), so a rank out of order fails with
 * a message instead of being paired with the wrong communicator.  The unique id is made by
 * the group's first member and broadcast over the group's MPI communicator.  The warm-up
 * step of a measured trial makes them all (a step's collectives are the same every step),
 * so none is made in a timed step.  The host's waits (cpb_sync) watch the communicators: an
 * asynchronous NCCL error, or no progress for CPB_CUDA_WATCHDOG_S seconds (600 by default;
 * 0 turns it off), aborts them all and fails, instead of hanging on a dead peer.
 *
 * --comm mpi: the stream is synchronized, the data staged through pinned host memory and
 * moved with MPI (bf16 reductions summed in fp32), then copied back.  Slow, but it lets
 * several ranks share one GPU, which NCCL refuses: correctness runs on a one-GPU machine.
 *
 * A group of one is a local copy (no NCCL or MPI needed). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpb_bf16.h"
#include "cuda_internal.h"

/* ---------------------------------------------------------------- NCCL communicators */

#ifdef CPB_HAVE_NCCL
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* The communicator of (group g, stream), made by every member at once (module comment).
 * stream < 0: this rank has no stream of that name; it still takes part in the key check,
 * with a key no member has, so that every member fails instead of waiting for it. */
static int nccl_create(cpb_ctx *ctx, cpb_group *g, int stream, const char *sname)
{
    cuda_group *cg = g->be;
    uint64_t key = fnv(fnv(1469598103934665603ull, g->ranks, sizeof(int) * (size_t)g->size), sname, strlen(sname));
    if (stream < 0) key = ~key;
    uint64_t *keys = malloc(sizeof *keys * (size_t)g->size);
    if (!keys) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "cuda backend: out of host memory");
    int rc = MPI_Allgather(&key, 1, MPI_UINT64_T, keys, 1, MPI_UINT64_T, cg->mpi);
    int odd = -1;
    for (int i = 0; rc == MPI_SUCCESS && i < g->size; i++)
        if (keys[i] != key) odd = i;
    free(keys);
    if (rc != MPI_SUCCESS) return cpb_fail(ctx, CPB_ERR_COMM, "cuda backend: MPI_Allgather of the NCCL communicator keys failed");
    if (stream < 0)
        return cpb_fail(ctx, CPB_ERR_COMM,
                        "cuda backend: a member of group %d makes the NCCL communicator for stream '%s', which rank %d "
                        "has not created: ranks must create streams and groups in the same order",
                        g->id, sname, ctx->rank);
    if (odd >= 0)
        return cpb_fail(ctx, CPB_ERR_COMM,
                        "cuda backend: rank %d of group %d makes the NCCL communicator for stream '%s' while group member "
                        "%d makes another one: ranks must create streams and groups in the same order",
                        ctx->rank, g->id, sname, odd);
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    ncclResult_t r = g->rank == 0 ? ncclGetUniqueId(&id) : ncclSuccess;
    rc = MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, cg->mpi);
    if (rc != MPI_SUCCESS) return cpb_fail(ctx, CPB_ERR_COMM, "cuda backend: MPI_Bcast of the NCCL id failed");
    /* NCCL's buffers are start-up memory: outside the tracked allocator, in the baseline */
    size_t f0 = 0, f1 = 0, total = 0;
    cudaMemGetInfo(&f0, &total);
    if (r == ncclSuccess) r = ncclCommInitRank(&cg->nccl[stream], g->size, id, g->rank);
    if (r != ncclSuccess) {
        cg->nccl[stream] = NULL;
        return cpb_fail(ctx, CPB_ERR_COMM, "cuda backend: making the NCCL communicator of group %d, stream '%s' failed: "
                        "%s (%s); rerun with NCCL_DEBUG=WARN", g->id, sname, ncclGetErrorString(r), ncclGetLastError(NULL));
    }
    cudaMemGetInfo(&f1, &total);
    cuda_mem_rebaseline(ctx, (int64_t)f0 - (int64_t)f1);
    return CPB_OK;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* the communicator of (group g, stream) at its first use: a round of the group's members
 * (module comment) */
static int nccl_need(cpb_ctx *ctx, cpb_group *g, int stream)
{
    cuda_group *cg = g->be;
    if (cg->nccl[stream]) return CPB_OK;
    if (cg->aborted[stream])
        return cpb_fail(ctx, CPB_ERR_COMM, "cuda backend: the NCCL communicator of group %d on stream '%s' was aborted "
                        "after an earlier failure; the context cannot run collectives there again", g->id,
                        ctx->stream_names[stream]);
    if (cg->mpi == MPI_COMM_NULL)
        return cpb_fail(ctx, CPB_ERR_COMM, "cuda backend: a group of %d needs MPI to bootstrap NCCL (start with mpirun)",
                        g->size);
    enum { NAME = sizeof ctx->stream_names[0] };
    char *names = calloc((size_t)g->size, NAME);
    if (!names) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "cuda backend: out of host memory");
    char mine[NAME];
    memset(mine, 0, sizeof mine);
    snprintf(mine, sizeof mine, "%s", ctx->stream_names[stream]);
    int rc = MPI_Allgather(mine, NAME, MPI_CHAR, names, NAME, MPI_CHAR, cg->mpi);
    if (rc != MPI_SUCCESS) {
        free(names);
        return cpb_fail(ctx, CPB_ERR_COMM, "cuda backend: MPI_Allgather of the streams that need NCCL communicators "
                        "(group %d) failed", g->id);
    }
    qsort(names, (size_t)g->size, NAME, cmp_name);
    int out = CPB_OK;
    for (int i = 0; i < g->size && out == CPB_OK; i++) {
        const char *n = names + (size_t)i * NAME;
        if (i > 0 && strcmp(n, n - NAME) == 0) continue;
        int s = -1;
        for (int j = 0; j < ctx->nstreams; j++)
            if (strcmp(ctx->stream_names[j], n) == 0) s = j;
        if (s >= 0 && cg->nccl[s]) continue; /* members keep the same set: made in an earlier round by all */
        out = nccl_create(ctx, g, s, n);
    }
    free(names);
    return out;
}
#endif

/* ---------------------------------------------------------------- groups */

int cuda_group_create(cpb_ctx *ctx, cpb_group *g)
{
    cuda_state *st = cuda_st(ctx);
    cuda_group *cg = calloc(1, sizeof *cg);
    if (!cg) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "cuda backend: out of host memory for a group");
    cg->mpi = MPI_COMM_NULL;
    if (st->use_mpi) {
        int rc;
        if (g->id == 0) {
            rc = MPI_Comm_dup(MPI_COMM_WORLD, &cg->mpi);
        } else {
            /* collective over the members only; ranks in group order */
            MPI_Group world, mine;
            MPI_Comm_group(MPI_COMM_WORLD, &world);
            MPI_Group_incl(world, g->size, g->ranks, &mine);
            rc = MPI_Comm_create_group(MPI_COMM_WORLD, mine, 100 + g->id, &cg->mpi);
            MPI_Group_free(&mine);
            MPI_Group_free(&world);
        }
        if (rc != MPI_SUCCESS) {
            free(cg);
            return cpb_fail(ctx, CPB_ERR_COMM, "cuda backend: creating the MPI communicator of group %d failed", g->id);
        }
    }
    g->be = cg; /* its NCCL communicators come at their first use (nccl_need) */
    return CPB_OK;
}

void cuda_group_destroy(cpb_ctx *ctx, cpb_group *g)
{
    cuda_group *cg = g->be;
    if (!cg) return;
#ifdef CPB_HAVE_NCCL
    for (int s = 0; s < CPB_MAX_STREAMS; s++)
        if (cg->nccl[s]) ncclCommDestroy(cg->nccl[s]);
#endif
    /* main finalises MPI after the contexts are gone */
    if (cg->mpi != MPI_COMM_NULL) MPI_Comm_free(&cg->mpi);
    free(cg);
    g->be = NULL;
    (void)ctx;
}

static int mpi_fail(cpb_ctx *ctx, const cpb_coll *c, int rc, const char *call)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return cpb_fail(ctx, CPB_ERR_COMM, "%s: %s failed: %s", c->name, call, msg);
}

static size_t esz(const cpb_view *v)
{
    return cpb_dtype_size(v->buf->dtype);
}

/* ---------------------------------------------------------------- groups of one */

static int local_coll(cpb_ctx *ctx, const cpb_coll *c, cudaStream_t s)
{
    size_t bytes = (size_t)cpb_view_count(&c->send) * esz(&c->send);
    switch (c->kind) {
    case CPB_COLL_BROADCAST:
    case CPB_COLL_ALL_REDUCE: return CPB_OK; /* in place */
    default:
        if (bytes == 0) return CPB_OK;
        CUDA_TRY(ctx, cudaMemcpyAsync(cuda_vptr(&c->recv), cuda_vptr(&c->send), bytes, cudaMemcpyDeviceToDevice, s));
        return CPB_OK;
    }
}

/* ---------------------------------------------------------------- NCCL */

#ifdef CPB_HAVE_NCCL
static int nccl_fail(cpb_ctx *ctx, const cpb_coll *c, ncclResult_t r, const char *call)
{
    return cpb_fail(ctx, CPB_ERR_COMM, "%s: %s failed: %s (%s); rerun with NCCL_DEBUG=WARN for details", c->name, call,
                    ncclGetErrorString(r), ncclGetLastError(NULL));
}

#define NCCL_TRY(call)                                                                     \
    do {                                                                                   \
        ncclResult_t nccl_r_ = (call);                                                     \
        if (nccl_r_ != ncclSuccess) return nccl_fail(ctx, c, nccl_r_, #call);              \
    } while (0)

static int nccl_comm(cpb_ctx *ctx, const cpb_coll *c, ncclComm_t *out)
{
    CPB_TRY(nccl_need(ctx, c->g, c->stream));
    *out = ((cuda_group *)c->g->be)->nccl[c->stream];
    return CPB_OK;
}

static int nccl_coll(cpb_ctx *ctx, const cpb_coll *c, cudaStream_t s)
{
    ncclComm_t comm = NULL;
    CPB_TRY(nccl_comm(ctx, c, &comm));
    ncclDataType_t t = c->send.buf->dtype == CPB_BF16 ? ncclBfloat16 : ncclFloat;
    size_t es = esz(&c->send);
    char *sp = cuda_vptr(&c->send), *rp = cuda_vptr(&c->recv);
    size_t n = (size_t)cpb_view_count(&c->send);
    int me = c->g->rank, size = c->g->size;
    switch (c->kind) {
    case CPB_COLL_ALL_TO_ALL: {
        size_t chunk = n / (size_t)size;
        /* own chunk by a device copy; the rest as grouped point-to-point */
        if (chunk)
            CUDA_TRY(ctx, cudaMemcpyAsync(rp + (size_t)me * chunk * es, sp + (size_t)me * chunk * es, chunk * es,
                                          cudaMemcpyDeviceToDevice, s));
        /* never return between ncclGroupStart and ncclGroupEnd: the group would stay open */
        NCCL_TRY(ncclGroupStart());
        ncclResult_t r = ncclSuccess;
        const char *what = "ncclSend";
        for (int p = 0; p < size && r == ncclSuccess; p++) {
            if (p == me || chunk == 0) continue;
            r = ncclSend(sp + (size_t)p * chunk * es, chunk, t, p, comm, s);
            if (r == ncclSuccess) r = ncclRecv(rp + (size_t)p * chunk * es, chunk, t, p, comm, s), what = "ncclRecv";
            else what = "ncclSend";
        }
        ncclResult_t r2 = ncclGroupEnd();
        if (r != ncclSuccess) return nccl_fail(ctx, c, r, what);
        if (r2 != ncclSuccess) return nccl_fail(ctx, c, r2, "ncclGroupEnd");
        return CPB_OK;
    }
    case CPB_COLL_SENDRECV: {
        size_t nr = (size_t)cpb_view_count(&c->recv);
        if (c->dst == me && c->src == me) return local_coll(ctx, c, s);
        NCCL_TRY(ncclGroupStart());
        ncclResult_t r = n ? ncclSend(sp, n, t, c->dst, comm, s) : ncclSuccess;
        const char *what = "ncclSend";
        if (r == ncclSuccess && nr) r = ncclRecv(rp, nr, t, c->src, comm, s), what = "ncclRecv";
        ncclResult_t r2 = ncclGroupEnd();
        if (r != ncclSuccess) return nccl_fail(ctx, c, r, what);
        if (r2 != ncclSuccess) return nccl_fail(ctx, c, r2, "ncclGroupEnd");
        return CPB_OK;
    }
    case CPB_COLL_BROADCAST: NCCL_TRY(ncclBroadcast(sp, sp, n, t, c->root, comm, s)); return CPB_OK;
    case CPB_COLL_REDUCE: NCCL_TRY(ncclReduce(sp, rp, n, t, ncclSum, c->root, comm, s)); return CPB_OK;
    case CPB_COLL_ALL_REDUCE: NCCL_TRY(ncclAllReduce(sp, sp, n, t, ncclSum, comm, s)); return CPB_OK;
    case CPB_COLL_ALL_GATHER: NCCL_TRY(ncclAllGather(sp, rp, n, t, comm, s)); return CPB_OK;
    case CPB_COLL_REDUCE_SCATTER:
        NCCL_TRY(ncclReduceScatter(sp, rp, (size_t)cpb_view_count(&c->recv), t, ncclSum, comm, s));
        return CPB_OK;
    default: return cpb_fail(ctx, CPB_ERR_UNSUPPORTED, "%s: collective kind %d", c->name, (int)c->kind);
    }
}
#endif

/* ---------------------------------------------------------------- MPI through host memory */

/* reductions of bf16 data: widen to fp32 in place order (dst may be larger than src) */
static void bf16_to_f32(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = n; i-- > 0;) dst[i] = cpb_bf16_to_f32(src[i]);
}

static void f32_to_bf16(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = cpb_f32_to_bf16(src[i]);
}

static int mpi_coll(cpb_ctx *ctx, const cpb_coll *c, cudaStream_t s)
{
    cuda_state *st = cuda_st(ctx);
    cuda_group *cg = c->g->be;
    if (cg->mpi == MPI_COMM_NULL)
        return cpb_fail(ctx, CPB_ERR_COMM, "%s: a group of %d needs MPI (start with mpirun)", c->name, c->g->size);
    int bf = c->send.buf->dtype == CPB_BF16;
    size_t es = esz(&c->send);
    size_t ns = (size_t)cpb_view_count(&c->send), nr = (size_t)cpb_view_count(&c->recv);
    int reduction = c->kind == CPB_COLL_REDUCE || c->kind == CPB_COLL_ALL_REDUCE || c->kind == CPB_COLL_REDUCE_SCATTER;
    /* counts are ints in MPI: far beyond what a correctness run moves */
    if (ns > (size_t)INT_MAX || nr > (size_t)INT_MAX)
        return cpb_fail(ctx, CPB_ERR_UNSUPPORTED, "%s: --comm mpi moves at most 2^31 elements per collective; use NCCL",
                        c->name);
    /* staging: send area then receive area, fp32 wide for bf16 reductions */
    size_t wide = reduction && bf ? 4 : es;
    size_t sbytes = ns * wide, rbytes = nr * wide;
    CPB_TRY(cuda_stage(ctx, sbytes + rbytes + 64));
    char *hs = st->stage, *hr = (char *)st->stage + ((sbytes + 63) & ~(size_t)63);
    CUDA_TRY(ctx, cudaStreamSynchronize(s));
    if (ns) CUDA_TRY(ctx, cudaMemcpy(hs, cuda_vptr(&c->send), ns * es, cudaMemcpyDeviceToHost));
    if (reduction && bf) bf16_to_f32((const uint16_t *)hs, (float *)hs, ns);
    MPI_Datatype t = reduction ? MPI_FLOAT : (bf ? MPI_UINT16_T : MPI_FLOAT);
    int me = c->g->rank, size = c->g->size, rc = MPI_SUCCESS;
    int copy_back = 1;
    void *back_src = hr;
    size_t back_n = nr;
    switch (c->kind) {
    case CPB_COLL_ALL_TO_ALL:
        rc = MPI_Alltoall(hs, (int)(ns / (size_t)size), t, hr, (int)(nr / (size_t)size), t, cg->mpi);
        break;
    case CPB_COLL_SENDRECV:
        rc = MPI_Sendrecv(hs, (int)ns, t, c->dst, 7, hr, (int)nr, t, c->src, 7, cg->mpi, MPI_STATUS_IGNORE);
        break;
    case CPB_COLL_BROADCAST:
        rc = MPI_Bcast(hs, (int)ns, t, c->root, cg->mpi);
        back_src = hs;
        back_n = ns;
        copy_back = me != c->root;
        break;
    case CPB_COLL_REDUCE:
        rc = MPI_Reduce(hs, hr, (int)ns, MPI_FLOAT, MPI_SUM, c->root, cg->mpi);
        copy_back = me == c->root; /* recv is significant at the root only */
        break;
    case CPB_COLL_ALL_REDUCE:
        rc = MPI_Allreduce(MPI_IN_PLACE, hs, (int)ns, MPI_FLOAT, MPI_SUM, cg->mpi);
        back_src = hs;
        back_n = ns;
        break;
    case CPB_COLL_ALL_GATHER: rc = MPI_Allgather(hs, (int)ns, t, hr, (int)ns, t, cg->mpi); break;
    case CPB_COLL_REDUCE_SCATTER: rc = MPI_Reduce_scatter_block(hs, hr, (int)nr, MPI_FLOAT, MPI_SUM, cg->mpi); break;
    default: return cpb_fail(ctx, CPB_ERR_UNSUPPORTED, "%s: collective kind %d", c->name, (int)c->kind);
    }
    if (rc != MPI_SUCCESS) return mpi_fail(ctx, c, rc, "the MPI collective");
    if (!copy_back || back_n == 0) return CPB_OK;
    if (reduction && bf) f32_to_bf16((const float *)back_src, (uint16_t *)back_src, back_n);
    void *dst = c->kind == CPB_COLL_BROADCAST || c->kind == CPB_COLL_ALL_REDUCE ? cuda_vptr(&c->send)
                                                                                : cuda_vptr(&c->recv);
    /* synchronous: the staging area is reused by the next collective */
    CUDA_TRY(ctx, cudaMemcpy(dst, back_src, back_n * es, cudaMemcpyHostToDevice));
    return CPB_OK;
}

/* ---------------------------------------------------------------- entry */

/* an event after the stream's collective: the watchdog's sign of progress */
static void mark_progress(cuda_state *st, int stream)
{
    unsigned h = st->prog_head[stream];
    if (h - st->prog_tail[stream] >= CUDA_PROGRESS_EVENTS) return; /* the ring is full: enough signs */
    cudaEvent_t e = st->prog[stream][h % CUDA_PROGRESS_EVENTS];
    if (!e) return;
    if (cudaEventRecord(e, st->streams[stream]) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    st->prog_head[stream] = h + 1;
}

int cuda_run_coll(cpb_ctx *ctx, const cpb_coll *c)
{
    cuda_state *st = cuda_st(ctx);
    cudaStream_t s = st->streams[c->stream];
    CPB_TRY(cuda_ready_view(ctx, &c->send, c->stream));
    CPB_TRY(cuda_ready_view(ctx, &c->recv, c->stream));
    if (c->g->size == 1) return local_coll(ctx, c, s);
    if (st->comm_mpi) return mpi_coll(ctx, c, s);
#ifdef CPB_HAVE_NCCL
    CPB_TRY(nccl_coll(ctx, c, s));
    mark_progress(st, c->stream);
    return CPB_OK;
#else
    return mpi_coll(ctx, c, s);
#endif
}

/* ---------------------------------------------------------------- the host's wait */

#ifdef CPB_HAVE_NCCL
static void abort_all(cpb_ctx *ctx)
{
    for (int i = 0; i < ctx->ngroups; i++) {
        cuda_group *cg = ctx->groups[i] ? ctx->groups[i]->be : NULL;
        for (int s = 0; cg && s < CPB_MAX_STREAMS; s++)
            if (cg->nccl[s]) {
                ncclCommAbort(cg->nccl[s]);
                cg->nccl[s] = NULL;
                cg->aborted[s] = 1;
            }
    }
}

/* the first asynchronous error of this context's communicators */
static ncclResult_t async_error(cpb_ctx *ctx, int *group)
{
    for (int i = 0; i < ctx->ngroups; i++) {
        cuda_group *cg = ctx->groups[i] ? ctx->groups[i]->be : NULL;
        for (int s = 0; cg && s < CPB_MAX_STREAMS; s++) {
            ncclResult_t ae = ncclSuccess;
            if (cg->nccl[s] && ncclCommGetAsyncError(cg->nccl[s], &ae) == ncclSuccess && ae != ncclSuccess &&
                ae != ncclInProgress) {
                *group = ctx->groups[i]->id;
                return ae;
            }
        }
    }
    return ncclSuccess;
}
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Wait for every stream of this context by polling, so that a collective that never ends
 * (a failed or hung peer: NCCL's asynchronous error may never say so on one node) ends
 * the run with an error: progress is a stream going idle or a collective completing */
int cuda_wait_streams(cpb_ctx *ctx)
{
    cuda_state *st = cuda_st(ctx);
    static double limit = -1;
    if (limit < 0) {
        const char *e = getenv("CPB_CUDA_WATCHDOG_S");
        limit = e && *e ? atof(e) : 600.0;
    }
    double last = now_s(), checked = 0;
    int busy_last = -1;
    useconds_t pause = 20;
    for (;;) {
        int busy = 0, progress = 0;
        for (int s = 0; s < ctx->nstreams; s++) {
            if (!st->streams[s]) continue;
            while (st->prog_tail[s] != st->prog_head[s]) {
                cudaError_t q = cudaEventQuery(st->prog[s][st->prog_tail[s] % CUDA_PROGRESS_EVENTS]);
                if (q == cudaErrorNotReady) break;
                if (q != cudaSuccess) return cuda_fail(ctx, q, "cudaEventQuery (waiting for the streams)");
                st->prog_tail[s]++;
                progress = 1;
            }
            cudaError_t e = cudaStreamQuery(st->streams[s]);
            if (e == cudaErrorNotReady) {
                (void)cudaGetLastError();
                busy++;
            } else if (e != cudaSuccess) {
                return cuda_fail(ctx, e, "cudaStreamQuery (waiting for the streams)");
            }
        }
        if (!busy) return CPB_OK;
        double t = now_s();
        if (busy != busy_last || progress) busy_last = busy, last = t;
#ifdef CPB_HAVE_NCCL
        int g = -1;
        ncclResult_t ae = ncclSuccess;
        if (t - checked > 0.05) { /* the communicators' errors, 20 times a second */
            checked = t;
            ae = async_error(ctx, &g);
        }
        if (ae != ncclSuccess) {
            abort_all(ctx);
            return cpb_fail(ctx, CPB_ERR_COMM, "cuda backend: NCCL reports an asynchronous error on group %d: %s (%s); "
                            "every NCCL communicator aborted", g, ncclGetErrorString(ae), ncclGetLastError(NULL));
        }
        if (limit > 0 && t - last > limit) {
            abort_all(ctx);
            return cpb_fail(ctx, CPB_ERR_COMM,
                            "cuda backend: no progress for %.0f s waiting for %d stream(s) (a peer rank may have failed "
                            "or hung); every NCCL communicator aborted (CPB_CUDA_WATCHDOG_S sets the limit)",
                            t - last, busy);
        }
#else
        (void)limit, (void)last, (void)checked;
#endif
        usleep(pause);
        if (pause < 1000) pause *= 2;
    }
}
