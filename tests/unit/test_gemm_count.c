/* test_gemm_count.c — UPipe at Ulysses' speed: one GEMM per stage for every projection and
 * gradient, as untied_ulysses/fully_fused_attn.py does, counted in the simulator's trace of
 * rank 0 (every op of the schedule is one trace entry).
 *
 * Per stage: forward q projection (1); backward q recompute, dO, dWo rows, dWq columns and
 * the stage's one dx GEMM (5).  Per kv group (stages sharing kv heads): forward k, v (2);
 * backward their recompute (2) and dW, dx of each (4).  Plus y = o Wo once.  Ulysses: q, k,
 * v and Wo forward (4); dWo, dO and dW, dx of q, k, v backward (8). */
#include <criterion/criterion.h>
#include <string.h>

#include "test_problem.h"
#include "cpb_method.h"
#include "registry.h"
#include "sim/sim_world.h"
#include "trial.h"

typedef struct counts {
    int fwd, bwd;
} counts;

static counts gemms(const char *method, const cpb_problem *p)
{
    const cpb_method *m = cpb_method_find(method);
    cr_assert_not_null(m);
    cpb_sim_world *w = NULL;
    cr_assert_eq(cpb_sim_world_create(p->C, &w), CPB_OK);
    for (int r = 0; r < p->C; r++) {
        cpb_ctx_opts co = {0};
        co.sim_rank = r;
        co.sim_world = p->C;
        co.race_check = 1;
        co.backend_shared = w;
        cpb_ctx *ctx = NULL;
        char err[512];
        cr_assert_eq(cpb_ctx_create(&cpb_backend_sim, &co, &ctx, err, sizeof err), CPB_OK, "%s", err);
        cpb_layer L;
        static cpb_row tr;
        cr_assert_eq(cpb_trial_setup(ctx, m, p, NULL, 1, &L), CPB_OK, "%s", cpb_errmsg(ctx));
        cr_assert_eq(cpb_trial_step(ctx, m, &L, &tr), CPB_OK, "%s", tr.reason);
        cpb_ctx_destroy(ctx);
    }
    counts c = {0, 0};
    const sim_trace *t = &w->traces[0];
    for (int64_t i = 0; i < t->n; i++) {
        const sim_entry *e = &t->e[i];
        if (e->type != SIM_OP || e->kind != CPB_OP_GEMM) continue;
        if (e->phase == SIM_PHASE_FWD) c.fwd++;
        if (e->phase == SIM_PHASE_BWD) c.bwd++;
    }
    cpb_sim_world_destroy(w);
    return c;
}

static void check_upipe(const cpb_problem *p, int nstage, int nkv)
{
    counts c = gemms("upipe", p);
    cr_expect_eq(c.fwd, nstage + 2 * nkv + 1, "H %d G %d C %d U %d: %d forward GEMMs, want %d", p->H, p->G, p->C,
                 (int)cpb_knob_int(p, "head_chunk"), c.fwd, nstage + 2 * nkv + 1);
    cr_expect_eq(c.bwd, 5 * nstage + 6 * nkv, "H %d G %d C %d U %d: %d backward GEMMs, want %d", p->H, p->G, p->C,
                 (int)cpb_knob_int(p, "head_chunk"), c.bwd, 5 * nstage + 6 * nkv);
}

Test(gemm_count, upipe_one_gemm_per_stage_and_projection)
{
    /* Llama3-8B's heads on 8 ranks: 4 stages sharing one kv group (m = 1 < g = 4) */
    cpb_problem a = cpb_test_problem(8 * 64, 8, 64, 32, 8, 8, CPB_BF16);
    check_upipe(&a, 4, 1);
    /* Qwen3-32B's heads on 8 ranks: 8 stages, g = 8 */
    cpb_problem b = cpb_test_problem(8 * 64, 8, 64, 64, 8, 8, CPB_BF16);
    check_upipe(&b, 8, 1);
    /* a stage per kv head (m = g = 2), G = 3 kv heads on 3 ranks, odd sizes */
    cpb_problem c = cpb_test_problem(3 * 50, 3, 40, 6, 3, 8, CPB_FP32);
    cpb_knobs_set_int(&c.knobs, "head_chunk", 6);
    check_upipe(&c, 1, 1);
    /* G < C (replicated kv heads): 2 stages, kv exchanged once */
    cpb_problem d = cpb_test_problem(4 * 40, 4, 32, 8, 2, 8, CPB_BF16);
    check_upipe(&d, 2, 1);
    /* U = 2C: m = 2 heads per rank per stage, g = 4: 2 stages on one kv group */
    cpb_problem e = cpb_test_problem(2 * 48, 2, 32, 8, 2, 8, CPB_BF16);
    cpb_knobs_set_int(&e.knobs, "head_chunk", 4);
    check_upipe(&e, 2, 1);
}

Test(gemm_count, ulysses_one_gemm_per_projection)
{
    cpb_problem a = cpb_test_problem(8 * 64, 8, 64, 32, 8, 8, CPB_BF16);
    counts c = gemms("ulysses", &a);
    cr_expect_eq(c.fwd, 4);
    cr_expect_eq(c.bwd, 8);
    /* replicated kv heads (G < C) too */
    cpb_problem b = cpb_test_problem(4 * 40, 4, 32, 8, 2, 8, CPB_BF16);
    c = gemms("ulysses", &b);
    cr_expect_eq(c.fwd, 4);
    cr_expect_eq(c.bwd, 8);
}
