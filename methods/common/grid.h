/* grid.h — the Ulysses x ring rank grid of the multi-node methods (usp, hupipe;
 * DESIGN.md section 4, "usp and hybrid upipe").
 *
 * C = u * R ranks.  Ulysses groups are u consecutive ranks (one node): rank r is member
 * ui = r % u of Ulysses group rr = r / u.  Ring groups are the ranks with the same ui:
 * {ui, u + ui, 2u + ui, ...}, in which rank r is ring rank rr.
 *
 * Token layout.  The sequence is cut into 2R zigzag chunks of c = S / (2R) tokens for the
 * ring; Ulysses group rr holds chunks rr and 2R-1-rr, and its member ui holds the ui-th
 * slice of w = c / u tokens of each: local rows [0, w) are chunk rr's slice, rows [w, 2w)
 * chunk 2R-1-rr's.  After the all-to-all (seq->head) inside the Ulysses group a member has
 * the two whole chunks of its heads, which is what ring_attn expects of ring rank rr.
 *
 * Row orders.  The all-to-all leaves the rows member-major ("a2a order": member j's w
 * rows of the first chunk, then its w rows of the second, for j = 0..u-1), while ring
 * attention wants them chunk-major ("ring order": the first chunk's c rows, then the
 * second's).  cpb_grid_to_ring / cpb_grid_to_a2a permute between the two with two strided
 * copies (one per chunk), converting the dtype on the way when the two buffers differ.
 */
#ifndef CPB_GRID_H
#define CPB_GRID_H

#include "cpb.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cpb_grid {
    int C, u, R;        /* ranks, Ulysses degree, ring degree */
    int ui, rr;         /* my member index in the Ulysses group, my ring rank */
    int64_t c, w;       /* tokens per zigzag chunk, per member per chunk */
    cpb_group *uly;     /* my Ulysses group (u ranks) */
    cpb_group *ring;    /* my ring group (R ranks) */
} cpb_grid;

/* The Ulysses degree of p: p->ulysses_degree, or when 0 the largest u <= 8 (a node of 8
 * GPUs) that divides C and H and fits the kv heads (G % u == 0 or u % G == 0), else 1. */
int cpb_grid_degree(const cpb_problem *p);

/* The grid constraints shared by usp and hupipe: u divides C, S % (2C) == 0 (2R chunks
 * each cut in u slices), H % u == 0, G % u == 0 or u % G == 0, H % G == 0.  `name`
 * starts the message. */
int cpb_grid_check(const char *name, const cpb_problem *p, char *why, size_t why_len);

/* token_layout of the grid (see above) */
int cpb_grid_layout(const cpb_problem *p, int rank, cpb_segs *out);

/* My place in the grid and its two groups.  The groups are created on first use and
 * found again on later calls with the same context (a context holds at most a few dozen
 * groups, and a sweep runs many trials in one), in the same order on every rank. */
int cpb_grid_open(cpb_ctx *ctx, const cpb_problem *p, cpb_grid *g);

/* Row-order permutations of a head tensor of `row_elems` elements per token (n*d for a
 * [rows][n][d] tensor, n for token-major fp32 delta): src a2a order -> dst ring order, and
 * back.  Offsets are element offsets into the buffers; src and dst must not overlap. */
int cpb_grid_to_ring(cpb_ctx *ctx, int st, const cpb_grid *g, int64_t row_elems, cpb_buf *src, int64_t src_off,
                     cpb_buf *dst, int64_t dst_off);
int cpb_grid_to_a2a(cpb_ctx *ctx, int st, const cpb_grid *g, int64_t row_elems, cpb_buf *src, int64_t src_off,
                    cpb_buf *dst, int64_t dst_off);

/* all-to-all of n elements inside the Ulysses group (a named "a2a" range) */
int cpb_grid_a2a(cpb_ctx *ctx, int st, const cpb_grid *g, cpb_buf *send, int64_t send_off, cpb_buf *recv,
                 int64_t recv_off, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
