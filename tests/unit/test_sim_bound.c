/* test_sim_bound.c — the simulator's memory-only run (cpb_sim_opts.memory_only: rank 0
 * alone, what `plan` decides points and prunes by) against the full run, for every method
 * of the registry: the memory is the same exactly (every rank makes the same allocations),
 * and its times are lower bounds of the full run's (cpb_sim_lower_bound: the sum of one
 * stream's entries), so its rates are upper bounds.  One node and several, an odd world,
 * MHA and a GQA ratio of 4, a host-offloading method (PCIe sharing) included.  Also: auto
 * replays one rank per class from 8 ranks up only when that is exact, and says why not. */
#include <criterion/criterion.h>
#include <string.h>

#include "cpb_method.h"
#include "cpb_presets.h"
#include "knobs.h"
#include "model_scope.h"
#include "registry.h"
#include "row.h"
#include "sim_layer.h"

static int checked;

static void bound_of(const cpb_method *m, const char *model, int C, int gpn, int64_t S)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find(model, &p), CPB_OK);
    p.C = C;
    p.S = S;
    p.dtype = CPB_BF16;
    char err[512];
    cpb_knobs none = {0};
    if (cpb_knobs_apply(m, &none, &p, err, sizeof err) != CPB_OK) return;
    if (m->check && m->check(&p, err, sizeof err) != CPB_OK) return; /* refused: nothing to bound */
    cpb_sim_opts o = {0};
    o.gpus_per_node = gpn;
    o.mem_cap = o.host_mem_cap = (int64_t)1 << 60;
    static cpb_row full, mem;
    cr_assert_eq(cpb_sim_layer(&p, m, &o, &full), CPB_OK, "%s: %s", m->name, full.reason);
    o.memory_only = 1;
    cr_assert_eq(cpb_sim_layer(&p, m, &o, &mem), CPB_OK, "%s: %s", m->name, mem.reason);
    cr_assert_str_eq(full.status, "ok", "%s on %d (%d per node) at %lld: %s", m->name, C, gpn, (long long)S, full.reason);
    cr_assert_str_eq(mem.status, "ok", "%s: %s", m->name, mem.reason);
    const char *w = m->name;
    cr_expect_eq(mem.peak_bytes, full.peak_bytes, "%s C=%d: peak %lld, full %lld", w, C, (long long)mem.peak_bytes,
                 (long long)full.peak_bytes);
    cr_expect_eq(mem.host_peak_bytes, full.host_peak_bytes, "%s C=%d: host peak", w, C);
    cr_expect_eq(mem.intermediate_bytes, full.intermediate_bytes, "%s C=%d: intermediate", w, C);
    cr_expect(memcmp(mem.tag_peak, full.tag_peak, sizeof mem.tag_peak) == 0, "%s C=%d: per-tag peaks", w, C);
    cr_expect(memcmp(mem.at_peak_bytes, full.at_peak_bytes, sizeof mem.at_peak_bytes) == 0, "%s C=%d: at the peak", w, C);
    cr_expect_eq(mem.nstreams, full.nstreams, "%s C=%d: streams", w, C);
    cr_expect_gt(mem.step_s, 0, "%s C=%d: a bound", w, C);
    cr_expect_leq(mem.step_s, full.step_s, "%s C=%d: step bound %.9g > %.9g", w, C, mem.step_s, full.step_s);
    cr_expect_leq(mem.fwd_s, full.fwd_s, "%s C=%d: forward bound %.9g > %.9g", w, C, mem.fwd_s, full.fwd_s);
    cr_expect_geq(mem.tokens_per_s_per_gpu, full.tokens_per_s_per_gpu, "%s C=%d: tokens/s", w, C);
    checked++;
}

Test(sim_bound, memory_only_is_exact_memory_and_a_lower_bound_on_time)
{
    checked = 0;
    for (int i = 0; i < cpb_method_count(); i++) {
        const cpb_method *m = cpb_method_at(i);
        bound_of(m, "llama3-8b", 8, 8, 256 * 1024);  /* one node, GQA 4 */
        bound_of(m, "llama2-7b", 16, 4, 256 * 1024); /* MHA, four nodes */
        bound_of(m, "qwen3-32b", 4, 2, 96 * 1024);   /* H*d != D, two nodes */
    }
    cr_expect_geq(checked, 2 * cpb_method_count(), "most methods take most shapes (%d checked)", checked);
}

Test(sim_bound, auto_is_exact_up_to_64_ranks_and_says_why_it_replays_every_rank)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("llama3-8b", &p), CPB_OK);
    p.C = 8;
    p.S = 256 * 1024;
    p.dtype = CPB_BF16;
    char err[512];
    cpb_knobs none = {0};
    static cpb_row a, ex;
    cpb_sim_opts o = {0};
    /* ulysses: every rank alike exactly, one replayed */
    const cpb_method *u = cpb_method_find("ulysses");
    cr_assert_eq(cpb_knobs_apply(u, &none, &p, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(cpb_sim_layer(&p, u, &o, &a), CPB_OK);
    cr_expect_eq(a.replayed_ranks, 1);
    cr_expect_str_eq(a.sym_fallback, "");
    /* ring: its backward's work depends on the rank: auto replays every rank, says why, and
     * its times are the exact mode's */
    const cpb_method *r = cpb_method_find("ring");
    cr_assert_eq(cpb_knobs_apply(r, &none, &p, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(cpb_sim_layer(&p, r, &o, &a), CPB_OK);
    o.ranks = CPB_SIM_RANKS_EXACT;
    cr_assert_eq(cpb_sim_layer(&p, r, &o, &ex), CPB_OK);
    cr_expect_eq(a.replayed_ranks, 8);
    cr_expect(strstr(a.sym_fallback, "op times differ") != NULL, "the reason: %s", a.sym_fallback);
    cr_expect_eq(a.step_s, ex.step_s);
    cr_expect_eq(a.peak_bytes, ex.peak_bytes);
    cr_expect_str_eq(ex.sym_fallback, "", "exact was asked: no fallback to report");
    /* below 8 ranks auto replays every rank without a fallback to report */
    p.C = 4;
    o.ranks = CPB_SIM_RANKS_AUTO;
    cr_assert_eq(cpb_sim_layer(&p, u, &o, &a), CPB_OK);
    cr_expect_eq(a.replayed_ranks, 4);
    cr_expect_str_eq(a.sym_fallback, "");
}

/* two whole-model points that differ only in a whole-model part (gradient accumulation)
 * share one layer trial through the cache, and its row is the one each gets alone */
Test(sim_cache, whole_model_parts_share_the_layer_trial)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("llama3-8b", &p), CPB_OK);
    p.C = 8;
    p.S = 512 * 1024;
    p.dtype = CPB_BF16;
    const cpb_method *m = cpb_method_find("upipe");
    char err[512];
    cpb_knobs none = {0};
    cr_assert_eq(cpb_knobs_apply(m, &none, &p, err, sizeof err), CPB_OK, "%s", err);
    cpb_problem q = p;
    cr_assert_eq(cpb_knobs_set_int(&q.knobs, "grad_accum", 4), CPB_OK);
    cpb_sim_opts o = {0};
    cpb_model_estimate *alone = NULL, *a = NULL, *b = NULL;
    cr_assert_eq(cpb_model_estimate_new(&q, m, &o, &alone, err, sizeof err), CPB_OK, "%s", err);
    o.cache = cpb_sim_cache_new();
    cr_assert_eq(cpb_model_estimate_new(&p, m, &o, &a, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(cpb_model_estimate_new(&q, m, &o, &b, err, sizeof err), CPB_OK, "%s", err);
    int hits, misses;
    cpb_sim_cache_counts(o.cache, &hits, &misses);
    cr_expect_eq(hits, 1, "the second point's layer trial came from the cache");
    cr_expect_eq(misses, 1);
    cr_expect_eq(b->attn.step_s, alone->attn.step_s);
    cr_expect_eq(b->attn.peak_bytes, alone->attn.peak_bytes);
    cr_expect(memcmp(&b->attn, &alone->attn, sizeof b->attn) == 0, "the shared row is the row alone");
    cr_expect_eq(b->step_s, alone->step_s, "the whole model's step");
    cr_expect_neq(a->step_s, b->step_s, "accumulation changes the step");
    /* a layer knob is part of the key: another head chunk is simulated */
    cpb_problem r = p;
    cr_assert_eq(cpb_knobs_set_int(&r.knobs, "head_chunk", 16), CPB_OK);
    cpb_model_estimate *c = NULL;
    cr_assert_eq(cpb_model_estimate_new(&r, m, &o, &c, err, sizeof err), CPB_OK, "%s", err);
    cpb_sim_cache_counts(o.cache, &hits, &misses);
    cr_expect_eq(misses, 2);
    cpb_model_estimate_free(alone), cpb_model_estimate_free(a), cpb_model_estimate_free(b), cpb_model_estimate_free(c);
    cpb_sim_cache_free(o.cache);
}

/* memory_only 2 (what plan asks before a point in full): rank 0 and the last rank, the
 * larger of their bounds.  Every method on 16 ranks over two nodes: the memory is rank 0's
 * exactly, the bound at least rank 0's and still a bound of the full run's times; for a
 * contiguous ring, where rank C - 1 attends to every earlier block and rank 0 to its own
 * only, strictly tighter. */
static void two_rank_bound(const cpb_method *m, const char *layout, int C, int64_t S, int *tighter)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("llama3-8b", &p), CPB_OK);
    p.C = C;
    p.S = S;
    p.dtype = CPB_BF16;
    char err[512];
    cpb_knobs k = {0};
    if (layout) cr_assert_eq(cpb_knobs_set_str(&k, "ring_layout", layout), CPB_OK);
    if (layout) cr_assert_eq(cpb_knobs_set_str(&k, "attn", "own"), CPB_OK); /* a contiguous ring runs on our kernels */
    if (cpb_knobs_apply(m, &k, &p, err, sizeof err) != CPB_OK) return;
    if (m->check && m->check(&p, err, sizeof err) != CPB_OK) return;
    cpb_sim_opts o = {0};
    o.mem_cap = o.host_mem_cap = (int64_t)1 << 60;
    static cpb_row full, one, two;
    cr_assert_eq(cpb_sim_layer(&p, m, &o, &full), CPB_OK, "%s: %s", m->name, full.reason);
    cr_assert_str_eq(full.status, "ok", "%s: %s", m->name, full.reason);
    o.memory_only = 1;
    cr_assert_eq(cpb_sim_layer(&p, m, &o, &one), CPB_OK);
    o.memory_only = 2;
    cr_assert_eq(cpb_sim_layer(&p, m, &o, &two), CPB_OK);
    cr_assert_str_eq(two.status, "ok", "%s: %s", m->name, two.reason);
    cr_expect_eq(two.peak_bytes, one.peak_bytes, "%s: peak", m->name);
    cr_expect_eq(two.host_peak_bytes, one.host_peak_bytes, "%s: host peak", m->name);
    cr_expect_geq(two.step_s, one.step_s, "%s: no looser than rank 0's", m->name);
    cr_expect_geq(two.fwd_s, one.fwd_s, "%s: forward no looser than rank 0's", m->name);
    cr_expect_leq(two.step_s, full.step_s, "%s: step bound %.9g > %.9g", m->name, two.step_s, full.step_s);
    cr_expect_leq(two.fwd_s, full.fwd_s, "%s: forward bound %.9g > %.9g", m->name, two.fwd_s, full.fwd_s);
    cr_expect_geq(two.tokens_per_s_per_gpu, full.tokens_per_s_per_gpu, "%s: tokens/s", m->name);
    /* 16 ranks at 512K: full 10.11 s, rank 0's bound 0.37 s, the two ranks' 10.11 s */
    if (tighter) *tighter = two.step_s > one.step_s * 1.5;
}

Test(sim_bound, two_ranks_bound_is_a_bound_and_tighter_for_a_contiguous_ring)
{
    for (int i = 0; i < cpb_method_count(); i++) two_rank_bound(cpb_method_at(i), NULL, 16, 512 * 1024, NULL);
    int tighter = 0;
    two_rank_bound(cpb_method_find("ring"), "contiguous", 16, 512 * 1024, &tighter);
    cr_expect(tighter, "a contiguous ring: the last rank's work is many times rank 0's");
}
