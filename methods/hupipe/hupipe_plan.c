/* hupipe_plan.c — hybrid UPipe's constraints, plan, per-stage ring and the projections
 * shared by forward and backward (see hupipe.h). */
#include "hupipe/hupipe.h"


int hupipe_check(const cpb_problem *p, char *why, size_t why_len)
{
    CPB_TRY(cpb_grid_check("hupipe", p, why, why_len));
    return cpb_stages_check("hupipe", cpb_grid_degree(p), p->H, p->G, (int)cpb_knob_int(p, "head_chunk"), why, why_len);
}

int hupipe_plan_of(cpb_ctx *ctx, const cpb_layer *L, hupipe_plan *pl)
{
    CPB_TRY(usp_shape_of(ctx, L, &pl->sh));
    const usp_shape *sh = &pl->sh;
    const int U = (int)cpb_knob_int(&L->p, "head_chunk");
    if (cpb_stages_of(sh->g.u, sh->H, sh->G, U, &pl->st) != CPB_OK)
        return cpb_fail(ctx, CPB_ERR_INVALID, "hupipe: no stage schedule for H = %d, G = %d, u = %d, U = %d", sh->H,
                        sh->G, sh->g.u, U);
    pl->Nm = 2 * sh->g.c * pl->st.m * sh->d;
    pl->Nkm = 2 * sh->g.c * pl->st.nk * sh->d;
    return CPB_OK;
}

cpb_ring_cfg hupipe_ring(const hupipe_plan *pl, int t)
{
    cpb_ring_cfg cfg = pl->sh.ring;
    cfg.hq = pl->st.m;
    cfg.hk = pl->st.nk;
    cfg.kv_scratch = cpb_stages_kv_last(&pl->st, t);
    return cfg;
}

cpb_view hupipe_lse(const hupipe_plan *pl, cpb_buf *lse, int t)
{
    int64_t cc = 2 * pl->sh.g.c;
    return cpb_lse_view(lse, cc, (int64_t)t * pl->st.m, pl->st.m, 0, cc);
}

static int project(cpb_ctx *ctx, const hupipe_plan *pl, const cpb_a2a_map *m, cpb_buf *w, int w_heads, int rope,
                   cpb_buf *send, cpb_buf *recv, cpb_buf *dst, int64_t dst_off)
{
    const usp_shape *sh = &pl->sh;
    cpb_a2a_seq sq = sh->seq;
    if (!rope) sq.rope_base = 0;
    CPB_TRY(cpb_a2a_project(ctx, CPB_STREAM_COMPUTE, m, &sq, w, w_heads, send));
    CPB_TRY(cpb_grid_a2a(ctx, CPB_STREAM_COMPUTE, &sh->g, send, 0, recv, 0, cpb_a2a_elems(m, sh->s, sh->d)));
    return cpb_grid_to_ring(ctx, CPB_STREAM_COMPUTE, &sh->g, (int64_t)m->n * sh->d, recv, 0, dst, dst_off);
}

int hupipe_project(cpb_ctx *ctx, const hupipe_plan *pl, const char *what, const cpb_a2a_map *m, cpb_buf *w,
                   int w_heads, int rope, cpb_buf *send, cpb_buf *recv, cpb_buf *dst, int64_t dst_off)
{
    CPB_RANGE(ctx, project(ctx, pl, m, w, w_heads, rope, send, recv, dst, dst_off), "%s", what);
    return CPB_OK;
}

/* V first: projected into tmp, received in kv's K half (free until K comes) and permuted
 * into the V half; then K is projected into the K half, sent from there, received in tmp
 * and permuted back.  No buffer beyond kv and one stage tensor. */
int hupipe_project_kv(cpb_ctx *ctx, cpb_layer *L, const hupipe_plan *pl, const cpb_a2a_map *kvm, cpb_buf *tmp,
                      cpb_buf *kv)
{
    const usp_shape *sh = &pl->sh;
    CPB_TRY(hupipe_project(ctx, pl, "v", kvm, L->wv, sh->G, 0, tmp, kv, kv, pl->Nkm));
    return hupipe_project(ctx, pl, "k", kvm, L->wk, sh->G, 1, kv, tmp, kv, 0);
}
