/* offload_bwd.c — offload's backward by head groups with double-buffered fetches.
 *
 * Group b (og query heads per rank, heads b*og .. b*og+og-1 of each rank's H/C) runs the
 * Ulysses backward on those heads alone: dO for the group's heads, attention backward,
 * o exchanged back for dWo, dq, dk, dv exchanged back into dx and dW.  A kv head shared by
 * two groups gets two partial gradients, each exchanged and summed on the sequence side
 * (into the fp32 dW and the dx of the storage dtype).  While group b computes, group b+1's q, k, v, o, lse
 * are fetched into the other slot on the copy stream; events order the slot's reuse.
 *
 * No separate exchange buffers: dqh carries the packed dO send before the attention
 * writes it, and doh (dead after the attention) receives o, dq, dk and dv in turn
 * (a group's kv heads are at most its query heads, so they fit); each gradient's head
 * tensor, dead once sent, lays the chunks side by side for the one dx GEMM, and the group's
 * strided weight columns are gathered into `wg` for it.
 *
 * x: the forward put a copy on the host, as a checkpointed layer's input would be; the
 * layer trial keeps the input on the device as a fixed tensor of every method, so the dW
 * GEMMs read that one rather than fetching a second device copy. */
#include <stdlib.h>

#include "common/grad_acc.h"
#include "offload/offload.h"

typedef struct slot {
    cpb_buf *q, *o, *k, *v, *lse; /* [S][og][d], [S][nkmax][d], [og][S] fp32 */
} slot;

typedef struct bwd {
    const cpb_uly_shape *u;
    off_state *s;
    int nkmax;
    slot sl[2];
    cpb_event used[2];  /* compute finished reading the slot */
    int used_valid[2];
    cpb_event *ready;   /* group b's fetch has landed */
    cpb_buf *doh, *dqh, *dkh, *dvh;
    cpb_buf *wg;        /* the group's weight columns gathered for the dx GEMM */
    cpb_buf *dx;        /* dx accumulator (cpb_dx_begin) */
} bwd;

static int fetch_copies(cpb_ctx *ctx, bwd *B, int b)
{
    const cpb_uly_shape *u = B->u;
    off_state *s = B->s;
    slot *sl = &B->sl[b % 2];
    int a, nk;
    offload_group_kv(u, s->og, b, &a, &nk);
    if (B->used_valid[b % 2]) CPB_TRY(cpb_stream_wait(ctx, s->copy, B->used[b % 2]));
    int64_t gsz = u->S * s->og * u->d;
    CPB_TRY(cpb_copy(ctx, s->copy, cpb_span(sl->q, 0, gsz), cpb_span(s->hq, b * gsz, gsz)));
    CPB_TRY(cpb_copy(ctx, s->copy, cpb_span(sl->o, 0, gsz), cpb_span(s->ho, b * gsz, gsz)));
    CPB_TRY(cpb_copy(ctx, s->copy, cpb_span(sl->lse, 0, u->S * s->og),
                     cpb_span(s->hlse, (int64_t)b * s->og * u->S, u->S * s->og)));
    int64_t ld = (int64_t)u->hk * u->d;
    cpb_view hk = cpb_heads(s->hk, (int64_t)a * u->d, u->S, nk, u->d, ld, u->d);
    cpb_view hv = cpb_heads(s->hv, (int64_t)a * u->d, u->S, nk, u->d, ld, u->d);
    CPB_TRY(cpb_copy(ctx, s->copy, cpb_a2a_head_view(sl->k, u->S, nk, u->d), hk));
    CPB_TRY(cpb_copy(ctx, s->copy, cpb_a2a_head_view(sl->v, u->S, nk, u->d), hv));
    return cpb_event_record(ctx, s->copy, &B->ready[b]);
}

/* group b's saved tensors into its device slot, on the copy stream */
static int fetch(cpb_ctx *ctx, bwd *B, int b)
{
    CPB_RANGE(ctx, fetch_copies(ctx, B, b), "fetch%d", b);
    return CPB_OK;
}

/* attention backward of the group: one call when its query heads map uniformly onto its
 * kv heads, else one call per kv head with the query heads that use it */
static int group_attn(cpb_ctx *ctx, bwd *B, int b, const slot *sl, int nk)
{
    const cpb_uly_shape *u = B->u;
    int og = B->s->og, g = u->H / u->G;
    int uniform = u->G < u->C || og % g == 0 || g % og == 0;
    for (int kv = 0; kv < (uniform ? 1 : nk); kv++) {
        int q0 = 0, nq = og, k0 = 0, nkc = nk;
        if (!uniform) { /* the group's heads [b*og, b*og+og) that use local kv head a+kv */
            int a = (b * og) / g, lo = (a + kv) * g, hi = lo + g;
            q0 = lo > b * og ? lo - b * og : 0;
            nq = (hi < (b + 1) * og ? hi - b * og : og) - q0;
            k0 = kv;
            nkc = 1;
        }
        cpb_attn_args at = {0};
        at.q = cpb_view_heads(cpb_a2a_head_view(sl->q, u->S, og, u->d), q0, nq);
        at.o = cpb_view_heads(cpb_a2a_head_view(sl->o, u->S, og, u->d), q0, nq);
        at.lse = cpb_lse_view(sl->lse, u->S, q0, nq, 0, u->S);
        at.k = cpb_view_heads(cpb_a2a_head_view(sl->k, u->S, nk, u->d), k0, nkc);
        at.v = cpb_view_heads(cpb_a2a_head_view(sl->v, u->S, nk, u->d), k0, nkc);
        at.d_o = cpb_view_heads(cpb_a2a_head_view(B->doh, u->S, og, u->d), q0, nq);
        at.dq = cpb_view_heads(cpb_a2a_head_view(B->dqh, u->S, og, u->d), q0, nq);
        at.dk = cpb_view_heads(cpb_a2a_head_view(B->dkh, u->S, nk, u->d), k0, nkc);
        at.dv = cpb_view_heads(cpb_a2a_head_view(B->dvh, u->S, nk, u->d), k0, nkc);
        at.causal = 1;
        CPB_TRY(cpb_attn_bwd(ctx, CPB_STREAM_COMPUTE, &at));
    }
    return CPB_OK;
}

static int exchange(cpb_ctx *ctx, const cpb_a2a_map *m, const cpb_uly_shape *u, cpb_buf *send, cpb_buf *recv)
{
    CPB_RANGE(ctx, cpb_a2a_exchange(ctx, CPB_STREAM_COMPUTE, m, u->s, u->d, send, recv), "a2a");
    return CPB_OK;
}

static int give_back(cpb_ctx *ctx, bwd *B, const cpb_a2a_map *m, cpb_buf *grad, cpb_buf *w, int w_heads, int rope,
                     cpb_buf *dw, cpb_buf *dx)
{
    cpb_a2a_seq sq = B->u->seq;
    if (!rope) sq.rope_base = 0;
    CPB_TRY(exchange(ctx, m, B->u, grad, B->doh));
    return cpb_a2a_grad_project(ctx, CPB_STREAM_COMPUTE, m, &sq, B->doh, grad, B->wg, w, w_heads, dw, dx);
}

/* dO of the group's heads, exchanged to head layout */
static int out_grad(cpb_ctx *ctx, cpb_layer *L, bwd *B, const cpb_a2a_map *qm)
{
    CPB_TRY(cpb_a2a_out_grad(ctx, CPB_STREAM_COMPUTE, qm, &B->u->seq, L->dy, L->wo, B->dqh));
    return exchange(ctx, qm, B->u, B->dqh, B->doh);
}

/* dWo rows of the group's heads, from o brought back to sequence layout */
static int grad_wo(cpb_ctx *ctx, cpb_layer *L, bwd *B, const cpb_a2a_map *qm, int b)
{
    CPB_TRY(exchange(ctx, qm, B->u, B->sl[b % 2].o, B->doh));
    CPB_TRY(cpb_event_record(ctx, CPB_STREAM_COMPUTE, &B->used[b % 2])); /* the slot is free to refill */
    B->used_valid[b % 2] = 1;
    return cpb_a2a_grad_wo(ctx, CPB_STREAM_COMPUTE, qm, &B->u->seq, B->doh, 0, L->dy, L->dwo);
}

/* group b's maps: rank j's query heads j*hc + b*og + i and the kv heads they use */
static void group_maps(const cpb_uly_shape *u, int og, int b, cpb_a2a_map *qm, cpb_a2a_map *kvm)
{
    int a, nk;
    offload_group_kv(u, og, b, &a, &nk);
    qm->C = kvm->C = u->C;
    qm->n = og;
    kvm->n = nk;
    for (int j = 0; j < u->C; j++) {
        for (int i = 0; i < og; i++) qm->head[j * og + i] = j * u->hc + b * og + i;
        for (int i = 0; i < nk; i++)
            kvm->head[j * nk + i] = u->G < u->C ? u->kvmap.head[j] : j * u->hk + a + i;
    }
}

static int group(cpb_ctx *ctx, cpb_layer *L, bwd *B, int b)
{
    const cpb_uly_shape *u = B->u;
    off_state *s = B->s;
    int og = s->og, a, nk;
    offload_group_kv(u, og, b, &a, &nk);
    cpb_a2a_map qm, kvm;
    group_maps(u, og, b, &qm, &kvm);
    if (b + 1 < s->ng) CPB_TRY(fetch(ctx, B, b + 1)); /* overlaps this group's compute */
    CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, B->ready[b]));
    slot *sl = &B->sl[b % 2];

    CPB_RANGE(ctx, out_grad(ctx, L, B, &qm), "do");
    CPB_RANGE(ctx, group_attn(ctx, B, b, sl, nk), "attn");
    CPB_RANGE(ctx, grad_wo(ctx, L, B, &qm, b), "wo");
    CPB_RANGE(ctx, give_back(ctx, B, &qm, B->dqh, L->wq, u->H, 1, L->dwq, B->dx), "dq");
    CPB_RANGE(ctx, give_back(ctx, B, &kvm, B->dkh, L->wk, u->G, 1, L->dwk, B->dx), "dk");
    CPB_RANGE(ctx, give_back(ctx, B, &kvm, B->dvh, L->wv, u->G, 0, L->dwv, B->dx), "dv");
    return CPB_OK;
}

static int backward_body(cpb_ctx *ctx, cpb_layer *L, bwd *B)
{
    const cpb_uly_shape *u = B->u;
    off_state *s = B->s;
    cpb_dtype dt = L->p.dtype;
    CPB_TRY(cpb_zero_dw(ctx, L));
    CPB_TRY(cpb_dx_begin(ctx, L, &B->dx));
    int64_t gq = u->S * s->og * u->d, gk = u->S * B->nkmax * u->d;
    for (int i = 0; i < 2; i++) {
        slot *sl = &B->sl[i];
        CPB_TRY(cpb_alloc(ctx, &sl->q, gq, dt, CPB_TAG_FETCH, "q_fetch"));
        CPB_TRY(cpb_alloc(ctx, &sl->o, gq, dt, CPB_TAG_FETCH, "o_fetch"));
        CPB_TRY(cpb_alloc(ctx, &sl->k, gk, dt, CPB_TAG_FETCH, "k_fetch"));
        CPB_TRY(cpb_alloc(ctx, &sl->v, gk, dt, CPB_TAG_FETCH, "v_fetch"));
        CPB_TRY(cpb_alloc(ctx, &sl->lse, u->S * s->og, CPB_FP32, CPB_TAG_FETCH, "lse_fetch"));
    }
    CPB_TRY(cpb_alloc(ctx, &B->doh, gq, dt, CPB_TAG_GRAD_ACT, "do_head"));
    CPB_TRY(cpb_alloc(ctx, &B->dqh, gq, dt, CPB_TAG_GRAD_ACT, "dq_head"));
    CPB_TRY(cpb_alloc(ctx, &B->dkh, gk, dt, CPB_TAG_GRAD_ACT, "dk_head"));
    CPB_TRY(cpb_alloc(ctx, &B->dvh, gk, dt, CPB_TAG_GRAD_ACT, "dv_head"));
    int64_t ng = 0;
    for (int b = 0; b < s->ng; b++) {
        cpb_a2a_map qm, kvm;
        group_maps(u, s->og, b, &qm, &kvm);
        int64_t nq = cpb_a2a_gather_need(&qm, u->D, u->d), nkv = cpb_a2a_gather_need(&kvm, u->D, u->d);
        if (nq > ng) ng = nq;
        if (nkv > ng) ng = nkv;
    }
    if (ng) CPB_TRY(cpb_alloc(ctx, &B->wg, ng, dt, CPB_TAG_GATHER, "w_gather"));
    CPB_TRY(fetch(ctx, B, 0));
    for (int b = 0; b < s->ng; b++) CPB_RANGE(ctx, group(ctx, L, B, b), "group%d", b);
    CPB_TRY(cpb_stream_join(ctx, CPB_STREAM_COMPUTE, s->copy));
    cpb_buf **dev[] = {&B->doh, &B->dqh, &B->dkh, &B->dvh, &B->wg, &B->sl[0].q, &B->sl[0].o,
                       &B->sl[0].k, &B->sl[0].v, &B->sl[0].lse, &B->sl[1].q, &B->sl[1].o, &B->sl[1].k,
                       &B->sl[1].v, &B->sl[1].lse};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, dev[i]));
    cpb_buf **host[] = {&s->hx, &s->hq, &s->hk, &s->hv, &s->ho, &s->hlse};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) CPB_TRY(cpb_free(ctx, s->copy, host[i]));
    return CPB_OK;
}

int offload_backward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    off_state *s = state;
    cpb_uly_shape u;
    CPB_TRY(cpb_uly_shape_of(L, &u));
    bwd B = {0};
    B.u = &u;
    B.s = s;
    for (int b = 0; b < s->ng; b++) {
        int a, nk;
        offload_group_kv(&u, s->og, b, &a, &nk);
        if (nk > B.nkmax) B.nkmax = nk;
    }
    B.ready = calloc((size_t)s->ng, sizeof *B.ready);
    if (!B.ready) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "offload: out of host memory for events");
    int rc = backward_body(ctx, L, &B);
    free(B.ready);
    return rc;
}
