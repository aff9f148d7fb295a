/* test_method_rules.c — the method author's checklist (runtime/cpb_method.h) for every method
 * of the registry, on a grid of shapes: rank counts 1 to 8 (odd ones included), GQA ratios 1,
 * 3, 4 and 8, H*d != D, lengths off powers of two, fp32 on our kernels and bf16 on the
 * default route.  The loop is over cpb_method_count / cpb_method_at, so a method added to
 * methods/registry.def is checked without a line here, and a failure names it.
 *
 * The planted methods below are copies of registered ones with one rule broken each; the
 * same checks must fail on them, naming them: that is what makes the loop a test that can
 * fail. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "cpb_method.h"
#include "knobs.h"
#include "method_rules.h"
#include "test_problem.h"

/* the grid's shape for method m: its knobs at their defaults except token counts (a chunk
 * length, fpdt's), set to a quarter of the sequence so that a small S has several chunks.
 * 0, or non-zero when a knob's own check refuses the shape (a refusal too). */
static int grid_problem(const cpb_method *m, int64_t S, int C, int H, int G, cpb_dtype dt, cpb_problem *p)
{
    *p = cpb_test_problem(S, C, 64, H, G, 16, dt);
    cpb_knobs given = {0};
    for (const cpb_knob *k = m->knobs; k && k->name; k++)
        if (k->type == CPB_KNOB_TOKENS) cpb_knobs_set_int(&given, k->name, S / 4);
    char err[512];
    if (cpb_knobs_apply(m, &given, p, err, sizeof err) != CPB_OK) return 1;
    /* fp32 runs our kernels; bf16 the default route (cuDNN where it serves a call) */
    cpb_knobs_set_str(&p->knobs, "attn", dt == CPB_FP32 ? "own" : "auto");
    return 0;
}

/* rules 1, 2 and 4 for m over the grid; returns the shapes it accepted, failures reported
 * with cr_expect (the message starts with the method's name) or, with `why` non-NULL, the
 * first failure's message copied there and the loop stopped */
static int memory_rules_over_the_grid(const cpb_method *m, char *first_why, size_t why_len)
{
    static const int Cs[] = {1, 2, 3, 4, 5, 6, 8};
    static const int heads[][2] = {{8, 8}, {12, 4}, {8, 2}, {16, 2}}; /* g = 1, 3, 4, 8 */
    static const int64_t per_rank_pairs[] = {12, 20};                 /* S = 2C * that: 24C, 40C */
    int accepted = 0;
    for (size_t ci = 0; ci < sizeof Cs / sizeof Cs[0]; ci++)
        for (size_t hi = 0; hi < sizeof heads / sizeof heads[0]; hi++)
            for (int dt = 0; dt < 2; dt++) {
                const int C = Cs[ci];
                const int64_t S = 2 * C * per_rank_pairs[(ci + hi) % 2];
                cpb_problem p;
                if (grid_problem(m, S, C, heads[hi][0], heads[hi][1], dt ? CPB_BF16 : CPB_FP32, &p)) continue;
                char why[1024] = "";
                int took = 0;
                int bad = cpb_rules_memory(m, &p, &took, why, sizeof why);
                accepted += took;
                if (bad && first_why) {
                    snprintf(first_why, why_len, "%s", why);
                    return accepted;
                }
                cr_expect(!bad, "%s", why);
            }
    return accepted;
}

Test(method_rules, every_registered_method_keeps_the_memory_rules, .timeout = 240)
{
    cr_assert_gt(cpb_method_count(), 0);
    for (int i = 0; i < cpb_method_count(); i++) {
        const cpb_method *m = cpb_method_at(i);
        int accepted = memory_rules_over_the_grid(m, NULL, 0);
        cr_log_info("%s: the rules held at the %d grid shapes it accepts", m->name, accepted);
        cr_expect_gt(accepted, 0, "%s accepts none of the grid's shapes: the rules were not checked for it", m->name);
    }
}

/* ---------------------------------------------------------------- planted rule breakers */

/* each plant wraps a registered method (base) and breaks one rule around its schedule */
static const cpb_method *base;

/* rule 1: rank 1 allocates a temporary one element larger than the others' */
static int fwd_alloc_by_rank(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    cpb_buf *t = NULL;
    CPB_TRY(cpb_alloc(ctx, &t, L->s + (cpb_rank(ctx) == 1), L->p.dtype, CPB_TAG_TEMP, "plant"));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &t));
    return base->forward(ctx, L, state);
}

/* rule 2: backward leaves a temporary live */
static int bwd_leak(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    cpb_buf *t = NULL;
    CPB_TRY(cpb_alloc(ctx, &t, L->s, L->p.dtype, CPB_TAG_TEMP, "plant"));
    return base->backward(ctx, L, state);
}

/* rule 3: rank 1 issues the same two ops as the others, in the other order */
static int fwd_order_by_rank(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    cpb_buf *t = NULL;
    CPB_TRY(cpb_alloc(ctx, &t, L->s * L->p.D, L->p.dtype, CPB_TAG_TEMP, "plant"));
    if (cpb_rank(ctx) == 1) {
        CPB_TRY(cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_whole(t), 0.0f));
        CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_whole(t), cpb_whole(L->x)));
    } else {
        CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_whole(t), cpb_whole(L->x)));
        CPB_TRY(cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_whole(t), 0.0f));
    }
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &t));
    return base->forward(ctx, L, state);
}

/* rule 4: check() accepts everything, so a shape the schedule cannot run fails while
 * running instead of being refused */
static int check_accepts_all(const cpb_problem *p, char *why, size_t n)
{
    (void)p, (void)why, (void)n;
    return CPB_OK;
}

static cpb_method plant_of(const char *of, const char *name)
{
    base = cpb_method_find(of);
    cr_assert(base, "%s is registered", of);
    cpb_method m = *base;
    m.name = name;
    return m;
}

static void expect_named_failure(const char *why, const char *name, const char *rule)
{
    char want[64];
    snprintf(want, sizeof want, "%s: ", name);
    cr_expect(strncmp(why, want, strlen(want)) == 0, "the failure names the method: %s", why);
    cr_expect(strstr(why, rule) != NULL, "the failure names %s: %s", rule, why);
}

Test(method_rules, a_rank_dependent_allocation_fails_by_name)
{
    cpb_method m = plant_of("ring", "ring_plant_alloc");
    m.forward = fwd_alloc_by_rank;
    char why[1024] = "";
    memory_rules_over_the_grid(&m, why, sizeof why);
    cr_log_info("planted: %s", why);
    expect_named_failure(why, "ring_plant_alloc", "symmetric-allocation rule");
}

Test(method_rules, a_leaked_temporary_fails_by_name)
{
    cpb_method m = plant_of("ulysses", "ulysses_plant_leak");
    m.backward = bwd_leak;
    char why[1024] = "";
    memory_rules_over_the_grid(&m, why, sizeof why);
    expect_named_failure(why, "ulysses_plant_leak", "rule 2");
    cr_expect(strstr(why, "tag temp"), "names the tag: %s", why);
}

Test(method_rules, a_check_that_accepts_what_cannot_run_fails_by_name)
{
    cpb_method m = plant_of("ulysses", "ulysses_plant_check");
    m.check = check_accepts_all;
    char why[1024] = "";
    memory_rules_over_the_grid(&m, why, sizeof why);
    expect_named_failure(why, "ulysses_plant_check", "rules 1 and 4");
}

/* rule 3 is test_sim_symmetry's: its registry loop's check, on a copy of ring whose rank 1
 * orders two ops the other way round */
Test(method_rules, a_rank_dependent_op_order_fails_by_name)
{
    cpb_method m = plant_of("ring", "ring_plant_order");
    m.forward = fwd_order_by_rank;
    cpb_problem p = cpb_test_problem(8 * 2 * 4096, 8, 4096, 32, 8, 128, CPB_BF16);
    static cpb_row ex, sy;
    char why[1024] = "";
    cr_expect(cpb_rules_symmetric(&m, &p, 8, 1, &ex, &sy, why, sizeof why) != 0, "the plant must break the rule");
    expect_named_failure(why, "ring_plant_order", "rule 3");
    /* the unplanted ring keeps it at the same shape */
    cr_expect_eq(cpb_rules_symmetric(base, &p, 8, 1, &ex, &sy, why, sizeof why), 0, "%s", why);
}
