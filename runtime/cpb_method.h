/* cpb_method.h — what a method is (the nccl-tests pattern: one small struct of function
 * pointers per method, one shared harness) and the layer it runs on.
 *
 * Adding a method: one folder methods/<name>/ defining `const cpb_method cpb_method_<name>`
 * and one line X(<name>) in methods/registry.def.  A method carries only its schedule: the
 * harness allocates its state, names its forward and backward ranges and owns the layer's
 * buffers; shared building blocks are in methods/common/.  docs/adding-a-method.md walks
 * through it end to end.
 *
 * A method author's checklist.  These rules are what lets one schedule run unchanged on the
 * cpu, sim and cuda backends and be compared fairly.  Each is checked for every method of the
 * registry (a loop over cpb_method_count / cpb_method_at, never a typed list), so a new
 * method is held to them by its one line in methods/registry.def, and a failure names it:
 *
 *  1. The same allocations on every rank.  Every rank makes the same device (and pinned
 *     host) allocations, of the same sizes and tags, in the same order: a buffer whose need
 *     depends on the rank is sized for the largest need over the ranks (ring's half blocks),
 *     never for this rank's own.  Then all ranks run out of memory at the same call, none is
 *     left waiting in a collective another rank never reaches, and one rank's bytes stand for
 *     all.  Checked: the simulator compares every rank's allocation count and sequence hash
 *     and fails the row naming the method (tests/unit/test_method_rules.c, on a grid of odd
 *     rank counts, GQA ratios, H*d != D and lengths off powers of two); tests/mpi/sim_vs_cpu.c
 *     checks the cpu backend's bytes equal the simulator's.
 *  2. Temporaries per call.  A buffer is allocated inside forward or backward, sized for that
 *     call, and freed before the call returns; only what backward needs crosses from forward,
 *     through `state`, and backward frees it.  Nothing is kept in statics between calls (the
 *     harness runs warm-up and timed steps, and other methods between them).  Ops and
 *     collectives never allocate behind the method: it allocates their receive buffers and
 *     workspaces, sized by the runtime's shared functions.  Checked: when backward returns,
 *     no device byte is live outside the layer's own tags (x, weights, y, dy, dx, grads) and
 *     the runtime's kept workspaces, and no pinned host byte is live (test_method_rules.c).
 *  3. The same op order on every rank.  Every rank issues the same ops, on the same streams,
 *     in the same order; the rank may change only which rows or heads an op touches, which
 *     peers a send/recv names (moved with the rank) and how much work an op has (ring's
 *     causal blocks).  No op inside `if (rank == ...)`.  The simulator replays one rank per
 *     class of ranks alike by symmetry (docs/simulator.md); a rank-dependent order makes each
 *     rank its own class and the replay falls back to every rank (about C^2 at scale).
 *     Checked: on one node at default options the symmetric replay simulates one rank, and
 *     its memory and times equal the exact replay's (tests/unit/test_sim_symmetry.c).
 *  4. What refusal means.  check() is a pure function of the problem (its knobs included)
 *     that refuses a shape the schedule cannot run (a divisibility, a head count, a knob out
 *     of range) with a reason that names the constraint and the offending values.  It is the
 *     only source of the status "refused": a failure while running is "oom" when the tracked
 *     capacity is exceeded, else "error", never a refusal.  So check() accepts only what
 *     forward and backward can run.  Checked: check() gives the same answer twice, a refusal
 *     has a reason, and every accepted shape of the grid runs to "ok" (test_method_rules.c).
 */
#ifndef CPB_METHOD_H
#define CPB_METHOD_H

#include "cpb.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which weight heads a rank holds, in local column order: Wq local = [D, nq*d] holding the
 * columns of query heads q[0..nq-1]; Wk, Wv local = [D, nkv*d] with kv heads kv[..]; Wo
 * local = [nq*d, D] with the rows of the query heads.  Replicated methods hold every head
 * in order.  Verification assembles dW by adding each rank's piece into its place, so
 * partial sums and replicated shards both come out right. */
typedef struct cpb_shard {
    int nq, nkv;
    int q[CPB_MAX_HEADS];
    int kv[CPB_MAX_HEADS];
} cpb_shard;

/* The layer as one rank sees it.  Inputs (x, dy, weights) and outputs (y, dx, dW) are
 * allocated by the harness with the fixed tags, before forward. */
typedef struct cpb_layer {
    cpb_problem p;
    int64_t s;            /* local tokens (rows of x) */
    cpb_segs tokens;      /* global positions of x's rows, from the method's token_layout */
    cpb_shard shard;      /* weight heads held by this rank */
    cpb_buf *x, *dy;      /* [s, D] storage dtype */
    cpb_buf *wq, *wk, *wv;/* [D, nq*d], [D, nkv*d], storage dtype */
    cpb_buf *wo;          /* [nq*d, D] */
    cpb_buf *y, *dx;      /* [s, D]: forward writes y, backward writes dx */
    cpb_buf *dwq, *dwk, *dwv, *dwo; /* fp32, shapes of the local weights; backward
                                       overwrites them with this rank's partial */
} cpb_layer;

/* A method option ("knob"), declared in its method's table.  The option on the command line
 * is --name with '-' for '_' (--head-chunk), the results column and the point-key field are
 * `name`; methods that share a knob declare it alike (the same type, default and
 * choices).  The driver declares the knobs of what is around the method the same way
 * (driver/knobs.c: the simulator's, the model scope's). */
typedef enum cpb_knob_type {
    CPB_KNOB_INT,     /* a positive integer (K/M/G suffixes); 0 = the method's default */
    CPB_KNOB_TOKENS,  /* a positive token count (K/M/G); a sweep's lengths are multiples of it */
    CPB_KNOB_CHOICE,  /* one of `choices` */
    CPB_KNOB_BYTES,   /* a byte count (K/M/G/T), int64; 0 = the default */
} cpb_knob_type;

/* Which points a knob belongs to: a method's own knobs belong to every point of the method;
 * a driver's knob may belong only to the points of a backend with a timing model (the
 * simulator) or only to its whole-model scope.  A point that a knob does not belong to
 * still parses it, but has 0 / "" in its column and key. */
typedef enum cpb_knob_points {
    CPB_KNOB_EVERY_POINT,
    CPB_KNOB_TIMING_MODEL_POINTS, /* backend models_time (cpb_backend.h), either scope */
    CPB_KNOB_MODEL_SCOPE_POINTS,  /* --scope model */
} cpb_knob_points;

typedef struct cpb_knob {
    const char *name;     /* NULL ends a table */
    cpb_knob_type type;
    const char *def;      /* the value when not given: "0" (the method decides) or a choice */
    const char *choices;  /* CPB_KNOB_CHOICE: '|'-separated */
    /* NULL, or 0 when p's value of this knob can run, else non-zero with a message that
     * names the option: the method refuses the option at this shape (`run` exits 2 and
     * writes nothing, a sweep records the point refused) */
    int (*check)(const cpb_problem *p, char *why, size_t why_len);
    const char *arg, *help; /* `cpbench --help`: "U", "query heads per stage (default C)" */
    /* the command-line option when it is not --name with '-' for '_' (NULL: that) */
    const char *option;
    cpb_knob_points points;
    /* `cpbench plan`: the values worth trying for p's shape and world (written to out, at
     * most max; returns how many); the values a check refuses are dropped.  NULL: a choice
     * knob tries each of its choices, any other knob only its default. */
    int (*candidates)(const cpb_problem *p, int64_t *out, int max);
    /* 1: the knob describes the machine or the training setup (--host-ram, --framework),
     * not a choice of the run: plan keeps the given value */
    int setup;
} cpb_knob;

typedef struct cpb_method {
    const char *name;
    const char *summary;
    /* 0 if the method can run p; otherwise non-zero with a reason in why that names the
     * constraint and the offending values.  A pure function of p.  The driver turns any
     * non-zero answer into CPB_ERR_REFUSED (status "refused"), the only source of that
     * status: an error the method returns while it runs is never a refusal. */
    int (*check)(const cpb_problem *p, char *why, size_t why_len);
    /* global token segments held by `rank`, in local row order */
    int (*token_layout)(const cpb_problem *p, int rank, cpb_segs *out);
    /* weight heads held by `rank`; NULL = every head (replicated weights) */
    int (*weight_shard)(const cpb_problem *p, int rank, cpb_shard *out);
    /* bytes of what forward hands to backward: the harness gives forward a zeroed block of
     * this size (NULL when 0) and frees it after backward; device buffers inside are the
     * method's to free in backward (after an error the harness frees every live buffer of
     * the trial) */
    size_t state_size;
    /* forward: writes L->y, keeps what backward needs in state.  The harness runs it in the
     * range "<name>/fwd" (trial/fwd/<name>/fwd/...), backward in "<name>/bwd". */
    int (*forward)(cpb_ctx *ctx, cpb_layer *L, void *state);
    /* backward: reads L->dy and state, writes L->dx and the dW partials, frees the saved
     * buffers */
    int (*backward)(cpb_ctx *ctx, cpb_layer *L, void *state);
    /* the method's options, a table ended by {NULL}; NULL when it has none.  Adding a knob is
     * one line here; the method reads its value with cpb_knob_int / cpb_knob_str. */
    const cpb_knob *knobs;
} cpb_method;

/* registry (methods/registry.c) */
int cpb_method_count(void);
const cpb_method *cpb_method_at(int i);
const cpb_method *cpb_method_find(const char *name);

/* ---- helpers shared by methods (runtime/layout.c) ---- */
/* contiguous layout: rank r holds [r*S/C, (r+1)*S/C) */
int cpb_layout_contiguous(const cpb_problem *p, int rank, cpb_segs *out);
/* zigzag: 2C chunks, rank r holds chunk r then chunk 2C-1-r */
int cpb_layout_zigzag(const cpb_problem *p, int rank, cpb_segs *out);
/* every head (replicated weights) */
void cpb_shard_all(const cpb_problem *p, cpb_shard *out);
/* head group r: query heads [r*H/C, (r+1)*H/C), their kv heads (replicated when G < C) */
int cpb_shard_head_group(const cpb_problem *p, int rank, cpb_shard *out);

#ifdef __cplusplus
}
#endif
#endif
