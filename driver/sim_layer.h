/* sim_layer.h — the simulator driver (the backend itself is backends/sim): replay a
 * method's schedule for every rank of a world of any size in one process (no data), with
 * exact tracked memory and a modelled time. */
#ifndef CPB_SIM_LAYER_H
#define CPB_SIM_LAYER_H

#include "cpb_backend.h"
#include "cpb_method.h"
#include "gpu_profiles.h"
#include "row.h"
#include "trial.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Layer trials already simulated, keyed by the layer problem (sim_layer.c: the method, the
 * shape, the length, the world, every knob but the whole-model parts, which a layer trial
 * never reads, and these options): candidates that differ only in whole-model parts (data
 * parallelism, micro-batch, accumulation, state placement, checkpointing) share one trial.
 * A layer row names only its layer's knobs (cpb_row_point), so a shared row is the row each
 * would get.  Create one per search (`plan` does); NULL in cpb_sim_opts: none. */
typedef struct cpb_sim_cache cpb_sim_cache;
cpb_sim_cache *cpb_sim_cache_new(void);
void cpb_sim_cache_free(cpb_sim_cache *c);
/* trials served from the cache, and simulated into it */
void cpb_sim_cache_counts(const cpb_sim_cache *c, int *hits, int *misses);

typedef struct cpb_sim_opts {
    const char *gpu;          /* profile name or alias (gpu_profiles.h; NULL: h100-sxm) */
    const char *calibration;  /* optional calibration file overriding profile constants */
    int gpus_per_node;        /* 0 = 8 */
    int64_t mem_cap;          /* device capacity in bytes; 0 = the profile's usable memory */
    int64_t host_mem_cap;     /* pinned host capacity per rank; 0 = profile's share */
    int no_race_check;        /* 1 = skip the stream-race check */
    int ranks;                /* cpb_sim_ranks: which ranks are simulated */
    double timeout_s;         /* --timeout: a point still simulating after this long stops (0: no bound) */
    /* 1 = memory only: run rank 0 alone and return its exact memory (every rank makes the
     * same allocations, DESIGN section 3, so rank 0's peaks are every rank's) with lower
     * bounds for its times (cpb_sim_lower_bound: fwd_s, bwd_s and step_s are bounds, the
     * rates upper bounds; replayed_ranks 0, no critical path).  What `plan` decides a
     * length by (fits or not) and prunes by, at the cost of one rank; the other ranks'
     * traces, the symmetric-allocation check and the timing model run only for the rows it
     * keeps.
     * 2 = the same, and the last rank (C - 1) too: the times are the larger of the two
     * ranks' bounds (each rank's is a bound of the step, timeline.h), its memory rank 0's
     * (the two checked alike).  Where ranks differ in their work (a contiguous ring: rank
     * C - 1 attends to every earlier token) rank 0's bound is loose; `plan` asks for this
     * one before it simulates a candidate in full, at the cost of two ranks. */
    int memory_only;
    cpb_sim_cache *cache;     /* layer trials to share (NULL: none) */
    int no_repeat;            /* 1 = every iteration of a cpb_repeat loop runs (cpb.h); the
                                 rows must be the same either way (tests/unit/test_repeat.c) */
} cpb_sim_opts;

/* The most trace entries the simulator takes on for one point: the entries of its first
 * rank (a few thousand for a small world; they grow with the world for ring-like methods)
 * times the ranks it will record and replay.  Above it a point would run for minutes (a
 * ring of 65536 ranks at 1M tokens: 2.3 million entries per rank, about 40 ranks, 1.5
 * minutes a point): it is stopped after its first rank with the estimate and what to do
 * (--sim-ranks symmetric, fewer GPUs).  16384 ranks of the same take about 23 million, 16 s. */
#define CPB_SIM_MAX_TRACE_ENTRIES ((int64_t)50 * 1000 * 1000)

/* The estimated work of simulating method m on p: it runs p's rank 0 (the probe) and
 * multiplies its trace entries by the ranks recorded and replayed under o's --sim-ranks.
 * *entries, *seconds (at this machine's pace for rank 0); CPB_OK, or the probe's failure
 * (a refusal, an OOM: then there is no work to bound) with a message. */
int cpb_sim_estimate(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o, int64_t *entries,
                     double *seconds, char *err, size_t err_len);

/* Which ranks the simulator runs and replays.  Every rank of a method makes the same
 * allocations (DESIGN section 3), and ranks that a move of the whole world onto itself
 * maps to each other have the same timeline (backends/sim/sim_symmetry.h); so one rank per
 * class gives the answer of all, at a cost that no longer grows with the world's size.
 * The symmetry is checked against sample ranks; when a sample differs, more ranks (every
 * rank, in the end) are simulated. */
typedef enum cpb_sim_ranks {
    CPB_SIM_RANKS_AUTO = 0,   /* below CPB_SIM_SYMMETRIC_MIN_RANKS every rank; up to
                                 CPB_SIM_EXACT_MAX_RANKS one rank per class when every rank's
                                 trace is its representative's moved exactly (the same times
                                 as every rank, bit for bit), else every rank; symmetric above */
    CPB_SIM_RANKS_EXACT,      /* every rank, one by one */
    CPB_SIM_RANKS_SYMMETRIC,  /* one rank per class of ranks alike by symmetry */
} cpb_sim_ranks;
#define CPB_SIM_EXACT_MAX_RANKS 64
/* auto replays one rank per class from this many ranks up (below, a replay of every rank
 * costs little) */
#define CPB_SIM_SYMMETRIC_MIN_RANKS 8
/* symmetric compares every rank with its representative up to this many ranks; above, the
 * samples of sim_layer.c's try_period (each representative moved one period, the first and
 * last moved by K/3, K/2, 2K/3 and K-1 periods): on 64 GPUs 24 ranks recorded, not 64.  auto
 * compares every rank up to CPB_SIM_EXACT_MAX_RANKS (its times are the exact mode's). */
#define CPB_SIM_COMPARE_ALL_MAX_RANKS 16
/* Ranks count as alike when their traces differ only in the work of some ops by at most
 * this fraction of the modelled op time (sim_symmetry.h: ring attention's backward) */
#define CPB_SIM_ALIKE_OP_TOL 0.02
/* "auto", "exact", "symmetric"; parse: -1 for another name */
const char *cpb_sim_ranks_name(int ranks);
int cpb_sim_ranks_parse(const char *name);

/* The simulator's knobs (knobs.h): --host-ram, the host memory of a node (0: the GPU
 * profile's), a column of every sim row */
extern const cpb_knob cpb_sim_knobs[];

/* The GPU profile the options select (--gpu), with the calibration file, --gpus-per-node
 * and point p's --host-ram (p NULL: none) applied.  CPB_ERR_INVALID / CPB_ERR_IO with a
 * message for bad input. */
int cpb_sim_profile(const cpb_sim_opts *o, const cpb_problem *p, cpb_gpu_profile *prof, char *err, size_t err_len);

/* Run method m on problem p (p->C ranks) on the simulator; *row becomes the point's row
 * (cpb_row_point: backend sim, the profile as gpu, scope layer) with the worst rank's
 * memory, the modelled times (the slowest rank), the busiest rank's traffic and the
 * throughput.  Returns CPB_OK when the simulation ran, even if the trial itself ended in
 * OOM or was refused (then row->code and row->status say so); returns an error only for
 * bad input (unknown profile, ...), with row->reason set. */
int cpb_sim_layer(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o, cpb_row *row);

#ifdef __cplusplus
}
#endif
#endif
