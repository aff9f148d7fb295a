/* plan_rank.c — the table order, the Pareto frontier and the recommendation of a plan
 * (plan.h states the rules). */
#include <stdlib.h>

#include "plan.h"

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

void cpb_plan_rank(cpb_plan *pl, int max_context)
{
    free(pl->order);
    pl->order = malloc(sizeof(int) * (size_t)(pl->n > 0 ? pl->n : 1));
    pl->recommended = pl->closest = pl->runner_up = pl->roomy = -1;
    if (!pl->order) return;
    for (int i = 0; i < pl->n; i++) pl->order[i] = i;
    sort_plan = pl;
    sort_max_context = max_context;
    qsort(pl->order, (size_t)pl->n, sizeof(int), cmp_idx);
    for (int k = 0; k < pl->n; k++) {
        const cpb_plan_cand *c = &pl->c[pl->order[k]];
        if (fits(c)) {
            if (pl->recommended < 0) pl->recommended = pl->order[k];
            else if (pl->runner_up < 0) pl->runner_up = pl->order[k];
            if (pl->roomy < 0 && c->cap > 0 && (double)(c->cap - c->need) >= CPB_PLAN_ROOMY * (double)c->cap)
                pl->roomy = pl->order[k];
        } else if (pl->recommended < 0 && pl->closest < 0 && c->bound != CPB_BOUND_ERROR) {
            pl->closest = pl->order[k];
        }
    }
    for (int i = 0; i < pl->n; i++) {
        cpb_plan_cand *c = &pl->c[i];
        c->frontier = fits(c);
        for (int j = 0; j < pl->n && c->frontier; j++)
            if (j != i && fits(&pl->c[j]) && dominates(&pl->c[j], c, max_context)) c->frontier = 0;
    }
}
