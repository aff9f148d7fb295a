/* pcie_share.c — how many GPUs of a node share the host link during each copy.
 *
 * The node's host side (PCIe switches' uplinks, root complexes, host memory) carries at
 * most pcie_node_bw per direction for all its GPUs together.  A copy's share factor is
 * the mean number of copies in the same direction on the same node while it runs
 * (itself included), from the start/end times of the previous pass; timeline.c iterates
 * until the factors settle.  This approximates processor sharing without an event-driven
 * simulation of the link. */
#include <stdlib.h>

#include "pcie_share.h"

typedef struct pt {
    double t;
    int d; /* +w at a start, -w at an end (w copies alike) */
} pt;

static int cmp_pt(const void *a, const void *b)
{
    const pt *x = a, *y = b;
    if (x->t < y->t) return -1;
    if (x->t > y->t) return 1;
    return x->d - y->d; /* ends before starts at the same instant: touching is no overlap */
}

int sim_pcie_shares(sim_copy *c, int64_t n, double *max_change)
{
    *max_change = 0;
    if (n <= 0) return 0;
    pt *p = malloc(sizeof *p * (size_t)(2 * n));
    double *T = malloc(sizeof *T * (size_t)(2 * n));
    double *I = malloc(sizeof *I * (size_t)(2 * n));
    int *C = malloc(sizeof *C * (size_t)(2 * n));
    if (!p || !T || !I || !C) {
        free(p), free(T), free(I), free(C);
        return -1;
    }
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (c[i].t1 <= c[i].t0) continue;
        int w = c[i].w > 0 ? c[i].w : 1;
        p[m++] = (pt){c[i].t0, +w};
        p[m++] = (pt){c[i].t1, -w};
    }
    qsort(p, (size_t)m, sizeof *p, cmp_pt);
    /* piecewise-constant concurrency: C[k] copies active on [T[k], T[k+1]); I[k] its
     * integral from T[0] to T[k] */
    int active = 0;
    double integ = 0;
    for (int64_t k = 0; k < m; k++) {
        if (k > 0) integ += active * (p[k].t - p[k - 1].t);
        active += p[k].d;
        T[k] = p[k].t;
        I[k] = integ;
        C[k] = active;
    }
    for (int64_t i = 0; i < n; i++) {
        if (c[i].t1 <= c[i].t0) continue;
        double at[2] = {c[i].t0, c[i].t1}, val[2];
        for (int q = 0; q < 2; q++) {
            /* last k with T[k] <= t */
            int64_t lo = 0, hi = m - 1;
            while (lo < hi) {
                int64_t mid = (lo + hi + 1) / 2;
                if (T[mid] <= at[q]) lo = mid;
                else hi = mid - 1;
            }
            val[q] = I[lo] + C[lo] * (at[q] - T[lo]);
        }
        double share = (val[1] - val[0]) / (c[i].t1 - c[i].t0);
        if (share < 1.0) share = 1.0;
        double ch = share - c[i].e->share;
        if (ch < 0) ch = -ch;
        if (ch > *max_change) *max_change = ch;
        c[i].e->share = share;
    }
    free(p), free(T), free(I), free(C);
    return 0;
}
