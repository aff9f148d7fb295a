/* ops.c — compute ops: validate, record accesses (race check), cost (FLOPs, bytes), and
 * hand the described op to the backend. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "race.h"

int cpb_view_check(cpb_ctx *ctx, const char *what, const cpb_view *v)
{
    if (!v->buf)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: no buffer", what);
    if (v->off < 0 || v->rows < 0 || v->heads < 0 || v->dim < 0 || v->row_stride < 0 ||
        v->head_stride < 0)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s ('%s'): negative offset, size or stride", what, v->buf->name);
    if (cpb_view_count(v) == 0) return CPB_OK;
    int64_t last = v->off + (v->rows - 1) * v->row_stride + (v->heads - 1) * v->head_stride + v->dim - 1;
    if (last >= v->buf->nelem)
        return cpb_fail(ctx, CPB_ERR_INVALID,
                        "%s: view of '%s' reaches element %lld but the buffer has %lld "
                        "(rows %lld, heads %lld, dim %lld, strides %lld/%lld, offset %lld)",
                        what, v->buf->name, (long long)last, (long long)v->buf->nelem, (long long)v->rows,
                        (long long)v->heads, (long long)v->dim, (long long)v->row_stride,
                        (long long)v->head_stride, (long long)v->off);
    return CPB_OK;
}

void cpb_op_begin(cpb_ctx *ctx, int stream, const char *op)
{
    /* "<range>/<op>", built without printf: this runs for every op (several times for some:
     * an attention call and its temporaries' frees), and schedules such as fpdt's issue
     * hundreds of thousands of them in one simulated trial.  The "<range>/" prefix is
     * copied only when a range push or pop changed it since (opname_prefix < 0), and the
     * op's name by a loop: a string op's memcpy of a few bytes compiled to `rep movs`, whose
     * start-up cost made this a twentieth of a large point's time. */
    const size_t cap = sizeof ctx->opname - 1;
    if (ctx->opname_prefix < 0) {
        size_t n = (size_t)ctx->range_len;
        if (n > cap) n = cap;
        memcpy(ctx->opname, ctx->range, n);
        if (n && n < cap) ctx->opname[n++] = '/';
        ctx->opname_prefix = (int)n;
    }
    size_t n = (size_t)ctx->opname_prefix, m = 0;
    for (; m < cap - n && op[m]; m++) ctx->opname[n + m] = op[m];
    ctx->opname[n + m] = 0;
    ctx->opname_len = (int)(n + m);
    cpb_race_op_begin(ctx, stream);
}

static int stream_ok(cpb_ctx *ctx, int stream, const char *op)
{
    if (stream < 0 || stream >= ctx->nstreams)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s on unknown stream %d (create streams with cpb_stream)", op, stream);
    return CPB_OK;
}

static double vbytes(const cpb_view *v)
{
    return (double)cpb_view_count(v) * (double)cpb_dtype_size(v->buf->dtype);
}

static int device_only(cpb_ctx *ctx, const char *what, const cpb_view *v)
{
    if (v->buf && v->buf->host)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: '%s' is a pinned host buffer; compute ops need device buffers (copy it in first)",
                        what, v->buf->name);
    return CPB_OK;
}

/* validate + race-record a list of operands */
typedef struct operand {
    const char *what;
    const cpb_view *v;
    int write;
    int optional; /* empty buffer allowed */
} operand;

/* the conditions of cpb_view_check, without a message (internal.h) */
int cpb_view_ok(const cpb_view *v)
{
    if (!v->buf || v->off < 0 || v->rows < 0 || v->heads < 0 || v->dim < 0 || v->row_stride < 0 ||
        v->head_stride < 0)
        return 0;
    if (cpb_view_count(v) == 0) return 1;
    return v->off + (v->rows - 1) * v->row_stride + (v->heads - 1) * v->head_stride + v->dim - 1 < v->buf->nelem;
}

static int operands(cpb_ctx *ctx, int stream, const char *op, const operand *ops, int n, int device)
{
    for (int i = 0; i < n; i++) {
        const cpb_view *v = ops[i].v;
        if (ops[i].optional && !v->buf) continue;
        if (cpb_view_ok(v) && !(device && v->buf->host)) continue;
        /* the message is formatted only on failure: this runs for every operand of every op */
        char what[160];
        snprintf(what, sizeof what, "%s operand %s", op, ops[i].what);
        CPB_TRY(cpb_view_check(ctx, what, v));
        if (device) CPB_TRY(device_only(ctx, what, v));
    }
    for (int i = 0; i < n; i++) {
        if (ops[i].optional && !ops[i].v->buf) continue;
        CPB_TRY(cpb_race_access(ctx, stream, ops[i].v, ops[i].write));
    }
    return CPB_OK;
}

static int dispatch(cpb_ctx *ctx, cpb_op *op)
{
    op->name = ctx->opname;
    ctx->n_ops++;
    ctx->flops += op->flops;
    if (op->pcie) ctx->pcie_bytes += op->bytes / 2;
    if (ctx->rep_log) cpb_repeat_log_op(ctx, op->flops, op->pcie ? op->bytes / 2 : -1);
    int rc = ctx->be->run_op(ctx, op);
    if (rc != CPB_OK && ctx->err_code == CPB_OK)
        cpb_fail(ctx, rc, "%s: backend %s failed", op->name, ctx->be->name);
    return rc;
}

/* ---------------------------------------------------------------- GEMM */

int cpb_gemm(cpb_ctx *ctx, int stream, int trans_a, int trans_b, float alpha, cpb_view a,
             cpb_view b, float beta, cpb_view c)
{
    CPB_TRY(stream_ok(ctx, stream, "gemm"));
    cpb_op_begin(ctx, stream, "gemm");
    int64_t m = trans_a ? a.dim : a.rows, ka = trans_a ? a.rows : a.dim;
    int64_t kb = trans_b ? b.dim : b.rows, n = trans_b ? b.rows : b.dim;
    int64_t batch = c.heads;
    if (ka != kb || c.rows != m || c.dim != n)
        return cpb_fail(ctx, CPB_ERR_INVALID,
                        "%s: shapes do not match: op(A) %lldx%lld, op(B) %lldx%lld, C %lldx%lld",
                        ctx->opname, (long long)m, (long long)ka, (long long)kb, (long long)n,
                        (long long)c.rows, (long long)c.dim);
    if ((a.heads != batch && a.heads != 1) || (b.heads != batch && b.heads != 1))
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: batch counts differ (A %lld, B %lld, C %lld)",
                        ctx->opname, (long long)a.heads, (long long)b.heads, (long long)batch);
    if (a.buf && b.buf && a.buf->dtype != b.buf->dtype)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: A ('%s', %s) and B ('%s', %s) must have the same dtype",
                        ctx->opname, a.buf->name, cpb_dtype_name(a.buf->dtype), b.buf->name,
                        cpb_dtype_name(b.buf->dtype));
    if (a.buf && a.buf->dtype == CPB_FP32 && c.buf && c.buf->dtype == CPB_BF16)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: fp32 inputs with a bf16 output ('%s') is not a cuBLAS combination; "
                        "give C an fp32 buffer or convert the inputs to bf16", ctx->opname, c.buf->name);
    /* a broadcast operand (heads == 1) repeats for every batch entry */
    if (a.heads == 1) a.head_stride = 0;
    if (b.heads == 1) b.head_stride = 0;
    operand ops[] = {{"A", &a, 0, 0}, {"B", &b, 0, 0}, {"C", &c, 1, 0}};
    CPB_TRY(operands(ctx, stream, ctx->opname, ops, 3, 1));
    if (!ctx->gemm_ws[stream]) {
        /* cuBLAS's workspace, tracked on every backend so the bytes agree (DESIGN section 3) */
        char nm[40];
        snprintf(nm, sizeof nm, "gemm_ws_%s", ctx->stream_names[stream]);
        CPB_TRY(cpb_alloc(ctx, &ctx->gemm_ws[stream], cpb_gemm_workspace_bytes() / 4, CPB_FP32,
                          CPB_TAG_WORKSPACE, nm));
        cpb_op_begin(ctx, stream, "gemm");
    }
    cpb_op op = {0};
    op.kind = CPB_OP_GEMM;
    op.u.gemm.ws = ctx->gemm_ws[stream];
    op.stream = stream;
    op.flops = 2.0 * (double)m * (double)n * (double)ka * (double)batch;
    op.bytes = vbytes(&a) + vbytes(&b) + vbytes(&c) * (beta != 0.0f ? 2.0 : 1.0);
    op.u.gemm.ta = trans_a;
    op.u.gemm.tb = trans_b;
    op.u.gemm.alpha = alpha;
    op.u.gemm.beta = beta;
    op.u.gemm.a = a;
    op.u.gemm.b = b;
    op.u.gemm.c = c;
    op.u.gemm.m = m;
    op.u.gemm.n = n;
    op.u.gemm.k = ka;
    op.u.gemm.batch = batch;
    return dispatch(ctx, &op);
}

/* ---------------------------------------------------------------- RoPE */

int cpb_rope(cpb_ctx *ctx, int stream, cpb_view x, const cpb_segs *pos, double base, int inverse)
{
    CPB_TRY(stream_ok(ctx, stream, "rope"));
    cpb_op_begin(ctx, stream, inverse ? "rope_bwd" : "rope");
    if (x.dim % 2)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: head dim %lld must be even", ctx->opname, (long long)x.dim);
    if (cpb_segs_total(pos) != x.rows)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: %lld positions for %lld rows", ctx->opname,
                        (long long)cpb_segs_total(pos), (long long)x.rows);
    if (!(base > 1.0))
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: rope base %g must be > 1", ctx->opname, base);
    operand ops[] = {{"x", &x, 1, 0}};
    CPB_TRY(operands(ctx, stream, ctx->opname, ops, 1, 1));
    cpb_op op = {0};
    op.kind = CPB_OP_ROPE;
    op.stream = stream;
    op.flops = 3.0 * (double)cpb_view_count(&x);
    op.bytes = 2.0 * vbytes(&x);
    op.u.rope.x = x;
    op.u.rope.pos = pos;
    op.u.rope.base = base;
    op.u.rope.inverse = inverse;
    return dispatch(ctx, &op);
}

/* ---------------------------------------------------------------- attention */

int64_t cpb_attn_pairs(int64_t sq, int64_t sk, int causal, int64_t q_pos0, int64_t k_pos0)
{
    if (!causal) return sq * sk;
    /* query i sees keys j with k_pos0 + j <= q_pos0 + i, i.e. j <= q_pos0 - k_pos0 + i */
    int64_t total = 0;
    int64_t off = q_pos0 - k_pos0; /* visible count for row i: clamp(off + i + 1, 0, sk) */
    /* rows where 0 < off+i+1 < sk contribute off+i+1; rows with off+i+1 >= sk give sk */
    int64_t i0 = -off; /* first row with at least one visible key is i >= -off */
    if (i0 < 0) i0 = 0;
    if (i0 > sq) i0 = sq;
    int64_t i_full = sk - 1 - off; /* first row seeing all keys */
    if (i_full < 0) i_full = 0;
    if (i_full > sq) i_full = sq;
    if (i0 < i_full) {
        /* sum_{i=i0}^{i_full-1} (off + i + 1) */
        int64_t n = i_full - i0;
        int64_t first = off + i0 + 1, last = off + i_full;
        total += (first + last) * n / 2;
    }
    if (sq > i_full) total += (sq - (i0 > i_full ? i0 : i_full)) * sk;
    return total;
}

int64_t cpb_attn_bwd_workspace_elems(const cpb_attn_args *a)
{
    /* fp32 dq accumulator [sq][hq][d] (as FlashAttention-2 keeps one), plus the delta
     * rows when the caller did not provide them */
    int64_t ws = a->q.rows * a->q.heads * a->q.dim;
    if (!a->delta.buf) ws += a->q.rows * a->q.heads;
    return ws;
}

static int attn_shapes(cpb_ctx *ctx, const cpb_attn_args *a, int bwd)
{
    const char *n = ctx->opname;
    int64_t sq = a->q.rows, hq = a->q.heads, d = a->q.dim;
    int64_t sk = a->k.rows, hk = a->k.heads;
    if (a->k.dim != d || a->v.dim != d || a->v.rows != sk || a->v.heads != hk)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: k/v shapes [%lld][%lld][%lld]/[%lld][%lld][%lld] do not match q's head dim %lld",
                        n, (long long)sk, (long long)hk, (long long)a->k.dim, (long long)a->v.rows,
                        (long long)a->v.heads, (long long)a->v.dim, (long long)d);
    if (hk <= 0 || hq % hk)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: %lld query heads are not a multiple of %lld kv heads", n,
                        (long long)hq, (long long)hk);
    if (a->lse.rows != sq || a->lse.heads != hq || a->lse.dim != 1 || !a->lse.buf ||
        a->lse.buf->dtype != CPB_FP32)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: lse must be an fp32 view of [%lld heads][%lld tokens] with dim 1",
                        n, (long long)hq, (long long)sq);
    if (!bwd || a->o.buf) {
        if (a->o.rows != sq || a->o.heads != hq || a->o.dim != d)
            return cpb_fail(ctx, CPB_ERR_INVALID, "%s: o must be [%lld][%lld][%lld]", n, (long long)sq,
                            (long long)hq, (long long)d);
    }
    if (bwd) {
        if (!a->o.buf && !a->delta.buf)
            return cpb_fail(ctx, CPB_ERR_INVALID, "%s: attention backward needs o or delta", n);
        if (a->delta.buf && (a->delta.rows != sq || a->delta.heads != hq || a->delta.dim != 1 ||
                             a->delta.buf->dtype != CPB_FP32))
            return cpb_fail(ctx, CPB_ERR_INVALID, "%s: delta must be an fp32 view of [%lld heads][%lld tokens]", n,
                            (long long)hq, (long long)sq);
        if (a->d_o.rows != sq || a->d_o.heads != hq || a->d_o.dim != d || a->dq.rows != sq ||
            a->dq.heads != hq || a->dq.dim != d || a->dk.rows != sk || a->dk.heads != hk ||
            a->dk.dim != d || a->dv.rows != sk || a->dv.heads != hk || a->dv.dim != d)
            return cpb_fail(ctx, CPB_ERR_INVALID, "%s: dO/dq must be shaped like q and dk/dv like k", n);
    }
    return CPB_OK;
}

/* the implementation that serves a call (cpb_attn_route.h), counted for the row */
static int attn_route(cpb_ctx *ctx, const cpb_attn_args *a, int bwd, cpb_attn_route *r)
{
    const int caps = (ctx->attn_cudnn_present ? CPB_ATTN_CAP_CUDNN : 0) |
                     (ctx->be->models_time ? CPB_ATTN_CAP_FLASH_MODEL : 0); /* only the sim models FlashAttention */
    cpb_attn_route_call(a, bwd, ctx->attn_choice, caps, r);
    if (r->unavailable && r->impl != CPB_ATTN_CUDNN)
        return cpb_fail(ctx, CPB_ERR_UNSUPPORTED, "%s: %s", ctx->opname, r->why);
    if (r->unavailable)
        return cpb_fail(ctx, CPB_ERR_UNSUPPORTED, "%s: --attn cudnn, but cuDNN attention is not available here (%s); "
                        "use --attn auto or own", ctx->opname, ctx->attn_cudnn_why[0] ? ctx->attn_cudnn_why : "no reason given");
    cpb_attn_usage *u = &ctx->attn_usage;
    u->calls[bwd][r->impl]++;
    if (ctx->rep_log) cpb_repeat_log_attn(ctx, bwd, r->impl);
    if (r->impl == CPB_ATTN_OWN && !u->own_why[bwd][0]) snprintf(u->own_why[bwd], sizeof u->own_why[bwd], "%s", r->why);
    return CPB_OK;
}

/* cuDNN's workspace: tracked, of the declared bound (cpb_attn_cudnn_workspace_bytes) */
static int cudnn_workspace(cpb_ctx *ctx, const cpb_attn_args *a, int bwd, cpb_buf **ws)
{
    int64_t bytes = cpb_attn_cudnn_workspace_bytes(a, bwd);
    return cpb_alloc(ctx, ws, (bytes + 3) / 4, CPB_FP32, CPB_TAG_WORKSPACE, bwd ? "cudnn_bwd_ws" : "cudnn_fwd_ws");
}

/* one attention op on the backend, forward or backward, with its workspace from the
 * tracked allocator (DESIGN section 3): cuDNN's of its declared bound, or our kernels'
 * fp32 backward workspace (their forward needs none) */
static int attn_op(cpb_ctx *ctx, int stream, const cpb_attn_args *a, cpb_attn_impl impl, int bwd)
{
    cpb_buf *ws = NULL;
    if (impl == CPB_ATTN_CUDNN) {
        CPB_TRY(cudnn_workspace(ctx, a, bwd, &ws));
    } else if (impl == CPB_ATTN_FA2 || impl == CPB_ATTN_FA3) {
        /* FlashAttention's own buffers (cpb_attn_flash_workspace_bytes): the simulator only */
        const int64_t bytes = cpb_attn_flash_workspace_bytes(a, bwd, impl);
        if (bytes > 0)
            CPB_TRY(cpb_alloc(ctx, &ws, (bytes + 3) / 4, CPB_FP32, CPB_TAG_WORKSPACE, bwd ? "flash_bwd_ws" : "flash_fwd_ws"));
    } else if (bwd)
        CPB_TRY(cpb_alloc(ctx, &ws, cpb_attn_bwd_workspace_elems(a), CPB_FP32, CPB_TAG_WORKSPACE, "attn_bwd_ws"));
    cpb_op_begin(ctx, stream, bwd ? "attn_bwd" : "attn_fwd");
    operand fwd_ops[] = {{"q", &a->q, 0, 0}, {"k", &a->k, 0, 0}, {"v", &a->v, 0, 0},
                         {"o", &a->o, 1, 0}, {"lse", &a->lse, 1, 0}};
    operand bwd_ops[] = {{"q", &a->q, 0, 0},      {"k", &a->k, 0, 0},         {"v", &a->v, 0, 0},
                         {"o", &a->o, 0, 1},      {"dO", &a->d_o, 0, 0},      {"lse", &a->lse, 0, 0},
                         {"delta", &a->delta, 0, 1}, {"dq", &a->dq, 1, 0},    {"dk", &a->dk, 1, 0},
                         {"dv", &a->dv, 1, 0}};
    int rc = bwd ? operands(ctx, stream, ctx->opname, bwd_ops, 10, 1) : operands(ctx, stream, ctx->opname, fwd_ops, 5, 1);
    if (rc == CPB_OK && ws) {
        cpb_view wsv = cpb_whole(ws);
        rc = cpb_race_access(ctx, stream, &wsv, 1);
    }
    if (rc == CPB_OK) {
        cpb_op op = {0};
        op.kind = bwd ? CPB_OP_ATTN_BWD : CPB_OP_ATTN_FWD;
        op.stream = stream;
        int64_t pairs = cpb_attn_pairs(a->q.rows, a->k.rows, a->causal, a->q_pos0, a->k_pos0);
        /* DESIGN section 6: 4 FLOPs per (query, key) pair, head and dim forward, 10 backward */
        op.flops = (bwd ? 10.0 : 4.0) * (double)pairs * (double)a->q.dim * (double)a->q.heads;
        op.bytes = bwd ? vbytes(&a->q) + vbytes(&a->k) + vbytes(&a->v) + vbytes(&a->d_o) + vbytes(&a->lse) +
                             2.0 * (vbytes(&a->dq) + vbytes(&a->dk) + vbytes(&a->dv)) +
                             (a->o.buf ? vbytes(&a->o) : vbytes(&a->delta))
                       : vbytes(&a->q) + vbytes(&a->k) + vbytes(&a->v) + vbytes(&a->o) + vbytes(&a->lse);
        op.u.attn.a = a;
        op.u.attn.ws = ws;
        op.u.attn.pairs = pairs;
        op.u.attn.impl = impl;
        rc = dispatch(ctx, &op);
    }
    int rc2 = cpb_free(ctx, stream, &ws);
    return rc != CPB_OK ? rc : rc2;
}


/* A call cuDNN (or, in the simulator, FlashAttention) serves through temporaries
 * (cpb_attn_route.h, CPB_ATTN_ADAPT_*): what it cannot write or read in place is a
 * contiguous, aligned temporary, copied (o, lse) or added (dq, dk, dv) to the caller's views.  Allocated in one order, sized with the
 * longer of the call's two lengths, so every rank of a step allocates alike. */
static int attn_cudnn_adapted(cpb_ctx *ctx, int stream, const cpb_attn_args *a, int bwd, int adapt, cpb_attn_impl impl)
{
    static const char *const names[5] = {"cudnn_o_tmp", "cudnn_lse_tmp", "cudnn_dq_tmp", "cudnn_dk_tmp", "cudnn_dv_tmp"};
    static const int bits[5] = {CPB_ATTN_ADAPT_O, CPB_ATTN_ADAPT_LSE, CPB_ATTN_ADAPT_GRADS, CPB_ATTN_ADAPT_GRADS,
                                CPB_ATTN_ADAPT_GRADS};
    cpb_buf *t[5] = {NULL, NULL, NULL, NULL, NULL};
    int rc = CPB_OK;
    for (int i = 0; i < 5 && rc == CPB_OK; i++)
        if (adapt & bits[i])
            rc = cpb_alloc(ctx, &t[i], cpb_attn_cudnn_temp_elems(a, i), i == CPB_ATTN_TMP_LSE ? CPB_FP32 : CPB_BF16,
                           CPB_TAG_WORKSPACE, names[i]);
    cpb_attn_args b = *a;
    const int64_t d = a->q.dim, sq = a->q.rows, sk = a->k.rows, hq = a->q.heads, hk = a->k.heads;
    if (t[CPB_ATTN_TMP_O]) b.o = cpb_heads(t[CPB_ATTN_TMP_O], 0, sq, hq, d, hq * d, d);
    if (t[CPB_ATTN_TMP_LSE]) {
        b.lse = cpb_lse_view(t[CPB_ATTN_TMP_LSE], sq, 0, hq, 0, sq);
        if (rc == CPB_OK && bwd) rc = cpb_copy(ctx, stream, b.lse, a->lse);
    }
    if (t[CPB_ATTN_TMP_DQ]) {
        b.dq = cpb_heads(t[CPB_ATTN_TMP_DQ], 0, sq, hq, d, hq * d, d);
        b.dk = cpb_heads(t[CPB_ATTN_TMP_DK], 0, sk, hk, d, hk * d, d);
        b.dv = cpb_heads(t[CPB_ATTN_TMP_DV], 0, sk, hk, d, hk * d, d);
        b.accumulate = 0;
    }
    if (rc == CPB_OK) rc = attn_op(ctx, stream, &b, impl, bwd);
    if (rc == CPB_OK && !bwd && t[CPB_ATTN_TMP_O]) rc = cpb_copy(ctx, stream, a->o, b.o);
    if (rc == CPB_OK && !bwd && t[CPB_ATTN_TMP_LSE]) rc = cpb_copy(ctx, stream, a->lse, b.lse);
    if (t[CPB_ATTN_TMP_DQ]) {
        const float beta = a->accumulate ? 1.0f : 0.0f;
        if (rc == CPB_OK) rc = cpb_axpby(ctx, stream, 1.0f, b.dq, beta, a->dq);
        if (rc == CPB_OK) rc = cpb_axpby(ctx, stream, 1.0f, b.dk, beta, a->dk);
        if (rc == CPB_OK) rc = cpb_axpby(ctx, stream, 1.0f, b.dv, beta, a->dv);
    }
    for (int i = 4; i >= 0; i--) {
        int rc2 = cpb_free(ctx, stream, &t[i]);
        if (rc == CPB_OK) rc = rc2;
    }
    return rc;
}

/* an attention call: shapes checked, routed (cpb_attn_route_call: the same decision on
 * every backend), then one op, or cuDNN through temporaries */
static int attn_call(cpb_ctx *ctx, int stream, const cpb_attn_args *a, int bwd)
{
    const char *name = bwd ? "attn_bwd" : "attn_fwd";
    CPB_TRY(stream_ok(ctx, stream, name));
    cpb_op_begin(ctx, stream, name);
    CPB_TRY(attn_shapes(ctx, a, bwd));
    cpb_attn_route r;
    CPB_TRY(attn_route(ctx, a, bwd, &r));
    if (r.impl != CPB_ATTN_OWN && r.adapt) return attn_cudnn_adapted(ctx, stream, a, bwd, r.adapt, r.impl);
    return attn_op(ctx, stream, a, r.impl, bwd);
}

int cpb_attn_fwd(cpb_ctx *ctx, int stream, const cpb_attn_args *a)
{
    return attn_call(ctx, stream, a, 0);
}

int cpb_attn_bwd(cpb_ctx *ctx, int stream, const cpb_attn_args *a)
{
    return attn_call(ctx, stream, a, 1);
}

int cpb_attn_delta(cpb_ctx *ctx, int stream, cpb_view o, cpb_view d_o, cpb_view delta)
{
    CPB_TRY(stream_ok(ctx, stream, "attn_delta"));
    cpb_op_begin(ctx, stream, "attn_delta");
    if (o.rows != d_o.rows || o.heads != d_o.heads || o.dim != d_o.dim || delta.rows != o.rows ||
        delta.heads != o.heads || delta.dim != 1 || !delta.buf || delta.buf->dtype != CPB_FP32)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: o and dO must have equal shapes and delta be fp32 [heads][rows]", ctx->opname);
    operand ops[] = {{"o", &o, 0, 0}, {"dO", &d_o, 0, 0}, {"delta", &delta, 1, 0}};
    CPB_TRY(operands(ctx, stream, ctx->opname, ops, 3, 1));
    cpb_op op = {0};
    op.kind = CPB_OP_ATTN_DELTA;
    op.stream = stream;
    op.flops = 2.0 * (double)cpb_view_count(&o);
    op.bytes = vbytes(&o) + vbytes(&d_o) + vbytes(&delta);
    op.u.delta.o = o;
    op.u.delta.d_o = d_o;
    op.u.delta.delta = delta;
    return dispatch(ctx, &op);
}

int cpb_lse_merge(cpb_ctx *ctx, int stream, cpb_view o_acc, cpb_view lse_acc, cpb_view o_part,
                  cpb_view lse_part)
{
    CPB_TRY(stream_ok(ctx, stream, "lse_merge"));
    cpb_op_begin(ctx, stream, "lse_merge");
    if (o_acc.rows != o_part.rows || o_acc.heads != o_part.heads || o_acc.dim != o_part.dim ||
        lse_acc.rows != o_acc.rows || lse_acc.heads != o_acc.heads || lse_part.rows != o_acc.rows ||
        lse_part.heads != o_acc.heads || lse_acc.dim != 1 || lse_part.dim != 1 || !lse_acc.buf ||
        !lse_part.buf || lse_acc.buf->dtype != CPB_FP32 || lse_part.buf->dtype != CPB_FP32)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: accumulator and partial must have equal shapes, lse fp32 [heads][rows]",
                        ctx->opname);
    operand ops[] = {{"o_part", &o_part, 0, 0}, {"lse_part", &lse_part, 0, 0},
                     {"o_acc", &o_acc, 1, 0}, {"lse_acc", &lse_acc, 1, 0}};
    CPB_TRY(operands(ctx, stream, ctx->opname, ops, 4, 1));
    cpb_op op = {0};
    op.kind = CPB_OP_LSE_MERGE;
    op.stream = stream;
    op.flops = 4.0 * (double)cpb_view_count(&o_acc);
    op.bytes = 3.0 * vbytes(&o_acc) + 3.0 * vbytes(&lse_acc);
    op.u.merge.o_acc = o_acc;
    op.u.merge.lse_acc = lse_acc;
    op.u.merge.o_part = o_part;
    op.u.merge.lse_part = lse_part;
    return dispatch(ctx, &op);
}

/* ---------------------------------------------------------------- element-wise */

static int same_shape(const cpb_view *a, const cpb_view *b)
{
    return a->rows == b->rows && a->heads == b->heads && a->dim == b->dim;
}

int cpb_copy(cpb_ctx *ctx, int stream, cpb_view dst, cpb_view src)
{
    CPB_TRY(stream_ok(ctx, stream, "copy"));
    int pcie = dst.buf && src.buf && dst.buf->host != src.buf->host;
    cpb_op_begin(ctx, stream, pcie ? (dst.buf->host ? "copy_d2h" : "copy_h2d") : "copy");
    if (!same_shape(&dst, &src))
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: dst [%lld][%lld][%lld] and src [%lld][%lld][%lld] differ",
                        ctx->opname, (long long)dst.rows, (long long)dst.heads, (long long)dst.dim,
                        (long long)src.rows, (long long)src.heads, (long long)src.dim);
    operand ops[] = {{"src", &src, 0, 0}, {"dst", &dst, 1, 0}};
    CPB_TRY(operands(ctx, stream, ctx->opname, ops, 2, 0));
    if (dst.buf->host && src.buf->host)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: host-to-host copies are not part of a schedule", ctx->opname);
    cpb_op op = {0};
    op.kind = CPB_OP_COPY;
    op.stream = stream;
    op.pcie = pcie;
    op.bytes = vbytes(&src) + vbytes(&dst);
    op.u.copy.dst = dst;
    op.u.copy.src = src;
    return dispatch(ctx, &op);
}

int cpb_fill(cpb_ctx *ctx, int stream, cpb_view dst, float value)
{
    CPB_TRY(stream_ok(ctx, stream, "fill"));
    cpb_op_begin(ctx, stream, dst.buf && dst.buf->host ? "fill_host" : "fill");
    /* a pinned host destination is allowed: the host fills it (e.g. torch.zeros on pinned
     * memory), in stream order */
    operand ops[] = {{"dst", &dst, 1, 0}};
    CPB_TRY(operands(ctx, stream, ctx->opname, ops, 1, 0));
    cpb_op op = {0};
    op.kind = CPB_OP_FILL;
    op.stream = stream;
    op.bytes = vbytes(&dst);
    op.u.fill.dst = dst;
    op.u.fill.value = value;
    return dispatch(ctx, &op);
}

int cpb_axpby(cpb_ctx *ctx, int stream, float alpha, cpb_view x, float beta, cpb_view y)
{
    CPB_TRY(stream_ok(ctx, stream, "axpby"));
    cpb_op_begin(ctx, stream, "axpby");
    if (!same_shape(&x, &y))
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: x and y shapes differ", ctx->opname);
    operand ops[] = {{"x", &x, 0, 0}, {"y", &y, 1, 0}};
    CPB_TRY(operands(ctx, stream, ctx->opname, ops, 2, 1));
    cpb_op op = {0};
    op.kind = CPB_OP_AXPBY;
    op.stream = stream;
    op.flops = 3.0 * (double)cpb_view_count(&x);
    op.bytes = vbytes(&x) + 2.0 * vbytes(&y);
    op.u.axpby.alpha = alpha;
    op.u.axpby.beta = beta;
    op.u.axpby.x = x;
    op.u.axpby.y = y;
    return dispatch(ctx, &op);
}

int cpb_fill_random(cpb_ctx *ctx, int stream, cpb_view dst, uint64_t seed, int64_t base_index, float scale)
{
    CPB_TRY(stream_ok(ctx, stream, "fill_random"));
    cpb_op_begin(ctx, stream, "fill_random");
    operand ops[] = {{"dst", &dst, 1, 0}};
    CPB_TRY(operands(ctx, stream, ctx->opname, ops, 1, 0));
    cpb_op op = {0};
    op.kind = CPB_OP_FILL_RANDOM;
    op.stream = stream;
    op.bytes = vbytes(&dst);
    op.u.rnd.dst = dst;
    op.u.rnd.seed = seed;
    op.u.rnd.base = base_index;
    op.u.rnd.scale = scale;
    return dispatch(ctx, &op);
}

int cpb_sumsq(cpb_ctx *ctx, int stream, cpb_view x, cpb_view out, int accumulate)
{
    CPB_TRY(stream_ok(ctx, stream, "sumsq"));
    cpb_op_begin(ctx, stream, "sumsq");
    operand ops[] = {{"x", &x, 0, 0}, {"out", &out, 1, 0}};
    CPB_TRY(operands(ctx, stream, ctx->opname, ops, 2, 1));
    if (out.buf->dtype != CPB_FP32 || cpb_view_count(&out) != 1)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: out must be one fp32 element ('%s' is %s, %lld elements)",
                        ctx->opname, out.buf->name, cpb_dtype_name(out.buf->dtype), (long long)cpb_view_count(&out));
    cpb_op op = {0};
    op.kind = CPB_OP_SUMSQ;
    op.stream = stream;
    op.flops = 2.0 * (double)cpb_view_count(&x);
    op.bytes = vbytes(&x) + 2.0 * vbytes(&out);
    op.u.sumsq.x = x;
    op.u.sumsq.out = out;
    op.u.sumsq.accumulate = accumulate != 0;
    return dispatch(ctx, &op);
}
