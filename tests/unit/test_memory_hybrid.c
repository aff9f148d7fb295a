/* test_memory_hybrid.c — the memory of the two-level methods, usp and hupipe (hybrid
 * UPipe), on the simulator.  The expected bytes are written out from the
 * schedules (methods/usp, methods/hupipe with methods/common/ring_attn.c) as formulas of
 * S, C, u, D, H, G, d and U, and the simulator's exact tracked bytes must equal them; then
 * the claim follows: at 16 ranks (8 x 2) hupipe's intermediate bytes for qwen3-32b are
 * below usp's by at least the share its stage size predicts.
 *
 * Notation: E bytes per stored element; u the Ulysses degree, R = C/u the ring degree;
 * c2 = S/R tokens per ring rank after the exchange (the Ulysses group's two zigzag
 * chunks); hq = H/u query heads and hk kv heads (G/u, or 1 replicated when G < u) per rank
 * in usp; m = U/u query heads and nk kv heads per rank per stage in hupipe.  Head tensors
 * over c2 tokens: Nq = c2*hq*d (= s*H*d, s = S/C), Nk = c2*hk*d, Nm = c2*m*d, Nkm = c2*nk*d.
 * K,V travel packed [K | V] (2 Nk elements).  dx accumulates in the layer's dx itself (the
 * storage dtype, one GEMM per projection and stage): no accumulator buffer.  hupipe's
 * one dx GEMM per stage reads the stage's strided columns of W gathered side by side
 * (Wg = E*D*U*d bytes, tracked) unless they are consecutive columns already.  The compute
 * stream's GEMM workspace (Gw) is live at the peak.  Intermediate bytes are the non-fixed
 * tags. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "test_problem.h"
#include "cpb_method.h"
#include "cpb_presets.h"
#include "sim_layer.h"
#include "common/head_stages.h"
#include "common/knobs.h"
#include "upipe/upipe.h"

static cpb_problem problem(int64_t S, int C, int u, int64_t D, int H, int G, int d, int U, cpb_dtype dt)
{
    cpb_problem p = cpb_test_problem(S, C, D, H, G, d, dt);
    cpb_knobs_set_int(&p.knobs, "ulysses_degree", u);
    cpb_knobs_set_int(&p.knobs, "head_chunk", U);
    return p;
}

typedef struct geo {
    int64_t E, u, R, s, c2, hq, hk, m, nk, g, U, nstage;
    int64_t Nq, Nk, Nm, Nkm, Wg, Gw;
} geo;

static geo geometry(const cpb_problem *p)
{
    geo g;
    g.E = p->dtype == CPB_BF16 ? 2 : 4;
    g.u = (int)cpb_knob_int(p, "ulysses_degree") ? (int)cpb_knob_int(p, "ulysses_degree") : (p->C < 8 ? p->C : 8);
    g.R = p->C / g.u;
    g.s = p->S / p->C;
    g.c2 = p->S / g.R;
    g.hq = p->H / g.u;
    g.hk = p->G >= g.u ? p->G / g.u : 1;
    g.U = (int)cpb_knob_int(p, "head_chunk") ? (int)cpb_knob_int(p, "head_chunk") : g.u;
    g.m = g.U / g.u;
    g.g = p->H / p->G;
    g.nk = (p->G >= g.u && g.m > g.g) ? g.m / g.g : 1;
    g.nstage = p->H / g.U;
    g.Nq = g.c2 * g.hq * p->d;
    g.Nk = g.c2 * g.hk * p->d;
    g.Nm = g.c2 * g.m * p->d;
    g.Nkm = g.c2 * g.nk * p->d;
    /* a stage's query heads on rank r: one every g heads (G >= u) or every hq (G < u),
     * consecutive only when the stage takes all of them (m = g, resp. m = hq) */
    int consecutive = g.u == 1 || (p->G >= g.u ? g.m == g.g : g.m == g.hq);
    g.Wg = consecutive ? 0 : g.E * p->D * g.U * p->d;
    g.Gw = cpb_gemm_workspace_bytes();
    return g;
}

/* ---------------------------------------------------------------- usp */

/* saved by forward: q, o [c2][hq][d], packed K,V, fp32 lse [hq][c2] */
static int64_t usp_saved(const cpb_problem *p)
{
    geo g = geometry(p);
    return g.E * (2 * g.Nq + 2 * g.Nk) + 4 * g.c2 * g.hq;
}

/* Backward peak, in the ring backward's diagonal step: saved + dO + fp32 dq and dK,dV +
 * the ring's delta [hq][c2] + the attention's fp32 dq workspace over all c2 rows (4 Nq) +
 * Gw; with R > 1 the ring also holds one more K,V buffer (the saved one rotates
 * too), the travelling fp32 dK,dV and one step's dK,dV in the storage dtype. */
static int64_t usp_bwd(const cpb_problem *p)
{
    geo g = geometry(p);
    int64_t ring = g.R > 1 ? g.E * 2 * g.Nk + 4 * 2 * g.Nk + g.E * 2 * g.Nk : 0;
    return usp_saved(p) + g.E * g.Nq + 4 * g.Nq + 4 * 2 * g.Nk + 4 * g.c2 * g.hq + 4 * g.Nq + ring + g.Gw;
}

/* ---------------------------------------------------------------- hupipe */

/* saved by forward: o [s][H*d] (= Nq elements) and the fp32 lse of every stage */
static int64_t hupipe_saved(const cpb_problem *p)
{
    geo g = geometry(p);
    return g.E * g.Nq + 4 * g.c2 * g.hq;
}

/* does some stage reuse the previous stage's kv heads (then dK,dV are summed in a second
 * fp32 buffer)?  G < u: one kv head for all stages; G >= u: when m < g */
static int kv_shared(const cpb_problem *p)
{
    geo g = geometry(p);
    return p->G < g.u ? g.nstage > 1 : g.m < g.g;
}

/* what a stage exchanges besides dO: with --upipe-bwd delta the fp32 delta sent and
 * received [c2][m]; by default o's receive buffer [c2][m][d] (the permuted o rides in the
 * exchange spare) and the ring's fp32 delta [c2][m], which it derives from o */
static int64_t hupipe_exchange(const cpb_problem *p)
{
    geo g = geometry(p);
    if (cpb_upipe_bwd_delta(p)) return 4 * 2 * g.c2 * g.m;
    return g.E * g.Nm + 4 * g.c2 * g.m;
}

/* Backward peak, in a stage's ring backward diagonal: saved + the stage buffers (q, the
 * exchange spare, dO [c2][m][d]; fp32 dq; fp32 delta sent and received [c2][m]; K,V of the
 * stage; fp32 dK,dV sum, and a second one when stages share kv heads; the gathered weight
 * columns Wg) + the attention's fp32 dq workspace (4 Nm: delta is given) + Gw; with R > 1 the
 * ring's K,V buffers (one more, two when R >= 3 and the stage's K,V are kept for the next
 * stage), its travelling fp32 dK,dV and one step's dK,dV in the storage dtype. */
static int64_t hupipe_bwd(const cpb_problem *p)
{
    geo g = geometry(p);
    int keep = kv_shared(p); /* some stage is not the last on its kv heads */
    int64_t kvx = g.R >= 3 && keep ? 2 : 1;
    int64_t ring = g.R > 1 ? g.E * 2 * g.Nkm * kvx + 4 * 2 * g.Nkm + g.E * 2 * g.Nkm : 0;
    int64_t common = hupipe_saved(p) + g.E * (3 * g.Nm + 2 * g.Nkm) + 4 * g.Nm + 4 * 2 * g.Nkm * (1 + keep) +
                     4 * g.Nm + ring + g.Wg + g.Gw;
    return common + hupipe_exchange(p);
}

/* ---------------------------------------------------------------- running */

static cpb_row sim(const cpb_problem *p, const char *method)
{
    const cpb_method *m = cpb_method_find(method);
    cr_assert_not_null(m, "method %s is not registered", method);
    cpb_row r;
    int rc = cpb_sim_layer(p, m, NULL, &r);
    cr_assert_eq(rc, CPB_OK, "cpb_sim_layer: %s", r.reason);
    cr_assert_eq(r.code, CPB_OK, "%s S=%lld C=%d: %s", method, (long long)p->S, p->C, r.reason);
    return r;
}

#define EXPECT_BYTES(got, want, what, p)                                                                        \
    cr_expect_eq((got), (want), "%s, S=%lld C=%d u=%d D=%lld H=%d G=%d d=%d %s U=%d: %lld bytes, formula %lld", \
                 (what), (long long)(p)->S, (p)->C, (int)cpb_knob_int((p), "ulysses_degree"), (long long)(p)->D, (p)->H, (p)->G,    \
                 (p)->d, cpb_dtype_name((p)->dtype), (int)cpb_knob_int((p), "head_chunk"), (long long)(got), (long long)(want))

static void check_both(const cpb_problem *p)
{
    cpb_row us = sim(p, "usp"), hu = sim(p, "hupipe");
    EXPECT_BYTES(us.intermediate_bytes, usp_bwd(p), "usp intermediate", p);
    EXPECT_BYTES(us.bwd.intermediate_peak, usp_bwd(p), "usp backward intermediate", p);
    EXPECT_BYTES(hu.intermediate_bytes, hupipe_bwd(p), "hupipe intermediate", p);
    cpb_problem pd = *p;
    cpb_knobs_set_str(&pd.knobs, "upipe_bwd", "delta");
    EXPECT_BYTES(sim(&pd, "hupipe").intermediate_bytes, hupipe_bwd(&pd), "hupipe --upipe-bwd delta intermediate", &pd);
    /* after forward only the saved tensors are left besides the fixed ones */
    EXPECT_BYTES(us.fwd.live_end - hu.fwd.live_end, usp_saved(p) - hupipe_saved(p),
                 "live after forward, usp - hupipe", p);
}

Test(memory_hybrid, bytes_match_the_formulas)
{
    /* G = u, G < u (replicated kv), G > u; R = 1, 2, 3, 4; fp32 and bf16; H*d != D; stages
     * sharing kv heads (m < g), one kv head per stage (m = g), several (m > g); 8 x 2 */
    cpb_problem cases[] = {
        problem(4096, 4, 2, 256, 8, 2, 32, 0, CPB_BF16),
        problem(3072, 6, 3, 80, 6, 1, 16, 0, CPB_FP32),
        problem(4608, 8, 2, 96, 8, 8, 16, 4, CPB_BF16),
        problem(6144, 6, 2, 64, 12, 4, 16, 2, CPB_BF16),
        problem(2048, 4, 4, 64, 8, 4, 16, 8, CPB_FP32),
        problem(2048, 4, 1, 64, 8, 2, 16, 2, CPB_BF16),
        problem(8192, 16, 8, 128, 16, 8, 16, 0, CPB_BF16),
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_both(&cases[i]);
}

/* The claim, at the paper's 16-GPU setting: qwen3-32b (D 5120, H 64, G 8, d 128),
 * 8 x 2, S = 256K, bf16, U = u = 8 (m = 1 head per rank per stage).
 *
 * Predicted share.  Of usp's intermediate peak, the bytes proportional to the query heads
 * a rank attends (hq = H/u) are its per-head working set
 *     Wq(hq) = E*(q + o + dO) + 4*(fp32 dq + attention dq workspace) + 4*(lse + delta)
 *            = (3E + 8) * c2*hq*d + 8 * c2*hq,
 * and hupipe holds that working set for m = U/u heads only: the share it saves is
 * (1 - m/hq) = (1 - U/H) of Wq(hq).  Against that, hupipe keeps what it saves for
 * backward at full size: o in sequence layout (E * s*H*d = E * Nq) and the lse of every
 * head (4 * c2*hq); when its stages share kv heads, a second fp32 dK,dV sum (8 * Nkm);
 * and the stage's weight columns gathered for its dx GEMM (Wg).  The K,V side is otherwise
 * the same in both here (nk = hk = 1).  So
 *     usp - hupipe >= (1 - U/H) * Wq(hq) - E*Nq - 4*c2*hq - 8*Nkm - Wg
 * and the gap is a large part of usp's intermediate bytes. */
Test(memory_hybrid, hupipe_below_usp_by_its_stage_share_qwen3_32b_8x2)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("qwen3-32b", &p), CPB_OK);
    p.S = 256 * 1024;
    p.C = 16;
    cpb_knobs_set_int(&p.knobs, "ulysses_degree", 8);
    p.dtype = CPB_BF16;
    cpb_knobs_set_str(&p.knobs, "attn", "own"); /* the closed forms count our kernels' workspace */
    cr_assert_eq(p.D, 5120);
    cr_assert_eq(p.H, 64);
    cr_assert_eq(p.G, 8);
    cr_assert_eq(p.d, 128);
    int64_t us = sim(&p, "usp").intermediate_bytes;
    int64_t hu = sim(&p, "hupipe").intermediate_bytes;
    EXPECT_BYTES(us, usp_bwd(&p), "usp intermediate", &p);
    EXPECT_BYTES(hu, hupipe_bwd(&p), "hupipe intermediate", &p);

    geo g = geometry(&p);
    int64_t Wq = (3 * g.E + 8) * g.Nq + 8 * g.c2 * g.hq;
    double share = 1.0 - (double)g.U / p.H;
    double predicted =
        share * (double)Wq - (double)(g.E * g.Nq + 4 * g.c2 * g.hq + 8 * g.Nkm + g.Wg) -
        (double)(hupipe_exchange(&p) - 4 * 2 * g.c2 * g.m); /* o's exchange beyond delta's */
    cr_expect_gt(predicted, 0.0);
    cr_expect_geq((double)(us - hu), predicted, "usp %lld - hupipe %lld = %lld bytes, predicted at least %.0f",
                  (long long)us, (long long)hu, (long long)(us - hu), predicted);
    /* and the saving is no small matter: more than a third of usp's intermediate bytes */
    cr_expect_lt(3 * hu, 2 * us, "hupipe %lld vs usp %lld intermediate bytes", (long long)hu, (long long)us);
}

/* hupipe's bytes shrink with the stage size U (at the same grid); U = H holds every head
 * at once, like usp's working set */
Test(memory_hybrid, hupipe_grows_with_U)
{
    cpb_problem p = problem(64 * 1024, 16, 8, 1024, 32, 8, 64, 0, CPB_BF16);
    int64_t prev = 0;
    for (int U = 8; U <= p.H; U *= 2) {
        cpb_knobs_set_int(&p.knobs, "head_chunk", U);
        int64_t got = sim(&p, "hupipe").intermediate_bytes;
        EXPECT_BYTES(got, hupipe_bwd(&p), "hupipe intermediate", &p);
        if (prev) cr_expect_gt(got, prev, "U=%d: %lld bytes, not more than at U=%d", U, (long long)got, U / 2);
        prev = got;
    }
}

/* ---------------------------------------------------------------- the grid's token layout */

/* Every token is held exactly once, and a Ulysses group's tokens, put in ring order
 * (row h*c + j*w + t <- member j's local row h*w + t, as cpb_grid_to_ring permutes them),
 * are zigzag chunks rr and 2R-1-rr of ring rank rr in increasing position. */
static void check_layout(int64_t S, int C, int u)
{
    cpb_problem p = problem(S, C, u, 64, 8, 8, 8, 0, CPB_FP32);
    const cpb_method *m = cpb_method_find("usp");
    cr_assert_not_null(m);
    int R = C / u;
    int64_t c = S / (2 * R), w = c / u;
    static int seen[1 << 16];
    cr_assert_leq(S, (int64_t)(1 << 16));
    memset(seen, 0, sizeof(int) * (size_t)S);
    for (int rr = 0; rr < R; rr++) {
        for (int j = 0; j < u; j++) {
            cpb_segs sg;
            cr_assert_eq(m->token_layout(&p, rr * u + j, &sg), CPB_OK);
            cr_assert_eq(cpb_segs_total(&sg), 2 * w);
            for (int h = 0; h < 2; h++)
                for (int64_t t = 0; t < w; t++) {
                    int64_t pos = cpb_segs_pos(&sg, h * w + t);
                    int64_t chunk = h ? 2 * R - 1 - rr : rr;
                    cr_expect_eq(pos, chunk * c + j * w + t, "S=%lld C=%d u=%d rank %d row %lld", (long long)S, C, u,
                                 rr * u + j, (long long)(h * w + t));
                    if (pos >= 0 && pos < S) seen[pos]++;
                }
        }
    }
    for (int64_t i = 0; i < S; i++) cr_expect_eq(seen[i], 1, "S=%lld C=%d u=%d: token %lld held %d times",
                                                 (long long)S, C, u, (long long)i, seen[i]);
}

Test(grid_layout, zigzag_chunks_sliced_over_the_ulysses_group)
{
    check_layout(96, 4, 2);
    check_layout(72, 6, 3);
    check_layout(48, 6, 2);
    check_layout(64, 8, 4);
    check_layout(64, 8, 2);
    check_layout(32, 2, 1);
    check_layout(32, 2, 2);
    check_layout(256, 16, 8);
    check_layout(480, 24, 8);
}

/* ---------------------------------------------------------------- hupipe's stage schedule */

/* common/head_stages.c is upipe's schedule over a group: at C = the group size it must be
 * upipe's own (methods/upipe/upipe_plan.c), stage by stage */
static void check_same_schedule(int C, int H, int G, int U)
{
    cpb_layer L;
    memset(&L, 0, sizeof L);
    L.p = problem(64 * C, C, 0, 32, H, G, 8, U, CPB_BF16);
    L.s = 64;
    char why[256];
    cr_assert_eq(upipe_check(&L.p, why, sizeof why), CPB_OK, "C=%d H=%d G=%d U=%d: %s", C, H, G, U, why);
    cr_assert_eq(cpb_stages_check("t", C, H, G, U, why, sizeof why), CPB_OK, "%s", why);
    upipe_plan pl;
    cpb_stages st;
    cr_assert_eq(upipe_plan_of(&L, &pl), CPB_OK);
    cr_assert_eq(cpb_stages_of(C, H, G, U, &st), CPB_OK);
    cr_assert_eq(st.nstage, pl.nstage);
    cr_assert_eq(st.m, pl.m);
    cr_assert_eq(st.nk, pl.nk);
    for (int t = 0; t < st.nstage; t++) {
        cpb_a2a_map q0, kv0, q1, kv1;
        upipe_stage_maps(&pl, t, &q0, &kv0);
        cpb_stages_maps(&st, t, &q1, &kv1);
        cr_expect(memcmp(q0.head, q1.head, sizeof(int) * (size_t)(C * st.m)) == 0, "C=%d H=%d G=%d U=%d stage %d q", C,
                  H, G, U, t);
        cr_expect(memcmp(kv0.head, kv1.head, sizeof(int) * (size_t)(C * st.nk)) == 0, "C=%d H=%d G=%d U=%d stage %d kv",
                  C, H, G, U, t);
        cr_expect_eq(cpb_stages_kv_changes(&st, t), upipe_kv_changes(&pl, t), "stage %d", t);
    }
}

Test(hupipe_schedule, is_upipes_over_the_group)
{
    check_same_schedule(4, 16, 4, 4);
    check_same_schedule(4, 16, 8, 8);
    check_same_schedule(2, 12, 6, 12);
    check_same_schedule(8, 16, 2, 8);
    check_same_schedule(3, 18, 3, 9);
    check_same_schedule(8, 64, 8, 8);
    check_same_schedule(1, 8, 2, 2);
}
