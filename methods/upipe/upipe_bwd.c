/* upipe_bwd.c — UPipe backward, stage by stage: dO of the stage's heads only (dy times
 * the stage's rows of Wo) and the stage's o exchanged seq->head as the reference does (it
 * passes `out` to its attention backward, and so can cuDNN's, which derives delta from o);
 * or, with --upipe-bwd delta, delta = rowsum(dO * o) computed before the exchange so o
 * never travels (a quarter of a bf16 o's bytes at d = 128 with fp32 delta: less memory,
 * but only our kernels take a backward without o), q recomputed (k, v at a kv change),
 * attention backward with dk, dv accumulated
 * over the stages sharing them, dq exchanged back into dx and the stage's columns of dWq;
 * dk, dv go back when the next stage moves to new kv heads.
 *
 * As the reference (untied_ulysses/fully_fused_attn.py) does, every projection and every
 * gradient GEMM is one GEMM per stage (batched over the stage's heads, whose columns of W
 * are strided), and dx accumulates in the storage dtype with one addmm per stage and
 * projection. */
#include "common/grad_acc.h"
#include "common/knobs.h"
#include "upipe/upipe.h"

/* The stage buffers, reused by every stage, with no separate send buffers: a buffer that
 * is dead at that point of the stage carries each packed send or receive.
 *   q send, dO send: dqh (the attention writes it only later);  dq receive: doh (dead
 *   after the attention).  k, v send: dkh at a kv change (flushed by then);  dk, dv
 *   receive: kh, vh at the flush (dead after the group's last attention).
 * The stage's heads are strided columns of the weights: the projections and the dW GEMMs
 * address them in place as one batched GEMM (cpb_a2a_*); the one dx GEMM of a stage needs
 * them side by side, so they are gathered into wg (D x U*d, tracked), and the gradient's
 * head tensor, dead once sent, lays the received chunks side by side for it. */
typedef struct bwd_bufs {
    cpb_buf *qh, *doh, *dqh;      /* [S][m][d] */
    cpb_buf *dls, *dlh;           /* delta, packed [C][s][m] and received [S][m] (fp32; --upipe-bwd delta) */
    cpb_buf *oh;                  /* the stage's o received [S][m][d] (--upipe-bwd o; its send is dqh) */
    cpb_buf *kh, *vh, *dkh, *dvh; /* [S][nk][d] */
    cpb_buf *wg;                  /* a stage's weight columns side by side (NULL: not needed) */
    cpb_buf *dx;                  /* dx accumulator (cpb_dx_begin) */
} bwd_bufs;

static int exchange(cpb_ctx *ctx, const cpb_a2a_map *m, int64_t s, int d, cpb_buf *send, cpb_buf *recv)
{
    CPB_RANGE(ctx, cpb_a2a_exchange(ctx, CPB_STREAM_COMPUTE, m, s, d, send, recv), "a2a");
    return CPB_OK;
}

static int recompute(cpb_ctx *ctx, const upipe_plan *pl, const char *what, const cpb_a2a_map *m, cpb_buf *w,
                     int w_heads, int rope, cpb_buf *send, cpb_buf *head)
{
    cpb_a2a_seq sq = pl->u.seq;
    if (!rope) sq.rope_base = 0;
    CPB_RANGE(ctx, cpb_a2a_project(ctx, CPB_STREAM_COMPUTE, m, &sq, w, w_heads, send), "%s", what);
    CPB_RANGE(ctx, cpb_a2a_exchange(ctx, CPB_STREAM_COMPUTE, m, pl->u.s, pl->u.d, send, head), "%s/a2a", what);
    return CPB_OK;
}

/* a stage gradient back to the sequence side, then dW and dx (`grad`, dead once sent, is
 * the dx GEMM's scratch) */
static int give_back(cpb_ctx *ctx, const upipe_plan *pl, const char *what, const cpb_a2a_map *m, cpb_buf *grad,
                     cpb_buf *recv, cpb_buf *wg, cpb_buf *w, int w_heads, int rope, cpb_buf *dw, cpb_buf *dx)
{
    cpb_a2a_seq sq = pl->u.seq;
    if (!rope) sq.rope_base = 0;
    CPB_RANGE(ctx, cpb_a2a_exchange(ctx, CPB_STREAM_COMPUTE, m, pl->u.s, pl->u.d, grad, recv), "%s/a2a", what);
    CPB_RANGE(ctx, cpb_a2a_grad_project(ctx, CPB_STREAM_COMPUTE, m, &sq, recv, grad, wg, w, w_heads, dw, dx), "%s",
              what);
    return CPB_OK;
}

/* dO for the stage's heads and o (or delta = rowsum(dO * o)), sent seq->head; dWo rows */
static int out_grad(cpb_ctx *ctx, cpb_layer *L, const upipe_plan *pl, const cpb_a2a_map *qm, bwd_bufs *b,
                    const upipe_state *s)
{
    const cpb_uly_shape *u = &pl->u;
    CPB_TRY(cpb_a2a_out_grad(ctx, CPB_STREAM_COMPUTE, qm, &u->seq, L->dy, L->wo, b->dqh));
    if (b->oh) {
        CPB_TRY(exchange(ctx, qm, u->s, u->d, b->dqh, b->doh));
        /* dqh, sent, carries the stage's o (the attention writes dq there only later) */
        CPB_TRY(cpb_a2a_pack(ctx, CPB_STREAM_COMPUTE, qm, u->s, u->d, s->oseq, u->H, b->dqh));
        CPB_TRY(exchange(ctx, qm, u->s, u->d, b->dqh, b->oh));
    } else {
        CPB_TRY(cpb_a2a_delta(ctx, CPB_STREAM_COMPUTE, qm, &u->seq, s->oseq, u->H, b->dqh, b->dls));
        CPB_TRY(exchange(ctx, qm, u->s, u->d, b->dqh, b->doh));
        CPB_TRY(exchange(ctx, qm, u->s, 1, b->dls, b->dlh));
    }
    return cpb_a2a_grad_wo(ctx, CPB_STREAM_COMPUTE, qm, &u->seq, s->oseq, u->H, L->dy, L->dwo);
}

static int attend_back(cpb_ctx *ctx, const upipe_plan *pl, int t, int first_of_kv, bwd_bufs *b,
                       const upipe_state *s)
{
    const cpb_uly_shape *u = &pl->u;
    cpb_attn_args a = {0};
    a.q = cpb_a2a_head_view(b->qh, u->S, pl->m, u->d);
    a.k = cpb_a2a_head_view(b->kh, u->S, pl->nk, u->d);
    a.v = cpb_a2a_head_view(b->vh, u->S, pl->nk, u->d);
    a.lse = cpb_lse_view(s->lse, u->S, (int64_t)t * pl->m, pl->m, 0, u->S);
    a.causal = 1;
    a.d_o = cpb_a2a_head_view(b->doh, u->S, pl->m, u->d);
    if (b->oh) a.o = cpb_a2a_head_view(b->oh, u->S, pl->m, u->d);
    else a.delta = cpb_a2a_delta_view(b->dlh, u->S, pl->m);
    a.dq = cpb_a2a_head_view(b->dqh, u->S, pl->m, u->d);
    a.dk = cpb_a2a_head_view(b->dkh, u->S, pl->nk, u->d);
    a.dv = cpb_a2a_head_view(b->dvh, u->S, pl->nk, u->d);
    /* dk, dv add up over the stages of one kv group; dq is the stage's own */
    a.accumulate = !first_of_kv;
    if (a.accumulate) CPB_TRY(cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_whole(b->dqh), 0.0f));
    return cpb_attn_bwd(ctx, CPB_STREAM_COMPUTE, &a);
}

static int stage(cpb_ctx *ctx, cpb_layer *L, const upipe_plan *pl, int t, bwd_bufs *b, const upipe_state *s)
{
    const cpb_uly_shape *u = &pl->u;
    cpb_a2a_map qm, kvm;
    upipe_stage_maps(pl, t, &qm, &kvm);
    int first_of_kv = upipe_kv_changes(pl, t);
    int last_of_kv = t == pl->nstage - 1 || upipe_kv_changes(pl, t + 1);

    CPB_TRY(recompute(ctx, pl, "q", &qm, L->wq, u->H, 1, b->dqh, b->qh));
    if (first_of_kv) {
        CPB_TRY(recompute(ctx, pl, "k", &kvm, L->wk, u->G, 1, b->dkh, b->kh));
        CPB_TRY(recompute(ctx, pl, "v", &kvm, L->wv, u->G, 0, b->dkh, b->vh));
    }

    CPB_RANGE(ctx, out_grad(ctx, L, pl, &qm, b, s), "do");
    CPB_RANGE(ctx, attend_back(ctx, pl, t, first_of_kv, b, s), "attn");

    CPB_TRY(give_back(ctx, pl, "dq", &qm, b->dqh, b->doh, b->wg, L->wq, u->H, 1, L->dwq, b->dx));
    if (last_of_kv) {
        CPB_TRY(give_back(ctx, pl, "dk", &kvm, b->dkh, b->kh, b->wg, L->wk, u->G, 1, L->dwk, b->dx));
        CPB_TRY(give_back(ctx, pl, "dv", &kvm, b->dvh, b->vh, b->wg, L->wv, u->G, 0, L->dwv, b->dx));
    }
    return CPB_OK;
}

int upipe_backward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    upipe_state *s = state;
    upipe_plan pl;
    CPB_TRY(upipe_plan_of(L, &pl));
    const cpb_uly_shape *u = &pl.u;
    cpb_dtype dt = L->p.dtype;
    CPB_TRY(cpb_zero_dw(ctx, L));
    bwd_bufs b = {0};
    CPB_TRY(cpb_dx_begin(ctx, L, &b.dx));
    int64_t nq = u->S * pl.m * u->d, nkv = u->S * pl.nk * u->d;
    CPB_TRY(cpb_alloc(ctx, &b.qh, nq, dt, CPB_TAG_A2A, "q_head"));
    CPB_TRY(cpb_alloc(ctx, &b.doh, nq, dt, CPB_TAG_GRAD_ACT, "do_head"));
    CPB_TRY(cpb_alloc(ctx, &b.dqh, nq, dt, CPB_TAG_GRAD_ACT, "dq_head"));
    if (cpb_upipe_bwd_delta(&L->p)) {
        CPB_TRY(cpb_alloc(ctx, &b.dls, u->S * pl.m, CPB_FP32, CPB_TAG_GRAD_ACT, "delta_send"));
        CPB_TRY(cpb_alloc(ctx, &b.dlh, u->S * pl.m, CPB_FP32, CPB_TAG_GRAD_ACT, "delta_head"));
    } else {
        CPB_TRY(cpb_alloc(ctx, &b.oh, nq, dt, CPB_TAG_A2A, "o_head"));
    }
    CPB_TRY(cpb_alloc(ctx, &b.kh, nkv, dt, CPB_TAG_A2A, "k_head"));
    CPB_TRY(cpb_alloc(ctx, &b.vh, nkv, dt, CPB_TAG_A2A, "v_head"));
    CPB_TRY(cpb_alloc(ctx, &b.dkh, nkv, dt, CPB_TAG_GRAD_ACT, "dk_head"));
    CPB_TRY(cpb_alloc(ctx, &b.dvh, nkv, dt, CPB_TAG_GRAD_ACT, "dv_head"));
    int64_t ng = upipe_gather_elems(&pl);
    if (ng) CPB_TRY(cpb_alloc(ctx, &b.wg, ng, dt, CPB_TAG_GATHER, "w_gather"));
    for (int t = 0; t < pl.nstage; t++) CPB_RANGE(ctx, stage(ctx, L, &pl, t, &b, s), "stage%d", t);
    cpb_buf **all[] = {&b.qh, &b.doh, &b.dqh, &b.dls, &b.dlh, &b.oh, &b.kh, &b.vh, &b.dkh, &b.dvh,
                       &b.wg, &s->oseq, &s->lse};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, all[i]));
    return CPB_OK;
}
