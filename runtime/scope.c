/* scope.c — run a method inside a sub-world (cpb_backend.h, "Scopes").
 *
 * Why: a wrapper such as tensor parallelism (driver/tp_compose.c) runs an unchanged
 * context-parallel method over one group of the ranks.  The method asks for its world
 * through cpb_world / cpb_rank / cpb_world_size / a NULL group and for its shape through
 * cpb_problem_of, so redirecting those five answers is all it takes: the method's schedule
 * is the same one it runs on a world of that size. */
#include "cpb_backend.h"

int cpb_scope_enter(cpb_ctx *ctx, cpb_group *world, const cpb_problem *p, cpb_scope *saved)
{
    saved->world = ctx->scope_world;
    saved->p = ctx->p;
    if (!world || world->size <= 0)
        return cpb_fail(ctx, CPB_ERR_INVALID, "scope: no group given as the method's world");
    if (p->C != world->size)
        return cpb_fail(ctx, CPB_ERR_INVALID, "scope: the problem is for %d ranks but its world group has %d members",
                        p->C, world->size);
    ctx->scope_world = world;
    ctx->p = *p;
    return CPB_OK;
}

void cpb_scope_leave(cpb_ctx *ctx, const cpb_scope *saved)
{
    ctx->scope_world = saved->world;
    ctx->p = saved->p;
}
