/* ring.c — Ring Attention (DESIGN.md section 4, "ring"), with the load balance of
 * --ring-layout (common/block_iter.h): zigzag (the default), striped or contiguous.
 *
 * Weights are replicated; under zigzag rank r holds chunks r and 2C-1-r of the sequence,
 * under striped tokens r, r+C, r+2C, ..., under contiguous the r-th C-th of it.
 * Forward: q, K, V for the local tokens (RoPE at their global positions), the ring loop of
 * methods/common/ring_attn (K,V rotate while the current block is computed, partial
 * outputs merged by lse in fp32), y = o Wo.  Saves q, K, V (packed), o and lse.
 * Backward: dO = dy Wo^T, the ring loop again with fp32 dK,dV travelling back to their
 * owner, RoPE backward, dx and the dW partials of this rank's tokens.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/ring_attn.h"
#include "common/proj_bwd.h"
#include "cpb_method.h"

/* the layout p asks for (the knob's value is one of its choices: driver/knobs.c checks) */
static cpb_blk_layout layout_of(const cpb_problem *p)
{
    int l = cpb_blk_layout_of(cpb_knob_str(p, "ring_layout"));
    return l < 0 ? CPB_BLK_ZIGZAG : (cpb_blk_layout)l;
}


typedef struct ring_state {
    cpb_buf *q, *kv; /* after RoPE: q [s][H][d], packed K,V [2][s][G][d] */
    cpb_buf *o;      /* attention output [s][H*d], storage dtype */
    cpb_buf *lse;    /* fp32 [H][s] */
} ring_state;

static int ring_check(const cpb_problem *p, char *why, size_t why_len)
{
    cpb_blk_layout l = layout_of(p);
    int64_t per = (int64_t)cpb_blk_chunks(l) * (p->C > 0 ? p->C : 1);
    if (p->C <= 0 || p->S % per) {
        snprintf(why, why_len, "ring (%s) needs the sequence (S = %lld) to be a multiple of %s = %lld",
                 cpb_blk_layout_name(l), (long long)p->S, l == CPB_BLK_ZIGZAG ? "2C" : "C", (long long)per);
        return CPB_ERR_INVALID;
    }
    if (l != CPB_BLK_ZIGZAG && cpb_ring_cudnn_may_serve(p)) {
        /* a step's block is top-left or unmasked on some ranks (cuDNN's) and offset or empty
         * on others (our kernels'), whose workspaces differ: the ranks would allocate
         * differently (DESIGN section 3) */
        snprintf(why, why_len, "ring --ring-layout %s: cuDNN would serve a step's attention on some ranks and our "
                 "kernels on others (docs/attention.md), so the ranks would allocate differently; run it with "
                 "--attn own", cpb_blk_layout_name(l));
        return CPB_ERR_INVALID;
    }
    if (l == CPB_BLK_STRIPED && p->S / p->C > CPB_MAX_SEGS) {
        /* each local token is its own position segment (cpb.h: cpb_segs) */
        snprintf(why, why_len, "ring --ring-layout striped holds %lld tokens per rank, each its own position "
                 "segment, and the runtime's position lists hold at most %d (CPB_MAX_SEGS): use at most %lld "
                 "tokens, or zigzag, which balances the same work",
                 (long long)(p->S / p->C), CPB_MAX_SEGS, (long long)CPB_MAX_SEGS * p->C);
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

/* global tokens of `rank` in local row order: the layout's */
static int ring_token_layout(const cpb_problem *p, int rank, cpb_segs *out)
{
    switch (layout_of(p)) {
    case CPB_BLK_CONTIGUOUS:
        return cpb_layout_contiguous(p, rank, out);
    case CPB_BLK_STRIPED:
        cpb_segs_clear(out);
        if (p->C <= 0 || p->S % p->C) return CPB_ERR_INVALID;
        for (int64_t t = rank; t < p->S; t += p->C)
            if (cpb_segs_add(out, t, 1) < 0) return CPB_ERR_INVALID;
        return CPB_OK;
    default:
        return cpb_layout_zigzag(p, rank, out);
    }
}

/* kv_scratch: forward keeps the rank's K,V for backward; backward may rotate through it */
static int ring_setup(cpb_ctx *ctx, const cpb_layer *L, int kv_scratch, cpb_ring_cfg *cfg)
{
    const cpb_problem *p = &L->p;
    cfg->g = NULL;
    CPB_TRY(cpb_stream(ctx, "comm", &cfg->comm_stream));
    cfg->layout = layout_of(p);
    cfg->c = p->S / (cpb_blk_chunks(cfg->layout) * (int64_t)p->C);
    cfg->hq = p->H;
    cfg->hk = p->G;
    cfg->d = p->d;
    cfg->dtype = p->dtype;
    cfg->kv_scratch = kv_scratch;
    cfg->inner = 0;
    if (L->s != cpb_ring_rows(cfg))
        return cpb_fail(ctx, CPB_ERR_INVALID, "ring: %lld local tokens, expected %lld under the %s layout",
                        (long long)L->s, (long long)cpb_ring_rows(cfg), cpb_blk_layout_name(cfg->layout));
    return CPB_OK;
}

static cpb_view q_heads(const cpb_layer *L, cpb_buf *b)
{
    int64_t hd = (int64_t)L->p.H * L->p.d;
    return cpb_heads(b, 0, L->s, L->p.H, L->p.d, hd, L->p.d);
}

static int forward_body(cpb_ctx *ctx, cpb_layer *L, ring_state *st)
{
    const cpb_problem *p = &L->p;
    cpb_ring_cfg cfg;
    CPB_TRY(ring_setup(ctx, L, 0, &cfg));
    int64_t s = L->s, D = p->D, hqd = (int64_t)p->H * p->d, hkd = (int64_t)p->G * p->d;
    CPB_TRY(cpb_alloc(ctx, &st->q, s * hqd, p->dtype, CPB_TAG_QKV, "q"));
    CPB_TRY(cpb_alloc(ctx, &st->kv, cpb_ring_kv_elems(&cfg), p->dtype, CPB_TAG_QKV, "kv"));
    CPB_TRY(cpb_ring_project(ctx, &cfg, cpb_mat(L->x, 0, s, D, D), cpb_mat(L->wq, 0, D, hqd, hqd),
                             cpb_mat(L->wk, 0, D, hkd, hkd), cpb_mat(L->wv, 0, D, hkd, hkd), &L->tokens,
                             p->rope_base, q_heads(L, st->q), st->kv));
    CPB_TRY(cpb_alloc(ctx, &st->o, s * hqd, p->dtype, CPB_TAG_ATTN, "o"));
    CPB_TRY(cpb_alloc(ctx, &st->lse, s * p->H, CPB_FP32, CPB_TAG_ATTN, "lse"));
    CPB_TRY(cpb_ring_attn_fwd(ctx, &cfg, q_heads(L, st->q), st->kv, q_heads(L, st->o),
                              cpb_lse_view(st->lse, s, 0, p->H, 0, s)));
    return cpb_gemm(ctx, CPB_STREAM_COMPUTE, 0, 0, 1.0f, cpb_mat(st->o, 0, s, hqd, hqd), cpb_mat(L->wo, 0, hqd, D, D),
                    0.0f, cpb_mat(L->y, 0, s, D, D));
}

static int backward_body(cpb_ctx *ctx, cpb_layer *L, ring_state *st)
{
    const cpb_problem *p = &L->p;
    cpb_ring_cfg cfg;
    CPB_TRY(ring_setup(ctx, L, 1, &cfg));
    int64_t s = L->s, D = p->D, hqd = (int64_t)p->H * p->d;
    cpb_view dy = cpb_mat(L->dy, 0, s, D, D);

    /* dO = dy Wo^T and dWo = o^T dy */
    cpb_buf *d_o = NULL, *dq = NULL, *dkv = NULL;
    CPB_TRY(cpb_alloc(ctx, &d_o, s * hqd, p->dtype, CPB_TAG_GRAD_ACT, "dO"));
    CPB_TRY(cpb_proj_out_bwd(ctx, CPB_STREAM_COMPUTE, dy, cpb_mat(st->o, 0, s, hqd, hqd), cpb_mat(L->wo, 0, hqd, D, D),
                             cpb_mat(d_o, 0, s, hqd, hqd), cpb_mat(L->dwo, 0, hqd, D, D)));

    /* the ring backward: fp32 dq here, fp32 dK,dV back from their trip around the ring */
    CPB_TRY(cpb_alloc(ctx, &dq, s * hqd, CPB_FP32, CPB_TAG_GRAD_ACT, "dq"));
    CPB_TRY(cpb_alloc(ctx, &dkv, cpb_ring_kv_elems(&cfg), CPB_FP32, CPB_TAG_GRAD_ACT, "dkv"));
    cpb_view no_delta = {0};
    CPB_TRY(cpb_ring_attn_bwd(ctx, &cfg, q_heads(L, st->q), st->kv, q_heads(L, st->o), q_heads(L, d_o),
                              cpb_lse_view(st->lse, s, 0, p->H, 0, s), no_delta, q_heads(L, dq), dkv));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &d_o));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &st->lse));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &st->o));

    return cpb_ring_grad_project(ctx, &cfg, L, &st->q, &st->kv, &dq, &dkv);
}

static int ring_forward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    return forward_body(ctx, L, state);
}

static int ring_backward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    return backward_body(ctx, L, state);
}

static const cpb_knob ring_knobs[] = {
    {.name = "ring_layout", .type = CPB_KNOB_CHOICE, .def = "zigzag", .choices = "zigzag|striped|contiguous",
     .arg = "zigzag|striped|contiguous",
     .help = "which tokens a rank holds: zigzag chunks r and 2C-1-r (balanced), striped t mod C (balanced, "
             "Brandon et al. 2023) or contiguous (rank C-1 does C times rank 0's attention)"},
    {NULL}};

const cpb_method cpb_method_ring = {
    .name = "ring",
    .summary = "Ring Attention (zigzag, striped or contiguous): K,V rotate around the ring, partials merged by lse",
    .check = ring_check,
    .token_layout = ring_token_layout,
    .weight_shard = NULL,
    .state_size = sizeof(ring_state),
    .forward = ring_forward,
    .backward = ring_backward,
    .knobs = ring_knobs,
};
