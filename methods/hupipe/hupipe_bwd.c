/* hupipe_bwd.c — hybrid UPipe backward, stage by stage as upipe does: dO of the stage's
 * heads only (dy times the stage's rows of Wo) and the stage's o exchanged beside it (so
 * cuDNN's backward, which derives delta from o, serves the ring's calls), or with
 * --upipe-bwd delta, delta = rowsum(dO * o) computed before the exchange so o never
 * travels (our kernels only), q recomputed (K,V at a kv change), the zigzag ring backward
 * of the stage with fp32 dK,dV accumulated over the stages sharing them, dq exchanged back
 * into dx and the stage's columns of dWq; dK,dV go back after their last stage. */
#include "common/grad_acc.h"
#include "common/knobs.h"
#include "hupipe/hupipe.h"

/* The stage buffers, reused by every stage; a buffer dead at that point carries each
 * send or receive:
 *   q: sent from qh, received in qx, permuted into qh.  dO: projected into doh, sent from
 *   there, received in qx, permuted into doh.  dq: permuted into qx, received in doh (dO
 *   is dead after the ring backward).  dK, dV: the same pair as dq.  K,V: qx is the spare
 *   of hupipe_project_kv. */
typedef struct bwd_bufs {
    cpb_buf *qh, *qx, *doh;  /* [2c][m][d] storage dtype */
    cpb_buf *dq32;           /* [2c][m][d] fp32 */
    cpb_buf *dls, *dlh;      /* delta fp32 [2c][m]: sent (then ring order), received (--upipe-bwd delta) */
    cpb_buf *oh;             /* the stage's o received [2c][m][d] (--upipe-bwd o); qx then holds it in
                                ring order until the ring backward is done */
    cpb_buf *kv;             /* [K | V] [2c][nk][d] ring order */
    cpb_buf *dkv, *dkv_stage;/* fp32 [dK | dV]: sum over the kv group's stages, one stage */
    cpb_buf *wg;             /* a stage's strided weight columns, gathered for the dx GEMM */
    cpb_buf *dx;             /* dx accumulator (cpb_dx_begin) */
} bwd_bufs;

/* dO and delta of the stage's heads, exchanged and permuted to ring order; dWo rows */
static int out_grad(cpb_ctx *ctx, cpb_layer *L, const hupipe_plan *pl, const cpb_a2a_map *qm, bwd_bufs *b,
                    const hupipe_state *s)
{
    const usp_shape *sh = &pl->sh;
    const int m = pl->st.m;
    CPB_TRY(cpb_a2a_out_grad(ctx, CPB_STREAM_COMPUTE, qm, &sh->seq, L->dy, L->wo, b->doh));
    if (!b->oh) CPB_TRY(cpb_a2a_delta(ctx, CPB_STREAM_COMPUTE, qm, &sh->seq, s->oseq, sh->H, b->doh, b->dls));
    CPB_TRY(cpb_grid_a2a(ctx, CPB_STREAM_COMPUTE, &sh->g, b->doh, 0, b->qx, 0, pl->Nm));
    CPB_TRY(cpb_grid_to_ring(ctx, CPB_STREAM_COMPUTE, &sh->g, (int64_t)m * sh->d, b->qx, 0, b->doh, 0));
    if (b->oh) {
        /* o: packed into qx (free again), exchanged into oh, permuted back into qx */
        CPB_TRY(cpb_a2a_pack(ctx, CPB_STREAM_COMPUTE, qm, sh->s, sh->d, s->oseq, sh->H, b->qx));
        CPB_TRY(cpb_grid_a2a(ctx, CPB_STREAM_COMPUTE, &sh->g, b->qx, 0, b->oh, 0, pl->Nm));
        CPB_TRY(cpb_grid_to_ring(ctx, CPB_STREAM_COMPUTE, &sh->g, (int64_t)m * sh->d, b->oh, 0, b->qx, 0));
    } else {
        CPB_TRY(cpb_grid_a2a(ctx, CPB_STREAM_COMPUTE, &sh->g, b->dls, 0, b->dlh, 0, 2 * sh->g.c * m));
        CPB_TRY(cpb_grid_to_ring(ctx, CPB_STREAM_COMPUTE, &sh->g, m, b->dlh, 0, b->dls, 0));
    }
    return cpb_a2a_grad_wo(ctx, CPB_STREAM_COMPUTE, qm, &sh->seq, s->oseq, sh->H, L->dy, L->dwo);
}

/* One projection's gradient: fp32 ring order (at g_off) -> a2a order in qx -> exchanged
 * head->seq into doh -> dW and dx, one GEMM each (qx, dead once sent, lays the chunks side
 * by side for the dx GEMM; the stage's strided weight columns are gathered), as upipe
 * does. */
static int give_back(cpb_ctx *ctx, const hupipe_plan *pl, const cpb_a2a_map *m, cpb_buf *grad32, int64_t g_off,
                     bwd_bufs *b, cpb_buf *w, int w_heads, int rope, cpb_buf *dw)
{
    const usp_shape *sh = &pl->sh;
    cpb_a2a_seq sq = sh->seq;
    if (!rope) sq.rope_base = 0;
    CPB_TRY(cpb_grid_to_a2a(ctx, CPB_STREAM_COMPUTE, &sh->g, (int64_t)m->n * sh->d, grad32, g_off, b->qx, 0));
    CPB_TRY(cpb_grid_a2a(ctx, CPB_STREAM_COMPUTE, &sh->g, b->qx, 0, b->doh, 0, cpb_a2a_elems(m, sh->s, sh->d)));
    return cpb_a2a_grad_project(ctx, CPB_STREAM_COMPUTE, m, &sq, b->doh, b->qx, b->wg, w, w_heads, dw, b->dx);
}

static int stage(cpb_ctx *ctx, cpb_layer *L, const hupipe_plan *pl, int t, bwd_bufs *b, const hupipe_state *s)
{
    const usp_shape *sh = &pl->sh;
    const int m = pl->st.m;
    cpb_a2a_map qm, kvm;
    cpb_stages_maps(&pl->st, t, &qm, &kvm);
    int first = cpb_stages_kv_changes(&pl->st, t), last = cpb_stages_kv_last(&pl->st, t);

    CPB_TRY(hupipe_project(ctx, pl, "q", &qm, L->wq, sh->H, 1, b->qh, b->qx, b->qh, 0));
    if (first) CPB_TRY(hupipe_project_kv(ctx, L, pl, &kvm, b->qx, b->kv));
    CPB_RANGE(ctx, out_grad(ctx, L, pl, &qm, b, s), "do");

    /* the stage's ring backward: dK,dV start the kv group's sum, or join it */
    cpb_ring_cfg cfg = hupipe_ring(pl, t);
    cpb_buf *dkv = first ? b->dkv : b->dkv_stage;
    /* with o (in qx, ring order) the ring derives delta itself and passes o to every call */
    cpb_view o = {0}, delta = {0};
    if (b->oh) o = usp_ring_view(sh, b->qx, 0, m);
    else delta = cpb_a2a_delta_view(b->dls, 2 * sh->g.c, m);
    CPB_RANGE(ctx,
              cpb_ring_attn_bwd(ctx, &cfg, usp_ring_view(sh, b->qh, 0, m), b->kv, o, usp_ring_view(sh, b->doh, 0, m),
                                hupipe_lse(pl, s->lse, t), delta,
                                usp_ring_view(sh, b->dq32, 0, m), dkv),
              "ring");
    if (!first) CPB_TRY(cpb_axpby(ctx, CPB_STREAM_COMPUTE, 1.0f, cpb_whole(b->dkv_stage), 1.0f, cpb_whole(b->dkv)));

    CPB_RANGE(ctx, give_back(ctx, pl, &qm, b->dq32, 0, b, L->wq, sh->H, 1, L->dwq), "dq");
    if (last) {
        CPB_RANGE(ctx, give_back(ctx, pl, &kvm, b->dkv, 0, b, L->wk, sh->G, 1, L->dwk), "dk");
        CPB_RANGE(ctx, give_back(ctx, pl, &kvm, b->dkv, pl->Nkm, b, L->wv, sh->G, 0, L->dwv), "dv");
    }
    return CPB_OK;
}

/* some stage joins an earlier stage's kv heads: a second fp32 dK,dV buffer is needed */
static int kv_shared(const cpb_stages *st)
{
    for (int t = 0; t < st->nstage; t++)
        if (!cpb_stages_kv_changes(st, t)) return 1;
    return 0;
}

static int backward_body(cpb_ctx *ctx, cpb_layer *L, const hupipe_plan *pl, hupipe_state *s)
{
    const usp_shape *sh = &pl->sh;
    cpb_dtype dt = L->p.dtype;
    int64_t nd = 2 * sh->g.c * pl->st.m;
    bwd_bufs b = {0};
    CPB_TRY(cpb_zero_dw(ctx, L));
    CPB_TRY(cpb_dx_begin(ctx, L, &b.dx));
    CPB_TRY(cpb_alloc(ctx, &b.qh, pl->Nm, dt, CPB_TAG_A2A, "q_head"));
    CPB_TRY(cpb_alloc(ctx, &b.qx, pl->Nm, dt, CPB_TAG_A2A, "stage_xchg"));
    CPB_TRY(cpb_alloc(ctx, &b.doh, pl->Nm, dt, CPB_TAG_GRAD_ACT, "do_head"));
    CPB_TRY(cpb_alloc(ctx, &b.dq32, pl->Nm, CPB_FP32, CPB_TAG_GRAD_ACT, "dq32"));
    if (cpb_upipe_bwd_delta(&L->p)) {
        CPB_TRY(cpb_alloc(ctx, &b.dls, nd, CPB_FP32, CPB_TAG_GRAD_ACT, "delta_send"));
        CPB_TRY(cpb_alloc(ctx, &b.dlh, nd, CPB_FP32, CPB_TAG_GRAD_ACT, "delta_head"));
    } else {
        CPB_TRY(cpb_alloc(ctx, &b.oh, pl->Nm, dt, CPB_TAG_A2A, "o_head"));
    }
    CPB_TRY(cpb_alloc(ctx, &b.kv, 2 * pl->Nkm, dt, CPB_TAG_A2A, "kv_head"));
    CPB_TRY(cpb_alloc(ctx, &b.dkv, 2 * pl->Nkm, CPB_FP32, CPB_TAG_GRAD_ACT, "dkv32"));
    if (kv_shared(&pl->st))
        CPB_TRY(cpb_alloc(ctx, &b.dkv_stage, 2 * pl->Nkm, CPB_FP32, CPB_TAG_GRAD_ACT, "dkv32_stage"));
    int64_t ng = cpb_stages_gather_elems(&pl->st, sh->D, sh->d);
    if (ng) CPB_TRY(cpb_alloc(ctx, &b.wg, ng, dt, CPB_TAG_GATHER, "w_gather"));
    for (int t = 0; t < pl->st.nstage; t++) CPB_RANGE(ctx, stage(ctx, L, pl, t, &b, s), "stage%d", t);
    cpb_buf **all[] = {&b.qh, &b.qx, &b.doh, &b.dq32, &b.dls, &b.dlh, &b.oh, &b.kv, &b.dkv, &b.dkv_stage,
                       &b.wg, &s->oseq, &s->lse};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, all[i]));
    return CPB_OK;
}

int hupipe_backward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    hupipe_plan pl;
    CPB_TRY(hupipe_plan_of(ctx, L, &pl));
    return backward_body(ctx, L, &pl, state);
}
