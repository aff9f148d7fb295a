/* test_fingerprint.c — the numeric fingerprint: the sum-of-squares op against a double
 * reference, the norms of a trial against its downloaded outputs, the fingerprint leaving
 * the tracked peak alone, and the comparison finding a planted disagreement. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "fingerprint.h"
#include "measured.h"
#include "registry.h"
#include "test_cpu_util.h"
#include "test_problem.h"
#include "trial.h"

Test(fingerprint, sumsq_of_strided_views_and_accumulate)
{
    for (int bf = 0; bf < 2; bf++) {
        cpb_ctx *ctx = t_ctx();
        const cpb_dtype dt = bf ? CPB_BF16 : CPB_FP32;
        cpb_buf *x = t_buf(ctx, 7 * 5 * 24, dt, "x"), *out = t_buf(ctx, 3, CPB_FP32, "out");
        float *h = t_fill_view(ctx, cpb_whole(x), 5 + bf, 2.0f);
        /* heads 1..3 of [7][5][24] */
        cpb_view v = cpb_heads(x, 24, 7, 3, 24, 5 * 24, 24);
        double want = 0;
        for (int r = 0; r < 7; r++)
            for (int hh = 1; hh < 4; hh++)
                for (int c = 0; c < 24; c++) want += (double)h[(r * 5 + hh) * 24 + c] * h[(r * 5 + hh) * 24 + c];
        float got[3] = {0};
        cr_assert_eq(cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_whole(out), 7.0f), CPB_OK);
        cr_assert_eq(cpb_sumsq(ctx, CPB_STREAM_COMPUTE, v, cpb_span(out, 1, 1), 0), CPB_OK, "%s", cpb_errmsg(ctx));
        cr_assert_eq(cpb_sumsq(ctx, CPB_STREAM_COMPUTE, v, cpb_span(out, 2, 1), 1), CPB_OK, "%s", cpb_errmsg(ctx));
        cr_assert_eq(cpb_download(ctx, cpb_whole(out), got), CPB_OK);
        cr_expect_eq(got[0], 7.0f, "the op writes its one element only");
        cr_expect_float_eq(got[1], want, 1e-6 * want);
        cr_expect_float_eq(got[2], want + 7.0, 1e-6 * want, "accumulate adds to the old value");
        /* out must be one fp32 element */
        cr_expect_eq(cpb_sumsq(ctx, CPB_STREAM_COMPUTE, v, cpb_span(out, 0, 2), 0), CPB_ERR_INVALID);
        free(h);
        cpb_ctx_destroy(ctx);
    }
}

/* norms of the layer's outputs as the host sees them */
static void host_norms(cpb_ctx *ctx, const cpb_layer *L, double want[CPB_FP_COUNT])
{
    cpb_buf *b[] = {L->y, L->dx, L->dwq, L->dwk, L->dwv, L->dwo};
    for (int k = 0; k < CPB_FP_COUNT; k++) want[k] = 0;
    for (int i = 0; i < 6; i++) {
        float *v = t_get(ctx, cpb_whole(b[i]));
        double s = 0;
        for (int64_t j = 0; j < b[i]->nelem; j++) s += (double)v[j] * v[j];
        want[i < 2 ? i : CPB_FP_DW] += s;
        free(v);
    }
    for (int k = 0; k < CPB_FP_COUNT; k++) want[k] = sqrt(want[k]);
}

Test(fingerprint, norms_of_a_trial_and_the_peak_untouched)
{
    const char *methods[] = {"ulysses", "tp"}; /* replicated weights, and shards */
    for (int mi = 0; mi < 2; mi++) {
        const cpb_method *m = cpb_method_find(methods[mi]);
        cr_assert_not_null(m);
        cpb_problem p = cpb_test_problem(48, 1, 40, 6, 3, 8, CPB_BF16);
        cpb_ctx *ctx = t_ctx();
        cpb_layer L;
        cr_assert_eq(cpb_trial_setup(ctx, m, &p, NULL, 3, &L), CPB_OK, "%s", cpb_errmsg(ctx));
        cpb_reset_stats(ctx);
        static cpb_row tr;
        cpb_row_init(&tr);
        cr_assert_eq(cpb_trial_step(ctx, m, &L, &tr), CPB_OK, "%s", tr.reason);
        double fp[CPB_FP_COUNT], want[CPB_FP_COUNT];
        cr_assert_eq(cpb_fingerprint(ctx, &L, fp), CPB_OK, "%s", cpb_errmsg(ctx));
        host_norms(ctx, &L, want);
        for (int k = 0; k < CPB_FP_COUNT; k++) {
            cr_expect_gt(want[k], 0);
            cr_expect_float_eq(fp[k], want[k], 1e-6 * want[k], "%s norm %d: %g vs %g", m->name, k, fp[k], want[k]);
        }
        cpb_free_all(ctx);
        /* a measured run takes the fingerprint after its steps: the row's peak is the steps' */
        static cpb_row row;
        cr_assert_eq(cpb_run_measured(ctx, &p, m, 0, 1, 3, "cpu", &row), CPB_OK);
        cr_expect_str_eq(row.status, "ok", "%s", row.reason);
        cr_expect_eq(row.peak_bytes, tr.peak_bytes, "%s: fingerprint in the peak? %lld vs %lld", m->name,
                     (long long)row.peak_bytes, (long long)tr.peak_bytes);
        cr_expect_float_eq(row.dw_norm, fp[CPB_FP_DW], 1e-6 * fp[CPB_FP_DW], "the same seed, the same fingerprint");
        cpb_ctx_destroy(ctx);
    }
}

static void point(cpb_row *r, const char *method, double y, double dx, double dw)
{
    cpb_row_init(r);
    CPB_ROW_SET(r, method, method);
    CPB_ROW_SET(r, model, "tiny");
    CPB_ROW_SET(r, backend, "cpu");
    CPB_ROW_SET(r, gpu, "cpu");
    CPB_ROW_SET(r, dtype, "bf16");
    r->world_size = 2;
    r->seq_len = 64;
    r->seed = 1;
    r->y_norm = y;
    r->dx_norm = dx;
    r->dw_norm = dw;
}

Test(fingerprint, a_planted_disagreement_is_found)
{
    static cpb_row rows[9];
    point(&rows[0], "ulysses", 4.7354, 6.5950, 66.909);
    point(&rows[1], "ring", 4.7354, 6.5957, 66.911);
    point(&rows[2], "tp", 4.7347, 6.5949, 66.909);
    int compared = -1;
    cr_expect_eq(cpb_fingerprint_compare(rows, 3, NULL, &compared), 0, "bf16-level differences agree");
    cr_expect_eq(compared, 1);
    /* a method whose dW is off by 5% (a wrong reduction, say) */
    point(&rows[3], "metp", 4.7354, 6.5950, 70.25);
    char buf[4096] = "";
    FILE *f = fmemopen(buf, sizeof buf, "w");
    cr_expect_eq(cpb_fingerprint_compare(rows, 4, f, NULL), 1);
    fclose(f);
    cr_expect(strstr(buf, "metp disagrees") && strstr(buf, "dw_norm"), "%s", buf);
    cr_expect(!strstr(buf, "ulysses disagrees"), "the others agree with the median: %s", buf);
    /* not compared: another seed, another length, a failed row, a missing fingerprint,
     * and points without data (the simulator's zeros) */
    point(&rows[4], "ring", 1, 1, 1);
    rows[4].seed = 2;
    point(&rows[5], "ulysses", 2, 2, 2);
    rows[5].seq_len = 128;
    point(&rows[6], "tp", 9, 9, 9);
    CPB_ROW_SET(&rows[6], status, "oom");
    point(&rows[7], "usp", NAN, NAN, NAN);
    point(&rows[8], "hupipe", 4.7354, 6.5950, 66.909);
    cr_expect_eq(cpb_fingerprint_compare(rows, 9, NULL, &compared), 1);
    cr_expect_eq(compared, 1, "one point has several methods");
    point(&rows[0], "ulysses", 0, 0, 0);
    point(&rows[1], "ring", 0, 0, 0);
    cr_expect_eq(cpb_fingerprint_compare(rows, 2, NULL, &compared), 0);
    cr_expect_eq(compared, 0, "no data: nothing to compare");
    /* one method at zero where the others have data does disagree */
    point(&rows[2], "tp", 4.7, 6.6, 66.9);
    point(&rows[3], "metp", 4.7, 6.6, 66.9);
    cr_expect_eq(cpb_fingerprint_compare(rows, 4, NULL, NULL), 1);
}
