/* test_attn_route.c — which implementation serves an attention call (the pure front-end
 * function of cpb_attn_route.h), the workspace bound (cudnn-frontend's dense layout) and
 * its symmetry across a zigzag step's ranks, and the simulator's two curves: `--attn own`
 * and `--attn cudnn` predict different times, each from its own ceiling. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "cpb_attn_route.h"
#include "cpb_backend.h"
#include "cpb_method.h"
#include "cpb_presets.h"
#include "row.h"
#include "sim_layer.h"

/* buffers only for their dtype and size: the route reads nothing else */
static cpb_buf bq, bk, bv, bo, blse, bdo, bdq, bdk, bdv, bdelta;

static cpb_buf *buf(cpb_buf *b, cpb_dtype t)
{
    b->dtype = t;
    b->nelem = (int64_t)1 << 40;
    return b;
}

/* a bf16 call of sq queries on hq heads against sk keys on hk heads, [rows][heads][d] */
static cpb_attn_args call(int64_t sq, int64_t sk, int64_t hq, int64_t hk, int64_t d)
{
    cpb_attn_args a;
    memset(&a, 0, sizeof a);
    a.q = cpb_heads(buf(&bq, CPB_BF16), 0, sq, hq, d, hq * d, d);
    a.k = cpb_heads(buf(&bk, CPB_BF16), 0, sk, hk, d, hk * d, d);
    a.v = cpb_heads(buf(&bv, CPB_BF16), 0, sk, hk, d, hk * d, d);
    a.o = cpb_heads(buf(&bo, CPB_BF16), 0, sq, hq, d, hq * d, d);
    a.lse = cpb_lse_view(buf(&blse, CPB_FP32), sq, 0, hq, 0, sq);
    a.d_o = cpb_heads(buf(&bdo, CPB_BF16), 0, sq, hq, d, hq * d, d);
    a.dq = cpb_heads(buf(&bdq, CPB_BF16), 0, sq, hq, d, hq * d, d);
    a.dk = cpb_heads(buf(&bdk, CPB_BF16), 0, sk, hk, d, hk * d, d);
    a.dv = cpb_heads(buf(&bdv, CPB_BF16), 0, sk, hk, d, hk * d, d);
    a.causal = 1;
    return a;
}

static cpb_attn_route route(const cpb_attn_args *a, int bwd, cpb_attn_choice c, int present)
{
    cpb_attn_route r;
    cpb_attn_route_call(a, bwd, c, present, &r);
    return r;
}

Test(attn_route, cudnn_serves_the_calls_it_can_directly)
{
    /* d 64 and 128, GQA ratios 1, 4 and 8 (and an odd one, 3), q shorter and longer than kv */
    const int64_t dims[] = {64, 128, 40};
    const int64_t ratio[] = {1, 4, 8, 3};
    for (int i = 0; i < 3; i++)
        for (int g = 0; g < 4; g++)
            for (int bwd = 0; bwd < 2; bwd++) {
                cpb_attn_args a = call(bwd ? 96 : 200, bwd ? 200 : 96, 2 * ratio[g], 2, dims[i]);
                a.causal = g % 2;
                cpb_attn_route r = route(&a, bwd, CPB_ATTN_CHOOSE_AUTO, 1);
                cr_expect_eq(r.impl, CPB_ATTN_CUDNN, "d %lld ratio %lld bwd %d: %s", (long long)dims[i],
                             (long long)ratio[g], bwd, r.why);
                cr_expect_eq(r.adapt, CPB_ATTN_ADAPT_LSE, "served in place but for the lse temporary");
            }
}

Test(attn_route, own_for_what_cudnn_cannot_serve)
{
    cpb_attn_args a = call(128, 128, 8, 2, 128);
    cr_expect_eq(route(&a, 0, CPB_ATTN_CHOOSE_OWN, 1).impl, CPB_ATTN_OWN, "--attn own");
    /* general offsets of a causal mask (fpdt's i > j blocks are unmasked, not offset) */
    a.q_pos0 = 64;
    cpb_attn_route r = route(&a, 0, CPB_ATTN_CHOOSE_AUTO, 1);
    cr_expect_eq(r.impl, CPB_ATTN_OWN);
    cr_expect(strstr(r.why, "offsets"), "%s", r.why);
    /* ... but a causal call whose every query sees every key is unmasked */
    a.q_pos0 = 127;
    cr_expect_eq(route(&a, 0, CPB_ATTN_CHOOSE_AUTO, 1).impl, CPB_ATTN_CUDNN);
    a.q_pos0 = 0;
    /* head dims cuDNN does not take */
    cpb_attn_args b = call(128, 128, 8, 2, 36);
    r = route(&b, 0, CPB_ATTN_CHOOSE_AUTO, 1);
    cr_expect_eq(r.impl, CPB_ATTN_OWN);
    cr_expect(strstr(r.why, "head dim 36"), "%s", r.why);
    cpb_attn_args c = call(128, 128, 8, 2, 256);
    cr_expect_eq(route(&c, 0, CPB_ATTN_CHOOSE_AUTO, 1).impl, CPB_ATTN_OWN);
    /* fp32 inputs */
    a.q.buf = buf(&bq, CPB_FP32);
    r = route(&a, 0, CPB_ATTN_CHOOSE_AUTO, 1);
    cr_expect_eq(r.impl, CPB_ATTN_OWN);
    cr_expect(strstr(r.why, "q not bf16"), "%s", r.why);
    a.q.buf = buf(&bq, CPB_BF16);
    /* a backward without o: cuDNN derives delta from o */
    cpb_attn_args d = call(128, 128, 8, 2, 64);
    d.o = (cpb_view){0};
    d.delta = cpb_lse_view(buf(&bdelta, CPB_FP32), 128, 0, 8, 0, 128);
    r = route(&d, 1, CPB_ATTN_CHOOSE_AUTO, 1);
    cr_expect_eq(r.impl, CPB_ATTN_OWN);
    cr_expect(strstr(r.why, "no o"), "%s", r.why);
    /* a tensor past 32-bit indexing */
    cpb_attn_args e = call((int64_t)1 << 22, (int64_t)1 << 22, 8, 8, 128);
    r = route(&e, 0, CPB_ATTN_CHOOSE_AUTO, 1);
    cr_expect_eq(r.impl, CPB_ATTN_OWN);
    cr_expect(strstr(r.why, "2^31"), "%s", r.why);
    /* exactly 2^31 elements: the last index is 2^31 - 1, which 32 bits hold */
    cpb_attn_args edge = call((int64_t)1 << 22, (int64_t)1 << 22, 4, 1, 128);
    r = route(&edge, 0, CPB_ATTN_CHOOSE_AUTO, 1);
    cr_expect_eq(r.impl, CPB_ATTN_CUDNN, "2^31 elements: %s", r.why);
    /* an unaligned input view (odd row offset) */
    cpb_attn_args f = call(100, 100, 4, 4, 64);
    f.k.off = 4;
    cr_expect_eq(route(&f, 0, CPB_ATTN_CHOOSE_AUTO, 1).impl, CPB_ATTN_OWN);
}

Test(attn_route, adapted_calls_go_through_temporaries)
{
    /* ring and fpdt: every backward accumulates; ring's forward writes fp32 partials */
    cpb_attn_args a = call(64, 64, 8, 2, 128);
    a.accumulate = 1;
    cpb_attn_route r = route(&a, 1, CPB_ATTN_CHOOSE_AUTO, 1);
    cr_expect_eq(r.impl, CPB_ATTN_CUDNN);
    cr_expect_eq(r.adapt, CPB_ATTN_ADAPT_GRADS | CPB_ATTN_ADAPT_LSE);
    a.accumulate = 0;
    a.dq.buf = buf(&bdq, CPB_FP32);
    cr_expect_eq(route(&a, 1, CPB_ATTN_CHOOSE_AUTO, 1).adapt, CPB_ATTN_ADAPT_GRADS | CPB_ATTN_ADAPT_LSE,
                 "fp32 gradients");
    cpb_attn_args b = call(64, 64, 8, 2, 128);
    b.o.buf = buf(&bo, CPB_FP32);
    cr_expect_eq(route(&b, 0, CPB_ATTN_CHOOSE_AUTO, 1).adapt, CPB_ATTN_ADAPT_O | CPB_ATTN_ADAPT_LSE, "fp32 o");
}

/* a zigzag ring step: one rank's q is the whole local sequence (lse from token 0), another's
 * its second half (lse from token 63, not 16-byte aligned): both ranks must adapt alike, or
 * they would allocate differently (the symmetric-allocation rule) */
Test(attn_route, the_lse_temporary_does_not_depend_on_the_row_offset)
{
    cpb_attn_args whole = call(126, 63, 8, 2, 128), half = call(63, 126, 8, 2, 128);
    whole.lse = cpb_lse_view(&blse, 126, 0, 8, 0, 126);
    half.lse = cpb_lse_view(&blse, 126, 0, 8, 63, 63);
    for (int bwd = 0; bwd < 2; bwd++) {
        cpb_attn_route a = route(&whole, bwd, CPB_ATTN_CHOOSE_AUTO, 1), b = route(&half, bwd, CPB_ATTN_CHOOSE_AUTO, 1);
        cr_expect_eq(a.impl, b.impl);
        cr_expect_eq(a.adapt, b.adapt, "bwd %d: adapt %d vs %d", bwd, a.adapt, b.adapt);
        cr_expect(b.adapt & CPB_ATTN_ADAPT_LSE);
    }
}

Test(attn_route, availability)
{
    cpb_attn_args a = call(128, 128, 8, 2, 128);
    cpb_attn_route r = route(&a, 0, CPB_ATTN_CHOOSE_AUTO, 0);
    cr_expect_eq(r.impl, CPB_ATTN_OWN, "auto without cuDNN: ours");
    cr_expect_eq(r.unavailable, 0);
    r = route(&a, 0, CPB_ATTN_CHOOSE_CUDNN, 0);
    cr_expect_eq(r.unavailable, 1, "--attn cudnn without cuDNN: an error, never a silent fallback");
    cr_expect_eq(cpb_attn_choice_parse("cudnn"), CPB_ATTN_CHOOSE_CUDNN);
    cr_expect_eq(cpb_attn_choice_parse("flash"), -1);
}

Test(attn_route, workspace_bound_is_the_same_for_a_zigzag_steps_two_shapes)
{
    /* ring's later steps: (s, s/2) on some ranks, (s/2, s) on the others */
    cpb_attn_args a = call(1000, 500, 8, 2, 128), b = call(500, 1000, 8, 2, 128);
    for (int bwd = 0; bwd < 2; bwd++)
        cr_expect_eq(cpb_attn_cudnn_workspace_bytes(&a, bwd), cpb_attn_cudnn_workspace_bytes(&b, bwd));
    for (int t = 0; t <= CPB_ATTN_TMP_DV; t++)
        cr_expect_eq(cpb_attn_cudnn_temp_elems(&a, t), cpb_attn_cudnn_temp_elems(&b, t));
    /* ring's blocks start at token 0 or at the chunk length c (which one differs by rank):
     * both take the same temporaries, for an odd c too (a planted offset-only test fails) */
    for (int64_t c = 3904; c <= 3906; c++) {
        cpb_attn_args b0 = call(c, c, 8, 2, 128), b1 = call(c, c, 8, 2, 128);
        b0.lse = cpb_lse_view(&blse, 2 * c, 0, 8, 0, c);
        b1.lse = cpb_lse_view(&blse, 2 * c, 0, 8, c, c);
        b0.accumulate = b1.accumulate = 1;
        b0.causal = b1.causal = 0;
        cr_expect_eq(route(&b0, 1, CPB_ATTN_CHOOSE_AUTO, 1).adapt, route(&b1, 1, CPB_ATTN_CHOOSE_AUTO, 1).adapt, "c %lld",
                     (long long)c);
    }
    /* and it holds what our kernels' workspace holds (the cpu backend computes in it) */
    cr_expect_geq(cpb_attn_cudnn_workspace_bytes(&a, 1), 4 * cpb_attn_bwd_workspace_elems(&a));
}

/* the bound as cudnn-frontend 1.32 sizes the workspace of our dense graphs (attn_route.c
 * cites the lines): forward the engine's own (an assumed 1 MiB, the frontend adds nothing);
 * backward also the fp32 dQ accumulator [hq][L][d], the fp32 softmax sum [hq][L] and 8
 * bytes of sequence lengths.  Dense dK_fullhead and dV_fullhead are virtual: GQA adds
 * nothing, and no dP tile is ever declared (cuDNN >= 9.0, not deterministic, no dBias). */
Test(attn_route, workspace_bound_is_the_frontends_dense_layout)
{
    const int64_t engine = (int64_t)1 << 20;
    const int64_t L[] = {64, 1000, 16384, (int64_t)1 << 19};
    for (int i = 0; i < 4; i++)
        for (int64_t hk = 1; hk <= 8; hk *= 2) {
            cpb_attn_args a = call(L[i], L[i], 8, hk, 128);
            cr_expect_eq(cpb_attn_cudnn_workspace_bytes(&a, 0), engine, "forward, L %lld hk %lld", (long long)L[i],
                         (long long)hk);
            cr_expect_eq(cpb_attn_cudnn_workspace_bytes(&a, 1), 4 * 8 * L[i] * 128 + 4 * 8 * L[i] + 8 + engine,
                         "backward, L %lld hk %lld", (long long)L[i], (long long)hk);
        }
    /* q shorter than kv: sized on the longer (the zigzag symmetry above), d 64 */
    cpb_attn_args b = call(500, 1000, 4, 1, 64);
    cr_expect_eq(cpb_attn_cudnn_workspace_bytes(&b, 1), 4 * 4 * 1000 * 64 + 4 * 4 * 1000 + 8 + engine);
}

/* the bound above holds for the graphs attn_cudnn.cpp builds only while they set none of
 * the options that change the frontend's workspace layout: deterministic mode and dBias take
 * the dP-workspace path (a [hq][sq][sk] bf16 tile in the engine's workspace), ragged offsets
 * with max_total_seq_len make dK/dV per query head real, the padding mask and alibi add
 * their own.  Adding one means re-deriving cpb_attn_cudnn_workspace_bytes first. */
Test(attn_route, cudnn_graphs_keep_the_layout_the_bound_assumes)
{
    FILE *f = fopen(CPB_TEST_DATA "/../../backends/cuda/attn_cudnn.cpp", "r");
    cr_assert_not_null(f, "backends/cuda/attn_cudnn.cpp not found from the tests' data folder");
    static char src[1 << 20];
    size_t n = fread(src, 1, sizeof src - 1, f);
    fclose(f);
    src[n] = '\0';
    cr_assert_gt(n, 0);
    cr_expect_not_null(strstr(src, "sdpa_backward("), "attn_cudnn.cpp no longer builds an SDPA backward graph");
    const char *changes_layout[] = {"set_deterministic_algorithm", "set_dbias",        "set_bias",
                                    "set_ragged_offset",           "set_max_total_seq_len", "set_padding_mask",
                                    "set_alibi_mask",              "set_dropout"};
    for (size_t i = 0; i < sizeof changes_layout / sizeof *changes_layout; i++)
        cr_expect_null(strstr(src, changes_layout[i]),
                       "attn_cudnn.cpp calls %s: re-derive cpb_attn_cudnn_workspace_bytes (runtime/attn_route.c)",
                       changes_layout[i]);
}

Test(attn_route, usage_names_the_mix)
{
    cpb_attn_usage u;
    memset(&u, 0, sizeof u);
    cr_expect_str_eq(cpb_attn_usage_impl(&u), "");
    u.calls[0][CPB_ATTN_CUDNN] = 4;
    cr_expect_str_eq(cpb_attn_usage_impl(&u), "cudnn");
    u.calls[1][CPB_ATTN_OWN] = 4;
    strcpy(u.own_why[1], "no o");
    cr_expect_str_eq(cpb_attn_usage_impl(&u), "mixed");
    char d[256];
    cpb_attn_usage_describe(&u, d, sizeof d);
    cr_expect_str_eq(d, "fwd cudnn 4, bwd own 4 (no o)");
}

/* the simulator times each implementation with its own curve */
Test(attn_route, sim_own_and_cudnn_predict_different_times)
{
    const cpb_method *m = cpb_method_find("ulysses");
    cr_assert(m);
    double step[2];
    const char *choice[2] = {"cudnn", "own"};
    for (int i = 0; i < 2; i++) {
        cpb_problem p;
        memset(&p, 0, sizeof p);
        cr_assert_eq(cpb_preset_find("llama3-8b", &p), CPB_OK);
        p.C = 8;
        p.S = 256 * 1024;
        p.dtype = CPB_BF16;
        cpb_knobs_set_str(&p.knobs, "attn", choice[i]);
        cpb_sim_opts o = {0};
        static cpb_row r;
        cr_assert_eq(cpb_sim_layer(&p, m, &o, &r), CPB_OK);
        cr_assert_str_eq(r.status, "ok", "%s", r.reason);
        cr_expect_str_eq(r.attn_impl, choice[i]);
        step[i] = r.step_s;
    }
    /* attention dominates at 256K: our kernels' ceilings (13%/9% of peak on the H100
     * profile against cuDNN's 71%/61%) make the step several times longer */
    cr_expect_gt(step[1], 3.0 * step[0], "own %g s, cudnn %g s", step[1], step[0]);
}

/* bottom-right causal calls (q_pos0 - k_pos0 == sk - sq > 0: the last query sees every key,
 * one chunk against its whole prefix) go to cuDNN with its bottom-right mask when both
 * lengths are multiples of 64 (cudnn-frontend's rule before cuDNN 9.6, applied on every
 * version); other offsets, lengths off 64 and q longer than kv stay on our kernels */
Test(attn_route, bottom_right_causal_on_cudnn)
{
    const int64_t shapes[][2] = {{128, 384}, {64, 64 * 7}, {192, 256}, {256, 1024}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int bwd = 0; bwd < 2; bwd++) {
            const int64_t sq = shapes[i][0], sk = shapes[i][1];
            cpb_attn_args a = call(sq, sk, 8, 1 + (int64_t)(i % 2), 128);
            a.k_pos0 = 1000;
            a.q_pos0 = 1000 + sk - sq;
            cpb_attn_route r = route(&a, bwd, CPB_ATTN_CHOOSE_AUTO, 1);
            cr_expect_eq(r.impl, CPB_ATTN_CUDNN, "sq %lld sk %lld bwd %d: %s", (long long)sq, (long long)sk, bwd, r.why);
            cr_expect_eq(r.adapt, CPB_ATTN_ADAPT_LSE, "served in place but for the lse temporary");
            cr_expect_eq(cpb_attn_cudnn_mask(&a), CPB_ATTN_MASK_BOTTOM_RIGHT);
        }
    /* the masks the other served calls take */
    cpb_attn_args t = call(128, 384, 8, 2, 128);
    cr_expect_eq(cpb_attn_cudnn_mask(&t), CPB_ATTN_MASK_TOP_LEFT);
    t.q_pos0 = 383;
    cr_expect_eq(cpb_attn_cudnn_mask(&t), CPB_ATTN_MASK_NONE, "every query sees every key");
    t.causal = 0;
    t.q_pos0 = 0;
    cr_expect_eq(cpb_attn_cudnn_mask(&t), CPB_ATTN_MASK_NONE);
    /* one token off bottom-right: a general offset */
    cpb_attn_args o = call(128, 384, 8, 2, 128);
    o.q_pos0 = 255;
    cpb_attn_route r = route(&o, 0, CPB_ATTN_CHOOSE_AUTO, 1);
    cr_expect_eq(r.impl, CPB_ATTN_OWN);
    cr_expect(strstr(r.why, "offsets"), "%s", r.why);
    /* lengths off a multiple of 64 */
    cpb_attn_args l = call(100, 300, 8, 2, 128);
    l.q_pos0 = 200;
    r = route(&l, 1, CPB_ATTN_CHOOSE_AUTO, 1);
    cr_expect_eq(r.impl, CPB_ATTN_OWN);
    cr_expect(strstr(r.why, "bottom-right") && strstr(r.why, "64"), "%s", r.why);
    /* q longer than kv, aligned bottom-right: its first queries see no key (cuDNN refuses
     * s_q > s_kv with this mask) */
    cpb_attn_args g = call(384, 128, 8, 2, 128);
    g.k_pos0 = 256;
    r = route(&g, 0, CPB_ATTN_CHOOSE_AUTO, 1);
    cr_expect_eq(r.impl, CPB_ATTN_OWN);
    cr_expect(strstr(r.why, "offsets"), "%s", r.why);
}
