/* test_view.c — view constructors and slicing, and token segment lists. */
#include "test_cpu_util.h"

Test(view, constructors)
{
    cpb_buf b = {0};
    b.nelem = 1000;
    cpb_view s = cpb_span(&b, 10, 90);
    cr_assert(s.off == 10 && s.rows == 1 && s.heads == 1 && s.dim == 90);
    cr_assert_eq(cpb_view_count(&s), 90);
    cr_assert(cpb_view_is_contiguous(&s));
    cpb_view w = cpb_whole(&b);
    cr_assert_eq(cpb_view_count(&w), 1000);
    cpb_view m = cpb_mat(&b, 5, 7, 3, 4);
    cr_assert(m.rows == 7 && m.dim == 3 && m.row_stride == 4 && m.heads == 1);
    cr_assert(!cpb_view_is_contiguous(&m), "ld 4 > 3 columns is strided");
    cpb_view mc = cpb_mat(&b, 0, 7, 3, 3);
    cr_assert(cpb_view_is_contiguous(&mc));
    cpb_view h = cpb_heads(&b, 0, 6, 4, 5, 20, 5);
    cr_assert(cpb_view_is_contiguous(&h));
    cr_assert_eq(cpb_view_count(&h), 120);
    /* two of four heads: strided */
    cpb_view hs = cpb_view_heads(h, 1, 2);
    cr_assert(hs.off == 5 && hs.heads == 2 && !cpb_view_is_contiguous(&hs));
    cpb_view one = cpb_view_rows(h, 2, 1);
    cr_assert(one.off == 40 && one.rows == 1 && cpb_view_is_contiguous(&one));
    /* lse layout [heads][tokens]: head h0 = 2 of a buffer with ld 50, tokens from 7 */
    cpb_view l = cpb_lse_view(&b, 50, 2, 3, 7, 20);
    cr_assert(l.off == 107 && l.rows == 20 && l.heads == 3 && l.dim == 1 && l.row_stride == 1 &&
              l.head_stride == 50);
    cpb_view lr = cpb_view_rows(l, 4, 3);
    cr_assert_eq(lr.off, 111);
}

Test(view, out_of_bounds_view_is_refused)
{
    cpb_ctx *ctx = t_ctx();
    cpb_buf *b = t_buf(ctx, 100, CPB_FP32, "small");
    int rc = cpb_fill(ctx, 0, cpb_heads(b, 10, 10, 2, 5, 10, 5), 0.0f); /* last element 10+90+5+4 = 109 */
    cr_assert_eq(rc, CPB_ERR_INVALID);
    cr_assert(strstr(cpb_errmsg(ctx), "small") != NULL, "%s", cpb_errmsg(ctx));
    cpb_ctx_destroy(ctx);
}

Test(view, segs_add_merge_slice_pos)
{
    cpb_segs s, t;
    cpb_segs_clear(&s);
    cr_assert_eq(cpb_segs_total(&s), 0);
    cr_assert_eq(cpb_segs_pos(&s, 0), -1);
    cr_assert_eq(cpb_segs_add(&s, 100, 10), 0);
    cr_assert_eq(cpb_segs_add(&s, 110, 5), 0); /* adjacent: merged */
    cr_assert_eq(s.n, 1);
    cr_assert_eq(s.len[0], 15);
    cr_assert_eq(cpb_segs_add(&s, 0, 7), 0); /* zigzag-like second chunk */
    cr_assert_eq(cpb_segs_add(&s, 50, 0), 0); /* empty: ignored */
    cr_assert_eq(s.n, 2);
    cr_assert_eq(cpb_segs_total(&s), 22);
    cr_assert_eq(cpb_segs_pos(&s, 0), 100);
    cr_assert_eq(cpb_segs_pos(&s, 14), 114);
    cr_assert_eq(cpb_segs_pos(&s, 15), 0);
    cr_assert_eq(cpb_segs_pos(&s, 21), 6);
    cr_assert_eq(cpb_segs_pos(&s, 22), -1);
    /* a slice across the boundary */
    cr_assert_eq(cpb_segs_slice(&s, 12, 6, &t), 0);
    cr_assert_eq(t.n, 2);
    cr_assert(t.pos0[0] == 112 && t.len[0] == 3 && t.pos0[1] == 0 && t.len[1] == 3);
    for (int64_t r = 0; r < 6; r++) cr_assert_eq(cpb_segs_pos(&t, r), cpb_segs_pos(&s, 12 + r));
    /* inside one segment, and past the end */
    cr_assert_eq(cpb_segs_slice(&s, 16, 2, &t), 0);
    cr_assert(t.n == 1 && t.pos0[0] == 1 && t.len[0] == 2);
    cr_assert_eq(cpb_segs_slice(&s, 20, 5, &t), -1);
}

Test(view, segs_full)
{
    cpb_segs s;
    cpb_segs_clear(&s);
    for (int i = 0; i < CPB_MAX_SEGS; i++) cr_assert_eq(cpb_segs_add(&s, 2 * i, 1), 0);
    cr_assert_eq(cpb_segs_add(&s, 5000, 1), -1, "a full list refuses");
    cr_assert_eq(cpb_segs_add(&s, 2 * (CPB_MAX_SEGS - 1) + 1, 3), 0, "but still merges an adjacent one");
    cr_assert_eq(cpb_segs_total(&s), CPB_MAX_SEGS + 3);
}
