/* timeline.c — replay every rank's trace on per-stream timelines (timeline.h).
 *
 * Ranks are replayed together: each rank's cursor advances through its trace in program
 * order until it reaches a collective whose members have not all arrived; the computed
 * times depend only on the dependencies (stream order, events, collective arrivals), not
 * on the order in which the replay visits ranks.  When no cursor can move, the traces do
 * not match (a collective some member never issues) and the replay reports who waits
 * where. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_time.h"
#include "pcie_share.h"
#include "timeline.h"

/* the arrivals of the members of one collective (group, seq) */
typedef struct slot {
    int arrived, done;
    double *arr;     /* [size] arrival time (the stream's free time) */
    int64_t *idx;    /* [size] the member's entry index */
    double *beg, *end; /* [size] when the transfer starts and ends for the member */
} slot;

typedef struct gstate {
    slot *s;
    int64_t cap;
} gstate;

typedef struct rstate {
    int64_t cur;
    int waiting;     /* arrived at the collective at cur */
    double sf[CPB_MAX_STREAMS]; /* when each stream is free */
    double *ev;      /* [nevents] completion time of each recorded event */
    double busy[CPB_MAX_STREAMS];
    double fwd_end, bwd_end, last_end;
    double comm, pcie;
    double *t0, *t1; /* [n] start/end of each entry (copies: PCIe sharing) */
} rstate;

typedef struct replay {
    cpb_sim_world *w;
    const cpb_sim_hw *hw;
    rstate *rs;
    gstate *gs;
    char *err;
    size_t err_len;
} replay;

static int member_pos(const sim_group *g, int rank)
{
    for (int i = 0; i < g->size; i++)
        if (g->ranks[i] == rank) return i;
    return -1;
}

static slot *get_slot(replay *R, int gi, int64_t seq)
{
    gstate *g = &R->gs[gi];
    if (seq >= g->cap) {
        int64_t nc = g->cap ? g->cap : 64;
        while (nc <= seq) nc *= 2;
        slot *ns = realloc(g->s, sizeof *ns * (size_t)nc);
        if (!ns) return NULL;
        memset(ns + g->cap, 0, sizeof *ns * (size_t)(nc - g->cap));
        g->s = ns;
        g->cap = nc;
    }
    slot *s = &g->s[seq];
    if (!s->arr) {
        int n = R->w->groups[gi].size;
        s->arr = calloc((size_t)n, sizeof *s->arr);
        s->idx = calloc((size_t)n, sizeof *s->idx);
        s->beg = calloc((size_t)n, sizeof *s->beg);
        s->end = calloc((size_t)n, sizeof *s->end);
        if (!s->arr || !s->idx || !s->beg || !s->end) return NULL;
    }
    return s;
}

static sim_entry *member_entry(replay *R, const sim_group *g, const slot *s, int pos)
{
    return &R->w->traces[g->ranks[pos]].e[s->idx[pos]];
}

/* every member has arrived: when does each one's transfer start and end */
static int complete(replay *R, int gi, slot *s, int64_t seq)
{
    const sim_group *g = &R->w->groups[gi];
    sim_entry *e0 = member_entry(R, g, s, 0);
    for (int i = 1; i < g->size; i++) {
        sim_entry *e = member_entry(R, g, s, i);
        if (e->kind != e0->kind) {
            snprintf(R->err, R->err_len,
                     "collective mismatch in a group of %d (sequence %lld): rank %d issues %s ('%s'), rank %d issues %s ('%s')",
                     g->size, (long long)seq, g->ranks[0], cpb_coll_kind_name(e0->kind),
                     cpb_sim_world_name(R->w, e0->name), g->ranks[i], cpb_coll_kind_name(e->kind),
                     cpb_sim_world_name(R->w, e->name));
            return CPB_ERR_INVALID;
        }
    }
    if (e0->kind == CPB_COLL_SENDRECV) {
        for (int i = 0; i < g->size; i++) {
            sim_entry *e = member_entry(R, g, s, i);
            int pd = member_pos(g, e->dst), ps = member_pos(g, e->src);
            if (pd < 0 || ps < 0) {
                snprintf(R->err, R->err_len, "sendrecv '%s' of rank %d names a peer outside its group",
                         cpb_sim_world_name(R->w, e->name), g->ranks[i]);
                return CPB_ERR_INVALID;
            }
            sim_entry *ed = member_entry(R, g, s, pd), *es = member_entry(R, g, s, ps);
            if (ed->src != g->ranks[i] || es->dst != g->ranks[i]) {
                snprintf(R->err, R->err_len,
                         "sendrecv '%s': rank %d sends to %d and receives from %d, but %d receives from %d and %d sends to %d",
                         cpb_sim_world_name(R->w, e->name), g->ranks[i], e->dst, e->src, e->dst, ed->src,
                         e->src, es->dst);
                return CPB_ERR_INVALID;
            }
            double beg = s->arr[i];
            if (s->arr[pd] > beg) beg = s->arr[pd];
            if (s->arr[ps] > beg) beg = s->arr[ps];
            double bytes = e->bytes > es->bytes ? e->bytes : es->bytes;
            double t = e->phase == SIM_PHASE_SETUP ? 0.0
                                                   : sim_sendrecv_time(R->hw, g->ranks[i], e->dst, e->src, bytes);
            s->beg[i] = beg;
            s->end[i] = beg + t;
        }
    } else {
        double beg = 0, bytes = 0;
        for (int i = 0; i < g->size; i++) {
            sim_entry *e = member_entry(R, g, s, i);
            if (s->arr[i] > beg) beg = s->arr[i];
            if (e->bytes > bytes) bytes = e->bytes;
        }
        double t = e0->phase == SIM_PHASE_SETUP ? 0.0 : sim_group_coll_time(R->hw, e0->kind, g, bytes);
        for (int i = 0; i < g->size; i++) {
            s->beg[i] = beg;
            s->end[i] = beg + t;
        }
    }
    s->done = 1;
    return CPB_OK;
}

static void finish(rstate *r, const sim_entry *e, int64_t idx, double beg, double end)
{
    r->sf[e->stream] = end;
    r->busy[e->stream] += end - beg;
    r->t0[idx] = beg;
    r->t1[idx] = end;
    if (e->phase == SIM_PHASE_FWD && end > r->fwd_end) r->fwd_end = end;
    if (e->phase == SIM_PHASE_BWD && end > r->bwd_end) r->bwd_end = end;
    if (end > r->last_end) r->last_end = end;
}

/* advance rank r as far as it can; *moved = entries done */
static int advance(replay *R, int r, int64_t *moved)
{
    sim_trace *t = &R->w->traces[r];
    rstate *rs = &R->rs[r];
    *moved = 0;
    while (rs->cur < t->n) {
        int64_t idx = rs->cur;
        sim_entry *e = &t->e[idx];
        double *sf = rs->sf;
        switch (e->type) {
        case SIM_OP: {
            double d = cpb_sim_op_time(R->hw, e);
            finish(rs, e, idx, sf[e->stream], sf[e->stream] + d);
            if ((e->pcie == SIM_PCIE_H2D || e->pcie == SIM_PCIE_D2H) && e->phase != SIM_PHASE_SETUP) rs->pcie += e->bytes / 2.0;
            break;
        }
        case SIM_RECORD:
            rs->ev[e->ev] = sf[e->stream];
            break;
        case SIM_WAIT:
            if (rs->ev[e->ev] > sf[e->stream]) sf[e->stream] = rs->ev[e->ev];
            break;
        case SIM_SYNC: {
            double m = 0;
            for (int s = 0; s < CPB_MAX_STREAMS; s++)
                if (sf[s] > m) m = sf[s];
            for (int s = 0; s < CPB_MAX_STREAMS; s++) sf[s] = m;
            break;
        }
        case SIM_COLL: {
            const sim_group *g = &R->w->groups[e->group];
            int me = member_pos(g, r);
            slot *s = get_slot(R, e->group, e->seq);
            if (!s) {
                snprintf(R->err, R->err_len, "timing model: out of host memory");
                return CPB_ERR_NOMEM_HOST;
            }
            if (!rs->waiting) {
                if (s->arr && s->done) {
                    snprintf(R->err, R->err_len, "rank %d issues '%s' as collective %lld of its group after the group completed it",
                             r, cpb_sim_world_name(R->w, e->name), (long long)e->seq);
                    return CPB_ERR_INVALID;
                }
                s->arr[me] = sf[e->stream];
                s->idx[me] = idx;
                s->arrived++;
                rs->waiting = 1;
                if (s->arrived == g->size) CPB_TRY(complete(R, e->group, s, e->seq));
            }
            if (!s->done) return CPB_OK; /* blocked until the last member arrives */
            rs->waiting = 0;
            finish(rs, e, idx, s->beg[me], s->end[me]);
            /* the stream was held from arrival; the transfer itself is beg..end */
            if (e->phase != SIM_PHASE_SETUP) rs->comm += e->bytes;
            break;
        }
        default:
            break;
        }
        rs->cur++;
        (*moved)++;
    }
    return CPB_OK;
}

static void deadlock_msg(replay *R)
{
    size_t len = (size_t)snprintf(R->err, R->err_len,
                                  "collectives do not match across ranks (the replay cannot go on):");
    for (int r = 0; r < R->w->world && len < R->err_len; r++) {
        sim_trace *t = &R->w->traces[r];
        if (R->rs[r].cur >= t->n) continue;
        sim_entry *e = &t->e[R->rs[r].cur];
        len += (size_t)snprintf(R->err + len, R->err_len - len, " rank %d waits in %s '%s' (group of %d, #%lld);", r,
                                cpb_coll_kind_name(e->kind), cpb_sim_world_name(R->w, e->name),
                                R->w->groups[e->group].size, (long long)e->seq);
    }
}

static void free_state(replay *R)
{
    if (R->gs) {
        for (int g = 0; g < R->w->ngroups; g++) {
            for (int64_t i = 0; i < R->gs[g].cap; i++) {
                slot *s = &R->gs[g].s[i];
                free(s->arr), free(s->idx), free(s->beg), free(s->end);
            }
            free(R->gs[g].s);
        }
        free(R->gs);
        R->gs = NULL;
    }
    if (R->rs) {
        for (int r = 0; r < R->w->world; r++) free(R->rs[r].ev), free(R->rs[r].t0), free(R->rs[r].t1);
        free(R->rs);
        R->rs = NULL;
    }
}

/* one replay of every trace with the current PCIe shares */
static int one_pass(replay *R)
{
    cpb_sim_world *w = R->w;
    R->rs = calloc((size_t)w->world, sizeof *R->rs);
    R->gs = calloc((size_t)(w->ngroups > 0 ? w->ngroups : 1), sizeof *R->gs);
    if (!R->rs || !R->gs) goto oom;
    for (int r = 0; r < w->world; r++) {
        sim_trace *t = &w->traces[r];
        R->rs[r].ev = calloc((size_t)(t->nevents > 0 ? t->nevents : 1), sizeof(double));
        R->rs[r].t0 = calloc((size_t)(t->n > 0 ? t->n : 1), sizeof(double));
        R->rs[r].t1 = calloc((size_t)(t->n > 0 ? t->n : 1), sizeof(double));
        if (!R->rs[r].ev || !R->rs[r].t0 || !R->rs[r].t1) goto oom;
    }
    for (;;) {
        int64_t total = 0, left = 0;
        for (int r = 0; r < w->world; r++) {
            int64_t moved;
            CPB_TRY(advance(R, r, &moved));
            total += moved;
            left += w->traces[r].n - R->rs[r].cur;
        }
        if (left == 0) return CPB_OK;
        if (total == 0) {
            deadlock_msg(R);
            return CPB_ERR_INVALID;
        }
    }
oom:
    snprintf(R->err, R->err_len, "timing model: out of host memory");
    return CPB_ERR_NOMEM_HOST;
}

/* recompute the PCIe shares from the pass just done, per node and direction */
static int update_shares(replay *R, double *max_change)
{
    cpb_sim_world *w = R->w;
    int gpn = R->hw->gpus_per_node > 0 ? R->hw->gpus_per_node : 8;
    int64_t n = 0;
    for (int r = 0; r < w->world; r++) n += w->traces[r].n;
    sim_copy *c = malloc(sizeof *c * (size_t)(n > 0 ? n : 1));
    if (!c) return CPB_ERR_NOMEM_HOST;
    *max_change = 0;
    for (int node0 = 0; node0 < w->world; node0 += gpn) {
        for (int dir = SIM_PCIE_H2D; dir <= SIM_PCIE_D2H; dir++) {
            int64_t m = 0;
            for (int r = node0; r < node0 + gpn && r < w->world; r++) {
                sim_trace *t = &w->traces[r];
                for (int64_t i = 0; i < t->n; i++)
                    if (t->e[i].type == SIM_OP && t->e[i].pcie == dir && t->e[i].phase != SIM_PHASE_SETUP)
                        c[m++] = (sim_copy){R->rs[r].t0[i], R->rs[r].t1[i], &t->e[i]};
            }
            double ch;
            if (sim_pcie_shares(c, m, &ch)) {
                free(c);
                return CPB_ERR_NOMEM_HOST;
            }
            if (ch > *max_change) *max_change = ch;
        }
    }
    free(c);
    return CPB_OK;
}

static void collect(replay *R, cpb_sim_timing *out)
{
    cpb_sim_world *w = R->w;
    int slow = 0;
    for (int r = 0; r < w->world; r++) {
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
    sim_trace *t = &w->traces[slow];
    out->nstreams = t->nstreams;
    memcpy(out->stream_names, t->stream_names, sizeof out->stream_names);
    memcpy(out->busy_s, R->rs[slow].busy, sizeof out->busy_s);
}

int cpb_sim_timeline(cpb_sim_world *w, const cpb_sim_hw *hw, cpb_sim_timing *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    replay R = {.w = w, .hw = hw, .err = err, .err_len = err_len};
    /* first guess: every GPU of the node copies at the same time (symmetric schedules do),
     * so such schedules settle after one pass */
    int gpn = hw->gpus_per_node > 0 ? hw->gpus_per_node : 8;
    for (int r = 0; r < w->world; r++) {
        int node0 = r / gpn * gpn, in_node = w->world - node0 < gpn ? w->world - node0 : gpn;
        for (int64_t i = 0; i < w->traces[r].n; i++) w->traces[r].e[i].share = in_node;
    }
    /* PCIe sharing: replay, re-estimate each copy's share from the overlaps, replay again
     * until the shares move by less than 1e-3 (a few passes; 20 at most) */
    int rc = CPB_OK;
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
        free_state(&R);
    }
    free_state(&R);
    return rc;
}
