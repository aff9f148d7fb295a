/* sim_repeat.c — the simulator's side of cpb_repeat (runtime/repeat.c, cpb_backend.h:
 * cpb_repeat_span): compare two iterations' trace entries, record the copies of one as a
 * run of the trace (sim_rep: stored once, expanded only for a replayed rank, read in place
 * by sim_iter), and relink the iteration that runs after the copies.
 *
 * An entry of an iteration is the same entry in the next one but for three things: its
 * event ids (each iteration records its own), its collectives' sequence numbers (moved on
 * by the iteration's collectives on that group) and its collectives' names (the range
 * "<label><i>" in them).  A wait is on an event of its own iteration, of the one before,
 * or of one before both (the same id in every iteration): which of the three, and which of
 * that iteration's events, is what two alike iterations share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_record.h"
#include "sim_repeat.h"

/* a wait's event as its iteration sees it: own (the q-th event of the iteration), prev
 * (the q-th of the iteration before) or old (the id itself) */
enum { EV_OWN, EV_PREV, EV_OLD };
typedef struct ev_ref {
    int cls;
    int q;
} ev_ref;

static ev_ref ref_of(int ev, int own0, int own1, int prev0)
{
    ev_ref r;
    if (ev >= own0 && ev < own1) r.cls = EV_OWN, r.q = ev - own0;
    else if (ev >= prev0 && ev < own0) r.cls = EV_PREV, r.q = ev - prev0;
    else r.cls = EV_OLD, r.q = ev;
    return r;
}

/* 1 when entry y of an iteration whose events are [y0, y1) (the one before it: from yp)
 * is entry x of one whose events are [x0, x1) (from xp) again */
static int entry_alike(const sim_entry *x, const sim_entry *y, int xp, int x0, int x1, int yp, int y0, int y1)
{
    if (x->type != y->type || x->phase != y->phase || x->kind != y->kind || x->pcie != y->pcie || x->impl != y->impl ||
        x->stream != y->stream || x->bytes != y->bytes)
        return 0;
    switch (x->type) {
    case SIM_OP:
        return x->flops == y->flops && x->w0 == y->w0 && x->w1 == y->w1 && x->w2 == y->w2 && x->w3 == y->w3 &&
               x->share == y->share;
    case SIM_COLL:
        return x->group == y->group && x->dst == y->dst && x->src == y->src && x->root == y->root;
    case SIM_RECORD:
        return x->ev - x0 == y->ev - y0;
    case SIM_WAIT: {
        ev_ref a = ref_of(x->ev, x0, x1, xp), b = ref_of(y->ev, y0, y1, yp);
        return a.cls == b.cls && a.q == b.q;
    }
    default:
        return 1;
    }
}

/* -1 when iteration Y (entries [ya, yb), events from yp, [y0, y1)) is X again, else the
 * index in Y of the first entry that is not */
static int64_t first_unlike(const sim_trace *t, int64_t xa, int64_t xb, int xp, int x0, int x1, int64_t ya, int64_t yb,
                            int yp, int y0, int y1)
{
    if (xb - xa != yb - ya || x1 - x0 != y1 - y0) return ya + ((xb - xa) < (yb - ya) ? (xb - xa) : (yb - ya));
    for (int64_t k = 0; k < xb - xa; k++)
        if (!entry_alike(&t->e[xa + k], &t->e[ya + k], xp, x0, x1, yp, y0, y1)) return ya + k;
    return -1;
}

static sim_trace *trace_of(cpb_ctx *ctx)
{
    return &cpb_sim_world_of(ctx)->traces[ctx->rank];
}

int64_t sim_repeat_mark(cpb_ctx *ctx)
{
    return trace_of(ctx)->n;
}

int sim_repeat_alike(cpb_ctx *ctx, const cpb_repeat_span *s)
{
    const sim_trace *t = trace_of(ctx);
    /* P [at1, at2) with events [ev1, ev2) after F's from ev0; T [at2, at3), [ev2, ev3) */
    return first_unlike(t, s->at[1], s->at[2], s->ev[0], s->ev[1], s->ev[2], s->at[2], s->at[3], s->ev[1], s->ev[2],
                        s->ev[3]) < 0;
}

/* decimal digits of v >= 0 into out (no terminator); how many */
static int digits(int v, char *out)
{
    char tmp[12];
    int n = 0;
    do tmp[n++] = (char)('0' + v % 10), v /= 10;
    while (v);
    for (int k = 0; k < n; k++) out[k] = tmp[n - 1 - k];
    return n;
}

const char *cpb_sim_entry_name(const cpb_sim_world *w, const sim_entry *e, char *buf, size_t n)
{
    const char *old = cpb_sim_world_name(w, e->name);
    if (e->type != SIM_COLL || e->rn_rule < 0 || e->rn_rule >= w->nrn || n < 16) return old;
    const struct sim_rename *r = &w->rn[e->rn_rule];
    const size_t at = (size_t)r->range_len + (r->range_len > 0), ll = strlen(r->label), len = strlen(old);
    char num[12];
    const size_t nn = (size_t)digits(r->tmpl, num);
    if (len < at + ll + nn || strncmp(old + at, r->label, ll) != 0 || memcmp(old + at + ll, num, nn) != 0 ||
        (old[at + ll + nn] != '/' && old[at + ll + nn] != 0))
        return old;
    const size_t rest = len - (at + ll + nn);
    if (at + ll + 12 + rest >= n) return old;
    memcpy(buf, old, at + ll);
    const size_t k = at + ll + (size_t)digits(e->rn_iter, buf + at + ll);
    memcpy(buf + k, old + at + ll + nn, rest + 1);
    return buf;
}

/* the world's rename rule for span s (sim_world.h: rn), added when new; -1 out of memory */
static int rename_rule(cpb_sim_world *w, const cpb_repeat_span *s)
{
    for (int k = w->nrn - 1; k >= 0 && k >= w->nrn - 8; k--)
        if (w->rn[k].range_len == s->range_len && w->rn[k].tmpl == s->tmpl && strcmp(w->rn[k].label, s->label) == 0)
            return k;
    if (strlen(s->label) >= sizeof w->rn[0].label) return -1;
    if (w->nrn == w->rncap) {
        const int nc = w->rncap ? 2 * w->rncap : 64;
        struct sim_rename *r = realloc(w->rn, sizeof *r * (size_t)nc);
        if (!r) return -1;
        w->rn = r;
        w->rncap = nc;
    }
    struct sim_rename *r = &w->rn[w->nrn];
    snprintf(r->label, sizeof r->label, "%s", s->label);
    r->range_len = s->range_len;
    r->tmpl = s->tmpl;
    return w->nrn++;
}

/* copy c of run r, entry x of its template, into y */
static void patch(const sim_rep *r, int c, const sim_entry *x, sim_entry *y)
{
    *y = *x;
    switch (x->type) {
    case SIM_RECORD:
        y->ev = r->ev_base + c * r->nrec + (x->ev - r->ev_own);
        break;
    case SIM_WAIT: {
        ev_ref q = ref_of(x->ev, r->ev_own, r->ev_own + r->nrec, r->ev_prev);
        const int prev = c == 0 ? r->ev_own : r->ev_base + (c - 1) * r->nrec;
        y->ev = q.cls == EV_OWN ? r->ev_base + c * r->nrec + q.q : q.cls == EV_PREV ? prev + q.q : x->ev;
        break;
    }
    case SIM_COLL: {
        int j = 0;
        while (j < r->ngroups - 1 && r->group[j] != x->group) j++;
        y->seq = x->seq + (int64_t)(c + 1) * r->per_group[j];
        y->rn_rule = r->rule;
        y->rn_iter = r->tmpl + 1 + c;
        break;
    }
    default:
        break;
    }
}

int sim_repeat_copy(cpb_ctx *ctx, const cpb_repeat_span *s)
{
    cpb_sim_world *w = cpb_sim_world_of(ctx);
    sim_trace *t = trace_of(ctx);
    if (t->n != s->at[3])
        return cpb_fail(ctx, CPB_ERR_INVALID, "sim: cpb_repeat's copies must follow the template (trace at %lld, template "
                        "ends at %lld)", (long long)t->n, (long long)s->at[3]);
    sim_rep r;
    memset(&r, 0, sizeof r);
    r.at = s->at[3];
    r.a = s->at[2];
    r.len = s->at[3] - s->at[2];
    r.copies = s->copies;
    r.ev_prev = s->ev[1];
    r.ev_own = s->ev[2];
    r.nrec = s->ev[3] - s->ev[2];
    r.ev_base = s->ev[3];
    r.tmpl = s->tmpl;
    for (int64_t k = r.a; k < r.a + r.len; k++) {
        const sim_entry *x = &t->e[k];
        if (x->type != SIM_COLL) continue;
        if (x->rn_rule >= 0)
            return cpb_fail(ctx, CPB_ERR_INVALID, "sim: a replicated iteration holds replicated iterations (nested "
                            "cpb_repeat runs every inner iteration inside a template)");
        int j = 0;
        while (j < r.ngroups && r.group[j] != x->group) j++;
        if (j == r.ngroups) {
            if (r.ngroups == 16) return cpb_fail(ctx, CPB_ERR_INVALID, "sim: a repeated iteration uses more than 16 groups");
            r.group[r.ngroups++] = x->group;
        }
        r.per_group[j]++;
    }
    r.rule = rename_rule(w, s);
    if (t->nreps == t->repcap) {
        const int nc = t->repcap ? 2 * t->repcap : 16;
        sim_rep *v = realloc(t->reps, sizeof *v * (size_t)nc);
        if (!v) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "sim: out of host memory for the trace");
        t->reps = v;
        t->repcap = nc;
    }
    t->reps[t->nreps++] = r;
    t->extra += (int64_t)r.copies * r.len;
    const int top = r.ev_base + r.copies * r.nrec;
    if (top > t->nevents) t->nevents = top;
    return CPB_OK;
}

int sim_trace_expand(sim_trace *t)
{
    if (t->nreps == 0) return CPB_OK;
    const int64_t n = t->n, total = sim_trace_len(t);
    if (sim_trace_reserve(t, total) != 0) return CPB_ERR_NOMEM_HOST;
    /* from the back: run k's stored tail moves by the copies of runs 0 .. k, its copies go
     * after run k-1's shift; a template is read where it is stored, never yet overwritten
     * (everything written so far lies at or past its run's `at`) */
    int64_t end = n, shift = t->extra;
    for (int k = t->nreps - 1; k >= 0; k--) {
        const sim_rep *r = &t->reps[k];
        memmove(t->e + r->at + shift, t->e + r->at, sizeof *t->e * (size_t)(end - r->at));
        shift -= (int64_t)r->copies * r->len;
        sim_entry *out = t->e + r->at + shift;
        for (int c = 0; c < r->copies; c++, out += r->len) {
            memcpy(out, t->e + r->a, sizeof *out * (size_t)r->len);
            for (int64_t j = 0; j < r->len; j++)
                if (out[j].type != SIM_OP) patch(r, c, &t->e[r->a + j], &out[j]);
        }
        end = r->at;
    }
    t->n = total;
    t->extra = 0;
    t->nreps = 0;
    return CPB_OK;
}

void sim_iter_start(sim_iter *it, const sim_trace *t)
{
    memset(it, 0, sizeof *it);
    it->t = t;
    it->c = -1;
    it->v = -1;
}

const sim_entry *sim_iter_next(sim_iter *it)
{
    const sim_trace *t = it->t;
    for (;;) {
        if (it->c >= 0) {
            const sim_rep *r = &t->reps[it->k];
            if (it->off == r->len) {
                it->off = 0;
                if (++it->c == r->copies) {
                    it->c = -1;
                    it->k++;
                    continue;
                }
            }
            const sim_entry *x = &t->e[r->a + it->off++];
            it->v++;
            if (x->type == SIM_OP) return x; /* an op is its template's */
            patch(r, it->c, x, &it->tmp);
            return &it->tmp;
        }
        if (it->k < t->nreps && it->s == t->reps[it->k].at) {
            if (t->reps[it->k].copies > 0 && t->reps[it->k].len > 0) {
                it->c = 0;
                it->off = 0;
            } else {
                it->k++;
            }
            continue;
        }
        if (it->s >= t->n) return NULL;
        it->v++;
        return &t->e[it->s++];
    }
}

int sim_repeat_last(cpb_ctx *ctx, const cpb_repeat_span *s)
{
    sim_trace *t = trace_of(ctx);
    const int nrec = s->ev[3] - s->ev[2], last_copy = s->ev[3] + (s->copies - 1) * nrec;
    int64_t bad = first_unlike(t, s->at[2], s->at[3], s->ev[1], s->ev[2], s->ev[3], s->at[4], s->at[5], s->ev[2],
                               s->ev[4], s->ev[5]);
    if (bad >= 0)
        return cpb_fail(ctx, CPB_ERR_INVALID, "cpb_repeat: iteration %s%d is not iteration %s%d again (its trace entry %lld "
                        "differs): the loop's iterations were declared alike (cpb.h); give the iterations that differ "
                        "a loop of their own", s->label, s->last, s->label, s->tmpl, (long long)(bad - s->at[4]));
    for (int64_t k = s->at[4]; k < s->at[5]; k++) {
        sim_entry *y = &t->e[k];
        if (y->type != SIM_WAIT) continue;
        ev_ref r = ref_of(y->ev, s->ev[4], s->ev[5], s->ev[2]);
        if (r.cls == EV_PREV) y->ev = last_copy + r.q;
    }
    return CPB_OK;
}
