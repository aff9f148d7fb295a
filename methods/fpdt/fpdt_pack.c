/* fpdt_pack.c — views and packing for FPDT's per-chunk all-to-alls (see fpdt.h for the
 * packed layout).  Projections write straight into the send slots with one batched GEMM
 * (batch = destination block), so no extra sequence-layout buffer is needed going out. */
#include "fpdt.h"

cpb_view fpdt_rows(const fpdt_dims *m, cpb_buf *b, int64_t i, int64_t ld)
{
    return cpb_mat(b, i * m->c * ld, m->c, ld, ld);
}

cpb_view fpdt_head_view(const fpdt_dims *m, cpb_buf *b, int64_t off, int heads)
{
    return cpb_heads(b, off, m->chunk, heads, m->d, (int64_t)heads * m->d, m->d);
}

cpb_view fpdt_lse_view(const fpdt_dims *m, cpb_buf *b, int64_t off)
{
    cpb_view v = cpb_lse_view(b, m->chunk, 0, m->hq, 0, m->chunk);
    v.off += off;
    return v;
}

void fpdt_chunk_positions(const fpdt_dims *m, int64_t i, cpb_segs *out)
{
    cpb_segs_clear(out);
    cpb_segs_add(out, i * m->chunk, m->chunk);
}

int fpdt_project_packed(cpb_ctx *ctx, int stream, const fpdt_dims *m, cpb_view x_i, cpb_buf *w,
                        int nblocks, int64_t blk, int rep, cpb_buf *send)
{
    const int64_t slot = m->c * blk;
    /* B: block b = columns [b*blk, (b+1)*blk) of W; C: slot b*rep */
    cpb_view wb = cpb_heads(w, 0, m->D, nblocks, blk, (int64_t)nblocks * blk, blk);
    cpb_view first = cpb_heads(send, 0, m->c, nblocks, blk, blk, rep * slot);
    CPB_TRY(cpb_gemm(ctx, stream, 0, 0, 1.0f, x_i, wb, 0.0f, first));
    /* replicated kv heads: the other ranks sharing a block get the same values */
    for (int t = 1; t < rep; t++) {
        cpb_view copy = cpb_heads(send, t * slot, m->c, nblocks, blk, blk, rep * slot);
        CPB_TRY(cpb_copy(ctx, stream, copy, first));
    }
    return CPB_OK;
}

int fpdt_unpack(cpb_ctx *ctx, int stream, const fpdt_dims *m, cpb_buf *recv, int nblocks,
                int64_t blk, int rep, cpb_buf *seq)
{
    const int64_t slot = m->c * blk;
    cpb_view dst = cpb_heads(seq, 0, m->c, nblocks, blk, (int64_t)nblocks * blk, blk);
    for (int t = 0; t < rep; t++) {
        cpb_view src = cpb_heads(recv, t * slot, m->c, nblocks, blk, blk, rep * slot);
        if (t == 0) CPB_TRY(cpb_copy(ctx, stream, dst, src));
        else CPB_TRY(cpb_axpby(ctx, stream, 1.0f, src, 1.0f, dst));
    }
    return CPB_OK;
}
