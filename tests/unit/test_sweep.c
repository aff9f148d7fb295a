/* test_sweep.c — the sweep's choice of points, driven by a fake trial that runs out of
 * memory above a threshold (and refuses some lengths), and the granule found from check(). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sweep.h"

#define K ((int64_t)1024)
#define M (K * K)

typedef struct fake {
    int64_t oom_above;   /* S > this: OOM */
    int64_t refuse_below;/* S < this: refused */
    int64_t error_at;    /* S == this: error */
    int64_t ran[128];
    int n;
} fake;

static cpb_point_status fake_trial(fake *f, int64_t S)
{
    cr_assert_lt(f->n, 128, "sweep does not terminate");
    f->ran[f->n++] = S;
    if (S == f->error_at) return CPB_POINT_ERROR;
    if (S < f->refuse_below) return CPB_POINT_REFUSED;
    return S > f->oom_above ? CPB_POINT_OOM : CPB_POINT_OK;
}

static cpb_sweep_state drive(const cpb_sweep_plan *plan, fake *f)
{
    char err[256];
    cr_assert_eq(cpb_sweep_plan_check(plan, err, sizeof err), 0, "%s", err);
    cpb_sweep_state st;
    cpb_sweep_begin(&st, plan);
    for (int64_t S; (S = cpb_sweep_next(&st)) > 0;) {
        int left = cpb_sweep_points_left(&st);
        cr_expect_geq(left, 1, "points_left counts the pending point");
        cpb_sweep_report(&st, S, fake_trial(f, S));
    }
    cr_expect_eq(cpb_sweep_next(&st), 0, "a finished sweep stays finished");
    cr_expect_eq(cpb_sweep_points_left(&st), 0);
    return st;
}

static cpb_sweep_plan grow_plan(int64_t start, int64_t stop, int64_t bisect, int64_t g)
{
    cpb_sweep_plan p;
    memset(&p, 0, sizeof p);
    p.start = start;
    p.stop = stop;
    p.factor = 2;
    p.bisect = bisect;
    p.granule = g;
    return p;
}

Test(sweep, doubles_until_stop_when_everything_fits)
{
    fake f = {.oom_above = INT64_MAX};
    cpb_sweep_plan p = grow_plan(128 * K, 8 * M, 64 * K, 16);
    cpb_sweep_state st = drive(&p, &f);
    int64_t want[] = {128 * K, 256 * K, 512 * K, 1 * M, 2 * M, 4 * M, 8 * M};
    cr_assert_eq(f.n, 7);
    for (int i = 0; i < 7; i++) cr_expect_eq(f.ran[i], want[i], "point %d", i);
    cr_expect_eq(st.last_fit, 8 * M);
    cr_expect_eq(st.first_oom, 0);
}

Test(sweep, doubles_then_bisects_to_the_step)
{
    int64_t thr = 3460300; /* about 3.3M */
    fake f = {.oom_above = thr};
    cpb_sweep_plan p = grow_plan(128 * K, 8 * M, 64 * K, 16);
    cpb_sweep_state st = drive(&p, &f);
    /* growth: 128K .. 2M fit, 4M is the first OOM, then no larger point */
    int64_t want[] = {128 * K, 256 * K, 512 * K, 1 * M, 2 * M, 4 * M, 3 * M};
    for (int i = 0; i < 7; i++) cr_expect_eq(f.ran[i], want[i], "point %d", i);
    for (int i = 0; i < f.n; i++) {
        cr_expect_eq(f.ran[i] % 16, 0, "point %lld is a multiple of the granule", (long long)f.ran[i]);
        cr_expect_leq(f.ran[i], 4 * M, "nothing past the first OOM");
    }
    cr_expect_leq(st.last_fit, thr);
    cr_expect_gt(st.first_oom, thr);
    cr_expect_leq(st.first_oom - st.last_fit, 64 * K, "bisected down to the step");
    cr_expect_leq(f.n, 7 + 5, "bisection takes log2(2M / 64K) = 5 steps at most");
}

/* a search for the largest length that fits in [start, stop] (run --scope model, plan
 * --max-context): stop is tried when the doubling does not land on it, and a stop that does
 * not fit is bisected below; a plain sweep keeps to start * 2^k */
Test(sweep, end_at_stop_tries_stop_and_bisects_below_it)
{
    fake fits = {.oom_above = INT64_MAX};
    cpb_sweep_plan p = grow_plan(128 * K, 5 * M, 256 * K, 16);
    p.end_at_stop = 1;
    cpb_sweep_state st = drive(&p, &fits);
    cr_assert_eq(fits.n, 7);
    cr_expect_eq(fits.ran[5], 4 * M);
    cr_expect_eq(fits.ran[6], 5 * M, "stop is the last growth point");
    cr_expect_eq(st.last_fit, 5 * M);

    int64_t thr = 4 * M + 600 * K;
    fake f = {.oom_above = thr};
    st = drive(&p, &f);
    cr_expect_eq(f.ran[6], 5 * M);
    cr_expect_leq(st.last_fit, thr);
    cr_expect_gt(st.last_fit, 4 * M, "bisected between 4M and 5M, not stopped at 4M");
    cr_expect_leq(st.first_oom - st.last_fit, 256 * K);

    fake g = {.oom_above = INT64_MAX};
    p.end_at_stop = 0;
    st = drive(&p, &g);
    cr_expect_eq(g.n, 6, "without end_at_stop the sweep ends at the last doubling, 4M");
    cr_expect_eq(st.last_fit, 4 * M);

    fake h = {.oom_above = INT64_MAX};
    p = grow_plan(128 * K, 4 * M, 256 * K, 16);
    p.end_at_stop = 1;
    drive(&p, &h);
    cr_expect_eq(h.n, 6, "a stop on the doubling grid is not run twice");
}

Test(sweep, bisection_respects_a_coarse_granule)
{
    fake f = {.oom_above = 5 * M + 100};
    int64_t g = 65536; /* fpdt's chunk */
    cpb_sweep_plan p = grow_plan(128 * K, 8 * M, 1000, g);
    cpb_sweep_state st = drive(&p, &f);
    for (int i = 0; i < f.n; i++) cr_expect_eq(f.ran[i] % g, 0, "%lld", (long long)f.ran[i]);
    cr_expect_eq(st.last_fit, 5 * M, "the largest multiple of the chunk that fits");
    cr_expect_eq(st.first_oom, 5 * M + g);
}

Test(sweep, no_bisection_without_step)
{
    fake f = {.oom_above = 3 * M};
    cpb_sweep_plan p = grow_plan(128 * K, 8 * M, 0, 16);
    cpb_sweep_state st = drive(&p, &f);
    cr_expect_eq(f.n, 6, "128K..4M, stop at the first OOM");
    cr_expect_eq(st.last_fit, 2 * M);
    cr_expect_eq(st.first_oom, 4 * M);
}

Test(sweep, list_runs_given_points_in_order_until_oom)
{
    fake f = {.oom_above = 4 * M + 1};
    cpb_sweep_plan p = grow_plan(0, 0, 0, 16);
    int64_t list[] = {128 * K, 256 * K, 512 * K, 1 * M, 2 * M, 5 * M, 3 * M, 4 * M, 8 * M, 2 * M};
    memcpy(p.list, list, sizeof list);
    p.n_list = 10;
    cpb_sweep_state st = drive(&p, &f);
    int64_t want[] = {128 * K, 256 * K, 512 * K, 1 * M, 2 * M, 3 * M, 4 * M, 5 * M};
    cr_assert_eq(f.n, 8, "sorted, deduplicated, nothing after 5M's OOM");
    for (int i = 0; i < 8; i++) cr_expect_eq(f.ran[i], want[i], "point %d", i);
    cr_expect_eq(st.last_fit, 4 * M);
    cr_expect_eq(st.first_oom, 5 * M);
}

Test(sweep, list_points_are_rounded_to_the_granule)
{
    fake f = {.oom_above = INT64_MAX};
    cpb_sweep_plan p = grow_plan(0, 0, 0, 48); /* e.g. zigzag on 24 ranks */
    p.list[0] = 1000;
    p.list[1] = 10;
    p.n_list = 2;
    drive(&p, &f);
    cr_assert_eq(f.n, 2);
    cr_expect_eq(f.ran[0], 48, "rounded up to one granule at least");
    cr_expect_eq(f.ran[1], 960);
}

Test(sweep, refused_points_go_on_error_stops)
{
    fake f = {.oom_above = INT64_MAX, .refuse_below = 512 * K, .error_at = 2 * M};
    cpb_sweep_plan p = grow_plan(128 * K, 8 * M, 64 * K, 16);
    cpb_sweep_state st = drive(&p, &f);
    cr_expect_eq(f.n, 5, "128K, 256K refused; 512K, 1M fit; 2M errors and ends the method");
    cr_expect_eq(st.last_fit, 1 * M);
    cr_expect_eq(st.phase, CPB_SWEEP_DONE);
}

Test(sweep, oom_at_the_first_point_stops_without_bisection)
{
    fake f = {.oom_above = 1};
    cpb_sweep_plan p = grow_plan(128 * K, 8 * M, 64 * K, 16);
    drive(&p, &f);
    cr_expect_eq(f.n, 1);
}

Test(sweep, plan_errors_name_the_option)
{
    char err[256];
    cpb_sweep_plan p = grow_plan(0, 8 * M, 0, 16);
    cr_expect_neq(cpb_sweep_plan_check(&p, err, sizeof err), 0);
    cr_expect(strstr(err, "--seq-start") != NULL, "%s", err);
    p = grow_plan(8 * M, 128 * K, 0, 16);
    cr_expect_neq(cpb_sweep_plan_check(&p, err, sizeof err), 0);
    cr_expect(strstr(err, "--seq-stop") != NULL, "%s", err);
    p = grow_plan(128 * K, 8 * M, 0, 16);
    p.factor = 1.0;
    cr_expect_neq(cpb_sweep_plan_check(&p, err, sizeof err), 0);
    cr_expect(strstr(err, "--factor") != NULL, "%s", err);
    p.factor = 1.01;
    cr_expect_neq(cpb_sweep_plan_check(&p, err, sizeof err), 0, "too many points");
}

Test(sweep, status_names_round_trip)
{
    for (int s = CPB_POINT_OK; s <= CPB_POINT_ERROR; s++)
        cr_expect_eq(cpb_point_status_parse(cpb_point_status_name((cpb_point_status)s)), s);
    cr_expect_eq(cpb_point_status_parse("bogus"), -1);
}

/* ---- granule from a method's check() */

static int check_zigzag(const cpb_problem *p, char *why, size_t n)
{
    if (p->S % (2 * p->C)) return snprintf(why, n, "S %% 2C"), 2;
    return 0;
}
static int check_chunked(const cpb_problem *p, char *why, size_t n)
{
    int64_t chunk = cpb_knob_int(p, "seq_chunk") ? cpb_knob_int(p, "seq_chunk") : 65536;
    if (p->S % chunk || p->S < chunk) return snprintf(why, n, "S %% chunk"), 2;
    return 0;
}
/* fpdt-like: a length below the chunk is one chunk, longer ones need whole chunks */
static int check_chunk_clamped(const cpb_problem *p, char *why, size_t n)
{
    if (p->S > 65536 && p->S % 65536) return snprintf(why, n, "S %% chunk"), 2;
    return 0;
}
static int check_contiguous(const cpb_problem *p, char *why, size_t n)
{
    if (p->S % p->C) return snprintf(why, n, "S %% C"), 2;
    return 0;
}
static int check_never(const cpb_problem *p, char *why, size_t n)
{
    (void)p;
    return snprintf(why, n, "H %% C"), 2;
}

Test(sweep, granule_from_check)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    p.C = 8;
    /* a token-count knob (as fpdt's chunk) is a candidate granule */
    static const cpb_knob chunk_knob[] = {
        {.name = "seq_chunk", .type = CPB_KNOB_TOKENS, .def = "0", .arg = "N", .help = "chunk"}, {NULL}};
    cpb_method m = {.name = "fake", .knobs = chunk_knob};
    m.check = check_zigzag;
    cr_expect_eq(cpb_sweep_granule(&m, &p, 128 * K, 8 * M), 16);
    m.check = check_contiguous;
    cr_expect_eq(cpb_sweep_granule(&m, &p, 128 * K, 8 * M), 8);
    m.check = check_chunked;
    cr_expect_eq(cpb_sweep_granule(&m, &p, 128 * K, 8 * M), 65536);
    cpb_knobs_set_int(&p.knobs, "seq_chunk", 24576); /* not a power of two times C */
    cr_expect_eq(cpb_sweep_granule(&m, &p, 128 * K, 8 * M), 24576);
    cpb_knobs_set_int(&p.knobs, "seq_chunk", 0);
    m.check = check_never;
    cr_expect_eq(cpb_sweep_granule(&m, &p, 128 * K, 8 * M), 8, "falls back to C");
    m.check = check_chunk_clamped;
    cr_expect_eq(cpb_sweep_granule(&m, &p, 16 * K, 1 * M), 65536, "the long end decides");
    cr_expect_eq(cpb_sweep_granule(&m, &p, 16 * K, 48 * K), 8, "all short: any multiple of C");
    p.C = 6;
    m.check = check_zigzag;
    cr_expect_eq(cpb_sweep_granule(&m, &p, 128 * K, 8 * M), 12);
}

/* ---- terminal lines (progress.c) */
#include "progress.h"

Test(progress, rows_are_aligned_and_durations_readable)
{
    cpb_row a, b;
    cpb_row_init(&a);
    CPB_ROW_SET(&a, method, "ring");
    a.seq_len = 131072;
    a.peak_bytes = (int64_t)5 << 30;
    a.step_s = 0.1234;
    a.tokens_per_s_per_gpu = 1234.5;
    a.tflops_per_gpu = 456.7;
    b = a;
    CPB_ROW_SET(&b, method, "offload");
    b.seq_len = 8388608;
    char la[256], lb[256], lc[256];
    cpb_progress_format_row(la, sizeof la, &a, "");
    cpb_progress_format_row(lb, sizeof lb, &b, "");
    cr_expect_eq(strlen(la), strlen(lb), "aligned:\n%s\n%s", la, lb);
    cr_expect(strstr(la, "5.00") && strstr(la, " 0.1234 ") && strstr(la, "1234.5"), "step in seconds: %s", la);
    CPB_ROW_SET(&b, status, "oom");
    cpb_progress_format_row(lc, sizeof lc, &b, "");
    cr_expect(strstr(lc, " oom ") && !strstr(lc, "0.1234") && !strstr(lc, "1234.5") && !strstr(lc, "456.7"),
              "an OOM row has no time or throughput: %s", lc);
    CPB_ROW_SET(&b, status, "refused");
    cpb_progress_format_row(lc, sizeof lc, &b, "");
    cr_expect(strstr(lc, " refused ") && !strstr(lc, "0.1234") && !strstr(lc, "1234.5") && !strstr(lc, "456.7"),
              "a refused row has no time or throughput: %s", lc);
    char sec[32];
    cpb_format_seconds(sec, sizeof sec, 4108.7059);
    cr_expect_str_eq(sec, "4109", "68 minutes read in seconds");
    cpb_format_seconds(sec, sizeof sec, 68.4784);
    cr_expect_str_eq(sec, "68.48");
    cpb_format_seconds(sec, sizeof sec, 0.0123456);
    cr_expect_str_eq(sec, "0.01235");
    cpb_format_seconds(sec, sizeof sec, 0);
    cr_expect_str_eq(sec, "0");
    char *hdr = NULL;
    size_t hn = 0;
    FILE *hf = open_memstream(&hdr, &hn);
    cpb_progress_header(hf);
    fclose(hf);
    cr_expect(strstr(hdr, "(s)") && !strstr(hdr, "(ms)"), "the step column is in seconds: %s", hdr);
    free(hdr);
    char d[32];
    cpb_progress_format_duration(d, sizeof d, 12.34);
    cr_expect_str_eq(d, "12.3s");
    cpb_progress_format_duration(d, sizeof d, 185);
    cr_expect_str_eq(d, "3m05s");
    cpb_progress_format_duration(d, sizeof d, 3720);
    cr_expect_str_eq(d, "1h02m");
}

Test(progress, time_left_from_trials_that_ran)
{
    cpb_progress p = {0};
    char line[256];
    cpb_progress_format_line(line, sizeof line, &p, 5, "");
    cr_expect(strstr(line, "~?") != NULL, "no estimate before a trial ran: %s", line);
    cpb_progress_add(&p, 2.0, 0);
    cpb_progress_add(&p, 4.0, 0);
    cpb_progress_add(&p, 0.0, 1); /* from the results file: not in the mean */
    cpb_progress_format_line(line, sizeof line, &p, 10, "ring");
    cr_expect(strstr(line, "[3 done, ~10 to go] ~30.0s left (3.0s per trial), next: ring") != NULL,
              "%s", line);
}

/* ---- --isolate (sweep_isolate.c) */
#include <stdlib.h>
#include <unistd.h>

#include "sweep_isolate.h"

Test(isolate, child_argv_keeps_trial_options_only)
{
    char *opts[] = {"--backend", "sim", "--method", "all", "--seq-start=128K", "--seq-stop", "8M",
                    "--bisect", "64K", "--isolate", "--out", "r.h5", "--mem-cap", "4G"};
    char **v = cpb_isolate_argv("/x/cpbench", 14, opts, "ring", 262144, "/tmp/o.h5", 0);
    const char *want[] = {"/x/cpbench", "run", "--backend", "sim", "--mem-cap", "4G", "--method",
                          "ring", "--seq", "262144", "--out", "/tmp/o.h5", NULL};
    for (int i = 0; want[i]; i++) cr_expect_str_eq(v[i], want[i], "argv[%d]", i);
    cpb_isolate_free_argv(v);
    setenv("CPB_MPIRUN_FLAGS", "--oversubscribe  --allow-run-as-root", 1);
    v = cpb_isolate_argv("cpbench", 0, opts, "ring", 64, "o.h5", 4);
    cr_expect_str_eq(v[0], "mpirun");
    cr_expect_str_eq(v[2], "4");
    cr_expect_str_eq(v[3], "--oversubscribe");
    cr_expect_str_eq(v[4], "--allow-run-as-root");
    cr_expect_str_eq(v[5], "cpbench");
    cpb_isolate_free_argv(v);
}

/* a child that dies without writing its row becomes an "error" row saying how it died */
Test(isolate, killed_child_is_an_error_row_with_the_reason)
{
    char dir[] = "/tmp/cpb_iso_XXXXXX", exe[256];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(exe, sizeof exe, "%s/fake-cpbench", dir);
    FILE *f = fopen(exe, "w");
    fputs("#!/bin/sh\necho 'cudaMalloc: the driver gave up'\nkill -9 $$\n", f);
    fclose(f);
    chmod(exe, 0755);
    cpb_row tmpl, row;
    cpb_row_init(&tmpl);
    CPB_ROW_SET(&tmpl, method, "ring");
    tmpl.seq_len = 4096;
    char err[256];
    cr_assert_eq(cpb_isolate_trial(exe, 0, NULL, "ring", 4096, 0, &tmpl, &row, err, sizeof err), CPB_OK);
    cr_expect_str_eq(row.status, "error");
    cr_expect_str_eq(row.method, "ring");
    cr_expect_eq(row.seq_len, 4096);
    cr_expect(strstr(row.reason, "signal 9") && strstr(row.reason, "the driver gave up"), "%s", row.reason);
    unlink(exe);
    rmdir(dir);
}
