/* timeline.c — replay the traces of a world's replayed ranks on per-stream timelines
 * (timeline.h).
 *
 * The replayed ranks are 0 .. period-1 (sim_world.h): every rank when the world's period
 * is its size, else one rank per class of ranks that are alike by symmetry.  Rank m
 * behaves as rank m % period moved by (m / period) * period: its arrival at a collective
 * of group g is its representative's arrival at the collective of the moved-back group,
 * with the same sequence number.  The timing rules see only what such a move keeps (the
 * ops, the bytes, which ranks share a node), so the two are equal exactly, and ranks that
 * are not replayed cost nothing.
 *
 * Replayed ranks advance together: each rank's cursor moves through its trace in program
 * order until it reaches a collective whose members have not all arrived; the computed
 * times depend only on the dependencies (stream order, events, collective arrivals), not
 * on the order in which the replay visits ranks.  When no cursor can move, the traces do
 * not match (a collective some member never issues) and the replay reports who waits
 * where.
 *
 * Each entry remembers which entry's end set its start (the previous entry on its stream,
 * an event's producer, or the last member to arrive at its collective), so the critical
 * path can be walked back from the last entry and its time split by what kind of work
 * lies on it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll_time.h"
#include "pcie_share.h"
#include "op_memo.h"
#include "timeline.h"

/* an entry of the replay: replayed rank << ID_SHIFT | index in its trace; -1 none */
#define ID_SHIFT 40
#define ID_OF(r, i) (((int64_t)(r) << ID_SHIFT) | (int64_t)(i))
#define ID_RANK(id) ((int)((id) >> ID_SHIFT))
#define ID_IDX(id) ((id) & (((int64_t)1 << ID_SHIFT) - 1))

/* the entry indices of one replayed rank's collectives on one group, by sequence number */
typedef struct coll_index {
    int64_t *idx; /* [n]: -1 where the rank issues no such collective */
    int64_t n;
} coll_index;

typedef struct rstate {
    int64_t cur;
    int waiting;     /* arrived at the collective at cur */
    int scan;        /* members of that collective already seen arrived ... */
    double scan_beg, scan_bytes; /* ... the latest arrival and largest bytes among them */
    int64_t scan_src;
    double sf[CPB_MAX_STREAMS];     /* when each stream is free ... */
    int64_t sfsrc[CPB_MAX_STREAMS]; /* ... and the entry whose end made it so */
    double *ev;      /* [nevents] completion time of each recorded event ... */
    int64_t *evsrc;  /* ... and its producer */
    double busy[CPB_MAX_STREAMS];
    double fwd_end, bwd_end, last_end;
    int64_t last_id;
    double comm, pcie;
    double *t0, *t1; /* [n] start/end of each entry (copies: PCIe sharing) */
    double *arr;     /* [n] collectives: arrival time (the stream's free time) ... */
    int64_t *arrsrc; /* ... and the entry that set it */
    int64_t *pred;   /* [n] the entry whose end set this entry's start */
    int64_t *copies[2]; /* timed host<->device copies (H2D, D2H): their entry indices ... */
    int64_t ncopies[2]; /* ... and how many (the PCIe sharing looks at these alone) */
} rstate;

/* A group collective's completion, once one replayed member has seen every member arrive:
 * the latest arrival (the first such member in group order), the entry that set it and
 * the largest bytes.  Every replayed member of the group waits for the same arrivals, so
 * the others take it from here instead of scanning the whole group again (P scans of a
 * world-sized group per collective made the replay cost P x C per collective). */
typedef struct coll_done {
    int64_t seq;     /* -1: not complete yet */
    double beg, bytes;
    int64_t src;
} coll_done;

typedef struct replay {
    cpb_sim_world *w;
    const cpb_sim_hw *hw;
    int P;           /* replayed ranks: 0 .. P-1 */
    int K;           /* world / P: how many ranks each replayed one stands for */
    int gpn;         /* GPUs per node */
    rstate *rs;      /* [P] */
    coll_index *cix; /* [P * ngroups] */
    int **sorted;    /* [ngroups] each group's members in ascending order */
    int *img;        /* [ngroups * K] group moved back by k * P (-2: not looked up yet, -1: none) */
    coll_done **done; /* [ngroups][nseq[g]] completions by group and sequence number */
    int64_t *nseq;
    int *ghash;      /* open addressing table of group indices by (member set, occurrence) */
    int ghash_cap;
    cpb_op_memo memo; /* the ops' times (op_memo.h) */
    char *err;
    size_t err_len;
} replay;

/* ---------------------------------------------------------------- groups */

static uint64_t set_hash(const int *m, int n, int occurrence)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)occurrence;
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)(uint32_t)m[i];
        h *= 1099511628211ull;
    }
    return h;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* the group with these members (ascending) and this occurrence; -1 when none */
static int find_set(const replay *R, const int *m, int n, int occurrence)
{
    int cap = R->ghash_cap;
    for (int j = (int)(set_hash(m, n, occurrence) & (uint64_t)(cap - 1)); R->ghash[j] >= 0; j = (j + 1) & (cap - 1)) {
        const sim_group *g = &R->w->groups[R->ghash[j]];
        if (g->size == n && g->occurrence == occurrence && memcmp(R->sorted[R->ghash[j]], m, sizeof(int) * (size_t)n) == 0)
            return R->ghash[j];
    }
    return -1;
}

static int build_groups(replay *R)
{
    cpb_sim_world *w = R->w;
    int ng = w->ngroups;
    R->sorted = calloc((size_t)(ng > 0 ? ng : 1), sizeof *R->sorted);
    int cap = 16;
    while (cap < 2 * ng) cap *= 2;
    R->ghash = malloc(sizeof(int) * (size_t)cap);
    R->ghash_cap = cap;
    if (!R->sorted || !R->ghash) return CPB_ERR_NOMEM_HOST;
    for (int i = 0; i < cap; i++) R->ghash[i] = -1;
    for (int g = 0; g < ng; g++) {
        const sim_group *sg = &w->groups[g];
        R->sorted[g] = malloc(sizeof(int) * (size_t)(sg->size > 0 ? sg->size : 1));
        if (!R->sorted[g]) return CPB_ERR_NOMEM_HOST;
        memcpy(R->sorted[g], sg->ranks, sizeof(int) * (size_t)sg->size);
        qsort(R->sorted[g], (size_t)sg->size, sizeof(int), cmp_int);
        if (find_set(R, R->sorted[g], sg->size, sg->occurrence) >= 0) {
            if (R->P < w->world) {
                /* two communicators a move cannot tell apart: only a replay of every rank */
                snprintf(R->err, R->err_len, "symmetric replay: two groups of %d have the same members in different "
                         "orders; replay every rank", sg->size);
                return CPB_ERR_UNSUPPORTED;
            }
            continue; /* every rank replayed: groups are never looked up by members */
        }
        int j = (int)(set_hash(R->sorted[g], sg->size, sg->occurrence) & (uint64_t)(cap - 1));
        while (R->ghash[j] >= 0) j = (j + 1) & (cap - 1);
        R->ghash[j] = g;
    }
    if (R->K > 1) {
        R->img = malloc(sizeof(int) * (size_t)ng * (size_t)R->K);
        if (!R->img && ng > 0) return CPB_ERR_NOMEM_HOST;
        for (int64_t i = 0; i < (int64_t)ng * R->K; i++) R->img[i] = -2;
    }
    return CPB_OK;
}

/* group g with every member moved back by k * P ranks (modulo the world); -1 when the
 * world has no such group */
static int moved_back(replay *R, int g, int k)
{
    if (k == 0) return g;
    int *slot = &R->img[(int64_t)g * R->K + k];
    if (*slot != -2) return *slot;
    const sim_group *sg = &R->w->groups[g];
    int C = R->w->world, *m = malloc(sizeof(int) * (size_t)sg->size);
    if (!m) return -1;
    for (int i = 0; i < sg->size; i++) m[i] = ((sg->ranks[i] - k * R->P) % C + C) % C;
    qsort(m, (size_t)sg->size, sizeof(int), cmp_int);
    *slot = find_set(R, m, sg->size, sg->occurrence);
    free(m);
    return *slot;
}

static int is_member(const replay *R, int g, int rank)
{
    const int *m = R->sorted[g];
    return bsearch(&rank, m, (size_t)R->w->groups[g].size, sizeof(int), cmp_int) != NULL;
}

/* index every replayed rank's collectives by (group, sequence number) */
static int build_coll_index(replay *R)
{
    cpb_sim_world *w = R->w;
    int ng = w->ngroups;
    R->cix = calloc((size_t)(R->P > 0 ? R->P : 1) * (size_t)(ng > 0 ? ng : 1), sizeof *R->cix);
    R->done = calloc((size_t)(ng > 0 ? ng : 1), sizeof *R->done);
    R->nseq = calloc((size_t)(ng > 0 ? ng : 1), sizeof *R->nseq);
    if (!R->cix || !R->done || !R->nseq) return CPB_ERR_NOMEM_HOST;
    for (int r = 0; r < R->P; r++) {
        sim_trace *t = &w->traces[r];
        rstate *rs = &R->rs[r];
        int64_t ncap[2] = {0, 0};
        /* first guess of the PCIe shares: every GPU of the node copies at the same time
         * (symmetric schedules do), so such schedules settle after one pass; only
         * host<->device copies are timed by their share (op_time.c) */
        const int node0 = r / R->gpn * R->gpn, in_node = w->world - node0 < R->gpn ? w->world - node0 : R->gpn;
        for (int64_t i = 0; i < t->n; i++) {
            sim_entry *e = &t->e[i];
            if (e->type == SIM_OP && (e->pcie == SIM_PCIE_H2D || e->pcie == SIM_PCIE_D2H)) e->share = in_node;
            if (e->type == SIM_OP && (e->pcie == SIM_PCIE_H2D || e->pcie == SIM_PCIE_D2H) &&
                e->phase != SIM_PHASE_SETUP) {
                int d = e->pcie == SIM_PCIE_D2H;
                if (rs->ncopies[d] == ncap[d]) {
                    ncap[d] = ncap[d] ? 2 * ncap[d] : 64;
                    int64_t *nc = realloc(rs->copies[d], sizeof *nc * (size_t)ncap[d]);
                    if (!nc) return CPB_ERR_NOMEM_HOST;
                    rs->copies[d] = nc;
                }
                rs->copies[d][rs->ncopies[d]++] = i;
            }
            if (e->type != SIM_COLL) continue;
            if (e->seq >= R->nseq[e->group]) R->nseq[e->group] = e->seq + 1;
            coll_index *c = &R->cix[(int64_t)r * ng + e->group];
            if (e->seq >= c->n) {
                int64_t nn = c->n ? c->n : 16;
                while (nn <= e->seq) nn *= 2;
                int64_t *ni = realloc(c->idx, sizeof *ni * (size_t)nn);
                if (!ni) return CPB_ERR_NOMEM_HOST;
                for (int64_t j = c->n; j < nn; j++) ni[j] = -1;
                c->idx = ni;
                c->n = nn;
            }
            if (c->idx[e->seq] >= 0) {
                snprintf(R->err, R->err_len, "rank %d issues '%s' as collective %lld of its group twice", r,
                         cpb_sim_entry_name(w, e, (char[512]){0}, 512), (long long)e->seq);
                return CPB_ERR_INVALID;
            }
            c->idx[e->seq] = i;
        }
    }
    for (int g = 0; g < ng; g++) {
        if (R->nseq[g] <= 0) continue;
        R->done[g] = malloc(sizeof *R->done[g] * (size_t)R->nseq[g]);
        if (!R->done[g]) return CPB_ERR_NOMEM_HOST;
    }
    return CPB_OK;
}

static void clear_done(replay *R)
{
    for (int g = 0; g < R->w->ngroups; g++)
        for (int64_t q = 0; q < R->nseq[g]; q++) R->done[g][q].seq = -1;
}

/* ---------------------------------------------------------------- collectives */

/* What member m of group g (world rank) brings to collective seq: the replayed rank that
 * stands for it and the entry there.  *ready = 0 while that rank has not arrived. */
typedef struct member {
    int rep;
    int64_t idx;
    const sim_entry *e;
    double arr;
    int64_t src;
} member;

static int member_of(replay *R, int g, int64_t seq, int m, member *out, int *ready)
{
    *ready = 0;
    int rep = m % R->P, k = m / R->P, gb = moved_back(R, g, k);
    if (gb < 0) return CPB_OK; /* never arrives: the deadlock report names the waiter */
    const coll_index *c = &R->cix[(int64_t)rep * R->w->ngroups + gb];
    int64_t idx = seq < c->n ? c->idx[seq] : -1;
    if (idx < 0) return CPB_OK;
    const rstate *rs = &R->rs[rep];
    if (rs->cur < idx || (rs->cur == idx && !rs->waiting)) return CPB_OK;
    out->rep = rep;
    out->idx = idx;
    out->e = &R->w->traces[rep].e[idx];
    out->arr = rs->arr[idx];
    out->src = rs->arrsrc[idx];
    *ready = 1;
    return CPB_OK;
}

/* world rank of `peer` as seen by a member that stands in for it moved by k * P */
static int moved(const replay *R, int peer, int k)
{
    return (peer + k * R->P) % R->w->world;
}

static void take_latest(double *beg, int64_t *src, double arr, int64_t asrc)
{
    if (arr > *beg) {
        *beg = arr;
        *src = asrc;
    }
}

/* Try to complete rank r's send/recv at entry e (index idx): both peers must have
 * arrived.  *done = 1 with [*beg, *end) and the start's source when they have. */
static int try_sendrecv(replay *R, int r, const sim_entry *e, int64_t idx, int *done, double *beg, double *end,
                        int64_t *src)
{
    rstate *rs = &R->rs[r];
    *done = 0;
    if (!is_member(R, e->group, e->dst) || !is_member(R, e->group, e->src)) {
        snprintf(R->err, R->err_len, "sendrecv '%s' of rank %d names a peer outside its group",
                 cpb_sim_entry_name(R->w, e, (char[512]){0}, 512), r);
        return CPB_ERR_INVALID;
    }
    member md, ms;
    int rd, rsd;
    CPB_TRY(member_of(R, e->group, e->seq, e->dst, &md, &rd));
    CPB_TRY(member_of(R, e->group, e->seq, e->src, &ms, &rsd));
    if (!rd || !rsd) return CPB_OK;
    /* the peers' own peers, in world ranks */
    int kd = e->dst / R->P, ks = e->src / R->P;
    int d_src = md.e->src >= 0 ? moved(R, md.e->src, kd) : -1;
    int s_dst = ms.e->dst >= 0 ? moved(R, ms.e->dst, ks) : -1;
    if (md.e->kind != CPB_COLL_SENDRECV || ms.e->kind != CPB_COLL_SENDRECV || d_src != r || s_dst != r) {
        snprintf(R->err, R->err_len,
                 "sendrecv '%s': rank %d sends to %d and receives from %d, but %d receives from %d and %d sends to %d",
                 cpb_sim_entry_name(R->w, e, (char[512]){0}, 512), r, e->dst, e->src, e->dst, d_src, e->src, s_dst);
        return CPB_ERR_INVALID;
    }
    *beg = rs->arr[idx];
    *src = rs->arrsrc[idx];
    take_latest(beg, src, md.arr, md.src);
    take_latest(beg, src, ms.arr, ms.src);
    double bytes = e->bytes > ms.e->bytes ? e->bytes : ms.e->bytes;
    double t = e->phase == SIM_PHASE_SETUP ? 0.0 : sim_sendrecv_time(R->hw, r, e->dst, e->src, bytes);
    *end = *beg + t;
    *done = 1;
    return CPB_OK;
}

/* Try to complete rank r's group collective at entry e: every member must have arrived
 * (the scan resumes where it stopped). */
static int try_group(replay *R, int r, const sim_entry *e, int *done, double *beg, double *end, int64_t *src)
{
    rstate *rs = &R->rs[r];
    const sim_group *g = &R->w->groups[e->group];
    coll_done *cd = &R->done[e->group][e->seq];
    *done = 0;
    if (cd->seq == e->seq) {
        /* another replayed member saw every member arrive: the same scan's result */
        rs->scan_beg = cd->beg;
        rs->scan_src = cd->src;
        rs->scan_bytes = cd->bytes;
        rs->scan = g->size;
    }
    for (; rs->scan < g->size; rs->scan++) {
        int m = g->ranks[rs->scan], ready;
        member x;
        CPB_TRY(member_of(R, e->group, e->seq, m, &x, &ready));
        if (!ready) return CPB_OK;
        if (x.e->kind != e->kind) {
            snprintf(R->err, R->err_len,
                     "collective mismatch in a group of %d (sequence %lld): rank %d issues %s ('%s'), rank %d issues %s ('%s')",
                     g->size, (long long)e->seq, r, cpb_coll_kind_name(e->kind), cpb_sim_entry_name(R->w, e, (char[512]){0}, 512), m,
                     cpb_coll_kind_name(x.e->kind), cpb_sim_entry_name(R->w, x.e, (char[512]){0}, 512));
            return CPB_ERR_INVALID;
        }
        if (rs->scan == 0 || x.arr > rs->scan_beg) {
            rs->scan_beg = x.arr;
            rs->scan_src = x.src;
        }
        if (x.e->bytes > rs->scan_bytes) rs->scan_bytes = x.e->bytes;
    }
    if (cd->seq != e->seq) *cd = (coll_done){e->seq, rs->scan_beg, rs->scan_bytes, rs->scan_src};
    *beg = rs->scan_beg;
    *src = rs->scan_src;
    double t = e->phase == SIM_PHASE_SETUP ? 0.0 : sim_group_coll_time(R->hw, e->kind, g, rs->scan_bytes);
    *end = *beg + t;
    *done = 1;
    return CPB_OK;
}

/* ---------------------------------------------------------------- the replay */

static void finish(rstate *r, const sim_entry *e, int64_t id, double beg, double end, int64_t pred)
{
    int64_t idx = ID_IDX(id);
    r->sf[e->stream] = end;
    r->sfsrc[e->stream] = id;
    r->busy[e->stream] += end - beg;
    r->t0[idx] = beg;
    r->t1[idx] = end;
    r->pred[idx] = pred;
    if (e->phase == SIM_PHASE_FWD && end > r->fwd_end) r->fwd_end = end;
    if (e->phase == SIM_PHASE_BWD && end > r->bwd_end) r->bwd_end = end;
    if (end > r->last_end) {
        r->last_end = end;
        r->last_id = id;
    }
}

/* advance replayed rank r as far as it can; *moved = entries done */
static int advance(replay *R, int r, int64_t *moved_n)
{
    sim_trace *t = &R->w->traces[r];
    rstate *rs = &R->rs[r];
    *moved_n = 0;
    while (rs->cur < t->n) {
        int64_t idx = rs->cur, id = ID_OF(r, idx);
        sim_entry *e = &t->e[idx];
        double *sf = rs->sf;
        int64_t *ss = rs->sfsrc;
        switch (e->type) {
        case SIM_OP: {
            double d = cpb_op_memo_time(&R->memo, R->hw, e);
            finish(rs, e, id, sf[e->stream], sf[e->stream] + d, ss[e->stream]);
            if ((e->pcie == SIM_PCIE_H2D || e->pcie == SIM_PCIE_D2H) && e->phase != SIM_PHASE_SETUP) rs->pcie += e->bytes / 2.0;
            break;
        }
        case SIM_RECORD:
            rs->ev[e->ev] = sf[e->stream];
            rs->evsrc[e->ev] = ss[e->stream];
            break;
        case SIM_WAIT:
            if (rs->ev[e->ev] > sf[e->stream]) {
                sf[e->stream] = rs->ev[e->ev];
                ss[e->stream] = rs->evsrc[e->ev];
            }
            break;
        case SIM_SYNC: {
            double m = 0;
            int64_t src = -1;
            for (int s = 0; s < CPB_MAX_STREAMS; s++)
                if (sf[s] > m) m = sf[s], src = ss[s];
            for (int s = 0; s < CPB_MAX_STREAMS; s++) sf[s] = m, ss[s] = src;
            break;
        }
        case SIM_COLL: {
            if (!rs->waiting) {
                rs->arr[idx] = sf[e->stream];
                rs->arrsrc[idx] = ss[e->stream];
                rs->waiting = 1;
                rs->scan = 0;
                rs->scan_beg = 0;
                rs->scan_bytes = 0;
                rs->scan_src = -1;
            }
            int done = 0;
            double beg = 0, end = 0;
            int64_t src = -1;
            if (e->kind == CPB_COLL_SENDRECV) CPB_TRY(try_sendrecv(R, r, e, idx, &done, &beg, &end, &src));
            else CPB_TRY(try_group(R, r, e, &done, &beg, &end, &src));
            if (!done) return CPB_OK; /* blocked until the last member arrives */
            rs->waiting = 0;
            /* the stream was held from arrival; the transfer itself is beg..end */
            finish(rs, e, id, beg, end, src);
            if (e->phase != SIM_PHASE_SETUP) rs->comm += e->bytes;
            break;
        }
        default:
            break;
        }
        rs->cur++;
        (*moved_n)++;
    }
    return CPB_OK;
}

static void deadlock_msg(replay *R)
{
    size_t len = (size_t)snprintf(R->err, R->err_len,
                                  "collectives do not match across ranks (the replay cannot go on):");
    for (int r = 0; r < R->P && len < R->err_len; r++) {
        sim_trace *t = &R->w->traces[r];
        if (R->rs[r].cur >= t->n) continue;
        sim_entry *e = &t->e[R->rs[r].cur];
        len += (size_t)snprintf(R->err + len, R->err_len - len, " rank %d waits in %s '%s' (group of %d, #%lld);", r,
                                cpb_coll_kind_name(e->kind), cpb_sim_entry_name(R->w, e, (char[512]){0}, 512),
                                R->w->groups[e->group].size, (long long)e->seq);
    }
}

static void free_ranks(replay *R)
{
    if (!R->rs) return;
    for (int r = 0; r < R->P; r++) {
        rstate *s = &R->rs[r];
        free(s->ev), free(s->evsrc), free(s->t0), free(s->t1), free(s->arr), free(s->arrsrc), free(s->pred);
        free(s->copies[0]), free(s->copies[1]);
    }
    free(R->rs);
    R->rs = NULL;
}

static void free_all(replay *R)
{
    free_ranks(R);
    if (R->cix) {
        for (int64_t i = 0; i < (int64_t)R->P * R->w->ngroups; i++) free(R->cix[i].idx);
        free(R->cix);
    }
    if (R->sorted) {
        for (int g = 0; g < R->w->ngroups; g++) free(R->sorted[g]);
        free(R->sorted);
    }
    if (R->done)
        for (int g = 0; g < R->w->ngroups; g++) free(R->done[g]);
    free(R->done);
    free(R->nseq);
    free(R->img);
    free(R->ghash);
}

static int alloc_ranks(replay *R)
{
    R->rs = calloc((size_t)R->P, sizeof *R->rs);
    if (!R->rs) return CPB_ERR_NOMEM_HOST;
    for (int r = 0; r < R->P; r++) {
        sim_trace *t = &R->w->traces[r];
        rstate *s = &R->rs[r];
        size_t ne = (size_t)(t->nevents > 0 ? t->nevents : 1), n = (size_t)(t->n > 0 ? t->n : 1);
        s->ev = malloc(ne * sizeof(double));
        s->evsrc = malloc(ne * sizeof(int64_t));
        s->t0 = malloc(n * sizeof(double));
        s->t1 = malloc(n * sizeof(double));
        s->arr = malloc(n * sizeof(double));
        s->arrsrc = malloc(n * sizeof(int64_t));
        s->pred = malloc(n * sizeof(int64_t));
        if (!s->ev || !s->evsrc || !s->t0 || !s->t1 || !s->arr || !s->arrsrc || !s->pred) return CPB_ERR_NOMEM_HOST;
    }
    return CPB_OK;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* one replay of every replayed trace with the current PCIe shares */
static int one_pass(replay *R)
{
    for (int r = 0; r < R->P; r++) {
        rstate *s = &R->rs[r];
        sim_trace *t = &R->w->traces[r];
        double *keep[7] = {s->ev, (double *)s->evsrc, s->t0, s->t1, s->arr, (double *)s->arrsrc, (double *)s->pred};
        int64_t *cp[2] = {s->copies[0], s->copies[1]}, ncp[2] = {s->ncopies[0], s->ncopies[1]};
        memset(s, 0, sizeof *s);
        s->copies[0] = cp[0], s->copies[1] = cp[1], s->ncopies[0] = ncp[0], s->ncopies[1] = ncp[1];
        s->ev = keep[0], s->evsrc = (int64_t *)keep[1], s->t0 = keep[2], s->t1 = keep[3], s->arr = keep[4];
        s->arrsrc = (int64_t *)keep[5], s->pred = (int64_t *)keep[6];
        for (int k = 0; k < CPB_MAX_STREAMS; k++) s->sfsrc[k] = -1;
        for (int k = 0; k < t->nevents; k++) s->ev[k] = 0, s->evsrc[k] = -1;
        s->last_id = -1;
    }
    clear_done(R);
    for (int64_t round = 1;; round++) {
        int64_t total = 0, left = 0;
        if (R->w->deadline > 0 && (round == 1 || round % 64 == 0) && now_s() > R->w->deadline) {
            R->w->timed_out = 1;
            snprintf(R->err, R->err_len, "timing model: past the deadline (--timeout) in its replay");
            return CPB_ERR_UNSUPPORTED;
        }
        for (int r = 0; r < R->P; r++) {
            int64_t moved_n;
            CPB_TRY(advance(R, r, &moved_n));
            total += moved_n;
            left += R->w->traces[r].n - R->rs[r].cur;
        }
        if (left == 0) return CPB_OK;
        if (total == 0) {
            deadlock_msg(R);
            return CPB_ERR_INVALID;
        }
    }
}

/* Recompute the PCIe shares from the pass just done, per node and direction: the copies
 * of every rank of a node that holds a replayed rank, each rank as its representative
 * (counted as often as it stands for a rank of the node). */
static int update_shares(replay *R, double *max_change)
{
    cpb_sim_world *w = R->w;
    int gpn = R->hw->gpus_per_node > 0 ? R->hw->gpus_per_node : 8;
    int64_t n = 0;
    for (int r = 0; r < R->P; r++) n += R->rs[r].ncopies[0] + R->rs[r].ncopies[1];
    *max_change = 0;
    if (n == 0) return CPB_OK; /* no timed copies: nothing shares the link */
    sim_copy *c = malloc(sizeof *c * (size_t)(n > 0 ? n : 1));
    int *count = calloc((size_t)R->P, sizeof *count);
    if (!c || !count) {
        free(c), free(count);
        return CPB_ERR_NOMEM_HOST;
    }
    *max_change = 0;
    for (int node0 = 0; node0 < R->P; node0 += gpn) {
        memset(count, 0, sizeof *count * (size_t)R->P);
        for (int m = node0; m < node0 + gpn && m < w->world; m++) count[m % R->P]++;
        for (int dir = SIM_PCIE_H2D; dir <= SIM_PCIE_D2H; dir++) {
            int64_t k = 0;
            for (int r = 0; r < R->P; r++) {
                if (!count[r]) continue;
                sim_trace *t = &w->traces[r];
                const rstate *rs = &R->rs[r];
                const int d = dir == SIM_PCIE_D2H;
                for (int64_t j = 0; j < rs->ncopies[d]; j++) {
                    const int64_t i = rs->copies[d][j];
                    c[k++] = (sim_copy){rs->t0[i], rs->t1[i], &t->e[i], count[r]};
                }
            }
            double ch;
            if (sim_pcie_shares(c, k, &ch)) {
                free(c), free(count);
                return CPB_ERR_NOMEM_HOST;
            }
            if (ch > *max_change) *max_change = ch;
        }
    }
    free(c), free(count);
    return CPB_OK;
}

/* walk the critical path back from the last entry of the slowest rank */
static void critical_path(replay *R, int slow, cpb_sim_timing *out)
{
    int64_t id = R->rs[slow].last_id, steps = 0, limit = 0;
    for (int r = 0; r < R->P; r++) limit += R->w->traces[r].n;
    while (id >= 0 && steps++ <= limit) {
        int r = ID_RANK(id);
        int64_t i = ID_IDX(id);
        const sim_entry *e = &R->w->traces[r].e[i];
        double d = R->rs[r].t1[i] - R->rs[r].t0[i];
        if (e->phase != SIM_PHASE_SETUP && d > 0) {
            if (e->type == SIM_COLL) {
                out->crit_s[CPB_SIM_CRIT_COMM] += d;
                out->crit_coll_s[e->kind < CPB_COLL_KIND_COUNT ? e->kind : 0] += d;
            } else if (e->pcie != SIM_PCIE_NONE) {
                out->crit_s[CPB_SIM_CRIT_HOST] += d;
            } else {
                out->crit_s[CPB_SIM_CRIT_COMPUTE] += d;
            }
        }
        id = R->rs[r].pred[i];
    }
}

static void collect(replay *R, cpb_sim_timing *out)
{
    cpb_sim_world *w = R->w;
    int slow = 0;
    for (int r = 0; r < R->P; r++) {
        rstate *rs = &R->rs[r];
        if (rs->fwd_end > out->fwd_s) out->fwd_s = rs->fwd_end;
        double end = rs->fwd_end > rs->bwd_end ? rs->fwd_end : rs->bwd_end;
        if (end > out->step_s) out->step_s = end;
        if (rs->last_end > R->rs[slow].last_end) slow = r;
        if (rs->comm > out->comm_bytes) out->comm_bytes = rs->comm;
        if (rs->pcie > out->pcie_bytes) out->pcie_bytes = rs->pcie;
        out->entries += w->traces[r].n;
    }
    out->bwd_s = out->step_s - out->fwd_s;
    out->slowest_rank = slow;
    out->replayed_ranks = R->P;
    sim_trace *t = &w->traces[slow];
    out->nstreams = t->nstreams;
    memcpy(out->stream_names, t->stream_names, sizeof out->stream_names);
    memcpy(out->busy_s, R->rs[slow].busy, sizeof out->busy_s);
    critical_path(R, slow, out);
}

int cpb_sim_timeline(cpb_sim_world *w, const cpb_sim_hw *hw, cpb_sim_timing *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    int P = w->period > 0 && w->period <= w->world && w->world % w->period == 0 ? w->period : w->world;
    replay R = {.w = w, .hw = hw, .P = P, .K = w->world / P, .gpn = hw->gpus_per_node > 0 ? hw->gpus_per_node : 8,
                .err = err, .err_len = err_len};
    /* the replay reads every entry in place: the replicated runs of the replayed ranks are
     * stored now (sim_world.h) */
    int rc = CPB_OK;
    for (int r = 0; r < P && rc == CPB_OK; r++) rc = sim_trace_expand(&w->traces[r]);
    if (rc == CPB_OK) rc = build_groups(&R);
    if (rc == CPB_OK) rc = alloc_ranks(&R);
    if (rc == CPB_OK) rc = build_coll_index(&R);
    if (rc != CPB_OK) {
        if (rc == CPB_ERR_NOMEM_HOST) snprintf(err, err_len, "timing model: out of host memory");
        free_all(&R);
        return rc;
    }
    /* (the first guess of the PCIe shares is set by build_coll_index) */
    /* PCIe sharing: replay, re-estimate each copy's share from the overlaps, replay again
     * until the shares move by less than 1e-3 (a few passes; 20 at most) */
    for (int pass = 1; pass <= 20; pass++) {
        rc = one_pass(&R);
        if (rc != CPB_OK) break;
        out->passes = pass;
        double ch = 0;
        rc = update_shares(&R, &ch);
        if (rc != CPB_OK) {
            snprintf(err, err_len, "timing model: out of host memory");
            break;
        }
        if (ch < 1e-3 || pass == 20) {
            collect(&R, out);
            break;
        }
    }
    free_all(&R);
    return rc;
}

void cpb_sim_lower_bound(const cpb_sim_world *w, const cpb_sim_hw *hw, int r, double *fwd_s, double *step_s)
{
    double fwd[CPB_MAX_STREAMS] = {0}, all[CPB_MAX_STREAMS] = {0};
    const sim_trace *t = &w->traces[r];
    cpb_op_memo *memo = calloc(1, sizeof *memo);
    *fwd_s = *step_s = 0;
    sim_iter it; /* with the replicated runs, stored or not (sim_world.h) */
    sim_iter_start(&it, t);
    for (const sim_entry *e; (e = sim_iter_next(&it));) {
        if (e->phase == SIM_PHASE_SETUP || e->stream < 0 || e->stream >= CPB_MAX_STREAMS) continue;
        double d = 0;
        if (e->type == SIM_OP) {
            sim_entry x = *e;
            x.share = 1.0; /* no other GPU copying: the link's full bandwidth */
            d = memo ? cpb_op_memo_time(memo, hw, &x) : cpb_sim_op_time(hw, &x);
        } else if (e->type == SIM_COLL) {
            d = e->kind == CPB_COLL_SENDRECV ? sim_sendrecv_time(hw, r, e->dst, e->src, e->bytes)
                                             : sim_group_coll_time(hw, e->kind, &w->groups[e->group], e->bytes);
        }
        all[e->stream] += d;
        if (e->phase == SIM_PHASE_FWD) fwd[e->stream] += d;
    }
    free(memo);
    for (int s = 0; s < CPB_MAX_STREAMS; s++) {
        if (fwd[s] > *fwd_s) *fwd_s = fwd[s];
        if (all[s] > *step_s) *step_s = all[s];
    }
}
