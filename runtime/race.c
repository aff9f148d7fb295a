/* race.c — vector-clock stream-race check; see race.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "race.h"

typedef struct rec {
    int stream;
    int write;
    int64_t tick;
    int64_t lo, hi; /* element range [lo, hi) */
    char op[96];
} rec;

typedef struct bufrace {
    int n, cap;
    rec *r;
} bufrace;

struct cpb_race {
    int64_t vc[CPB_MAX_STREAMS][CPB_MAX_STREAMS];
    int nev, evcap;
    int64_t (*ev)[CPB_MAX_STREAMS];
};

int cpb_race_init(cpb_ctx *ctx)
{
    ctx->race = calloc(1, sizeof *ctx->race);
    return ctx->race ? CPB_OK : cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "race check: out of host memory");
}

void cpb_race_destroy(cpb_ctx *ctx)
{
    if (!ctx->race) return;
    free(ctx->race->ev);
    free(ctx->race);
    ctx->race = NULL;
}

void cpb_race_reset(cpb_ctx *ctx)
{
    if (!ctx->race) return;
    ctx->race->nev = 0;
    for (cpb_buf *b = ctx->live; b; b = b->next) cpb_race_buf_free(b);
}

void cpb_race_stream_added(cpb_ctx *ctx, int stream)
{
    (void)ctx;
    (void)stream; /* clocks start at zero */
}

void cpb_race_op_begin(cpb_ctx *ctx, int stream)
{
    if (ctx->race) ctx->race->vc[stream][stream]++;
}

static void view_range(const cpb_view *v, int64_t *lo, int64_t *hi)
{
    int64_t last = v->off + (v->rows > 0 ? (v->rows - 1) * v->row_stride : 0) +
                   (v->heads > 0 ? (v->heads - 1) * v->head_stride : 0) + v->dim;
    *lo = v->off;
    *hi = last;
}

int cpb_race_access(cpb_ctx *ctx, int stream, const cpb_view *v, int write)
{
    struct cpb_race *R = ctx->race;
    if (!R || !v->buf || cpb_view_count(v) == 0) return CPB_OK;
    bufrace *br = v->buf->race;
    if (!br) {
        br = calloc(1, sizeof *br);
        if (!br) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "race check: out of host memory");
        v->buf->race = br;
    }
    int64_t lo, hi;
    view_range(v, &lo, &hi);
    const int64_t *mine = R->vc[stream];
    for (int i = 0; i < br->n; i++) {
        rec *r = &br->r[i];
        if (r->stream == stream) continue;
        if (!(r->write || write)) continue;
        if (r->hi <= lo || hi <= r->lo) continue;
        if (mine[r->stream] >= r->tick) continue;
        return cpb_fail(ctx, CPB_ERR_RACE,
                        "stream race on buffer '%s' (elements [%lld, %lld)): %s '%s' on stream "
                        "'%s' is not ordered after %s '%s' on stream '%s'; record an event after "
                        "the earlier op and make the later stream wait for it",
                        v->buf->name, (long long)lo, (long long)hi, write ? "write by" : "read by",
                        ctx->opname, ctx->stream_names[stream], r->write ? "write by" : "read by",
                        r->op, ctx->stream_names[r->stream]);
    }
    /* prune: records of this stream covered by the new one, and records every stream
     * is already ordered after */
    int w = 0;
    for (int i = 0; i < br->n; i++) {
        rec *r = &br->r[i];
        int drop = 0;
        if (r->stream == stream && r->lo >= lo && r->hi <= hi && (write || !r->write)) drop = 1;
        if (!drop) {
            int all = 1;
            for (int s = 0; s < ctx->nstreams && all; s++)
                if (R->vc[s][r->stream] < r->tick) all = 0;
            drop = all;
        }
        if (!drop) br->r[w++] = *r;
    }
    br->n = w;
    if (br->n == br->cap) {
        int nc = br->cap ? br->cap * 2 : 8;
        rec *nr = realloc(br->r, (size_t)nc * sizeof *nr);
        if (!nr) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "race check: out of host memory");
        br->r = nr;
        br->cap = nc;
    }
    rec *r = &br->r[br->n++];
    r->stream = stream;
    r->write = write;
    r->tick = R->vc[stream][stream];
    r->lo = lo;
    r->hi = hi;
    size_t n = strlen(ctx->opname);
    if (n >= sizeof r->op) n = sizeof r->op - 1;
    memcpy(r->op, ctx->opname, n);
    r->op[n] = 0;
    return CPB_OK;
}

int cpb_race_event_record(cpb_ctx *ctx, int stream, int ev)
{
    struct cpb_race *R = ctx->race;
    if (!R) return CPB_OK;
    if (ev >= R->evcap) {
        int nc = R->evcap ? R->evcap * 2 : 64;
        while (nc <= ev) nc *= 2;
        void *p = realloc(R->ev, (size_t)nc * sizeof *R->ev);
        if (!p) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "race check: out of host memory");
        R->ev = p;
        R->evcap = nc;
    }
    memcpy(R->ev[ev], R->vc[stream], sizeof R->ev[ev]);
    if (ev >= R->nev) R->nev = ev + 1;
    return CPB_OK;
}

int cpb_race_stream_wait(cpb_ctx *ctx, int stream, int ev)
{
    struct cpb_race *R = ctx->race;
    if (!R) return CPB_OK;
    if (ev < 0 || ev >= R->nev)
        return cpb_fail(ctx, CPB_ERR_INVALID, "stream wait on an event (%d) that was never recorded", ev);
    for (int s = 0; s < CPB_MAX_STREAMS; s++)
        if (R->ev[ev][s] > R->vc[stream][s]) R->vc[stream][s] = R->ev[ev][s];
    return CPB_OK;
}

void cpb_race_sync(cpb_ctx *ctx)
{
    struct cpb_race *R = ctx->race;
    if (!R) return;
    int64_t mx[CPB_MAX_STREAMS] = {0};
    for (int s = 0; s < CPB_MAX_STREAMS; s++)
        for (int t = 0; t < CPB_MAX_STREAMS; t++)
            if (R->vc[s][t] > mx[t]) mx[t] = R->vc[s][t];
    for (int s = 0; s < CPB_MAX_STREAMS; s++) memcpy(R->vc[s], mx, sizeof mx);
}

void cpb_race_buf_free(cpb_buf *b)
{
    bufrace *br = b->race;
    if (!br) return;
    free(br->r);
    free(br);
    b->race = NULL;
}
