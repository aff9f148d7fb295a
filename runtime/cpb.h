/* cpb.h — the runtime API every method is written against.
 *
 * A method is a schedule of calls to the functions below and never touches CUDA, NCCL or
 * MPI.  The same schedule runs on three backends (DESIGN.md section 5): cpu (real math, MPI
 * ranks), sim (no data: exact allocation accounting and a timing model) and cuda.
 *
 * Conventions
 * - Every function returns 0 (CPB_OK) or a cpb_status error code; the message is in
 *   cpb_errmsg(ctx).  Errors propagate: a method returns the first error it gets
 *   (use CPB_TRY).  No function in the runtime exits the process.
 * - Element offsets and counts are int64_t.
 * - Every op names the stream it runs on, and reads/writes only the views it is given, so
 *   the runtime can record each access (stream-race check) and its cost (simulator).
 * - Nothing assumes data is host-addressable: use cpb_upload/cpb_download to move data
 *   between the program and a buffer (setup and verification only).
 * - Collectives write into buffers the caller allocated; the few ops that need workspace
 *   allocate it through the tracked allocator, with sizes from cpb_*_workspace_elems(),
 *   one function for all backends.
 */
#ifndef CPB_H
#define CPB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- status / errors */

typedef enum cpb_status {
    CPB_OK = 0,
    CPB_ERR_OOM = 1,         /* tracked allocator capacity exceeded: a result, not a crash */
    CPB_ERR_INVALID = 2,     /* bad argument or a broken rule (an invalid view, a range left
                                open): a programming or user error, never a refusal */
    CPB_ERR_UNSUPPORTED = 3, /* the backend or method cannot do this */
    CPB_ERR_BACKEND = 4,     /* CUDA / BLAS / driver failure */
    CPB_ERR_COMM = 5,        /* MPI / NCCL failure */
    CPB_ERR_RACE = 6,        /* stream-race check found unordered conflicting accesses */
    CPB_ERR_IO = 7,          /* file errors */
    CPB_ERR_NOMEM_HOST = 8,  /* host malloc failed or host capacity exceeded */
    CPB_ERR_REFUSED = 9,     /* the method's check() refused the shape: a property of the method
                                and the shape (a result, status "refused"), not a fault */
} cpb_status;

typedef struct cpb_ctx cpb_ctx;

const char *cpb_errmsg(const cpb_ctx *ctx);
const char *cpb_status_name(int status);
/* Set the context's error and return code.  printf-style message. */
int cpb_fail(cpb_ctx *ctx, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void cpb_clear_error(cpb_ctx *ctx);

#define CPB_TRY(expr)                                                                      \
    do {                                                                                   \
        int cpb_try_rc_ = (expr);                                                          \
        if (cpb_try_rc_ != CPB_OK) return cpb_try_rc_;                                     \
    } while (0)

/* ---------------------------------------------------------------- dtypes and tags */

typedef enum cpb_dtype { CPB_BF16 = 0, CPB_FP32 = 1 } cpb_dtype;
size_t cpb_dtype_size(cpb_dtype t);
const char *cpb_dtype_name(cpb_dtype t);

/* Allocation tags: what a buffer is for.  The first CPB_TAG_FIXED_END tags are the layer's
 * inputs, weights, outputs and gradients ("fixed"); everything else counts as intermediate
 * memory (DESIGN.md section 3). */
typedef enum cpb_tag {
    CPB_TAG_X = 0,      /* layer input (sequence shard) */
    CPB_TAG_WEIGHTS,    /* Wq, Wk, Wv, Wo (full or shard) */
    CPB_TAG_Y,          /* layer output */
    CPB_TAG_DY,         /* incoming gradient */
    CPB_TAG_DX,         /* outgoing gradient */
    CPB_TAG_GRADS,      /* dWq, dWk, dWv, dWo (fp32) */
    CPB_TAG_FIXED_END,
    CPB_TAG_QKV = CPB_TAG_FIXED_END, /* projections q, k, v (sequence-sharded) */
    CPB_TAG_A2A,        /* all-to-all send/receive buffers */
    CPB_TAG_SAVED,      /* tensors saved by forward for backward */
    CPB_TAG_ATTN,       /* attention outputs o and lse, merge accumulators */
    CPB_TAG_KV_RING,    /* circulating K,V (and dK,dV) buffers */
    CPB_TAG_GATHER,     /* all-gathered activations (tp), broadcast weight shards (metp) */
    CPB_TAG_GRAD_ACT,   /* activation gradients dq, dk, dv, do, delta */
    CPB_TAG_FETCH,      /* device buffers for host<->device staging (offload, fpdt) */
    CPB_TAG_WORKSPACE,  /* op workspaces (attention backward dq accumulator, GEMM) */
    CPB_TAG_TEMP,       /* anything else short-lived */
    CPB_TAG_COUNT
} cpb_tag;
const char *cpb_tag_name(cpb_tag t);
int cpb_tag_is_fixed(cpb_tag t);

/* ---------------------------------------------------------------- buffers and views */

/* A tracked allocation.  Fields are read-only for methods. */
typedef struct cpb_buf {
    void *ptr;          /* device (or pinned host) address; NULL on the sim backend */
    int64_t nelem;
    int64_t bytes;
    cpb_dtype dtype;
    cpb_tag tag;
    int host;           /* 1: pinned host buffer (offload), 0: device */
    int64_t id;         /* allocation sequence number on this rank */
    int free_stream;    /* set by cpb_free */
    char name[40];
    struct cpb_buf *prev, *next; /* live list (runtime-internal) */
    void *race;                  /* stream-race bookkeeping (runtime-internal) */
} cpb_buf;

/* A strided view of a buffer: [rows][heads][dim], dim contiguous.
 * - a matrix is heads = 1 (dim = columns, row_stride = leading dimension);
 * - a head tensor [tokens][heads][d] has rows = tokens;
 * - a batched GEMM operand uses heads as the batch (head_stride may be 0 for broadcast);
 * - lse / delta are fp32 views with dim = 1, e.g. [heads][tokens] storage:
 *   rows = tokens, heads = H, row_stride = 1, head_stride = tokens. */
typedef struct cpb_view {
    cpb_buf *buf;
    int64_t off;
    int64_t rows, heads, dim;
    int64_t row_stride, head_stride;
} cpb_view;

/* constructors */
cpb_view cpb_span(cpb_buf *b, int64_t off, int64_t count); /* contiguous 1 x count */
cpb_view cpb_whole(cpb_buf *b);                             /* whole buffer as a span */
cpb_view cpb_mat(cpb_buf *b, int64_t off, int64_t rows, int64_t cols, int64_t ld);
cpb_view cpb_heads(cpb_buf *b, int64_t off, int64_t rows, int64_t heads, int64_t dim,
                   int64_t row_stride, int64_t head_stride);
/* lse/delta layout [heads][tokens] (fp32), starting at head h0 of a buffer holding
 * `ld` tokens per head, tokens t0 .. t0+tokens-1 */
cpb_view cpb_lse_view(cpb_buf *b, int64_t ld, int64_t h0, int64_t heads, int64_t t0,
                      int64_t tokens);
int cpb_view_is_contiguous(const cpb_view *v);
/* The three below are inline: methods call them for every op's operands, and a call
 * passing and returning a view by value was a twentieth of a large simulated trial. */
/* rows*heads*dim */
static inline int64_t cpb_view_count(const cpb_view *v)
{
    return v->rows * v->heads * v->dim;
}
/* rows [r0, r0+n) of a view */
static inline cpb_view cpb_view_rows(cpb_view v, int64_t r0, int64_t n)
{
    v.off += r0 * v.row_stride;
    v.rows = n;
    return v;
}
/* heads [h0, h0+n) of a view */
static inline cpb_view cpb_view_heads(cpb_view v, int64_t h0, int64_t n)
{
    v.off += h0 * v.head_stride;
    v.heads = n;
    return v;
}

/* ---------------------------------------------------------------- token positions */

/* A list of global token segments [pos0, pos0+len): the global positions of the rows of
 * a view, in row order.  Used for token layouts and for RoPE. */
#define CPB_MAX_SEGS 1024
typedef struct cpb_segs {
    int n;
    int64_t pos0[CPB_MAX_SEGS];
    int64_t len[CPB_MAX_SEGS];
} cpb_segs;
void cpb_segs_clear(cpb_segs *s);
int cpb_segs_add(cpb_segs *s, int64_t pos0, int64_t len); /* merges adjacent; -1 if full */
int64_t cpb_segs_total(const cpb_segs *s);
/* the sub-list covering rows [r0, r0+n) */
int cpb_segs_slice(const cpb_segs *s, int64_t r0, int64_t n, cpb_segs *out);
/* global position of local row r (-1 if out of range) */
int64_t cpb_segs_pos(const cpb_segs *s, int64_t r);

/* ---------------------------------------------------------------- allocation */

int cpb_alloc(cpb_ctx *ctx, cpb_buf **out, int64_t nelem, cpb_dtype dt, cpb_tag tag,
              const char *name);
/* pinned host memory (offloading); tracked apart from the device */
int cpb_alloc_host(cpb_ctx *ctx, cpb_buf **out, int64_t nelem, cpb_dtype dt, cpb_tag tag,
                   const char *name);
/* Stream-ordered free: an access (write) on `stream`.  Passing NULL is a no-op.  *b is set
 * to NULL through the pointer-to-pointer form. */
int cpb_free(cpb_ctx *ctx, int stream, cpb_buf **b);

typedef struct cpb_mem_stats {
    int64_t live, peak;                    /* bytes */
    int64_t capacity;                      /* 0 = unlimited */
    int64_t tag_live[CPB_TAG_COUNT];
    int64_t tag_peak[CPB_TAG_COUNT];       /* high-water per tag */
    int64_t at_peak[CPB_TAG_COUNT];        /* breakdown by tag at the moment of the peak */
    int64_t intermediate_live, intermediate_peak; /* bytes in non-fixed tags */
    int64_t n_allocs;
    uint64_t trace_hash;                   /* hash of the (size, tag) allocation sequence */
} cpb_mem_stats;
const cpb_mem_stats *cpb_device_mem(const cpb_ctx *ctx);
const cpb_mem_stats *cpb_host_mem(const cpb_ctx *ctx);

/* ---------------------------------------------------------------- streams, events, ranges */

/* the stream every context has (id 0): where a method's compute runs */
#define CPB_STREAM_COMPUTE 0
#define CPB_MAX_STREAMS 16
/* Stream by name, created on first use ("comm", "copy", "prefetch", ...). */
int cpb_stream(cpb_ctx *ctx, const char *name, int *id);
typedef struct cpb_event { int id; } cpb_event;
int cpb_event_record(cpb_ctx *ctx, int stream, cpb_event *ev);
/* later work on `stream` waits for everything recorded before `ev` */
int cpb_stream_wait(cpb_ctx *ctx, int stream, cpb_event ev);
/* host waits for every stream (ends a measured region) */
int cpb_sync(cpb_ctx *ctx);
/* convenience: stream `waiter` waits for all work issued so far on stream `on` */
int cpb_stream_join(cpb_ctx *ctx, int waiter, int on);

/* Named ranges (NVTX on cuda, op names in race reports and sim traces).
 * Name becomes "<outer>/<name>", e.g. "upipe/fwd/stage3/a2a".  Methods use CPB_RANGE. */
int cpb_range_push(cpb_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cpb_range_pop(cpb_ctx *ctx);

/* Run `call` (an expression that returns a status) inside the range named by the printf
 * arguments that follow: push, run, pop even when the call failed, then return from the
 * enclosing function with the first error, as CPB_TRY does.
 *     CPB_RANGE(ctx, stage(ctx, L, t), "stage%d", t); */
#define CPB_RANGE(ctx, call, ...)                                                          \
    do {                                                                                   \
        CPB_TRY(cpb_range_push((ctx), __VA_ARGS__));                                       \
        int cpb_range_rc_ = (call);                                                        \
        int cpb_range_pop_rc_ = cpb_range_pop(ctx);                                        \
        CPB_TRY(cpb_range_rc_);                                                            \
        CPB_TRY(cpb_range_pop_rc_);                                                        \
    } while (0)


/* A loop whose iterations are alike: body(ctx, arg, i) for i = first .. end-1, each inside
 * the range "<label><i>" (CPB_RANGE(..., "%s%d", label, i)).  Alike means that every
 * iteration issues the same ops, collectives, event records, waits and allocations, in the
 * same order, with the same sizes, streams, groups and peers, so that only data, offsets
 * and which of two alternating buffers it uses differ; that each frees what it allocates;
 * creates no stream or group; and waits only on events of its own, of the iteration
 * before, or recorded before the loop (state it hands on, such as an event handle, is
 * set again by every iteration).
 *
 * Every backend with data runs every iteration.  The simulator (a backend without data
 * that keeps a trace) runs the first three or four, compares the last two, and when they
 * are alike replicates the middle ones into the trace (an even number of them, so that
 * double buffers line up) and runs the last: the trace, the counters and the allocation
 * sequence are what running them would give, the memory peak too (each frees what it
 * allocates).  The stream-race check sees the iterations that ran.  The last iteration
 * that is not the one before it again is a broken promise: CPB_ERR_INVALID.
 * (A ring over 1,024 ranks makes 1,024 alike steps per call: this keeps a simulated
 * trial's front-end work from growing with the ring.) */
typedef int (*cpb_repeat_body)(cpb_ctx *ctx, void *arg, int i);
int cpb_repeat(cpb_ctx *ctx, int first, int end, const char *label, cpb_repeat_body body, void *arg);
/* ---------------------------------------------------------------- compute ops */

/* C = alpha * op(A) * op(B) + beta * C, row-major, batched over the views' heads
 * (batch count = C.heads; an operand with heads == 1 and head_stride == 0 is broadcast).
 * op(A) is m x k, op(B) is k x n, C is m x n (rows x dim).  A and B have the same dtype;
 * C is fp32, or bf16 when A and B are bf16 (what cuBLAS offers).  Math in fp32. */
int cpb_gemm(cpb_ctx *ctx, int stream, int trans_a, int trans_b, float alpha, cpb_view a,
             cpb_view b, float beta, cpb_view c);

/* RoPE (Llama interleaved pairs) in place on [rows][heads][d] at the rows' global positions
 * `pos` (int64, fp64 angles).  inverse = 1 rotates by -angle (the backward). */
int cpb_rope(cpb_ctx *ctx, int stream, cpb_view x, const cpb_segs *pos, double base,
             int inverse);

/* Attention problem: q [sq][hq][d], k, v [sk][hk][d], hq % hk == 0, query head h uses kv
 * head h / (hq/hk).  Causal: query at global position q_pos0 + i attends key k_pos0 + j iff
 * k_pos0 + j <= q_pos0 + i.  Rows that see no key get o = 0, lse = -inf. */
typedef struct cpb_attn_args {
    cpb_view q, k, v;
    cpb_view o;        /* forward output; backward input (may be empty when delta given) */
    cpb_view lse;      /* fp32 [hq][sq] */
    int causal;
    int64_t q_pos0, k_pos0;
    float scale;       /* 0 -> 1/sqrt(d) */
    /* backward only */
    cpb_view d_o;      /* dO */
    cpb_view delta;    /* fp32 [hq][sq] rowsum(dO*o); empty -> computed from o */
    cpb_view dq, dk, dv;
    int accumulate;    /* 1: dq,dk,dv += ; 0: overwrite */
} cpb_attn_args;

int cpb_attn_fwd(cpb_ctx *ctx, int stream, const cpb_attn_args *a);
int cpb_attn_bwd(cpb_ctx *ctx, int stream, const cpb_attn_args *a);
/* delta[h][i] = sum_d dO[i][h][:] * o[i][h][:] */
int cpb_attn_delta(cpb_ctx *ctx, int stream, cpb_view o, cpb_view d_o, cpb_view delta);
/* Merge a partial attention result into an accumulator by log-sum-exp (fp32 math, safe
 * form): lse' = max + log1p(exp(min - max)); o_acc = o_acc*exp(lse_acc-lse') +
 * o_part*exp(lse_part-lse').  -inf partials contribute nothing. */
int cpb_lse_merge(cpb_ctx *ctx, int stream, cpb_view o_acc, cpb_view lse_acc, cpb_view o_part,
                  cpb_view lse_part);
/* fp32 workspace elements the attention backward allocates (dq accumulator); one function
 * for every backend so the tracked bytes are identical. */
int64_t cpb_attn_bwd_workspace_elems(const cpb_attn_args *a);
/* bytes of the GEMM workspace (cuBLAS's) that cpb_gemm allocates through the tracked
 * allocator (tag CPB_TAG_WORKSPACE) for each stream that runs GEMMs, at that stream's first
 * GEMM after the trial's buffers were last freed; counted identically on every backend */
int64_t cpb_gemm_workspace_bytes(void);

/* element-wise */
int cpb_copy(cpb_ctx *ctx, int stream, cpb_view dst, cpb_view src); /* any dtypes; host<->device too */
/* dst may be a pinned host buffer: the fill is then the host's (a CPU memset in the
 * simulator's model), ordered on `stream` like any op */
int cpb_fill(cpb_ctx *ctx, int stream, cpb_view dst, float value);
/* y = alpha * x + beta * y */
int cpb_axpby(cpb_ctx *ctx, int stream, float alpha, cpb_view x, float beta, cpb_view y);
/* out (a 1-element fp32 view) = sum over x of x^2, plus out's old value when accumulate:
 * the numeric fingerprint of a tensor (sums over the whole view in double, or a tree in
 * fp32 with double partials, as the backend does) */
int cpb_sumsq(cpb_ctx *ctx, int stream, cpb_view x, cpb_view out, int accumulate);
/* deterministic pseudo-random fill: element with logical index i (row-major over the view)
 * gets scale * u(seed, base_index + i), u uniform in [-1, 1) from a counter-based hash */
int cpb_fill_random(cpb_ctx *ctx, int stream, cpb_view dst, uint64_t seed, int64_t base_index,
                    float scale);

/* ---------------------------------------------------------------- groups and collectives */

typedef struct cpb_group {
    int size, rank;   /* my rank within the group */
    int id;           /* 0 = world */
    int *ranks;       /* world ranks of the members, in group order */
    void *be;         /* backend communicator */
    int64_t seq;      /* collectives issued on this group so far (sim matching) */
} cpb_group;

cpb_group *cpb_world(cpb_ctx *ctx);
int cpb_rank(const cpb_ctx *ctx);
int cpb_world_size(const cpb_ctx *ctx);
/* The group of an explicit member list (world ranks, in group order), created at the first
 * request and found again afterwards.  Every member calls it with the same list, and all
 * members ask for their groups in the same order.  The group lives as long as the context. */
int cpb_group_create(cpb_ctx *ctx, int n, const int *world_ranks, cpb_group **out);

/* All collectives: spans must be contiguous; group NULL = world. */
/* send: size * n elements, chunk j goes to member j; recv: chunk j comes from member j */
int cpb_all_to_all(cpb_ctx *ctx, int stream, cpb_group *g, cpb_view send, cpb_view recv);
/* send `send` to member dst and receive `recv` from member src (ring steps) */
int cpb_sendrecv(cpb_ctx *ctx, int stream, cpb_group *g, cpb_view send, int dst, cpb_view recv,
                 int src);
int cpb_broadcast(cpb_ctx *ctx, int stream, cpb_group *g, cpb_view buf, int root);
/* sum to root; recv significant at root only (but pass a valid view on every rank) */
int cpb_reduce(cpb_ctx *ctx, int stream, cpb_group *g, cpb_view send, cpb_view recv, int root);
int cpb_all_reduce(cpb_ctx *ctx, int stream, cpb_group *g, cpb_view buf);
int cpb_all_gather(cpb_ctx *ctx, int stream, cpb_group *g, cpb_view send, cpb_view recv);
int cpb_reduce_scatter(cpb_ctx *ctx, int stream, cpb_group *g, cpb_view send, cpb_view recv);

/* ---------------------------------------------------------------- data in and out */

/* Synchronous copies between a program array (fp32) and a view.  Not part of a method's
 * schedule: for setup and verification.  No-ops on the sim backend. */
int cpb_upload(cpb_ctx *ctx, cpb_view dst, const float *src);
int cpb_download(cpb_ctx *ctx, cpb_view src, float *dst);

/* ---------------------------------------------------------------- problem description */

#define CPB_MAX_HEADS 512

/* The values of a problem's method options ("knobs"), by name.  Each method declares its
 * knobs in a table (cpb_method.h: name, type, default, check, help); the command line, the
 * results columns and the point key are all made from those tables.  An integer knob at 0
 * means the method's default; a choice knob holds one of its choices. */
#define CPB_MAX_KNOBS 64
#define CPB_KNOB_LEN 32
typedef struct cpb_knob_value {
    char name[CPB_KNOB_LEN];
    int64_t i;              /* integer knobs */
    char s[CPB_KNOB_LEN];   /* choice knobs */
} cpb_knob_value;
typedef struct cpb_knobs {
    int n;
    cpb_knob_value v[CPB_MAX_KNOBS];
} cpb_knobs;

/* the value called `name`, NULL when k has none */
const cpb_knob_value *cpb_knobs_find(const cpb_knobs *k, const char *name);
/* set (or replace) a value: CPB_ERR_INVALID when k is full or the name too long */
int cpb_knobs_set_int(cpb_knobs *k, const char *name, int64_t v);
int cpb_knobs_set_str(cpb_knobs *k, const char *name, const char *v);

typedef struct cpb_problem {
    int64_t S;          /* global sequence length */
    int64_t D;          /* hidden */
    int H, G, d;        /* query heads, kv heads, head dim */
    double rope_base;
    int C;              /* world size (context-parallel degree) */
    cpb_dtype dtype;    /* storage */
    cpb_knobs knobs;    /* method options (the knobs of the method that runs) */
    char model[32];     /* preset name, informational */
} cpb_problem;

const cpb_problem *cpb_problem_of(const cpb_ctx *ctx);
/* a knob of p: its value, or 0 / "" when p does not set it (the method's default) */
int64_t cpb_knob_int(const cpb_problem *p, const char *name);
const char *cpb_knob_str(const cpb_problem *p, const char *name);

#ifdef __cplusplus
}
#endif
#endif
