/* alloc_reserve.c — PyTorch's CUDA caching allocator, replayed on a sequence of events
 * (alloc_reserve.h states the rules and where they were read).  Blocks live in one array,
 * linked to their neighbours within a segment; a search is a scan (the sequences the
 * model scope replays have tens of events, the tests a few thousand at most). */
#include "alloc_reserve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpb.h"

typedef struct blk {
    int64_t addr, size;
    int64_t requested;  /* the request it serves (allocated blocks) */
    int prev, next;     /* neighbours in the segment, -1 none */
    int seg;
    int allocated;
    int dead;           /* merged into a neighbour or released with its segment */
} blk;

typedef struct seg {
    int64_t size;
    int stream, small;
    int live;
} seg;

typedef struct state {
    blk *b;
    int nb, capb;
    seg *s;
    int ns, caps;
    int *owner;          /* tensor id -> its block, -1 when not allocated */
    int64_t next_addr;
    int64_t requested, allocated, reserved;
    int segments;
} state;

int64_t cpb_alloc_round_size(int64_t bytes)
{
    /* round_size: kMinBlockSize * ceil(size / kMinBlockSize), at least kMinBlockSize */
    if (bytes < CPB_ALLOC_MIN_BLOCK) return CPB_ALLOC_MIN_BLOCK;
    return CPB_ALLOC_MIN_BLOCK * ((bytes + CPB_ALLOC_MIN_BLOCK - 1) / CPB_ALLOC_MIN_BLOCK);
}

int64_t cpb_alloc_segment_size(int64_t rounded)
{
    /* get_allocation_size */
    if (rounded <= CPB_ALLOC_SMALL_SIZE) return CPB_ALLOC_SMALL_BUFFER;
    if (rounded < CPB_ALLOC_MIN_LARGE_ALLOC) return CPB_ALLOC_LARGE_BUFFER;
    return CPB_ALLOC_ROUND_LARGE * ((rounded + CPB_ALLOC_ROUND_LARGE - 1) / CPB_ALLOC_ROUND_LARGE);
}

static int new_block(state *st)
{
    if (st->nb == st->capb) {
        int cap = st->capb ? 2 * st->capb : 64;
        blk *b = realloc(st->b, (size_t)cap * sizeof *b);
        if (!b) return -1;
        st->b = b;
        st->capb = cap;
    }
    memset(&st->b[st->nb], 0, sizeof st->b[0]);
    st->b[st->nb].prev = st->b[st->nb].next = -1;
    return st->nb++;
}

static int new_segment(state *st, int64_t size, int stream, int small)
{
    if (st->ns == st->caps) {
        int cap = st->caps ? 2 * st->caps : 32;
        seg *s = realloc(st->s, (size_t)cap * sizeof *s);
        if (!s) return -1;
        st->s = s;
        st->caps = cap;
    }
    int k = new_block(st);
    if (k < 0) return -1;
    seg *g = &st->s[st->ns];
    g->size = size;
    g->stream = stream;
    g->small = small;
    g->live = 1;
    blk *b = &st->b[k];
    b->addr = st->next_addr;
    b->size = size;
    b->seg = st->ns++;
    st->next_addr += size;
    st->reserved += size;
    st->segments++;
    return k;
}

/* get_free_block: the smallest free block of the pool and stream that holds `size` */
static int best_fit(const state *st, int64_t size, int stream, int small)
{
    int best = -1;
    for (int i = 0; i < st->nb; i++) {
        const blk *b = &st->b[i];
        if (b->dead || b->allocated || b->size < size) continue;
        const seg *g = &st->s[b->seg];
        if (g->stream != stream || g->small != small) continue;
        if (best < 0 || b->size < st->b[best].size || (b->size == st->b[best].size && b->addr < st->b[best].addr))
            best = i;
    }
    return best;
}

/* release_cached_blocks: every free block that is its whole segment goes back to the device */
static void release_cached(state *st)
{
    for (int i = 0; i < st->nb; i++) {
        blk *b = &st->b[i];
        if (b->dead || b->allocated || b->prev >= 0 || b->next >= 0) continue;
        seg *g = &st->s[b->seg];
        st->reserved -= g->size;
        st->segments--;
        g->live = 0;
        b->dead = 1;
    }
}

/* try_merge_blocks: dst absorbs its free neighbour src */
static void merge(state *st, int dst, int src)
{
    if (src < 0) return;
    blk *d = &st->b[dst], *s = &st->b[src];
    if (s->allocated || s->dead) return;
    if (d->prev == src) {
        d->addr = s->addr;
        d->prev = s->prev;
        if (d->prev >= 0) st->b[d->prev].next = dst;
    } else {
        d->next = s->next;
        if (d->next >= 0) st->b[d->next].prev = dst;
    }
    d->size += s->size;
    s->dead = 1;
}

/* malloc: best fit, else a new segment (after releasing the cached whole segments when it
 * does not fit); then split.  *retried: release_cached_blocks ran */
static int do_alloc(state *st, const cpb_alloc_event *e, int64_t capacity, int *retried)
{
    const int64_t size = cpb_alloc_round_size(e->bytes);
    const int small = size <= CPB_ALLOC_SMALL_SIZE;
    *retried = 0;
    int k = best_fit(st, size, e->stream, small);
    if (k < 0) {
        const int64_t seg_size = cpb_alloc_segment_size(size);
        if (capacity > 0 && st->reserved + seg_size > capacity) {
            release_cached(st);
            *retried = 1;
            if (st->reserved + seg_size > capacity) return CPB_ERR_OOM;
        }
        k = new_segment(st, seg_size, e->stream, small);
        if (k < 0) return CPB_ERR_NOMEM_HOST;
    }
    /* should_split: small pool >= kMinBlockSize left, large pool > kSmallSize left */
    const int64_t rem = st->b[k].size - size;
    const int split = small ? rem >= CPB_ALLOC_MIN_BLOCK : rem > CPB_ALLOC_SMALL_SIZE;
    if (split) {
        int r = new_block(st);
        if (r < 0) return CPB_ERR_NOMEM_HOST;
        blk *b = &st->b[k], *t = &st->b[r];
        t->addr = b->addr + size;
        t->size = rem;
        t->seg = b->seg;
        t->prev = k;
        t->next = b->next;
        if (t->next >= 0) st->b[t->next].prev = r;
        b->next = r;
        b->size = size;
    }
    blk *b = &st->b[k];
    b->allocated = 1;
    b->requested = e->bytes;
    st->owner[e->id] = k;
    st->requested += e->bytes;
    st->allocated += b->size;
    return CPB_OK;
}

static void do_free(state *st, int id)
{
    int k = st->owner[id];
    st->owner[id] = -1;
    blk *b = &st->b[k];
    st->requested -= b->requested;
    st->allocated -= b->size;
    b->allocated = 0;
    b->requested = 0;
    /* free_block: merge with the free neighbours, then cached in the pool */
    int p = b->prev, n = b->next;
    merge(st, k, p);
    merge(st, k, n);
}

int cpb_alloc_replay_run(const cpb_alloc_event *ev, int n, int64_t capacity, cpb_alloc_replay *out, char *err,
                         size_t err_len)
{
    memset(out, 0, sizeof *out);
    out->failed_event = -1;
    if (n < 0 || (n > 0 && !ev)) {
        snprintf(err, err_len, "allocator replay: %d events given; pass an array of n >= 0 events", n);
        return CPB_ERR_INVALID;
    }
    state st;
    memset(&st, 0, sizeof st);
    st.owner = malloc((size_t)(n > 0 ? n : 1) * sizeof *st.owner);
    if (!st.owner) {
        snprintf(err, err_len, "allocator replay: out of host memory for %d events", n);
        return CPB_ERR_NOMEM_HOST;
    }
    for (int i = 0; i < n; i++) st.owner[i] = -2; /* -2: never allocated, -1: freed */
    int rc = CPB_OK;
    for (int i = 0; i < n && rc == CPB_OK; i++) {
        const cpb_alloc_event *e = &ev[i];
        if (e->op == CPB_ALLOC_EV_EMPTY_CACHE) {
            release_cached(&st);
        } else if (e->op != CPB_ALLOC_EV_ALLOC && e->op != CPB_ALLOC_EV_FREE) {
            snprintf(err, err_len, "allocator replay: event %d has op %d; use CPB_ALLOC_EV_ALLOC, _FREE or _EMPTY_CACHE",
                     i, e->op);
            rc = CPB_ERR_INVALID;
        } else if (e->id < 0 || e->id >= n) {
            snprintf(err, err_len, "allocator replay: event %d names tensor %d; ids run from 0 to the number of "
                     "events - 1 (%d)", i, e->id, n - 1);
            rc = CPB_ERR_INVALID;
        } else if (e->op == CPB_ALLOC_EV_ALLOC) {
            if (st.owner[e->id] != -2) {
                snprintf(err, err_len, "allocator replay: event %d allocates tensor %d again; give each allocation "
                         "a new id", i, e->id);
                rc = CPB_ERR_INVALID;
            } else if (e->bytes < 0) {
                snprintf(err, err_len, "allocator replay: event %d asks for %lld bytes; sizes are >= 0", i,
                         (long long)e->bytes);
                rc = CPB_ERR_INVALID;
            } else {
                int retried = 0;
                int a = do_alloc(&st, e, capacity, &retried);
                out->releases += retried;
                if (a == CPB_ERR_OOM) {
                    out->failed_event = i;
                    snprintf(err, err_len, "allocator replay: event %d (%lld bytes) does not fit %lld bytes even "
                             "after the cached segments are released", i, (long long)e->bytes, (long long)capacity);
                }
                if (a == CPB_ERR_NOMEM_HOST) snprintf(err, err_len, "allocator replay: out of host memory");
                rc = a;
            }
        } else {
            if (st.owner[e->id] < 0) {
                snprintf(err, err_len, "allocator replay: event %d frees tensor %d, which is not allocated", i, e->id);
                rc = CPB_ERR_INVALID;
            } else {
                do_free(&st, e->id);
            }
        }
        if (rc != CPB_OK) break;
        if (st.requested > out->peak_requested) {
            out->peak_requested = st.requested;
            out->allocated_at_peak = st.allocated;
            out->reserved_at_peak = st.reserved;
        }
        if (st.allocated > out->max_allocated) out->max_allocated = st.allocated;
        if (st.reserved > out->max_reserved) out->max_reserved = st.reserved;
    }
    /* cudaMalloc calls that succeeded: every segment made */
    out->segments_made = st.ns;
    out->segments = st.segments;
    out->reserved_end = st.reserved;
    free(st.b);
    free(st.s);
    free(st.owner);
    return rc;
}

static void push(cpb_alloc_seq *s, int op, int id, int64_t bytes, int stream)
{
    if (s->err) return;
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 32;
        cpb_alloc_event *e = realloc(s->ev, (size_t)cap * sizeof *e);
        if (!e) {
            s->err = 1;
            return;
        }
        s->ev = e;
        s->cap = cap;
    }
    s->ev[s->n++] = (cpb_alloc_event){.op = op, .id = id, .bytes = bytes, .stream = stream};
}

int cpb_alloc_seq_alloc(cpb_alloc_seq *s, int64_t bytes, int stream)
{
    int id = s->next_id++;
    push(s, CPB_ALLOC_EV_ALLOC, id, bytes, stream);
    return s->err ? -1 : id;
}

void cpb_alloc_seq_free(cpb_alloc_seq *s, int id)
{
    push(s, CPB_ALLOC_EV_FREE, id, 0, 0);
}

void cpb_alloc_seq_empty_cache(cpb_alloc_seq *s)
{
    push(s, CPB_ALLOC_EV_EMPTY_CACHE, 0, 0, 0);
}

void cpb_alloc_seq_release(cpb_alloc_seq *s)
{
    free(s->ev);
    memset(s, 0, sizeof *s);
}
