/* sim_backend.c — the simulator backend: no data, no arithmetic.
 *
 * The runtime front-end already validates every call, does the allocation accounting
 * (exactly the same calls and sizes as on cpu and cuda) and the stream-race check.  This
 * backend only keeps buffers address-less (ptr = NULL) and appends every op, collective,
 * event record, stream wait and sync to the rank's trace, for the timing model
 * (timeline.c) to replay once every rank of the world has run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_record.h"
#include "sim_repeat.h"
#include "registry.h"
#include "sim_world.h"

typedef struct sim_state {
    cpb_sim_world *w;
    int own;        /* 1: the world was created by this context (no backend_shared) */
    sim_trace *t;
    int phase;      /* sim_phase of the current range, kept by the range hooks */
    int name_cursor; /* sim_intern_next: where this rank's next name is looked for first */
} sim_state;

static sim_state *st(const cpb_ctx *ctx)
{
    return (sim_state *)ctx->bs;
}

cpb_sim_world *cpb_sim_world_of(const cpb_ctx *ctx)
{
    if (!ctx || ctx->be != &cpb_backend_sim || !ctx->bs) return NULL;
    return st(ctx)->w;
}

/* the trial phase of the current range (trial.h: "trial/fwd", "trial/bwd") */
static int phase_of(const char *range)
{
    if (strncmp(range, "trial/fwd", 9) == 0 && (range[9] == 0 || range[9] == '/')) return SIM_PHASE_FWD;
    if (strncmp(range, "trial/bwd", 9) == 0 && (range[9] == 0 || range[9] == '/')) return SIM_PHASE_BWD;
    return SIM_PHASE_SETUP;
}

static int sim_init(cpb_ctx *ctx)
{
    int world = ctx->opts.sim_world > 0 ? ctx->opts.sim_world : 1;
    int rank = ctx->opts.sim_rank;
    if (rank < 0 || rank >= world)
        return cpb_fail(ctx, CPB_ERR_INVALID, "sim: rank %d is not a rank of a world of %d", rank, world);
    sim_state *s = calloc(1, sizeof *s);
    if (!s) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "sim: out of host memory");
    if (ctx->opts.backend_shared) {
        s->w = ctx->opts.backend_shared;
        int shared = s->w->world;
        if (shared != world) {
            free(s);
            return cpb_fail(ctx, CPB_ERR_INVALID, "sim: context of a world of %d given the shared state of a world of %d",
                            world, shared);
        }
    } else {
        int rc = cpb_sim_world_create(world, &s->w);
        if (rc != CPB_OK) {
            free(s);
            return cpb_fail(ctx, rc, "sim: cannot create the world state");
        }
        s->own = 1;
    }
    s->t = &s->w->traces[rank];
    s->phase = phase_of(ctx->range);
    ctx->bs = s;
    ctx->rank = rank;
    ctx->world = world;
    return CPB_OK;
}

static void sim_finalize(cpb_ctx *ctx)
{
    sim_state *s = st(ctx);
    if (!s) return;
    if (s->own) cpb_sim_world_destroy(s->w);
    free(s);
    ctx->bs = NULL;
}

static int sim_alloc(cpb_ctx *ctx, cpb_buf *buf)
{
    (void)ctx;
    buf->ptr = NULL; /* no data: the front-end's accounting is the whole job */
    return CPB_OK;
}

static void sim_release(cpb_ctx *ctx, cpb_buf *buf)
{
    (void)ctx;
    (void)buf;
}

static int sim_stream_create(cpb_ctx *ctx, int id, const char *name)
{
    sim_trace *t = st(ctx)->t;
    if (id < 0 || id >= CPB_MAX_STREAMS)
        return cpb_fail(ctx, CPB_ERR_INVALID, "sim: stream id %d out of range", id);
    snprintf(t->stream_names[id], sizeof t->stream_names[id], "%s", name);
    if (id + 1 > t->nstreams) t->nstreams = id + 1;
    return CPB_OK;
}

/* a new entry on `stream` named after the current op */
static int push(cpb_ctx *ctx, int type, int stream, const char *name, sim_entry **out)
{
    sim_state *s = st(ctx);
    if (!s->t->e && s->w->spare) {
        /* a dropped trace's entries (sim_world.h: spare) */
        s->t->e = s->w->spare;
        s->t->cap = s->w->spare_cap;
        s->t->n = 0;
        s->w->spare = NULL;
        s->w->spare_cap = 0;
    }
    sim_entry *e = sim_trace_push(s->t, type);
    /* only collectives keep their name: the replay names them when ranks do not match;
     * interning every op's name would cost more than the rest of the trace */
    int idx = (e && type == SIM_COLL) ? sim_intern_next(s->w, name ? name : "", &s->name_cursor) : -1;
    if (!e || (type == SIM_COLL && idx < 0))
        return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "sim: out of host memory for the trace");
    e->type = (uint8_t)type;
    e->stream = (int16_t)stream;
    e->phase = (uint8_t)s->phase;
    e->name = idx;
    *out = e;
    return CPB_OK;
}

/* the phase changes only with the range: found there, not per entry */
static void sim_range_push(cpb_ctx *ctx, const char *name)
{
    if (st(ctx)) st(ctx)->phase = phase_of(name);
}

static void sim_range_pop(cpb_ctx *ctx)
{
    if (st(ctx)) st(ctx)->phase = phase_of(ctx->range);
}

static int sim_event_record(cpb_ctx *ctx, int stream, int ev)
{
    sim_entry *e = NULL;
    CPB_TRY(push(ctx, SIM_RECORD, stream, "event_record", &e));
    e->ev = ev;
    if (ev + 1 > st(ctx)->t->nevents) st(ctx)->t->nevents = ev + 1;
    return CPB_OK;
}

static int sim_stream_wait(cpb_ctx *ctx, int stream, int ev)
{
    sim_entry *e = NULL;
    CPB_TRY(push(ctx, SIM_WAIT, stream, "stream_wait", &e));
    e->ev = ev;
    return CPB_OK;
}

static int sim_sync(cpb_ctx *ctx)
{
    if (!st(ctx)) return CPB_OK; /* cpb_free_all of a context whose init failed */
    sim_entry *e = NULL;
    return push(ctx, SIM_SYNC, 0, "sync", &e);
}

static int sim_run_op(cpb_ctx *ctx, const cpb_op *op)
{
    sim_entry *e = NULL;
    CPB_TRY(push(ctx, SIM_OP, op->stream, op->name, &e));
    e->kind = (uint8_t)op->kind;
    e->flops = op->flops;
    e->bytes = op->bytes;
    if (op->pcie) e->pcie = op->u.copy.dst.buf->host ? SIM_PCIE_D2H : SIM_PCIE_H2D;
    if (op->kind == CPB_OP_FILL && op->u.fill.dst.buf && op->u.fill.dst.buf->host) e->pcie = SIM_HOST_FILL;
    switch (op->kind) {
    case CPB_OP_GEMM:
        e->w0 = op->u.gemm.m;
        e->w1 = op->u.gemm.n;
        e->w2 = op->u.gemm.k;
        e->w3 = op->u.gemm.batch;
        break;
    case CPB_OP_ATTN_FWD:
    case CPB_OP_ATTN_BWD:
        e->w0 = op->u.attn.a->q.rows;
        e->w1 = op->u.attn.a->q.heads;
        e->w2 = op->u.attn.pairs;
        e->w3 = op->u.attn.a->q.dim;
        e->impl = (uint8_t)op->u.attn.impl;
        break;
    default:
        break;
    }
    return CPB_OK;
}

static int sim_run_coll(cpb_ctx *ctx, const cpb_coll *c)
{
    sim_entry *e = NULL;
    CPB_TRY(push(ctx, SIM_COLL, c->stream, c->name, &e));
    const cpb_group *g = c->g;
    e->kind = (uint8_t)c->kind;
    e->group = (int32_t)((intptr_t)g->be - 1);
    e->seq = c->seq;
    e->bytes = c->bytes_sent;
    if (c->kind == CPB_COLL_SENDRECV) {
        e->dst = g->ranks[c->dst];
        e->src = g->ranks[c->src];
    }
    if (c->kind == CPB_COLL_BROADCAST || c->kind == CPB_COLL_REDUCE) e->root = g->ranks[c->root];
    return CPB_OK;
}

static int sim_group_create(cpb_ctx *ctx, cpb_group *g)
{
    /* how many groups with the same members this rank created before: the k-th such
     * group of every member is one communicator */
    const cpb_sim_world *w = st(ctx)->w;
    int k = 0;
    for (int i = 0; i < ctx->ngroups; i++) {
        const cpb_group *o = ctx->groups[i];
        if (!o || o == g || !o->be) continue;
        const sim_group *wg = &w->groups[(intptr_t)o->be - 1];
        if (wg->size == g->size && memcmp(wg->ranks, g->ranks, sizeof(int) * (size_t)g->size) == 0) k++;
    }
    int idx = sim_group_find_or_add(st(ctx)->w, g->size, g->ranks, k);
    if (idx < 0) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "sim: out of host memory for a group");
    g->be = (void *)(intptr_t)(idx + 1); /* the world-wide group index, never NULL */
    return CPB_OK;
}

static void sim_group_destroy(cpb_ctx *ctx, cpb_group *g)
{
    (void)ctx;
    g->be = NULL; /* the world table owns the member list */
}

static int sim_upload(cpb_ctx *ctx, cpb_view dst, const float *src)
{
    (void)ctx;
    (void)dst;
    (void)src;
    return CPB_OK;
}

static int sim_download(cpb_ctx *ctx, cpb_view src, float *dst)
{
    (void)ctx;
    /* no data: hand back zeros rather than leave the caller's array uninitialized */
    if (dst) memset(dst, 0, sizeof(float) * (size_t)cpb_view_count(&src));
    return CPB_OK;
}

/* the trial's measured times are 0 on sim (trial.h); the timing model predicts them */
static double sim_clock(cpb_ctx *ctx)
{
    (void)ctx;
    return 0.0;
}

const cpb_backend cpb_backend_sim = {
    .name = "sim",
    .summary = "no data: exact allocation accounting + a timing model, every rank in one process",
    .has_data = 0,
    .models_time = 1,
    .mpi_world = 0,
    .init = sim_init,
    .finalize = sim_finalize,
    .alloc = sim_alloc,
    .release = sim_release,
    .stream_create = sim_stream_create,
    .event_record = sim_event_record,
    .stream_wait = sim_stream_wait,
    .sync = sim_sync,
    .run_op = sim_run_op,
    .run_coll = sim_run_coll,
    .group_create = sim_group_create,
    .group_destroy = sim_group_destroy,
    .upload = sim_upload,
    .download = sim_download,
    .range_push = sim_range_push,
    .range_pop = sim_range_pop,
    .clock = sim_clock,
    .repeat_mark = sim_repeat_mark,
    .repeat_alike = sim_repeat_alike,
    .repeat_copy = sim_repeat_copy,
    .repeat_last = sim_repeat_last,
};
