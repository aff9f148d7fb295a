/* hupipe_fwd.c — hybrid UPipe forward: per stage, the stage's q (and K,V at a kv change)
 * exchanged inside the Ulysses group, a zigzag ring attention over the ring group, o back
 * into the stage's columns of the sequence-layout o; y = o Wo once at the end. */
#include "hupipe/hupipe.h"

/* The per-stage buffers, reused by every stage.  No separate send or receive buffers: q
 * is sent from qh, received in oh and permuted back into qh; after the attention wrote o
 * into oh, qh (dead) carries o's send and oh (permuted out) its receive.  K,V: see
 * hupipe_project_kv, with oh as the spare stage tensor (nk <= m). */
typedef struct fwd_bufs {
    cpb_buf *qh, *oh; /* [2c][m][d] */
    cpb_buf *kv;      /* packed [K | V], each [2c][nk][d] */
} fwd_bufs;

/* o back to sequence layout, into this stage's heads of the saved o */
static int stage_out(cpb_ctx *ctx, const hupipe_plan *pl, const cpb_a2a_map *qm, fwd_bufs *b, hupipe_state *s)
{
    const usp_shape *sh = &pl->sh;
    CPB_TRY(cpb_grid_to_a2a(ctx, CPB_STREAM_COMPUTE, &sh->g, (int64_t)pl->st.m * sh->d, b->oh, 0, b->qh, 0));
    CPB_TRY(cpb_grid_a2a(ctx, CPB_STREAM_COMPUTE, &sh->g, b->qh, 0, b->oh, 0, pl->Nm));
    return cpb_a2a_unpack(ctx, CPB_STREAM_COMPUTE, qm, sh->s, sh->d, b->oh, s->oseq, sh->H);
}

static int stage(cpb_ctx *ctx, cpb_layer *L, const hupipe_plan *pl, int t, fwd_bufs *b, hupipe_state *s)
{
    const usp_shape *sh = &pl->sh;
    const int m = pl->st.m;
    cpb_a2a_map qm, kvm;
    cpb_stages_maps(&pl->st, t, &qm, &kvm);
    CPB_TRY(hupipe_project(ctx, pl, "q", &qm, L->wq, sh->H, 1, b->qh, b->oh, b->qh, 0));
    if (cpb_stages_kv_changes(&pl->st, t)) CPB_TRY(hupipe_project_kv(ctx, L, pl, &kvm, b->oh, b->kv));

    cpb_ring_cfg cfg = hupipe_ring(pl, t);
    CPB_RANGE(ctx,
              cpb_ring_attn_fwd(ctx, &cfg, usp_ring_view(sh, b->qh, 0, m), b->kv, usp_ring_view(sh, b->oh, 0, m),
                                hupipe_lse(pl, s->lse, t)),
              "ring");
    CPB_RANGE(ctx, stage_out(ctx, pl, &qm, b, s), "o");
    return CPB_OK;
}

static int forward_body(cpb_ctx *ctx, cpb_layer *L, const hupipe_plan *pl, hupipe_state *s)
{
    const usp_shape *sh = &pl->sh;
    cpb_dtype dt = L->p.dtype;
    CPB_TRY(cpb_alloc(ctx, &s->oseq, sh->s * sh->H * sh->d, dt, CPB_TAG_SAVED, "o_seq"));
    CPB_TRY(cpb_alloc(ctx, &s->lse, 2 * sh->g.c * sh->hq, CPB_FP32, CPB_TAG_SAVED, "lse"));
    fwd_bufs b = {0};
    CPB_TRY(cpb_alloc(ctx, &b.qh, pl->Nm, dt, CPB_TAG_A2A, "q_head"));
    CPB_TRY(cpb_alloc(ctx, &b.oh, pl->Nm, dt, CPB_TAG_ATTN, "o_head"));
    CPB_TRY(cpb_alloc(ctx, &b.kv, 2 * pl->Nkm, dt, CPB_TAG_A2A, "kv_head"));
    for (int t = 0; t < pl->st.nstage; t++) CPB_RANGE(ctx, stage(ctx, L, pl, t, &b, s), "stage%d", t);
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &b.kv));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &b.oh));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &b.qh));
    int64_t hd = (int64_t)sh->H * sh->d;
    CPB_RANGE(ctx,
              cpb_gemm(ctx, CPB_STREAM_COMPUTE, 0, 0, 1.0f, cpb_mat(s->oseq, 0, sh->s, hd, hd),
                       cpb_mat(L->wo, 0, hd, sh->D, sh->D), 0.0f, cpb_mat(L->y, 0, sh->s, sh->D, sh->D)),
              "out");
    return CPB_OK;
}

int hupipe_forward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    hupipe_plan pl;
    CPB_TRY(hupipe_plan_of(ctx, L, &pl));
    return forward_body(ctx, L, &pl, state);
}
