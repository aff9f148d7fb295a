/* test_memory_tp_metp.c — METP's and TP's memory behaviour on the simulator.
 *
 * METP projects one head group at a time, so its q, k, v high-water is exactly one group's
 * q, k, v for the local tokens; TP holds its head group's q, k, v for all S tokens and
 * gathers x (and dy) over the whole sequence.  With S much larger than D, METP's peak is
 * below TP's.  Expected bytes are formulas of S, C, D, H, G, d written from the schedules
 * (methods/metp/metp.c with methods/common/ring_attn.c, methods/tp/tp.c). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "test_problem.h"
#include "cpb_method.h"
#include "sim_layer.h"

static cpb_problem problem(int64_t S, int64_t D, int H, int G, int d, int C, cpb_dtype dt)
{
    return cpb_test_problem(S, C, D, H, G, d, dt);
}

/* one rank's head group (DESIGN section 4: kv heads replicated when G < C) */
typedef struct geo {
    int64_t S, s, c, D, H, hq, hk, hqd, hkd, Hd;
    int64_t E;      /* storage bytes per element */
    int64_t shard;  /* elements of one packed weight shard Wq|Wk|Wv|Wo */
    int64_t fixed;  /* x, dy, y, dx, weight shard, fp32 dW shard */
    int64_t gemm;   /* the GEMM workspace of the compute stream (the only one with GEMMs) */
} geo;

static geo geometry(const cpb_problem *p)
{
    geo g;
    g.S = p->S;
    g.s = p->S / p->C;
    g.c = g.s / 2;
    g.D = p->D;
    g.H = p->H;
    g.hq = p->H / p->C;
    g.hk = p->G >= p->C ? p->G / p->C : 1;
    g.hqd = g.hq * p->d;
    g.hkd = g.hk * p->d;
    g.Hd = (int64_t)p->H * p->d;
    g.E = p->dtype == CPB_BF16 ? 2 : 4;
    g.shard = 2 * g.D * g.hqd + 2 * g.D * g.hkd;
    g.fixed = g.E * 4 * g.s * g.D + g.E * g.shard + 4 * g.shard;
    g.gemm = cpb_gemm_workspace_bytes();
    return g;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* metp, forward: saved o and lse, two weight-shard buffers, one
 * group's q and packed K,V, and the inner ring's second K,V buffer, fp32 o accumulator and
 * one block's fp32 partial and lse */
static int64_t metp_fwd_upper(const geo *g)
{
    int64_t saved = g->E * g->s * g->Hd + 4 * g->H * g->s;
    int64_t group = g->E * (g->s * g->hqd + 2 * g->s * g->hkd);
    int64_t ring = g->E * 2 * g->s * g->hkd + 4 * (g->s * g->hqd + g->c * g->hqd + g->c * g->hq);
    return g->fixed + g->gemm + saved + 2 * g->E * g->shard + group + ring;
}

/* metp, backward: saved o and lse, fp32 dW pack, two weight-shard
 * buffers; per group dO, q, K,V (storage), fp32 dq and dK,dV; the ring's second K,V, fp32
 * travelling dK,dV, the step's dK,dV (storage), delta, and the attention backward's fp32
 * dq workspace (at most 2c rows) */
static int64_t metp_bwd_upper(const geo *g)
{
    int64_t saved = g->E * g->s * g->Hd + 4 * g->H * g->s;
    int64_t acc = 4 * g->shard + 2 * g->E * g->shard;
    int64_t group = g->E * (2 * g->s * g->hqd + 2 * g->s * g->hkd) + 4 * (g->s * g->hqd + 2 * g->s * g->hkd);
    int64_t ring = g->E * 4 * g->s * g->hkd + 4 * (2 * g->s * g->hkd + g->hq * g->s) + 4 * g->s * g->hqd;
    return g->fixed + g->gemm + saved + acc + group + ring;
}

static int64_t metp_upper(const cpb_problem *p)
{
    geo g = geometry(p);
    return max64(metp_fwd_upper(&g), metp_bwd_upper(&g));
}

/* tp: what is live together during its attention backward — saved q, k, v, o, lse over
 * all S tokens, dO, dq, dk, dv, the re-gathered x, the fp32 dq (+ delta) workspace and the
 * GEMM workspace */
static int64_t tp_lower(const cpb_problem *p)
{
    geo g = geometry(p);
    int64_t qkv = g.S * (g.hqd + 2 * g.hkd);
    return g.fixed + g.gemm + g.E * (2 * qkv + 2 * g.S * g.hqd + g.S * g.D) + 4 * (g.S * g.hq + g.S * g.hqd + g.S * g.hq);
}

static cpb_row sim(const char *method, const cpb_problem *p)
{
    const cpb_method *m = cpb_method_find(method);
    cr_assert_not_null(m, "method %s is registered", method);
    cpb_row r;
    cr_assert_eq(cpb_sim_layer(p, m, NULL, &r), CPB_OK, "%s: %s", method, r.reason);
    cr_assert_eq(r.code, CPB_OK, "%s (S %lld, C %d, H %d, G %d): %s", method, (long long)p->S, p->C, p->H, p->G,
                 r.reason);
    return r;
}

/* metp's q, k, v high-water is one head group's q and K,V for the local tokens, in both
 * phases, for G < C, G = C and G > C */
Test(memory_tp_metp, metp_holds_one_head_group_of_qkv)
{
    const cpb_problem cases[] = {
        problem(480, 64, 8, 8, 16, 4, CPB_BF16),   /* MHA, G > C */
        problem(480, 64, 8, 4, 16, 4, CPB_BF16),   /* G = C */
        problem(420, 48, 6, 1, 8, 3, CPB_FP32),    /* G < C, H*d != D */
        problem(600, 40, 10, 5, 12, 5, CPB_BF16),  /* odd C, G = C */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const cpb_problem *p = &cases[i];
        geo g = geometry(p);
        cpb_row r = sim("metp", p);
        int64_t one_group = g.E * g.s * (g.hqd + 2 * g.hkd);
        int64_t all_heads = g.E * g.s * (g.Hd + 2 * (int64_t)p->G * p->d);
        cr_expect_eq(r.fwd.tag_peak[CPB_TAG_QKV], one_group, "case %zu fwd: q,k,v high-water %lld, one group %lld",
                     i, (long long)r.fwd.tag_peak[CPB_TAG_QKV], (long long)one_group);
        cr_expect_eq(r.bwd.tag_peak[CPB_TAG_QKV], one_group, "case %zu bwd: q,k,v high-water %lld, one group %lld",
                     i, (long long)r.bwd.tag_peak[CPB_TAG_QKV], (long long)one_group);
        cr_expect_lt(r.tag_peak[CPB_TAG_QKV], all_heads, "case %zu: below every head's q,k,v", i);
        /* the weight shards in flight: two receive buffers, plus the fp32 dW pack in backward */
        cr_expect_eq(r.fwd.tag_peak[CPB_TAG_GATHER], 2 * g.E * g.shard, "case %zu: two shard buffers", i);
        cr_expect_eq(r.bwd.tag_peak[CPB_TAG_GATHER], 2 * g.E * g.shard + 4 * g.shard,
                     "case %zu: two shard buffers and the dW pack", i);
        cr_expect_leq(r.peak_bytes, metp_upper(p), "case %zu: peak %lld above the schedule's bound %lld", i,
                      (long long)r.peak_bytes, (long long)metp_upper(p));
    }
}

/* tp holds its head group's q, k, v for all S tokens and one full-sequence activation
 * (gathered x or dy, or a y/dx partial) at a time */
Test(memory_tp_metp, tp_holds_full_sequence_qkv)
{
    const cpb_problem cases[] = {
        problem(480, 64, 8, 8, 16, 4, CPB_BF16),
        problem(420, 48, 6, 1, 8, 3, CPB_FP32),
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const cpb_problem *p = &cases[i];
        geo g = geometry(p);
        cpb_row r = sim("tp", p);
        cr_expect_eq(r.tag_peak[CPB_TAG_QKV], g.E * g.S * (g.hqd + 2 * g.hkd), "case %zu", i);
        cr_expect_eq(r.tag_peak[CPB_TAG_GATHER], g.E * g.S * g.D, "case %zu", i);
        cr_expect_geq(r.peak_bytes, tp_lower(p), "case %zu: peak %lld below tp's attention-backward set %lld", i,
                      (long long)r.peak_bytes, (long long)tp_lower(p));
    }
}

/* S >> D: metp's peak is below tp's, by the schedules' formulas and on the simulator */
Test(memory_tp_metp, metp_peak_below_tp_for_long_sequences)
{
    const cpb_problem cases[] = {
        problem(16384, 256, 8, 8, 32, 4, CPB_BF16), /* MHA, METP's setting */
        problem(12288, 256, 8, 2, 32, 4, CPB_BF16), /* GQA, G < C */
        problem(10240, 192, 10, 5, 16, 5, CPB_FP32),
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const cpb_problem *p = &cases[i];
        cr_expect_lt(metp_upper(p), tp_lower(p), "case %zu: formulas: metp <= %lld, tp >= %lld", i,
                     (long long)metp_upper(p), (long long)tp_lower(p));
        cpb_row m = sim("metp", p), t = sim("tp", p);
        cr_expect_leq(m.peak_bytes, metp_upper(p), "case %zu: metp peak %lld, bound %lld", i,
                      (long long)m.peak_bytes, (long long)metp_upper(p));
        cr_expect_geq(t.peak_bytes, tp_lower(p), "case %zu: tp peak %lld, bound %lld", i, (long long)t.peak_bytes,
                      (long long)tp_lower(p));
        cr_expect_lt(m.peak_bytes, t.peak_bytes, "case %zu: metp %lld, tp %lld", i, (long long)m.peak_bytes,
                     (long long)t.peak_bytes);
        cr_log_info("S %lld C %d: metp peak %lld, tp peak %lld (%.1f%% less)", (long long)p->S, p->C,
                    (long long)m.peak_bytes, (long long)t.peak_bytes,
                    100.0 * (1.0 - (double)m.peak_bytes / (double)t.peak_bytes));
    }
}

/* ring's circulating buffers, for C = 1 .. 8 and the three GQA regimes: forward keeps its
 * own K,V for backward, so it rotates through one more K,V buffer (two from C = 3);
 * backward rotates through its own and one more, plus the fp32 travelling dK,dV.  (That
 * every rank allocates alike and orders its streams is checked for every registered method
 * by test_method_rules.c.) */
Test(memory_tp_metp, ring_circulates_one_more_kv_buffer)
{
    const int Cs[] = {1, 2, 3, 4, 5, 8};
    for (size_t k = 0; k < sizeof Cs / sizeof Cs[0]; k++) {
        int C = Cs[k];
        const cpb_problem cases[] = {
            problem(2 * C * 7, 48, 2 * C, 2 * C, 8, C, CPB_BF16), /* G > C (or = at C = 1) */
            problem(2 * C * 5, 40, C, C, 6, C, CPB_FP32),         /* G = C */
            problem(2 * C * 3, 32, 2 * C, 1, 4, C, CPB_BF16),     /* G < C */
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const cpb_problem *p = &cases[i];
            cpb_row r = sim("ring", p);
            int64_t E = p->dtype == CPB_BF16 ? 2 : 4, kv = 2 * (p->S / C) * p->G * p->d;
            cr_expect_eq(r.fwd.tag_peak[CPB_TAG_KV_RING], C > 2 ? 2 * E * kv : C > 1 ? E * kv : 0, "C %d case %zu",
                         C, i);
            cr_expect_eq(r.bwd.tag_peak[CPB_TAG_KV_RING], C > 1 ? (E + 4) * kv : 0, "C %d case %zu", C, i);
        }
    }
}
