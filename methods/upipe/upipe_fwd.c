/* upipe_fwd.c — UPipe forward: per stage, project the stage's q heads (and k, v at a kv
 * change) into the shared send buffers, exchange seq->head, attend, exchange o back into
 * the stage's columns of o; y = o Wo once at the end. */
#include "upipe/upipe.h"

/* The per-stage buffers, reused by every stage.  No separate send buffers: before the
 * attention writes oh, oh carries the packed q, k and v sends (nk <= m, so k and v fit);
 * after it, qh (dead by then) receives o on its way back. */
typedef struct fwd_bufs {
    cpb_buf *qh, *oh; /* [S][m][d] */
    cpb_buf *kh, *vh; /* [S][nk][d] */
} fwd_bufs;

static int project_exchange(cpb_ctx *ctx, const upipe_plan *pl, const char *what, const cpb_a2a_map *m,
                            cpb_buf *w, int w_heads, int rope, cpb_buf *send, cpb_buf *head)
{
    cpb_a2a_seq sq = pl->u.seq;
    if (!rope) sq.rope_base = 0;
    CPB_RANGE(ctx, cpb_a2a_project(ctx, CPB_STREAM_COMPUTE, m, &sq, w, w_heads, send), "%s", what);
    CPB_RANGE(ctx, cpb_a2a_exchange(ctx, CPB_STREAM_COMPUTE, m, pl->u.s, pl->u.d, send, head), "%s/a2a", what);
    return CPB_OK;
}

static int attend(cpb_ctx *ctx, const upipe_plan *pl, int t, fwd_bufs *b, upipe_state *s)
{
    const cpb_uly_shape *u = &pl->u;
    cpb_attn_args a = {0};
    a.q = cpb_a2a_head_view(b->qh, u->S, pl->m, u->d);
    a.k = cpb_a2a_head_view(b->kh, u->S, pl->nk, u->d);
    a.v = cpb_a2a_head_view(b->vh, u->S, pl->nk, u->d);
    a.o = cpb_a2a_head_view(b->oh, u->S, pl->m, u->d);
    a.lse = cpb_lse_view(s->lse, u->S, (int64_t)t * pl->m, pl->m, 0, u->S);
    a.causal = 1;
    return cpb_attn_fwd(ctx, CPB_STREAM_COMPUTE, &a);
}

/* o back to sequence layout, into this stage's heads of the saved o */
static int stage_out(cpb_ctx *ctx, const upipe_plan *pl, const cpb_a2a_map *qm, fwd_bufs *b, upipe_state *s)
{
    const cpb_uly_shape *u = &pl->u;
    CPB_RANGE(ctx, cpb_a2a_exchange(ctx, CPB_STREAM_COMPUTE, qm, u->s, u->d, b->oh, b->qh), "a2a");
    return cpb_a2a_unpack(ctx, CPB_STREAM_COMPUTE, qm, u->s, u->d, b->qh, s->oseq, u->H);
}

static int stage(cpb_ctx *ctx, cpb_layer *L, const upipe_plan *pl, int t, fwd_bufs *b, upipe_state *s)
{
    const cpb_uly_shape *u = &pl->u;
    cpb_a2a_map qm, kvm;
    upipe_stage_maps(pl, t, &qm, &kvm);
    CPB_TRY(project_exchange(ctx, pl, "q", &qm, L->wq, u->H, 1, b->oh, b->qh));
    if (upipe_kv_changes(pl, t)) {
        CPB_TRY(project_exchange(ctx, pl, "k", &kvm, L->wk, u->G, 1, b->oh, b->kh));
        CPB_TRY(project_exchange(ctx, pl, "v", &kvm, L->wv, u->G, 0, b->oh, b->vh));
    }
    CPB_RANGE(ctx, attend(ctx, pl, t, b, s), "attn");
    CPB_RANGE(ctx, stage_out(ctx, pl, &qm, b, s), "o");
    return CPB_OK;
}

int upipe_forward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    upipe_state *s = state;
    upipe_plan pl;
    CPB_TRY(upipe_plan_of(L, &pl));
    const cpb_uly_shape *u = &pl.u;
    cpb_dtype dt = L->p.dtype;
    CPB_TRY(cpb_alloc(ctx, &s->oseq, u->s * u->H * u->d, dt, CPB_TAG_SAVED, "o_seq"));
    CPB_TRY(cpb_alloc(ctx, &s->lse, u->S * u->hc, CPB_FP32, CPB_TAG_SAVED, "lse"));
    int64_t nq = u->S * pl.m * u->d, nkv = u->S * pl.nk * u->d;
    fwd_bufs b = {0};
    CPB_TRY(cpb_alloc(ctx, &b.qh, nq, dt, CPB_TAG_A2A, "q_head"));
    CPB_TRY(cpb_alloc(ctx, &b.kh, nkv, dt, CPB_TAG_A2A, "k_head"));
    CPB_TRY(cpb_alloc(ctx, &b.vh, nkv, dt, CPB_TAG_A2A, "v_head"));
    CPB_TRY(cpb_alloc(ctx, &b.oh, nq, dt, CPB_TAG_ATTN, "o_head"));
    for (int t = 0; t < pl.nstage; t++) CPB_RANGE(ctx, stage(ctx, L, &pl, t, &b, s), "stage%d", t);
    cpb_buf **all[] = {&b.qh, &b.kh, &b.vh, &b.oh};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, all[i]));
    int64_t hd = (int64_t)u->H * u->d;
    CPB_RANGE(ctx,
              cpb_gemm(ctx, CPB_STREAM_COMPUTE, 0, 0, 1.0f, cpb_mat(s->oseq, 0, u->s, hd, hd),
                       cpb_mat(L->wo, 0, hd, u->D, u->D), 0.0f, cpb_mat(L->y, 0, u->s, u->D, u->D)),
              "out");
    return CPB_OK;
}
