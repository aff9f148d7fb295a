/* test_memory_dring.c — the double ring's circulating buffers on the simulator.
 *
 * Per rank (methods/common/dring_attn.c): n = 2 * 2c * hk * d elements of packed K,V (c =
 * S / 2R, hk = G/u or 1); forward: min(2, w-1) inner and min(2, R/w - 1) outer K,V
 * buffers; backward: those, plus the inner travelling dK,dV sums (2, or 1 when w = 1) and
 * one more outer sum, in fp32.  The kv_ring tag's high-water is exactly that. */
#include <criterion/criterion.h>

#include "test_problem.h"
#include "cpb_method.h"
#include "sim_layer.h"

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

Test(memory_dring, circulating_buffers_are_exact)
{
    /* C, u, w: one window per node, several windows, w = 1, odd window counts */
    const int shapes[][3] = {{8, 1, 2}, {8, 2, 2}, {8, 1, 4}, {6, 1, 2}, {6, 2, 1}, {12, 2, 2}, {16, 2, 4}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int C = shapes[i][0], u = shapes[i][1], w = shapes[i][2], R = C / u, nw = R / w;
        cpb_problem p = cpb_test_problem(2 * (int64_t)C * 24, C, 64, 8, 2, 16, CPB_BF16);
        cpb_knobs_set_int(&p.knobs, "ulysses_degree", u);
        cpb_knobs_set_int(&p.knobs, "inner_ring", w);
        cpb_row r;
        cr_assert_eq(cpb_sim_layer(&p, cpb_method_find("dring"), NULL, &r), CPB_OK, "%s", r.reason);
        cr_assert_eq(r.code, CPB_OK, "C %d u %d w %d: %s", C, u, w, r.reason);
        int64_t c = p.S / (2 * (int64_t)R), hk = p.G >= u ? p.G / u : 1, n = 2 * 2 * c * hk * p.d;
        int64_t kv = 2 * n * (min64(2, w - 1) + min64(2, nw - 1));
        int64_t sums = 4 * n * ((w > 1 ? 2 : 1) + 1);
        cr_expect_eq(r.fwd.tag_peak[CPB_TAG_KV_RING], kv, "C %d u %d w %d fwd: %lld, expected %lld", C, u, w,
                     (long long)r.fwd.tag_peak[CPB_TAG_KV_RING], (long long)kv);
        cr_expect_eq(r.bwd.tag_peak[CPB_TAG_KV_RING], kv + sums, "C %d u %d w %d bwd: %lld, expected %lld", C, u, w,
                     (long long)r.bwd.tag_peak[CPB_TAG_KV_RING], (long long)(kv + sums));
    }
}
