/* test_alloc_reserve.c — the caching allocator model (driver/alloc_reserve.c): each rule of
 * PyTorch's CUDACachingAllocator on a sequence worked by hand (rounding, the pools and their
 * segment sizes, splitting, best fit, merging, per-stream pools, release of cached whole
 * segments on a failed cudaMalloc), the loss sequences it replays for the model scope
 * (driver/model_scope_loss_seq.c), and that the reserve never changes whether a point fits. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "alloc_reserve.h"
#include "cpb_method.h"
#include "cpb_presets.h"
#include "knobs.h"
#include "model_scope.h"

#define MiB ((int64_t)1 << 20)

static cpb_alloc_replay replay(const cpb_alloc_seq *q, int64_t capacity, int want_rc)
{
    cpb_alloc_replay r;
    char err[256] = "";
    cr_assert_eq(q->err, 0);
    int rc = cpb_alloc_replay_run(q->ev, q->n, capacity, &r, err, sizeof err);
    cr_assert_eq(rc, want_rc, "replay returned %d (%s), expected %d", rc, err, want_rc);
    return r;
}

Test(alloc_reserve, rounding_and_segment_sizes)
{
    cr_expect_eq(cpb_alloc_round_size(0), 512);
    cr_expect_eq(cpb_alloc_round_size(1), 512);
    cr_expect_eq(cpb_alloc_round_size(513), 1024);
    cr_expect_eq(cpb_alloc_round_size(3 * MiB + 1), 3 * MiB + 512);
    /* small pool (<= 1 MiB): 2 MiB segments; 1-10 MiB: 20 MiB; else rounded up to 2 MiB */
    cr_expect_eq(cpb_alloc_segment_size(MiB), 2 * MiB);
    cr_expect_eq(cpb_alloc_segment_size(MiB + 512), 20 * MiB);
    cr_expect_eq(cpb_alloc_segment_size(10 * MiB - 512), 20 * MiB);
    cr_expect_eq(cpb_alloc_segment_size(10 * MiB), 10 * MiB);
    cr_expect_eq(cpb_alloc_segment_size(10 * MiB + 512), 12 * MiB);
    cr_expect_eq(cpb_alloc_segment_size(25 * MiB + 3), 26 * MiB);
}

Test(alloc_reserve, small_requests_share_a_2mib_segment)
{
    cpb_alloc_seq q = {0};
    cpb_alloc_seq_alloc(&q, 1000, 0); /* 1024 of a new 2 MiB segment, the rest split off */
    cpb_alloc_seq_alloc(&q, 1000, 0); /* from the remainder */
    cpb_alloc_replay r = replay(&q, 0, CPB_OK);
    cr_expect_eq(r.peak_requested, 2000);
    cr_expect_eq(r.allocated_at_peak, 2048);
    cr_expect_eq(r.reserved_at_peak, 2 * MiB);
    cr_expect_eq(r.segments, 1);
    cpb_alloc_seq_release(&q);
}

Test(alloc_reserve, large_blocks_split_only_above_1mib_left)
{
    const int64_t half = 512 * 1024;
    cpb_alloc_seq q = {0};
    cpb_alloc_seq_alloc(&q, 5 * MiB, 0);          /* 20 MiB segment: 5 used, 15 split off */
    cpb_alloc_seq_alloc(&q, 3 * MiB, 0);          /* best fit: the 15 MiB remainder, 12 left */
    cpb_alloc_seq_alloc(&q, 12 * MiB + 512, 0);   /* 12 MiB free is short: a 14 MiB segment, ~2 split off */
    cpb_alloc_seq_alloc(&q, 11 * MiB + half, 0);  /* the 12 MiB block, 0.5 left: not split, handed out whole */
    cpb_alloc_seq_alloc(&q, 13 * MiB + half, 0);  /* a 14 MiB segment, 0.5 left: not split */
    cpb_alloc_replay r = replay(&q, 0, CPB_OK);
    cr_expect_eq(r.reserved_end, (20 + 14 + 14) * MiB);
    cr_expect_eq(r.segments, 3);
    /* unsplit blocks count whole in the allocated bytes */
    cr_expect_eq(r.max_allocated, 5 * MiB + 3 * MiB + (12 * MiB + 512) + 12 * MiB + 14 * MiB);
    cr_expect_eq(r.peak_requested, 5 * MiB + 3 * MiB + (12 * MiB + 512) + (11 * MiB + half) + (13 * MiB + half));
    cpb_alloc_seq_release(&q);
}

Test(alloc_reserve, best_fit_takes_the_smallest_block_that_holds_the_request)
{
    cpb_alloc_seq q = {0};
    int a = cpb_alloc_seq_alloc(&q, 30 * MiB, 0);
    int b = cpb_alloc_seq_alloc(&q, 24 * MiB, 0);
    cpb_alloc_seq_alloc(&q, 40 * MiB, 0);
    cpb_alloc_seq_free(&q, a);
    cpb_alloc_seq_free(&q, b);
    cpb_alloc_seq_alloc(&q, 22 * MiB, 0); /* the 24 MiB block (not the 30), 2 MiB split off */
    cpb_alloc_seq_alloc(&q, 29 * MiB, 0); /* the 30 MiB block, 1 MiB left: not split */
    cpb_alloc_seq_alloc(&q, 3 * MiB, 0);  /* the 2 MiB tail is too small: a new 20 MiB segment */
    cpb_alloc_replay r = replay(&q, 0, CPB_OK);
    cr_expect_eq(r.reserved_end, (30 + 24 + 40 + 20) * MiB);
    cr_expect_eq(r.segments_made, 4);
    cpb_alloc_seq_release(&q);
}

Test(alloc_reserve, freed_neighbours_merge_within_their_segment)
{
    cpb_alloc_seq q = {0};
    int a = cpb_alloc_seq_alloc(&q, 5 * MiB, 0); /* a 20 MiB segment: a | rest */
    int b = cpb_alloc_seq_alloc(&q, 5 * MiB, 0); /* a | b | 10 MiB */
    cpb_alloc_seq_free(&q, a);
    cpb_alloc_seq_free(&q, b);                   /* a, b and the tail merge: one 20 MiB block */
    cpb_alloc_seq_alloc(&q, 20 * MiB, 0);        /* served by it: no new segment */
    cpb_alloc_replay r = replay(&q, 0, CPB_OK);
    cr_expect_eq(r.segments_made, 1);
    cr_expect_eq(r.max_reserved, 20 * MiB);
    cpb_alloc_seq_release(&q);
}

Test(alloc_reserve, a_stream_reuses_only_its_own_blocks)
{
    cpb_alloc_seq q = {0};
    int a = cpb_alloc_seq_alloc(&q, 64 * MiB, 0);
    cpb_alloc_seq_free(&q, a);
    cpb_alloc_seq_alloc(&q, 64 * MiB, 1); /* another stream: the cached block is not its */
    cpb_alloc_seq_alloc(&q, 64 * MiB, 0); /* the first stream's block again */
    cpb_alloc_replay r = replay(&q, 0, CPB_OK);
    cr_expect_eq(r.reserved_end, 128 * MiB);
    cr_expect_eq(r.segments_made, 2);
    cpb_alloc_seq_release(&q);
}

Test(alloc_reserve, cached_whole_segments_are_released_when_cudamalloc_fails)
{
    cpb_alloc_seq q = {0};
    int a = cpb_alloc_seq_alloc(&q, 60 * MiB, 0);
    cpb_alloc_seq_free(&q, a);            /* cached: reserved 60 */
    cpb_alloc_seq_alloc(&q, 70 * MiB, 0); /* 60 + 70 > 100: release the cached 60, retry */
    cpb_alloc_replay r = replay(&q, 100 * MiB, CPB_OK);
    cr_expect_eq(r.releases, 1);
    cr_expect_eq(r.reserved_end, 70 * MiB);
    cr_expect_eq(r.max_reserved, 70 * MiB);
    cr_expect_eq(r.segments, 1);
    /* without a limit the cache is kept: the reserve shows */
    r = replay(&q, 0, CPB_OK);
    cr_expect_eq(r.releases, 0);
    cr_expect_eq(r.reserved_end, 130 * MiB);
    cpb_alloc_seq_release(&q);
}

Test(alloc_reserve, a_split_segment_is_not_released_and_then_it_is_out_of_memory)
{
    cpb_alloc_seq q = {0};
    cpb_alloc_seq_alloc(&q, 5 * MiB, 0);  /* a 20 MiB segment, 15 MiB of it cached but split */
    cpb_alloc_seq_alloc(&q, 70 * MiB, 0); /* reserved 90 */
    cpb_alloc_seq_alloc(&q, 20 * MiB, 0); /* 110 > 100; nothing whole to release */
    cpb_alloc_replay r = replay(&q, 100 * MiB, CPB_ERR_OOM);
    cr_expect_eq(r.failed_event, 2);
    cr_expect_eq(r.releases, 1);
    cpb_alloc_seq_release(&q);
}

Test(alloc_reserve, empty_cache_releases_whole_cached_segments)
{
    cpb_alloc_seq q = {0};
    int a = cpb_alloc_seq_alloc(&q, 64 * MiB, 0);
    cpb_alloc_seq_alloc(&q, 32 * MiB, 0);
    cpb_alloc_seq_free(&q, a);
    cpb_alloc_seq_empty_cache(&q);
    cpb_alloc_replay r = replay(&q, 0, CPB_OK);
    cr_expect_eq(r.max_reserved, 96 * MiB);
    cr_expect_eq(r.reserved_end, 32 * MiB);
    cpb_alloc_seq_release(&q);
}

Test(alloc_reserve, malformed_sequences_are_refused_naming_the_event)
{
    cpb_alloc_event ev[3] = {{CPB_ALLOC_EV_ALLOC, 0, 100, 0}, {CPB_ALLOC_EV_FREE, 1, 0, 0}, {CPB_ALLOC_EV_FREE, 0, 0, 0}};
    cpb_alloc_replay r;
    char err[256] = "";
    cr_expect_eq(cpb_alloc_replay_run(ev, 3, 0, &r, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "event 1") != NULL, "%s", err);
    ev[1] = (cpb_alloc_event){CPB_ALLOC_EV_ALLOC, 0, 100, 0};
    cr_expect_eq(cpb_alloc_replay_run(ev, 3, 0, &r, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "again") != NULL, "%s", err);
    ev[1] = (cpb_alloc_event){CPB_ALLOC_EV_ALLOC, 1, -5, 0};
    cr_expect_eq(cpb_alloc_replay_run(ev, 3, 0, &r, err, sizeof err), CPB_ERR_INVALID);
}

/* ---- the loss sequences (model_scope_loss_seq.c) */

static cpb_setup setup_for(const char *framework, int fused)
{
    cpb_setup s;
    memset(&s, 0, sizeof s);
    s.fw = cpb_framework_find(framework);
    cr_assert(s.fw, "preset %s", framework);
    s.fused_loss = fused;
    s.cp = 1;
    return s;
}

Test(alloc_reserve, non_fused_loss_holds_the_bf16_logits_block_cached_at_its_peak)
{
    /* N = 16 Mi logits: L16 32 MiB (segment A), L32 64 (B), log_softmax 64 (C); L32 and L16
     * freed; nll's gradient G1 reuses B, log_softmax's backward G2 finds only A (32 MiB, too
     * small): a new segment D.  Peak: LS + G1 + G2 = 12 N = 192 MiB requested, A + B + C + D =
     * 224 MiB reserved: the reserve is A, 2 bytes per logit */
    const double tok = 16384, V = 1024;
    const int64_t N = (int64_t)(tok * V);
    const char *fws[] = {"hf-zero3", "torchtitan-cp"};
    for (int i = 0; i < 2; i++) {
        cpb_setup s = setup_for(fws[i], 0);
        cpb_loss_reserve lr;
        cpb_loss_reserve_of(&s, 1, tok, V, 4096, (int64_t)1 << 40, &lr);
        cr_expect_neq(lr.code, CPB_LOSS_CODE_NONE, "%s", fws[i]);
        cr_expect_eq(lr.requested_peak, 12 * N, "%s: the model's 12 bytes per logit", fws[i]);
        cr_expect_eq(lr.reserve, 2 * N, "%s", fws[i]);
        cr_expect_eq(lr.reserve_at_peak, 2 * N, "%s", fws[i]);
        cr_expect_eq(lr.oom, 0);
    }
    /* a room that holds 12 N but not 14 N: the cached 2 N is released for G2, no reserve */
    cpb_setup s = setup_for("hf-zero3", 0);
    cpb_loss_reserve lr;
    cpb_loss_reserve_of(&s, 1, tok, V, 4096, 13 * N, &lr);
    cr_expect_eq(lr.oom, 0);
    cr_expect_geq(lr.releases, 1);
    cr_expect_eq(lr.reserve, 0);
}

Test(alloc_reserve, liger_chunks_reuse_the_blocks_the_previous_chunk_freed)
{
    /* BT 4096, V 32768, H 4096: chunk 512 tokens (next_power_of_2(4096 / 8)), 8 chunks; a
     * chunk's bf16 logits 32 MiB, its [c, H] product 4 MiB (a 20 MiB segment).  Chunk 2's
     * logits are made before chunk 1's are dropped: 64 MiB requested, segments A (32), B
     * (20, the product's, cached whole) and C (32); chunk 3 on reuses A and C */
    cpb_setup s = setup_for("alst", 1);
    cpb_loss_reserve lr;
    cpb_loss_reserve_of(&s, 8, 4096, 32768, 4096, (int64_t)1 << 40, &lr);
    cr_expect_eq(lr.code, CPB_LOSS_CODE_LIGER);
    cr_expect_eq(lr.requested_peak, 64 * MiB);
    cr_expect_eq(lr.reserve_at_peak, 20 * MiB);
    cr_expect_eq(lr.reserve, 20 * MiB);
}

Test(alloc_reserve, losses_not_replayed_say_so)
{
    cpb_loss_reserve lr;
    cpb_setup s = setup_for("megatron", 0);
    cpb_loss_reserve_of(&s, 1, 4096, 32768, 4096, (int64_t)1 << 40, &lr);
    cr_expect_eq(lr.code, CPB_LOSS_CODE_NONE);
    cr_expect_eq(lr.reserve, 0);
    s = setup_for("deepspeed", 1); /* FPDT_LogitsLoss */
    cpb_loss_reserve_of(&s, 8, 4096, 32768, 4096, (int64_t)1 << 40, &lr);
    cr_expect_eq(lr.code, CPB_LOSS_CODE_NONE);
    /* ArcticTraining above sequence-parallel size 1 runs TiledFusedLogitsLoss: not replayed */
    s = setup_for("alst", 0);
    cpb_loss_reserve_of(&s, 8, 4096, 32768, 4096, (int64_t)1 << 40, &lr);
    cr_expect_eq(lr.code, CPB_LOSS_CODE_NONE);
    cpb_loss_reserve_of(&s, 1, 4096, 32768, 4096, (int64_t)1 << 40, &lr);
    cr_expect_eq(lr.code, CPB_LOSS_CODE_ARCTIC);
    cr_expect_gt(lr.reserve, 0);
}

/* ---- the reserve and fit */

static cpb_problem hf_baseline(int64_t S)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("llama3-8b", &p), CPB_OK);
    p.C = 1;
    p.S = S;
    p.dtype = CPB_BF16;
    const char *kv[] = {"framework=hf-zero3", "param_offload=on", "attn=fa2", NULL};
    cpb_knobs given;
    memset(&given, 0, sizeof given);
    for (int i = 0; kv[i]; i++) {
        char name[64], err[256];
        const char *eq = strchr(kv[i], '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - kv[i]), kv[i]);
        int idx = cpb_knob_index(name);
        cr_assert_geq(idx, 0, "knob %s", name);
        cr_assert_eq(cpb_knob_parse(cpb_knob_at(idx), eq + 1, &given, err, sizeof err), CPB_OK, "%s", err);
    }
    const cpb_method *m = cpb_method_find("ulysses");
    cr_assert(m);
    char err[512] = "";
    cr_assert_eq(cpb_knobs_apply(m, &given, &p, err, sizeof err), CPB_OK, "%s", err);
    return p;
}

Test(alloc_reserve, the_reserve_never_changes_fit_or_the_longest_context)
{
    /* the Arctic baseline recipe's setup on one H100 (paper/external.csv
     * alst-8b-1-hf-baseline): the non-fused loss peaks; its 2 bytes per logit of cached
     * bf16 logits would not fit beside the longest context's allocated peak, yet the
     * longest context is the allocated one: the allocator releases the cache first */
    const cpb_method *m = cpb_method_find("ulysses");
    cpb_problem p = hf_baseline(32000);
    cpb_sim_opts o = {0};
    int64_t best = 0;
    int evals = 0;
    char err[1024] = "";
    cr_assert_eq(cpb_model_max_context(&p, m, &o, 8192, 256 << 10, 1024, &best, &evals, err, sizeof err), CPB_OK,
                 "%s", err);
    cr_assert_gt(best, 0);
    p.S = best;
    cpb_model_estimate *e = NULL;
    cr_assert_eq(cpb_model_estimate_new(&p, m, &o, &e, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(e->status, CPB_OK, "%s", e->reason);
    cr_expect_eq(e->peak_moment, CPB_MOMENT_LOSS);
    const cpb_model_mem *pk = &e->moment[e->peak_moment];
    const int64_t cached = (int64_t)(2 * (double)best * 128256);
    cr_expect_gt(pk->total + cached, e->capacity, "the cached logits block alone would not fit beside the peak");
    cr_expect_geq(e->loss_reserve.releases, 1, "the allocator releases it instead");
    cr_expect_leq(e->peak_device, e->capacity);
    /* the row: peak_bytes is the allocated peak; the reserved figures sit beside it */
    static cpb_row row;
    cpb_model_estimate_row(e, &row);
    cr_expect_eq(row.peak_bytes, pk->total);
    cr_expect_eq(row.peak_device_bytes, e->peak_device);
    cr_expect_eq(row.peak_reserved_bytes, e->peak_device - e->fixed.cuda_ctx - e->fixed.nccl);
    cpb_model_estimate_free(e);

    /* at the recipe's 32K, with room: the 2 bytes per logit show in the reserved figures */
    p.S = 32000;
    cr_assert_eq(cpb_model_estimate_new(&p, m, &o, &e, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(e->status, CPB_OK, "%s", e->reason);
    cr_expect_eq(e->loss_reserve.code, CPB_LOSS_CODE_HF);
    cr_expect_geq(e->loss_reserve.reserve, (int64_t)(2.0 * 32000 * 128256));
    cr_expect_lt(e->loss_reserve.reserve, (int64_t)(2.0 * 32000 * 128256) + 8 * MiB, "plus the segments' rounding");
    cr_expect_eq(e->peak_device, e->moment[CPB_MOMENT_LOSS].total + e->loss_reserve.reserve);
    cpb_model_estimate_free(e);
}
