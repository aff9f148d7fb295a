/* profile_iter.c — see profile_iter.h. */
#include "profile_iter.h"

#include "cpb_backend.h"

static int selected = -1;
static int captured; /* a capture happened in this process already */
static int active;

void cpb_profile_iter_select(int n) { selected = n; }
int cpb_profile_iter_selected(void) { return selected; }

int cpb_profile_iter_begin(cpb_ctx *ctx, int it)
{
    if (selected < 0 || it != selected || captured || active) return CPB_OK;
    CPB_TRY(cpb_sync(ctx)); /* earlier iterations' work stays out of the capture */
    CPB_TRY(cpb_range_push(ctx, "profile/iter%d", it));
    if (ctx->be->profiler && ctx->be->profiler(ctx, 1) != CPB_OK)
        return cpb_fail(ctx, CPB_ERR_BACKEND, "--profile-iter %d: starting the profiler failed: %s", it, cpb_errmsg(ctx));
    active = 1;
    return CPB_OK;
}

int cpb_profile_iter_end(cpb_ctx *ctx, int it)
{
    if (!active || it != selected) return CPB_OK;
    active = 0;
    captured = 1;
    int rc = cpb_sync(ctx); /* the iteration's work, all of it, inside the capture */
    if (ctx->be->profiler && ctx->be->profiler(ctx, 0) != CPB_OK && rc == CPB_OK)
        rc = cpb_fail(ctx, CPB_ERR_BACKEND, "--profile-iter %d: stopping the profiler failed: %s", it, cpb_errmsg(ctx));
    int rc2 = cpb_range_pop(ctx);
    return rc != CPB_OK ? rc : rc2;
}
