/* sim_record.c — name interning, group table and trace growth for the simulator. */
#include <stdlib.h>
#include <string.h>

#include "sim_record.h"

/* A hash of the name for the table's index only (indices are handed out in order of first
 * sight, so the hash changes no result): eight bytes at a time, multiplied and folded,
 * where a byte-at-a-time FNV-1a's chain of a multiplication per byte made the interning of
 * every collective's name (some sixty bytes of range path) a twentieth of a large point */
static uint64_t hash_str(const char *s)
{
    const size_t n = strlen(s);
    uint64_t h = 1469598103934665603ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
    }
    uint64_t w = 0;
    memcpy(&w, s + i, n - i);
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 32);
}

static int rehash(cpb_sim_world *w, int cap)
{
    int *t = malloc(sizeof(int) * (size_t)cap);
    if (!t) return -1;
    for (int i = 0; i < cap; i++) t[i] = -1;
    for (int i = 0; i < w->nnames; i++) {
        int j = (int)(hash_str(w->names[i]) & (uint64_t)(cap - 1));
        while (t[j] >= 0) j = (j + 1) & (cap - 1);
        t[j] = i;
    }
    free(w->name_hash);
    w->name_hash = t;
    w->name_hash_cap = cap;
    return 0;
}

/* The names' storage: chunks filled in order, never moved (names[] points into them).  A
 * strdup per name scattered them over the heap, and every rank after the first looks up
 * each of its collectives' names there (a cache miss each: a twentieth of a large point) */
typedef struct sim_name_chunk {
    struct sim_name_chunk *next;
    size_t used, cap;
    char data[];
} sim_name_chunk;

enum { NAME_CHUNK_BYTES = 1 << 20 };

static char *name_store(cpb_sim_world *w, const char *name)
{
    const size_t n = strlen(name) + 1;
    sim_name_chunk *c = w->name_chunks;
    if (!c || c->cap - c->used < n) {
        const size_t cap = n > NAME_CHUNK_BYTES ? n : NAME_CHUNK_BYTES;
        c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->next = w->name_chunks;
        c->used = 0;
        c->cap = cap;
        w->name_chunks = c;
    }
    char *copy = c->data + c->used;
    memcpy(copy, name, n);
    c->used += n;
    return copy;
}

void sim_names_free(cpb_sim_world *w)
{
    while (w->name_chunks) {
        sim_name_chunk *c = w->name_chunks;
        w->name_chunks = c->next;
        free(c);
    }
    free(w->names);
    free(w->name_hash);
    w->names = NULL;
    w->name_hash = NULL;
    w->nnames = w->namecap = w->name_hash_cap = 0;
}

int sim_intern(cpb_sim_world *w, const char *name)
{
    /* keep the table at most half full so probes stay short */
    if (2 * (w->nnames + 1) > w->name_hash_cap &&
        rehash(w, w->name_hash_cap ? 2 * w->name_hash_cap : 1024))
        return -1;
    int cap = w->name_hash_cap;
    int j = (int)(hash_str(name) & (uint64_t)(cap - 1));
    while (w->name_hash[j] >= 0) {
        if (strcmp(w->names[w->name_hash[j]], name) == 0) return w->name_hash[j];
        j = (j + 1) & (cap - 1);
    }
    if (w->nnames == w->namecap) {
        int nc = w->namecap ? 2 * w->namecap : 256;
        char **nn = realloc(w->names, sizeof(char *) * (size_t)nc);
        if (!nn) return -1;
        w->names = nn;
        w->namecap = nc;
    }
    char *copy = name_store(w, name);
    if (!copy) return -1;
    w->names[w->nnames] = copy;
    w->name_hash[j] = w->nnames;
    return w->nnames++;
}

/* 1 when name i is `name` */
static int name_is(const cpb_sim_world *w, int i, const char *name)
{
    return i >= 0 && i < w->nnames && strcmp(w->names[i], name) == 0;
}

int sim_intern_next(cpb_sim_world *w, const char *name, int *cursor)
{
    /* the next name, or the previous one again (a step's collectives often share a name) */
    int i = *cursor;
    if (!name_is(w, i, name)) i = name_is(w, i - 1, name) ? i - 1 : sim_intern(w, name);
    if (i >= 0) *cursor = i + 1;
    return i;
}

int sim_group_find_or_add(cpb_sim_world *w, int n, const int *ranks, int occurrence)
{
    int seen = 0;
    for (int i = 0; i < w->ngroups; i++)
        if (w->groups[i].size == n && memcmp(w->groups[i].ranks, ranks, sizeof(int) * (size_t)n) == 0 &&
            seen++ == occurrence)
            return i;
    if (w->ngroups == w->gcap) {
        int nc = w->gcap ? 2 * w->gcap : 16;
        sim_group *ng = realloc(w->groups, sizeof *ng * (size_t)nc);
        if (!ng) return -1;
        w->groups = ng;
        w->gcap = nc;
    }
    int *copy = malloc(sizeof(int) * (size_t)n);
    if (!copy) return -1;
    memcpy(copy, ranks, sizeof(int) * (size_t)n);
    w->groups[w->ngroups].size = n;
    w->groups[w->ngroups].ranks = copy;
    w->groups[w->ngroups].occurrence = seen;
    return w->ngroups++;
}

int sim_trace_reserve(sim_trace *t, int64_t n)
{
    if (n <= t->cap) return 0;
    /* realloc: a large trace's block is mapped on its own, and realloc moves its pages
     * (mremap) rather than copying them */
    int64_t nc = t->cap ? t->cap : 1024;
    while (nc < n) nc *= 2;
    sim_entry *ne = realloc(t->e, sizeof *ne * (size_t)nc);
    if (!ne) return -1;
    t->e = ne;
    t->cap = nc;
    return 0;
}

void sim_trace_free(sim_trace *t)
{
    free(t->e);
    free(t->reps);
    t->e = NULL;
    t->reps = NULL;
    t->n = t->cap = t->extra = 0;
    t->nreps = t->repcap = 0;
}

sim_entry *sim_trace_push(sim_trace *t, int type)
{
    if (t->n == t->cap && sim_trace_reserve(t, t->n + 1) != 0) return NULL;
    sim_entry *e = &t->e[t->n++];
    memset(e, 0, sizeof *e);
    e->type = (uint8_t)type;
    e->name = -1;
    if (type == SIM_COLL) e->dst = e->src = e->root = e->rn_rule = -1;
    else if (type == SIM_OP) e->share = 1.0;
    return e;
}
