/* sweep.h — which sequence lengths a sweep runs, as pure functions (no trials, no I/O), so
 * unit tests can drive them with a fake trial.
 *
 * Per method: grow S from --seq-start by --factor (or walk --seq-list in ascending order)
 * until the first OOM or past --seq-stop; then, with --bisect STEP, bisect between the last
 * point that fit and the first OOM until they are at most STEP apart.  Every point is a
 * multiple of the method's granule (what its token layout needs: 2C for zigzag, the chunk
 * for fpdt, C for contiguous), found by cpb_sweep_granule from the method's own check().
 *
 *     cpb_sweep_state st;  cpb_sweep_begin(&st, &plan);
 *     for (int64_t S; (S = cpb_sweep_next(&st)) > 0;) cpb_sweep_report(&st, S, run(S));
 */
#ifndef CPB_SWEEP_H
#define CPB_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#include "cpb_method.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cpb_point_status {
    CPB_POINT_OK = 0,      /* fit: grow (or bisect upwards) */
    CPB_POINT_OOM,         /* did not fit: bisect below it, larger points are not run */
    CPB_POINT_REFUSED,     /* the method refused this shape: try the next point */
    CPB_POINT_ERROR,       /* anything else: stop this method's sweep */
} cpb_point_status;

/* "ok", "oom", "refused", "error" (the results file's status column) */
const char *cpb_point_status_name(cpb_point_status s);
/* inverse ("skipped", the name of files before schema 4, is "refused"); -1 for an unknown
 * name */
int cpb_point_status_parse(const char *name);

#define CPB_SWEEP_MAX_LIST 64

typedef struct cpb_sweep_plan {
    int64_t start, stop;   /* growth mode (n_list == 0): start > 0, stop >= start */
    double factor;         /* growth factor > 1 (default 2) */
    int64_t bisect;        /* bisection step; 0 = no bisection */
    int64_t list[CPB_SWEEP_MAX_LIST]; /* list mode when n_list > 0 */
    int n_list;
    int64_t granule;       /* every point is a positive multiple of it (>= 1) */
    int end_at_stop;       /* growth mode: stop itself is the last growth point when the growth
                            * does not land on it, so a search for the largest length that fits
                            * in [start, stop] tries stop (and bisects below it) */
} cpb_sweep_plan;

enum { CPB_SWEEP_GROW, CPB_SWEEP_BISECT, CPB_SWEEP_DONE };

typedef struct cpb_sweep_state {
    cpb_sweep_plan plan;
    int phase;
    int64_t points[CPB_SWEEP_MAX_LIST]; /* growth/list points, rounded, ascending, unique */
    int n_points, next_i;
    int64_t last_fit;      /* largest S that fit (0 = none yet) */
    int64_t first_oom;     /* smallest S that did not fit (0 = none yet) */
    int64_t pending;       /* the point handed out and not yet reported */
    int n_run;             /* points reported so far */
} cpb_sweep_state;

/* 0, or CPB_ERR_INVALID with a message naming the bad option. */
int cpb_sweep_plan_check(const cpb_sweep_plan *p, char *err, size_t err_len);

/* v in the fewest significant digits that read back as v ("1.0000001", not "1") */
const char *cpb_sweep_number(double v, char *buf, size_t len);

/* S rounded down to a multiple of g, at least g. */
int64_t cpb_sweep_round(int64_t S, int64_t g);

void cpb_sweep_begin(cpb_sweep_state *st, const cpb_sweep_plan *plan);
/* The next S to run, or 0 when this method's sweep is over. */
int64_t cpb_sweep_next(cpb_sweep_state *st);
/* The outcome of the point cpb_sweep_next returned. */
void cpb_sweep_report(cpb_sweep_state *st, int64_t S, cpb_point_status s);
/* An upper bound on the points still to run (for the time-left estimate). */
int cpb_sweep_points_left(const cpb_sweep_state *st);

/* The smallest granule g (from C, 2C, 4C, ... and the method's token-count knobs, e.g.
 * fpdt's seq_chunk) such that the
 * method's check() accepts odd multiples of g near both ends of the sweep, `lo` and `hi`
 * tokens (a method may accept short lengths a long one would need rounded: fpdt takes
 * S < chunk as one chunk); C when none is accepted (the trials then record the method's
 * refusal).  p->S is ignored. */
int64_t cpb_sweep_granule(const cpb_method *m, const cpb_problem *p, int64_t lo, int64_t hi);

/* the greatest common divisor (lengths and token-count knobs meet at their lcm) */
int64_t cpb_gcd64(int64_t a, int64_t b);

#ifdef __cplusplus
}
#endif
#endif
