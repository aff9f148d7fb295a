/* ulysses_fwd.c — the Ulysses forward (shared with offload through hooks). */
#include <stdio.h>

#include "ulysses/ulysses.h"


static int produced(cpb_ctx *ctx, const cpb_uly_hooks *h, int which, cpb_buf *b)
{
    return h && h->produced ? h->produced(ctx, h->user, which, b) : CPB_OK;
}

static int done(cpb_ctx *ctx, const cpb_uly_hooks *h, int which, cpb_buf **b)
{
    return h && h->done ? h->done(ctx, h->user, which, b) : CPB_OK;
}

/* project one of q, k, v into a packed send buffer and exchange it seq->head into a new
 * [S][n][d] head tensor; the send buffer is freed as soon as the exchange is issued */
static int project_exchange(cpb_ctx *ctx, const cpb_uly_shape *u, const char *what, const cpb_a2a_map *m,
                            cpb_buf *w, int w_heads, int rope, cpb_dtype dt, cpb_buf **head)
{
    cpb_a2a_seq sq = u->seq;
    if (!rope) sq.rope_base = 0;
    int64_t n = cpb_a2a_elems(m, u->s, u->d);
    cpb_buf *send = NULL;
    char name[32];
    snprintf(name, sizeof name, "%s_send", what);
    CPB_TRY(cpb_alloc(ctx, &send, n, dt, CPB_TAG_QKV, name));
    CPB_RANGE(ctx, cpb_a2a_project(ctx, CPB_STREAM_COMPUTE, m, &sq, w, w_heads, send), "proj");
    snprintf(name, sizeof name, "%s_head", what);
    CPB_TRY(cpb_alloc(ctx, head, n, dt, CPB_TAG_SAVED, name));
    CPB_RANGE(ctx, cpb_a2a_exchange(ctx, CPB_STREAM_COMPUTE, m, u->s, u->d, send, *head), "a2a");
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &send);
}

/* causal attention of this rank's hc heads over all S tokens (positions 0..S-1) */
static int attend(cpb_ctx *ctx, const cpb_uly_shape *u, cpb_dtype dt, cpb_buf **t)
{
    CPB_TRY(cpb_alloc(ctx, &t[ULY_O], u->S * u->hc * u->d, dt, CPB_TAG_SAVED, "o_head"));
    CPB_TRY(cpb_alloc(ctx, &t[ULY_LSE], u->S * u->hc, CPB_FP32, CPB_TAG_SAVED, "lse"));
    cpb_attn_args a = {0};
    a.q = cpb_a2a_head_view(t[ULY_Q], u->S, u->hc, u->d);
    a.k = cpb_a2a_head_view(t[ULY_K], u->S, u->hk, u->d);
    a.v = cpb_a2a_head_view(t[ULY_V], u->S, u->hk, u->d);
    a.o = cpb_a2a_head_view(t[ULY_O], u->S, u->hc, u->d);
    a.lse = cpb_lse_view(t[ULY_LSE], u->S, 0, u->hc, 0, u->S);
    a.causal = 1;
    return cpb_attn_fwd(ctx, CPB_STREAM_COMPUTE, &a);
}

/* o back to sequence layout, then y = o Wo */
static int output(cpb_ctx *ctx, cpb_layer *L, const cpb_uly_shape *u, const cpb_uly_hooks *hooks, cpb_buf **t)
{
    const cpb_dtype dt = L->p.dtype;
    const int64_t n = cpb_a2a_elems(&u->qmap, u->s, u->d), hd = (int64_t)u->H * u->d;
    cpb_buf *recv = NULL, *oseq = NULL;
    CPB_TRY(cpb_alloc(ctx, &recv, n, dt, CPB_TAG_A2A, "o_recv"));
    CPB_RANGE(ctx, cpb_a2a_exchange(ctx, CPB_STREAM_COMPUTE, &u->qmap, u->s, u->d, t[ULY_O], recv), "a2a");
    CPB_TRY(done(ctx, hooks, ULY_O, &t[ULY_O]));
    CPB_TRY(cpb_alloc(ctx, &oseq, u->s * hd, dt, CPB_TAG_ATTN, "o_seq"));
    CPB_TRY(cpb_a2a_unpack(ctx, CPB_STREAM_COMPUTE, &u->qmap, u->s, u->d, recv, oseq, u->H));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &recv));
    CPB_TRY(cpb_gemm(ctx, CPB_STREAM_COMPUTE, 0, 0, 1.0f, cpb_mat(oseq, 0, u->s, hd, hd),
                     cpb_mat(L->wo, 0, hd, u->D, u->D), 0.0f, cpb_mat(L->y, 0, u->s, u->D, u->D)));
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &oseq);
}

int cpb_uly_forward(cpb_ctx *ctx, cpb_layer *L, const cpb_uly_shape *u, const cpb_uly_hooks *hooks,
                    cpb_uly_saved *sv)
{
    cpb_dtype dt = L->p.dtype;
    cpb_buf **t = sv->t;
    CPB_RANGE(ctx, project_exchange(ctx, u, "q", &u->qmap, L->wq, u->H, 1, dt, &t[ULY_Q]), "q");
    CPB_TRY(produced(ctx, hooks, ULY_Q, t[ULY_Q]));
    CPB_RANGE(ctx, project_exchange(ctx, u, "k", &u->kvmap, L->wk, u->G, 1, dt, &t[ULY_K]), "k");
    CPB_TRY(produced(ctx, hooks, ULY_K, t[ULY_K]));
    CPB_RANGE(ctx, project_exchange(ctx, u, "v", &u->kvmap, L->wv, u->G, 0, dt, &t[ULY_V]), "v");
    CPB_TRY(produced(ctx, hooks, ULY_V, t[ULY_V]));
    CPB_RANGE(ctx, attend(ctx, u, dt, t), "attn");
    CPB_TRY(produced(ctx, hooks, ULY_O, t[ULY_O]));
    CPB_TRY(produced(ctx, hooks, ULY_LSE, t[ULY_LSE]));
    for (int i = ULY_Q; i <= ULY_V; i++) CPB_TRY(done(ctx, hooks, i, &t[i]));
    CPB_TRY(done(ctx, hooks, ULY_LSE, &t[ULY_LSE]));
    CPB_RANGE(ctx, output(ctx, L, u, hooks, t), "out");
    return CPB_OK;
}
