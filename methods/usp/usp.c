/* usp.c — the USP method struct and its per-rank shape (phases in usp_fwd.c, usp_bwd.c). */
#include "common/dring_attn.h"
#include "common/knobs.h"
#include "usp/usp.h"

static const cpb_knob usp_knobs[] = {CPB_KNOB_ULYSSES_DEGREE, {NULL}};

static int usp_check(const cpb_problem *p, char *why, size_t why_len)
{
    return cpb_grid_check("usp", p, why, why_len);
}

int usp_shape_of(cpb_ctx *ctx, const cpb_layer *L, usp_shape *sh)
{
    const cpb_problem *p = &L->p;
    CPB_TRY(cpb_grid_open(ctx, p, &sh->g));
    int u = sh->g.u;
    sh->s = L->s;
    sh->D = p->D;
    sh->H = p->H;
    sh->G = p->G;
    sh->d = p->d;
    sh->hq = p->H / u;
    sh->hk = p->G >= u ? p->G / u : 1;
    sh->Nq = 2 * sh->g.c * sh->hq * sh->d;
    sh->Nk = 2 * sh->g.c * sh->hk * sh->d;
    if (L->s != 2 * sh->g.w)
        return cpb_fail(ctx, CPB_ERR_INVALID, "usp: %lld local tokens, expected 2 slices of %lld", (long long)L->s,
                        (long long)sh->g.w);
    if (cpb_a2a_map_q(&sh->qmap, u, p->H) || cpb_a2a_map_kv(&sh->kvmap, u, p->G))
        return cpb_fail(ctx, CPB_ERR_INVALID, "usp: no head maps for H = %d, G = %d, u = %d", p->H, p->G, u);
    sh->seq = (cpb_a2a_seq){L->s, p->D, p->d, L->x, &L->tokens, p->rope_base};
    sh->ring.g = sh->g.ring;
    CPB_TRY(cpb_stream(ctx, "comm", &sh->ring.comm_stream));
    sh->ring.c = sh->g.c;
    sh->ring.hq = sh->hq;
    sh->ring.hk = sh->hk;
    sh->ring.d = sh->d;
    sh->ring.dtype = p->dtype;
    sh->ring.kv_scratch = 0;
    sh->ring.layout = CPB_BLK_ZIGZAG; /* the grid's layout (common/grid.h) puts ring order in zigzag */
    sh->ring.inner = cpb_dring_inner(p); /* dring's inner rings (0 for usp: one ring) */
    return CPB_OK;
}

cpb_view usp_ring_view(const usp_shape *sh, cpb_buf *b, int64_t off, int n)
{
    return cpb_heads(b, off, 2 * sh->g.c, n, sh->d, (int64_t)n * sh->d, sh->d);
}

const cpb_method cpb_method_usp = {
    .name = "usp",
    .summary = "USP: Ulysses inside a node (--ulysses-degree) x zigzag ring attention across nodes",
    .check = usp_check,
    .token_layout = cpb_grid_layout,
    .weight_shard = NULL,
    .state_size = sizeof(usp_state),
    .forward = usp_forward,
    .backward = usp_backward,
    .knobs = usp_knobs,
};
