/* test_cpu_ops.c — the cpu backend's RoPE, lse merge, delta, copy, fill, axpby and
 * fill_random against direct double-precision computations, plus the attention pair
 * count of the front-end against brute force. */
#include <string.h>

#include "cpb_rand.h"
#include "internal.h"
#include "test_cpu_util.h"

/* ---------------------------------------------------------------- RoPE */

/* fp64 reference: pair i of each head rotated by pos * base^(-2i/d) */
static void ref_rope(double *x, const float *in, const cpb_segs *s, int64_t rows, int64_t heads, int64_t d, double base,
                     int inverse)
{
    for (int64_t r = 0; r < rows; r++) {
        double pos = (double)cpb_segs_pos(s, r);
        for (int64_t h = 0; h < heads; h++)
            for (int64_t i = 0; i < d / 2; i++) {
                double ang = (inverse ? -1 : 1) * pos * pow(base, -2.0 * (double)i / (double)d);
                const float *p = in + (r * heads + h) * d + 2 * i;
                double *q = x + (r * heads + h) * d + 2 * i;
                q[0] = p[0] * cos(ang) - p[1] * sin(ang);
                q[1] = p[0] * sin(ang) + p[1] * cos(ang);
            }
    }
}

Test(cpu_ops, rope_near_2_pow_23_and_inverse)
{
    cpb_ctx *ctx = t_ctx();
    int64_t rows = 608, heads = 3, d = 16;
    /* one head of padding per row: RoPE must work on strided head views */
    cpb_buf *b = t_buf(ctx, rows * (heads + 1) * d, CPB_FP32, "x");
    cpb_view full = cpb_heads(b, 0, rows, heads + 1, d, (heads + 1) * d, d);
    cpb_view v = cpb_view_heads(full, 1, heads);
    float *pad_before = t_fill_view(ctx, full, 3, 1.0f);
    float *x0 = t_get(ctx, v);
    cpb_segs s;
    cpb_segs_clear(&s);
    cr_assert_eq(cpb_segs_add(&s, 8388000, 300), 0);
    cr_assert_eq(cpb_segs_add(&s, 8388300, 308), 0); /* merges: 8388000 .. 8388607 */
    cr_assert_eq(s.n, 1);
    double *ref = t_dalloc(rows * heads * d);
    double base = 500000.0;
    cr_assert_eq(cpb_rope(ctx, 0, v, &s, base, 0), CPB_OK, "%s", cpb_errmsg(ctx));
    ref_rope(ref, x0, &s, rows, heads, d, base, 0);
    float *x1 = t_get(ctx, v);
    double e = t_maxabs(x1, ref, rows * heads * d);
    cr_log_info("rope at 8388000..8388607, base 5e5: max abs error %.3g vs fp64", e);
    cr_assert_lt(e, 1e-5);
    /* the rotation moved the vectors (a no-op would pass the inverse check below) */
    double moved = t_maxabs(x1, ref, 0);
    for (int64_t i = 0; i < rows * heads * d; i++) moved = fmax(moved, fabs(x1[i] - x0[i]));
    cr_assert_gt(moved, 0.1);
    cr_assert_eq(cpb_rope(ctx, 0, v, &s, base, 1), CPB_OK, "%s", cpb_errmsg(ctx));
    float *x2 = t_get(ctx, v);
    double back = 0;
    for (int64_t i = 0; i < rows * heads * d; i++) back = fmax(back, fabs(x2[i] - x0[i]));
    cr_log_info("rope inverse(rope(x)) - x: max abs %.3g", back);
    cr_assert_lt(back, 1e-6);
    /* the padding head was not touched */
    float *pad_after = t_get(ctx, full);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < d; c++)
            cr_assert(pad_after[r * (heads + 1) * d + c] == pad_before[r * (heads + 1) * d + c]);
    free(pad_before), free(pad_after), free(x0), free(x1), free(x2), free(ref);
    cpb_ctx_destroy(ctx);
}

Test(cpu_ops, rope_segments_bf16)
{
    /* zigzag-like positions: two separate segments; bf16 storage */
    cpb_ctx *ctx = t_ctx();
    int64_t rows = 40, heads = 2, d = 8;
    cpb_buf *b = t_buf(ctx, rows * heads * d, CPB_BF16, "x");
    cpb_view v = cpb_heads(b, 0, rows, heads, d, heads * d, d);
    float *x0 = t_fill_view(ctx, v, 4, 1.0f);
    cpb_segs s;
    cpb_segs_clear(&s);
    cpb_segs_add(&s, 3, 20);
    cpb_segs_add(&s, 1000003, 20);
    cr_assert_eq(s.n, 2);
    cr_assert_eq(cpb_rope(ctx, 0, v, &s, 10000.0, 0), CPB_OK, "%s", cpb_errmsg(ctx));
    double *ref = t_dalloc(rows * heads * d);
    ref_rope(ref, x0, &s, rows, heads, d, 10000.0, 0);
    float *x1 = t_get(ctx, v);
    double e = t_maxabs(x1, ref, rows * heads * d);
    cr_log_info("rope bf16 two segments: max abs error %.3g", e);
    cr_assert_lt(e, 8e-3);
    free(x0), free(x1), free(ref);
    cpb_ctx_destroy(ctx);
}

Test(cpu_ops, rope_refuses_odd_dim_and_wrong_positions)
{
    cpb_ctx *ctx = t_ctx();
    cpb_buf *b = t_buf(ctx, 30, CPB_FP32, "x");
    cpb_segs s;
    cpb_segs_clear(&s);
    cpb_segs_add(&s, 0, 6);
    cr_assert_eq(cpb_rope(ctx, 0, cpb_mat(b, 0, 6, 5, 5), &s, 10000.0, 0), CPB_ERR_INVALID);
    cpb_clear_error(ctx);
    cr_assert_eq(cpb_rope(ctx, 0, cpb_mat(b, 0, 5, 6, 6), &s, 10000.0, 0), CPB_ERR_INVALID);
    cr_assert(strstr(cpb_errmsg(ctx), "positions") != NULL, "%s", cpb_errmsg(ctx));
    cpb_ctx_destroy(ctx);
}

/* ---------------------------------------------------------------- lse merge */

Test(cpu_ops, lse_merge_far_apart_and_empty)
{
    cpb_ctx *ctx = t_ctx();
    /* per row (acc, part) lse pairs: hundreds apart both ways, beyond fp32 exp's range,
     * equal, and -inf on either or both sides */
    const float la[] = {0, 700, 300, 80, 1000, -INFINITY, 5, -INFINITY, -3};
    const float lp[] = {700, 0, 300.5f, 90, 1000, 5, -INFINITY, -INFINITY, -2.5f};
    int64_t rows = sizeof la / sizeof la[0], heads = 2, d = 5;
    cpb_buf *oa = t_buf(ctx, rows * heads * d, CPB_FP32, "o_acc"), *op = t_buf(ctx, rows * heads * d, CPB_FP32, "o_part");
    cpb_buf *lab = t_buf(ctx, heads * rows, CPB_FP32, "lse_acc"), *lpb = t_buf(ctx, heads * rows, CPB_FP32, "lse_part");
    cpb_view voa = cpb_heads(oa, 0, rows, heads, d, heads * d, d), vop = cpb_heads(op, 0, rows, heads, d, heads * d, d);
    cpb_view vla = cpb_lse_view(lab, rows, 0, heads, 0, rows), vlp = cpb_lse_view(lpb, rows, 0, heads, 0, rows);
    float *xa = t_fill_view(ctx, voa, 7, 1.0f), *xp = t_fill_view(ctx, vop, 8, 1.0f);
    /* rows with lse = -inf hold o = 0, as attention leaves them */
    for (int64_t r = 0; r < rows; r++)
        for (int64_t e = 0; e < heads * d; e++) {
            if (la[r] == -INFINITY) xa[r * heads * d + e] = 0;
            if (lp[r] == -INFINITY) xp[r * heads * d + e] = 0;
        }
    cr_assert_eq(cpb_upload(ctx, voa, xa), CPB_OK);
    cr_assert_eq(cpb_upload(ctx, vop, xp), CPB_OK);
    float hla[2 * 9], hlp[2 * 9]; /* [rows][heads] as upload sees an lse view */
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 0; h < heads; h++) hla[r * heads + h] = la[r] + (float)h, hlp[r * heads + h] = lp[r];
    cr_assert_eq(cpb_upload(ctx, vla, hla), CPB_OK);
    cr_assert_eq(cpb_upload(ctx, vlp, hlp), CPB_OK);
    cr_assert_eq(cpb_lse_merge(ctx, 0, voa, vla, vop, vlp), CPB_OK, "%s", cpb_errmsg(ctx));
    float *go = t_get(ctx, voa), *gl = t_get(ctx, vla);
    double eo = 0, el = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 0; h < heads; h++) {
            double a = hla[r * heads + h], p = hlp[r * heads + h];
            /* the combined softmax directly: weights of the two key sets are e^a and e^p */
            double L, wa, wp;
            if (a == -INFINITY && p == -INFINITY) {
                L = -INFINITY, wa = wp = 0;
            } else {
                double m = fmax(a, p);
                L = m + log(exp(a - m) + exp(p - m));
                wa = exp(a - L), wp = exp(p - L);
            }
            double got_l = gl[r * heads + h];
            if (L == -INFINITY) cr_assert(got_l == -INFINITY, "row %lld: both empty must stay -inf", (long long)r);
            else el = fmax(el, fabs(got_l - L));
            for (int64_t e = 0; e < d; e++) {
                int64_t i = (r * heads + h) * d + e;
                double want = wa * xa[i] + wp * xp[i];
                cr_assert(go[i] == go[i], "row %lld: NaN in the merged output", (long long)r);
                eo = fmax(eo, fabs(go[i] - want));
            }
        }
    cr_log_info("lse merge: max abs error o %.3g, lse %.3g", eo, el);
    cr_assert_lt(eo, 1e-6);
    cr_assert_lt(el, 1e-4); /* lse ~1000: fp32 spacing is 6e-5 */
    free(xa), free(xp), free(go), free(gl);
    cpb_ctx_destroy(ctx);
}

/* Attention over all keys == merge of attention over two key halves, with a large scale so
 * the lse values are in the hundreds. */
Test(cpu_ops, lse_merge_of_attention_halves)
{
    cpb_ctx *ctx = t_ctx();
    int64_t sq = 19, sk = 41, h = 2, d = 8, half = 17;
    cpb_buf *q = t_buf(ctx, sq * h * d, CPB_FP32, "q"), *k = t_buf(ctx, sk * h * d, CPB_FP32, "k");
    cpb_buf *v = t_buf(ctx, sk * h * d, CPB_FP32, "v");
    cpb_buf *o[3], *l[3];
    for (int i = 0; i < 3; i++) o[i] = t_buf(ctx, sq * h * d, CPB_FP32, "o"), l[i] = t_buf(ctx, h * sq, CPB_FP32, "lse");
    cpb_attn_args a = {0};
    a.q = cpb_heads(q, 0, sq, h, d, h * d, d);
    a.k = cpb_heads(k, 0, sk, h, d, h * d, d);
    a.v = cpb_heads(v, 0, sk, h, d, h * d, d);
    a.scale = 60.0f;
    a.causal = 1;
    a.q_pos0 = 30; /* rows 0..10 see only part of the second half */
    a.k_pos0 = 0;
    free(t_fill_view(ctx, a.q, 1, 1.0f)), free(t_fill_view(ctx, a.k, 2, 1.0f)), free(t_fill_view(ctx, a.v, 3, 1.0f));
    cpb_attn_args parts[3] = {a, a, a};
    for (int i = 0; i < 3; i++) {
        parts[i].o = cpb_heads(o[i], 0, sq, h, d, h * d, d);
        parts[i].lse = cpb_lse_view(l[i], sq, 0, h, 0, sq);
    }
    parts[1].k = cpb_view_rows(a.k, 0, half), parts[1].v = cpb_view_rows(a.v, 0, half);
    parts[2].k = cpb_view_rows(a.k, half, sk - half), parts[2].v = cpb_view_rows(a.v, half, sk - half);
    parts[2].k_pos0 = half;
    for (int i = 0; i < 3; i++) cr_assert_eq(cpb_attn_fwd(ctx, 0, &parts[i]), CPB_OK, "%s", cpb_errmsg(ctx));
    cr_assert_eq(cpb_lse_merge(ctx, 0, parts[1].o, parts[1].lse, parts[2].o, parts[2].lse), CPB_OK, "%s",
                 cpb_errmsg(ctx));
    float *fo = t_get(ctx, parts[0].o), *fl = t_get(ctx, parts[0].lse);
    float *mo = t_get(ctx, parts[1].o), *ml = t_get(ctx, parts[1].lse);
    double eo = 0, el = 0, lmax = 0;
    for (int64_t i = 0; i < sq * h * d; i++) eo = fmax(eo, fabs(fo[i] - mo[i]));
    for (int64_t i = 0; i < sq * h; i++) el = fmax(el, fabs(fl[i] - ml[i])), lmax = fmax(lmax, fabs(fl[i]));
    cr_log_info("attention over all keys vs merged halves: o %.3g, lse %.3g (lse up to %.0f)", eo, el, lmax);
    cr_assert_gt(lmax, 100.0, "the case was meant to have lse in the hundreds");
    cr_assert_lt(eo, 1e-6);
    cr_assert_lt(el, 1e-4);
    free(fo), free(fl), free(mo), free(ml);
    cpb_ctx_destroy(ctx);
}

/* ---------------------------------------------------------------- delta */

Test(cpu_ops, attn_delta_rowsum)
{
    cpb_ctx *ctx = t_ctx();
    int64_t rows = 11, heads = 3, d = 7;
    cpb_buf *o = t_buf(ctx, rows * heads * d, CPB_BF16, "o"), *g = t_buf(ctx, rows * heads * d, CPB_FP32, "dO");
    cpb_buf *dl = t_buf(ctx, (heads + 1) * (rows + 2), CPB_FP32, "delta");
    cpb_view vo = cpb_heads(o, 0, rows, heads, d, heads * d, d), vg = cpb_heads(g, 0, rows, heads, d, heads * d, d);
    cpb_view vd = cpb_lse_view(dl, rows + 2, 1, heads, 1, rows);
    float *xo = t_fill_view(ctx, vo, 1, 1.0f), *xg = t_fill_view(ctx, vg, 2, 1.0f);
    cr_assert_eq(cpb_attn_delta(ctx, 0, vo, vg, vd), CPB_OK, "%s", cpb_errmsg(ctx));
    float *got = t_get(ctx, vd);
    double e = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 0; h < heads; h++) {
            double s = 0;
            for (int64_t c = 0; c < d; c++) s += (double)xo[(r * heads + h) * d + c] * xg[(r * heads + h) * d + c];
            e = fmax(e, fabs(got[r * heads + h] - s));
        }
    cr_assert_lt(e, 1e-6);
    free(xo), free(xg), free(got);
    cpb_ctx_destroy(ctx);
}

/* ---------------------------------------------------------------- copy, fill, axpby */

Test(cpu_ops, copy_converts_dtypes_and_strides)
{
    cpb_ctx *ctx = t_ctx();
    int64_t rows = 5, heads = 3, d = 7;
    cpb_buf *s = t_buf(ctx, 4 + rows * 29, CPB_FP32, "src"), *t = t_buf(ctx, rows * 4 * 9, CPB_BF16, "dst");
    /* src: row stride 29, head stride 8; dst: heads 1..3 of a [rows][4][9] buffer, dim 7 of 9 */
    cpb_view vs = cpb_heads(s, 4, rows, heads, d, 29, 8);
    cpb_view vt = cpb_heads(t, 9, rows, heads, d, 36, 9);
    float *x = t_fill_view(ctx, vs, 5, 3.0f);
    cr_assert_eq(cpb_fill(ctx, 0, cpb_whole(t), 42.0f), CPB_OK);
    cr_assert_eq(cpb_copy(ctx, 0, vt, vs), CPB_OK, "%s", cpb_errmsg(ctx));
    float *y = t_get(ctx, vt);
    for (int64_t i = 0; i < rows * heads * d; i++)
        cr_assert(y[i] == cpb_round_bf16(x[i]), "element %lld: %g is not bf16(%g)", (long long)i, y[i], x[i]);
    float *all = t_get(ctx, cpb_whole(t));
    int64_t untouched = 0;
    for (int64_t i = 0; i < t->nelem; i++) untouched += all[i] == 42.0f;
    cr_assert_eq(untouched, t->nelem - rows * heads * d, "the copy wrote outside its view");
    /* and back, bf16 -> fp32 through a pinned host buffer: exact */
    cpb_buf *hb = NULL;
    cr_assert_eq(cpb_alloc_host(ctx, &hb, rows * heads * d, CPB_FP32, CPB_TAG_TEMP, "host"), CPB_OK);
    cpb_view vh = cpb_heads(hb, 0, rows, heads, d, heads * d, d);
    cr_assert_eq(cpb_copy(ctx, 0, vh, vt), CPB_OK, "%s", cpb_errmsg(ctx));
    cr_assert_eq(cpb_copy(ctx, 0, vs, vh), CPB_OK, "%s", cpb_errmsg(ctx));
    float *z = t_get(ctx, vs);
    for (int64_t i = 0; i < rows * heads * d; i++) cr_assert(z[i] == y[i]);
    cr_assert_gt(ctx->pcie_bytes, 0.0, "host<->device copies count as PCIe traffic");
    free(x), free(y), free(z), free(all);
    cpb_ctx_destroy(ctx);
}

Test(cpu_ops, fill_and_axpby)
{
    cpb_ctx *ctx = t_ctx();
    int64_t n = 23;
    cpb_buf *x = t_buf(ctx, n, CPB_FP32, "x"), *y = t_buf(ctx, n, CPB_BF16, "y");
    float *hx = t_fill_view(ctx, cpb_whole(x), 9, 2.0f), *hy = t_fill_view(ctx, cpb_whole(y), 10, 2.0f);
    cr_assert_eq(cpb_axpby(ctx, 0, 0.5f, cpb_whole(x), -2.0f, cpb_whole(y)), CPB_OK, "%s", cpb_errmsg(ctx));
    float *g = t_get(ctx, cpb_whole(y));
    for (int64_t i = 0; i < n; i++) cr_assert(g[i] == cpb_round_bf16(0.5f * hx[i] - 2.0f * hy[i]));
    /* beta = 0 overwrites even NaN */
    cr_assert_eq(cpb_fill(ctx, 0, cpb_whole(y), NAN), CPB_OK);
    cr_assert_eq(cpb_axpby(ctx, 0, 3.0f, cpb_whole(x), 0.0f, cpb_whole(y)), CPB_OK);
    free(g);
    g = t_get(ctx, cpb_whole(y));
    for (int64_t i = 0; i < n; i++) cr_assert(g[i] == cpb_round_bf16(3.0f * hx[i]));
    /* fill of a strided sub-view only */
    cr_assert_eq(cpb_fill(ctx, 0, cpb_whole(x), 1.0f), CPB_OK);
    cr_assert_eq(cpb_fill(ctx, 0, cpb_mat(x, 1, 4, 2, 5), -7.0f), CPB_OK);
    free(g);
    g = t_get(ctx, cpb_whole(x));
    for (int64_t i = 0; i < n; i++) {
        int in = i >= 1 && i < 1 + 4 * 5 && (i - 1) % 5 < 2;
        cr_assert(g[i] == (in ? -7.0f : 1.0f), "element %lld", (long long)i);
    }
    free(hx), free(hy), free(g);
    cpb_ctx_destroy(ctx);
}

Test(cpu_ops, fill_random_is_counter_based)
{
    cpb_ctx *ctx = t_ctx();
    int64_t rows = 50, cols = 40;
    cpb_buf *a = t_buf(ctx, rows * cols, CPB_FP32, "a"), *b = t_buf(ctx, rows * cols, CPB_BF16, "b");
    cr_assert_eq(cpb_fill_random(ctx, 0, cpb_mat(a, 0, rows, cols, cols), 1234, 1000, 0.5f), CPB_OK);
    /* the same values filled as two row shards with their own base index */
    cr_assert_eq(cpb_fill_random(ctx, 0, cpb_mat(b, 0, 20, cols, cols), 1234, 1000, 0.5f), CPB_OK);
    cr_assert_eq(cpb_fill_random(ctx, 0, cpb_mat(b, 20 * cols, 30, cols, cols), 1234, 1000 + 20 * cols, 0.5f), CPB_OK);
    float *ga = t_get(ctx, cpb_whole(a)), *gb = t_get(ctx, cpb_whole(b));
    double mean = 0, lo = 1, hi = -1;
    for (int64_t i = 0; i < rows * cols; i++) {
        float want = 0.5f * cpb_rand_u(1234, 1000 + i);
        cr_assert(ga[i] == want, "element %lld", (long long)i);
        cr_assert(gb[i] == cpb_round_bf16(want));
        mean += ga[i], lo = fmin(lo, ga[i]), hi = fmax(hi, ga[i]);
    }
    mean /= (double)(rows * cols);
    cr_assert(lo >= -0.5 && hi < 0.5 && lo < -0.49 && hi > 0.49, "range [%g, %g]", lo, hi);
    cr_assert(fabs(mean) < 0.02, "mean %g", mean);
    /* another seed gives other values */
    cr_assert(cpb_rand_u(1235, 1000) != cpb_rand_u(1234, 1000) || cpb_rand_u(1235, 1001) != cpb_rand_u(1234, 1001));
    free(ga), free(gb);
    cpb_ctx_destroy(ctx);
}

/* ---------------------------------------------------------------- bf16 and random numbers */

Test(cpu_ops, bf16_round_to_nearest_even)
{
    cr_assert_eq(cpb_f32_to_bf16(1.0f), 0x3f80);
    cr_assert_eq(cpb_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);      /* tie -> even (down) */
    cr_assert_eq(cpb_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);  /* tie -> even (up) */
    cr_assert_eq(cpb_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81); /* above the tie */
    cr_assert_eq(cpb_f32_to_bf16(-2.5f), 0xc020);
    cr_assert_eq(cpb_f32_to_bf16(INFINITY), 0x7f80);
    cr_assert_eq(cpb_f32_to_bf16(-INFINITY), 0xff80);
    cr_assert_eq(cpb_f32_to_bf16(3.4028235e38f), 0x7f80); /* max float rounds to inf */
    uint16_t n = cpb_f32_to_bf16(cpb_u32_as_f32(0x7f800001u)); /* NaN with low payload only */
    cr_assert(isnan(cpb_bf16_to_f32(n)), "NaN must stay NaN, got 0x%04x", n);
    cr_assert(isnan(cpb_bf16_to_f32(cpb_f32_to_bf16(-NAN))));
    cr_assert(cpb_bf16_to_f32(0x3f81) == 1.0078125f);
    cr_assert(cpb_round_bf16(1e-40f) == cpb_bf16_to_f32(cpb_f32_to_bf16(1e-40f))); /* subnormals pass */
}

Test(cpu_ops, rand_u_range_and_resolution)
{
    double lo = 1, hi = -1;
    for (int64_t i = 0; i < 100000; i++) {
        float u = cpb_rand_u(7, i);
        cr_assert(u >= -1.0f && u < 1.0f);
        double k = ((double)u + 1.0) * 8388608.0;
        cr_assert(k == floor(k), "u must be a multiple of 2^-23");
        lo = fmin(lo, u), hi = fmax(hi, u);
    }
    cr_assert(lo < -0.999 && hi > 0.999);
}

/* ---------------------------------------------------------------- attention pairs */

Test(cpu_ops, attn_pairs_matches_brute_force)
{
    const int64_t sizes[] = {0, 1, 2, 5, 17, 64};
    for (size_t a = 0; a < 6; a++)
        for (size_t b = 0; b < 6; b++)
            for (int64_t qp = 0; qp <= 90; qp += 7)
                for (int64_t kp = 0; kp <= 90; kp += 5)
                    for (int causal = 0; causal < 2; causal++) {
                        int64_t sq = sizes[a], sk = sizes[b], n = 0;
                        for (int64_t i = 0; i < sq; i++)
                            for (int64_t j = 0; j < sk; j++) n += !causal || kp + j <= qp + i;
                        int64_t got = cpb_attn_pairs(sq, sk, causal, qp, kp);
                        cr_assert_eq(got, n, "sq %lld sk %lld causal %d qp %lld kp %lld: %lld pairs, brute force %lld",
                                     (long long)sq, (long long)sk, causal, (long long)qp, (long long)kp,
                                     (long long)got, (long long)n);
                    }
}
