/* repeat.c — cpb_repeat (cpb.h): a loop of alike iterations, replicated instead of run where
 * the backend keeps a trace and has no data (the simulator).
 *
 * Why: a simulated trial's front-end cost is per op (validation, allocation accounting, the
 * race check: about 0.1 us an op), and a ring over R ranks issues R alike steps per call.
 * hupipe with one head per stage on 1,024 GPUs ran 1.1 million ops per rank for 24 ranks;
 * the plan that searches it spent most of its time there.  What the front-end does for an
 * iteration it did not run is known from one it ran: the same counter increments, the same
 * allocation sequence, the same trace entries with their event ids and sequence numbers
 * moved on.
 *
 * How (the backend side is backends/sim/sim_repeat.c):
 *   1. Run F, P and T (the first three iterations; four when that leaves an odd number in
 *      the middle, so that buffers alternating between iterations line up in the race
 *      check), logging T's effects on the context's counters (cpb_repeat_log below).
 *   2. T must leave the memory as it found it, create no stream or group, and be P again
 *      in the trace (repeat_alike: the same entries, its waits on its own events, P's, or
 *      the same older ones as P's waits on F's).  Else the loop runs on as usual.
 *   3. The copies' effects, in the order running them would have had: the log replayed
 *      once per copy (op, collective and attention-call counters, collective sequence
 *      numbers, event ids, the allocation count and sequence hash); the backend records the
 *      copies in its trace (repeat_copy: the simulator as one run, a template and a count).
 *   4. Run L (the last iteration) and have the backend point its waits on T's events at
 *      the last copy's (repeat_last, which also checks that L is T again).
 * The memory peak needs nothing: every copy starts from the live state T started from and
 * allocates as T did. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* the effects of one front-end call on the context's counters, in order */
enum { REP_ALLOC, REP_FREE, REP_OP, REP_COLL, REP_ATTN, REP_EVENT };
typedef struct rep_item {
    uint8_t what, host, bwd, impl;
    int32_t tag;
    int64_t bytes; /* alloc, free */
    double x;      /* op: flops; collective: bytes sent */
    double pcie;   /* op: host<->device bytes counted (-1: not a host<->device copy) */
    cpb_group *g;  /* collective */
} rep_item;

struct cpb_repeat_log {
    rep_item *v;
    int n, cap;
    int failed; /* out of memory: the log is incomplete, nothing may be replicated */
};

static rep_item *log_add(cpb_ctx *ctx, int what)
{
    struct cpb_repeat_log *L = ctx->rep_log;
    if (L->n == L->cap) {
        int nc = L->cap ? 2 * L->cap : 64;
        rep_item *v = realloc(L->v, sizeof *v * (size_t)nc);
        if (!v) {
            L->failed = 1;
            return NULL;
        }
        L->v = v;
        L->cap = nc;
    }
    rep_item *it = &L->v[L->n++];
    memset(it, 0, sizeof *it);
    it->what = (uint8_t)what;
    return it;
}

void cpb_repeat_log_alloc(cpb_ctx *ctx, int freed, int host, int64_t bytes, int tag)
{
    rep_item *it = log_add(ctx, freed ? REP_FREE : REP_ALLOC);
    if (!it) return;
    it->host = (uint8_t)host;
    it->bytes = bytes;
    it->tag = tag;
}

void cpb_repeat_log_op(cpb_ctx *ctx, double flops, double pcie)
{
    rep_item *it = log_add(ctx, REP_OP);
    if (!it) return;
    it->x = flops;
    it->pcie = pcie;
}

void cpb_repeat_log_coll(cpb_ctx *ctx, cpb_group *g, double bytes_sent)
{
    rep_item *it = log_add(ctx, REP_COLL);
    if (!it) return;
    it->g = g;
    it->x = bytes_sent;
}

void cpb_repeat_log_attn(cpb_ctx *ctx, int bwd, int impl)
{
    rep_item *it = log_add(ctx, REP_ATTN);
    if (!it) return;
    it->bwd = (uint8_t)bwd;
    it->impl = (uint8_t)impl;
}

void cpb_repeat_log_event(cpb_ctx *ctx)
{
    log_add(ctx, REP_EVENT);
}

/* what running `copies` more iterations like the logged one does to the counters: the
 * allocations in closed form (cpb_alloc_repeat), the rest item by item, in the order
 * running them would add them (the sums are floating point) */
static void replay_log(cpb_ctx *ctx, const struct cpb_repeat_log *L, int copies)
{
    uint64_t block[2] = {0, 0};
    int64_t events[2] = {0, 0}, allocs[2] = {0, 0};
    for (int k = 0; k < L->n; k++) {
        const rep_item *it = &L->v[k];
        if (it->what != REP_ALLOC && it->what != REP_FREE) continue;
        block[it->host] = cpb_alloc_hash_put(block[it->host], it->what == REP_FREE ? 2 : 1, it->bytes, it->tag);
        events[it->host]++;
        allocs[it->host] += it->what == REP_ALLOC;
    }
    for (int h = 0; h < 2; h++) cpb_alloc_repeat(ctx, h, block[h], events[h], allocs[h], copies);
    for (int c = 0; c < copies; c++)
        for (int k = 0; k < L->n; k++) {
            const rep_item *it = &L->v[k];
            switch (it->what) {
            case REP_OP:
                ctx->n_ops++;
                ctx->flops += it->x;
                if (it->pcie >= 0) ctx->pcie_bytes += it->pcie;
                break;
            case REP_COLL:
                ctx->n_colls++;
                it->g->seq++;
                ctx->comm_bytes += it->x;
                break;
            case REP_ATTN:
                ctx->attn_usage.calls[it->bwd][it->impl]++;
                break;
            case REP_EVENT:
                ctx->nevents++;
                break;
            default:
                break;
            }
        }
}

static int run_one(cpb_ctx *ctx, const char *label, cpb_repeat_body body, void *arg, int i)
{
    CPB_RANGE(ctx, body(ctx, arg, i), "%s%d", label, i);
    return CPB_OK;
}

static int run_all(cpb_ctx *ctx, int from, int end, const char *label, cpb_repeat_body body, void *arg)
{
    for (int i = from; i < end; i++) CPB_TRY(run_one(ctx, label, body, arg, i));
    return CPB_OK;
}

/* the live memory an iteration must leave as it found it */
typedef struct live_state {
    int64_t dev, host;
    int64_t dev_tag[CPB_TAG_COUNT], host_tag[CPB_TAG_COUNT];
    int nstreams, ngroups;
} live_state;

static void live_of(const cpb_ctx *ctx, live_state *s)
{
    s->dev = ctx->dev.live;
    s->host = ctx->host.live;
    memcpy(s->dev_tag, ctx->dev.tag_live, sizeof s->dev_tag);
    memcpy(s->host_tag, ctx->host.tag_live, sizeof s->host_tag);
    s->nstreams = ctx->nstreams;
    s->ngroups = ctx->ngroups;
}

/* the span's marks and event counts at point k */
static void mark(cpb_ctx *ctx, cpb_repeat_span *s, int k)
{
    s->at[k] = ctx->be->repeat_mark(ctx);
    s->ev[k] = ctx->nevents;
}

int cpb_repeat(cpb_ctx *ctx, int first, int end, const char *label, cpb_repeat_body body, void *arg)
{
    /* F, P, T, two copies at least (an even number), L */
    const int lead = (end - first) % 2 ? 4 : 3; /* F .. T; the copies are end - first - lead - 1 */
    const int copies = end - first - lead - 1;
    if (ctx->opts.no_repeat || !ctx->be->repeat_copy || !ctx->be->repeat_mark || !ctx->be->repeat_alike ||
        !ctx->be->repeat_last || copies < 2 || ctx->rep_log)
        return run_all(ctx, first, end, label, body, arg);
    cpb_repeat_span s;
    memset(&s, 0, sizeof s);
    s.tmpl = first + lead - 1;
    s.last = end - 1;
    s.copies = copies;
    s.label = label;
    s.range_len = ctx->range_len;
    /* F is T - 2; any iteration before it runs first */
    CPB_TRY(run_all(ctx, first, s.tmpl - 2, label, body, arg));
    mark(ctx, &s, 0);
    CPB_TRY(run_one(ctx, label, body, arg, s.tmpl - 2));
    mark(ctx, &s, 1);
    CPB_TRY(run_one(ctx, label, body, arg, s.tmpl - 1));
    mark(ctx, &s, 2);
    live_state before, after;
    memset(&before, 0, sizeof before);
    memset(&after, 0, sizeof after);
    live_of(ctx, &before);
    struct cpb_repeat_log log = {0};
    ctx->rep_log = &log;
    int rc = run_one(ctx, label, body, arg, s.tmpl);
    ctx->rep_log = NULL;
    if (rc != CPB_OK) {
        free(log.v);
        return rc;
    }
    mark(ctx, &s, 3);
    live_of(ctx, &after);
    int ok = !log.failed && memcmp(&before, &after, sizeof before) == 0;
    if (ok) {
        ok = ctx->be->repeat_alike(ctx, &s);
        if (ok < 0) {
            free(log.v);
            return ctx->err_code != CPB_OK ? ctx->err_code : CPB_ERR_NOMEM_HOST;
        }
    }
    if (!ok) {
        free(log.v);
        return run_all(ctx, s.tmpl + 1, end, label, body, arg);
    }
    replay_log(ctx, &log, copies);
    free(log.v);
    rc = ctx->be->repeat_copy(ctx, &s);
    if (rc != CPB_OK) return rc;
    mark(ctx, &s, 4);
    CPB_TRY(run_one(ctx, label, body, arg, s.last));
    mark(ctx, &s, 5);
    return ctx->be->repeat_last(ctx, &s);
}
