/* test_trial.c — the trial machinery (driver/trial.c) on a single-process cpu context:
 * the device fill of the inputs gives exactly the host-generated global values at the
 * layout's tokens and the shard's heads, and the per-phase memory is measured as trial.h
 * says (forward peak, backward peak from the end of forward, whole trial = the max). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_backend.h"
#include "registry.h"
#include "trial.h"
#include "verify_inputs.h"

static cpb_ctx *ctx1(int64_t capacity)
{
    cpb_ctx_opts o = {0};
        o.use_mpi = 0;
    o.race_check = 1;
    o.capacity = capacity;
    char err[512] = "";
    cpb_ctx *ctx = NULL;
    cr_assert_eq(cpb_ctx_create(&cpb_backend_cpu, &o, &ctx, err, sizeof err), CPB_OK, "%s", err);
    return ctx;
}

/* A test method with a scrambled layout and a partial, unordered shard, and phases whose
 * memory is known: forward holds 1000 B of saved state plus a 3000 B transient; backward
 * a 5000 B transient. */
static int t_check(const cpb_problem *p, char *why, size_t len)
{
    if (p->S % 4) {
        snprintf(why, len, "test method needs S %% 4 == 0");
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}
static int t_layout(const cpb_problem *p, int rank, cpb_segs *out)
{
    (void)rank;
    int64_t q = p->S / 4;
    cpb_segs_clear(out);
    cpb_segs_add(out, 2 * q, q); /* tokens out of order: [2q,3q), [0,q), [3q,4q), [q,2q) */
    cpb_segs_add(out, 0, q);
    cpb_segs_add(out, 3 * q, q);
    cpb_segs_add(out, q, q);
    return CPB_OK;
}
static int t_shard(const cpb_problem *p, int rank, cpb_shard *out)
{
    (void)rank;
    out->nq = 2;
    out->q[0] = p->H - 1;
    out->q[1] = 1;
    out->nkv = 1;
    out->kv[0] = p->G - 1;
    return CPB_OK;
}
typedef struct t_state { cpb_buf *saved; } t_state;
static int t_forward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    t_state *st = state;
    cpb_buf *tmp = NULL;
    CPB_TRY(cpb_alloc(ctx, &st->saved, 250, CPB_FP32, CPB_TAG_SAVED, "saved"));
    CPB_TRY(cpb_alloc(ctx, &tmp, 750, CPB_FP32, CPB_TAG_TEMP, "fwd tmp"));
    /* by hand, not CPB_RANGE: a method that returns between push and pop leaves its range
     * open, and the trial must close it */
    CPB_TRY(cpb_range_push(ctx, "inner"));
    CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_whole(L->y), cpb_whole(L->x)));
    CPB_TRY(cpb_range_pop(ctx));
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &tmp);
}
static int t_backward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    t_state *st = state;
    cpb_buf *tmp = NULL;
    CPB_TRY(cpb_alloc(ctx, &tmp, 1250, CPB_FP32, CPB_TAG_GRAD_ACT, "bwd tmp"));
    CPB_TRY(cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_whole(L->dx), cpb_whole(L->dy)));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &tmp));
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &st->saved);
}
static const cpb_method test_method = {"test",   "test method", t_check,   t_layout,
                                       t_shard,  sizeof(t_state), t_forward, t_backward, NULL};

static cpb_problem tiny(cpb_dtype dt)
{
    cpb_problem p = {0};
    p.S = 16;
    p.D = 12;
    p.H = 4;
    p.G = 2;
    p.d = 4;
    p.rope_base = 10000;
    p.C = 1;
    p.dtype = dt;
    return p;
}

static void expect_equal(const float *got, const float *want, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        cr_assert(memcmp(&got[i], &want[i], sizeof(float)) == 0, "%s[%lld]: device %.9g, host %.9g", what,
                  (long long)i, got[i], want[i]);
}

static void device_fill_matches_host(cpb_dtype dt)
{
    cpb_problem p = tiny(dt);
    cpb_ctx *ctx = ctx1(0);
    cpb_layer L;
    cr_assert_eq(cpb_trial_setup(ctx, &test_method, &p, NULL, 77, &L), CPB_OK, "%s", cpb_errmsg(ctx));
    cpb_host_inputs h;
    cr_assert_eq(cpb_host_inputs_make(&p, 77, &h), CPB_OK);
    const int64_t D = p.D, d = p.d, S = p.S;
    float *got = malloc(sizeof(float) * 4096), *want = malloc(sizeof(float) * 4096);
    /* x and dy: local row r is global token cpb_segs_pos(r) */
    cr_assert_eq(L.s, S);
    const float *gsrc[2] = {h.x, h.dy};
    cpb_buf *tok[2] = {L.x, L.dy};
    for (int t = 0; t < 2; t++) {
        cr_assert_eq(cpb_download(ctx, cpb_whole(tok[t]), got), CPB_OK);
        for (int64_t r = 0; r < S; r++)
            memcpy(want + r * D, gsrc[t] + cpb_segs_pos(&L.tokens, r) * D, sizeof(float) * D);
        expect_equal(got, want, S * D, t ? "dy" : "x");
    }
    /* wq columns of heads H-1 then 1; wk, wv of kv head G-1; wo rows of heads H-1 then 1 */
    const int qh[2] = {p.H - 1, 1};
    cr_assert_eq(cpb_download(ctx, cpb_whole(L.wq), got), CPB_OK);
    for (int64_t r = 0; r < D; r++)
        for (int i = 0; i < 2; i++)
            memcpy(want + r * 2 * d + i * d, h.wq + r * p.H * d + qh[i] * d, sizeof(float) * d);
    expect_equal(got, want, D * 2 * d, "wq");
    const float *kvsrc[2] = {h.wk, h.wv};
    cpb_buf *kvb[2] = {L.wk, L.wv};
    for (int t = 0; t < 2; t++) {
        cr_assert_eq(cpb_download(ctx, cpb_whole(kvb[t]), got), CPB_OK);
        for (int64_t r = 0; r < D; r++) memcpy(want + r * d, kvsrc[t] + r * p.G * d + (p.G - 1) * d, sizeof(float) * d);
        expect_equal(got, want, D * d, t ? "wv" : "wk");
    }
    cr_assert_eq(cpb_download(ctx, cpb_whole(L.wo), got), CPB_OK);
    for (int i = 0; i < 2; i++) memcpy(want + i * d * D, h.wo + qh[i] * d * D, sizeof(float) * d * D);
    expect_equal(got, want, 2 * d * D, "wo");
    /* the upload path (verify's) lands the same values as the device fill */
    cpb_free_all(ctx);
    cpb_global_inputs gin = cpb_host_inputs_view(&h);
    cpb_layer L2;
    cr_assert_eq(cpb_trial_setup(ctx, &test_method, &p, &gin, 0, &L2), CPB_OK, "%s", cpb_errmsg(ctx));
    cr_assert_eq(cpb_download(ctx, cpb_whole(L2.wo), got), CPB_OK); /* want holds the expected wo */
    expect_equal(got, want, 2 * d * D, "wo (uploaded)");
    free(got);
    free(want);
    cpb_host_inputs_free(&h);
    cpb_ctx_destroy(ctx);
}

Test(trial, device_fill_equals_host_inputs_fp32) { device_fill_matches_host(CPB_FP32); }
Test(trial, device_fill_equals_host_inputs_bf16) { device_fill_matches_host(CPB_BF16); }

Test(trial, phase_memory)
{
    cpb_problem p = tiny(CPB_FP32);
    cpb_ctx *ctx = ctx1(0);
    cpb_layer L;
    cpb_reset_stats(ctx);
    cr_assert_eq(cpb_trial_setup(ctx, &test_method, &p, NULL, 1, &L), CPB_OK, "%s", cpb_errmsg(ctx));
    const int64_t fixed = cpb_device_mem(ctx)->live;
    cpb_row r;
    cr_assert_eq(cpb_trial_step(ctx, &test_method, &L, &r), CPB_OK, "%s", r.reason);
    cr_assert_eq(r.code, CPB_OK);
    cr_assert_eq(r.fwd_peak_bytes, fixed + 4000);
    cr_assert_eq(r.fwd.intermediate_peak, 4000);
    cr_assert_eq(r.fwd.live_end, fixed + 1000);
    cr_assert_eq(r.fwd.at_peak[CPB_TAG_SAVED], 1000);
    cr_assert_eq(r.fwd.at_peak[CPB_TAG_TEMP], 3000);
    /* backward's peak is measured from the end of forward: saved state + its transient */
    cr_assert_eq(r.bwd_peak_bytes, fixed + 6000);
    cr_assert_eq(r.bwd.intermediate_peak, 6000);
    cr_assert_eq(r.bwd.tag_peak[CPB_TAG_TEMP], 0, "forward's transient is not in backward's marks");
    cr_assert_eq(r.bwd.live_end, fixed);
    /* the whole trial: the larger phase, and the per-tag marks of both */
    cr_assert_eq(r.peak_bytes, fixed + 6000);
    cr_assert_eq(r.at_peak_bytes[CPB_TAG_GRAD_ACT], 5000);
    cr_assert_eq(r.tag_peak[CPB_TAG_TEMP], 3000);
    cr_assert_eq(r.intermediate_bytes, 6000);
    cr_assert_eq(cpb_device_mem(ctx)->peak, fixed + 6000, "the context keeps the whole-trial high-water");
    cr_assert_eq(r.alloc_hash, cpb_device_mem(ctx)->trace_hash);
    cr_assert(r.step_s > 0 && r.step_s >= r.fwd_s);
    cr_assert_eq(ctx->range_depth, 0, "the trial closes its ranges");
    cpb_free_all(ctx);
    cpb_ctx_destroy(ctx);
}

Test(trial, forward_oom_is_a_result_and_frees_clean)
{
    cpb_problem p = tiny(CPB_FP32);
    cpb_ctx *ctx = ctx1(0);
    cpb_layer L;
    cr_assert_eq(cpb_trial_setup(ctx, &test_method, &p, NULL, 1, &L), CPB_OK, "%s", cpb_errmsg(ctx));
    /* room for the saved state but not the transient */
    ctx->dev.capacity = cpb_device_mem(ctx)->live + 2000;
    cpb_row r;
    int rc = cpb_trial_step(ctx, &test_method, &L, &r);
    cr_assert_eq(rc, CPB_ERR_OOM);
    cr_assert_eq(r.code, CPB_ERR_OOM);
    cr_assert_not_null(strstr(r.reason, "fwd tmp"), "reason names the allocation: %s", r.reason);
    cr_assert_eq(ctx->range_depth, 0, "ranges the failed forward left open are closed");
    cpb_free_all(ctx);
    cr_assert_eq(cpb_device_mem(ctx)->live, 0);
    cpb_ctx_destroy(ctx);
}

Test(trial, refused_shape_and_wrong_world)
{
    cpb_problem p = tiny(CPB_FP32);
    cpb_ctx *ctx = ctx1(0);
    cpb_layer L;
    p.S = 18;
    cr_assert_eq(cpb_trial_setup(ctx, &test_method, &p, NULL, 1, &L), CPB_ERR_REFUSED);
    cr_assert_not_null(strstr(cpb_errmsg(ctx), "S % 4"), "%s", cpb_errmsg(ctx));
    cpb_clear_error(ctx);
    p.S = 16;
    p.C = 2;
    cr_assert_eq(cpb_trial_setup(ctx, &test_method, &p, NULL, 1, &L), CPB_ERR_INVALID);
    cr_assert_not_null(strstr(cpb_errmsg(ctx), "2 ranks"), "%s", cpb_errmsg(ctx));
    cpb_ctx_destroy(ctx);
}
