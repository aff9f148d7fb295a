/* ulysses_fwd.c — the Ulysses forward (shared with offload through hooks). */
#include <stdio.h>

#include "ulysses/ulysses.h"

#define ST CPB_STREAM_COMPUTE

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
    CPB_TRY(cpb_range_push(ctx, "%s", what));
    CPB_TRY(cpb_alloc(ctx, &send, n, dt, CPB_TAG_QKV, name));
    CPB_TRY(cpb_range_push(ctx, "proj"));
    CPB_TRY(cpb_a2a_range_end(ctx, cpb_a2a_project(ctx, ST, m, &sq, w, w_heads, send)));
    snprintf(name, sizeof name, "%s_head", what);
    CPB_TRY(cpb_alloc(ctx, head, n, dt, CPB_TAG_SAVED, name));
    CPB_TRY(cpb_range_push(ctx, "a2a"));
    CPB_TRY(cpb_a2a_range_end(ctx, cpb_a2a_exchange(ctx, ST, m, u->s, u->d, send, *head)));
    CPB_TRY(cpb_free(ctx, ST, &send));
    return cpb_range_pop(ctx);
}

int cpb_uly_forward(cpb_ctx *ctx, cpb_layer *L, const cpb_uly_shape *u, const cpb_uly_hooks *hooks,
                    cpb_uly_saved *sv)
{
    cpb_dtype dt = L->p.dtype;
    cpb_buf **t = sv->t;
    CPB_TRY(project_exchange(ctx, u, "q", &u->qmap, L->wq, u->H, 1, dt, &t[ULY_Q]));
    CPB_TRY(produced(ctx, hooks, ULY_Q, t[ULY_Q]));
    CPB_TRY(project_exchange(ctx, u, "k", &u->kvmap, L->wk, u->G, 1, dt, &t[ULY_K]));
    CPB_TRY(produced(ctx, hooks, ULY_K, t[ULY_K]));
    CPB_TRY(project_exchange(ctx, u, "v", &u->kvmap, L->wv, u->G, 0, dt, &t[ULY_V]));
    CPB_TRY(produced(ctx, hooks, ULY_V, t[ULY_V]));

    /* causal attention of this rank's hc heads over all S tokens (positions 0..S-1) */
    CPB_TRY(cpb_range_push(ctx, "attn"));
    CPB_TRY(cpb_alloc(ctx, &t[ULY_O], u->S * u->hc * u->d, dt, CPB_TAG_SAVED, "o_head"));
    CPB_TRY(cpb_alloc(ctx, &t[ULY_LSE], u->S * u->hc, CPB_FP32, CPB_TAG_SAVED, "lse"));
    cpb_attn_args a = {0};
    a.q = cpb_a2a_head_view(t[ULY_Q], u->S, u->hc, u->d);
    a.k = cpb_a2a_head_view(t[ULY_K], u->S, u->hk, u->d);
    a.v = cpb_a2a_head_view(t[ULY_V], u->S, u->hk, u->d);
    a.o = cpb_a2a_head_view(t[ULY_O], u->S, u->hc, u->d);
    a.lse = cpb_lse_view(t[ULY_LSE], u->S, 0, u->hc, 0, u->S);
    a.causal = 1;
    CPB_TRY(cpb_attn_fwd(ctx, ST, &a));
    CPB_TRY(cpb_range_pop(ctx));
    CPB_TRY(produced(ctx, hooks, ULY_O, t[ULY_O]));
    CPB_TRY(produced(ctx, hooks, ULY_LSE, t[ULY_LSE]));
    for (int i = ULY_Q; i <= ULY_V; i++) CPB_TRY(done(ctx, hooks, i, &t[i]));
    CPB_TRY(done(ctx, hooks, ULY_LSE, &t[ULY_LSE]));

    /* o back to sequence layout, then y = o Wo */
    CPB_TRY(cpb_range_push(ctx, "out"));
    int64_t n = cpb_a2a_elems(&u->qmap, u->s, u->d);
    cpb_buf *recv = NULL, *oseq = NULL;
    CPB_TRY(cpb_alloc(ctx, &recv, n, dt, CPB_TAG_A2A, "o_recv"));
    CPB_TRY(cpb_range_push(ctx, "a2a"));
    CPB_TRY(cpb_a2a_range_end(ctx, cpb_a2a_exchange(ctx, ST, &u->qmap, u->s, u->d, t[ULY_O], recv)));
    CPB_TRY(done(ctx, hooks, ULY_O, &t[ULY_O]));
    CPB_TRY(cpb_alloc(ctx, &oseq, u->s * u->H * u->d, dt, CPB_TAG_ATTN, "o_seq"));
    CPB_TRY(cpb_a2a_unpack(ctx, ST, &u->qmap, u->s, u->d, recv, oseq, u->H));
    CPB_TRY(cpb_free(ctx, ST, &recv));
    CPB_TRY(cpb_gemm(ctx, ST, 0, 0, 1.0f, cpb_mat(oseq, 0, u->s, (int64_t)u->H * u->d, (int64_t)u->H * u->d),
                     cpb_mat(L->wo, 0, (int64_t)u->H * u->d, u->D, u->D), 0.0f,
                     cpb_mat(L->y, 0, u->s, u->D, u->D)));
    CPB_TRY(cpb_free(ctx, ST, &oseq));
    return cpb_range_pop(ctx);
}
