/* test_race.c — the stream-race check: a buffer written on one stream and read on another
 * without an event is a race naming both ops; an event + wait, cpb_stream_join or
 * cpb_sync orders them; a free is an access on its stream. */
#include <string.h>

#include "test_cpu_util.h"

static int comm_stream(cpb_ctx *ctx)
{
    int s = -1;
    cr_assert_eq(cpb_stream(ctx, "comm", &s), CPB_OK);
    cr_assert_eq(s, 1);
    int again = -1;
    cr_assert_eq(cpb_stream(ctx, "comm", &again), CPB_OK);
    cr_assert_eq(again, s, "a stream is found again by name");
    return s;
}

Test(race, unordered_read_after_write_is_caught)
{
    cpb_ctx *ctx = t_ctx();
    int comm = comm_stream(ctx);
    cpb_buf *a = t_buf(ctx, 64, CPB_FP32, "kv_next"), *b = t_buf(ctx, 64, CPB_FP32, "other");
    cr_assert_eq(cpb_range_push(ctx, "ring"), CPB_OK);
    cr_assert_eq(cpb_fill(ctx, comm, cpb_whole(a), 1.0f), CPB_OK);
    int rc = cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_whole(b), cpb_whole(a));
    cr_assert_eq(rc, CPB_ERR_RACE);
    const char *m = cpb_errmsg(ctx);
    cr_assert(strstr(m, "kv_next") && strstr(m, "ring/fill") && strstr(m, "ring/copy") && strstr(m, "comm") &&
                  strstr(m, "compute"),
              "the message names the buffer, both ops and both streams: %s", m);
    cpb_ctx_destroy(ctx);
}

Test(race, event_and_wait_order_streams)
{
    cpb_ctx *ctx = t_ctx();
    int comm = comm_stream(ctx);
    cpb_buf *a = t_buf(ctx, 64, CPB_FP32, "a"), *b = t_buf(ctx, 64, CPB_FP32, "b");
    cr_assert_eq(cpb_fill(ctx, comm, cpb_whole(a), 2.0f), CPB_OK);
    cpb_event ev;
    cr_assert_eq(cpb_event_record(ctx, comm, &ev), CPB_OK);
    cr_assert_eq(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, ev), CPB_OK);
    cr_assert_eq(cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_whole(b), cpb_whole(a)), CPB_OK, "%s", cpb_errmsg(ctx));
    /* comm overwriting what compute read, without ordering, is a race too (WAR) */
    cr_assert_eq(cpb_fill(ctx, comm, cpb_whole(a), 3.0f), CPB_ERR_RACE);
    cpb_clear_error(ctx);
    /* the event covers only what came before it */
    cpb_buf *c = t_buf(ctx, 64, CPB_FP32, "c");
    cr_assert_eq(cpb_fill(ctx, comm, cpb_whole(c), 3.0f), CPB_OK, "%s", cpb_errmsg(ctx));
    cr_assert_eq(cpb_axpby(ctx, CPB_STREAM_COMPUTE, 1.0f, cpb_whole(c), 1.0f, cpb_whole(b)), CPB_ERR_RACE);
    cpb_clear_error(ctx);
    /* join is event + wait */
    cr_assert_eq(cpb_stream_join(ctx, CPB_STREAM_COMPUTE, comm), CPB_OK);
    cr_assert_eq(cpb_axpby(ctx, CPB_STREAM_COMPUTE, 1.0f, cpb_whole(c), 1.0f, cpb_whole(b)), CPB_OK, "%s",
                 cpb_errmsg(ctx));
    float got[64];
    cr_assert_eq(cpb_download(ctx, cpb_whole(b), got), CPB_OK);
    cr_assert_float_eq(got[5], 5.0f, 0.0f, "the cpu backend runs in program order");
    cpb_ctx_destroy(ctx);
}

Test(race, disjoint_ranges_and_reads_do_not_conflict)
{
    cpb_ctx *ctx = t_ctx();
    int comm = comm_stream(ctx);
    cpb_buf *a = t_buf(ctx, 100, CPB_FP32, "a"), *b = t_buf(ctx, 100, CPB_FP32, "b");
    cr_assert_eq(cpb_fill(ctx, comm, cpb_span(a, 0, 50), 1.0f), CPB_OK);
    cr_assert_eq(cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_span(a, 50, 50), 1.0f), CPB_OK, "%s", cpb_errmsg(ctx));
    cr_assert_eq(cpb_sync(ctx), CPB_OK);
    /* two streams reading the same range concurrently is fine */
    cr_assert_eq(cpb_copy(ctx, comm, cpb_span(b, 0, 50), cpb_span(a, 0, 50)), CPB_OK, "%s", cpb_errmsg(ctx));
    cr_assert_eq(cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_span(b, 50, 50), cpb_span(a, 0, 50)), CPB_OK, "%s",
                 cpb_errmsg(ctx));
    /* but writing what the other stream reads is not */
    cr_assert_eq(cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_span(a, 10, 5), 0.0f), CPB_ERR_RACE);
    cpb_ctx_destroy(ctx);
}

Test(race, free_on_another_stream_is_an_access)
{
    cpb_ctx *ctx = t_ctx();
    int comm = comm_stream(ctx);
    cpb_buf *a = t_buf(ctx, 64, CPB_FP32, "send_buf");
    cr_assert_eq(cpb_fill(ctx, comm, cpb_whole(a), 1.0f), CPB_OK);
    cpb_buf *keep = a;
    cr_assert_eq(cpb_free(ctx, CPB_STREAM_COMPUTE, &a), CPB_ERR_RACE);
    cr_assert(strstr(cpb_errmsg(ctx), "free(send_buf)") != NULL, "%s", cpb_errmsg(ctx));
    cr_assert_eq(a, keep, "a refused free keeps the buffer");
    cr_assert_eq(cpb_device_mem(ctx)->live, 256);
    cpb_clear_error(ctx);
    /* on its own stream, or after a join, it is fine */
    cr_assert_eq(cpb_stream_join(ctx, CPB_STREAM_COMPUTE, comm), CPB_OK);
    cr_assert_eq(cpb_free(ctx, CPB_STREAM_COMPUTE, &a), CPB_OK, "%s", cpb_errmsg(ctx));
    cr_assert_eq(cpb_device_mem(ctx)->live, 0);
    cpb_ctx_destroy(ctx);
}

Test(race, sync_orders_everything)
{
    cpb_ctx *ctx = t_ctx();
    int comm = comm_stream(ctx), copy = -1;
    cr_assert_eq(cpb_stream(ctx, "copy", &copy), CPB_OK);
    cpb_buf *a = t_buf(ctx, 64, CPB_FP32, "a"), *b = t_buf(ctx, 64, CPB_FP32, "b");
    cr_assert_eq(cpb_fill(ctx, comm, cpb_whole(a), 1.0f), CPB_OK);
    cr_assert_eq(cpb_fill(ctx, copy, cpb_whole(b), 1.0f), CPB_OK);
    cr_assert_eq(cpb_sync(ctx), CPB_OK);
    cr_assert_eq(cpb_axpby(ctx, CPB_STREAM_COMPUTE, 1.0f, cpb_whole(a), 1.0f, cpb_whole(b)), CPB_OK, "%s",
                 cpb_errmsg(ctx));
    cr_assert_eq(cpb_free(ctx, comm, &b), CPB_ERR_RACE, "compute's write of b is not ordered before comm");
    cpb_clear_error(ctx);
    cr_assert_eq(cpb_sync(ctx), CPB_OK);
    cr_assert_eq(cpb_free(ctx, comm, &b), CPB_OK, "%s", cpb_errmsg(ctx));
    cpb_ctx_destroy(ctx);
}

Test(race, collectives_are_accesses_too)
{
    cpb_ctx *ctx = t_ctx();
    int comm = comm_stream(ctx);
    cpb_buf *s = t_buf(ctx, 32, CPB_FP32, "send"), *r = t_buf(ctx, 32, CPB_FP32, "recv");
    cr_assert_eq(cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_whole(s), 4.0f), CPB_OK);
    cr_assert_eq(cpb_all_to_all(ctx, comm, NULL, cpb_whole(s), cpb_whole(r)), CPB_ERR_RACE);
    cpb_clear_error(ctx);
    cr_assert_eq(cpb_stream_join(ctx, comm, CPB_STREAM_COMPUTE), CPB_OK);
    cr_assert_eq(cpb_all_to_all(ctx, comm, NULL, cpb_whole(s), cpb_whole(r)), CPB_OK, "%s", cpb_errmsg(ctx));
    float got[32];
    cr_assert_eq(cpb_download(ctx, cpb_whole(r), got), CPB_OK);
    cr_assert_float_eq(got[31], 4.0f, 0.0f, "a one-member all-to-all is a copy");
    cpb_ctx_destroy(ctx);
}

/* A buffer written in many disjoint blocks on one stream (all-gather CP's gathered K,V):
 * the records another stream is not yet ordered after are exactly those after its last
 * wait, however many there are, and the race names the earliest of them that conflicts. */
Test(race, many_blocks_ordered_up_to_the_last_wait)
{
    cpb_ctx *ctx = t_ctx();
    int comm = comm_stream(ctx);
    enum { NB = 600, BL = 4 };
    cpb_buf *a = t_buf(ctx, NB * BL, CPB_FP32, "gathered");
    cpb_event ev;
    for (int i = 0; i < NB; i++) {
        cr_assert_eq(cpb_fill(ctx, comm, cpb_span(a, (int64_t)i * BL, BL), 1.0f), CPB_OK, "%s", cpb_errmsg(ctx));
        if (i == NB / 2 - 1) cr_assert_eq(cpb_event_record(ctx, comm, &ev), CPB_OK);
    }
    cr_assert_eq(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, ev), CPB_OK);
    /* the blocks before the event are ordered: compute may overwrite any of them */
    for (int i = 0; i < NB / 2; i += 7)
        cr_assert_eq(cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_span(a, (int64_t)i * BL, BL), 0.0f), CPB_OK, "block %d: %s",
                     i, cpb_errmsg(ctx));
    /* a read spanning the boundary conflicts with the first block after the event */
    cr_assert_eq(cpb_range_push(ctx, "late"), CPB_OK);
    cpb_buf *b = t_buf(ctx, 4 * BL, CPB_FP32, "b");
    int rc = cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_whole(b), cpb_span(a, (int64_t)(NB / 2 - 2) * BL, 4 * BL));
    cr_assert_eq(rc, CPB_ERR_RACE, "block %d was filled after the event", NB / 2);
    char want[64];
    snprintf(want, sizeof want, "elements [%d, %d)", (NB / 2 - 2) * BL, (NB / 2 + 2) * BL);
    cr_assert(strstr(cpb_errmsg(ctx), want) && strstr(cpb_errmsg(ctx), "write by 'fill' on stream 'comm'"), "%s",
              cpb_errmsg(ctx));
    cpb_clear_error(ctx);
    /* once compute waits for everything, no block races */
    cr_assert_eq(cpb_stream_join(ctx, CPB_STREAM_COMPUTE, comm), CPB_OK);
    for (int i = 0; i < NB; i += 13)
        cr_assert_eq(cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_span(a, (int64_t)i * BL, BL), 0.0f), CPB_OK, "block %d: %s",
                     i, cpb_errmsg(ctx));
    cr_assert_eq(cpb_range_pop(ctx), CPB_OK);
    cpb_ctx_destroy(ctx);
}

Test(race, op_names_follow_range_push_and_pop)
{
    /* the "<range>/" prefix of op names is kept between ops and rebuilt after a push or a
     * pop; range names are formatted without printf for %d, %lld, %s and %% */
    cpb_ctx *ctx = t_ctx();
    int comm = comm_stream(ctx);
    cpb_buf *a = t_buf(ctx, 64, CPB_FP32, "kv_next"), *b = t_buf(ctx, 64, CPB_FP32, "other");
    cr_assert_eq(cpb_range_push(ctx, "outer"), CPB_OK);
    cr_assert_eq(cpb_range_push(ctx, "a%d", 7), CPB_OK);
    cr_assert_eq(cpb_fill(ctx, comm, cpb_whole(b), 2.0f), CPB_OK);
    cr_assert_eq(cpb_fill(ctx, comm, cpb_whole(a), 1.0f), CPB_OK);
    cr_assert_eq(cpb_range_pop(ctx), CPB_OK);
    cr_assert_eq(cpb_range_push(ctx, "b%lld/%s%%%d", -12ll, "x", -2147483647 - 1), CPB_OK);
    cr_assert_str_eq(ctx->range, "outer/b-12/x%-2147483648");
    int rc = cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_whole(b), cpb_whole(a));
    cr_assert_eq(rc, CPB_ERR_RACE);
    const char *m = cpb_errmsg(ctx);
    cr_assert(strstr(m, "'outer/b-12/x%-2147483648/copy'") && strstr(m, "'outer/a7/fill'"), "%s", m);
    cpb_clear_error(ctx);
    cr_assert_eq(cpb_range_pop(ctx), CPB_OK);
    cr_assert_eq(cpb_range_pop(ctx), CPB_OK);
    cpb_ctx_destroy(ctx);
}

Test(race, long_range_names_are_cut_as_snprintf_cuts_them)
{
    cpb_ctx *ctx = t_ctx();
    char longname[200], want[128];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    snprintf(want, sizeof want, "%s%d", longname, 5);
    cr_assert_eq(cpb_range_push(ctx, "%s%d", longname, 5), CPB_OK);
    cr_assert_str_eq(ctx->range, want);
    cr_assert_eq(cpb_range_pop(ctx), CPB_OK);
    /* a conversion the short formatter does not know goes to vsnprintf */
    cr_assert_eq(cpb_range_push(ctx, "w%03d/%.2f", 7, 1.5), CPB_OK);
    cr_assert_str_eq(ctx->range, "w007/1.50");
    cr_assert_eq(cpb_range_pop(ctx), CPB_OK);
    cpb_ctx_destroy(ctx);
}
