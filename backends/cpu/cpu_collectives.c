/* cpu_collectives.c — collectives over MPI for the cpu backend.
 *
 * Groups: the world group duplicates MPI_COMM_WORLD; other groups get a communicator from
 * MPI_Comm_create_group (collective over the members only, tagged with the group id).
 * Without MPI (one process, world 1) every group has one member and a collective is a
 * local copy or nothing.
 *
 * Sizes: views are contiguous spans (the front-end checks), counts are int64, and an MPI
 * count is an int, so every transfer is cut into pieces of at most cpu_coll_piece_bytes()
 * (1 GiB; CPB_CPU_COLL_PIECE_BYTES overrides it, which the MPI tests use to exercise the
 * cutting on small buffers).  Sums of bf16 data are done in fp32 (converted piece by
 * piece) and rounded to bf16 once at the end, so a C-way sum loses no more than one
 * bf16 rounding whatever C is. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_load_store.h"

int64_t cpu_coll_piece_bytes(void)
{
    static int64_t piece;
    if (!piece) {
        const char *e = getenv("CPB_CPU_COLL_PIECE_BYTES");
        long long v = e ? atoll(e) : 0;
        piece = (v >= 64 && v <= (1ll << 30)) ? (int64_t)v : (1ll << 30);
        piece &= ~(int64_t)7; /* whole fp32 / bf16 elements */
    }
    return piece;
}

static MPI_Comm comm_of(const cpb_group *g)
{
    return *(const MPI_Comm *)g->be;
}

int cpu_group_create(cpb_ctx *ctx, cpb_group *g)
{
    g->be = NULL;
    if (!ctx->opts.use_mpi) return CPB_OK; /* world 1: nothing to talk to */
    MPI_Comm *c = malloc(sizeof *c);
    if (!c) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "out of host memory creating group %d", g->id);
    int rc;
    if (g->id == 0) {
        rc = MPI_Comm_dup(MPI_COMM_WORLD, c);
    } else {
        MPI_Group world, sub;
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        rc = MPI_Group_incl(world, g->size, g->ranks, &sub);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Comm_create_group(MPI_COMM_WORLD, sub, g->id, c);
            MPI_Group_free(&sub);
        }
        MPI_Group_free(&world);
    }
    if (rc != MPI_SUCCESS) {
        free(c);
        return cpb_fail(ctx, CPB_ERR_COMM, "MPI could not create the communicator of group %d (%d members); every "
                        "member must create its groups in the same order", g->id, g->size);
    }
    int me = -1;
    MPI_Comm_rank(*c, &me);
    if (me != g->rank) {
        MPI_Comm_free(c);
        free(c);
        return cpb_fail(ctx, CPB_ERR_COMM, "group %d: MPI rank %d differs from the group rank %d", g->id, me, g->rank);
    }
    g->be = c;
    return CPB_OK;
}

void cpu_group_destroy(cpb_ctx *ctx, cpb_group *g)
{
    (void)ctx;
    if (!g->be) return;
    MPI_Comm_free((MPI_Comm *)g->be); /* main finalises MPI after the contexts are gone */
    free(g->be);
    g->be = NULL;
}

/* ---------------------------------------------------------------- helpers */

static char *span_ptr(const cpb_view *v)
{
    return (char *)v->buf->ptr + v->off * (int64_t)cpb_dtype_size(v->buf->dtype);
}

static int64_t span_bytes(const cpb_view *v)
{
    return cpb_view_count(v) * (int64_t)cpb_dtype_size(v->buf->dtype);
}

static int mpi_fail(cpb_ctx *ctx, const cpb_coll *c, int rc, const char *call)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return cpb_fail(ctx, CPB_ERR_COMM, "%s: %s failed on group %d (%d members): %s", c->name, call, c->g->id,
                    c->g->size, msg);
}

/* A batch of point-to-point byte transfers, each cut into pieces; matched in order on the
 * other side because pieces of one (peer, tag) pair never overtake each other. */
typedef struct p2p {
    MPI_Request *req;
    int n, cap;
} p2p;

static int p2p_post(p2p *t, int send, char *p, int64_t bytes, int peer, MPI_Comm comm)
{
    int64_t piece = cpu_coll_piece_bytes();
    int64_t pieces = bytes == 0 ? 0 : (bytes + piece - 1) / piece;
    if (t->n + pieces > t->cap) {
        int nc = (int)(t->n + pieces + 16);
        MPI_Request *r = realloc(t->req, sizeof *r * (size_t)nc);
        if (!r) return MPI_ERR_NO_MEM;
        t->req = r;
        t->cap = nc;
    }
    for (int64_t o = 0; o < bytes; o += piece) {
        int cnt = (int)(bytes - o < piece ? bytes - o : piece);
        int rc = send ? MPI_Isend(p + o, cnt, MPI_BYTE, peer, 0, comm, &t->req[t->n])
                      : MPI_Irecv(p + o, cnt, MPI_BYTE, peer, 0, comm, &t->req[t->n]);
        if (rc != MPI_SUCCESS) return rc;
        t->n++;
    }
    return MPI_SUCCESS;
}

static int p2p_wait(p2p *t)
{
    int rc = t->n ? MPI_Waitall(t->n, t->req, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
    free(t->req);
    t->req = NULL;
    t->n = t->cap = 0;
    return rc;
}

/* ---------------------------------------------------------------- data movement */

/* chunk j of send (send_chunk bytes; or the whole of send when send_chunk < 0, for
 * all-gather) goes to member j; chunk j of recv comes from member j */
static int exchange(cpb_ctx *ctx, const cpb_coll *c, int gather)
{
    int n = c->g->size, me = c->g->rank;
    int64_t rchunk = span_bytes(&c->recv) / n;
    int64_t schunk = gather ? span_bytes(&c->send) : span_bytes(&c->send) / n;
    char *s = span_ptr(&c->send), *r = span_ptr(&c->recv);
    memcpy(r + me * rchunk, s + (gather ? 0 : me * schunk), (size_t)rchunk);
    if (n == 1) return CPB_OK;
    MPI_Comm comm = comm_of(c->g);
    p2p t = {0};
    int rc = MPI_SUCCESS;
    for (int k = 1; k < n && rc == MPI_SUCCESS; k++) {
        int from = (me - k + n) % n, to = (me + k) % n;
        rc = p2p_post(&t, 0, r + from * rchunk, rchunk, from, comm);
        if (rc == MPI_SUCCESS) rc = p2p_post(&t, 1, s + (gather ? 0 : to * schunk), schunk, to, comm);
    }
    int rc2 = p2p_wait(&t);
    if (rc == MPI_SUCCESS) rc = rc2;
    return rc == MPI_SUCCESS ? CPB_OK : mpi_fail(ctx, c, rc, gather ? "all-gather" : "all-to-all");
}

static int sendrecv(cpb_ctx *ctx, const cpb_coll *c)
{
    int64_t sb = span_bytes(&c->send), rb = span_bytes(&c->recv);
    int me = c->g->rank;
    if (c->dst == me || c->src == me) {
        if (c->dst != me || c->src != me)
            return cpb_fail(ctx, CPB_ERR_INVALID, "%s: sending to or receiving from oneself needs dst == src == own rank",
                            c->name);
        if (sb != rb)
            return cpb_fail(ctx, CPB_ERR_INVALID, "%s: a send to oneself must have the receive's size (%lld vs %lld)",
                            c->name, (long long)sb, (long long)rb);
        memcpy(span_ptr(&c->recv), span_ptr(&c->send), (size_t)sb);
        return CPB_OK;
    }
    MPI_Comm comm = comm_of(c->g);
    p2p t = {0};
    int rc = p2p_post(&t, 0, span_ptr(&c->recv), rb, c->src, comm);
    if (rc == MPI_SUCCESS) rc = p2p_post(&t, 1, span_ptr(&c->send), sb, c->dst, comm);
    int rc2 = p2p_wait(&t);
    if (rc == MPI_SUCCESS) rc = rc2;
    return rc == MPI_SUCCESS ? CPB_OK : mpi_fail(ctx, c, rc, "send/receive");
}

static int broadcast(cpb_ctx *ctx, const cpb_coll *c)
{
    if (c->g->size == 1) return CPB_OK;
    int64_t bytes = span_bytes(&c->send), piece = cpu_coll_piece_bytes();
    char *p = span_ptr(&c->send);
    for (int64_t o = 0; o < bytes; o += piece) {
        int rc = MPI_Bcast(p + o, (int)(bytes - o < piece ? bytes - o : piece), MPI_BYTE, c->root, comm_of(c->g));
        if (rc != MPI_SUCCESS) return mpi_fail(ctx, c, rc, "MPI_Bcast");
    }
    return CPB_OK;
}

/* ---------------------------------------------------------------- sums */

/* Sum `count` elements starting at element `soff` of send over the group into element
 * `roff` of recv: at `root` only (root >= 0) or on every member (root < 0).  fp32 data is
 * handed to MPI directly; bf16 is widened to fp32 per piece and rounded back. */
static int sum_range(cpb_ctx *ctx, const cpb_coll *c, int64_t soff, int64_t roff, int64_t count, int root)
{
    MPI_Comm comm = comm_of(c->g);
    int in_place = c->send.buf == c->recv.buf && c->send.off + soff == c->recv.off + roff;
    int bf16 = c->send.buf->dtype == CPB_BF16;
    int64_t piece = cpu_coll_piece_bytes() / 4;
    float *tmp = NULL;
    if (bf16) {
        tmp = cpu_scratch(ctx, 2 * (count < piece ? count : piece), "bf16 reduction");
        if (!tmp) return CPB_ERR_NOMEM_HOST;
    }
    int rc = MPI_SUCCESS;
    int at_root = root < 0 || c->g->rank == root;
    for (int64_t o = 0; o < count && rc == MPI_SUCCESS; o += piece) {
        int cnt = (int)(count - o < piece ? count - o : piece);
        int64_t si = c->send.off + soff + o, ri = c->recv.off + roff + o;
        if (bf16) {
            float *in = tmp, *out = tmp + cnt;
            cpu_ld_n(c->send.buf, si, cnt, in);
            rc = root < 0 ? MPI_Allreduce(in, out, cnt, MPI_FLOAT, MPI_SUM, comm)
                          : MPI_Reduce(in, out, cnt, MPI_FLOAT, MPI_SUM, root, comm);
            if (rc == MPI_SUCCESS && at_root) cpu_st_n(c->recv.buf, ri, cnt, out, 0);
        } else {
            float *in = (float *)c->send.buf->ptr + si, *out = (float *)c->recv.buf->ptr + ri;
            const void *sendp = in_place && at_root ? MPI_IN_PLACE : (const void *)in;
            rc = root < 0 ? MPI_Allreduce(sendp, out, cnt, MPI_FLOAT, MPI_SUM, comm)
                          : MPI_Reduce(sendp, at_root ? out : NULL, cnt, MPI_FLOAT, MPI_SUM, root, comm);
        }
    }
    free(tmp);
    return rc == MPI_SUCCESS ? CPB_OK : mpi_fail(ctx, c, rc, root < 0 ? "MPI_Allreduce" : "MPI_Reduce");
}

static int local_copy(const cpb_coll *c)
{
    if (c->send.buf != c->recv.buf || c->send.off != c->recv.off)
        memcpy(span_ptr(&c->recv), span_ptr(&c->send), (size_t)span_bytes(&c->recv));
    return CPB_OK;
}

int cpu_run_coll(cpb_ctx *ctx, const cpb_coll *c)
{
    int n = c->g->size;
    if (n > 1 && !c->g->be)
        return cpb_fail(ctx, CPB_ERR_COMM, "%s: group %d has %d members but no communicator", c->name, c->g->id, n);
    switch (c->kind) {
    case CPB_COLL_ALL_TO_ALL: return exchange(ctx, c, 0);
    case CPB_COLL_ALL_GATHER: return exchange(ctx, c, 1);
    case CPB_COLL_SENDRECV: return sendrecv(ctx, c);
    case CPB_COLL_BROADCAST: return broadcast(ctx, c);
    case CPB_COLL_REDUCE:
        if (n == 1) return local_copy(c);
        return sum_range(ctx, c, 0, 0, cpb_view_count(&c->send), c->root);
    case CPB_COLL_ALL_REDUCE:
        if (n == 1) return CPB_OK;
        return sum_range(ctx, c, 0, 0, cpb_view_count(&c->send), -1);
    case CPB_COLL_REDUCE_SCATTER: {
        if (n == 1) return local_copy(c);
        /* chunk j of every member's send is summed into member j's recv */
        int64_t chunk = cpb_view_count(&c->recv);
        for (int j = 0; j < n; j++) {
            int64_t roff = 0; /* only member j stores, at the start of its recv */
            CPB_TRY(sum_range(ctx, c, j * chunk, roff, chunk, j));
        }
        return CPB_OK;
    }
    default: break;
    }
    return cpb_fail(ctx, CPB_ERR_UNSUPPORTED, "%s: cpu backend has no collective of kind %d", c->name, (int)c->kind);
}
