/* standin_trial_hooks.c — the cuda backend's device timer and its memory phases of a
 * measured trial (cpb_backend.h: time_mark, mem_trial), on the CPU stand-in.
 *
 * 1. Timer: marks around work on two streams give a positive interval read from events
 *    (the clock is "cuda events"); the end mark waits for the side stream's work, so the
 *    interval holds it; reading an interval before the host waited for the streams is an
 *    error, not a wait or a wrong number.
 * 2. Pool: after a large buffer is freed, CPB_MEM_TRIAL_START gives its memory back
 *    (reserved drops to what is still allocated); within a trial the pool keeps it.
 * 3. Pinned cache: after CPB_MEM_TRIAL_TIMED a host buffer of a size the warm-up left in
 *    the cache is taken again, and a size it lacks is an error naming the size (no
 *    cudaMallocHost in a timed step); CPB_MEM_TRIAL_START unseals it.
 * Exit 0 when every check holds; each prints a line. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "cpb_backend.h"
#include "mpi_test_ctx.h"
#include "registry.h"

static int bad;

static void check(int ok, const char *what, const char *detail)
{
    printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what, detail && *detail ? ": " : "", detail ? detail : "");
    bad |= !ok;
}

int main(void)
{
    char why[1024] = "";
    const cpb_backend *be = cpb_backend_find("cuda", why, sizeof why);
    cpb_ctx *ctx = cpb_test_mpi_ctx("standin_trial_hooks", be, why);
    char msg[2400];

    /* 1. the device timer */
    int side = 0;
    cpb_buf *a = NULL, *b = NULL;
    int rc = cpb_stream(ctx, "side", &side);
    if (!rc) rc = cpb_alloc(ctx, &a, 1 << 20, CPB_FP32, CPB_TAG_TEMP, "a");
    if (!rc) rc = cpb_alloc(ctx, &b, 1 << 20, CPB_FP32, CPB_TAG_TEMP, "b");
    if (!rc) rc = cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_whole(a), 1.0f);
    if (!rc) rc = cpb_sync(ctx);
    if (!rc) rc = cpb_time_mark(ctx, 0);
    if (!rc) rc = cpb_fill_random(ctx, side, cpb_whole(b), 7, 0, 1.0f);
    if (!rc) rc = cpb_time_mark(ctx, 1);
    double early = -1;
    int early_rc = rc ? rc : cpb_time_between(ctx, 0, 1, &early);
    snprintf(msg, sizeof msg, "%s", cpb_errmsg(ctx));
    cpb_clear_error(ctx);
    check(!rc && early_rc != CPB_OK && strstr(msg, "after cpb_sync"), "an interval read before the sync is an error", msg);
    double s = -1;
    if (!rc) rc = cpb_sync(ctx);
    if (!rc) rc = cpb_time_between(ctx, 0, 1, &s);
    snprintf(msg, sizeof msg, "%.6f s on %s%s%s", s, cpb_time_clock(ctx), rc ? ": " : "", rc ? cpb_errmsg(ctx) : "");
    check(!rc && s > 0 && strcmp(cpb_time_clock(ctx), "cuda events") == 0,
          "the interval around the side stream's work is positive, on events", msg);
    cpb_clear_error(ctx);
    rc = cpb_time_between(ctx, 0, CPB_TIME_MARKS, &s);
    snprintf(msg, sizeof msg, "%s", cpb_errmsg(ctx));
    cpb_clear_error(ctx);
    check(rc == CPB_ERR_INVALID && strstr(msg, "out of range"), "a mark out of range is refused", msg);

    /* 2. the pool gives back what the previous trial freed */
    int64_t r0 = 0, r1 = 0, r2 = 0, used = 0;
    cpb_free_all(ctx);
    rc = be->mem_trial(ctx, CPB_MEM_TRIAL_START);
    if (!rc) rc = be->mem_highwater_reset(ctx);
    if (!rc) rc = be->mem_highwater(ctx, &r0, &used);
    cpb_buf *big = NULL;
    if (!rc) rc = cpb_alloc(ctx, &big, 8 << 20, CPB_FP32, CPB_TAG_TEMP, "big");
    if (!rc) rc = cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_whole(big), 2.0f);
    if (!rc) rc = cpb_free(ctx, CPB_STREAM_COMPUTE, &big);
    if (!rc) rc = cpb_sync(ctx);
    if (!rc) rc = be->mem_highwater_reset(ctx); /* within a trial: the pool keeps the block */
    if (!rc) rc = be->mem_highwater(ctx, &r1, &used);
    if (!rc) rc = be->mem_trial(ctx, CPB_MEM_TRIAL_START);
    if (!rc) rc = be->mem_highwater_reset(ctx);
    if (!rc) rc = be->mem_highwater(ctx, &r2, &used);
    snprintf(msg, sizeof msg, "reserved %lld before, %lld kept within the trial, %lld at the next trial%s%s",
             (long long)r0, (long long)r1, (long long)r2, rc ? ": " : "", rc ? cpb_errmsg(ctx) : "");
    check(!rc && r1 >= r0 + (32 << 20) && r2 == r0, "the next trial starts from a trimmed pool", msg);
    cpb_clear_error(ctx);

    /* 3. the pinned cache, sealed for the timed steps */
    cpb_buf *h = NULL;
    rc = cpb_alloc_host(ctx, &h, 100000, CPB_FP32, CPB_TAG_FETCH, "warm");
    if (!rc) rc = cpb_free(ctx, CPB_STREAM_COMPUTE, &h);
    if (!rc) rc = be->mem_trial(ctx, CPB_MEM_TRIAL_TIMED);
    if (!rc) rc = cpb_alloc_host(ctx, &h, 100000, CPB_FP32, CPB_TAG_FETCH, "again");
    snprintf(msg, sizeof msg, "%s", rc ? cpb_errmsg(ctx) : "");
    check(!rc, "a timed step takes the block the warm-up left", msg);
    cpb_clear_error(ctx);
    if (!rc) rc = cpb_free(ctx, CPB_STREAM_COMPUTE, &h);
    cpb_buf *miss = NULL;
    int miss_rc = cpb_alloc_host(ctx, &miss, 300000, CPB_FP32, CPB_TAG_FETCH, "unseen");
    snprintf(msg, sizeof msg, "%s", cpb_errmsg(ctx));
    cpb_clear_error(ctx);
    check(miss_rc != CPB_OK && strstr(msg, "1245184 bytes") && strstr(msg, "'unseen'"),
          "a block the cache lacks is an error naming its size", msg);
    rc = cpb_sync(ctx);
    if (!rc) rc = be->mem_trial(ctx, CPB_MEM_TRIAL_START);
    if (!rc) rc = cpb_alloc_host(ctx, &miss, 300000, CPB_FP32, CPB_TAG_FETCH, "unseen");
    snprintf(msg, sizeof msg, "%s", rc ? cpb_errmsg(ctx) : "");
    check(!rc, "the next trial's warm-up may allocate it", msg);

    cpb_free_all(ctx);
    cpb_ctx_destroy(ctx);
    MPI_Finalize();
    return bad ? 1 : 0;
}
