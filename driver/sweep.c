/* sweep.c — the sweep's choice of points (see sweep.h). */
#include "sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trial.h"

static const char *const status_names[] = {"ok", "oom", "refused", "error"};

const char *cpb_point_status_name(cpb_point_status s)
{
    return (s >= CPB_POINT_OK && s <= CPB_POINT_ERROR) ? status_names[s] : "error";
}

int cpb_point_status_parse(const char *name)
{
    for (int i = 0; i <= CPB_POINT_ERROR; i++)
        if (strcmp(name, status_names[i]) == 0) return i;
    if (strcmp(name, "skipped") == 0) return CPB_POINT_REFUSED; /* files of schema 1 to 3 */
    return -1;
}

const char *cpb_sweep_number(double v, char *buf, size_t len)
{
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

int64_t cpb_sweep_round(int64_t S, int64_t g)
{
    if (g < 1) g = 1;
    int64_t r = S / g * g;
    return r < g ? g : r;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* growth points start * factor^k <= stop; -1 when there would be more than max */
static int growth_points(const cpb_sweep_plan *p, int64_t *out, int max)
{
    int n = 0;
    for (double s = (double)p->start; s <= (double)p->stop * (1 + 1e-12); s *= p->factor) {
        if (n == max) return -1;
        out[n++] = (int64_t)llround(s);
    }
    if (p->end_at_stop && (n == 0 || out[n - 1] < p->stop)) {
        if (n == max) return -1;
        out[n++] = p->stop;
    }
    return n;
}

int cpb_sweep_plan_check(const cpb_sweep_plan *p, char *err, size_t err_len)
{
    int64_t tmp[CPB_SWEEP_MAX_LIST];
    if (p->granule < 1) {
        snprintf(err, err_len, "sweep granule %lld must be >= 1", (long long)p->granule);
        return 2;
    }
    if (p->bisect < 0) {
        snprintf(err, err_len, "--bisect %lld must be a positive number of tokens (or absent)",
                 (long long)p->bisect);
        return 2;
    }
    if (p->n_list > 0) {
        for (int i = 0; i < p->n_list; i++)
            if (p->list[i] <= 0) {
                snprintf(err, err_len, "--seq-list entry %d is %lld; every length must be > 0",
                         i + 1, (long long)p->list[i]);
                return 2;
            }
        return 0;
    }
    if (p->start <= 0 || p->stop <= 0) {
        snprintf(err, err_len, "a sweep needs --seq-start and --seq-stop (e.g. --seq-start 128K "
                               "--seq-stop 8M) or --seq-list 128K,256K,...");
        return 2;
    }
    if (p->stop < p->start) {
        snprintf(err, err_len, "--seq-stop %lld is below --seq-start %lld", (long long)p->stop,
                 (long long)p->start);
        return 2;
    }
    char f[32];
    cpb_sweep_number(p->factor, f, sizeof f);
    if (!(p->factor > 1.0)) {
        snprintf(err, err_len, "--factor %s must be > 1 (the growth factor between points)", f);
        return 2;
    }
    if (growth_points(p, tmp, CPB_SWEEP_MAX_LIST) < 0) {
        snprintf(err, err_len, "--factor %s from %lld to %lld gives more than %d points; use a "
                               "larger --factor or --bisect to refine",
                 f, (long long)p->start, (long long)p->stop, CPB_SWEEP_MAX_LIST);
        return 2;
    }
    return 0;
}

void cpb_sweep_begin(cpb_sweep_state *st, const cpb_sweep_plan *plan)
{
    memset(st, 0, sizeof *st);
    st->plan = *plan;
    if (st->plan.granule < 1) st->plan.granule = 1;
    int64_t raw[CPB_SWEEP_MAX_LIST];
    int n = plan->n_list > 0 ? plan->n_list : growth_points(plan, raw, CPB_SWEEP_MAX_LIST);
    if (plan->n_list > 0) memcpy(raw, plan->list, (size_t)n * sizeof *raw);
    if (n < 0) n = 0; /* rejected by cpb_sweep_plan_check */
    for (int i = 0; i < n; i++) raw[i] = cpb_sweep_round(raw[i], st->plan.granule);
    qsort(raw, (size_t)n, sizeof *raw, cmp_i64);
    for (int i = 0; i < n; i++)
        if (st->n_points == 0 || raw[i] != st->points[st->n_points - 1]) st->points[st->n_points++] = raw[i];
    st->phase = st->n_points ? CPB_SWEEP_GROW : CPB_SWEEP_DONE;
}

/* the bisection's next midpoint, or 0 when the bracket is as narrow as asked */
static int64_t bisect_point(const cpb_sweep_state *st)
{
    int64_t g = st->plan.granule, lo = st->last_fit, hi = st->first_oom;
    int64_t step = st->plan.bisect > g ? st->plan.bisect : g;
    if (st->plan.bisect <= 0 || lo <= 0 || hi <= lo || hi - lo <= step) return 0;
    int64_t mid = lo + (hi - lo) / 2 / g * g;
    return (mid > lo && mid < hi) ? mid : 0;
}

int64_t cpb_sweep_next(cpb_sweep_state *st)
{
    if (st->pending) return st->pending; /* not reported yet: the same point again */
    if (st->phase == CPB_SWEEP_GROW) {
        if (st->next_i < st->n_points) return st->pending = st->points[st->next_i++];
        st->phase = CPB_SWEEP_BISECT;
    }
    if (st->phase == CPB_SWEEP_BISECT) {
        int64_t mid = bisect_point(st);
        if (mid) return st->pending = mid;
        st->phase = CPB_SWEEP_DONE;
    }
    return 0;
}

void cpb_sweep_report(cpb_sweep_state *st, int64_t S, cpb_point_status s)
{
    if (S != st->pending) return; /* not the point handed out: ignore */
    st->pending = 0;
    st->n_run++;
    switch (s) {
    case CPB_POINT_OK:
        if (S > st->last_fit) st->last_fit = S;
        break;
    case CPB_POINT_OOM:
        if (!st->first_oom || S < st->first_oom) st->first_oom = S;
        /* memory grows with S: larger growth points would not fit either */
        if (st->phase == CPB_SWEEP_GROW) {
            st->next_i = st->n_points;
            st->phase = CPB_SWEEP_BISECT;
        }
        break;
    case CPB_POINT_REFUSED:
        /* a refusal of this length: a larger one may be accepted; inside a bisection there
         * is no answer to bisect on, so stop there */
        if (st->phase == CPB_SWEEP_BISECT) st->phase = CPB_SWEEP_DONE;
        break;
    case CPB_POINT_ERROR:
    default:
        st->phase = CPB_SWEEP_DONE;
        break;
    }
}

int cpb_sweep_points_left(const cpb_sweep_state *st)
{
    if (st->phase == CPB_SWEEP_DONE) return st->pending ? 1 : 0;
    int left = (st->pending ? 1 : 0);
    if (st->phase == CPB_SWEEP_GROW) left += st->n_points - st->next_i;
    if (st->plan.bisect > 0) {
        /* bisection steps: log2 of the bracket over the step; before the first OOM the
         * bracket is guessed as the last growth gap */
        int64_t lo = st->last_fit, hi = st->first_oom;
        if (!hi && st->n_points >= 2) {
            hi = st->points[st->n_points - 1];
            lo = st->points[st->n_points - 2];
        }
        int64_t step = st->plan.bisect > st->plan.granule ? st->plan.bisect : st->plan.granule;
        if (hi > lo && lo > 0 && hi - lo > step) left += (int)ceil(log2((double)(hi - lo) / (double)step));
    }
    return left;
}

/* ---------------------------------------------------------------- granule from check() */

static int accepts(const cpb_method *m, const cpb_problem *p, int64_t S)
{
    cpb_problem q = *p;
    q.S = S;
    return cpb_method_refusal(m, &q, NULL, 0) == CPB_OK;
}

/* two odd multiples of g near `near`: odd so that a layout needing 2g is refused */
static int accepts_granule(const cpb_method *m, const cpb_problem *p, int64_t g, int64_t near)
{
    int64_t k = near / g;
    if (k < 1) k = 1;
    if (k % 2 == 0) k++;
    return accepts(m, p, k * g) && accepts(m, p, (k + 2) * g);
}

int64_t cpb_gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int64_t cpb_sweep_granule(const cpb_method *m, const cpb_problem *p, int64_t lo, int64_t hi)
{
    int64_t C = p->C > 0 ? p->C : 1;
    if (!m || !m->check) return C;
    if (lo < C) lo = C;
    if (hi < lo) hi = lo;
    int64_t cand[80];
    int n = 0;
    for (int64_t g = C; g <= ((int64_t)1 << 40) && n < 64; g *= 2) cand[n++] = g;
    /* the method's token-count knobs (fpdt's chunk): lengths may need to be multiples */
    for (const cpb_knob *k = m->knobs; k && k->name && n < 78; k++) {
        int64_t t = k->type == CPB_KNOB_TOKENS ? cpb_knob_int(p, k->name) : 0;
        if (t <= 0) continue;
        cand[n++] = t;
        cand[n++] = t / cpb_gcd64(t, 2 * C) * 2 * C; /* lcm(t, 2C) */
    }
    qsort(cand, (size_t)n, sizeof *cand, cmp_i64);
    for (int i = 0; i < n; i++)
        if (cand[i] <= hi && accepts_granule(m, p, cand[i], lo) && accepts_granule(m, p, cand[i], hi))
            return cand[i];
    return C;
}
