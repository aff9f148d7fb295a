/* block_iter.h — the (q block, kv block, mask, position offsets) steps of a causal
 * context-parallel schedule over a group of R ranks, apart from where K,V come from.
 *
 * Ring attention (K,V rotate: step i reads the K,V of rank rr - i), all-gather attention
 * (step i reads slot rr - i of the gathered K,V) and the methods built on them (usp, metp,
 * hupipe) compute the same blocks: this module says which, and the caller supplies the K,V.
 * Every rank makes R steps in the same order, and a step's blocks have the same sizes on
 * every rank (DESIGN section 3: the same allocations and op order on every rank), so the
 * caller issues the same ops everywhere; only the work inside an op (its mask) differs.
 *
 * Layouts (who holds which tokens; c tokens per chunk, a rank holds `cpb_blk_chunks` chunks):
 * - zigzag: the sequence is cut into 2R chunks; rank rr holds chunk rr in local rows [0, c)
 *   and chunk 2R-1-rr in rows [c, 2c).  Step 0 is the causal diagonal (local order is
 *   global order); a later step whose source is before rr sees the source's first chunk
 *   from both local chunks, one whose source is after rr sees both source chunks from the
 *   local second chunk: two c x c blocks, full, on every rank (equal work).
 * - contiguous: rank rr holds [rr*c, (rr+1)*c) (naive ring attention).  A step whose
 *   source is before rr is one full c x c block; one whose source is after rr sees nothing
 *   (the block is issued with its exact positions, so it computes nothing: every rank
 *   still issues the same ops).  Rank R-1 does R times the work of rank 0.
 * - striped: token t is on rank t mod R (Brandon et al. 2023, "Striped Attention",
 *   arXiv 2311.09431): rank rr holds rr, rr+R, rr+2R, ... (c tokens).  Local query j (at
 *   rr + jR) sees source key m (at src + mR) iff m < j, or m == j and src <= rr: causal on
 *   local indices, shifted by one when src > rr.  One c x c block per step, about half of
 *   it visible on every rank.
 * Positions in the blocks are those of the masks: ring positions for zigzag and contiguous
 * (chunk index * c), local indices for the diagonal and for striped (only the order of the
 * positions inside a block matters to a causal mask). */
#ifndef CPB_COMMON_BLOCK_ITER_H
#define CPB_COMMON_BLOCK_ITER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cpb_blk_layout {
    CPB_BLK_ZIGZAG = 0,
    CPB_BLK_CONTIGUOUS,
    CPB_BLK_STRIPED,
} cpb_blk_layout;

/* the layout called `name` ("zigzag", "contiguous", "striped"); -1 when none is */
int cpb_blk_layout_of(const char *name);
const char *cpb_blk_layout_name(cpb_blk_layout l);
/* chunks of c tokens a rank holds: 2 for zigzag, 1 otherwise */
int cpb_blk_chunks(cpb_blk_layout l);

typedef struct cpb_blk_geom {
    int R, rr;            /* group size, my rank in the group */
    int64_t c;            /* tokens per chunk: local rows = cpb_blk_chunks(layout) * c */
    cpb_blk_layout layout;
} cpb_blk_geom;

/* one attention call: local q rows [q_row, q_row + rows) against the source's K,V rows
 * [k_row, k_row + rows), causal at positions q_pos0 + i, k_pos0 + j */
typedef struct cpb_blk {
    int64_t q_row, k_row, rows;
    int64_t q_pos0, k_pos0;
} cpb_blk;

typedef struct cpb_blk_step {
    int src;        /* the group rank whose K,V the step reads */
    int diag;       /* 1: step 0, one block over every local row against the rank's own K,V
                       (causal on local indices); its results start the accumulators */
    int n;          /* blocks: 1 or 2 */
    cpb_blk b[2];
    int64_t k_rows; /* source rows the blocks read (from row 0): the dK,dV rows they write */
} cpb_blk_step;

/* step i (0 .. R-1) of g: the K,V of rank rr - i */
void cpb_blk_step_at(const cpb_blk_geom *g, int i, cpb_blk_step *out);
/* the step that reads the K,V of group rank src, for schedules that visit the sources in
 * another order (the double ring); src == rr is the diagonal */
void cpb_blk_step_src(const cpb_blk_geom *g, int src, cpb_blk_step *out);
/* 1 when steps a and b issue the same calls: the same blocks at the same local rows and
 * with the same mask (the same position offset, or both fully visible), so that a schedule
 * that runs them alike may declare them alike (cpb_repeat) */
int cpb_blk_step_alike(const cpb_blk_step *a, const cpb_blk_step *b);

#ifdef __cplusplus
}
#endif
#endif
