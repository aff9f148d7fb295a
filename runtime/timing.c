/* timing.c — timed intervals on the backend's device timer, or on its clock after a sync
 * (cpb_backend.h: cpb_time_mark).
 *
 * The device timer is what a step's time and bench-kernels' numbers should come from: the
 * host's wait for the streams (cpb_sync) polls, so the clock read after it runs late by up
 * to a poll interval, which is a large share of a few-millisecond kernel. */
#include <stdio.h>
#include <time.h>

#include "cpb_backend.h"

static double clock_s(cpb_ctx *ctx)
{
    if (ctx->be->clock) return ctx->be->clock(ctx);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int check_mark(cpb_ctx *ctx, int mark)
{
    if (mark < 0 || mark >= CPB_TIME_MARKS)
        return cpb_fail(ctx, CPB_ERR_INVALID, "time mark %d out of range (0..%d)", mark, CPB_TIME_MARKS - 1);
    return CPB_OK;
}

int cpb_time_mark(cpb_ctx *ctx, int mark)
{
    CPB_TRY(check_mark(ctx, mark));
    if (ctx->be->time_mark) return ctx->be->time_mark(ctx, mark);
    CPB_TRY(cpb_sync(ctx));
    ctx->time_marks[mark] = clock_s(ctx);
    return CPB_OK;
}

int cpb_time_between(cpb_ctx *ctx, int from, int to, double *seconds)
{
    *seconds = 0;
    CPB_TRY(check_mark(ctx, from));
    CPB_TRY(check_mark(ctx, to));
    if (ctx->be->time_elapsed) return ctx->be->time_elapsed(ctx, from, to, seconds);
    *seconds = ctx->time_marks[to] - ctx->time_marks[from];
    return CPB_OK;
}

const char *cpb_backend_time_clock(const cpb_backend *be)
{
    if (be->time_mark && be->time_elapsed) return be->timer_name ? be->timer_name : "device timer";
    return be->clock ? "backend clock after sync" : "wall clock after sync";
}

const char *cpb_time_clock(const cpb_ctx *ctx)
{
    return cpb_backend_time_clock(ctx->be);
}
