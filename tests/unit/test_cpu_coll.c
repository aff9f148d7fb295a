/* test_cpu_coll.c — collectives of the cpu backend in a single process without MPI (world
 * 1): each is a local copy or nothing, on the world and on a created one-member group.
 * (Multi-rank behaviour is exercised under mpirun by the MPI tests.) */
#include <string.h>

#include "test_cpu_util.h"

static void check_eq(cpb_ctx *ctx, cpb_buf *b, const float *want, int64_t n, const char *what)
{
    float *got = t_get(ctx, cpb_span(b, 0, n));
    for (int64_t i = 0; i < n; i++) cr_assert(got[i] == want[i], "%s: element %lld %g vs %g", what, (long long)i, got[i], want[i]);
    free(got);
}

static void all_collectives(cpb_dtype dt, int subgroup)
{
    cpb_ctx *ctx = t_ctx();
    cr_assert_eq(cpb_world_size(ctx), 1);
    cr_assert_eq(cpb_rank(ctx), 0);
    cpb_group *g = NULL;
    if (subgroup) {
        int me = 0;
        cr_assert_eq(cpb_group_create(ctx, 1, &me, &g), CPB_OK, "%s", cpb_errmsg(ctx));
        /* the member list {0} is the world's: the same group comes back, as it does on
         * every later request (methods ask for their groups in every trial) */
        cr_assert(g->size == 1 && g->rank == 0 && g == cpb_world(ctx));
        cpb_group *again = NULL;
        cr_assert_eq(cpb_group_create(ctx, 1, &me, &again), CPB_OK, "%s", cpb_errmsg(ctx));
        cr_assert_eq(again, g);
    }
    int64_t n = 37;
    cpb_buf *s = t_buf(ctx, n, dt, "send"), *r = t_buf(ctx, n, dt, "recv");
    float *x = t_fill_view(ctx, cpb_whole(s), 3, 4.0f);
    cr_assert_eq(cpb_fill(ctx, 0, cpb_whole(r), -1.0f), CPB_OK);
    cr_assert_eq(cpb_all_to_all(ctx, 0, g, cpb_whole(s), cpb_whole(r)), CPB_OK, "%s", cpb_errmsg(ctx));
    check_eq(ctx, r, x, n, "all_to_all");
    cr_assert_eq(cpb_fill(ctx, 0, cpb_whole(r), -1.0f), CPB_OK);
    cr_assert_eq(cpb_sendrecv(ctx, 0, g, cpb_whole(s), 0, cpb_whole(r), 0), CPB_OK, "%s", cpb_errmsg(ctx));
    check_eq(ctx, r, x, n, "sendrecv");
    cr_assert_eq(cpb_fill(ctx, 0, cpb_whole(r), -1.0f), CPB_OK);
    cr_assert_eq(cpb_reduce(ctx, 0, g, cpb_whole(s), cpb_whole(r), 0), CPB_OK, "%s", cpb_errmsg(ctx));
    check_eq(ctx, r, x, n, "reduce");
    cr_assert_eq(cpb_fill(ctx, 0, cpb_whole(r), -1.0f), CPB_OK);
    cr_assert_eq(cpb_all_gather(ctx, 0, g, cpb_whole(s), cpb_whole(r)), CPB_OK, "%s", cpb_errmsg(ctx));
    check_eq(ctx, r, x, n, "all_gather");
    cr_assert_eq(cpb_fill(ctx, 0, cpb_whole(r), -1.0f), CPB_OK);
    cr_assert_eq(cpb_reduce_scatter(ctx, 0, g, cpb_whole(s), cpb_whole(r)), CPB_OK, "%s", cpb_errmsg(ctx));
    check_eq(ctx, r, x, n, "reduce_scatter");
    cr_assert_eq(cpb_broadcast(ctx, 0, g, cpb_whole(s), 0), CPB_OK, "%s", cpb_errmsg(ctx));
    cr_assert_eq(cpb_all_reduce(ctx, 0, g, cpb_whole(s)), CPB_OK, "%s", cpb_errmsg(ctx));
    check_eq(ctx, s, x, n, "broadcast + all_reduce in place");
    /* disjoint halves of one buffer */
    cr_assert_eq(cpb_all_to_all(ctx, 0, g, cpb_span(s, 0, 18), cpb_span(s, 18, 18)), CPB_OK, "%s", cpb_errmsg(ctx));
    float *y = t_get(ctx, cpb_whole(s));
    for (int i = 0; i < 18; i++) cr_assert(y[18 + i] == x[i]);
    free(y);
    /* bad peers and overlapping ranges are refused with a message */
    cr_assert_eq(cpb_sendrecv(ctx, 0, g, cpb_whole(s), 1, cpb_whole(r), 0), CPB_ERR_INVALID);
    cpb_clear_error(ctx);
    cr_assert_eq(cpb_all_to_all(ctx, 0, g, cpb_span(s, 0, 20), cpb_span(s, 10, 20)), CPB_ERR_INVALID);
    cr_assert(strstr(cpb_errmsg(ctx), "overlap") != NULL, "%s", cpb_errmsg(ctx));
    free(x);
    cpb_ctx_destroy(ctx);
}

Test(cpu_coll, world_of_one_fp32)
{
    all_collectives(CPB_FP32, 0);
}

Test(cpu_coll, world_of_one_bf16_subgroup)
{
    all_collectives(CPB_BF16, 1);
}

Test(cpu_coll, two_contexts_and_clock)
{
    /* contexts without MPI are independent; upload/download round-trip with rounding */
    cpb_ctx *a = t_ctx(), *b = t_ctx();
    cpb_buf *x = t_buf(a, 5, CPB_BF16, "x"), *y = t_buf(b, 5, CPB_FP32, "y");
    float in[5] = {1.0f, 1.0f + 0x1p-8f, -3.3f, 1e30f, 0.0f}, out[5];
    cr_assert_eq(cpb_upload(a, cpb_whole(x), in), CPB_OK);
    cr_assert_eq(cpb_download(a, cpb_whole(x), out), CPB_OK);
    for (int i = 0; i < 5; i++) cr_assert(out[i] == cpb_round_bf16(in[i]));
    cr_assert_eq(cpb_upload(b, cpb_whole(y), in), CPB_OK);
    cr_assert_eq(cpb_download(b, cpb_whole(y), out), CPB_OK);
    cr_assert(memcmp(in, out, sizeof in) == 0);
    double t0 = a->be->clock(a), t1 = a->be->clock(a);
    cr_assert(t0 > 0 && t1 >= t0);
    cpb_ctx_destroy(a);
    cr_assert_eq(cpb_download(b, cpb_whole(y), out), CPB_OK, "the other context is unaffected");
    cpb_ctx_destroy(b);
}
