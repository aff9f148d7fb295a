/* test_sim_race.c — the stream-race check on a sim context: a deliberately racy schedule
 * is caught with both ops' names, the same schedule ordered by an event passes, and every
 * registered method runs a small problem on the simulator without a race. */
#include <criterion/criterion.h>
#include <string.h>

#include "cpb_backend.h"
#include "registry.h"
#include "cpb_method.h"
#include "cpb_presets.h"
#include "sim_layer.h"

static cpb_ctx *sim_ctx(void)
{
    cpb_ctx_opts o = {0};
        o.sim_world = 1;
    o.race_check = 1;
    cpb_ctx *ctx = NULL;
    char err[256];
    cr_assert_eq(cpb_ctx_create(&cpb_backend_sim, &o, &ctx, err, sizeof err), CPB_OK, "%s", err);
    return ctx;
}

/* producer writes a buffer on compute; a copy stream reads it; ordered or not */
static int schedule(cpb_ctx *ctx, int ordered)
{
    int copy;
    cr_assert_eq(cpb_stream(ctx, "copy", &copy), CPB_OK);
    cpb_buf *act, *host;
    cr_assert_eq(cpb_alloc(ctx, &act, 4096, CPB_BF16, CPB_TAG_SAVED, "activation"), CPB_OK);
    cr_assert_eq(cpb_alloc_host(ctx, &host, 4096, CPB_BF16, CPB_TAG_SAVED, "activation_host"), CPB_OK);
    cpb_range_push(ctx, "produce");
    int rc = cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_whole(act), 1.0f);
    cpb_range_pop(ctx);
    cr_assert_eq(rc, CPB_OK, "%s", cpb_errmsg(ctx));
    if (ordered) cr_assert_eq(cpb_stream_join(ctx, copy, CPB_STREAM_COMPUTE), CPB_OK);
    cpb_range_push(ctx, "offload");
    rc = cpb_copy(ctx, copy, cpb_whole(host), cpb_whole(act));
    cpb_range_pop(ctx);
    return rc;
}

Test(sim_race, unordered_streams_are_caught_with_both_names)
{
    cpb_ctx *ctx = sim_ctx();
    int rc = schedule(ctx, 0);
    cr_assert_eq(rc, CPB_ERR_RACE, "got %s: %s", cpb_status_name(rc), cpb_errmsg(ctx));
    const char *msg = cpb_errmsg(ctx);
    cr_expect(strstr(msg, "offload/copy_d2h") != NULL, "names the later op: %s", msg);
    cr_expect(strstr(msg, "produce/fill") != NULL, "names the earlier op: %s", msg);
    cr_expect(strstr(msg, "activation") != NULL, "names the buffer: %s", msg);
    cpb_ctx_destroy(ctx);
}

Test(sim_race, event_ordered_streams_pass)
{
    cpb_ctx *ctx = sim_ctx();
    int rc = schedule(ctx, 1);
    cr_expect_eq(rc, CPB_OK, "%s", cpb_errmsg(ctx));
    cpb_ctx_destroy(ctx);
}

Test(sim_race, free_while_another_stream_reads_is_a_race)
{
    cpb_ctx *ctx = sim_ctx();
    int copy;
    cr_assert_eq(cpb_stream(ctx, "copy", &copy), CPB_OK);
    cpb_buf *act, *host;
    cr_assert_eq(cpb_alloc(ctx, &act, 4096, CPB_BF16, CPB_TAG_SAVED, "activation"), CPB_OK);
    cr_assert_eq(cpb_alloc_host(ctx, &host, 4096, CPB_BF16, CPB_TAG_SAVED, "activation_host"), CPB_OK);
    cr_assert_eq(cpb_copy(ctx, copy, cpb_whole(host), cpb_whole(act)), CPB_OK, "%s", cpb_errmsg(ctx));
    /* freeing on compute while the copy stream may still read it */
    int rc = cpb_free(ctx, CPB_STREAM_COMPUTE, &act);
    cr_expect_eq(rc, CPB_ERR_RACE, "%s", cpb_errmsg(ctx));
    cr_expect(strstr(cpb_errmsg(ctx), "free(activation)") != NULL, "%s", cpb_errmsg(ctx));
    cpb_ctx_destroy(ctx);
}

/* a small problem every method should accept in some world size */
static cpb_problem small_problem(int C)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("tiny", &p), CPB_OK);
    p.H = 8;
    p.G = 4;
    p.C = C;
    p.S = 64 * C;
    p.dtype = CPB_BF16;
    cpb_knobs_set_int(&p.knobs, "seq_chunk", 16 * C); /* fpdt: 4 chunks */
    return p;
}

Test(sim_race, every_method_passes_without_a_race)
{
    int ran = 0;
    for (int i = 0; i < cpb_method_count(); i++) {
        const cpb_method *m = cpb_method_at(i);
        for (int C = 2; C <= 8; C *= 2) { /* G = 4: G > C, G = C, G < C */
            cpb_problem p = small_problem(C);
            char why[512];
            if (m->check && m->check(&p, why, sizeof why) != CPB_OK) continue; /* refuses this shape */
            cpb_row r;
            cpb_sim_opts o = {0};
            cr_assert_eq(cpb_sim_layer(&p, m, &o, &r), CPB_OK, "%s: %s", m->name, r.reason);
            cr_expect_eq(r.code, CPB_OK, "%s on %d ranks: %s (%s)", m->name, C, cpb_status_name(r.code), r.reason);
            cr_expect_gt(r.peak_bytes, 0, "%s: a peak", m->name);
            cr_expect_gt(r.step_s, 0, "%s: a modelled step time", m->name);
            ran++;
        }
    }
    cr_log_info("%d method/world combinations simulated", ran);
}
