/* plan_rank.c — the table order, the Pareto frontier and the recommendation of a plan
 * (plan.h states the rules). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "plan_frameworks.h"

static const cpb_plan *sort_plan; /* qsort has no context argument */
static int sort_max_context;

static int fits(const cpb_plan_cand *c)
{
    return c->bound == CPB_BOUND_COMPUTE || c->bound == CPB_BOUND_COMM;
}

static int group(const cpb_plan_cand *c)
{
    return fits(c) ? 0 : c->bound == CPB_BOUND_ERROR ? 2 : 1;
}

static double tps(const cpb_plan_cand *c)
{
    return c->row.tokens_per_s_per_gpu;
}

/* <0 when candidate a ranks before b */
static int compare(int ia, int ib)
{
    const cpb_plan_cand *a = &sort_plan->c[ia], *b = &sort_plan->c[ib];
    int ga = group(a), gb = group(b);
    if (ga != gb) return ga - gb;
    if (ga == 0) {
        if (sort_max_context && a->max_seq != b->max_seq) return a->max_seq > b->max_seq ? -1 : 1;
        if (tps(a) != tps(b)) return tps(a) > tps(b) ? -1 : 1;
        if (a->need != b->need) return a->need < b->need ? -1 : 1;
    } else if (ga == 1) {
        if (a->over != b->over) return a->over < b->over ? -1 : 1;
        if (a->need != b->need) return a->need < b->need ? -1 : 1; /* as far over the host: less device */
    }
    return ia - ib;
}

static int cmp_idx(const void *x, const void *y)
{
    return compare(*(const int *)x, *(const int *)y);
}

/* j is at least as good as i in both respects and better in one */
static int dominates(const cpb_plan_cand *j, const cpb_plan_cand *i, int max_context)
{
    if (max_context)
        return j->max_seq >= i->max_seq && tps(j) >= tps(i) && (j->max_seq > i->max_seq || tps(j) > tps(i));
    return j->need <= i->need && tps(j) >= tps(i) && (j->need < i->need || tps(j) > tps(i));
}

int cpb_plan_row_uncalibrated(const cpb_row *r)
{
    return strcmp(r->attn_impl, "own") == 0 || strcmp(r->attn_impl, "mixed") == 0;
}

double cpb_plan_headroom(const cpb_plan_cand *c)
{
    return c->cap > 0 ? (double)(c->cap - c->need) / (double)c->cap : 0.0;
}

/* one of the kind asked for (calibrated or not) that may be recommended */
static int eligible(const cpb_plan_cand *c, int calibrated)
{
    return fits(c) && !c->low_headroom && c->uncalibrated == !calibrated;
}

/* the recommendation among the eligible ones of a kind: the best, those tied with it, and
 * of those the one with the most headroom (plan.h).  -1 when none is eligible. */
static int choose(cpb_plan *pl, int max_context, int calibrated)
{
    int best = -1;
    for (int k = 0; k < pl->n && best < 0; k++)
        if (eligible(&pl->c[pl->order[k]], calibrated) && !pl->c[pl->order[k]].pruned) best = pl->order[k];
    if (best < 0) return -1;
    const double tie = pl->tie > 0 ? pl->tie : CPB_PLAN_TIE;
    /* with max_context: the longest to within the bisection step, and of those the fastest */
    double top = tps(&pl->c[best]);
    int64_t reach = max_context ? pl->c[best].max_seq - (pl->bisect > 0 ? pl->bisect : 0) : 0;
    for (int i = 0; i < pl->n; i++) {
        const cpb_plan_cand *c = &pl->c[i];
        if (eligible(c, calibrated) && !c->pruned && (!max_context || c->max_seq >= reach) && tps(c) > top) top = tps(c);
    }
    int rec = -1, n = 0, unknown = 0;
    for (int k = 0; k < pl->n; k++) {
        int i = pl->order[k];
        cpb_plan_cand *c = &pl->c[i];
        if (!eligible(c, calibrated) || (max_context && c->max_seq < reach) || tps(c) < top * (1.0 - tie)) continue;
        if (c->pruned) {
            /* its speed is a bound within the tie: it may be tied, never recommended
             * (plan.c, prunable) */
            unknown++;
            continue;
        }
        c->tie = 1;
        n++;
        if (rec < 0) {
            rec = i;
            continue;
        }
        const cpb_plan_cand *r = &pl->c[rec];
        double hc = cpb_plan_headroom(c), hr = cpb_plan_headroom(r);
        if (hc > hr || (hc == hr && tps(c) > tps(r))) rec = i;
    }
    pl->ties = n - 1;
    pl->ties_unknown = unknown;
    if (n == 1) pl->c[rec].tie = 0;
    return rec;
}

void cpb_plan_rank(cpb_plan *pl, int max_context)
{
    free(pl->order);
    pl->order = malloc(sizeof(int) * (size_t)(pl->n > 0 ? pl->n : 1));
    pl->recommended = pl->closest = pl->runner_up = pl->roomy = -1;
    pl->fastest = pl->best_calibrated = pl->roomiest_low = -1;
    pl->rec_uncalibrated = pl->ties = pl->ties_unknown = pl->low = 0;
    if (!pl->order) return;
    for (int i = 0; i < pl->n; i++) {
        cpb_plan_cand *c = &pl->c[i];
        pl->order[i] = i;
        c->uncalibrated = cpb_plan_row_uncalibrated(&c->row);
        c->low_headroom = fits(c) && cpb_plan_headroom(c) < pl->min_headroom;
        c->tie = 0;
        pl->low += c->low_headroom;
        if (c->low_headroom && (pl->roomiest_low < 0 || cpb_plan_headroom(c) > cpb_plan_headroom(&pl->c[pl->roomiest_low])))
            pl->roomiest_low = i;
    }
    sort_plan = pl;
    sort_max_context = max_context;
    qsort(pl->order, (size_t)pl->n, sizeof(int), cmp_idx);
    for (int k = 0; k < pl->n; k++) {
        const cpb_plan_cand *c = &pl->c[pl->order[k]];
        if (fits(c)) {
            if (pl->fastest < 0) pl->fastest = pl->order[k];
            if (pl->best_calibrated < 0 && !c->uncalibrated) pl->best_calibrated = pl->order[k];
            if (pl->roomy < 0 && c->cap > 0 && (double)(c->cap - c->need) >= CPB_PLAN_ROOMY * (double)c->cap)
                pl->roomy = pl->order[k];
        } else if (pl->fastest < 0 && pl->closest < 0 && c->bound != CPB_BOUND_ERROR) {
            pl->closest = pl->order[k];
        }
    }
    pl->recommended = choose(pl, max_context, 1);
    if (pl->recommended < 0 && (pl->recommended = choose(pl, max_context, 0)) >= 0) pl->rec_uncalibrated = 1;
    if (pl->recommended >= 0) pl->roomiest_low = -1;
    /* the runner-up: the best other eligible one of the recommendation's kind */
    for (int k = 0; k < pl->n && pl->recommended >= 0 && pl->runner_up < 0; k++) {
        int i = pl->order[k];
        if (i != pl->recommended && eligible(&pl->c[i], !pl->rec_uncalibrated)) pl->runner_up = i;
    }
    /* the marks in the rows' plan column */
    for (int i = 0; i < pl->n; i++) {
        cpb_plan_cand *c = &pl->c[i];
        snprintf(c->row.plan, sizeof c->row.plan, "%s%s%s%s", i == pl->recommended ? "recommended " : "",
                 c->tie && i != pl->recommended ? "tie " : "", c->low_headroom ? "under-floor " : "",
                 c->uncalibrated ? "uncalibrated " : "");
        size_t n = strlen(c->row.plan);
        if (n) c->row.plan[n - 1] = 0;
    }
    for (int i = 0; i < pl->n; i++) {
        cpb_plan_cand *c = &pl->c[i];
        c->frontier = fits(c);
        for (int j = 0; j < pl->n && c->frontier; j++)
            if (j != i && fits(&pl->c[j]) && dominates(&pl->c[j], c, max_context)) c->frontier = 0;
    }
}

int cpb_plan_tied_in_framework(const cpb_plan *pl, const char *stack)
{
    int best = -1;
    for (int i = 0; i < pl->n; i++) {
        const cpb_plan_cand *c = &pl->c[i];
        if (!c->tie || i == pl->recommended || !cpb_plan_in_framework(c->m, &c->p, stack)) continue;
        if (best < 0 || cpb_plan_headroom(c) > cpb_plan_headroom(&pl->c[best])) best = i;
    }
    return best;
}
