/* test_memory_ulysses_family.c — the memory behaviour of ulysses, upipe and offload on
 * the simulator.  The expected bytes are written out from the schedules
 * (methods/ulysses, methods/upipe, methods/offload) as formulas of S, C, D, H, G, d and
 * the method option, and the simulator's exact tracked bytes must equal them; then the
 * claims follow: upipe's intermediate bytes are below ulysses' when U < H and shrink with
 * U; offload's live bytes after forward and its backward's intermediate bytes are below
 * ulysses' by the amounts the formulas give.
 *
 * Notation: E bytes per stored element, hc = H/C query heads and hk kv heads per rank
 * after the exchange (G/C, or 1 replicated kv head when G < C), s = S/C.  A head tensor
 * of n heads over all S tokens has S*n*d elements; Nq = S*hc*d (= s*H*d), Nk = S*hk*d.
 * Intermediate bytes are the non-fixed tags (everything but inputs, weights, outputs and
 * gradients).  dx accumulates in the layer's dx itself, in the storage dtype, one GEMM per
 * projection (and stage or group), as the references do: no accumulator buffer.  Strided
 * heads are addressed in place by batched GEMMs, except for the one dx GEMM of a stage or
 * group, which reads its strided weight columns gathered side by side (a tracked buffer,
 * Gw bytes below).  Every method also holds the compute stream's GEMM workspace
 * (Wg = cpb_gemm_workspace_bytes(), allocated at the first GEMM and kept), an
 * intermediate of every phase. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "test_problem.h"
#include "cpb_method.h"
#include "sim_layer.h"
#include "upipe/upipe.h"

static cpb_problem problem(int64_t S, int C, int64_t D, int H, int G, int d, cpb_dtype dt)
{
    return cpb_test_problem(S, C, D, H, G, d, dt);
}

typedef struct geo {
    int64_t E, s, hc, hk, Nq, Nk, Wg;
} geo;

static geo geometry(const cpb_problem *p)
{
    geo g;
    g.E = p->dtype == CPB_BF16 ? 2 : 4;
    g.s = p->S / p->C;
    g.hc = p->H / p->C;
    g.hk = p->G >= p->C ? p->G / p->C : 1;
    g.Nq = p->S * g.hc * p->d;
    g.Nk = p->S * g.hk * p->d;
    g.Wg = cpb_gemm_workspace_bytes();
    return g;
}

/* ---------------------------------------------------------------- ulysses */

/* head-sharded q, k, v, o and the fp32 lse [hc][S] */
static int64_t uly_saved(const cpb_problem *p)
{
    geo g = geometry(p);
    return g.E * (2 * g.Nq + 2 * g.Nk) + 4 * g.hc * p->S;
}

/* forward peak: the saved tensors plus o's receive buffer and o in sequence layout */
static int64_t uly_fwd(const cpb_problem *p)
{
    geo g = geometry(p);
    return uly_saved(p) + 2 * g.E * g.Nq + g.Wg;
}

/* backward peak, in the attention backward: saved + dO, dq, dk, dv (head layout) + the
 * op's fp32 workspace (dq accumulator and delta rows) */
static int64_t uly_bwd(const cpb_problem *p)
{
    geo g = geometry(p);
    return uly_saved(p) + g.E * (2 * g.Nq + 2 * g.Nk) + 4 * (g.Nq + g.hc * p->S) + g.Wg;
}

/* ---------------------------------------------------------------- upipe */

typedef struct ugeo {
    int64_t m, nk, Nm, Nkm, Gw;
} ugeo;

static ugeo ugeometry(const cpb_problem *p)
{
    ugeo u;
    int U = (int)cpb_knob_int(p, "head_chunk") ? (int)cpb_knob_int(p, "head_chunk") : p->C, g = p->H / p->G,
        hc = p->H / p->C;
    u.m = U / p->C;
    u.nk = (p->G >= p->C && u.m > g) ? u.m / g : 1; /* kv heads per rank per stage */
    u.Nm = p->S * u.m * p->d;
    u.Nkm = p->S * u.nk * p->d;
    /* a stage's query heads on rank r are one every g heads (G >= C) or every hc heads
     * (G < C), consecutive columns of Wq only when the stage takes all of them (m = g,
     * resp. m = hc); otherwise the dx GEMM reads them gathered: D x U*d */
    int consecutive = p->C == 1 || (p->G >= p->C ? u.m == g : u.m == hc);
    u.Gw = consecutive ? 0 : geometry(p).E * p->D * U * p->d;
    return u;
}

/* o before Wo in sequence layout [s][H*d] and the fp32 lse of every stage */
static int64_t upipe_saved(const cpb_problem *p)
{
    geo g = geometry(p);
    return g.E * g.Nq + 4 * g.hc * p->S;
}

/* forward: one stage's q and o heads [S][m][d], k and v heads [S][nk][d] (the sends ride
 * in buffers that are dead at that moment) */
static int64_t upipe_fwd(const cpb_problem *p)
{
    geo g = geometry(p);
    ugeo u = ugeometry(p);
    return upipe_saved(p) + g.E * (2 * u.Nm + 2 * u.Nkm) + g.Wg;
}

/* backward: q, dO, dq heads; k, v, dk, dv heads; the stage's o received [S][m][d] and the
 * attention backward's fp32 workspace (dq accumulator and the delta rows it derives from
 * o); or, with --upipe-bwd delta, fp32 delta sent and received [S][m] and a workspace
 * without delta rows (delta is given); the gathered weight columns */
static int64_t upipe_bwd(const cpb_problem *p)
{
    geo g = geometry(p);
    ugeo u = ugeometry(p);
    int64_t common = upipe_saved(p) + g.E * (3 * u.Nm + 4 * u.Nkm) + 4 * u.Nm + u.Gw + g.Wg;
    if (strcmp(cpb_knob_str(p, "upipe_bwd"), "delta") == 0) return common + 4 * 2 * p->S * u.m;
    return common + g.E * u.Nm + 4 * p->S * u.m;
}

/* ---------------------------------------------------------------- offload */

static int offload_group(const cpb_problem *p)
{
    return (int)cpb_knob_int(p, "offload_group") ? (int)cpb_knob_int(p, "offload_group") : geometry(p).hc / 2; /* tests use even hc */
}

/* the most kv heads a group's query heads use */
static int64_t offload_nk(const cpb_problem *p)
{
    geo g = geometry(p);
    int og = offload_group(p), gq = p->H / p->G;
    if (p->G < p->C) return 1;
    int64_t nk = 0;
    for (int b = 0; b < g.hc / og; b++) {
        int64_t n = (b * og + og - 1) / gq - (b * og) / gq + 1;
        if (n > nk) nk = n;
    }
    return nk;
}

/* backward: two slots of q, o [S][og][d], k, v [S][nk][d], lse [og][S] (fp32); dO, dq,
 * dk, dv of one group; the attention backward's workspace (fp32 dq and delta rows); the
 * group's weight columns gathered for its dx GEMM (rank j's query heads j*hc + b*og + i
 * are consecutive columns only when one group holds all hc of them) */
static int64_t offload_bwd(const cpb_problem *p)
{
    geo g = geometry(p);
    int64_t og = offload_group(p), nk = offload_nk(p);
    int64_t Ng = p->S * og * p->d, Nkg = p->S * nk * p->d;
    int64_t slot = g.E * (2 * Ng + 2 * Nkg) + 4 * og * p->S;
    int64_t gw = p->C > 1 && og < g.hc ? g.E * p->D * p->C * og * p->d : 0;
    return 2 * slot + g.E * (2 * Ng + 2 * Nkg) + 4 * (Ng + og * p->S) + gw + g.Wg;
}

/* pinned host: x and the saved tensors of ulysses */
static int64_t offload_host(const cpb_problem *p)
{
    geo g = geometry(p);
    return g.E * g.s * p->D + uly_saved(p);
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

/* the fixed bytes (inputs, weights, outputs, gradients) live after forward */
static int64_t fixed_live_after_fwd(const cpb_row *r, int64_t intermediate_live)
{
    return r->fwd.live_end - intermediate_live;
}

#define EXPECT_BYTES(got, want, what, p)                                                             \
    cr_expect_eq((got), (want), "%s, S=%lld C=%d D=%lld H=%d G=%d d=%d %s U=%d og=%d: %lld bytes, formula %lld", \
                 (what), (long long)(p)->S, (p)->C, (long long)(p)->D, (p)->H, (p)->G, (p)->d,                 \
                 cpb_dtype_name((p)->dtype), (int)cpb_knob_int((p), "head_chunk"), (int)cpb_knob_int((p), "offload_group"), (long long)(got),          \
                 (long long)(want))

static void check_all(cpb_problem p)
{
    cpb_row u = sim(&p, "ulysses");
    EXPECT_BYTES(u.fwd.intermediate_peak, uly_fwd(&p), "ulysses forward intermediate", &p);
    EXPECT_BYTES(u.bwd.intermediate_peak, uly_bwd(&p), "ulysses backward intermediate", &p);
    EXPECT_BYTES(u.intermediate_bytes, uly_bwd(&p), "ulysses intermediate", &p);
    /* fixed bytes and the GEMM workspace */
    int64_t fixed = fixed_live_after_fwd(&u, uly_saved(&p));

    cpb_row up = sim(&p, "upipe");
    EXPECT_BYTES(up.fwd.intermediate_peak, upipe_fwd(&p), "upipe forward intermediate", &p);
    EXPECT_BYTES(up.bwd.intermediate_peak, upipe_bwd(&p), "upipe backward intermediate", &p);
    EXPECT_BYTES(up.fwd.live_end, fixed + upipe_saved(&p), "upipe live after forward", &p);
    cpb_problem pd = p;
    cpb_knobs_set_str(&pd.knobs, "upipe_bwd", "delta");
    cpb_row ud = sim(&pd, "upipe");
    EXPECT_BYTES(ud.bwd.intermediate_peak, upipe_bwd(&pd), "upipe --upipe-bwd delta backward intermediate", &pd);
    cr_expect_leq(ud.bwd.intermediate_peak, up.bwd.intermediate_peak, "delta, not o, travels: no more memory");

    cpb_row o = sim(&p, "offload");
    /* the forward's working set is ulysses' attention-time set: q, k, v, o, lse */
    EXPECT_BYTES(o.fwd.intermediate_peak, uly_saved(&p) + geometry(&p).Wg, "offload forward intermediate", &p);
    EXPECT_BYTES(o.fwd.live_end, fixed, "offload live after forward", &p);
    EXPECT_BYTES(o.bwd.intermediate_peak, offload_bwd(&p), "offload backward intermediate", &p);
    EXPECT_BYTES(o.host_peak_bytes, offload_host(&p), "offload pinned host", &p);
    EXPECT_BYTES(u.host_peak_bytes, (int64_t)0, "ulysses pinned host", &p);
}

Test(memory_ulysses_family, bytes_match_the_formulas)
{
    /* G < C (replicated kv), G = C, G > C; bf16 and fp32; H*d != D; S not a power of 2;
     * upipe with one stage per kv head and with several kv heads per stage; offload groups
     * that split a kv head's query heads */
    cpb_problem cases[] = {
        problem(4096, 4, 256, 8, 2, 32, CPB_BF16),
        problem(3000, 3, 80, 6, 3, 16, CPB_FP32),
        problem(4000, 5, 96, 20, 10, 8, CPB_BF16),
        problem(2048, 2, 64, 12, 4, 16, CPB_BF16),
        problem(1536, 8, 48, 16, 16, 8, CPB_FP32),
    };
    int U[] = {0, 6, 10, 12, 16};
    int og[] = {0, 1, 2, 2, 1};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cpb_knobs_set_int(&cases[i].knobs, "head_chunk", U[i]);
        cpb_knobs_set_int(&cases[i].knobs, "offload_group", og[i]);
        check_all(cases[i]);
    }
}

/* the scale: formulas dominate, and the simulator makes it free */
static cpb_problem big(void)
{
    return problem(64 * 1024, 4, 1024, 16, 4, 64, CPB_BF16);
}

Test(memory_ulysses_family, upipe_below_ulysses_and_shrinking_with_U)
{
    cpb_problem p = big();
    cr_assert_geq(p.H, 2 * p.C);
    int64_t uly = sim(&p, "ulysses").intermediate_bytes;
    EXPECT_BYTES(uly, uly_bwd(&p), "ulysses intermediate", &p);
    int64_t prev = 0;
    for (int U = p.C; U <= p.H; U *= 2) { /* U = 4, 8, 16 = H */
        cpb_knobs_set_int(&p.knobs, "head_chunk", U);
        int64_t got = sim(&p, "upipe").intermediate_bytes;
        EXPECT_BYTES(got, upipe_bwd(&p), "upipe intermediate", &p);
        if (U < p.H)
            cr_expect_lt(got, uly, "U=%d: upipe %lld intermediate bytes, ulysses %lld", U, (long long)got,
                         (long long)uly);
        if (prev)
            cr_expect_gt(got, prev, "U=%d: %lld intermediate bytes, not more than at U=%d (%lld)", U,
                         (long long)got, U / 2, (long long)prev);
        prev = got;
    }
    /* U = C: one head per rank per stage.  Ulysses' backward holds its saved q, k, v, o,
     * their gradients and a full fp32 dq workspace; upipe one stage's worth of each plus
     * the saved o.  The gap is the difference of the formulas, far above zero. */
    cpb_knobs_set_int(&p.knobs, "head_chunk", p.C);
    int64_t gap = uly_bwd(&p) - upipe_bwd(&p);
    cr_expect_gt(gap, uly / 4, "the U=C saving %lld is under a quarter of ulysses' %lld", (long long)gap,
                 (long long)uly);
}

Test(memory_ulysses_family, offload_below_ulysses_by_the_saved_tensors)
{
    cpb_problem p = big();
    cpb_row u = sim(&p, "ulysses");
    for (int og = 1; og <= geometry(&p).hc / 2; og *= 2) { /* og = 1 and the default, hc/2 */
        cpb_knobs_set_int(&p.knobs, "offload_group", og);
        cpb_row o = sim(&p, "offload");
        /* after forward: ulysses keeps q, k, v, o, lse on the device, offload none */
        EXPECT_BYTES(u.fwd.live_end - o.fwd.live_end, uly_saved(&p), "live after forward, ulysses - offload",
                     &p);
        /* backward: two head groups instead of all heads */
        int64_t want = uly_bwd(&p) - offload_bwd(&p);
        EXPECT_BYTES(u.bwd.intermediate_peak - o.bwd.intermediate_peak, want,
                     "backward intermediate, ulysses - offload", &p);
        cr_expect_gt(want, 0, "og=%d: offload's backward is not below ulysses'", og);
        /* and the forward's transient peak is no higher than ulysses' */
        cr_expect_leq(o.fwd_peak_bytes, u.fwd_peak_bytes);
        EXPECT_BYTES(o.host_peak_bytes, offload_host(&p), "offload pinned host", &p);
    }
}

/* ---------------------------------------------------------------- upipe's head schedule */

/* DESIGN section 4: with U = C and G >= C, stage t of rank r holds kv head (t/g)*C + r and
 * query head kv*g + (t mod g); with G < C rank r holds kv head r/rep and query heads
 * kv*g + (r mod rep)*H/C + t*m + k.  Every query head is worked on exactly once, and a
 * stage's query heads use the stage's kv heads. */
static void check_schedule(int C, int H, int G, int U)
{
    cpb_layer L;
    memset(&L, 0, sizeof L);
    L.p = problem(64 * C, C, 32, H, G, 8, CPB_BF16);
    cpb_knobs_set_int(&L.p.knobs, "head_chunk", U);
    L.s = 64;
    char why[256];
    cr_assert_eq(upipe_check(&L.p, why, sizeof why), CPB_OK, "C=%d H=%d G=%d U=%d: %s", C, H, G, U, why);
    upipe_plan pl;
    cr_assert_eq(upipe_plan_of(&L, &pl), CPB_OK);
    int seen[CPB_MAX_HEADS] = {0}, g = H / G, rep = G < C ? C / G : 1;
    for (int t = 0; t < pl.nstage; t++) {
        cpb_a2a_map q, kv;
        upipe_stage_maps(&pl, t, &q, &kv);
        for (int r = 0; r < C; r++) {
            for (int k = 0; k < pl.m; k++) {
                int h = q.head[r * pl.m + k];
                seen[h]++;
                /* the query head's kv head is one of the stage's kv heads of rank r */
                int found = 0;
                for (int j = 0; j < pl.nk; j++) found |= kv.head[r * pl.nk + j] == h / g;
                cr_expect(found, "C=%d H=%d G=%d U=%d stage %d rank %d: head %d's kv head %d is not loaded", C, H,
                          G, U, t, r, h, h / g);
                if (G >= C && pl.m == 1) {
                    int kvh = (t / g) * C + r;
                    cr_expect_eq(kv.head[r], kvh);
                    cr_expect_eq(h, kvh * g + t % g);
                }
                if (G < C)
                    cr_expect_eq(h, (r / rep) * g + (r % rep) * (H / C) + t * pl.m + k);
            }
        }
        /* kv heads change exactly when the stage's kv heads differ from the last stage's */
        if (t > 0) {
            cpb_a2a_map q0, kv0;
            upipe_stage_maps(&pl, t - 1, &q0, &kv0);
            int differ = memcmp(kv.head, kv0.head, sizeof(int) * (size_t)(C * pl.nk)) != 0;
            cr_expect_eq(upipe_kv_changes(&pl, t), differ, "stage %d", t);
        }
    }
    for (int h = 0; h < H; h++)
        cr_expect_eq(seen[h], 1, "C=%d H=%d G=%d U=%d: head %d worked on %d times", C, H, G, U, h, seen[h]);
}

Test(upipe_schedule, follows_the_design)
{
    check_schedule(4, 16, 4, 4);  /* G = C, m = 1 < g = 4 */
    check_schedule(4, 16, 8, 8);  /* G > C, m = 2 = g */
    check_schedule(2, 12, 6, 12); /* m = 6 > g = 2: three kv heads per stage */
    check_schedule(8, 16, 2, 8);  /* G < C, rep 4 */
    check_schedule(3, 18, 3, 9);  /* odd C, m = 3 divides g = 6 */
    check_schedule(5, 20, 10, 5); /* C = 5 */
}
