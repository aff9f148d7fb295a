/* test_plan_prune.c — `cpbench plan`'s pruning (driver/plan.c) against the same search
 * with every point simulated in full (plan_opts.no_prune):
 * - memory first: a point is decided by rank 0 alone (exact by the symmetric-allocation
 *   rule) and only what fits is simulated in full: every row that is simulated in both is
 *   the same, so are the lengths --max-context finds;
 * - by speed: a fitting candidate whose bound on tokens/s is beaten by more than the tie by
 *   two candidates leaving as much memory free (and reaching as far, with --max-context)
 *   is not simulated in full: the
 *   recommendation, runner-up, ties, fastest, roomiest and frontier are the same, the other
 *   candidates keep their order, and each pruned one's real speed (from the full search) is
 *   within its bound and not tied, recommended or on the frontier.
 * Fixed length and --max-context, whole model and one layer, on odd worlds, MHA and
 * H*d != D, with memory tight enough that some candidates and lengths do not fit. */
#include <criterion/criterion.h>
#include <string.h>

#include "cpb_presets.h"
#include "plan.h"

static cpb_plan_opts opts(const char *model, int C, int64_t S, const char *scope, const char *methods)
{
    cpb_plan_opts o;
    memset(&o, 0, sizeof o);
    cr_assert_eq(cpb_preset_find(model, &o.base), CPB_OK);
    o.base.C = C;
    o.base.S = S;
    o.base.dtype = CPB_BF16;
    o.scope = scope;
    o.methods = methods;
    o.sim.ranks = CPB_SIM_RANKS_SYMMETRIC; /* as the command runs it */
    o.min_headroom = CPB_PLAN_MIN_HEADROOM;
    return o;
}

/* the row without what differs run to run (the time it was made) */
static void same_row(const cpb_row *a, const cpb_row *b, const char *what)
{
    static cpb_row x, y;
    x = *a;
    y = *b;
    memset(x.timestamp, 0, sizeof x.timestamp);
    memset(y.timestamp, 0, sizeof y.timestamp);
    cr_expect_str_eq(x.status, y.status, "%s: status", what);
    cr_expect_str_eq(x.reason, y.reason, "%s: reason", what);
    cr_expect_eq(x.peak_bytes, y.peak_bytes, "%s: peak", what);
    cr_expect_eq(x.host_peak_bytes, y.host_peak_bytes, "%s: host peak", what);
    cr_expect_eq(x.step_s, y.step_s, "%s: step %.17g s pruned, %.17g s not", what, x.step_s, y.step_s);
    cr_expect_eq(x.tokens_per_s_per_gpu, y.tokens_per_s_per_gpu, "%s: tokens/s", what);
    cr_expect_str_eq(x.plan, y.plan, "%s: plan marks", what);
    cr_expect(memcmp(&x, &y, sizeof x) == 0, "%s: the whole row", what);
}

static void same_plan(cpb_plan_opts o, int expect_unfit)
{
    static cpb_plan a, b;
    char err[1024] = "";
    cr_assert_eq(cpb_plan_search(&o, &a, err, sizeof err), CPB_OK, "%s", err);
    o.no_prune = 1;
    cr_assert_eq(cpb_plan_search(&o, &b, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(a.n, b.n);
    cr_expect_eq(a.recommended, b.recommended);
    cr_expect_eq(a.runner_up, b.runner_up);
    cr_expect_eq(a.closest, b.closest);
    cr_expect_eq(a.roomy, b.roomy);
    cr_expect_eq(a.fastest, b.fastest);
    cr_expect_eq(a.best_calibrated, b.best_calibrated);
    /* the tied among the pruned are not known: a bound within the tie counts as unknown */
    cr_expect_leq(a.ties, b.ties, "the tied simulated in full are tied in the full search");
    cr_expect_leq(b.ties, a.ties + a.ties_unknown, "every tie of the full search is known or counted as unknown");
    cr_expect_eq(a.exact_check, b.exact_check);
    cr_expect_eq(b.probes, 0, "no_prune simulates every point in full");
    cr_expect_eq(b.pruned, 0);
    cr_expect_gt(a.probes, 0, "pruned: points decided by memory first");
    cr_expect_lt(a.points, b.points, "pruned: fewer points simulated in full (%d, %d)", a.points, b.points);
    int unfit = 0, tied_pruned = 0;
    for (int i = 0; i < a.n; i++) {
        const cpb_plan_cand *x = &a.c[i], *y = &b.c[i];
        char what[256];
        snprintf(what, sizeof what, "%s %s at %lld", x->m->name, x->knobs, (long long)x->p.S);
        cr_expect_eq(x->p.S, y->p.S, "%s: length", what);
        cr_expect_eq(x->max_seq, y->max_seq, "%s: longest", what);
        cr_expect_eq(x->first_oom, y->first_oom, "%s: first oom", what);
        cr_expect_eq(x->limit, y->limit, "%s: limit", what);
        cr_expect_eq(x->need, y->need, "%s: need", what);
        cr_expect_eq(x->need_host, y->need_host, "%s: need host", what);
        cr_expect_eq(x->frontier, y->frontier, "%s: frontier", what);
        /* the recommendation's own mark says whether it has company, which pruned ties may give it */
        if (!x->pruned && !(i == a.recommended && a.ties_unknown > 0)) cr_expect_eq(x->tie, y->tie, "%s: tie", what);
        unfit += x->row.code != CPB_OK || x->first_oom > 0;
        if (x->pruned) {
            /* the bound holds, and it was right to prune */
            cr_expect_eq(y->row.code, CPB_OK, "%s: pruned, so it fits", what);
            cr_expect_leq(y->row.tokens_per_s_per_gpu, x->row.tokens_per_s_per_gpu, "%s: %.17g tokens/s/GPU, above "
                          "its bound %.17g", what, y->row.tokens_per_s_per_gpu, x->row.tokens_per_s_per_gpu);
            cr_expect_geq(y->row.step_s, x->row.step_s, "%s: step under its bound", what);
            cr_expect(!y->frontier && i != b.recommended && i != b.runner_up && i != b.fastest && i != b.roomy,
                      "%s: pruned, but it counts", what);
            /* tied in the full search: its bound is within the tie, counted as unknown */
            cr_expect(!x->tie, "%s: a pruned one is never marked tied", what);
            tied_pruned += y->tie;
            continue;
        }
        cr_expect_eq(x->bound, y->bound, "%s: bound", what);
        same_row(&x->row, &y->row, what);
    }
    cr_expect_eq(b.ties, a.ties + tied_pruned, "the full search's ties: the known ones and some pruned ones");
    cr_expect_leq(tied_pruned, a.ties_unknown, "a pruned tie was counted as unknown");
    /* the tied candidate a framework runs that the plan names */
    cr_expect_eq(cpb_plan_tied_in_framework(&a, o.stack), cpb_plan_tied_in_framework(&b, o.stack),
                 "the roomiest tied candidate a framework runs");
    /* the table: the same order, pruned candidates left out */
    for (int ka = 0, kb = 0;; ka++, kb++) {
        while (ka < a.n && a.c[a.order[ka]].pruned) ka++;
        while (kb < b.n && a.c[b.order[kb]].pruned) kb++;
        if (ka >= a.n || kb >= b.n) {
            cr_expect(ka >= a.n && kb >= b.n);
            break;
        }
        cr_expect_eq(a.order[ka], b.order[kb], "table rows %d and %d", ka, kb);
    }
    if (expect_unfit) cr_expect_gt(unfit, 0, "the case has candidates or lengths that do not fit");
    if (!o.max_context) cr_expect_gt(a.pruned, 0, "the case prunes by speed");
    cpb_plan_free(&a);
    cpb_plan_free(&b);
}

Test(plan_prune, fixed_length_model_scope_some_do_not_fit)
{
    cpb_plan_opts o = opts("llama3-8b", 8, 4 << 20, "model", "ulysses,ring,upipe,fpdt,tp");
    o.sim.mem_cap = (int64_t)64 << 30;
    same_plan(o, 1);
    /* every_row (--out): nothing pruned by speed, every row the full search's */
    static cpb_plan a, b;
    char err[1024] = "";
    o.every_row = 1;
    cr_assert_eq(cpb_plan_search(&o, &a, err, sizeof err), CPB_OK, "%s", err);
    o.no_prune = 1;
    cr_assert_eq(cpb_plan_search(&o, &b, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(a.pruned, 0);
    cr_assert_eq(a.n, b.n);
    for (int i = 0; i < a.n; i++) {
        cr_expect_eq(a.order[i], b.order[i]);
        same_row(&a.c[i].row, &b.c[i].row, a.c[i].m->name);
    }
    cpb_plan_free(&a);
    cpb_plan_free(&b);
}

Test(plan_prune, fixed_length_layer_scope_odd_world)
{
    /* qwen3-32b: H*d != D, GQA 8; 6 ranks */
    cpb_plan_opts o = opts("qwen3-32b", 6, 6 * 2 * 65536, "layer", "ring,usp,hupipe");
    o.sim.mem_cap = (int64_t)16 << 30;
    same_plan(o, 1);
}

Test(plan_prune, max_context_model_scope)
{
    cpb_plan_opts o = opts("llama3-8b", 8, 0, "model", "ulysses,fpdt,usp,offload");
    o.max_context = 1;
    o.seq_start = 1 << 20;
    o.seq_stop = 16 << 20;
    o.bisect = 1 << 20;
    same_plan(o, 1);
}

Test(plan_prune, max_context_layer_scope_mha_odd_world)
{
    /* llama2-7b: MHA (G = H); 12 ranks over nodes of 4 */
    cpb_plan_opts o = opts("llama2-7b", 12, 0, "layer", "ring,upipe,metp");
    o.sim.gpus_per_node = 4;
    o.max_context = 1;
    o.seq_start = 12 * 65536;
    o.seq_stop = 12 * 65536 * 32;
    o.bisect = 12 * 65536;
    o.sim.mem_cap = (int64_t)16 << 30;
    same_plan(o, 1);
}

Test(plan_prune, fixed_length_layer_scope_16_ranks_two_rank_bound)
{
    /* 16 ranks (CPB_PLAN_REFINE_MIN_RANKS): a candidate's bound is tightened by the last
     * rank before its point in full; a contiguous ring's rank 0 does the least attention,
     * so its bound from rank 0 alone is loose (test_sim_bound.c) */
    cpb_plan_opts o = opts("llama3-8b", 16, 16 * 2 * 32768, "layer", "ring,ulysses");
    same_plan(o, 0);
    static cpb_plan a;
    char err[1024] = "";
    cr_assert_eq(cpb_plan_search(&o, &a, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_gt(a.probes, a.n, "some candidates' bounds were tightened by a second probe (%d probes, %d candidates)",
                 a.probes, a.n);
    int contiguous_pruned = 0;
    for (int i = 0; i < a.n; i++) contiguous_pruned += a.c[i].pruned && strstr(a.c[i].knobs, "contiguous") != NULL;
    cr_expect_gt(contiguous_pruned, 0, "a contiguous ring is pruned by its tighter bound");
    cpb_plan_free(&a);
}

Test(plan_prune, uncalibrated_pruned_by_one_of_any_kind_once_a_calibrated_one_is_eligible)
{
    /* once a calibrated candidate simulated in full is eligible, the recommendation, its ties
     * and the runner-up are calibrated: an uncalibrated one (attn own) is pruned by one
     * candidate of any kind that dominates it beyond the tie.  The plan is the unpruned one
     * (same_plan), and some uncalibrated candidate was pruned with fewer than two
     * uncalibrated ones beating it (the rule was used) */
    cpb_plan_opts o = opts("llama3-8b", 8, 4 << 20, "model", "ulysses,upipe,usp");
    same_plan(o, 0);
    static cpb_plan a;
    char err[1024] = "";
    cr_assert_eq(cpb_plan_search(&o, &a, err, sizeof err), CPB_OK, "%s", err);
    const double tie = a.tie > 0 ? a.tie : CPB_PLAN_TIE;
    int by_one = 0;
    for (int i = 0; i < a.n; i++) {
        const cpb_plan_cand *c = &a.c[i];
        if (!c->pruned || !cpb_plan_row_uncalibrated(&c->row)) continue;
        int beaten = 0;
        for (int j = 0; j < a.n; j++) {
            const cpb_plan_cand *d = &a.c[j];
            if (d->pruned || !d->fits || !cpb_plan_row_uncalibrated(&d->row)) continue;
            if (cpb_plan_headroom(d) >= cpb_plan_headroom(c) &&
                d->row.tokens_per_s_per_gpu * (1.0 - tie) > c->row.tokens_per_s_per_gpu)
                beaten++;
        }
        by_one += beaten < 2;
    }
    cr_expect_gt(by_one, 0, "an uncalibrated candidate pruned by the rule for its kind");
    cpb_plan_free(&a);
}

Test(plan_prune, max_context_lengths_bracketed_and_implied)
{
    /* a wide range (1M to 64M by 1M: 7 growth points and up to 5 bisection steps): the
     * lengths are bracketed and implied (plan.c, len_bracket), the plan is the one every
     * length simulated in full gives, in fewer probes than the sweep's path alone */
    cpb_plan_opts o = opts("llama3-8b", 8, 0, "model", "ulysses,upipe");
    o.max_context = 1;
    o.seq_start = 1 << 20;
    o.seq_stop = 64 << 20;
    o.bisect = 1 << 20;
    same_plan(o, 1);
    static cpb_plan a;
    char err[1024] = "";
    cr_assert_eq(cpb_plan_search(&o, &a, err, sizeof err), CPB_OK, "%s", err);
    int found = 0;
    for (int i = 0; i < a.n; i++) found += a.c[i].max_seq > 0;
    cr_expect_gt(found, 0, "some candidate fits a length");
    cr_expect_lt(a.probes, 7 * a.n, "%d probes for %d candidates", a.probes, a.n);
    cpb_plan_free(&a);
}

Test(plan_prune, tied_crowd_pruned_with_its_ties_counted_as_unknown)
{
    /* 16 ranks, one layer at 1M: many candidates within the tie of the best.  One that two
     * candidates simulated in full beat (faster than its bound, as much memory free) is
     * pruned even when its bound is within the tie: it cannot be chosen, and it is counted
     * in ties_unknown.  The plan is the unpruned one (same_plan: every tie of the full search
     * is known or among the unknown), and the rule was used */
    cpb_plan_opts o = opts("llama3-8b", 16, 16 * 2 * 32768, "layer", "ring,ulysses,usp");
    same_plan(o, 0);
    static cpb_plan a;
    char err[1024] = "";
    cr_assert_eq(cpb_plan_search(&o, &a, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_gt(a.ties_unknown, 0, "some pruned candidate's bound is within the tie");
    cr_expect_gt(a.ties, 0, "and some tied ones were simulated in full");
    cpb_plan_free(&a);
}

Test(plan_prune, max_context_shorter_than_the_reach_pruned_whatever_its_headroom)
{
    /* with --max-context a candidate shorter than the recommendation's reach (the longest
     * eligible length less the bisection step) is never tied: two eligible ones simulated in
     * full that reach as far and run faster than its bound prune it even when they leave
     * less memory free (plan.c, prunable's `untied`).  The plan is the unpruned one, and the
     * rule was used: some pruned candidate has fewer than two such with as much headroom */
    cpb_plan_opts o = opts("llama3-8b", 16, 0, "layer", "ring,ulysses,usp");
    o.max_context = 1;
    o.seq_start = 16 * 32768;
    o.seq_stop = 16 * 32768 * 64;
    o.bisect = 16 * 32768;
    same_plan(o, 1);
    static cpb_plan a;
    char err[1024] = "";
    cr_assert_eq(cpb_plan_search(&o, &a, err, sizeof err), CPB_OK, "%s", err);
    int by_length = 0;
    for (int i = 0; i < a.n; i++) {
        const cpb_plan_cand *c = &a.c[i];
        if (!c->pruned) continue;
        int roomier = 0;
        for (int j = 0; j < a.n; j++) {
            const cpb_plan_cand *d = &a.c[j];
            if (d->pruned || !d->fits || d->max_seq < c->max_seq) continue;
            roomier += cpb_plan_headroom(d) >= cpb_plan_headroom(c) &&
                       d->row.tokens_per_s_per_gpu > c->row.tokens_per_s_per_gpu;
        }
        by_length += roomier < 2;
    }
    cr_expect_gt(by_length, 0, "a candidate pruned by the rule for the ones shorter than the reach");
    cpb_plan_free(&a);
}
