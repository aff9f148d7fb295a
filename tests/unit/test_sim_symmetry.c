/* test_sim_symmetry.c — the simulator's symmetric mode (one rank per class of ranks alike
 * by symmetry, sim_layer.h) against its exact mode (every rank) where both are cheap: peak
 * bytes and every memory column equal exactly, and the times too.  The times are equal
 * bit for bit: a replayed rank's timeline is computed by the same operations in the same
 * order in both modes (a maximum over arrivals does not depend on their order), and ranks
 * taken as alike up to some ops' work (ring attention's backward) have their largest work
 * on the replayed ranks 0 .. P-1, which set the pace in the exact replay too.  Where a
 * future schedule breaks that, the times must stay within the op-time difference the row
 * reports.  Also: the periods of a world, a planted asymmetric method falls back to the
 * exact mode, and the set-up of the samples. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "cpb_method.h"
#include "cpb_presets.h"
#include "knobs.h"
#include "method_rules.h"
#include "row.h"
#include "sim/sim_symmetry.h"
#include "sim_layer.h"

/* a preset, or "HxG" for a made-up shape of H query and G kv heads of 128 (D = 128 H) */
static cpb_problem problem(const char *model, const cpb_method *m, int C, int64_t S, const char *knobs)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    if (sscanf(model, "%dx%d", &p.H, &p.G) == 2) {
        p.d = 128;
        p.D = 128 * (int64_t)p.H;
        p.rope_base = 10000.0;
        snprintf(p.model, sizeof p.model, "custom");
    } else {
        cr_assert_eq(cpb_preset_find(model, &p), CPB_OK);
    }
    p.S = S;
    p.C = C;
    p.dtype = CPB_BF16;
    cpb_knobs given = {0};
    char buf[128], err[512];
    snprintf(buf, sizeof buf, "%s", knobs ? knobs : "");
    for (char *t = strtok(buf, " "); t; t = strtok(NULL, " ")) {
        char *eq = strchr(t, '=');
        cr_assert(eq);
        *eq = 0;
        const cpb_knob *k = cpb_knob_of(m, t);
        cr_assert(k, "knob %s", t);
        cr_assert_eq(cpb_knob_parse(k, eq + 1, &given, err, sizeof err), CPB_OK, "%s", err);
    }
    cr_assert_eq(cpb_knobs_apply(m, &given, &p, err, sizeof err), CPB_OK, "%s", err);
    return p;
}

static void both(const char *method, const char *model, int C, int gpn, int64_t S, const char *knobs,
                 int expect_replayed, cpb_row *ex, cpb_row *sy)
{
    const cpb_method *m = cpb_method_find(method);
    cr_assert(m, "%s", method);
    cpb_problem p = problem(model, m, C, S, knobs);
    cpb_sim_opts o = {0};
    o.gpus_per_node = gpn;
    o.ranks = CPB_SIM_RANKS_EXACT;
    cr_assert_eq(cpb_sim_layer(&p, m, &o, ex), CPB_OK, "%s", ex->reason);
    o.ranks = CPB_SIM_RANKS_SYMMETRIC;
    cr_assert_eq(cpb_sim_layer(&p, m, &o, sy), CPB_OK, "%s", sy->reason);
    const char *what = method;
    cr_assert_str_eq(ex->status, "ok", "%s C=%d: %s", what, C, ex->reason);
    cr_assert_str_eq(sy->status, ex->status, "%s C=%d", what, C);
    cr_expect_eq(ex->replayed_ranks, C, "%s: the exact mode replays every rank", what);
    if (expect_replayed > 0)
        cr_expect_eq(sy->replayed_ranks, expect_replayed, "%s C=%d gpn=%d: %d ranks replayed, expected %d", what, C, gpn,
                     sy->replayed_ranks, expect_replayed);
    /* memory: exactly */
    cr_expect_eq(sy->peak_bytes, ex->peak_bytes, "%s C=%d: peak %lld vs %lld", what, C, (long long)sy->peak_bytes,
                 (long long)ex->peak_bytes);
    cr_expect_eq(sy->host_peak_bytes, ex->host_peak_bytes, "%s: host peak", what);
    cr_expect_eq(sy->intermediate_bytes, ex->intermediate_bytes, "%s: intermediate", what);
    cr_expect_eq(sy->fwd_peak_bytes, ex->fwd_peak_bytes, "%s: forward peak", what);
    cr_expect_eq(sy->bwd_peak_bytes, ex->bwd_peak_bytes, "%s: backward peak", what);
    cr_expect_eq(memcmp(sy->at_peak_bytes, ex->at_peak_bytes, sizeof ex->at_peak_bytes), 0, "%s: by tag", what);
    cr_expect_eq(sy->comm_bytes, ex->comm_bytes, "%s: bytes sent", what);
    cr_expect_eq(sy->pcie_bytes, ex->pcie_bytes, "%s: PCIe bytes", what);
    /* times: exactly (see the top of the file) */
    cr_expect_eq(sy->step_s, ex->step_s, "%s C=%d gpn=%d: step %.17g vs exact %.17g (ops differ by %g)", what, C, gpn,
                 sy->step_s, ex->step_s, sy->sym_op_diff);
    cr_expect_eq(sy->fwd_s, ex->fwd_s, "%s C=%d: forward %.17g vs %.17g", what, C, sy->fwd_s, ex->fwd_s);
    cr_expect_eq(sy->crit_compute_s + sy->crit_comm_s + sy->crit_host_s,
                 ex->crit_compute_s + ex->crit_comm_s + ex->crit_host_s, "%s: critical path", what);
}

static void agree(const char *method, const char *model, int C, int gpn, int64_t S, const char *knobs,
                  int expect_replayed)
{
    static cpb_row ex, sy;
    both(method, model, C, gpn, S, knobs, expect_replayed, &ex, &sy);
}

/* Rule 3 of the method author's checklist (runtime/cpb_method.h), for every method of the
 * registry at its default options: on one node every rank stands for all (period 1), with
 * an even and an odd world; on two nodes one node's ranks stand for the others.  A method
 * whose ranks issue their ops in a rank-dependent order fails here by name
 * (test_method_rules.c plants one). */
static void registry_replays_symmetrically(const char *model, int C, int gpn, int64_t S, int max_replayed)
{
    int ran = 0;
    for (int i = 0; i < cpb_method_count(); i++) {
        const cpb_method *m = cpb_method_at(i);
        cpb_problem p = problem(model, m, C, S, NULL);
        char why[1024];
        if (m->check && m->check(&p, why, sizeof why) != CPB_OK) {
            cr_log_info("%s refuses %s on %d GPUs: %s", m->name, model, C, why);
            continue;
        }
        static cpb_row ex, sy;
        cr_expect_eq(cpb_rules_symmetric(m, &p, gpn, max_replayed, &ex, &sy, why, sizeof why), 0, "%s", why);
        ran++;
    }
    cr_expect_gt(ran, 0, "no method accepts %s on %d GPUs", model, C);
}

Test(sim_symmetry, every_registered_method_one_node)
{
    registry_replays_symmetrically("llama3-8b", 8, 8, 1 << 20, 1);
    registry_replays_symmetrically("40x5", 5, 8, 5 * 2 * 65536, 1);
}

Test(sim_symmetry, every_registered_method_two_nodes)
{
    registry_replays_symmetrically("llama3-8b", 16, 8, 1 << 21, 8);
}

/* several nodes: one node's ranks stand for the others; 3 and 5 nodes, a node of 4 */
Test(sim_symmetry, several_nodes)
{
    agree("ring", "llama3-8b", 24, 8, 3 << 20, NULL, 8);
    agree("ring", "llama3-8b", 20, 4, 5 << 18, NULL, 4);
    agree("usp", "llama3-8b", 24, 8, 3 << 20, "ulysses_degree=4", 8);
    agree("usp", "llama3-8b", 32, 8, 1 << 21, "ulysses_degree=8", 8);
    agree("hupipe", "qwen3-32b", 32, 8, 1 << 22, "ulysses_degree=8 head_chunk=16", 8);
    agree("hupipe", "llama3-8b", 16, 4, 1 << 20, "ulysses_degree=4 head_chunk=8", 4);
    agree("fpdt", "llama3-8b", 16, 4, 1 << 21, NULL, 4);
    agree("fpdt", "llama3-8b", 16, 8, 1 << 21, "fpdt_impl=pipelined seq_chunk=131072", 8);
    agree("upipe", "llama3-8b", 16, 8, 1 << 20, "head_chunk=16", 8);
    agree("offload", "qwen3-32b", 16, 8, 1 << 20, NULL, 8);
    agree("ulysses", "llama3-8b", 32, 8, 1 << 20, NULL, 8);
    agree("tp", "llama3-8b", 16, 8, 1 << 20, NULL, 8);
}

/* odd world sizes on one node, MHA, H*d != D, a non-power-of-two length */
Test(sim_symmetry, odd_shapes)
{
    agree("ring", "llama3-8b", 5, 8, 5 * 2 * 65536, NULL, 1);
    agree("ring", "llama2-7b", 3, 8, 3 * 2 * 100000, NULL, 1);
    agree("ulysses", "qwen3-32b", 4, 8, 3 << 18, NULL, 1);
    agree("usp", "llama3-8b", 6, 8, 6 * 2 * 50000, "ulysses_degree=2", 2); /* groups {0,1}, {2,3}: moves of 2 */
    agree("metp", "llama2-7b", 4, 2, 1 << 18, NULL, 2);
    agree("fpdt", "qwen3-32b", 8, 8, 3 << 19, "seq_chunk=262144", 1);
}

/* Ulysses groups of 3 in nodes of 8: moving by a node maps a group onto ranks of two
 * groups, so the samples differ and every rank is simulated; groups of 2 in nodes of 6:
 * moving by a node keeps them */
Test(sim_symmetry, groups_that_straddle_nodes_fall_back_to_every_rank)
{
    agree("usp", "24x6", 24, 8, 3 << 20, "ulysses_degree=3", 24);
    agree("hupipe", "llama3-8b", 24, 6, 3 << 20, "ulysses_degree=2", 6);
}

Test(sim_symmetry, periods_keep_nodes_whole)
{
    int p[16];
    int n = cpb_sim_periods(8, 8, p, 16);
    cr_assert_eq(n, 3);
    cr_expect(p[0] == 1 && p[1] == 2 && p[2] == 4);
    n = cpb_sim_periods(6, 8, p, 16);
    cr_assert_eq(n, 3);
    cr_expect(p[0] == 1 && p[1] == 2 && p[2] == 3);
    n = cpb_sim_periods(48, 8, p, 16);
    cr_assert_eq(n, 3, "8, 16, 24");
    cr_expect(p[0] == 8 && p[1] == 16 && p[2] == 24);
    cr_expect_eq(cpb_sim_periods(20, 8, p, 16), 0, "a partial last node: no move keeps the nodes");
    cr_expect_eq(cpb_sim_periods(1, 8, p, 16), 0);
    cr_expect_eq(cpb_sim_periods(7, 8, p, 16), 1, "7 ranks on one node: only period 1");
}

/* ---- a planted asymmetric method: rank 2 does a second GEMM (another trace), or a much
 * larger one (the same trace, other work) */
static int plant_mode;

static int plant_forward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    (void)state;
    const int odd = cpb_rank(ctx) == 2;
    /* mode 2: the others multiply only an eighth of the rows (the same buffers) */
    int64_t rows = plant_mode == 2 && !odd ? L->s / 8 : L->s, D = L->p.D;
    cpb_buf *t = NULL;
    CPB_TRY(cpb_alloc(ctx, &t, L->s * D, L->p.dtype, CPB_TAG_TEMP, "plant"));
    int n = plant_mode == 1 && odd ? 2 : 1;
    for (int i = 0; i < n; i++)
        CPB_TRY(cpb_gemm(ctx, CPB_STREAM_COMPUTE, 0, 0, 1.0f, cpb_mat(L->x, 0, rows, D, D), cpb_mat(L->wo, 0, D, D, D),
                         0.0f, cpb_mat(t, 0, rows, D, D)));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &t));
    return cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_whole(L->y), cpb_whole(L->x));
}

static int plant_backward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    (void)state;
    return cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_whole(L->dx), cpb_whole(L->dy));
}

static int plant_check(const cpb_problem *p, char *why, size_t n)
{
    (void)p, (void)why, (void)n;
    return CPB_OK;
}

static const cpb_method plant = {
    .name = "plant", .summary = "test method", .check = plant_check, .token_layout = cpb_layout_contiguous,
    .forward = plant_forward, .backward = plant_backward};

static void plant_run(int mode, cpb_row *ex, cpb_row *sy)
{
    plant_mode = mode;
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cpb_preset_find("llama3-8b", &p);
    p.S = 8 * 4096;
    p.C = 8;
    p.dtype = CPB_BF16;
    cpb_sim_opts o = {0};
    o.ranks = CPB_SIM_RANKS_EXACT;
    cr_assert_eq(cpb_sim_layer(&p, &plant, &o, ex), CPB_OK);
    o.ranks = CPB_SIM_RANKS_SYMMETRIC;
    cr_assert_eq(cpb_sim_layer(&p, &plant, &o, sy), CPB_OK);
    cr_assert_str_eq(ex->status, "ok", "%s", ex->reason);
    cr_assert_str_eq(sy->status, "ok", "%s", sy->reason);
}

Test(sim_symmetry, a_rank_with_another_trace_is_not_taken_as_alike)
{
    static cpb_row ex, sy;
    plant_run(0, &ex, &sy);
    cr_expect_eq(sy.replayed_ranks, 1, "the control: every rank alike");
    cr_expect_eq(sy.step_s, ex.step_s);
    plant_run(1, &ex, &sy);
    cr_expect_eq(sy.replayed_ranks, 8, "rank 2's extra GEMM: every rank replayed, got %d", sy.replayed_ranks);
    cr_expect_eq(sy.step_s, ex.step_s, "the fallback is the exact answer");
    cr_expect_gt(ex.step_s, 0);
}

Test(sim_symmetry, a_rank_with_much_more_work_is_not_taken_as_alike)
{
    static cpb_row ex, sy;
    plant_run(2, &ex, &sy);
    cr_expect_eq(sy.replayed_ranks, 8, "rank 2's 8x GEMM: every rank replayed, got %d", sy.replayed_ranks);
    cr_expect_eq(sy.step_s, ex.step_s, "the fallback is the exact answer");
}
