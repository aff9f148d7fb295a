/* cuda_ops.c — the compute ops of the cuda backend: operands made ready on the op's
 * stream, views turned into kernel descriptors, the kernel (or cuBLAS, or a DMA copy)
 * enqueued.  Shapes were validated by the runtime front-end (runtime/ops.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn_cudnn.h"
#include "cuda_copy_plan.h"
#include "cuda_internal.h"
#include "cuda_kernels.h"

static kview kv(const cpb_view *v)
{
    kview k;
    k.p = v->buf ? cuda_vptr(v) : NULL;
    k.bf16 = v->buf ? v->buf->dtype == CPB_BF16 : 0;
    k.rows = v->rows;
    k.heads = v->heads;
    k.dim = v->dim;
    k.rs = v->row_stride;
    k.hs = v->head_stride;
    return k;
}

static int launched(cpb_ctx *ctx, const cpb_op *op, cudaError_t e)
{
    if (e == cudaSuccess) return CPB_OK;
    char what[CPB_RANGE_LEN + 96];
    snprintf(what, sizeof what, "%s (%s kernel launch)", op->name, cpb_op_kind_name(op->kind));
    return cuda_fail(ctx, e, what);
}

/* ---------------------------------------------------------------- copy */

static int run_copy(cpb_ctx *ctx, const cpb_op *op, cudaStream_t s)
{
    const cpb_view *dst = &op->u.copy.dst, *src = &op->u.copy.src;
    cuda_copy_plan p = {CUDA_COPY_KERNEL, 0, 0, 0, 0};
    if (dst->buf->dtype == src->buf->dtype)
        p = cuda_plan_copy(dst, src, cpb_dtype_size(dst->buf->dtype), cuda_st(ctx)->mem_pitch);
    char *d = cuda_vptr(dst);
    const char *sp = cuda_vptr(src);
    /* same dtype and a layout the DMA engines take (PCIe for host <-> device) */
    switch (p.kind) {
    case CUDA_COPY_NONE: return CPB_OK;
    case CUDA_COPY_1D: CUDA_TRY(ctx, cudaMemcpyAsync(d, sp, p.width, cudaMemcpyDefault, s)); return CPB_OK;
    case CUDA_COPY_2D:
        CUDA_TRY(ctx, cudaMemcpy2DAsync(d, p.dpitch, sp, p.spitch, p.width, p.height, cudaMemcpyDefault, s));
        return CPB_OK;
    case CUDA_COPY_ROWS:
        for (size_t r = 0; r < p.height; r++)
            CUDA_TRY(ctx, cudaMemcpyAsync(d + r * p.dpitch, sp + r * p.spitch, p.width, cudaMemcpyDefault, s));
        return CPB_OK;
    case CUDA_COPY_KERNEL: break;
    }
    /* conversion or a layout DMA cannot express: a kernel, which reads and writes pinned
     * host memory directly through its mapped (UVA) address */
    return launched(ctx, op, cpbk_copy(s, kv(dst), kv(src)));
}

/* ---------------------------------------------------------------- RoPE */

/* Positions travel as kernel arguments, CPBK_ROPE_INLINE_SEGS segments per launch (a view
 * of those segments' rows each): nothing is copied from host memory, so no pageable copy
 * (a synchronous staging by the driver) and no table on the device that the next RoPE of
 * the stream could overwrite. */
static int run_rope(cpb_ctx *ctx, const cpb_op *op, int stream)
{
    cuda_state *st = cuda_st(ctx);
    const cpb_segs *pos = op->u.rope.pos;
    kview x = kv(&op->u.rope.x);
    if (pos->n <= 0 || cpb_view_count(&op->u.rope.x) == 0) return CPB_OK;
    size_t es = x.bf16 ? 2 : 4;
    int64_t row = 0;
    for (int i0 = 0; i0 < pos->n; i0 += CPBK_ROPE_INLINE_SEGS) {
        int n = pos->n - i0 < CPBK_ROPE_INLINE_SEGS ? pos->n - i0 : CPBK_ROPE_INLINE_SEGS;
        /* [start rows (n+1)] [pos0 (n)], rows counted from this chunk's first */
        kseg_inline inl;
        memset(&inl, 0, sizeof inl);
        int64_t r = 0;
        for (int i = 0; i < n; i++) {
            inl.t[i] = r;
            inl.t[n + 1 + i] = pos->pos0[i0 + i];
            r += pos->len[i0 + i];
        }
        inl.t[n] = r;
        kview part = x;
        part.p = (char *)x.p + (size_t)(row * x.rs) * es;
        part.rows = r;
        CPB_TRY(launched(ctx, op, cpbk_rope(st->streams[stream], part, &inl, n, op->u.rope.base, op->u.rope.inverse)));
        row += r;
    }
    return CPB_OK;
}

/* ---------------------------------------------------------------- attention */

static kattn attn_desc(cpb_ctx *ctx, const cpb_attn_args *a)
{
    kattn k;
    memset(&k, 0, sizeof k);
    k.generic = cuda_st(ctx)->attn_generic;
    k.q = kv(&a->q);
    k.k = kv(&a->k);
    k.v = kv(&a->v);
    k.o = kv(&a->o);
    k.lse = kv(&a->lse);
    k.d_o = kv(&a->d_o);
    k.delta = kv(&a->delta);
    k.dq = kv(&a->dq);
    k.dk = kv(&a->dk);
    k.dv = kv(&a->dv);
    k.causal = a->causal;
    k.accumulate = a->accumulate;
    k.q_pos0 = a->q_pos0;
    k.k_pos0 = a->k_pos0;
    k.scale = a->scale != 0.0f ? a->scale : (float)(1.0 / sqrt((double)a->q.dim));
    return k;
}

static int head_dim_ok(cpb_ctx *ctx, const cpb_op *op, int64_t d)
{
    if (d > 256)
        return cpb_fail(ctx, CPB_ERR_UNSUPPORTED, "%s: head dim %lld: the cuda attention kernels handle head dims up to 256",
                        op->name, (long long)d);
    return CPB_OK;
}

/* a view as cuDNN's tensors take it */
static cudnn_tensor dnn_tensor(const cpb_view *v)
{
    cudnn_tensor t = {cuda_vptr(v), v->row_stride, v->head_stride};
    return t;
}

/* a call the front-end routed to cuDNN (cpb_attn_route.h), with its tracked workspace;
 * cuDNN refusing it, or needing more workspace than the bound, is the op's error */
static int run_attn_cudnn(cpb_ctx *ctx, const cpb_op *op, cudaStream_t s)
{
    const cpb_attn_args *a = op->u.attn.a;
    cudnn_attn_call c;
    memset(&c, 0, sizeof c);
    c.bwd = op->kind == CPB_OP_ATTN_BWD;
    c.sq = a->q.rows;
    c.sk = a->k.rows;
    c.hq = a->q.heads;
    c.hk = a->k.heads;
    c.d = a->q.dim;
    /* the route sends causal calls only when aligned top-left or bottom-right, or fully
     * visible (unmasked) */
    c.causal = cpb_attn_cudnn_mask(a);
    c.scale = a->scale != 0.0f ? a->scale : (float)(1.0 / sqrt((double)a->q.dim));
    c.q = dnn_tensor(&a->q);
    c.k = dnn_tensor(&a->k);
    c.v = dnn_tensor(&a->v);
    c.o = dnn_tensor(&a->o);
    c.lse = dnn_tensor(&a->lse);
    if (c.bwd) {
        c.d_o = dnn_tensor(&a->d_o);
        c.dq = dnn_tensor(&a->dq);
        c.dk = dnn_tensor(&a->dk);
        c.dv = dnn_tensor(&a->dv);
    }
    c.ws = op->u.attn.ws ? op->u.attn.ws->ptr : NULL;
    c.ws_bytes = op->u.attn.ws ? op->u.attn.ws->bytes : 0;
    c.stream = (void *)s;
    char err[1024];
    if (cpb_cudnn_attn_run(&c, err, sizeof err) != 0)
        return cpb_fail(ctx, CPB_ERR_BACKEND, "%s: %s", op->name, err);
    return CPB_OK;
}

static int run_attn_fwd(cpb_ctx *ctx, const cpb_op *op, cudaStream_t s)
{
    if (op->u.attn.impl == CPB_ATTN_CUDNN) return run_attn_cudnn(ctx, op, s);
    CPB_TRY(head_dim_ok(ctx, op, op->u.attn.a->q.dim));
    kattn k = attn_desc(ctx, op->u.attn.a);
    return launched(ctx, op, cpbk_attn_fwd(s, &k));
}

static int run_attn_bwd(cpb_ctx *ctx, const cpb_op *op, cudaStream_t s)
{
    if (op->u.attn.impl == CPB_ATTN_CUDNN) return run_attn_cudnn(ctx, op, s);
    const cpb_attn_args *a = op->u.attn.a;
    CPB_TRY(head_dim_ok(ctx, op, a->q.dim));
    kattn k = attn_desc(ctx, a);
    /* workspace layout (cpb_attn_bwd_workspace_elems): fp32 dq accumulator [sq][hq][d],
     * then, when the caller gave no delta, delta [hq][sq] computed here from o and dO */
    float *ws = (float *)op->u.attn.ws->ptr;
    int64_t sq = a->q.rows, hq = a->q.heads, d = a->q.dim;
    k.dq_acc = ws;
    if (!a->delta.buf) {
        kview dv;
        dv.p = ws + sq * hq * d;
        dv.bf16 = 0;
        dv.rows = sq;
        dv.heads = hq;
        dv.dim = 1;
        dv.rs = 1;
        dv.hs = sq;
        CPB_TRY(launched(ctx, op, cpbk_delta(s, k.o, k.d_o, dv)));
        k.delta = dv;
    }
    return launched(ctx, op, cpbk_attn_bwd(s, &k));
}

/* ---------------------------------------------------------------- dispatch */

static int ready_all(cpb_ctx *ctx, const cpb_op *op)
{
    int s = op->stream;
    switch (op->kind) {
    case CPB_OP_GEMM:
        CPB_TRY(cuda_ready_view(ctx, &op->u.gemm.a, s));
        CPB_TRY(cuda_ready_view(ctx, &op->u.gemm.b, s));
        return cuda_ready_view(ctx, &op->u.gemm.c, s);
    case CPB_OP_ROPE: return cuda_ready_view(ctx, &op->u.rope.x, s);
    case CPB_OP_ATTN_FWD:
    case CPB_OP_ATTN_BWD: {
        const cpb_attn_args *a = op->u.attn.a;
        const cpb_view *vs[] = {&a->q, &a->k, &a->v, &a->o, &a->lse, &a->d_o, &a->delta, &a->dq, &a->dk, &a->dv};
        int n = op->kind == CPB_OP_ATTN_FWD ? 5 : 10;
        for (int i = 0; i < n; i++) CPB_TRY(cuda_ready_view(ctx, vs[i], s));
        if (op->u.attn.ws) CPB_TRY(cuda_ready(ctx, op->u.attn.ws, s));
        return CPB_OK;
    }
    case CPB_OP_ATTN_DELTA:
        CPB_TRY(cuda_ready_view(ctx, &op->u.delta.o, s));
        CPB_TRY(cuda_ready_view(ctx, &op->u.delta.d_o, s));
        return cuda_ready_view(ctx, &op->u.delta.delta, s);
    case CPB_OP_LSE_MERGE:
        CPB_TRY(cuda_ready_view(ctx, &op->u.merge.o_acc, s));
        CPB_TRY(cuda_ready_view(ctx, &op->u.merge.lse_acc, s));
        CPB_TRY(cuda_ready_view(ctx, &op->u.merge.o_part, s));
        return cuda_ready_view(ctx, &op->u.merge.lse_part, s);
    case CPB_OP_COPY:
        CPB_TRY(cuda_ready_view(ctx, &op->u.copy.dst, s));
        return cuda_ready_view(ctx, &op->u.copy.src, s);
    case CPB_OP_FILL: return cuda_ready_view(ctx, &op->u.fill.dst, s);
    case CPB_OP_AXPBY:
        CPB_TRY(cuda_ready_view(ctx, &op->u.axpby.x, s));
        return cuda_ready_view(ctx, &op->u.axpby.y, s);
    case CPB_OP_FILL_RANDOM: return cuda_ready_view(ctx, &op->u.rnd.dst, s);
    case CPB_OP_SUMSQ:
        CPB_TRY(cuda_ready_view(ctx, &op->u.sumsq.x, s));
        return cuda_ready_view(ctx, &op->u.sumsq.out, s);
    default: return CPB_OK;
    }
}

int cuda_run_op(cpb_ctx *ctx, const cpb_op *op)
{
    cuda_state *st = cuda_st(ctx);
    cudaStream_t s = st->streams[op->stream];
    CPB_TRY(ready_all(ctx, op));
    switch (op->kind) {
    case CPB_OP_GEMM: return cuda_gemm(ctx, op);
    case CPB_OP_ROPE: return run_rope(ctx, op, op->stream);
    case CPB_OP_ATTN_FWD: return run_attn_fwd(ctx, op, s);
    case CPB_OP_ATTN_BWD: return run_attn_bwd(ctx, op, s);
    case CPB_OP_ATTN_DELTA:
        return launched(ctx, op, cpbk_delta(s, kv(&op->u.delta.o), kv(&op->u.delta.d_o), kv(&op->u.delta.delta)));
    case CPB_OP_LSE_MERGE:
        return launched(ctx, op, cpbk_lse_merge(s, kv(&op->u.merge.o_acc), kv(&op->u.merge.lse_acc),
                                                kv(&op->u.merge.o_part), kv(&op->u.merge.lse_part)));
    case CPB_OP_COPY: return run_copy(ctx, op, s);
    case CPB_OP_FILL: return launched(ctx, op, cpbk_fill(s, kv(&op->u.fill.dst), op->u.fill.value));
    case CPB_OP_AXPBY:
        return launched(ctx, op, cpbk_axpby(s, op->u.axpby.alpha, kv(&op->u.axpby.x), op->u.axpby.beta,
                                            kv(&op->u.axpby.y)));
    case CPB_OP_FILL_RANDOM:
        return launched(ctx, op, cpbk_fill_random(s, kv(&op->u.rnd.dst), op->u.rnd.seed, op->u.rnd.base,
                                                  op->u.rnd.scale));
    case CPB_OP_SUMSQ:
        return launched(ctx, op, cpbk_sumsq(s, kv(&op->u.sumsq.x), (float *)cuda_vptr(&op->u.sumsq.out),
                                            op->u.sumsq.accumulate));
    default:
        return cpb_fail(ctx, CPB_ERR_UNSUPPORTED, "cuda backend: op kind %d is not implemented", (int)op->kind);
    }
}

/* ---------------------------------------------------------------- upload / download */

/* Program arrays (fp32, logical row-major order) go through a temporary device array
 * (outside the tracked allocator: setup and verification only) and the conversion
 * kernels, so bf16 rounding is the device's round-to-nearest-even on both paths. */
static int xfer(cpb_ctx *ctx, cpb_view v, float *host, int up)
{
    cuda_state *st = cuda_st(ctx);
    int64_t n = cpb_view_count(&v);
    if (n == 0) return CPB_OK;
    cudaStream_t s = st->streams[CPB_STREAM_COMPUTE];
    CPB_TRY(cuda_ready(ctx, v.buf, CPB_STREAM_COMPUTE));
    float *tmp = NULL;
    size_t bytes = sizeof(float) * (size_t)n;
    CUDA_TRY(ctx, cudaMallocAsync((void **)&tmp, bytes, s));
    cudaError_t e;
    if (up) {
        e = cudaMemcpyAsync(tmp, host, bytes, cudaMemcpyHostToDevice, s);
        if (e == cudaSuccess) e = cpbk_from_f32(s, kv(&v), tmp);
    } else {
        e = cpbk_to_f32(s, tmp, kv(&v));
        if (e == cudaSuccess) e = cudaMemcpyAsync(host, tmp, bytes, cudaMemcpyDeviceToHost, s);
    }
    cudaError_t e2 = cudaFreeAsync(tmp, s);
    cudaError_t e3 = cudaStreamSynchronize(s);
    if (e == cudaSuccess) e = e2;
    if (e == cudaSuccess) e = e3;
    if (e != cudaSuccess) return cuda_fail(ctx, e, up ? "upload" : "download");
    return CPB_OK;
}

int cuda_upload(cpb_ctx *ctx, cpb_view dst, const float *src)
{
    return xfer(ctx, dst, (float *)src, 1);
}

int cuda_download(cpb_ctx *ctx, cpb_view src, float *dst)
{
    return xfer(ctx, src, dst, 0);
}
