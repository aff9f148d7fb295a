/* grid.c — the Ulysses x ring grid (see grid.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grid.h"

int cpb_grid_degree(const cpb_problem *p)
{
    int64_t u = cpb_knob_int(p, "ulysses_degree");
    if (u > 0) return (int)u;
    /* default: the largest Ulysses group that fits a node of 8 GPUs and that the shape
     * allows (u divides C and H, and G % u == 0 or u % G == 0); 1 (a pure ring) always does */
    for (int u = p->C < 8 ? p->C : 8; u > 1; u--)
        if (p->C % u == 0 && p->H % u == 0 && p->G > 0 && (p->G % u == 0 || u % p->G == 0)) return u;
    return 1;
}

int cpb_grid_check(const char *name, const cpb_problem *p, char *why, size_t why_len)
{
    int C = p->C, u = cpb_grid_degree(p);
    if (C <= 0 || u <= 0 || C % u) {
        snprintf(why, why_len, "%s needs the Ulysses degree to divide the ranks: u = %d (--ulysses-degree; the default is the largest "
                 "u <= 8 that divides C and H), C = %d", name, u, C);
        return CPB_ERR_INVALID;
    }
    int R = C / u;
    if (p->S <= 0 || p->S % (2 * (int64_t)C)) {
        snprintf(why, why_len, "%s needs S %% (2 R u) == 0 (2R zigzag chunks, each cut in u slices): S = %lld, "
                 "R = %d, u = %d", name, (long long)p->S, R, u);
        return CPB_ERR_INVALID;
    }
    if (p->H % u) {
        snprintf(why, why_len, "%s needs H %% u == 0: H = %d query heads, u = %d (Ulysses degree)", name, p->H, u);
        return CPB_ERR_INVALID;
    }
    if (p->G <= 0 || p->H % p->G) {
        snprintf(why, why_len, "%s needs H %% G == 0: H = %d query heads, G = %d kv heads", name, p->H, p->G);
        return CPB_ERR_INVALID;
    }
    if (p->G % u && u % p->G) {
        snprintf(why, why_len, "%s needs G %% u == 0 or u %% G == 0: G = %d kv heads, u = %d (Ulysses degree)", name,
                 p->G, u);
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

int cpb_grid_layout(const cpb_problem *p, int rank, cpb_segs *out)
{
    int u = cpb_grid_degree(p);
    if (u <= 0 || p->C % u || p->S % (2 * (int64_t)p->C)) return CPB_ERR_INVALID;
    int R = p->C / u, rr = rank / u, ui = rank % u;
    int64_t c = p->S / (2 * (int64_t)R), w = c / u;
    cpb_segs_clear(out);
    if (cpb_segs_add(out, (int64_t)rr * c + ui * w, w) < 0) return CPB_ERR_INVALID;
    if (cpb_segs_add(out, (int64_t)(2 * R - 1 - rr) * c + ui * w, w) < 0) return CPB_ERR_INVALID;
    return CPB_OK;
}

int cpb_grid_open(cpb_ctx *ctx, const cpb_problem *p, cpb_grid *g)
{
    int me = cpb_rank(ctx), C = cpb_world_size(ctx), u = cpb_grid_degree(p);
    if (C != p->C || u <= 0 || C % u)
        return cpb_fail(ctx, CPB_ERR_INVALID, "grid: %d ranks cannot form Ulysses groups of %d (problem C = %d)", C, u,
                        p->C);
    g->C = C;
    g->u = u;
    g->R = C / u;
    g->ui = me % u;
    g->rr = me / u;
    g->c = p->S / (2 * (int64_t)g->R);
    g->w = g->c / u;
    /* a ring group has C / u members: any world size */
    int *members = malloc(sizeof(int) * (size_t)(u > g->R ? u : g->R));
    if (!members) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "grid: out of host memory for %d group members", C);
    /* Ulysses group first, then the ring group, on every rank */
    for (int j = 0; j < u; j++) members[j] = g->rr * u + j;
    int rc = cpb_group_create(ctx, u, members, &g->uly);
    for (int j = 0; rc == CPB_OK && j < g->R; j++) members[j] = j * u + g->ui;
    if (rc == CPB_OK) rc = cpb_group_create(ctx, g->R, members, &g->ring);
    free(members);
    CPB_TRY(rc);
    if (g->uly->rank != g->ui || g->ring->rank != g->rr)
        return cpb_fail(ctx, CPB_ERR_INVALID, "grid: rank %d is member %d/%d of its groups, expected %d/%d", me,
                        g->uly->rank, g->ring->rank, g->ui, g->rr);
    return CPB_OK;
}

/* One chunk half of the permutation: rows [u][w] of `e` elements, member-major with
 * stride 2w rows in a2a order, chunk-major with stride w rows in ring order. */
static cpb_view a2a_half(const cpb_grid *g, cpb_buf *b, int64_t off, int64_t e, int half)
{
    return cpb_heads(b, off + half * g->w * e, g->u, g->w, e, 2 * g->w * e, e);
}

static cpb_view ring_half(const cpb_grid *g, cpb_buf *b, int64_t off, int64_t e, int half)
{
    return cpb_heads(b, off + half * g->c * e, g->u, g->w, e, g->w * e, e);
}

int cpb_grid_to_ring(cpb_ctx *ctx, int st, const cpb_grid *g, int64_t row_elems, cpb_buf *src, int64_t src_off,
                     cpb_buf *dst, int64_t dst_off)
{
    for (int h = 0; h < 2; h++)
        CPB_TRY(cpb_copy(ctx, st, ring_half(g, dst, dst_off, row_elems, h), a2a_half(g, src, src_off, row_elems, h)));
    return CPB_OK;
}

int cpb_grid_to_a2a(cpb_ctx *ctx, int st, const cpb_grid *g, int64_t row_elems, cpb_buf *src, int64_t src_off,
                    cpb_buf *dst, int64_t dst_off)
{
    for (int h = 0; h < 2; h++)
        CPB_TRY(cpb_copy(ctx, st, a2a_half(g, dst, dst_off, row_elems, h), ring_half(g, src, src_off, row_elems, h)));
    return CPB_OK;
}

int cpb_grid_a2a(cpb_ctx *ctx, int st, const cpb_grid *g, cpb_buf *send, int64_t send_off, cpb_buf *recv,
                 int64_t recv_off, int64_t n)
{
    CPB_RANGE(ctx, cpb_all_to_all(ctx, st, g->uly, cpb_span(send, send_off, n), cpb_span(recv, recv_off, n)), "a2a");
    return CPB_OK;
}
