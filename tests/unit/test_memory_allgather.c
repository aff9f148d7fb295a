/* test_memory_allgather.c — allgather's gathered K,V on the simulator.
 *
 * With --kv-head-stride hs (default: every kv head) a rank gathers hs kv heads of every
 * rank at a time: one [C][2][s][hs][d] buffer when that is all of them, else two (double
 * buffering) and the [2][s][hs][d] buffer the heads are packed into for the gather
 * (methods/allgather/ag_attn.c).  So the gather tag's high-water is exactly that, in both
 * phases, and gathering fewer heads at a time lowers the peak at long sequences. */
#include <criterion/criterion.h>

#include "test_problem.h"
#include "cpb_method.h"
#include "sim_layer.h"

static cpb_row sim(cpb_problem *p, int64_t hs)
{
    const cpb_method *m = cpb_method_find("allgather");
    cr_assert_not_null(m, "allgather is registered");
    if (hs) cpb_knobs_set_int(&p->knobs, "kv_head_stride", hs);
    cpb_row r;
    cr_assert_eq(cpb_sim_layer(p, m, NULL, &r), CPB_OK, "%s", r.reason);
    cr_assert_eq(r.code, CPB_OK, "S %lld C %d G %d hs %lld: %s", (long long)p->S, p->C, p->G, (long long)hs, r.reason);
    return r;
}

/* the gather tag's high-water: the formula of the header */
static int64_t gathered(const cpb_problem *p, int64_t hs)
{
    int64_t E = p->dtype == CPB_BF16 ? 2 : 4, s = p->S / p->C;
    int64_t nsl = 2 * s * hs * p->d;
    return hs == p->G ? E * p->C * nsl : E * (nsl + 2 * (int64_t)p->C * nsl);
}

Test(memory_allgather, gathered_kv_is_one_or_two_head_groups)
{
    /* odd and even ranks, GQA 1, 4 and 8, H*d != D, S off powers of two */
    const cpb_problem cases[] = {
        cpb_test_problem(6 * 40, 3, 64, 8, 2, 16, CPB_BF16),
        cpb_test_problem(10 * 24, 5, 48, 8, 8, 8, CPB_FP32),
        cpb_test_problem(16 * 20, 8, 96, 16, 2, 8, CPB_BF16),
        cpb_test_problem(8 * 36, 4, 64, 16, 4, 8, CPB_BF16),
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int64_t hs = 1; hs <= cases[i].G; hs++) {
            if (cases[i].G % hs) continue;
            cpb_problem p = cases[i];
            cpb_row r = sim(&p, hs);
            int64_t want = gathered(&p, hs);
            cr_expect_eq(r.fwd.tag_peak[CPB_TAG_GATHER], want, "case %zu hs %lld fwd: gathered %lld, expected %lld", i,
                         (long long)hs, (long long)r.fwd.tag_peak[CPB_TAG_GATHER], (long long)want);
            cr_expect_eq(r.bwd.tag_peak[CPB_TAG_GATHER], want, "case %zu hs %lld bwd: gathered %lld, expected %lld", i,
                         (long long)hs, (long long)r.bwd.tag_peak[CPB_TAG_GATHER], (long long)want);
        }
}

/* Llama3-8B's shape at 8 ranks and 256K tokens: one kv head at a time is below all 8 */
Test(memory_allgather, fewer_heads_per_gather_lower_the_peak)
{
    cpb_problem a = cpb_test_problem(256 * 1024, 8, 4096, 32, 8, 128, CPB_BF16), b = a;
    cpb_row all = sim(&a, 0), one = sim(&b, 1);
    cr_expect_lt(one.peak_bytes, all.peak_bytes, "hs 1 peak %lld, all heads %lld", (long long)one.peak_bytes,
                 (long long)all.peak_bytes);
    cr_expect_eq(all.tag_peak[CPB_TAG_GATHER], gathered(&a, 8));
}

/* --ag-schedule te: one more gathered-size buffer, the K,V in sequence order, in both
 * phases (the tests' problems run our kernels, which serve its bottom-right masks) */
Test(memory_allgather, te_schedule_adds_the_sequence_order_copy)
{
    const cpb_problem cases[] = {
        cpb_test_problem(6 * 40, 3, 64, 8, 2, 16, CPB_BF16),
        cpb_test_problem(16 * 20, 8, 96, 16, 4, 8, CPB_FP32),
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int64_t hs = 1; hs <= cases[i].G; hs *= 2) {
            cpb_problem p = cases[i];
            cpb_knobs_set_str(&p.knobs, "ag_schedule", "te");
            cpb_row r = sim(&p, hs);
            int64_t E = p.dtype == CPB_BF16 ? 2 : 4, seq = E * 2 * p.S * hs * p.d;
            int64_t want = gathered(&p, hs) + seq;
            cr_expect_eq(r.fwd.tag_peak[CPB_TAG_GATHER], want, "case %zu hs %lld fwd: %lld, expected %lld", i,
                         (long long)hs, (long long)r.fwd.tag_peak[CPB_TAG_GATHER], (long long)want);
            cr_expect_eq(r.bwd.tag_peak[CPB_TAG_GATHER], want, "case %zu hs %lld bwd: %lld, expected %lld", i,
                         (long long)hs, (long long)r.bwd.tag_peak[CPB_TAG_GATHER], (long long)want);
        }
}
