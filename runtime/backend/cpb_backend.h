/* cpb_backend.h — the interface a backend implements (cpu, sim, cuda), and the context.
 *
 * The runtime front-end (runtime/ *.c files) validates every call, does the allocation
 * accounting, the stream-race bookkeeping, the op cost (FLOPs and bytes, for the simulator)
 * and the range names, then hands a fully described op to the backend.  So accounting and
 * checks are identical on every backend; a backend only moves and computes data (or, for
 * the simulator, adds time to a timeline).
 */
#ifndef CPB_BACKEND_H
#define CPB_BACKEND_H

#include <stdio.h>

#include "cpb.h"
#include "cpb_attn_route.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cpb_op_kind {
    CPB_OP_GEMM,
    CPB_OP_ROPE,
    CPB_OP_ATTN_FWD,
    CPB_OP_ATTN_BWD,
    CPB_OP_ATTN_DELTA,
    CPB_OP_LSE_MERGE,
    CPB_OP_COPY,
    CPB_OP_FILL,
    CPB_OP_AXPBY,
    CPB_OP_FILL_RANDOM,
    CPB_OP_SUMSQ,
    CPB_OP_KIND_COUNT
} cpb_op_kind;
const char *cpb_op_kind_name(cpb_op_kind k);

/* A fully validated op.  name is the range path plus the op, e.g. "ring/fwd/step2/attn". */
typedef struct cpb_op {
    cpb_op_kind kind;
    int stream;
    const char *name;
    double flops;      /* model FLOPs (attention: unmasked pairs only) */
    double bytes;      /* bytes read + written */
    int pcie;          /* copy between host and device buffers */
    union {
        /* gemm.ws: the stream's tracked workspace of cpb_gemm_workspace_bytes() */
        struct { int ta, tb; float alpha, beta; cpb_view a, b, c; int64_t m, n, k, batch; cpb_buf *ws; } gemm;
        struct { cpb_view x; const cpb_segs *pos; double base; int inverse; } rope;
        /* attn.impl: which implementation runs it (cpb_attn_route_call, decided by the
         * front-end).  attn.ws: our kernels' backward, fp32 workspace of
         * cpb_attn_bwd_workspace_elems(); cuDNN, its workspace of
         * cpb_attn_cudnn_workspace_bytes() (forward and backward). */
        struct { const cpb_attn_args *a; cpb_buf *ws; int64_t pairs; cpb_attn_impl impl; } attn;
        struct { cpb_view o, d_o, delta; } delta;
        struct { cpb_view o_acc, lse_acc, o_part, lse_part; } merge;
        struct { cpb_view dst, src; } copy;
        struct { cpb_view dst; float value; } fill;
        struct { float alpha, beta; cpb_view x, y; } axpby;
        struct { cpb_view dst; uint64_t seed; int64_t base; float scale; } rnd;
        /* out: 1 fp32 element */
        struct { cpb_view x, out; int accumulate; } sumsq;
    } u;
} cpb_op;

typedef enum cpb_coll_kind {
    CPB_COLL_ALL_TO_ALL,
    CPB_COLL_SENDRECV,
    CPB_COLL_BROADCAST,
    CPB_COLL_REDUCE,
    CPB_COLL_ALL_REDUCE,
    CPB_COLL_ALL_GATHER,
    CPB_COLL_REDUCE_SCATTER,
    CPB_COLL_KIND_COUNT
} cpb_coll_kind;
const char *cpb_coll_kind_name(cpb_coll_kind k);

typedef struct cpb_coll {
    cpb_coll_kind kind;
    int stream;
    const char *name;
    cpb_group *g;
    cpb_view send, recv;   /* broadcast / all-reduce: in place on send (recv == send) */
    int dst, src;          /* sendrecv peers (group ranks) */
    int root;              /* broadcast / reduce (group rank) */
    int64_t seq;           /* the group's collective sequence number (same on every member) */
    double bytes_sent;     /* bytes this rank puts on the wire (bus-bandwidth convention) */
} cpb_coll;

/* What the harness may ask of a device beyond running ops: its name, memory and
 * multiprocessors (provenance, the gpu column, calibration files), and the widest pitch of
 * a 2-D copy (the self-test's copy larger than it). */
typedef struct cpb_device_info {
    char name[128];
    int64_t total_bytes;
    int num_sms;
    int64_t max_pitch_bytes; /* cudaDevAttrMaxPitch (0: no such limit) */
} cpb_device_info;

/* Library versions for a results file's provenance ("" when not linked). */
typedef struct cpb_backend_versions {
    char runtime[64];  /* e.g. "runtime 13.0, driver 12.8" */
    char comm[32];     /* e.g. NCCL "2.27.3" */
    char dnn[32];      /* e.g. cuDNN "9.10.2" */
} cpb_backend_versions;

/* A backend: what it can do (flags), the calls every backend implements, and optional
 * hooks (NULL when the backend has no such thing).  The harness asks the flags and hooks,
 * never the name, what a backend is; the name is only for the user to choose it. */
struct cpb_repeat_span;

typedef struct cpb_backend {
    const char *name;
    const char *summary;   /* one line for `cpbench list` */
    /* ---- capabilities */
    int has_data;          /* buffers hold values: downloads, verification and fingerprints mean something */
    int models_time;       /* times come from a timing model replaying every rank in one process (no clock) */
    int mpi_world;         /* the world is MPI_COMM_WORLD's ranks: main starts MPI for it */
    /* ---- every backend */
    /* set ctx->rank, ctx->world (from MPI_COMM_WORLD, which main initialised, when
     * ctx->opts.use_mpi; else a world of one), create backend state */
    int (*init)(cpb_ctx *ctx);
    void (*finalize)(cpb_ctx *ctx);
    /* buf->host says device or pinned host; buf->bytes > 0.  Sets buf->ptr. */
    int (*alloc)(cpb_ctx *ctx, cpb_buf *buf);
    /* stream-ordered release on buf->free_stream (host buffers: after that stream's work) */
    void (*release)(cpb_ctx *ctx, cpb_buf *buf);
    int (*stream_create)(cpb_ctx *ctx, int id, const char *name);
    int (*event_record)(cpb_ctx *ctx, int stream, int ev);
    int (*stream_wait)(cpb_ctx *ctx, int stream, int ev);
    int (*sync)(cpb_ctx *ctx);
    int (*run_op)(cpb_ctx *ctx, const cpb_op *op);
    int (*run_coll)(cpb_ctx *ctx, const cpb_coll *c);
    /* fill g->be for a group whose members (g->ranks, g->size, g->rank) are set; every
     * member calls it, in the same order of group creations */
    int (*group_create)(cpb_ctx *ctx, cpb_group *g);
    void (*group_destroy)(cpb_ctx *ctx, cpb_group *g);
    int (*upload)(cpb_ctx *ctx, cpb_view dst, const float *src);
    int (*download)(cpb_ctx *ctx, cpb_view src, float *dst);
    /* ---- optional hooks */
    /* NVTX ranges */
    void (*range_push)(cpb_ctx *ctx, const char *name);
    void (*range_pop)(cpb_ctx *ctx);
    /* seconds on the backend's clock, after cpb_sync (NULL: the wall clock) */
    double (*clock)(cpb_ctx *ctx);
    /* a device timer (cpb_time_mark below; NULL: none, the clock after cpb_sync stands in):
     * time_mark sets mark `mark` (0 <= mark < CPB_TIME_MARKS) at the point after all work
     * enqueued so far on every stream, without waiting; time_elapsed gives the seconds
     * between two marks once both are complete (after cpb_sync); timer_name names the clock
     * for outputs ("cuda events") */
    int (*time_mark)(cpb_ctx *ctx, int mark);
    int (*time_elapsed)(cpb_ctx *ctx, int from, int to, double *seconds);
    const char *timer_name;
    /* devices this process can use, before any context exists; 0 with the reason in why
     * when there is none (never fails hard) */
    int (*probe)(char *why, size_t why_len);
    /* the context's device */
    int (*device_info)(cpb_ctx *ctx, cpb_device_info *out);
    void (*versions)(cpb_backend_versions *out);
    /* memory high-waters beyond the tracked allocator (DESIGN section 3): the pool's
     * reserved bytes and the driver-level used bytes above the start-up baseline, since
     * the last reset */
    int (*mem_highwater)(cpb_ctx *ctx, int64_t *reserved, int64_t *device_used);
    int (*mem_highwater_reset)(cpb_ctx *ctx);
    /* a measured trial's phases, for a backend that caches memory across steps and trials
     * (driver/measured.c; call before mem_highwater_reset):
     *   CPB_MEM_TRIAL_START, before the trial's setup, the previous trial's buffers freed:
     *     what the caches kept for earlier trials goes back (cuda: the pool is trimmed, idle
     *     pinned blocks freed), so that this trial's reserved bytes are its own;
     *   CPB_MEM_TRIAL_TIMED, after the warm-up steps: they filled the caches (and connected
     *     the libraries), so a timed step that would have to grow a cache with a
     *     device-synchronising call fails instead */
    int (*mem_trial)(cpb_ctx *ctx, int phase);
    /* which of our attention kernels run: "auto" (the fastest that applies) or "generic" */
    int (*set_attn_kernels)(cpb_ctx *ctx, const char *which);
    /* cuDNN attention: 2 when the backend has it (compiled in, its library loaded: the
     * version and path in why); 1 when compiled in but not usable here, 0 when not compiled
     * in (the reason in why: "compiled in; not usable here: ...", "not compiled in: ...").
     * Only 2 routes calls to it.  NULL: the backend models it (cpu, sim: the front-end
     * routes calls to it and accounts for its workspace; the math is the backend's own) */
    int (*attn_cudnn)(char *why, size_t why_len);
    /* cuDNN plans built so far by this process and the seconds spent building them */
    void (*attn_plan_stats)(int64_t *plans, double *build_s);
    /* a profiler's capture range on (1) or off (0): cudaProfilerStart / Stop */
    int (*profiler)(cpb_ctx *ctx, int on);
    /* every property of device `dev` the driver reports, the driver and runtime versions
     * and its memory, as `key = value` lines (`cpbench device-props`), before any context
     * exists */
    int (*print_device_props)(int dev, FILE *out);
    /* cpb_repeat (runtime/repeat.c): a backend without data that keeps a trace of what ran
     * may replicate alike iterations of a loop instead of having them run (the simulator).
     * repeat_mark: the trace's length, where an iteration starts or ends;
     * repeat_alike: 1 when iteration T is iteration P again (cpb_repeat_span), 0 when not;
     * repeat_copy: s->copies copies of T follow it in the trace (iterations T+1 .. L-1; the
     *   simulator keeps them as one run, backends/sim/sim_world.h);
     * repeat_last: once L ran, point its waits on T's events at the last copy's, or
     * CPB_ERR_INVALID (with the message set) when L is not T again.
     * All four or none. */
    int64_t (*repeat_mark)(cpb_ctx *ctx);
    int (*repeat_alike)(cpb_ctx *ctx, const struct cpb_repeat_span *s);
    int (*repeat_copy)(cpb_ctx *ctx, const struct cpb_repeat_span *s);
    int (*repeat_last)(cpb_ctx *ctx, const struct cpb_repeat_span *s);
} cpb_backend;

/* The iterations of one cpb_repeat a backend compares and replicates.  F, P and T are the
 * three iterations run before the copies (P = F + 1, T = P + 1), L the last, run after them.
 * at[k]: the trace marks (repeat_mark) where F, P and T start (0 .. 2), T ends (3), L
 * starts (4) and ends (5); ev[k]: ctx->nevents at the same points: an iteration's events
 * are the ids [ev at its start, ev at its end), and the copies' are the ids reserved in
 * between, [ev[3], ev[4]) (copy c: ev[3] + c * (ev[3] - ev[2]) on).  A wait of an
 * iteration is on an event of its own, of the iteration before, or of one before both
 * (the same id in every iteration). */
typedef struct cpb_repeat_span {
    int64_t at[6];
    int ev[6];
    int tmpl, last;   /* T's and L's iteration numbers; the copies are T+1 .. L-1 */
    int copies;
    int range_len;    /* where the iteration's range begins in an op's name: after this many
                         characters and a '/' (none when 0) */
    const char *label; /* the iteration's range is label and its number: "step7" */
} cpb_repeat_span;

/* Bump when cpb_backend, cpb_op, cpb_coll, cpb_ctx or cpb_ctx_opts change layout: a
 * backend built separately (a plugin) must be built against the same. */
#define CPB_BACKEND_ABI_VERSION 9

enum { CPB_MEM_TRIAL_START, CPB_MEM_TRIAL_TIMED };
/* marks of the device timer (time_mark, cpb_time_mark) */
#define CPB_TIME_MARKS 64

#define CPB_MAX_GROUPS 64
#define CPB_RANGE_LEN 512
#define CPB_RANGE_DEPTH 32

typedef struct cpb_ctx_opts {
    int use_mpi;           /* mpi_world backends: 1 = the MPI ranks (main has initialised MPI);
                              0 = this process alone, world 1 */
    int sim_rank, sim_world; /* sim: which rank of how many this context plays */
    int64_t capacity;      /* device bytes (0 = unlimited / the device's own) */
    int64_t host_capacity; /* pinned host bytes (0 = unlimited) */
    int race_check;        /* 1 = record accesses and fail on races (default on) */
    void *backend_shared;  /* sim: state shared by the contexts of one simulated world */
    const char *comm;      /* cuda: "nccl" (default) or "mpi" */
    int no_repeat;         /* 1 = cpb_repeat runs every iteration even where the backend
                              could replicate them (tests: the two must agree exactly) */
} cpb_ctx_opts;

struct cpb_race;

struct cpb_ctx {
    const cpb_backend *be;
    void *bs;                 /* backend state */
    cpb_ctx_opts opts;
    int rank, world;
    cpb_problem p;
    char err[2048];
    int err_code;
    cpb_mem_stats dev, host;
    cpb_buf *live;            /* doubly linked list of live buffers */
    cpb_buf *buf_pool;        /* freed descriptors for the next allocations (alloc.c) */
    int64_t next_buf_id;
    int nstreams;
    char stream_names[CPB_MAX_STREAMS][24];
    int nevents;
    char range[CPB_RANGE_LEN];
    int range_len;            /* strlen(range), kept by push and pop (every op copies range) */
    int range_mark[CPB_RANGE_DEPTH];
    int range_depth;
    char opname[CPB_RANGE_LEN + 64];
    int opname_len;           /* strlen(opname) */
    int opname_prefix;        /* length of the "<range>/" opname starts with; -1: the range
                                 changed since (cpb_op_begin copies it again) */
    struct cpb_race *race;
    cpb_buf *gemm_ws[CPB_MAX_STREAMS]; /* per-stream GEMM workspace, allocated at first use */
    cpb_group *groups[CPB_MAX_GROUPS];
    int ngroups;
    /* counters of the current trial */
    int64_t n_ops, n_colls;
    double flops, comm_bytes, pcie_bytes;
    /* attention: the --attn choice (set with the problem), whether the backend has cuDNN
     * (and why not), and what the trial's calls used */
    cpb_attn_choice attn_choice;
    int attn_cudnn_present;
    char attn_cudnn_why[256];
    cpb_attn_usage attn_usage;
    /* cpb_time_mark without a device timer: each mark's clock reading */
    double time_marks[CPB_TIME_MARKS];
    /* the world of the method running now (runtime/scope.c): NULL = every rank (groups[0]) */
    cpb_group *scope_world;
    /* cpb_repeat's log of the template iteration's effects on the counters above (NULL
     * when none is being kept: runtime/repeat.c) */
    struct cpb_repeat_log *rep_log;
};

/* context life cycle (harness): a context of backend `be` */
int cpb_ctx_create(const cpb_backend *be, const cpb_ctx_opts *opts, cpb_ctx **out, char *err,
                   size_t err_len);
void cpb_ctx_destroy(cpb_ctx *ctx);
/* also takes the problem's --attn choice (knob "attn"; absent: auto) */
void cpb_ctx_set_problem(cpb_ctx *ctx, const cpb_problem *p);
/* the --attn choice of later attention calls (tools that compare implementations) */
void cpb_ctx_set_attn(cpb_ctx *ctx, cpb_attn_choice c);
/* Scopes (runtime/scope.c): a method run inside a sub-world, as a tensor-parallel wrapper
 * runs a context-parallel method over its CP group (driver/tp_compose.c).  Between
 * cpb_scope_enter and cpb_scope_leave the method's world is the group `world`: cpb_world, a
 * NULL group, cpb_rank, cpb_world_size and the member lists of cpb_group_create are in its
 * terms, and cpb_problem_of is *p (the sub-world's problem: its C is world->size).  The
 * backends, the allocator and the race check still see the real rank.  `saved` keeps what
 * cpb_scope_leave restores; scopes nest. */
typedef struct cpb_scope {
    cpb_group *world;
    cpb_problem p;
} cpb_scope;
int cpb_scope_enter(cpb_ctx *ctx, cpb_group *world, const cpb_problem *p, cpb_scope *saved);
void cpb_scope_leave(cpb_ctx *ctx, const cpb_scope *saved);

/* free every live buffer (device and host): after an error or at the end of a trial */
void cpb_free_all(cpb_ctx *ctx);
/* free the descriptors kept for reuse (alloc.c; when the context is destroyed) */
void cpb_buf_pool_free(cpb_ctx *ctx);
/* reset high-water marks and counters to the current live state (start of a trial) */
void cpb_reset_stats(cpb_ctx *ctx);

/* Timed intervals (the measured steps, bench-kernels).  cpb_time_mark(ctx, i) sets mark i
 * (0 <= i < CPB_TIME_MARKS) at the point after all work enqueued so far on every stream;
 * cpb_time_between(ctx, i, j, &s), after cpb_sync, gives the seconds from mark i to mark j.
 * With the backend's device timer (cuda: events with timing) a mark does not wait, and the
 * interval is the device's time between the two points: no host wait, no polling delay.
 * Without one, a mark is cpb_sync then the backend's clock (or the wall clock).
 * cpb_time_clock names the clock in use, for outputs. */
int cpb_time_mark(cpb_ctx *ctx, int mark);
int cpb_time_between(cpb_ctx *ctx, int from, int to, double *seconds);
const char *cpb_time_clock(const cpb_ctx *ctx);
const char *cpb_backend_time_clock(const cpb_backend *be);

#ifdef __cplusplus
}
#endif
#endif
