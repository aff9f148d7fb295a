/* plan.c — the search of `cpbench plan` (plan.h): the candidates from the knob tables, and
 * one simulated point of a candidate, whole model or layer. */
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_choice.h"
#include "gpu_profiles.h"
#include "knobs.h"
#include "model_scope.h"
#include "plan_frameworks.h"
#include "provenance.h"
#include "registry.h"
#include "sweep.h"
#include "tp_compose.h"

#define MAX_VALUES 32       /* candidate values of one knob */
#define MAX_COMBOS 4096     /* knob combinations of one method */
/* from this many ranks a candidate's bound is tightened by a second rank before its point
 * in full (refine): that costs two ranks' traces, a point in full records at least C + P
 * (auto, up to 64 ranks) or 2P + 8 (sim_layer.h, P the ranks of a period: 8 or more), so
 * from 16 ranks the refinement costs at most an eighth of the point it may save */
#define CPB_PLAN_REFINE_MIN_RANKS 16

int cpb_plan_cand_unsimulated(const cpb_plan_cand *c)
{
    return c->bound == CPB_BOUND_ERROR && c->row.code == CPB_ERR_UNSUPPORTED;
}

/* a failed candidate is counted as declined by the simulator or as an error (a bug) */
static void count_failure(cpb_plan *pl, const cpb_plan_cand *c)
{
    if (c->bound != CPB_BOUND_ERROR) return;
    if (cpb_plan_cand_unsimulated(c)) pl->unsimulated++;
    else pl->errors++;
}

const char *cpb_plan_bound_name(int bound)
{
    switch (bound) {
    case CPB_BOUND_COMPUTE: return "compute";
    case CPB_BOUND_COMM: return "communication";
    case CPB_BOUND_DEVICE_MEM: return "device memory";
    case CPB_BOUND_HOST_MEM: return "host memory";
    case CPB_BOUND_FLOOR: return "headroom floor";
    default: return "error";
    }
}

static int is_model(const cpb_plan_opts *o)
{
    return !o->scope || strcmp(o->scope, "model") == 0;
}

/* ---------------------------------------------------------------- one point */

/* what bounds a fitting run: the larger of compute and communication on the critical path */
static void speed_bound(cpb_plan_cand *c)
{
    const cpb_row *r = &c->row;
    double comm = r->crit_comm_s + r->crit_host_s, total = r->crit_compute_s + comm;
    c->bound = comm > r->crit_compute_s ? CPB_BOUND_COMM : CPB_BOUND_COMPUTE;
    c->bound_share = total > 0 ? (c->bound == CPB_BOUND_COMM ? comm : r->crit_compute_s) / total : 1.0;
    c->bound_detail = NULL;
    if (comm <= 0) return;
    double best = r->crit_host_s;
    c->bound_detail = "host copies";
    for (int k = 0; k < CPB_COLL_KIND_COUNT; k++)
        if (r->crit_coll_s[k] > best) best = r->crit_coll_s[k], c->bound_detail = cpb_coll_kind_name(k);
}

static int is_memory_failure(const cpb_row *r)
{
    /* device or pinned host capacity: the allocator's CPB_ERR_OOM (status oom) */
    return r->code == CPB_ERR_OOM;
}

/* Simulate candidate (m, p) at p->S into c: its row, what it needs and what bounds it.
 * memory_only: rank 0 alone (cpb_sim_opts.memory_only): whether it fits and what it
 * needs are exact, its times are not modelled (a probe, counted in c->probes).
 * Returns CPB_OK (the row may say oom or error), or CPB_ERR_INVALID for bad input. */
static int eval_point(const cpb_plan_opts *o, const cpb_method *m, const cpb_problem *p, cpb_plan_cand *c,
                      int memory_only, char *err, size_t err_len)
{
    cpb_gpu_profile prof;
    CPB_TRY(cpb_sim_profile(&o->sim, p, &prof, err, err_len));
    cpb_sim_opts sim = o->sim;
    sim.memory_only = memory_only;
    /* a probe decides memory (and bounds the speed): the stream-race check, a check of the
     * schedule's ordering that the memory does not depend on, is left to the points
     * simulated in full (every row kept is one; `cpbench verify` and the unit tests check
     * every method's schedule).  It was half of a probe's time. */
    if (memory_only) sim.no_race_check = 1;
    c->cap = o->sim.mem_cap > 0 ? o->sim.mem_cap : cpb_gpu_profile_usable(&prof);
    c->cap_host = o->sim.host_mem_cap > 0 ? o->sim.host_mem_cap : cpb_gpu_profile_host_per_gpu(&prof);
    c->need = c->need_host = 0;
    if (memory_only) c->probes++;
    else c->points++;
    if (is_model(o)) {
        cpb_model_estimate *e = NULL;
        CPB_TRY(cpb_model_estimate_new(p, m, &sim, &e, err, err_len));
        cpb_model_estimate_row(e, &c->row);
        /* what ran the attention calls: the attention layer's (the whole model's row leaves
         * them out; the plan's uncalibrated mark and attn column read them) */
        if (!c->row.attn_impl[0]) {
            CPB_ROW_SET(&c->row, attn_impl, e->attn.attn_impl);
            CPB_ROW_SET(&c->row, attn_calls, e->attn.attn_calls);
        }
        if (e->attn.code == CPB_OK) {
            c->need = e->moment[e->peak_moment].total;
            c->need_host = e->host_bytes;
            c->cap = e->capacity;
            c->cap_host = e->host_capacity;
        }
        cpb_model_estimate_free(e);
    } else {
        CPB_TRY(cpb_sim_layer(p, m, &sim, &c->row));
        c->need = c->row.peak_bytes;
        c->need_host = c->row.host_peak_bytes;
        if (is_memory_failure(&c->row)) {
            /* the trial stopped at the allocation that failed: how much it would need (its
             * memory alone: rank 0's is every rank's) */
            static cpb_row full;
            cpb_sim_opts so = o->sim;
            so.memory_only = 1;
            so.no_race_check = 1;
            so.mem_cap = so.host_mem_cap = (int64_t)1 << 60;
            if (cpb_sim_layer(p, m, &so, &full) == CPB_OK && full.code == CPB_OK) {
                c->need = full.peak_bytes;
                c->need_host = full.host_peak_bytes;
            }
        }
    }
    cpb_provenance_utc_now(c->row.timestamp, sizeof c->row.timestamp);
    c->p = *p;
    double od = c->cap > 0 ? (double)c->need / (double)c->cap : 0, oh = c->cap_host > 0 ? (double)c->need_host / (double)c->cap_host : 0;
    c->over = (od > oh ? od : oh) - 1.0;
    c->fits = c->row.code == CPB_OK;
    if (c->fits) speed_bound(c);
    else if (is_memory_failure(&c->row))
        /* when both run short, the one it is further over bounds it */
        c->bound = od > 1 && (oh <= 1 || od >= oh)                 ? CPB_BOUND_DEVICE_MEM
                   : oh > 1                                        ? CPB_BOUND_HOST_MEM
                   : strncmp(c->row.reason, "device memory", 13) == 0 ? CPB_BOUND_DEVICE_MEM
                                                                   : CPB_BOUND_HOST_MEM;
    else
        c->bound = CPB_BOUND_ERROR;
    return CPB_OK;
}

/* ---------------------------------------------------------------- candidates */

/* one knob's values to try */
typedef struct knob_values {
    const cpb_knob *k;
    int n;
    int64_t i[MAX_VALUES];
    char s[MAX_VALUES][CPB_KNOB_LEN];
} knob_values;

static int searched_knobs(const cpb_plan_opts *o, const cpb_method *m, const cpb_problem *probe, knob_values *kv,
                          int max)
{
    int n = 0;
    const char *scope = is_model(o) ? "model" : "layer";
    for (int i = 0; i < cpb_knob_count() && n < max; i++) {
        const cpb_knob *k = cpb_knob_of(m, cpb_knob_at(i)->name);
        if (!k || !cpb_knob_belongs(k, &cpb_backend_sim, scope) || k->setup) continue;
        if (cpb_knobs_find(&o->given, k->name)) continue; /* given: its value, not searched */
        knob_values *v = &kv[n];
        memset(v, 0, sizeof *v);
        v->k = k;
        if (k->candidates) {
            v->n = k->candidates(probe, v->i, MAX_VALUES);
        } else if (k->type == CPB_KNOB_CHOICE) {
            for (const char *c = k->choices ? k->choices : ""; *c && v->n < MAX_VALUES;) {
                const char *bar = strchr(c, '|');
                size_t len = bar ? (size_t)(bar - c) : strlen(c);
                /* "auto" lets the backend pick one of the other choices call by call (--attn):
                 * searching those covers it, and a duplicate row would only crowd the table */
                if (len < CPB_KNOB_LEN && !(len == 4 && strncmp(c, "auto", 4) == 0)) {
                    memcpy(v->s[v->n], c, len);
                    v->s[v->n][len] = 0;
                    /* --attn fa2|fa3 are estimates: tried only when given */
                    if (strcmp(k->name, "attn") != 0 || !cpb_attn_choice_is_estimate(v->s[v->n])) v->n++;
                }
                if (!bar) break;
                c = bar + 1;
            }
        }
        if (v->n > 0) n++;
    }
    return n;
}

static void format_tokens(char *buf, size_t len, int64_t v)
{
    if (v >= (1 << 20) && v % (1 << 20) == 0) snprintf(buf, len, "%lldM", (long long)(v >> 20));
    else if (v >= 1024 && v % 1024 == 0) snprintf(buf, len, "%lldK", (long long)(v >> 10));
    else snprintf(buf, len, "%lld", (long long)v);
}

/* "head_chunk=8 seq_chunk=64K": the searched and given knobs of the candidate */
static void describe(const cpb_method *m, const cpb_problem *p, const cpb_plan_opts *o, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    const char *scope = is_model(o) ? "model" : "layer";
    /* numbers first, then choices: the order of the results file's knob columns, so that a
     * label made from a row (paper/make_figures.py plan_label) reads the same */
    for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < cpb_knob_count(); i++) {
        const cpb_knob *k = cpb_knob_of(m, cpb_knob_at(i)->name);
        if (!k || k->setup || !cpb_knob_belongs(k, &cpb_backend_sim, scope)) continue;
        if ((k->type == CPB_KNOB_CHOICE) != pass) continue;
        const cpb_knob_value *v = cpb_knobs_find(&p->knobs, k->name);
        if (!v) continue;
        char val[48];
        if (k->type == CPB_KNOB_CHOICE) snprintf(val, sizeof val, "%s", v->s);
        else if (v->i == 0) continue; /* the method's default, not searched */
        else if (k->type == CPB_KNOB_TOKENS) format_tokens(val, sizeof val, v->i);
        else snprintf(val, sizeof val, "%lld", (long long)v->i);
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s=%s", n ? " " : "", k->name, val);
    }
}

/* the length at which a candidate's knobs are checked with max_context: a multiple of 2C
 * and of its token-count knobs (the lengths a sweep of it takes), at least the start */
static int64_t probe_length(const cpb_problem *p, const cpb_knobs *combo, int64_t start)
{
    int64_t l = 2 * (int64_t)p->C;
    for (int i = 0; i < combo->n; i++) {
        int idx = cpb_knob_index(combo->v[i].name);
        const cpb_knob *k = idx >= 0 ? cpb_knob_at(idx) : NULL;
        if (k && k->type == CPB_KNOB_TOKENS && combo->v[i].i > 0) l = l / cpb_gcd64(l, combo->v[i].i) * combo->v[i].i;
    }
    return (start + l - 1) / l * l;
}

typedef struct search {
    const cpb_plan_opts *o;
    cpb_plan *pl;
    int cap;
    cpb_knobs *combos;        /* [cap] each candidate's knob values as given to cpb_knobs_apply */
    char *err;
    size_t err_len;
} search;

static int add_refusal(cpb_plan *pl, const char *method, const char *why)
{
    size_t n = strlen(pl->refusals);
    snprintf(pl->refusals + n, sizeof pl->refusals - n, "%s%s (%s)", n ? "; " : "", method, why);
    return 0;
}

static int push(search *s, const cpb_method *m, const cpb_problem *p, const cpb_knobs *combo)
{
    cpb_plan *pl = s->pl;
    if (pl->n == s->cap) {
        int nc = s->cap ? 2 * s->cap : 64;
        cpb_plan_cand *c = realloc(pl->c, sizeof *c * (size_t)nc);
        cpb_knobs *k = realloc(s->combos, sizeof *k * (size_t)nc);
        if (c) pl->c = c;
        if (k) s->combos = k;
        if (!c || !k) {
            snprintf(s->err, s->err_len, "plan: out of host memory for %d candidates", nc);
            return CPB_ERR_NOMEM_HOST;
        }
        s->cap = nc;
    }
    cpb_plan_cand *c = &pl->c[pl->n];
    memset(c, 0, sizeof *c);
    c->m = m;
    c->p = *p;
    describe(m, p, s->o, c->knobs, sizeof c->knobs);
    s->combos[pl->n] = *combo;
    pl->n++;
    return CPB_OK;
}

/* every combination of m's knob values that m and the knobs' checks accept */
static int enumerate(search *s, const cpb_method *m)
{
    const cpb_plan_opts *o = s->o;
    /* the knobs' candidates for the length (with max_context the longest searched: its
     * chunk candidates are the ones worth trying at every length up to it) */
    cpb_problem probe = o->base;
    probe.S = o->max_context ? o->seq_stop : o->base.S;
    static knob_values kv[CPB_MAX_KNOBS];
    int nk = searched_knobs(o, m, &probe, kv, CPB_MAX_KNOBS);
    int idx[CPB_MAX_KNOBS] = {0}, combos = 0, accepted = 0;
    char first_why[512] = "";
    for (;;) {
        cpb_knobs combo = o->given;
        for (int i = 0; i < nk; i++) {
            if (kv[i].k->type == CPB_KNOB_CHOICE) cpb_knobs_set_str(&combo, kv[i].k->name, kv[i].s[idx[i]]);
            else cpb_knobs_set_int(&combo, kv[i].k->name, kv[i].i[idx[i]]);
        }
        cpb_problem p = o->base;
        p.S = o->max_context ? probe_length(&p, &combo, o->seq_start) : o->base.S;
        char why[512] = "";
        /* the whole model's layout: the candidate's cp (plan_layout.c) */
        int lay = is_model(o) ? cpb_plan_layout(o, &o->given, &combo, &p, why, sizeof why) : CPB_PLAN_LAYOUT_USE;
        int ok = lay == CPB_PLAN_LAYOUT_USE && cpb_knobs_apply(m, &combo, &p, why, sizeof why) == CPB_OK;
        if (ok && !cpb_knobs_find(&o->given, "tp") && cpb_plan_tp_within_node(&p, o->sim.gpus_per_node, why, sizeof why))
            ok = 0; /* a searched tp stays inside a node */
        if (ok && cpb_tp_check(m, &p, why, sizeof why) != CPB_OK) ok = 0; /* under the combination's --tp */
        if (ok) {
            CPB_TRY(push(s, m, &p, &combo));
            accepted++;
        } else if (lay != CPB_PLAN_LAYOUT_SKIP) {
            s->pl->refused++;
            if (!first_why[0]) snprintf(first_why, sizeof first_why, "%s", why[0] ? why : "refused");
        }
        /* the next combination (odometer) */
        int i = 0;
        for (; i < nk; i++) {
            if (++idx[i] < kv[i].n) break;
            idx[i] = 0;
        }
        if (i == nk || ++combos >= MAX_COMBOS) break;
    }
    if (!accepted) add_refusal(s->pl, m->name, first_why);
    return CPB_OK;
}

/* ---------------------------------------------------------------- the search */

int cpb_plan_method_listed(const char *methods, const char *name)
{
    if (!methods || !methods[0]) return 1;
    size_t nl = strlen(name);
    for (const char *n = methods; *n;) {
        size_t len = strcspn(n, ",");
        if (len == nl && strncmp(n, name, len) == 0) return 1;
        n += len + (n[len] == ',');
    }
    return 0;
}

/* ---------------------------------------------------------------- --max-context, pruned */

/* A length's outcome for the bisection (the sweep's statuses): fits with the floor's
 * headroom (OK), does not (OOM, under the floor included), or failed (ERROR) */
static cpb_point_status len_status(const cpb_plan_opts *o, const cpb_plan_cand *c)
{
    if (!c->fits) return c->bound == CPB_BOUND_ERROR ? CPB_POINT_ERROR : CPB_POINT_OOM;
    return cpb_plan_headroom(c) < o->min_headroom ? CPB_POINT_OOM : CPB_POINT_OK;
}

/* The probes of one candidate's lengths (memory only), kept: the bisection's points are
 * asked of them, and of what they imply.  The sweep's own rule (sweep.c: memory grows with
 * S, so a length longer than one that does not fit does not fit either) makes every length
 * up to one that fits with the floor's headroom fit with it, and every length from one that
 * does not fit not fit: the bisection then runs its course on probes at two or three
 * lengths near its end, and the lengths it keeps (the longest that fits, the shortest that
 * does not) are probed (the same probe, the same row) */
#define LEN_MEMO 48
typedef struct len_memo {
    int n;
    int64_t S[LEN_MEMO];
    cpb_plan_cand c[LEN_MEMO];
    int64_t ok, bad;          /* the longest probed length that fits with the headroom, the
                                 shortest that does not (0: none) */
} len_memo;

static int len_accepted(const search *s, int i, int64_t S, cpb_problem *q)
{
    const cpb_plan_cand *c = &s->pl->c[i];
    char why[512];
    *q = c->p;
    q->S = S;
    return cpb_knobs_apply(c->m, &s->combos[i], q, why, sizeof why) == CPB_OK &&
           cpb_tp_check(c->m, q, why, sizeof why) == CPB_OK;
}

/* the probe at an accepted length (q), once */
static int len_probe(search *s, int i, len_memo *lm, const cpb_problem *q, const cpb_plan_cand **out)
{
    for (int k = 0; k < lm->n; k++)
        if (lm->S[k] == q->S) return *out = &lm->c[k], CPB_OK;
    static cpb_plan_cand spare;
    cpb_plan_cand *cur = lm->n < LEN_MEMO ? &lm->c[lm->n] : &spare;
    *cur = s->pl->c[i];
    cur->points = cur->probes = 0;
    CPB_TRY(eval_point(s->o, cur->m, q, cur, 1, s->err, s->err_len));
    if (cur != &spare) lm->S[lm->n++] = q->S;
    cpb_point_status ps = len_status(s->o, cur);
    if (ps == CPB_POINT_OK && q->S > lm->ok) lm->ok = q->S;
    if (ps == CPB_POINT_OOM && (!lm->bad || q->S < lm->bad)) lm->bad = q->S;
    *out = cur;
    return CPB_OK;
}

/* what the probes imply at S: CPB_POINT_OK, CPB_POINT_OOM, or -1 (nothing) */
static int len_implied(const len_memo *lm, int64_t S)
{
    if (lm->ok && S <= lm->ok) return CPB_POINT_OK;
    if (lm->bad && S >= lm->bad) return CPB_POINT_OOM;
    return -1;
}

/* the length at which a linear need (a at Sa, b at Sb) reaches limit; 0 when it does not
 * rise between them */
static double crossing(double Sa, double a, double Sb, double b, double limit)
{
    if (!(b > a) || Sb <= Sa) return 0;
    return Sa + (limit - a) * (Sb - Sa) / (b - a);
}

/* the sweep of plan sp run with the outcome "fits up to g" (no probe): its last fitting
 * and first failing points (0: none) */
static void sweep_path(const cpb_sweep_plan *sp, int64_t g, int64_t *lo, int64_t *hi)
{
    cpb_sweep_state st;
    cpb_sweep_begin(&st, sp);
    *lo = *hi = 0;
    for (int64_t S; (S = cpb_sweep_next(&st)) > 0;) {
        const int ok = S <= g;
        if (ok && S > *lo) *lo = S;
        if (!ok && (!*hi || S < *hi)) *hi = S;
        cpb_sweep_report(&st, S, ok ? CPB_POINT_OK : CPB_POINT_OOM);
    }
}

/* Probes that bracket the candidate's longest length before the bisection asks for it:
 * the shortest and the longest length of the range, then where the need, linear in S
 * between the nearest probes that fit and do not, reaches the usable memory less the floor
 * (device) or the host's: the bisection's last two points for that length are probed; a
 * second guess when the first missed.  A guess only saves probes: what the bisection
 * decides is read from probes and their implications (len_implied) alone. */
static int len_bracket(search *s, int i, const cpb_sweep_plan *sp, len_memo *lm)
{
    const cpb_plan_opts *o = s->o;
    cpb_problem q;
    const cpb_plan_cand *a, *b;
    int64_t lo, hi;
    sweep_path(sp, 0, &lo, &hi); /* the first point the sweep asks */
    if (!hi || !len_accepted(s, i, hi, &q)) return CPB_OK;
    CPB_TRY(len_probe(s, i, lm, &q, &a));
    if (len_status(o, a) != CPB_POINT_OK) return CPB_OK;
    sweep_path(sp, INT64_MAX, &lo, &hi); /* the last growth point */
    if (!lo || !len_accepted(s, i, lo, &q)) return CPB_OK;
    CPB_TRY(len_probe(s, i, lm, &q, &b));
    for (int round = 0; round < 2 && lm->ok && lm->bad; round++) {
        /* the nearest probes that fit and do not */
        const cpb_plan_cand *f = NULL, *n = NULL;
        for (int k = 0; k < lm->n; k++) {
            if (lm->S[k] == lm->ok) f = &lm->c[k];
            if (lm->S[k] == lm->bad) n = &lm->c[k];
        }
        if (!f || !n) break;
        const double Sa = (double)lm->ok, Sb = (double)lm->bad;
        double g = Sb;
        double gd = crossing(Sa, (double)f->need, Sb, (double)n->need, (double)n->cap * (1.0 - o->min_headroom));
        double gh = crossing(Sa, (double)f->need_host, Sb, (double)n->need_host, (double)n->cap_host);
        if (gd > 0 && gd < g) g = gd;
        if (gh > 0 && gh < g) g = gh;
        if (!(g > Sa)) g = Sa;
        sweep_path(sp, (int64_t)g, &lo, &hi);
        /* the bisection's two last points for that guess, each unless implied */
        const int64_t want[2] = {lo, hi};
        int probed = 0;
        for (int k = 0; k < 2; k++) {
            if (!want[k] || len_implied(lm, want[k]) >= 0 || !len_accepted(s, i, want[k], &q)) continue;
            CPB_TRY(len_probe(s, i, lm, &q, &a));
            probed++;
            if (len_status(o, a) == CPB_POINT_ERROR) return CPB_OK;
        }
        if (!probed) break;
    }
    return CPB_OK;
}

static int run_candidate(search *s, int i)
{
    const cpb_plan_opts *o = s->o;
    cpb_plan_cand *c = &s->pl->c[i];
    const cpb_method *m = c->m;
    /* a fixed length without pruning (run_pruned does the pruned search): in full */
    if (!o->max_context) return eval_point(o, m, &c->p, c, 0, s->err, s->err_len);
    cpb_sweep_plan sp;
    memset(&sp, 0, sizeof sp);
    sp.start = o->seq_start;
    sp.stop = o->seq_stop;
    sp.factor = 2.0;
    sp.bisect = o->bisect;
    sp.end_at_stop = 1; /* the longest fitting length in [start, stop]: stop itself is tried */
    sp.granule = cpb_sweep_granule(m, &c->p, sp.start, sp.stop);
    if (cpb_sweep_plan_check(&sp, s->err, s->err_len) != CPB_OK) return CPB_ERR_INVALID;
    /* pruned, the lengths are probes (memory only), bracketed first (len_bracket) */
    static len_memo lm;
    lm.n = 0;
    lm.ok = lm.bad = 0;
    const int infer = !o->no_prune;
    if (infer) CPB_TRY(len_bracket(s, i, &sp, &lm));
    cpb_sweep_state st;
    cpb_sweep_begin(&st, &sp);
    static cpb_plan_cand cur, best, first, low;
    int have_best = 0, have_first = 0, have_low = 0, points = 0, probes = 0;
    int64_t best_S = 0, oom_S = 0;  /* the longest length that fits with the headroom, the shortest that does not */
    int oom_implied = 0, limit = c->limit;
    for (int64_t S; (S = cpb_sweep_next(&st)) > 0;) {
        cpb_problem q;
        cpb_point_status ps;
        if (!len_accepted(s, i, S, &q)) {
            ps = CPB_POINT_REFUSED;
        } else if (infer && have_first && len_implied(&lm, S) >= 0) {
            /* decided by the probes (len_memo): the lengths kept are probed below */
            ps = (cpb_point_status)len_implied(&lm, S);
            if (ps == CPB_POINT_OK && S > best_S) best_S = S;
            if (ps == CPB_POINT_OOM && (!oom_S || S < oom_S)) oom_S = S, oom_implied = 1;
        } else {
            if (infer) {
                const cpb_plan_cand *pc;
                CPB_TRY(len_probe(s, i, &lm, &q, &pc));
                cur = *pc;
            } else {
                cur = *c;
                cur.points = cur.probes = 0;
                CPB_TRY(eval_point(o, m, &q, &cur, 0, s->err, s->err_len));
                points += cur.points;
                probes += cur.probes;
            }
            ps = len_status(o, &cur);
            /* under the headroom floor: listed at its longest such length, but the bisection
             * looks for the longest length with the floor's headroom (plan.h) */
            const int under = cur.fits && ps == CPB_POINT_OOM;
            if (under && (!have_low || S > low.p.S)) low = cur, have_low = 1;
            if (ps == CPB_POINT_OK && S > best_S) best = cur, have_best = 1, best_S = S;
            if (!have_first || ps == CPB_POINT_ERROR) first = cur, have_first = 1;
            if (ps == CPB_POINT_OOM && (!oom_S || S < oom_S))
                oom_S = S, oom_implied = 0, limit = under ? CPB_BOUND_FLOOR : cur.bound;
            if (o->progress) o->progress(o->progress_ctx, i, s->pl->n, s->pl->points + points, m->name);
            if (ps == CPB_POINT_ERROR) break;
        }
        cpb_sweep_report(&st, S, ps);
    }
    /* the lengths kept, where implied: their probes (the ones the sweep would have made) */
    cpb_problem q;
    const cpb_plan_cand *pc;
    if (best_S && (!have_best || best.p.S != best_S) && len_accepted(s, i, best_S, &q)) {
        CPB_TRY(len_probe(s, i, &lm, &q, &pc));
        best = *pc, have_best = 1;
    }
    if (oom_implied && len_accepted(s, i, oom_S, &q)) {
        CPB_TRY(len_probe(s, i, &lm, &q, &pc));
        limit = pc->fits ? CPB_BOUND_FLOOR : pc->bound;
    }
    for (int k = 0; infer && k < lm.n; k++) {
        points += lm.c[k].points;
        probes += lm.c[k].probes;
    }
    const int64_t first_oom = oom_S;
    if (have_first && first.bound == CPB_BOUND_ERROR) *c = first;
    else if (have_best) *c = best, c->max_seq = best.p.S;
    else if (have_low) *c = low, c->max_seq = low.p.S; /* fits only under the floor */
    else if (have_first) *c = first; /* the shortest length did not fit: how far it is */
    else {
        c->bound = CPB_BOUND_ERROR;
        cpb_row_point(&c->row, m, &c->p, &cpb_backend_sim, "", is_model(o) ? "model" : "layer");
        cpb_row_set_status(&c->row, CPB_ERR_INVALID, "no length in the searched range is one the method accepts");
    }
    /* pruned, the length kept is a probe's row: run_pruned simulates it in full (or prunes it) */
    c->first_oom = first_oom;
    c->limit = limit;
    c->points = points;
    c->probes = probes;
    return CPB_OK;
}

/* Candidate i cannot change the plan's answer, by its speed's upper bound (its probe's
 * row: cpb_sim_opts.memory_only): two candidates already simulated in full, each fitting,
 * of its calibration, faster than its bound, leaving at least as much memory free (more,
 * or as much and earlier in the search order), with --max-context reaching at least its
 * length, and, when a framework (plan_opts.stack's) runs it, run by a framework too.  Each
 * of the two is then at least as good in every respect the rules read:
 *   - not the recommendation: were it tied with the best, they would be too (faster), and
 *     of the tied the most headroom wins, then the faster;
 *   - not the fastest, the runner-up (two eligible ones rank before it), the roomiest (one
 *     as roomy ranks before it) or on the frontier (each dominates it, and so what it would
 *     dominate);
 *   - not the tied candidate a framework runs that the plan names (one of the two, tied
 *     whenever it is, leaves as much memory free);
 * but it may be tied itself: when its bound is within the tie of the best, cpb_plan_rank
 * counts it in ties_unknown (its speed is not known closely enough to say).  The tied
 * candidates are a crowd at scale (on 1,024 GPUs at 128M, 253 within 2%: most of the
 * compute-bound ones), and simulating each in full only to count it was most of the
 * search's time.  An uncalibrated one needs a single candidate of any kind once a
 * calibrated one is eligible (below). */
static int prunable(const cpb_plan *pl, int i, const char *done, const signed char *in_fw, int64_t reach)
{
    const cpb_plan_cand *c = &pl->c[i];
    const int uncal = cpb_plan_row_uncalibrated(&c->row);
    const double ub = c->row.tokens_per_s_per_gpu, hc = cpb_plan_headroom(c);
    /* an uncalibrated one, once a calibrated one simulated in full is eligible (fits with
     * the floor's headroom): the recommendation is calibrated (plan.h), so it is neither the
     * recommendation, tied, nor the runner-up (each of the recommendation's kind); what is
     * left, the fastest, the roomiest and the frontier, take any kind, and one candidate of
     * any kind that dominates it rules each out */
    int cal_eligible = 0;
    for (int j = 0; uncal && j < pl->n && !cal_eligible; j++) {
        const cpb_plan_cand *d = &pl->c[j];
        cal_eligible = done[j] && d->fits && !cpb_plan_row_uncalibrated(&d->row) &&
                       !(cpb_plan_headroom(d) < pl->min_headroom);
    }
    const int need = cal_eligible ? 1 : 2;
    /* with --max-context, one shorter than the recommendation's reach (reach_of) is never
     * tied nor recommended: headroom matters to it only as the runner-up's eligibility and
     * the roomiest's threshold, so the two need not leave as much memory free as it does */
    const int untied = reach > 0 && c->max_seq < reach;
    int beaten = 0;
    for (int j = 0; j < pl->n && beaten < need; j++) {
        const cpb_plan_cand *d = &pl->c[j];
        if (!done[j] || !d->fits || d->max_seq < c->max_seq) continue;
        if (!cal_eligible && cpb_plan_row_uncalibrated(&d->row) != uncal) continue;
        const double hd = cpb_plan_headroom(d);
        if (untied) {
            if (hd < pl->min_headroom) continue;                      /* eligible: a runner-up before it */
            if (hc >= CPB_PLAN_ROOMY && hd < CPB_PLAN_ROOMY) continue; /* roomy whenever it is */
        } else {
            if (in_fw[i] > 0 && in_fw[j] <= 0) continue;
            if (hd < hc || (hd == hc && j > i)) continue;
        }
        if (d->row.tokens_per_s_per_gpu > ub) beaten++;
    }
    return beaten >= need;
}

/* With --max-context, the length within which candidates may tie with the recommendation
 * (cpb_plan_rank's choose: the longest eligible one's, less the bisection step), from the
 * candidates marked in `among` (NULL: all) that fit with the floor's headroom, calibrated
 * ones first; 0 when none does.  Every candidate's length is known from its probes before
 * any point in full, so run_pruned knows it first and checks it after. */
static int64_t reach_of(const cpb_plan *pl, const char *among, int64_t bisect)
{
    int64_t best[2] = {0, 0}; /* calibrated, uncalibrated */
    for (int i = 0; i < pl->n; i++) {
        const cpb_plan_cand *c = &pl->c[i];
        if ((among && !among[i]) || !c->fits || cpb_plan_headroom(c) < pl->min_headroom) continue;
        const int u = cpb_plan_row_uncalibrated(&c->row);
        if (c->max_seq > best[u]) best[u] = c->max_seq;
    }
    const int64_t b = best[0] ? best[0] : best[1];
    return b > bisect ? b - bisect : b > 0 ? 1 : 0;
}

/* Candidate i's bound again from two ranks, rank 0 and the last (cpb_sim_opts.memory_only
 * 2: the larger of their bounds, each a bound of the step): where ranks differ in their work
 * (a contiguous ring) rank 0's alone is loose.  Its memory is the probe's (the same
 * allocations, checked); *kept 1 when the row is now the tighter bound, 0 when it is no
 * tighter (or the last rank failed: the point in full says how). */
static int refine(search *s, int i, int *kept)
{
    cpb_plan_cand *c = &s->pl->c[i];
    static cpb_plan_cand r;
    r = *c;
    r.probes = 0;
    *kept = 0;
    CPB_TRY(eval_point(s->o, c->m, &c->p, &r, 2, s->err, s->err_len));
    c->probes += r.probes;
    s->pl->probes += r.probes;
    if (!r.fits || r.need != c->need || r.need_host != c->need_host ||
        !(r.row.tokens_per_s_per_gpu < c->row.tokens_per_s_per_gpu))
        return CPB_OK;
    c->row = r.row;
    c->bound = r.bound;
    c->bound_share = r.bound_share;
    c->bound_detail = r.bound_detail;
    *kept = 1;
    return CPB_OK;
}

/* The points in full of the fitting candidates queued in idx (by their bound, fastest
 * first), each unless prunable by the ones simulated before it (reach: reach_of, 0 at a
 * fixed length); those already done or pruned are passed over. */
static int full_pass(search *s, int *idx, int nfit, char *done, char *refined, const signed char *in_fw,
                     int64_t reach, char *short_pruned, int *ndone)
{
    const cpb_plan_opts *o = s->o;
    cpb_plan *pl = s->pl;
    int rc = CPB_OK;
    for (int k = 0; k < nfit && rc == CPB_OK; k++) {
        int i = idx[k];
        cpb_plan_cand *c = &pl->c[i];
        if (done[i] || c->pruned) continue;
        if (!o->every_row && prunable(pl, i, done, in_fw, reach)) {
            c->pruned = 1;
            short_pruned[i] = reach > 0 && c->max_seq < reach;
            pl->pruned++;
            continue;
        }
        if (!o->every_row && !refined[i] && c->p.C >= CPB_PLAN_REFINE_MIN_RANKS) {
            /* before a point in full, the tighter bound of two ranks (rank 0 and the last,
             * cpb_sim_opts.memory_only 2): back in the queue where it puts the candidate,
             * it may be pruned there */
            refined[i] = 1;
            int kb = 0;
            rc = refine(s, i, &kb);
            if (rc != CPB_OK) break;
            if (kb) {
                const double ub = c->row.tokens_per_s_per_gpu;
                int j = k;
                for (; j + 1 < nfit && pl->c[idx[j + 1]].row.tokens_per_s_per_gpu > ub; j++) idx[j] = idx[j + 1];
                idx[j] = i;
                k--; /* the queue's next one, or this one again at its new place */
                continue;
            }
        }
        if (o->progress) o->progress(o->progress_ctx, (*ndone)++, pl->n, pl->points, c->m->name);
        /* its length (with --max-context the longest kept) in full */
        cpb_problem q = c->p;
        const int64_t max_seq = c->max_seq;
        const int before = c->points;
        rc = eval_point(o, c->m, &q, c, 0, s->err, s->err_len);
        c->max_seq = max_seq;
        pl->points += c->points - before;
        count_failure(pl, c);
        done[i] = 1;
    }
    return rc;
}

/* The search, pruned (plan_opts.no_prune unset): every candidate's memory and an upper
 * bound on its speed from rank 0 alone (a probe; with --max-context, its bisection by
 * probes and the probe at the length kept); those that fit are simulated in full, the most
 * promising first, unless prunable() by the ones simulated before. */
static int run_pruned(search *s)
{
    const cpb_plan_opts *o = s->o;
    cpb_plan *pl = s->pl;
    int *idx = malloc(sizeof(int) * (size_t)(pl->n > 0 ? pl->n : 1));
    char *done = calloc((size_t)(pl->n > 0 ? pl->n : 1), 1), *refined = calloc((size_t)(pl->n > 0 ? pl->n : 1), 1);
    signed char *in_fw = calloc((size_t)(pl->n > 0 ? pl->n : 1), 1); /* 1: a framework runs it (prunable) */
    char *short_pruned = calloc((size_t)(pl->n > 0 ? pl->n : 1), 1);   /* pruned as shorter than the reach */
    if (!idx || !done || !refined || !in_fw || !short_pruned) {
        free(idx), free(done), free(refined), free(in_fw), free(short_pruned);
        snprintf(s->err, s->err_len, "plan: out of host memory for %d candidates", pl->n);
        return CPB_ERR_NOMEM_HOST;
    }
    int rc = CPB_OK, nfit = 0, ndone = 0;
    for (int i = 0; i < pl->n && rc == CPB_OK; i++) {
        cpb_plan_cand *c = &pl->c[i];
        if (o->progress && !o->max_context) o->progress(o->progress_ctx, ndone, pl->n, pl->points, c->m->name);
        rc = o->max_context ? run_candidate(s, i) : eval_point(o, c->m, &c->p, c, 1, s->err, s->err_len);
        if (rc != CPB_OK) break;
        pl->probes += c->probes;
        if (!c->fits) {
            /* done: memory alone says it does not fit (or rank 0 failed) */
            ndone++;
            count_failure(pl, c);
            continue;
        }
        in_fw[i] = (signed char)cpb_plan_in_framework(c->m, &c->p, o->stack);
        /* by the bound on its speed, fastest first (insertion: a few hundred at most) */
        int k = nfit++;
        while (k > 0 && pl->c[idx[k - 1]].row.tokens_per_s_per_gpu < c->row.tokens_per_s_per_gpu) {
            idx[k] = idx[k - 1];
            k--;
        }
        idx[k] = i;
    }
    /* with --max-context the reach is known from the probes; should a point in full fail
     * (then it is not eligible), the reach is shorter: the ones pruned as shorter than the
     * reach assumed but not than the real one are reconsidered */
    int64_t reach = o->max_context ? reach_of(pl, NULL, o->bisect) : 0;
    while (rc == CPB_OK) {
        rc = full_pass(s, idx, nfit, done, refined, in_fw, reach, short_pruned, &ndone);
        if (rc != CPB_OK || !o->max_context) break;
        const int64_t real = reach_of(pl, done, o->bisect);
        int again = 0;
        for (int i = 0; real < reach && i < pl->n; i++) {
            cpb_plan_cand *c = &pl->c[i];
            if (!c->pruned || !short_pruned[i] || c->max_seq < real) continue;
            c->pruned = short_pruned[i] = 0;
            pl->pruned--;
            again = 1;
        }
        if (!again) break;
        reach = real;
    }
    free(idx);
    free(done);
    free(refined);
    free(in_fw);
    free(short_pruned);
    return rc;
}

/* the recommendation again with every rank simulated, when that is cheap */
static int check_exact(const cpb_plan_opts *o, cpb_plan *pl, char *err, size_t err_len)
{
    if (pl->recommended < 0 || o->sim.ranks == CPB_SIM_RANKS_EXACT || o->base.C > CPB_SIM_EXACT_MAX_RANKS) return CPB_OK;
    const cpb_plan_cand *r = &pl->c[pl->recommended];
    cpb_plan_opts ex = *o;
    ex.sim.ranks = CPB_SIM_RANKS_EXACT;
    static cpb_plan_cand c;
    c = *r;
    CPB_TRY(eval_point(&ex, r->m, &r->p, &c, 0, err, err_len));
    pl->points++;
    if (c.need == r->need && c.need_host == r->need_host && c.row.step_s == r->row.step_s && c.row.code == r->row.code) {
        pl->exact_check = 1;
    } else {
        pl->exact_check = -1;
        snprintf(pl->exact_why, sizeof pl->exact_why, "every rank: peak %lld B, host %lld B, step %.9g s; alike "
                 "ranks once: %lld B, %lld B, %.9g s", (long long)c.need, (long long)c.need_host, c.row.step_s,
                 (long long)r->need, (long long)r->need_host, r->row.step_s);
    }
    return CPB_OK;
}

int cpb_plan_search(const cpb_plan_opts *o, cpb_plan *pl, char *err, size_t err_len)
{
    memset(pl, 0, sizeof *pl);
    pl->recommended = pl->closest = pl->runner_up = pl->roomy = -1;
    cpb_plan_opts oo = *o;
    const char *np = getenv("CPB_PLAN_NO_PRUNE");
    if (np && np[0] && strcmp(np, "0") != 0) oo.no_prune = 1; /* the check that pruning changes nothing */
    const int64_t C = o->base.C;
    if (C <= 0) {
        snprintf(err, err_len, "plan: --gpus C is required (the number of GPUs)");
        return CPB_ERR_INVALID;
    }
    if (is_model(o)) CPB_TRY(cpb_plan_layout_given(&oo.given, (int)C, err, err_len));
    if (o->max_context) {
        /* defaults scale with the GPUs: 16K, 2M and 32K tokens per GPU (128K to 16M in steps
         * of 256K on 8) */
        if (oo.seq_start <= 0) oo.seq_start = 16384 * C;
        if (oo.seq_stop <= 0) oo.seq_stop = 2097152 * C;
        if (oo.bisect <= 0) oo.bisect = 32768 * C;
        pl->seq_start = oo.seq_start, pl->seq_stop = oo.seq_stop, pl->bisect = oo.bisect;
    } else if (o->base.S <= 0) {
        snprintf(err, err_len, "plan: give --seq S (the context length) or --max-context");
        return CPB_ERR_INVALID;
    }
    if (o->methods && o->methods[0]) {
        /* every name a method's */
        for (const char *n = o->methods; *n;) {
            size_t len = strcspn(n, ",");
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), n);
            if (!cpb_method_find(name)) {
                snprintf(err, err_len, "plan: no method '%s' (see `cpbench list`)", name);
                return CPB_ERR_INVALID;
            }
            n += len + (n[len] == ',');
        }
    }
    pl->min_headroom = o->min_headroom;
    pl->tie = o->tie > 0 ? o->tie : CPB_PLAN_TIE;
    /* candidates that differ only in whole-model parts share their layer trial (sim_layer.h) */
    cpb_sim_cache *cache = o->sim.cache ? NULL : cpb_sim_cache_new();
    if (cache) oo.sim.cache = cache;
    search s = {&oo, pl, 0, NULL, err, err_len};
    int rc = CPB_OK;
    for (int i = 0; i < cpb_method_count() && rc == CPB_OK; i++) {
        if (!cpb_plan_method_listed(o->methods, cpb_method_at(i)->name)) continue;
        pl->methods++;
        rc = enumerate(&s, cpb_method_at(i));
    }
    if (rc == CPB_OK && !oo.no_prune) {
        rc = run_pruned(&s);
    } else {
        for (int i = 0; i < pl->n && rc == CPB_OK; i++) {
            if (o->progress && !o->max_context) o->progress(o->progress_ctx, i, pl->n, pl->points, pl->c[i].m->name);
            rc = run_candidate(&s, i);
            pl->points += pl->c[i].points;
            pl->probes += pl->c[i].probes;
            count_failure(pl, &pl->c[i]);
        }
    }
    if (o->progress && rc == CPB_OK) o->progress(o->progress_ctx, pl->n, pl->n, pl->points, "");
    free(s.combos);
    if (rc == CPB_OK) {
        cpb_plan_rank(pl, o->max_context);
        rc = check_exact(&oo, pl, err, err_len);
    }
    cpb_sim_cache_free(cache);
    if (rc != CPB_OK) cpb_plan_free(pl);
    return rc;
}

void cpb_plan_free(cpb_plan *pl)
{
    free(pl->c);
    free(pl->order);
    pl->c = NULL;
    pl->order = NULL;
    pl->n = 0;
}
