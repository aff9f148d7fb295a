/* block_iter.c — the blocks of each step of a causal context-parallel schedule (see
 * block_iter.h for the layouts and why each block's mask is right). */
#include "common/block_iter.h"

#include <stdint.h>
#include <string.h>

static const char *const layout_names[] = {"zigzag", "contiguous", "striped"};

int cpb_blk_layout_of(const char *name)
{
    for (int i = 0; i < (int)(sizeof layout_names / sizeof layout_names[0]); i++)
        if (name && strcmp(name, layout_names[i]) == 0) return i;
    return -1;
}

const char *cpb_blk_layout_name(cpb_blk_layout l)
{
    return l >= CPB_BLK_ZIGZAG && l <= CPB_BLK_STRIPED ? layout_names[l] : "?";
}

int cpb_blk_chunks(cpb_blk_layout l)
{
    return l == CPB_BLK_ZIGZAG ? 2 : 1;
}

/* zigzag: ring position of chunk `half` (0: chunk rank, 1: chunk 2R-1-rank) of `rank` */
static int64_t zigzag_pos(const cpb_blk_geom *g, int rank, int half)
{
    return (int64_t)(half ? 2 * g->R - 1 - rank : rank) * g->c;
}

static cpb_blk zigzag_block(const cpb_blk_geom *g, int src, int qa, int kb)
{
    cpb_blk b = {qa * g->c, kb * g->c, g->c, zigzag_pos(g, g->rr, qa), zigzag_pos(g, src, kb)};
    return b;
}

/* a block's causal mask as the calls see it: the offset of its positions, or every key
 * visible (query i sees key j iff j <= off + i: all of them once off >= rows - 1) */
static int64_t mask_of(const cpb_blk *b)
{
    const int64_t off = b->q_pos0 - b->k_pos0;
    return off >= b->rows - 1 ? INT64_MAX : off;
}

int cpb_blk_step_alike(const cpb_blk_step *a, const cpb_blk_step *b)
{
    if (a->diag != b->diag || a->n != b->n || a->k_rows != b->k_rows) return 0;
    for (int i = 0; i < a->n; i++) {
        const cpb_blk *x = &a->b[i], *y = &b->b[i];
        if (x->q_row != y->q_row || x->k_row != y->k_row || x->rows != y->rows || mask_of(x) != mask_of(y)) return 0;
    }
    return 1;
}

void cpb_blk_step_at(const cpb_blk_geom *g, int i, cpb_blk_step *out)
{
    cpb_blk_step_src(g, ((g->rr - i) % g->R + g->R) % g->R, out);
}

void cpb_blk_step_src(const cpb_blk_geom *g, int src, cpb_blk_step *out)
{
    int64_t rows = cpb_blk_chunks(g->layout) * g->c;
    memset(out, 0, sizeof *out);
    out->src = src;
    if (src == g->rr) {
        /* every local list is increasing in global position: causal on local indices */
        out->diag = 1;
        out->n = 1;
        out->b[0] = (cpb_blk){0, 0, rows, 0, 0};
        out->k_rows = rows;
        return;
    }
    switch (g->layout) {
    case CPB_BLK_ZIGZAG:
        out->n = 2;
        if (src < g->rr) { /* all local q vs the source's first chunk */
            out->b[0] = zigzag_block(g, src, 0, 0);
            out->b[1] = zigzag_block(g, src, 1, 0);
            out->k_rows = g->c;
        } else {           /* the local second chunk vs both source chunks */
            out->b[0] = zigzag_block(g, src, 1, 0);
            out->b[1] = zigzag_block(g, src, 1, 1);
            out->k_rows = 2 * g->c;
        }
        return;
    case CPB_BLK_CONTIGUOUS:
        /* everything visible (src < rr) or nothing (src > rr): the exact positions say which */
        out->n = 1;
        out->b[0] = (cpb_blk){0, 0, g->c, (int64_t)g->rr * g->c, (int64_t)src * g->c};
        out->k_rows = g->c;
        return;
    case CPB_BLK_STRIPED:
        /* key m visible from query j iff m <= j (src < rr) or m < j (src > rr) */
        out->n = 1;
        out->b[0] = (cpb_blk){0, 0, g->c, 0, src > g->rr ? 1 : 0};
        out->k_rows = g->c;
        return;
    }
}
