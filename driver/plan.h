/* plan.h — `cpbench plan`: the fastest configuration that fits, found on the simulator.
 *
 * The search runs every method with every combination of its knobs' candidate values
 * (cpb_knob.candidates; a choice knob's choices; a knob given on the command line, or one
 * that describes the setup (cpb_knob.setup: --framework, --host-ram), keeps its value), on
 * the whole model (--scope model, the default) or one attention layer.  A new knob of a
 * method, or of every simulated point, is searched as soon as its table says what to try.
 *
 * Each candidate gets the row `cpbench run` would write for it, what it needs of device
 * and host memory against what is usable, and what bounds it: device or host memory when
 * it does not fit, else compute or communication, from the critical path of the
 * simulator's stream timelines.  With max_context each candidate's longest fitting length
 * is bisected instead (its row is the one at that length).
 *
 * The table: at a given length, the candidates that fit by tokens/s per GPU (then the
 * smaller peak, then search order); with max_context by their longest context (then the
 * faster there); then the ones that do not fit, closest first; errors last.
 *
 * The recommendation (docs/simulator.md, "What plan recommends"):
 *   - eligible: it fits with at least min_headroom of the usable memory free (with
 *     max_context each candidate's length is the longest at which it has that headroom);
 *     a candidate under the floor is listed (low_headroom) but never recommended;
 *   - calibrated first: a candidate whose attention calls ran (some of) on our own kernels
 *     (its row's attn_impl own or mixed: --attn own, --upipe-bwd delta, --fpdt-bwd delta)
 *     has an uncalibrated speed estimate; it is recommended only when no calibrated
 *     candidate is eligible (then rec_uncalibrated says so);
 *   - ties: among the eligible of the chosen kind, the best (the fastest; with max_context
 *     the longest, to within the bisection step, then the fastest of those) and every one
 *     within the prediction's uncertainty (tie, a fraction: CPB_PLAN_TIE) of its tokens/s
 *     are tied; the most headroom breaks the tie, then the faster, then the table order.
 * The rows carry the marks (cpb_row.plan: recommended, tie, under-floor, uncalibrated), and
 * paper/make_figures.py --plan draws the row marked recommended. */
#ifndef CPB_PLAN_H
#define CPB_PLAN_H

#include "cpb_method.h"
#include "row.h"
#include "sim_layer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cpb_plan_bound {
    CPB_BOUND_COMPUTE = 0,  /* fits; compute is most of the critical path */
    CPB_BOUND_COMM,         /* fits; collectives and host copies are most of it */
    CPB_BOUND_DEVICE_MEM,   /* does not fit the device */
    CPB_BOUND_HOST_MEM,     /* fits the device, not the host's memory */
    CPB_BOUND_ERROR,        /* the simulation failed (a bug: its reason says what) */
} cpb_plan_bound;
const char *cpb_plan_bound_name(int bound);

typedef struct cpb_plan_opts {
    cpb_sim_opts sim;        /* GPU profile, GPUs per node, capacities, calibration */
    const char *scope;       /* "model" (NULL: model) or "layer" */
    cpb_problem base;        /* shape, dtype and world size C; S = the length (0 with max_context) */
    cpb_knobs given;         /* knobs given on the command line: not searched */
    int max_context;         /* bisect each candidate's longest fitting length */
    int64_t seq_start, seq_stop, bisect; /* its range (0: 16K, 2M and 32K tokens per GPU) */
    double min_headroom;     /* the floor: a fraction of the usable memory left free (the
                                command's default CPB_PLAN_MIN_HEADROOM; 0: none) */
    double tie;              /* the uncertainty within which speeds tie (0: CPB_PLAN_TIE) */
    const char *methods;     /* search only these: "m1,m2" (NULL or "": every method) */
    const char *stack;       /* --stack: the framework family whose settings the plan names (NULL
                                or "": any); pruning keeps the tied candidates a family has */
    /* 1: simulate every point in full.  By default a point is decided by memory first
     * (rank 0 alone, exact by the symmetric-allocation rule) and only the points that fit
     * are simulated in full; the plan is the same (tests/unit/test_plan_prune.c).  The
     * environment variable CPB_PLAN_NO_PRUNE=1 sets it too. */
    int no_prune;
    /* 1: every candidate that fits is simulated in full (no pruning by speed; memory first
     * stays, it is exact): what --out asks for, a row of every candidate in the file */
    int every_row;
    /* called after every simulated point (may be NULL) */
    void (*progress)(void *ctx, int cands_done, int cands_total, int points, const char *next);
    void *progress_ctx;
} cpb_plan_opts;

typedef struct cpb_plan_cand {
    const cpb_method *m;
    cpb_problem p;            /* its knobs; p.S the length of its row */
    char knobs[160];          /* "head_chunk=8 seq_chunk=65536", "" without knobs */
    cpb_row row;              /* as `cpbench run` writes it */
    int fits;
    int64_t need, need_host;  /* device and host bytes per GPU it needs ... */
    int64_t cap, cap_host;    /* ... and those usable */
    double over;              /* max(need / cap, need_host / cap_host) - 1: <= 0 fits */
    int bound;                /* cpb_plan_bound */
    double bound_share;       /* compute / communication: its share of the critical path */
    const char *bound_detail; /* communication: the largest part ("all_to_all", "host copies") */
    int64_t max_seq;          /* max_context: the longest fitting length (0: none) */
    int64_t first_oom;        /* max_context: the shortest length that did not fit (0: none) ... */
    int limit;                /* ... and what it ran out of (cpb_plan_bound) */
    int points;               /* points simulated for it (in full) */
    int probes;               /* points decided by memory alone (rank 0: plan_opts.no_prune) */
    /* not simulated in full: it fits (its memory is exact), and its row's times are a
     * lower bound and its rates an upper bound (cpb_sim_opts.memory_only) by which two
     * candidates simulated in full are faster, with no more memory; it cannot be the
     * recommendation, the runner-up, the fastest, the roomiest or on the frontier (plan.c,
     * prunable).  Whether it is tied is not known when its bound is within the tie of the
     * best (cpb_plan.ties_unknown).  Its row is not a prediction: --out does not write it. */
    int pruned;
    int frontier;             /* on the Pareto frontier (memory vs tokens/s; max_context: length vs tokens/s) */
    /* the recommendation's rules (cpb_plan_rank) */
    int low_headroom;         /* fits, with less than the floor of headroom: never recommended */
    int uncalibrated;         /* some attention calls ran on our kernels (row attn_impl own or mixed) */
    int tie;                  /* within the uncertainty of the best eligible one (when there are several) */
} cpb_plan_cand;

typedef struct cpb_plan {
    cpb_plan_cand *c;
    int n;
    int *order;               /* [n] the table's order: fitting ones best first, then the others
                                 closest first, errors last */
    int recommended;          /* index into c; -1 when none fits */
    int closest;              /* when none fits: the candidate that comes closest; else -1 */
    int runner_up;            /* the next best fitting one, -1 when none */
    int roomy;                /* the fastest fitting one with at least CPB_PLAN_ROOMY headroom */
    int fastest;              /* the first fitting one of the table (-1: none fits) */
    int best_calibrated;      /* the first fitting, calibrated one of the table (-1: none) */
    int roomiest_low;         /* when none is eligible: the fitting one with the most headroom */
    int rec_uncalibrated;     /* the recommendation is uncalibrated: no calibrated one is eligible */
    int ties;                 /* candidates simulated in full tied with the recommendation (itself
                                 not counted) */
    int ties_unknown;         /* pruned candidates whose bound is within the tie of the best: each
                                 may be tied (a plan without pruning counts the tied among them in
                                 ties); none is the recommendation (plan.c, prunable) */
    int low;                  /* fitting candidates under the headroom floor */
    double min_headroom, tie; /* the rules applied (cpb_plan_rank reads them) */
    int methods;              /* methods searched */
    int refused;              /* knob combinations a method or a check refused */
    char refusals[2048];      /* methods with no candidate at all, each with its reason */
    int errors;               /* candidates whose simulation failed (a bug: the plan exits 1) */
    int unsimulated;          /* candidates the simulator declined (status unsupported: a point
                                 beyond its trace bound); listed with the reason, never recommended,
                                 and not a bug (cpb_plan_count_failure) */
    int points;               /* points simulated (in full) */
    int probes;               /* points decided by memory alone (one rank each) */
    int pruned;               /* candidates pruned by the bound on their speed (cand.pruned) */
    int64_t seq_start, seq_stop, bisect; /* max_context: the range searched */
    /* the recommendation simulated again with every rank (--sim-ranks exact), when the
     * search took one rank per class of alike ranks and the world has at most
     * CPB_SIM_EXACT_MAX_RANKS: 1 the same peak and step time, -1 not (then
     * exact_why says how), 0 not checked */
    int exact_check;
    char exact_why[256];
} cpb_plan;

/* headroom below which the allocator's fragmentation can make a fitting run fail
 * (docs/simulator.md: the caching allocator's gap): the recommendation names the fastest
 * candidate with at least this much too */
#define CPB_PLAN_ROOMY 0.10
/* the default headroom floor (--min-headroom 10): the same gap */
#define CPB_PLAN_MIN_HEADROOM 0.10
/* the uncertainty of a predicted tokens/s when two candidates of one plan are compared: an
 * estimate, docs/simulator.md "What plan recommends" gives its reasoning */
#define CPB_PLAN_TIE 0.02
/* a limit of max_context beyond the bounds: the headroom floor (cpb_plan_bound_name) */
#define CPB_BOUND_FLOOR 5

/* the row's attention calls ran, some or all, on our own kernels (attn_impl own or mixed) */
int cpb_plan_row_uncalibrated(const cpb_row *r);
/* name is in the comma list methods (NULL or "": every method is) */
int cpb_plan_method_listed(const char *methods, const char *name);
/* fraction of the usable device memory a candidate leaves free */
double cpb_plan_headroom(const cpb_plan_cand *c);

/* The layout of a candidate (plan_layout.c; the whole-model scope only): a layout given
 * alone as --dp R fixes cp = GPUs / R in `given` (CPB_ERR_INVALID when it does not divide);
 * cpb_plan_layout resolves a candidate's combo (its cp searched or given) into p->C and
 * the dp knob, and says whether to try it */
enum { CPB_PLAN_LAYOUT_USE = 0, CPB_PLAN_LAYOUT_SKIP, CPB_PLAN_LAYOUT_REFUSED };
int cpb_plan_layout_given(cpb_knobs *given, int gpus, char *err, size_t err_len);
int cpb_plan_layout(const cpb_plan_opts *o, const cpb_knobs *given, cpb_knobs *combo, cpb_problem *p, char *why,
                    size_t why_len);

/* Search.  CPB_OK with the plan (even when nothing fits: recommended = -1), or
 * CPB_ERR_INVALID for bad input with err set.  Release with cpb_plan_free. */
int cpb_plan_search(const cpb_plan_opts *o, cpb_plan *out, char *err, size_t err_len);
void cpb_plan_free(cpb_plan *pl);
/* a candidate whose simulation did not finish (bound CPB_BOUND_ERROR): 1 when the simulator
 * declined the point (status unsupported, e.g. more trace entries than its bound), which is a
 * limit of the tool and not a bug; 0 for any other failure, which is a bug */
int cpb_plan_cand_unsimulated(const cpb_plan_cand *c);

/* Of the candidates tied with the recommendation, the one with the most headroom that a
 * framework (of family stack, when not NULL or "") runs (cpb_plan_in_framework): as good a
 * choice by the prediction, named when the recommendation is this suite's own.  -1: none. */
int cpb_plan_tied_in_framework(const cpb_plan *pl, const char *stack);

/* The ranking, frontier and recommendation of the candidates, with the rules pl->min_headroom
 * and pl->tie (0: CPB_PLAN_TIE) (called by cpb_plan_search; exposed for tests) */
void cpb_plan_rank(cpb_plan *pl, int max_context);

#ifdef __cplusplus
}
#endif
#endif
