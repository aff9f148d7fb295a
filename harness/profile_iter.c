/* profile_iter.c — see profile_iter.h. */
#include "profile_iter.h"

#include <string.h>

#include "cpb_backend.h"

/* weak: resolved when the cuda backend links the CUDA runtime (cudaError_t is an int enum) */
extern int cudaProfilerStart(void) __attribute__((weak));
extern int cudaProfilerStop(void) __attribute__((weak));

/* the CUDA runtime may be linked on a machine without a GPU: only a cuda context profiles */
static int on_cuda(const cpb_ctx *ctx)
{
    return ctx && ctx->be && ctx->be->name && strcmp(ctx->be->name, "cuda") == 0;
}

static int selected = -1;
static int captured; /* a capture happened in this process already */
static int active;

void cpb_profile_iter_select(int n) { selected = n; }
int cpb_profile_iter_selected(void) { return selected; }
int cpb_profile_iter_have_cuda(void) { return cudaProfilerStart != 0 && cudaProfilerStop != 0; }

int cpb_profile_iter_begin(cpb_ctx *ctx, int it)
{
    if (selected < 0 || it != selected || captured || active) return CPB_OK;
    CPB_TRY(cpb_sync(ctx)); /* earlier iterations' work stays out of the capture */
    CPB_TRY(cpb_range_push(ctx, "profile/iter%d", it));
    if (on_cuda(ctx) && cudaProfilerStart && cudaProfilerStart() != 0)
        return cpb_fail(ctx, CPB_ERR_BACKEND, "--profile-iter %d: cudaProfilerStart failed", it);
    active = 1;
    return CPB_OK;
}

int cpb_profile_iter_end(cpb_ctx *ctx, int it)
{
    if (!active || it != selected) return CPB_OK;
    active = 0;
    captured = 1;
    int rc = cpb_sync(ctx); /* the iteration's work, all of it, inside the capture */
    if (on_cuda(ctx) && cudaProfilerStop && cudaProfilerStop() != 0 && rc == CPB_OK)
        rc = cpb_fail(ctx, CPB_ERR_BACKEND, "--profile-iter %d: cudaProfilerStop failed", it);
    int rc2 = cpb_range_pop(ctx);
    return rc != CPB_OK ? rc : rc2;
}
