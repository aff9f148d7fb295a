/* race.c — vector-clock stream-race check; see race.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "race.h"


/* One recorded access.  Each buffer keeps its records per stream, in the order they were
 * made: a stream's ticks only grow, so the records of stream t that stream s is not yet
 * ordered after (tick > vc[s][t]) are a suffix of t's list, and the records every stream is
 * ordered after (dead: they can never race again) a prefix.  An access then looks only at
 * the other streams' unordered suffixes, and dropping the dead records is moving a start
 * index: no scan of every record of the buffer per access (and no compaction copying each
 * record, name and all), which made a buffer read in
 * many disjoint blocks (all-gather CP's gathered K,V at 1,024 ranks: thousands of records)
 * cost the square of its accesses. */
typedef struct rec {
    int64_t tick;
    int64_t lo, hi; /* element range [lo, hi) */
    int64_t seq;    /* the buffer's access number: a race names the earliest record */
    int write;
    char op[88];    /* the op's name, for the report */
} rec;

/* a record's copy of the op's name reads sizeof rec.op bytes of ctx->opname */
_Static_assert(sizeof ((cpb_ctx *)0)->opname >= sizeof ((rec *)0)->op, "ctx->opname shorter than a race record's op name");

typedef struct slist {
    rec *r;
    int head, n, cap; /* live records: r[head .. n-1] */
} slist;

typedef struct bufrace {
    int64_t seq;
    uint32_t used; /* bit t: stream t's list has live records */
    slist s[CPB_MAX_STREAMS];
    struct bufrace *next_free; /* in the context's pool (cpb_race.pool) */
} bufrace;

struct cpb_race {
    int64_t vc[CPB_MAX_STREAMS][CPB_MAX_STREAMS];
    /* least[t]: the smallest of every stream's clock of stream t (its records at or below
     * it are dead), valid where bit t of least_ok is set: an op's several accesses, and the
     * ops between two clock changes of t, need it once (cleared where a clock can change:
     * an op on t, a wait, a sync, a new stream) */
    int64_t least[CPB_MAX_STREAMS];
    uint32_t least_ok;
    /* Each event's clock as the recording stream had it, for the streams that existed then
     * (the clocks of streams created later are 0 in it: nothing ordered them yet): event e's
     * ev_n[e] values at evclk[ev_at[e]].  Methods record an event per ring step and stage,
     * some hundred thousand per simulated rank, and a row of CPB_MAX_STREAMS clocks each
     * was a third of a large point's page faults. */
    int nev, evcap;
    int64_t *ev_at;
    uint8_t *ev_n;
    int64_t *evclk;
    int64_t nclk, clkcap;
    /* the records of freed buffers, kept for the next buffer accessed: a schedule allocates
     * and frees temporaries around most ops (workspaces, cuDNN's adapted views), and a
     * fresh 400-byte record set per buffer, with fresh list room per stream, was a tenth of
     * a large simulated trial's time in malloc and free */
    bufrace *pool;
};

int cpb_race_init(cpb_ctx *ctx)
{
    ctx->race = calloc(1, sizeof *ctx->race);
    return ctx->race ? CPB_OK : cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "race check: out of host memory");
}

static void bufrace_delete(bufrace *br)
{
    for (int t = 0; t < CPB_MAX_STREAMS; t++) free(br->s[t].r);
    free(br);
}

void cpb_race_destroy(cpb_ctx *ctx)
{
    if (!ctx->race) return;
    while (ctx->race->pool) {
        bufrace *br = ctx->race->pool;
        ctx->race->pool = br->next_free;
        bufrace_delete(br);
    }
    free(ctx->race->ev_at);
    free(ctx->race->ev_n);
    free(ctx->race->evclk);
    free(ctx->race);
    ctx->race = NULL;
}

void cpb_race_reset(cpb_ctx *ctx)
{
    if (!ctx->race) return;
    ctx->race->nev = 0;
    ctx->race->nclk = 0;
    for (cpb_buf *b = ctx->live; b; b = b->next) cpb_race_buf_free(ctx, b);
}

void cpb_race_stream_added(cpb_ctx *ctx, int stream)
{
    (void)stream; /* clocks start at zero, and every least is now 0 */
    if (ctx->race) ctx->race->least_ok = 0;
}

void cpb_race_op_begin(cpb_ctx *ctx, int stream)
{
    if (!ctx->race) return;
    ctx->race->vc[stream][stream]++;
    ctx->race->least_ok &= ~(1u << stream);
}

static void view_range(const cpb_view *v, int64_t *lo, int64_t *hi)
{
    int64_t last = v->off + (v->rows > 0 ? (v->rows - 1) * v->row_stride : 0) +
                   (v->heads > 0 ? (v->heads - 1) * v->head_stride : 0) + v->dim;
    *lo = v->off;
    *hi = last;
}

/* an empty record set: a freed buffer's from the pool (its lists' room kept), or a new one */
static bufrace *bufrace_new(struct cpb_race *R)
{
    bufrace *br = R->pool;
    if (!br) return calloc(1, sizeof *br);
    R->pool = br->next_free;
    br->next_free = NULL;
    return br;
}

/* the smallest of every stream's clock of stream t (cpb_race.least) */
static int64_t least_clock(const cpb_ctx *ctx, struct cpb_race *R, int t)
{
    if (R->least_ok >> t & 1) return R->least[t];
    int64_t least = INT64_MAX;
    for (int s = 0; s < ctx->nstreams; s++)
        if (R->vc[s][t] < least) least = R->vc[s][t];
    R->least[t] = least;
    R->least_ok |= 1u << t;
    return least;
}

/* how many of a stream's own latest records a new access looks at to drop those it covers
 * (same range or inside it, no write dropped by a read): a later covering record races
 * with whatever the covered one would race with, so dropping them only keeps the lists
 * short; looking further back would make an access cost its stream's record count */
#define COVER_LOOKBACK 8

int cpb_race_access(cpb_ctx *ctx, int stream, const cpb_view *v, int write)
{
    struct cpb_race *R = ctx->race;
    if (!R || !v->buf || cpb_view_count(v) == 0) return CPB_OK;
    bufrace *br = v->buf->race;
    if (!br) {
        br = bufrace_new(R);
        if (!br) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "race check: out of host memory");
        v->buf->race = br;
    }
    int64_t lo, hi;
    view_range(v, &lo, &hi);
    const int64_t *mine = R->vc[stream];
    const rec *hit = NULL;
    int hit_stream = -1;
    for (uint32_t u = br->used; u; u &= u - 1) {
        const int t = __builtin_ctz(u);
        slist *L = &br->s[t];
        /* drop the records every stream is ordered after: they can never race again */
        const int64_t least = least_clock(ctx, R, t);
        while (L->head < L->n && L->r[L->head].tick <= least) L->head++;
        if (L->head == L->n) {
            L->head = L->n = 0;
            br->used &= ~(1u << t);
            continue;
        }
        if (t == stream) continue;
        /* the suffix this stream is not ordered after */
        for (int i = L->n - 1; i >= L->head && L->r[i].tick > mine[t]; i--) {
            const rec *r = &L->r[i];
            if (!(r->write || write) || r->hi <= lo || hi <= r->lo) continue;
            if (!hit || r->seq < hit->seq) hit = r, hit_stream = t;
        }
    }
    if (hit)
        return cpb_fail(ctx, CPB_ERR_RACE,
                        "stream race on buffer '%s' (elements [%lld, %lld)): %s '%s' on stream "
                        "'%s' is not ordered after %s '%s' on stream '%s'; record an event after "
                        "the earlier op and make the later stream wait for it",
                        v->buf->name, (long long)lo, (long long)hi, write ? "write by" : "read by",
                        ctx->opname, ctx->stream_names[stream], hit->write ? "write by" : "read by",
                        hit->op, ctx->stream_names[hit_stream]);
    slist *L = &br->s[stream];
    /* drop this stream's latest records that the new one covers */
    int w = L->n;
    for (int i = L->n - 1; i >= L->head && i >= L->n - COVER_LOOKBACK; i--) {
        const rec *r = &L->r[i];
        if (r->lo >= lo && r->hi <= hi && (write || !r->write)) {
            memmove(&L->r[i], &L->r[i + 1], sizeof *r * (size_t)(w - i - 1));
            w--;
        }
    }
    L->n = w;
    if (L->head > 0 && L->n == L->cap) {
        /* reuse the dropped prefix's room */
        memmove(L->r, L->r + L->head, sizeof *L->r * (size_t)(L->n - L->head));
        L->n -= L->head;
        L->head = 0;
    }
    if (L->n == L->cap) {
        int nc = L->cap ? L->cap * 2 : 8;
        rec *nr = realloc(L->r, (size_t)nc * sizeof *nr);
        if (!nr) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "race check: out of host memory");
        L->r = nr;
        L->cap = nc;
    }
    rec *r = &L->r[L->n++];
    r->tick = R->vc[stream][stream];
    r->lo = lo;
    r->hi = hi;
    r->seq = br->seq++;
    r->write = write;
    /* the op's name cut to the record's room: a copy of the whole room (a constant size: a
     * few vector moves, where a copy of the name's length was a string op's slow start) and
     * the end put where the cut name ends; what follows it is never read */
    memcpy(r->op, ctx->opname, sizeof r->op);
    r->op[ctx->opname_len < (int)sizeof r->op ? ctx->opname_len : (int)sizeof r->op - 1] = 0;
    br->used |= 1u << stream;
    return CPB_OK;
}

/* room for event ids up to ev and for n more clock values; 0, or -1 out of memory */
static int event_room(struct cpb_race *R, int ev, int n)
{
    if (ev >= R->evcap) {
        int nc = R->evcap ? R->evcap * 2 : 64;
        while (nc <= ev) nc *= 2;
        int64_t *at = realloc(R->ev_at, (size_t)nc * sizeof *at);
        if (at) R->ev_at = at;
        uint8_t *cnt = realloc(R->ev_n, (size_t)nc * sizeof *cnt);
        if (cnt) R->ev_n = cnt;
        if (!at || !cnt) return -1;
        R->evcap = nc;
    }
    if (R->nclk + n > R->clkcap) {
        int64_t nc = R->clkcap ? R->clkcap * 2 : 256;
        while (nc < R->nclk + n) nc *= 2;
        int64_t *c = realloc(R->evclk, (size_t)nc * sizeof *c);
        if (!c) return -1;
        R->evclk = c;
        R->clkcap = nc;
    }
    return 0;
}

int cpb_race_event_record(cpb_ctx *ctx, int stream, int ev)
{
    struct cpb_race *R = ctx->race;
    if (!R) return CPB_OK;
    const int n = ctx->nstreams;
    if (event_room(R, ev, n)) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "race check: out of host memory");
    /* an id recorded again (cpb_race_reset) takes new room: the old values stay unread */
    R->ev_at[ev] = R->nclk;
    R->ev_n[ev] = (uint8_t)n;
    memcpy(R->evclk + R->nclk, R->vc[stream], (size_t)n * sizeof *R->evclk);
    R->nclk += n;
    if (ev >= R->nev) R->nev = ev + 1;
    return CPB_OK;
}

int cpb_race_stream_wait(cpb_ctx *ctx, int stream, int ev)
{
    struct cpb_race *R = ctx->race;
    if (!R) return CPB_OK;
    if (ev < 0 || ev >= R->nev)
        return cpb_fail(ctx, CPB_ERR_INVALID, "stream wait on an event (%d) that was never recorded", ev);
    const int64_t *clk = R->evclk + R->ev_at[ev];
    for (int s = 0; s < R->ev_n[ev]; s++)
        if (clk[s] > R->vc[stream][s]) {
            R->vc[stream][s] = clk[s];
            R->least_ok &= ~(1u << s);
        }
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
    R->least_ok = 0;
}

void cpb_race_buf_free(cpb_ctx *ctx, cpb_buf *b)
{
    bufrace *br = b->race;
    if (!br) return;
    b->race = NULL;
    if (!ctx->race) {
        bufrace_delete(br);
        return;
    }
    /* emptied as calloc would leave it (a list without live records has n = 0), into the pool */
    for (uint32_t u = br->used; u; u &= u - 1) br->s[__builtin_ctz(u)].head = br->s[__builtin_ctz(u)].n = 0;
    br->used = 0;
    br->seq = 0;
    br->next_free = ctx->race->pool;
    ctx->race->pool = br;
}
