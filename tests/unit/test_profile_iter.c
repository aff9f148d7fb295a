/* test_profile_iter.c — `--profile-iter N` brackets exactly iteration N, once per process. */
#include <criterion/criterion.h>
#include <string.h>

#include "cpb_backend.h"
#include "registry.h"
#include "profile_iter.h"

static cpb_ctx *cpu_ctx(void)
{
    cpb_ctx_opts o;
    memset(&o, 0, sizeof o);
        o.use_mpi = 0;
    cpb_ctx *ctx = NULL;
    char err[256];
    cr_assert_eq(cpb_ctx_create(&cpb_backend_cpu, &o, &ctx, err, sizeof err), CPB_OK, "%s", err);
    return ctx;
}

Test(profile_iter, brackets_the_selected_iteration_once)
{
    cpb_ctx *ctx = cpu_ctx();
    cr_expect_eq(cpb_profile_iter_selected(), -1, "off by default");
    cpb_profile_iter_select(1);
    for (int trial = 0; trial < 2; trial++) {
        for (int it = 0; it < 3; it++) {
            cr_assert_eq(cpb_profile_iter_begin(ctx, it), CPB_OK);
            int inside = strstr(ctx->range, "profile/iter1") != NULL;
            cr_expect_eq(inside, trial == 0 && it == 1, "trial %d iteration %d: range '%s'", trial, it,
                         ctx->range);
            cr_assert_eq(cpb_profile_iter_end(ctx, it), CPB_OK);
            cr_expect_eq(ctx->range_depth, 0, "the range is closed after iteration %d", it);
        }
    }
    cpb_ctx_destroy(ctx);
}

Test(profile_iter, nothing_without_selection)
{
    cpb_ctx *ctx = cpu_ctx();
    for (int it = 0; it < 3; it++) {
        cr_assert_eq(cpb_profile_iter_begin(ctx, it), CPB_OK);
        cr_expect_eq(ctx->range_depth, 0);
        cr_assert_eq(cpb_profile_iter_end(ctx, it), CPB_OK);
    }
    cpb_ctx_destroy(ctx);
}
