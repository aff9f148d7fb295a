/* coll.c — collectives: validate, record accesses, count bytes, hand to the backend.
 * Every collective gets the group's next sequence number: the same on every member, which
 * is how the simulator matches the members' calls. */
#include <stdio.h>

#include "internal.h"
#include "race.h"

static int coll_run(cpb_ctx *ctx, cpb_coll *c, int in_place)
{
    ctx->n_colls++;
    c->name = ctx->opname;
    c->seq = c->g->seq++;
    ctx->comm_bytes += c->bytes_sent;
    if (ctx->rep_log) cpb_repeat_log_coll(ctx, c->g, c->bytes_sent);
    (void)in_place;
    int rc = ctx->be->run_coll(ctx, c);
    if (rc != CPB_OK && ctx->err_code == CPB_OK)
        cpb_fail(ctx, rc, "%s: backend %s failed", c->name, ctx->be->name);
    return rc;
}

/* cpb_view_check of a collective's send or receive view, its message ("<op> send")
 * formatted only on failure: this runs for every collective of every rank */
static int view_check(cpb_ctx *ctx, const char *side, const cpb_view *v)
{
    if (cpb_view_ok(v)) return CPB_OK;
    char what[160];
    snprintf(what, sizeof what, "%s %s", ctx->opname, side);
    return cpb_view_check(ctx, what, v);
}

static int prep(cpb_ctx *ctx, int stream, cpb_group **g, const char *kind, cpb_view *send,
                cpb_view *recv, int send_is_recv)
{
    if (stream < 0 || stream >= ctx->nstreams)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s on unknown stream %d", kind, stream);
    if (!*g) *g = cpb_world(ctx);
    cpb_op_begin(ctx, stream, kind);
    CPB_TRY(view_check(ctx, "send", send));
    if (!cpb_view_is_contiguous(send))
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: send buffer '%s' must be a contiguous span", ctx->opname, send->buf->name);
    if (send->buf->host)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: '%s' is a host buffer; collectives run on device buffers", ctx->opname, send->buf->name);
    if (!send_is_recv) {
        CPB_TRY(view_check(ctx, "recv", recv));
        if (!cpb_view_is_contiguous(recv))
            return cpb_fail(ctx, CPB_ERR_INVALID, "%s: receive buffer '%s' must be a contiguous span", ctx->opname, recv->buf->name);
        if (recv->buf->host)
            return cpb_fail(ctx, CPB_ERR_INVALID, "%s: '%s' is a host buffer; collectives run on device buffers", ctx->opname, recv->buf->name);
        if (recv->buf->dtype != send->buf->dtype)
            return cpb_fail(ctx, CPB_ERR_INVALID, "%s: send '%s' and receive '%s' dtypes differ", ctx->opname, send->buf->name, recv->buf->name);
        if (recv->buf == send->buf) {
            int64_t s0 = send->off, s1 = send->off + cpb_view_count(send);
            int64_t r0 = recv->off, r1 = recv->off + cpb_view_count(recv);
            if (s0 < r1 && r0 < s1)
                return cpb_fail(ctx, CPB_ERR_INVALID, "%s: send and receive ranges of '%s' overlap", ctx->opname, send->buf->name);
        }
    }
    CPB_TRY(cpb_race_access(ctx, stream, send, send_is_recv));
    if (!send_is_recv) CPB_TRY(cpb_race_access(ctx, stream, recv, 1));
    return CPB_OK;
}

static double esz(const cpb_view *v)
{
    return (double)cpb_dtype_size(v->buf->dtype);
}

int cpb_all_to_all(cpb_ctx *ctx, int stream, cpb_group *g, cpb_view send, cpb_view recv)
{
    CPB_TRY(prep(ctx, stream, &g, "all_to_all", &send, &recv, 0));
    int64_t n = cpb_view_count(&send);
    if (n != cpb_view_count(&recv) || n % g->size)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: send (%lld) and receive (%lld) must be equal and divisible by the group size %d",
                        ctx->opname, (long long)n, (long long)cpb_view_count(&recv), g->size);
    cpb_coll c = {.kind = CPB_COLL_ALL_TO_ALL, .stream = stream, .g = g, .send = send, .recv = recv};
    c.bytes_sent = (double)n * esz(&send) * (g->size - 1) / g->size;
    return coll_run(ctx, &c, 0);
}

int cpb_sendrecv(cpb_ctx *ctx, int stream, cpb_group *g, cpb_view send, int dst, cpb_view recv, int src)
{
    CPB_TRY(prep(ctx, stream, &g, "sendrecv", &send, &recv, 0));
    if (dst < 0 || dst >= g->size || src < 0 || src >= g->size)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: peers %d/%d outside the group of %d", ctx->opname, dst, src, g->size);
    cpb_coll c = {.kind = CPB_COLL_SENDRECV, .stream = stream, .g = g, .send = send, .recv = recv, .dst = dst, .src = src};
    c.bytes_sent = (double)cpb_view_count(&send) * esz(&send);
    return coll_run(ctx, &c, 0);
}

int cpb_broadcast(cpb_ctx *ctx, int stream, cpb_group *g, cpb_view buf, int root)
{
    CPB_TRY(prep(ctx, stream, &g, "broadcast", &buf, &buf, 1));
    if (root < 0 || root >= g->size)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: root %d outside the group of %d", ctx->opname, root, g->size);
    cpb_coll c = {.kind = CPB_COLL_BROADCAST, .stream = stream, .g = g, .send = buf, .recv = buf, .root = root};
    c.bytes_sent = g->size > 1 ? (double)cpb_view_count(&buf) * esz(&buf) : 0;
    return coll_run(ctx, &c, 1);
}

int cpb_reduce(cpb_ctx *ctx, int stream, cpb_group *g, cpb_view send, cpb_view recv, int root)
{
    CPB_TRY(prep(ctx, stream, &g, "reduce", &send, &recv, 0));
    if (root < 0 || root >= g->size)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: root %d outside the group of %d", ctx->opname, root, g->size);
    if (cpb_view_count(&send) != cpb_view_count(&recv))
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: send and receive sizes differ", ctx->opname);
    cpb_coll c = {.kind = CPB_COLL_REDUCE, .stream = stream, .g = g, .send = send, .recv = recv, .root = root};
    c.bytes_sent = g->size > 1 ? (double)cpb_view_count(&send) * esz(&send) : 0;
    return coll_run(ctx, &c, 0);
}

int cpb_all_reduce(cpb_ctx *ctx, int stream, cpb_group *g, cpb_view buf)
{
    CPB_TRY(prep(ctx, stream, &g, "all_reduce", &buf, &buf, 1));
    cpb_coll c = {.kind = CPB_COLL_ALL_REDUCE, .stream = stream, .g = g, .send = buf, .recv = buf};
    c.bytes_sent = 2.0 * (double)cpb_view_count(&buf) * esz(&buf) * (g->size - 1) / g->size;
    return coll_run(ctx, &c, 1);
}

int cpb_all_gather(cpb_ctx *ctx, int stream, cpb_group *g, cpb_view send, cpb_view recv)
{
    CPB_TRY(prep(ctx, stream, &g, "all_gather", &send, &recv, 0));
    if (cpb_view_count(&recv) != cpb_view_count(&send) * g->size)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: receive must hold group size (%d) x send (%lld) elements, has %lld",
                        ctx->opname, g->size, (long long)cpb_view_count(&send), (long long)cpb_view_count(&recv));
    cpb_coll c = {.kind = CPB_COLL_ALL_GATHER, .stream = stream, .g = g, .send = send, .recv = recv};
    c.bytes_sent = (double)cpb_view_count(&recv) * esz(&recv) * (g->size - 1) / g->size;
    return coll_run(ctx, &c, 0);
}

int cpb_reduce_scatter(cpb_ctx *ctx, int stream, cpb_group *g, cpb_view send, cpb_view recv)
{
    CPB_TRY(prep(ctx, stream, &g, "reduce_scatter", &send, &recv, 0));
    if (cpb_view_count(&send) != cpb_view_count(&recv) * g->size)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: send must hold group size (%d) x receive (%lld) elements, has %lld",
                        ctx->opname, g->size, (long long)cpb_view_count(&recv), (long long)cpb_view_count(&send));
    cpb_coll c = {.kind = CPB_COLL_REDUCE_SCATTER, .stream = stream, .g = g, .send = send, .recv = recv};
    c.bytes_sent = (double)cpb_view_count(&send) * esz(&send) * (g->size - 1) / g->size;
    return coll_run(ctx, &c, 0);
}
