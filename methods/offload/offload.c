/* offload.c — the offload method struct, its check, the head-group plan and the forward
 * (Ulysses with hooks that move the saved tensors to the host). */
#include <stdio.h>
#include <stdlib.h>

#include "offload/offload.h"


static int check_offload_group(const cpb_problem *p, char *why, size_t why_len)
{
    int64_t og = cpb_knob_int(p, "offload_group");
    if (og > p->H) {
        snprintf(why, why_len, "--offload-group %lld is more than the %d query heads", (long long)og, p->H);
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

/* plan: every divisor of a rank's heads (the group must divide them) */
static int offload_group_candidates(const cpb_problem *p, int64_t *out, int max)
{
    int hc = p->C > 0 && p->H % p->C == 0 ? p->H / p->C : 1, k = 0;
    for (int v = 1; v <= hc && k < max; v++)
        if (hc % v == 0) out[k++] = v;
    return k;
}

static const cpb_knob offload_knobs[] = {
    {.name = "offload_group", .type = CPB_KNOB_INT, .def = "0", .check = check_offload_group, .arg = "N",
     .help = "heads per backward group (default: half a rank's heads)", .candidates = offload_group_candidates},
    {NULL}};

int offload_group_of(const cpb_problem *p)
{
    int64_t given = cpb_knob_int(p, "offload_group");
    if (given > 0) return (int)given;
    /* default: half of the rank's heads, rounded down to a divisor, at least 1 */
    int hc = p->C > 0 ? p->H / p->C : 1, og = hc / 2 > 0 ? hc / 2 : 1;
    while (og > 1 && hc % og) og--;
    return og;
}

static int offload_check(const cpb_problem *p, char *why, size_t why_len)
{
    CPB_TRY(cpb_uly_check("offload", p, why, why_len));
    int hc = p->H / p->C, og = offload_group_of(p);
    if (og <= 0 || hc % og) {
        snprintf(why, why_len, "offload needs the group to divide the heads per rank: --offload-group %d, "
                 "H/C = %d (H = %d query heads, C = %d ranks)", og, hc, p->H, p->C);
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

void offload_group_kv(const cpb_uly_shape *u, int og, int b, int *a, int *nk)
{
    if (u->G < u->C) { /* one replicated kv head per rank */
        *a = 0;
        *nk = 1;
        return;
    }
    int g = u->H / u->G, first = (b * og) / g, last = (b * og + og - 1) / g;
    *a = first;
    *nk = last - first + 1;
}

/* ---------------------------------------------------------------- forward hooks */

typedef struct hook_ctx {
    off_state *s;
    const cpb_uly_shape *u;
} hook_ctx;

static int copy_to_host(cpb_ctx *ctx, const hook_ctx *h, int which, cpb_buf *b)
{
    off_state *s = h->s;
    const cpb_uly_shape *u = h->u;
    CPB_TRY(cpb_stream_join(ctx, s->copy, CPB_STREAM_COMPUTE)); /* the copy reads what compute wrote */
    if (which == ULY_Q || which == ULY_O) {
        cpb_buf *host = which == ULY_Q ? s->hq : s->ho;
        int64_t gsz = u->S * s->og * u->d;
        for (int g = 0; g < s->ng; g++) {
            cpb_view src = cpb_heads(b, (int64_t)g * s->og * u->d, u->S, s->og, u->d, (int64_t)u->hc * u->d, u->d);
            cpb_view dst = cpb_heads(host, g * gsz, u->S, s->og, u->d, (int64_t)s->og * u->d, u->d);
            CPB_TRY(cpb_copy(ctx, s->copy, dst, src));
        }
    } else {
        cpb_buf *host = which == ULY_K ? s->hk : which == ULY_V ? s->hv : s->hlse;
        CPB_TRY(cpb_copy(ctx, s->copy, cpb_whole(host), cpb_whole(b)));
    }
    return CPB_OK;
}

static int to_host(cpb_ctx *ctx, void *user, int which, cpb_buf *b)
{
    CPB_RANGE(ctx, copy_to_host(ctx, user, which, b), "d2h");
    return CPB_OK;
}

static int release(cpb_ctx *ctx, void *user, int which, cpb_buf **b)
{
    hook_ctx *h = user;
    (void)which;
    /* freed on the copy stream once compute's last use is ordered before it: the device
     * copy goes away as soon as both the forward and the D2H are done with it */
    CPB_TRY(cpb_stream_join(ctx, h->s->copy, CPB_STREAM_COMPUTE));
    return cpb_free(ctx, h->s->copy, b);
}

int offload_forward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    off_state *s = state;
    cpb_uly_shape u;
    CPB_TRY(cpb_uly_shape_of(L, &u));
    s->og = offload_group_of(&L->p);
    s->ng = u.hc / s->og;
    CPB_TRY(cpb_stream(ctx, "copy", &s->copy));
    cpb_dtype dt = L->p.dtype;
    CPB_TRY(cpb_alloc_host(ctx, &s->hx, u.s * u.D, dt, CPB_TAG_SAVED, "x_host"));
    CPB_TRY(cpb_alloc_host(ctx, &s->hq, u.S * u.hc * u.d, dt, CPB_TAG_SAVED, "q_host"));
    CPB_TRY(cpb_alloc_host(ctx, &s->hk, u.S * u.hk * u.d, dt, CPB_TAG_SAVED, "k_host"));
    CPB_TRY(cpb_alloc_host(ctx, &s->hv, u.S * u.hk * u.d, dt, CPB_TAG_SAVED, "v_host"));
    CPB_TRY(cpb_alloc_host(ctx, &s->ho, u.S * u.hc * u.d, dt, CPB_TAG_SAVED, "o_host"));
    CPB_TRY(cpb_alloc_host(ctx, &s->hlse, u.S * u.hc, CPB_FP32, CPB_TAG_SAVED, "lse_host"));
    /* the layer input goes to the host first: backward fetches it back */
    CPB_TRY(cpb_stream_join(ctx, s->copy, CPB_STREAM_COMPUTE));
    CPB_TRY(cpb_copy(ctx, s->copy, cpb_whole(s->hx), cpb_whole(L->x)));
    hook_ctx hc = {s, &u};
    cpb_uly_hooks hooks = {&hc, to_host, release};
    cpb_uly_saved sv = {{0}};
    return cpb_uly_forward(ctx, L, &u, &hooks, &sv);
}

const cpb_method cpb_method_offload = {
    .name = "offload",
    .summary = "Ulysses with saved activations offloaded to pinned host, backward by double-buffered head groups",
    .check = offload_check,
    .token_layout = cpb_layout_contiguous,
    .weight_shard = NULL,
    .state_size = sizeof(off_state),
    .forward = offload_forward,
    .backward = offload_backward,
    .knobs = offload_knobs,
};
