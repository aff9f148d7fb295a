/* test_tp_compose.c — `--tp N` (driver/tp_compose.h): for every registered method that
 * accepts a shape under tp, the ranks' token layouts partition the sequence and their
 * weight shards hold the TP rank's heads with the kv heads those use; the refusals name
 * their values; plan's candidates are the accepted powers of two; and inside a runtime
 * scope the method's world is the CP group. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_backend.h"
#include "cpb_method.h"
#include "cpb_presets.h"
#include "knobs.h"
#include "plan.h"
#include "registry.h"
#include "row.h"
#include "sim_layer.h"
#include "sim/sim_world.h"
#include "tp_compose.h"

static cpb_problem tiny(int C, int H, int G, int64_t S, int tp)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("tiny", &p), CPB_OK);
    p.C = C, p.H = H, p.G = G, p.S = S;
    p.dtype = CPB_FP32;
    cpb_knobs_set_int(&p.knobs, "tp", tp);
    return p;
}

/* the layouts of every rank cover each token once; every rank's heads are its TP rank's
 * query heads, its kv heads exactly those they use; the heads of all ranks cover all */
static int check_partition(const cpb_method *m, const cpb_problem *p)
{
    const int tp = cpb_tp_degree(p), g = p->H / p->G;
    int *held = calloc((size_t)p->S, sizeof(int)), qseen[CPB_MAX_HEADS] = {0};
    static cpb_segs segs;
    static cpb_shard sh;
    int64_t s0 = -1;
    for (int r = 0; r < p->C; r++) {
        cr_assert_eq(cpb_tp_token_layout(m, p, r, &segs), CPB_OK, "%s tp %d rank %d: no layout", m->name, tp, r);
        int64_t n = cpb_segs_total(&segs);
        if (s0 < 0) s0 = n;
        cr_assert_eq(n, s0, "%s tp %d: rank %d holds %lld tokens, rank 0 %lld", m->name, tp, r, (long long)n,
                     (long long)s0);
        for (int i = 0; i < segs.n; i++)
            for (int64_t j = 0; j < segs.len[i]; j++) held[segs.pos0[i] + j]++;
        cr_assert_eq(cpb_tp_weight_shard(m, p, r, &sh), CPB_OK, "%s tp %d rank %d: no shard", m->name, tp, r);
        const int t = r % tp, lo = t * p->H / tp, hi = (t + 1) * p->H / tp;
        for (int i = 0; i < sh.nq; i++) {
            cr_assert(sh.q[i] >= lo && sh.q[i] < hi, "%s tp %d rank %d: query head %d outside [%d, %d)", m->name, tp, r,
                      sh.q[i], lo, hi);
            qseen[sh.q[i]] = 1;
            int uses = 0;
            for (int k = 0; k < sh.nkv; k++) uses |= sh.kv[k] == sh.q[i] / g;
            cr_assert(uses, "%s tp %d rank %d: query head %d's kv head %d is not held", m->name, tp, r, sh.q[i],
                      sh.q[i] / g);
        }
    }
    for (int64_t i = 0; i < p->S; i++)
        cr_assert_eq(held[i], 1, "%s tp %d: token %lld held %d times", m->name, tp, (long long)i, held[i]);
    for (int h = 0; h < p->H; h++) cr_assert(qseen[h], "%s tp %d: no rank holds query head %d", m->name, tp, h);
    free(held);
    return 1;
}

Test(tp_compose, layouts_partition_and_shards_hold_their_heads)
{
    /* (C, H, G, S, tp): GQA 4 with G < tp and G = tp, MHA, an odd CP group, tp = world */
    static const struct { int C, H, G; int64_t S; int tp; } cases[] = {
        {4, 8, 2, 64, 2}, {4, 8, 1, 40, 4}, {8, 16, 2, 96, 4}, {6, 12, 6, 84, 2}, {6, 8, 8, 72, 2}, {8, 8, 8, 64, 8},
        {3, 6, 3, 66, 3}};
    int checked = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int i = 0; i < cpb_method_count(); i++) {
            const cpb_method *m = cpb_method_at(i);
            cpb_problem p = tiny(cases[c].C, cases[c].H, cases[c].G, cases[c].S, cases[c].tp);
            char why[1024] = "";
            if (cpb_tp_check(m, &p, why, sizeof why) != CPB_OK) continue;
            checked += check_partition(m, &p);
        }
    cr_assert_gt(checked, 20, "only %d (method, shape) pairs accepted --tp", checked);
}

Test(tp_compose, refusals_name_their_values)
{
    const cpb_method *m = cpb_method_find("ring");
    cr_assert_not_null(m);
    char why[1024] = "";
    cpb_problem p = tiny(6, 8, 2, 48, 4);
    cr_assert_neq(cpb_tp_check(m, &p, why, sizeof why), CPB_OK);
    cr_assert(strstr(why, "--tp 4") && strstr(why, "6 ranks"), "%s", why);
    p = tiny(4, 6, 6, 48, 4);
    cr_assert_neq(cpb_tp_check(m, &p, why, sizeof why), CPB_OK);
    cr_assert(strstr(why, "H = 6"), "%s", why);
    p = tiny(4, 6, 3, 48, 2);
    cr_assert_neq(cpb_tp_check(m, &p, why, sizeof why), CPB_OK);
    cr_assert(strstr(why, "G = 3"), "%s", why);
    /* the method's own check, of the shard's problem */
    p = tiny(8, 12, 4, 64, 2);
    cr_assert_neq(cpb_tp_check(cpb_method_find("ulysses"), &p, why, sizeof why), CPB_OK);
    cr_assert(strstr(why, "4 CP ranks") && strstr(why, "H = 6"), "%s", why);
    /* tp 1 is the method's own check */
    p = tiny(4, 8, 2, 64, 1);
    cr_assert_eq(cpb_tp_check(m, &p, why, sizeof why), CPB_OK, "%s", why);
}

Test(tp_compose, plan_candidates)
{
    int64_t v[8];
    cpb_problem p = tiny(64, 64, 8, 1 << 20, 1);
    cr_assert_eq(cpb_plan_tp_candidates(&p, v, 8), 4);
    cr_assert(v[0] == 0 && v[1] == 2 && v[2] == 4 && v[3] == 8, "0 (no TP, the default), 2, 4, 8");
    p = tiny(6, 8, 2, 48, 1); /* world 6: 4 and 8 do not divide it */
    cr_assert_eq(cpb_plan_tp_candidates(&p, v, 8), 2);
    p = tiny(8, 12, 3, 48, 1); /* G = 3: neither a multiple nor a divisor of 2, 4, 8 */
    cr_assert_eq(cpb_plan_tp_candidates(&p, v, 8), 1);
}

Test(tp_compose, scope_makes_the_cp_group_the_world)
{
    cpb_sim_world *w = NULL;
    cr_assert_eq(cpb_sim_world_create(6, &w), CPB_OK);
    cpb_ctx_opts o = {0};
    o.sim_rank = 3;
    o.sim_world = 6;
    o.backend_shared = w;
    cpb_ctx *ctx = NULL;
    char err[256];
    cr_assert_eq(cpb_ctx_create(&cpb_backend_sim, &o, &ctx, err, sizeof err), CPB_OK, "%s", err);
    cpb_group *cp = NULL, *sub = NULL;
    const int cp_members[] = {1, 3, 5};
    cr_assert_eq(cpb_group_create(ctx, 3, cp_members, &cp), CPB_OK, "%s", cpb_errmsg(ctx));
    cpb_problem p = tiny(6, 8, 2, 48, 2), q = p;
    q.C = 3;
    cpb_ctx_set_problem(ctx, &p);
    cpb_scope saved;
    cr_assert_eq(cpb_scope_enter(ctx, cp, &q, &saved), CPB_OK, "%s", cpb_errmsg(ctx));
    cr_assert_eq(cpb_rank(ctx), 1);
    cr_assert_eq(cpb_world_size(ctx), 3);
    cr_assert_eq(cpb_world(ctx), cp);
    cr_assert_eq(cpb_problem_of(ctx)->C, 3);
    /* members are CP ranks: 0 and 1 are world ranks 1 and 3 */
    const int two[] = {0, 1};
    cr_assert_eq(cpb_group_create(ctx, 2, two, &sub), CPB_OK, "%s", cpb_errmsg(ctx));
    cr_assert(sub->ranks[0] == 1 && sub->ranks[1] == 3 && sub->rank == 1);
    const int outside[] = {1, 3};
    cr_assert_neq(cpb_group_create(ctx, 2, outside, &sub), CPB_OK, "CP rank 3 does not exist in a world of 3");
    cpb_scope_leave(ctx, &saved);
    cr_assert_eq(cpb_rank(ctx), 3);
    cr_assert_eq(cpb_world_size(ctx), 6);
    cr_assert_eq(cpb_problem_of(ctx)->C, 6);
    cpb_ctx_destroy(ctx);
    cpb_sim_world_destroy(w);
}

/* plan tries tp 0 (none), 2, 4 and 8 where they divide the world and the heads and keep TP
 * inside a node; a --tp given to plan is not searched */
Test(tp_compose, plan_searches_tp_within_a_node)
{
    static cpb_plan pl;
    char err[1024] = "";
    cpb_plan_opts o;
    memset(&o, 0, sizeof o);
    cr_assert_eq(cpb_preset_find("llama3-70b", &o.base), CPB_OK);
    o.base.C = 16;
    o.base.S = 1 << 20;
    o.base.dtype = CPB_BF16;
    o.scope = "layer";
    o.methods = "ring,ulysses";
    o.sim.ranks = CPB_SIM_RANKS_SYMMETRIC;
    o.sim.gpus_per_node = 4;
    o.min_headroom = CPB_PLAN_MIN_HEADROOM;
    cr_assert_eq(cpb_plan_search(&o, &pl, err, sizeof err), CPB_OK, "%s", err);
    int seen[9] = {0};
    for (int i = 0; i < pl.n; i++) {
        int64_t t = cpb_row_knob_int(&pl.c[i].row, "tp");
        cr_assert(t == 0 || t == 2 || t == 4, "%s: tp %lld (8 spans the nodes of 4 GPUs)", pl.c[i].knobs, (long long)t);
        seen[t]++;
        cr_expect_eq(pl.c[i].row.code, CPB_OK, "%s at tp %lld: %s", pl.c[i].m->name, (long long)t, pl.c[i].row.reason);
    }
    cr_expect(seen[0] && seen[2] && seen[4], "tp 0, 2 and 4 each searched: %d %d %d", seen[0], seen[2], seen[4]);
    cpb_plan_free(&pl);
    cpb_knobs_set_int(&o.given, "tp", 8); /* given: tried as given, though it spans nodes */
    cr_assert_eq(cpb_plan_search(&o, &pl, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_gt(pl.n, 0);
    for (int i = 0; i < pl.n; i++) cr_expect_eq(cpb_row_knob_int(&pl.c[i].row, "tp"), 8);
    cpb_plan_free(&pl);
}

/* Under --tp the world is alike by moves of tp ranks (the TP groups are blocks of tp): the
 * simulator's symmetric replay replays tp ranks of a node and agrees with the exact replay,
 * for every registered method that takes the shape */
Test(tp_compose, symmetric_replay_under_tp_every_method)
{
    int compared = 0;
    for (int i = 0; i < cpb_method_count(); i++)
        for (int tp = 2; tp <= 4; tp *= 2) {
            const cpb_method *m = cpb_method_at(i);
            cpb_problem p;
            memset(&p, 0, sizeof p);
            cr_assert_eq(cpb_preset_find("llama3-8b", &p), CPB_OK);
            p.C = 8;
            p.S = 256 * 1024;
            p.dtype = CPB_BF16;
            cpb_knobs given = {0};
            cpb_knobs_set_int(&given, "tp", tp);
            char err[512] = "";
            if (cpb_knobs_apply(m, &given, &p, err, sizeof err) != CPB_OK || cpb_tp_check(m, &p, err, sizeof err))
                continue;
            static cpb_row ex, sy;
            cpb_sim_opts o = {0};
            o.gpus_per_node = 8;
            o.ranks = CPB_SIM_RANKS_EXACT;
            cr_assert_eq(cpb_sim_layer(&p, m, &o, &ex), CPB_OK, "%s", ex.reason);
            o.ranks = CPB_SIM_RANKS_SYMMETRIC;
            cr_assert_eq(cpb_sim_layer(&p, m, &o, &sy), CPB_OK, "%s", sy.reason);
            cr_assert_str_eq(ex.status, "ok", "%s tp %d: %s", m->name, tp, ex.reason);
            cr_expect_eq(sy.replayed_ranks, tp, "%s tp %d: %d ranks replayed", m->name, tp, sy.replayed_ranks);
            cr_expect_eq(sy.peak_bytes, ex.peak_bytes, "%s tp %d: peak", m->name, tp);
            cr_expect_eq(sy.step_s, ex.step_s, "%s tp %d: step %.17g vs exact %.17g", m->name, tp, sy.step_s, ex.step_s);
            compared++;
        }
    cr_assert_geq(compared, 2 * 8, "%d (method, tp) pairs compared", compared);
}
