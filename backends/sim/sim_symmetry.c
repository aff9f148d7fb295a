/* sim_symmetry.c — periods of a world and the comparison of two ranks' traces
 * (sim_symmetry.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_memo.h"
#include "sim_record.h"
#include "sim_symmetry.h"
#include "timeline.h"

int cpb_sim_periods(int C, int gpn, int *out, int max)
{
    int n = 0;
    if (gpn <= 0) gpn = 8;
    if (C <= 1) return 0;
    if (C <= gpn) {
        for (int p = 1; p < C && n < max; p++)
            if (C % p == 0) out[n++] = p;
    } else if (C % gpn == 0) {
        for (int p = gpn; p < C && n < max; p += gpn)
            if (C % p == 0) out[n++] = p;
    }
    return n;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* group gi of img is group gr of rep moved by `shift`: the same member set (moved) and
 * the same occurrence */
static int group_moved(const cpb_sim_world *w, int gr, int gi, int shift)
{
    const sim_group *a = &w->groups[gr], *b = &w->groups[gi];
    if (a->size != b->size || a->occurrence != b->occurrence) return 0;
    int n = a->size, C = w->world, same = 1;
    int *x = malloc(sizeof(int) * (size_t)n), *y = malloc(sizeof(int) * (size_t)n);
    if (!x || !y) {
        free(x), free(y);
        return 0;
    }
    for (int i = 0; i < n; i++) x[i] = (a->ranks[i] + shift) % C, y[i] = b->ranks[i];
    qsort(x, (size_t)n, sizeof(int), cmp_int);
    qsort(y, (size_t)n, sizeof(int), cmp_int);
    same = memcmp(x, y, sizeof(int) * (size_t)n) == 0;
    free(x), free(y);
    return same;
}

static int peer_moved(int a, int b, int shift, int C)
{
    return a < 0 ? b < 0 : b == (a + shift) % C;
}

/* the work of an op: what its modelled time depends on */
static int same_work(const sim_entry *x, const sim_entry *y)
{
    return x->flops == y->flops && x->bytes == y->bytes && x->w0 == y->w0 && x->w1 == y->w1 && x->w2 == y->w2 &&
           x->w3 == y->w3;
}

/* set-up entries other than collectives take no time and order nothing (timeline.h):
 * the comparison passes over them */
static const sim_entry *next_compared(sim_iter *it)
{
    const sim_entry *e;
    while ((e = sim_iter_next(it)) && e->phase == SIM_PHASE_SETUP && e->type != SIM_COLL) {}
    return e;
}

int cpb_sim_traces_alike(const cpb_sim_world *w, const cpb_sim_hw *hw, int rep, int img, double *op_diff, char *why,
                         size_t n)
{
    const sim_trace *a = &w->traces[rep], *b = &w->traces[img];
    const int C = w->world, shift = ((img - rep) % C + C) % C;
    *op_diff = 0;
    if (a->nstreams != b->nstreams) {
        snprintf(why, n, "rank %d uses %d streams, rank %d %d", rep, a->nstreams, img, b->nstreams);
        return 0;
    }
    /* group pairs already compared: most entries reuse a few groups */
    int last_gr = -1, last_gi = -1;
    double total = 0, diff = 0;
    cpb_op_memo *memo = calloc(1, sizeof *memo);
    if (!memo) {
        snprintf(why, n, "out of host memory comparing rank %d with rank %d", img, rep);
        return 0;
    }
    /* both read with their replicated runs (sim_world.h: a compared rank's are never stored) */
    sim_iter ia, ib;
    sim_iter_start(&ia, a);
    sim_iter_start(&ib, b);
    const sim_entry *x = next_compared(&ia), *y = next_compared(&ib);
    for (; x && y; x = next_compared(&ia), y = next_compared(&ib)) {
        int same = x->type == y->type && x->phase == y->phase && x->kind == y->kind && x->pcie == y->pcie &&
                   x->stream == y->stream && x->ev == y->ev;
        if (same && x->type == SIM_COLL) {
            same = x->seq == y->seq && x->bytes == y->bytes && peer_moved(x->dst, y->dst, shift, C) &&
                   peer_moved(x->src, y->src, shift, C);
            if (same && !(x->group == last_gr && y->group == last_gi)) {
                same = group_moved(w, x->group, y->group, shift);
                last_gr = x->group, last_gi = y->group;
            }
        } else if (same && x->type == SIM_OP) {
            double tx = cpb_op_memo_time(memo, hw, x);
            total += tx;
            if (!same_work(x, y)) {
                double d = tx - cpb_op_memo_time(memo, hw, y);
                diff += d < 0 ? -d : d;
            }
        }
        if (!same) {
            free(memo);
            snprintf(why, n, "entry %lld of rank %d (%s) differs from rank %d's entry %lld moved by %d ranks",
                     (long long)ib.v, img, y->type == SIM_COLL ? cpb_sim_entry_name(w, y, (char[512]){0}, 512) : "an op",
                     rep, (long long)ia.v, shift);
            return 0;
        }
    }
    free(memo);
    if (x || y) {
        snprintf(why, n, "rank %d's timed trace is %s than rank %d's", img, y ? "longer" : "shorter", rep);
        return 0;
    }
    *op_diff = total > 0 ? diff / total : 0;
    return 1;
}

void cpb_sim_world_drop_trace(cpb_sim_world *w, int r)
{
    if (r < 0 || r >= w->world) return;
    free(w->traces[r].reps);
    if (w->traces[r].cap > w->spare_cap) {
        /* kept for the next rank recorded (sim_world.h) */
        free(w->spare);
        w->spare = w->traces[r].e;
        w->spare_cap = w->traces[r].cap;
    } else {
        free(w->traces[r].e);
    }
    memset(&w->traces[r], 0, sizeof w->traces[r]);
    w->traces[r].rank = r;
}
