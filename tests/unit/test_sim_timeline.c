/* test_sim_timeline.c — the simulator's timing model on hand-computed schedules: two
 * streams overlapping and joined by an event, a collective waiting for its last
 * participant, PCIe bandwidth shared by the GPUs of a node, send/recv across nodes, and
 * collectives that do not match.  The hardware is made of round numbers so every expected
 * time can be worked out by hand (no launch overhead, efficiency 1). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "cpb_backend.h"
#include "registry.h"
#include "sim/sim_world.h"
#include "sim/timeline.h"

/* 1 FLOP/us-ish machine: a 100x100x100 GEMM (2e6 FLOPs) takes exactly 1 s */
static cpb_sim_hw round_hw(void)
{
    cpb_sim_hw h;
    memset(&h, 0, sizeof h);
    h.peak_flops = 2e6;
    h.num_sms = 1;
    h.gemm_eff_max = 1.0;
    h.gemm_k_half = 0.0;
    h.gemm_tile_m = h.gemm_tile_n = 1;
    h.attn_fwd_eff_max = h.attn_bwd_eff_max = 1.0;
    h.attn_tile_rows = 1;
    h.hbm_bw = 1e12;           /* element-wise traffic of these tests is negligible */
    h.a2a_busbw = 1000;        /* 2000 bus bytes -> 2 s */
    h.sendrecv_busbw = 1000;
    h.coll_busbw = 1000;
    h.inter_busbw = 250;       /* 4x slower across nodes */
    h.coll_lat = 0;
    h.inter_lat = 0;
    h.pcie_gpu_bw = 2000;      /* a 1000-float copy (4000 bytes) alone: 2 s */
    h.pcie_node_bw = 2000;     /* two GPUs of a node copying together: 4 s each */
    h.launch = 0;
    h.gpus_per_node = 8;
    return h;
}

typedef struct world {
    cpb_sim_world *w;
    cpb_ctx *ctx[4];
    int n;
} world;

static void world_open(world *W, int n)
{
    memset(W, 0, sizeof *W);
    W->n = n;
    cr_assert_eq(cpb_sim_world_create(n, &W->w), CPB_OK);
    for (int r = 0; r < n; r++) {
        cpb_ctx_opts o = {0};
                o.sim_rank = r;
        o.sim_world = n;
        o.race_check = 1;
        o.backend_shared = W->w;
        char err[256];
        cr_assert_eq(cpb_ctx_create(&cpb_backend_sim, &o, &W->ctx[r], err, sizeof err), CPB_OK, "%s", err);
        cr_assert_eq(cpb_rank(W->ctx[r]), r);
        cr_assert_eq(cpb_world_size(W->ctx[r]), n);
        /* timed entries are those issued inside trial/fwd (or trial/bwd) */
        cr_assert_eq(cpb_range_push(W->ctx[r], "trial"), CPB_OK);
        cr_assert_eq(cpb_range_push(W->ctx[r], "fwd"), CPB_OK);
    }
}

static void world_close(world *W)
{
    for (int r = 0; r < W->n; r++) cpb_ctx_destroy(W->ctx[r]);
    cpb_sim_world_destroy(W->w);
}

static cpb_sim_timing replay(world *W, const cpb_sim_hw *hw)
{
    cpb_sim_timing t;
    char err[1024] = "";
    cr_assert_eq(cpb_sim_timeline(W->w, hw, &t, err, sizeof err), CPB_OK, "%s", err);
    return t;
}

/* a [100 x k] x [k x 100] GEMM: k/100 seconds on round_hw */
static void gemm(cpb_ctx *ctx, int stream, int64_t k, cpb_buf **a, cpb_buf **b, cpb_buf **c)
{
    cr_assert_eq(cpb_alloc(ctx, a, 100 * k, CPB_FP32, CPB_TAG_TEMP, "a"), CPB_OK);
    cr_assert_eq(cpb_alloc(ctx, b, k * 100, CPB_FP32, CPB_TAG_TEMP, "b"), CPB_OK);
    cr_assert_eq(cpb_alloc(ctx, c, 100 * 100, CPB_FP32, CPB_TAG_TEMP, "c"), CPB_OK);
    cr_assert_eq(cpb_gemm(ctx, stream, 0, 0, 1.0f, cpb_mat(*a, 0, 100, k, k), cpb_mat(*b, 0, k, 100, 100), 0.0f,
                          cpb_mat(*c, 0, 100, 100, 100)),
                 CPB_OK, "%s", cpb_errmsg(ctx));
}

#define NEAR(x, y) (fabs((x) - (y)) < 1e-6 * (1.0 + fabs(y)))

Test(sim_timeline, two_streams_overlap_and_join)
{
    world W;
    world_open(&W, 1);
    cpb_ctx *ctx = W.ctx[0];
    cpb_sim_hw hw = round_hw();
    int copy;
    cr_assert_eq(cpb_stream(ctx, "copy", &copy), CPB_OK);
    cpb_buf *a, *b, *c, *host, *dev, *a2, *b2, *c2;
    /* compute: GEMM 1 s; copy stream meanwhile: host->device 2 s */
    gemm(ctx, CPB_STREAM_COMPUTE, 100, &a, &b, &c);
    cr_assert_eq(cpb_alloc_host(ctx, &host, 1000, CPB_FP32, CPB_TAG_TEMP, "host"), CPB_OK);
    cr_assert_eq(cpb_alloc(ctx, &dev, 1000, CPB_FP32, CPB_TAG_FETCH, "dev"), CPB_OK);
    cr_assert_eq(cpb_copy(ctx, copy, cpb_whole(dev), cpb_whole(host)), CPB_OK, "%s", cpb_errmsg(ctx));
    /* compute waits for the copy, then a 3 s GEMM: starts at 2, ends at 5 */
    cr_assert_eq(cpb_stream_join(ctx, CPB_STREAM_COMPUTE, copy), CPB_OK);
    gemm(ctx, CPB_STREAM_COMPUTE, 300, &a2, &b2, &c2);
    cpb_sim_timing t = replay(&W, &hw);
    cr_expect(NEAR(t.fwd_s, 5.0), "fwd %g, expected 5 (copy 0-2 overlaps GEMM 0-1; GEMM 2-5)", t.fwd_s);
    cr_expect(NEAR(t.step_s, 5.0), "step %g", t.step_s);
    cr_expect(NEAR(t.bwd_s, 0.0), "no backward entries, bwd %g", t.bwd_s);
    cr_expect(NEAR(t.busy_s[CPB_STREAM_COMPUTE], 4.0), "compute busy %g, expected 4", t.busy_s[0]);
    cr_expect(NEAR(t.busy_s[copy], 2.0), "copy busy %g, expected 2", t.busy_s[copy]);
    cr_expect_str_eq(t.stream_names[copy], "copy");
    cr_expect(NEAR(t.pcie_bytes, 4000.0), "pcie bytes %g", t.pcie_bytes);
    world_close(&W);
}

Test(sim_timeline, untimed_setup_and_phases)
{
    world W;
    world_open(&W, 1);
    cpb_ctx *ctx = W.ctx[0];
    cpb_sim_hw hw = round_hw();
    cpb_buf *a, *b, *c;
    gemm(ctx, 0, 200, &a, &b, &c);              /* fwd: 2 s */
    cr_assert_eq(cpb_range_pop(ctx), CPB_OK);
    cr_assert_eq(cpb_range_push(ctx, "bwd"), CPB_OK);
    cpb_buf *a2, *b2, *c2;
    gemm(ctx, 0, 300, &a2, &b2, &c2);           /* bwd: 3 s */
    cr_assert_eq(cpb_range_pop(ctx), CPB_OK);
    cr_assert_eq(cpb_range_pop(ctx), CPB_OK);
    cpb_buf *a3, *b3, *c3;
    gemm(ctx, 0, 500, &a3, &b3, &c3);           /* outside the trial: not timed */
    cpb_sim_timing t = replay(&W, &hw);
    cr_expect(NEAR(t.fwd_s, 2.0), "fwd %g", t.fwd_s);
    cr_expect(NEAR(t.bwd_s, 3.0), "bwd %g", t.bwd_s);
    cr_expect(NEAR(t.step_s, 5.0), "step %g", t.step_s);
    world_close(&W);
}

Test(sim_timeline, collective_waits_for_last_participant)
{
    world W;
    world_open(&W, 2);
    cpb_sim_hw hw = round_hw();
    for (int r = 0; r < 2; r++) {
        cpb_ctx *ctx = W.ctx[r];
        cpb_buf *a, *b, *c, *s, *q;
        gemm(ctx, 0, r == 0 ? 100 : 300, &a, &b, &c); /* rank 0: 1 s, rank 1: 3 s */
        cr_assert_eq(cpb_alloc(ctx, &s, 1000, CPB_FP32, CPB_TAG_A2A, "send"), CPB_OK);
        cr_assert_eq(cpb_alloc(ctx, &q, 1000, CPB_FP32, CPB_TAG_A2A, "recv"), CPB_OK);
        /* 1000 floats over 2 ranks: 2000 bus bytes -> 2 s after the last arrival (3 s) */
        cr_assert_eq(cpb_all_to_all(ctx, 0, NULL, cpb_whole(s), cpb_whole(q)), CPB_OK, "%s", cpb_errmsg(ctx));
    }
    cpb_sim_timing t = replay(&W, &hw);
    cr_expect(NEAR(t.step_s, 5.0), "step %g, expected 3 + 2", t.step_s);
    cr_expect(NEAR(t.comm_bytes, 2000.0), "bytes sent %g", t.comm_bytes);
    world_close(&W);
}

Test(sim_timeline, sendrecv_across_nodes_is_slower)
{
    cpb_sim_hw hw = round_hw();
    for (int gpn = 1; gpn <= 2; gpn++) {
        hw.gpus_per_node = gpn; /* 1: the two ranks are on different nodes */
        world W;
        world_open(&W, 2);
        for (int r = 0; r < 2; r++) {
            cpb_ctx *ctx = W.ctx[r];
            cpb_buf *s, *q;
            cr_assert_eq(cpb_alloc(ctx, &s, 500, CPB_FP32, CPB_TAG_KV_RING, "kv"), CPB_OK);
            cr_assert_eq(cpb_alloc(ctx, &q, 500, CPB_FP32, CPB_TAG_KV_RING, "kv_next"), CPB_OK);
            cr_assert_eq(cpb_sendrecv(ctx, 0, NULL, cpb_whole(s), 1 - r, cpb_whole(q), 1 - r), CPB_OK, "%s",
                         cpb_errmsg(ctx));
        }
        cpb_sim_timing t = replay(&W, &hw);
        double expect = gpn == 1 ? 2000.0 / 250.0 : 2000.0 / 1000.0;
        cr_expect(NEAR(t.step_s, expect), "gpus per node %d: step %g, expected %g", gpn, t.step_s, expect);
        world_close(&W);
    }
}

Test(sim_timeline, pcie_shared_by_the_gpus_of_a_node)
{
    cpb_sim_hw hw = round_hw();
    for (int gpn = 1; gpn <= 2; gpn++) {
        hw.gpus_per_node = gpn;
        world W;
        world_open(&W, 2);
        for (int r = 0; r < 2; r++) {
            cpb_ctx *ctx = W.ctx[r];
            cpb_buf *h, *d;
            cr_assert_eq(cpb_alloc_host(ctx, &h, 1000, CPB_FP32, CPB_TAG_SAVED, "saved"), CPB_OK);
            cr_assert_eq(cpb_alloc(ctx, &d, 1000, CPB_FP32, CPB_TAG_SAVED, "act"), CPB_OK);
            cr_assert_eq(cpb_copy(ctx, 0, cpb_whole(h), cpb_whole(d)), CPB_OK, "%s", cpb_errmsg(ctx));
        }
        cpb_sim_timing t = replay(&W, &hw);
        /* alone (one GPU per node): 4000 bytes at 2000 B/s = 2 s; two GPUs sharing a
         * 2000 B/s node link: 1000 B/s each, 4 s */
        double expect = gpn == 1 ? 2.0 : 4.0;
        cr_expect(NEAR(t.step_s, expect), "gpus per node %d: step %g, expected %g", gpn, t.step_s, expect);
        cr_expect_geq(t.passes, 1);
        world_close(&W);
    }
}

Test(sim_timeline, opposite_directions_do_not_share)
{
    cpb_sim_hw hw = round_hw();
    hw.gpus_per_node = 2;
    world W;
    world_open(&W, 2);
    for (int r = 0; r < 2; r++) {
        cpb_ctx *ctx = W.ctx[r];
        cpb_buf *h, *d;
        cr_assert_eq(cpb_alloc_host(ctx, &h, 1000, CPB_FP32, CPB_TAG_SAVED, "saved"), CPB_OK);
        cr_assert_eq(cpb_alloc(ctx, &d, 1000, CPB_FP32, CPB_TAG_SAVED, "act"), CPB_OK);
        if (r == 0) cr_assert_eq(cpb_copy(ctx, 0, cpb_whole(h), cpb_whole(d)), CPB_OK);
        else cr_assert_eq(cpb_copy(ctx, 0, cpb_whole(d), cpb_whole(h)), CPB_OK);
    }
    cpb_sim_timing t = replay(&W, &hw);
    cr_expect(NEAR(t.step_s, 2.0), "PCIe is full duplex: step %g, expected 2", t.step_s);
    world_close(&W);
}

Test(sim_timeline, model_rules_of_one_op)
{
    cpb_sim_hw hw = round_hw();
    hw.launch = 1e-3;
    sim_entry e;
    memset(&e, 0, sizeof e);
    e.type = SIM_OP;
    e.phase = SIM_PHASE_FWD;
    e.kind = CPB_OP_GEMM;
    e.flops = 2e6;
    e.bytes = 1e12; /* memory bound: 1 s at 1e12 B/s */
    e.w0 = e.w1 = e.w2 = 100;
    e.w3 = 1;
    hw.peak_flops = 4e6; /* compute would take 0.5 s */
    cr_expect(NEAR(cpb_sim_op_time(&hw, &e), 1.0 + 1e-3), "roofline max + launch: %g", cpb_sim_op_time(&hw, &e));
    e.phase = SIM_PHASE_SETUP;
    cr_expect_eq(cpb_sim_op_time(&hw, &e), 0.0, "set-up is not timed");
    /* efficiency curves: small calls are less efficient, large ones approach the ceiling */
    cpb_sim_hw h = round_hw();
    h.attn_fwd_eff_max = 0.7;
    h.attn_fwd_k_half = 400;
    h.attn_tile_rows = 128;
    h.num_sms = 132;
    double small = cpb_sim_attn_eff(&h, 0, 4096, 32, 4096LL * 2048);
    double large = cpb_sim_attn_eff(&h, 0, 1 << 20, 32, (1LL << 20) * (1LL << 19));
    cr_expect_lt(small, large);
    cr_expect_lt(large, 0.7);
    cr_expect_gt(large, 0.69);
    h.gemm_eff_max = 0.75;
    h.gemm_k_half = 128;
    h.gemm_tile_m = 128;
    h.gemm_tile_n = 256;
    cr_expect_lt(cpb_sim_gemm_eff(&h, 128, 256, 64, 1), cpb_sim_gemm_eff(&h, 65536, 4096, 4096, 1));
}

/* A batched GEMM is one kernel: its batch entries' tiles fill the SMs together, so eight
 * [16K x 128] entries run as fast per FLOP as one [16K x 1024] GEMM, and far faster than
 * eight separate calls would. */
Test(sim_timeline, batched_gemm_is_one_kernel)
{
    cpb_sim_hw h = round_hw();
    h.num_sms = 132;
    h.gemm_eff_max = 0.75;
    h.gemm_k_half = 128;
    h.gemm_tile_m = 128;
    h.gemm_tile_n = 128;
    h.launch = 4e-6;
    double one = cpb_sim_gemm_eff(&h, 16384, 1024, 4096, 1);
    double batched = cpb_sim_gemm_eff(&h, 16384, 128, 4096, 8);
    cr_expect(NEAR(batched, one), "batched %g vs one GEMM %g", batched, one);
    sim_entry e;
    memset(&e, 0, sizeof e);
    e.type = SIM_OP;
    e.kind = CPB_OP_GEMM;
    e.phase = SIM_PHASE_FWD;
    e.w0 = 16384, e.w1 = 128, e.w2 = 4096, e.w3 = 8;
    e.flops = 2.0 * 16384 * 128 * 4096 * 8;
    double t_batched = cpb_sim_op_time(&h, &e);
    e.w3 = 1;
    e.flops /= 8;
    double t_single = cpb_sim_op_time(&h, &e);
    cr_expect_lt(t_batched, 8 * t_single, "one batched kernel %g s, eight calls %g s", t_batched, 8 * t_single);
    /* exactly one launch per batched call */
    cr_expect(NEAR(t_batched, e.flops * 8 / (h.peak_flops * batched) + h.launch), "time %g", t_batched);
}

/* Causal attention is scheduled longest tile first (FlashAttention-3's LPT scheduler): the
 * tail is the short tiles, not a whole wave.  Worked by hand on 3 SMs: a square causal
 * call of 4 row blocks, one head, has tiles of 4, 3, 2, 1 key blocks; LPT puts 4 | 3 | 2+1
 * on the SMs, a span of 4 for 10 units of work: efficiency 10 / (3 * 4).  Uniform row
 * blocks (a non-causal call) still run in waves: 4 blocks on 3 SMs take 2 waves. */
Test(sim_timeline, causal_attention_is_scheduled_longest_first)
{
    cpb_sim_hw h = round_hw();
    h.num_sms = 3;
    h.attn_tile_rows = 1;
    h.attn_fwd_eff_max = 1.0;
    h.attn_fwd_k_half = 0.0;
    int64_t rows = 4, causal_pairs = rows * (rows + 1) / 2;
    cr_expect(NEAR(cpb_sim_attn_eff(&h, 0, rows, 1, causal_pairs), 10.0 / 12.0), "causal eff %g",
              cpb_sim_attn_eff(&h, 0, rows, 1, causal_pairs));
    cr_expect(NEAR(cpb_sim_attn_eff(&h, 0, rows, 1, rows * rows), 4.0 / 6.0), "non-causal eff %g",
              cpb_sim_attn_eff(&h, 0, rows, 1, rows * rows));
    /* a long causal call with one head per call loses almost nothing to the tail */
    h.num_sms = 132;
    h.attn_tile_rows = 128;
    int64_t S = 512 * 1024;
    cr_expect_gt(cpb_sim_attn_eff(&h, 0, S, 1, S * (S + 1) / 2), 0.998);
}

/* Split-K: a skinny dW GEMM ([128 x 4096] output, k = 16K) has 16 tiles of 128x256 on 132
 * SMs; split 8 ways over k it keeps 128 SMs busy, each split 2048 deep. */
Test(sim_timeline, skinny_gemm_splits_k)
{
    cpb_sim_hw h = round_hw();
    h.num_sms = 132;
    h.gemm_eff_max = 0.75;
    h.gemm_k_half = 128;
    h.gemm_tile_m = 128;
    h.gemm_tile_n = 256;
    cr_expect_eq(cpb_sim_gemm_splits(&h, 128, 4096, 16384, 1), 8.0);
    double want = 0.75 * (128.0 / 132.0) * (2048.0 / (2048.0 + 128.0));
    cr_expect(NEAR(cpb_sim_gemm_eff(&h, 128, 4096, 16384, 1), want), "eff %g, expected %g",
              cpb_sim_gemm_eff(&h, 128, 4096, 16384, 1), want);
    /* enough tiles already, or too shallow to split: no split */
    cr_expect_eq(cpb_sim_gemm_splits(&h, 16384, 4096, 4096, 1), 1.0);
    cr_expect_eq(cpb_sim_gemm_splits(&h, 128, 4096, 300, 1), 1.0);
    /* the batch counts towards the tiles: 8 entries of 16 tiles fill the GPU */
    cr_expect_eq(cpb_sim_gemm_splits(&h, 128, 4096, 16384, 8), 1.0);
    /* the partial tiles' fp32 fix-up is HBM traffic of the op */
    sim_entry e;
    memset(&e, 0, sizeof e);
    e.type = SIM_OP;
    e.kind = CPB_OP_GEMM;
    e.phase = SIM_PHASE_BWD;
    e.w0 = 128, e.w1 = 4096, e.w2 = 16384, e.w3 = 1;
    e.flops = 0; /* only the traffic: 8 splits x 2 passes x 4 bytes x 128 x 4096 */
    h.hbm_bw = 1e9;
    cr_expect(NEAR(cpb_sim_op_time(&h, &e), 8.0 * 2 * 4 * 128 * 4096 / 1e9), "fix-up time %g", cpb_sim_op_time(&h, &e));
}

Test(sim_timeline, unmatched_collective_is_reported)
{
    world W;
    world_open(&W, 2);
    cpb_sim_hw hw = round_hw();
    /* only rank 0 calls the all-reduce */
    cpb_buf *b;
    cr_assert_eq(cpb_alloc(W.ctx[0], &b, 100, CPB_FP32, CPB_TAG_TEMP, "partial"), CPB_OK);
    cr_assert_eq(cpb_all_reduce(W.ctx[0], 0, NULL, cpb_whole(b)), CPB_OK);
    cpb_sim_timing t;
    char err[1024] = "";
    cr_expect_eq(cpb_sim_timeline(W.w, &hw, &t, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "rank 0 waits in all_reduce") != NULL, "message: %s", err);
    world_close(&W);
}

Test(sim_timeline, groups_with_the_same_members_are_separate_communicators)
{
    world W;
    world_open(&W, 2);
    cpb_sim_hw hw = round_hw();
    int both[2] = {0, 1};
    for (int r = 0; r < 2; r++) {
        cpb_ctx *ctx = W.ctx[r];
        cpb_group *g1, *g2;
        /* two communicators over the world's members, each with its own sequence numbers */
        cr_assert_eq(cpb_group_create(ctx, 2, both, &g1), CPB_OK);
        cr_assert_eq(cpb_group_create(ctx, 2, both, &g2), CPB_OK);
        int other;
        cr_assert_eq(cpb_stream(ctx, "other", &other), CPB_OK);
        cpb_buf *a, *b, *c;
        cr_assert_eq(cpb_alloc(ctx, &a, 1000, CPB_FP32, CPB_TAG_A2A, "a"), CPB_OK);
        cr_assert_eq(cpb_alloc(ctx, &b, 1000, CPB_FP32, CPB_TAG_A2A, "b"), CPB_OK);
        cr_assert_eq(cpb_alloc(ctx, &c, 1000, CPB_FP32, CPB_TAG_A2A, "c"), CPB_OK);
        /* world: all-reduce; g1: all-to-all; g2: all-reduce (same kind as world's #0) */
        cr_assert_eq(cpb_all_reduce(ctx, 0, NULL, cpb_whole(a)), CPB_OK);
        cr_assert_eq(cpb_all_to_all(ctx, other, g1, cpb_whole(b), cpb_whole(c)), CPB_OK, "%s", cpb_errmsg(ctx));
        cr_assert_eq(cpb_all_reduce(ctx, 0, g2, cpb_whole(a)), CPB_OK);
    }
    /* all-reduce: 2 * 4000 * 1/2 = 4000 bus bytes at 1000 B/s = 4 s, twice on compute;
     * the all-to-all (2 s) runs meanwhile on the other stream */
    cpb_sim_timing t = replay(&W, &hw);
    cr_expect(NEAR(t.step_s, 8.0), "step %g, expected 8", t.step_s);
    world_close(&W);
}
