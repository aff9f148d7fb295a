/* allgather.c — all-gather context parallelism (the Llama 3 paper's section 3.3.2;
 * Megatron-LM --cp-comm-type all_gather; TransformerEngine's KV all-gather path; TorchTitan's
 * context_parallel_rotate_method = "allgather"; docs/methods.md).
 *
 * Weights are replicated; rank r holds zigzag chunks r and 2C-1-r.  Forward: q, K, V for
 * the local tokens (RoPE at their global positions), K,V of every rank all-gathered (kv
 * heads only, --kv-head-stride at a time, double buffered), the rank's two chunks attend
 * causally to them (ag_attn.h), y = o Wo.  Saves q, the rank's own K,V (packed), o and
 * lse: the gathered K,V are gathered again in backward, as the references do.
 * Backward: dO = dy Wo^T, the gather again, attention backward with the gathered dK,dV
 * accumulated per source rank (in --ag-grad-dtype) and reduce-scattered to their owners,
 * RoPE backward, dx and the dW partials of this rank's tokens.
 */
#include <stdio.h>
#include <string.h>

#include "allgather/ag_attn.h"
#include "common/proj_bwd.h"
#include "cpb_method.h"

typedef struct ag_state {
    cpb_buf *q, *kv; /* after RoPE: q [s][H][d], packed K,V [2][s][G][d] */
    cpb_buf *o;      /* attention output [s][H*d], storage dtype */
    cpb_buf *lse;    /* fp32 [H][s] */
} ag_state;

static int check_kv_head_stride(const cpb_problem *p, char *why, size_t why_len)
{
    int64_t hs = cpb_knob_int(p, "kv_head_stride");
    if (hs && (hs > p->G || p->G % hs)) {
        snprintf(why, why_len, "--kv-head-stride %lld must divide the %d kv heads", (long long)hs, p->G);
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

static int kv_head_divisors(const cpb_problem *p, int64_t *out, int max)
{
    int k = 0;
    for (int64_t v = 1; v <= p->G && k < max; v++)
        if (p->G % v == 0) out[k++] = v;
    return k;
}

static int ag_te(const cpb_problem *p)
{
    return strcmp(cpb_knob_str(p, "ag_schedule"), "te") == 0;
}

static int check_ag_schedule(const cpb_problem *p, char *why, size_t why_len)
{
    if (ag_te(p) && cpb_ring_cudnn_may_serve(p)) {
        /* docs/methods.md: the calls' key lengths and masks differ by rank */
        snprintf(why, why_len, "--ag-schedule te: its calls' key lengths differ by rank and their bottom-right masks "
                 "are not on the cuDNN route, so cuDNN would serve some ranks' calls only and the ranks would "
                 "allocate differently (docs/methods.md); run it with --attn own");
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

static const cpb_knob ag_knobs[] = {
    {.name = "kv_head_stride", .type = CPB_KNOB_INT, .def = "0", .check = check_kv_head_stride, .arg = "N",
     .help = "kv heads gathered at a time, double buffered (ring-flash-attention's heads_k_stride; default all)",
     .candidates = kv_head_divisors},
    {.name = "ag_grad_dtype", .type = CPB_KNOB_CHOICE, .def = "fp32", .choices = "fp32|storage",
     .arg = "fp32|storage",
     .help = "dtype of the gathered dK,dV and their reduce-scatter: fp32, or the storage dtype as "
             "ring-flash-attention's llama3 file (half the bytes)"},
    {.name = "ag_schedule", .type = CPB_KNOB_CHOICE, .def = "blocks", .choices = "blocks|te", .arg = "blocks|te",
     .check = check_ag_schedule,
     .help = "attention calls: ring's blocks against the gathered K,V (merged by lse), or TransformerEngine's one call "
             "per local chunk against its whole prefix, bottom-right causal (our kernels: --attn own)"},
    {NULL}};

static int ag_check(const cpb_problem *p, char *why, size_t why_len)
{
    if (p->C <= 0 || p->S % (2 * (int64_t)p->C)) {
        snprintf(why, why_len, "allgather (zigzag) needs the sequence (S = %lld) to be a multiple of 2C = %d",
                 (long long)p->S, 2 * p->C);
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

static int ag_setup(cpb_ctx *ctx, const cpb_layer *L, ag_cfg *cfg)
{
    const cpb_problem *p = &L->p;
    memset(cfg, 0, sizeof *cfg);
    cfg->r.g = NULL;
    CPB_TRY(cpb_stream(ctx, "comm", &cfg->r.comm_stream));
    cfg->r.layout = CPB_BLK_ZIGZAG;
    cfg->r.c = p->S / (2 * (int64_t)p->C);
    cfg->r.hq = p->H;
    cfg->r.hk = p->G;
    cfg->r.d = p->d;
    cfg->r.dtype = p->dtype;
    int64_t hs = cpb_knob_int(p, "kv_head_stride");
    cfg->hs = hs ? (int)hs : p->G;
    cfg->te = ag_te(p);
    cfg->grad_dt = strcmp(cpb_knob_str(p, "ag_grad_dtype"), "storage") == 0 ? p->dtype : CPB_FP32;
    if (L->s != cpb_ring_rows(&cfg->r))
        return cpb_fail(ctx, CPB_ERR_INVALID, "allgather: %lld local tokens, expected 2 chunks of %lld",
                        (long long)L->s, (long long)cfg->r.c);
    return CPB_OK;
}

static cpb_view q_heads(const cpb_layer *L, cpb_buf *b)
{
    int64_t hd = (int64_t)L->p.H * L->p.d;
    return cpb_heads(b, 0, L->s, L->p.H, L->p.d, hd, L->p.d);
}

static int ag_forward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    ag_state *st = state;
    const cpb_problem *p = &L->p;
    ag_cfg cfg;
    CPB_TRY(ag_setup(ctx, L, &cfg));
    int64_t s = L->s, D = p->D, hqd = (int64_t)p->H * p->d, hkd = (int64_t)p->G * p->d;
    CPB_TRY(cpb_alloc(ctx, &st->q, s * hqd, p->dtype, CPB_TAG_QKV, "q"));
    CPB_TRY(cpb_alloc(ctx, &st->kv, cpb_ring_kv_elems(&cfg.r), p->dtype, CPB_TAG_QKV, "kv"));
    CPB_TRY(cpb_ring_project(ctx, &cfg.r, cpb_mat(L->x, 0, s, D, D), cpb_mat(L->wq, 0, D, hqd, hqd),
                             cpb_mat(L->wk, 0, D, hkd, hkd), cpb_mat(L->wv, 0, D, hkd, hkd), &L->tokens,
                             p->rope_base, q_heads(L, st->q), st->kv));
    CPB_TRY(cpb_alloc(ctx, &st->o, s * hqd, p->dtype, CPB_TAG_ATTN, "o"));
    CPB_TRY(cpb_alloc(ctx, &st->lse, s * p->H, CPB_FP32, CPB_TAG_ATTN, "lse"));
    CPB_RANGE(ctx,
              ag_attn_fwd(ctx, &cfg, q_heads(L, st->q), st->kv, q_heads(L, st->o),
                          cpb_lse_view(st->lse, s, 0, p->H, 0, s)),
              "attn");
    return cpb_gemm(ctx, CPB_STREAM_COMPUTE, 0, 0, 1.0f, cpb_mat(st->o, 0, s, hqd, hqd), cpb_mat(L->wo, 0, hqd, D, D),
                    0.0f, cpb_mat(L->y, 0, s, D, D));
}

static int ag_backward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    ag_state *st = state;
    const cpb_problem *p = &L->p;
    ag_cfg cfg;
    CPB_TRY(ag_setup(ctx, L, &cfg));
    int64_t s = L->s, D = p->D, hqd = (int64_t)p->H * p->d;
    cpb_view dy = cpb_mat(L->dy, 0, s, D, D);

    /* dO = dy Wo^T and dWo = o^T dy */
    cpb_buf *d_o = NULL, *dq = NULL, *dkv = NULL;
    CPB_TRY(cpb_alloc(ctx, &d_o, s * hqd, p->dtype, CPB_TAG_GRAD_ACT, "dO"));
    CPB_TRY(cpb_proj_out_bwd(ctx, CPB_STREAM_COMPUTE, dy, cpb_mat(st->o, 0, s, hqd, hqd), cpb_mat(L->wo, 0, hqd, D, D),
                             cpb_mat(d_o, 0, s, hqd, hqd), cpb_mat(L->dwo, 0, hqd, D, D)));

    /* attention backward: fp32 dq here, fp32 dK,dV reduce-scattered back from every rank */
    CPB_TRY(cpb_alloc(ctx, &dq, s * hqd, CPB_FP32, CPB_TAG_GRAD_ACT, "dq"));
    CPB_TRY(cpb_alloc(ctx, &dkv, cpb_ring_kv_elems(&cfg.r), CPB_FP32, CPB_TAG_GRAD_ACT, "dkv"));
    CPB_RANGE(ctx,
              ag_attn_bwd(ctx, &cfg, q_heads(L, st->q), st->kv, q_heads(L, st->o), q_heads(L, d_o),
                          cpb_lse_view(st->lse, s, 0, p->H, 0, s), q_heads(L, dq), dkv),
              "attn");
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &d_o));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &st->lse));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &st->o));

    return cpb_ring_grad_project(ctx, &cfg.r, L, &st->q, &st->kv, &dq, &dkv);
}

const cpb_method cpb_method_allgather = {
    .name = "allgather",
    .summary = "All-gather CP (Llama 3, Megatron all_gather): K,V gathered, local causal attention, dK,dV reduce-scattered",
    .check = ag_check,
    .token_layout = cpb_layout_zigzag,
    .weight_shard = NULL,
    .state_size = sizeof(ag_state),
    .forward = ag_forward,
    .backward = ag_backward,
    .knobs = ag_knobs,
};
