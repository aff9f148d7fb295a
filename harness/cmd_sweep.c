/* cmd_sweep.c — `cpbench sweep`: for each method, grow S until the first OOM (or walk
 * --seq-list), bisect down to --bisect, append one row per trial to --out and print one
 * aligned line per trial, nccl-tests style.  Points already in --out are not run again
 * (an interrupted sweep resumes).  The choice of points is the driver's (sweep.h), and so
 * is running one (point.h: in this process, sim or cpu/cuda under mpirun, or with
 * --isolate in a child process); this file walks the plan and prints. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "model_scope.h"
#include "fingerprint.h"
#include "point.h"
#include "profile_iter.h"
#include "progress.h"
#include "ranks.h"
#include "results_h5.h"
#include "sweep.h"
#include "watchdog.h"

#define MAX_METHODS 64

typedef struct sweep_run {
    const cpb_cli *c;
    cpb_args a;
    char exe[PATH_MAX];
    cpb_runner r;               /* runs every point (in this process or, --isolate, a child) */
    int rank;
    cpb_results *out;           /* rank 0 with --out */
    cpb_row *prev;              /* rows already in --out (resume), read under its lock */
    int64_t nprev;
    int64_t file_rows;          /* rows of --out when prev was read, plus this sweep's appends */
    cpb_progress prog;
    int errors;                 /* trials with status error */
    int stop;                   /* an append failed: the sweep stops (rank 0's word) */
    cpb_row *rows;              /* rank 0: this sweep's rows, run or from --out (fingerprints) */
    int64_t nrows, rows_cap;
    double last_progress;       /* when the last progress line was printed */
} sweep_run;

/* a progress line at most this often (and after each method): long sweeps only */
#define PROGRESS_EVERY_S 10.0

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---------------------------------------------------------------- one point */

/* an earlier row of --out for this point whose outcome is a result (ok, oom, refused);
 * error rows (and rows of a status this build does not know) are run again */
static const cpb_row *cached_row(const sweep_run *sr, const cpb_row *tmpl)
{
    for (int64_t i = sr->nprev - 1; i >= 0; i--) {
        const cpb_row *r = &sr->prev[i];
        int st = cpb_point_status_parse(r->status);
        if (cpb_row_same_point(r, tmpl) && st >= 0 && st != CPB_POINT_ERROR) return r;
    }
    return NULL;
}

static void print_progress(sweep_run *sr, int left, const char *next)
{
    char line[512];
    cpb_progress_format_line(line, sizeof line, &sr->prog, left, next);
    printf("%s\n", line);
    sr->last_progress = now_s();
}

/* rank 0: the rows of the sweep, for the comparison of the methods' fingerprints */
static void keep_row(sweep_run *sr, const cpb_row *row)
{
    if (sr->nrows == sr->rows_cap) {
        int64_t cap = sr->rows_cap ? 2 * sr->rows_cap : 64;
        cpb_row *r = realloc(sr->rows, sizeof *r * (size_t)cap);
        if (!r) return; /* the comparison then sees fewer rows */
        sr->rows = r;
        sr->rows_cap = cap;
    }
    sr->rows[sr->nrows++] = *row;
}

static int refresh_done(sweep_run *sr, char *err, size_t len);

/* Run (or find in --out) one point; print and record it.  Returns its status. */
static cpb_point_status sweep_point(sweep_run *sr, const cpb_method *m, int64_t S, int left)
{
    cpb_args a = sr->a;
    a.seq = S;
    cpb_problem p;
    char err[1024];
    static cpb_row tmpl, row; /* large; one point at a time */
    memset(&p, 0, sizeof p);
    int prc = cpb_args_problem(&a, m, sr->r.C, &p, err, sizeof err);
    if (prc != CPB_OK) p.S = S, p.C = sr->r.C;
    cpb_runner_point_row(&sr->r, m, &p, a.scope, &tmpl);
    row = tmpl; /* ranks other than 0 take a cached point's status from rank 0 */

    int stop = 0;
    if (sr->rank == 0 && refresh_done(sr, err, sizeof err) != CPB_OK) {
        /* the file cannot be read back: running on could write a point twice */
        fprintf(stderr, "cpbench sweep: cannot read the rows of --out again: %s; stopping the sweep\n", err);
        stop = 1;
    }
    if (cpb_agree_bcast_int(stop)) {
        sr->stop = 1;
        return CPB_POINT_ERROR;
    }
    const cpb_row *hit = sr->rank == 0 ? cached_row(sr, &tmpl) : NULL;
    int cached = cpb_agree_bcast_int(hit != NULL);
    cpb_watchdog_beat("running a point of the sweep");
    double t0 = now_s();
    if (cached) {
        if (hit) row = *hit;
    } else if (prc != CPB_OK) {
        /* a knob the method refuses at this length is a refusal; the options themselves were
         * checked before the sweep began, so anything else is an error */
        cpb_row_set_status(&row, prc == CPB_ERR_REFUSED ? CPB_ERR_REFUSED : CPB_ERR_BACKEND, err);
        cpb_provenance_utc_now(row.timestamp, sizeof row.timestamp);
    } else {
        /* a point the runner calls bad input (a preset without a model description) is
         * recorded as its row says */
        cpb_run_point(&sr->r, m, &p, a.scope, &row, NULL);
    }
    double dt = now_s() - t0;

    int status = cpb_point_status_parse(row.status);
    if (status < 0) status = CPB_POINT_ERROR;
    status = cpb_agree_bcast_int(status);
    cpb_progress_add(&sr->prog, dt, cached);
    if (sr->rank != 0) {
        sr->stop = cpb_agree_bcast_int(0);
        return (cpb_point_status)status;
    }

    if (status == CPB_POINT_ERROR) sr->errors++;
    keep_row(sr, &row);
    char line[512];
    cpb_progress_format_row(line, sizeof line, &row, cached ? "(in --out already)" : "");
    printf("%s\n", line);
    if (row.reason[0] && !cached) printf("#   %s %lld: %s\n", row.status, (long long)row.seq_len, row.reason);
    if (sr->out && !cached && cpb_results_append(sr->out, &row, err, sizeof err) != CPB_OK) {
        /* a row that cannot be written whole stops the sweep: the file stays as it was */
        fprintf(stderr, "cpbench sweep: %s; stopping the sweep\n", err);
        stop = 1;
    } else if (sr->out && !cached) {
        sr->file_rows++; /* this sweep's own row: not another writer's */
    }
    if (now_s() - sr->last_progress >= PROGRESS_EVERY_S) print_progress(sr, left, "");
    fflush(stdout);
    sr->stop = cpb_agree_bcast_int(stop);
    return (cpb_point_status)status;
}

/* ---------------------------------------------------------------- set-up */

static void plan_of(const cpb_args *a, cpb_sweep_plan *pl)
{
    memset(pl, 0, sizeof *pl);
    pl->start = a->seq_start;
    pl->stop = a->seq_stop;
    pl->factor = a->factor > 0 ? a->factor : 2.0;
    pl->bisect = a->bisect;
    pl->n_list = a->n_seq_list < CPB_SWEEP_MAX_LIST ? a->n_seq_list : CPB_SWEEP_MAX_LIST;
    memcpy(pl->list, a->seq_list, (size_t)pl->n_list * sizeof *pl->list);
    pl->granule = 1;
}

static void teardown(sweep_run *sr)
{
    if (sr->out) cpb_results_close(sr->out);
    free(sr->prev);
    free(sr->rows);
    cpb_runner_close(&sr->r);
}

/* rank 0: the rows of the open --out, read under the write lock it holds (resume) */
static int read_done(sweep_run *sr, char *err, size_t len)
{
    cpb_row *rows = NULL;
    int64_t n = 0;
    int rc = cpb_results_read_open(sr->out, &rows, &n, err, len);
    if (rc != CPB_OK) return rc;
    free(sr->prev);
    sr->prev = rows;
    sr->nprev = n;
    sr->file_rows = cpb_results_rows(sr->out);
    return CPB_OK;
}

/* rank 0: before each point, the rows of --out again when another writer added some since
 * they were read (this sweep's own appends are counted), so that two sweeps on one file
 * share the work and never run a point twice.  CPB_OK or the reader's code. */
static int refresh_done(sweep_run *sr, char *err, size_t len)
{
    if (!sr->out || cpb_results_rows(sr->out) == sr->file_rows) return CPB_OK;
    return read_done(sr, err, len);
}

/* rank 0: the file open for appending first, which takes its write lock (HDF5's file lock,
 * held until the sweep closes it), and only then the points already done, read under the
 * lock: a second sweep on the same file waits for the lock and then finds the first one's
 * points done (reading them before the lock let both run every point).  Every rank leaves
 * with rank 0's outcome (0, or the exit code with the message in err). */
static int open_out(sweep_run *sr, char *err, size_t len)
{
    if (!sr->a.out) return 0;
    int rc = CPB_OK;
    if (sr->rank == 0) {
        cpb_provenance prov;
        cpb_provenance_collect(&prov, sr->c->argc, sr->c->argv, sr->c->be, sr->r.gpu, sr->r.C);
        rc = cpb_results_open(sr->a.out, &prov, sr->a.force, &sr->out, err, len);
        /* a file appended to: its rows are the points already run (one --force replaced has
         * none) */
        if (rc == CPB_OK) rc = read_done(sr, err, len);
    }
    rc = cpb_agree_status(rc, err, len);
    return rc == CPB_OK ? 0 : rc == CPB_ERR_INVALID ? 2 : 1;
}

/* The options of the sweep as a whole, before any point: the shape (H % G, an even head
 * dim, ...) and the sizes at its longest length, which do not depend on the method. */
static int check_shape(const sweep_run *sr, const cpb_sweep_plan *plan, char *err, size_t len)
{
    cpb_args a = sr->a;
    int64_t longest = plan->stop;
    for (int i = 0; i < plan->n_list; i++)
        if (plan->list[i] > longest) longest = plan->list[i];
    const int64_t C = sr->r.C;
    a.seq = longest >= C ? longest - longest % C : C;
    cpb_problem p;
    return cpb_args_problem(&a, NULL, sr->r.C, &p, err, len);
}

static void print_banner(const sweep_run *sr, const cpb_method *const *ms, int nm)
{
    const cpb_args *a = &sr->a;
    printf("# cpbench sweep  backend %s%s  gpu %s  world %d  model %s  scope %s\n", a->backend,
           sr->c->be->models_time ? " (predictions of the timing model, not measurements)" : " (measured)",
           sr->r.gpu[0] ? sr->r.gpu : "(from the device)", sr->r.C, a->model, a->scope);
    printf("# methods:");
    for (int i = 0; i < nm; i++) printf(" %s", ms[i]->name);
    if (a->n_seq_list > 0) {
        printf("\n# lengths:");
        for (int i = 0; i < a->n_seq_list; i++) printf(" %lld", (long long)a->seq_list[i]);
    } else {
        char f[32];
        printf("\n# lengths: %lld to %lld, x%s", (long long)a->seq_start, (long long)a->seq_stop,
               cpb_sweep_number(a->factor, f, sizeof f));
    }
    if (a->bisect > 0) printf(", then bisect to %lld", (long long)a->bisect);
    printf("%s\n", a->isolate ? "; each trial in its own process" : "");
    if (a->out)
        printf("# results: %s (%lld rows already there; their points are not run again)\n", a->out,
               (long long)sr->nprev);
    if (strcmp(a->scope, "model") == 0) cpb_setup_print_given(stdout, &a->knobs, sr->r.C, 0, "# ");
    cpb_progress_header(stdout);
    fflush(stdout);
}

/* ---------------------------------------------------------------- the command */

int cpb_cmd_sweep(const cpb_cli *c)
{
    sweep_run *sr = calloc(1, sizeof *sr);
    if (!sr) {
        fprintf(stderr, "cpbench sweep: out of host memory\n");
        return 1;
    }
    sr->c = c;
    sr->a = c->a;
    sr->rank = cpb_ranks_rank();
    char err[2048] = "";
    int rc = 0;
    const cpb_method *ms[MAX_METHODS];
    int nm = 0;
    cpb_sweep_plan plan;

    ssize_t n = readlink("/proc/self/exe", sr->exe, sizeof sr->exe - 1);
    if (n > 0) sr->exe[n] = 0;
    else snprintf(sr->exe, sizeof sr->exe, "cpbench");

    if (!c->be) {
        snprintf(err, sizeof err, "--backend: %s", c->be_why);
        rc = 2;
        goto out;
    }
    if (!sr->a.model[0]) {
        snprintf(err, sizeof err, "a sweep needs --model PRESET (see `cpbench list`)");
        rc = 2;
        goto out;
    }
    plan_of(&sr->a, &plan);
    if (sr->a.n_seq_list > 0 && (sr->a.seq_start || sr->a.seq_stop)) {
        snprintf(err, sizeof err, "give either --seq-list or --seq-start/--seq-stop, not both");
        rc = 2;
        goto out;
    }
    if (cpb_sweep_plan_check(&plan, err, sizeof err) != 0) {
        rc = 2;
        goto out;
    }
    if (strcmp(sr->a.scope, "model") == 0 && !c->be->models_time) {
        snprintf(err, sizeof err, "--scope model is an estimate of the simulator: use --backend sim");
        rc = 2;
        goto out;
    }
    if ((nm = cpb_args_methods(&sr->a, ms, MAX_METHODS, err, sizeof err)) < 0) {
        rc = 2;
        goto out;
    }
    cpb_profile_iter_select(sr->a.profile_iter); /* the trial loop brackets that iteration */
    if ((rc = cpb_cli_check_out(&sr->a, "sweep")) != 0) goto out; /* before any work */
    cpb_runner_opts ro;
    if (cpb_args_runner_opts(&sr->a, c->be, sr->exe, c->argc - 1, c->argv + 1, &ro, err, sizeof err) != CPB_OK) {
        rc = 2;
        goto out;
    }
    if ((rc = cpb_runner_open(&sr->r, &ro, err, sizeof err)) != CPB_OK) {
        rc = rc == CPB_ERR_INVALID || rc == CPB_ERR_UNSUPPORTED ? 2 : 1;
        goto out;
    }
    if (check_shape(sr, &plan, err, sizeof err) != CPB_OK) {
        rc = 2;
        goto out;
    }
    if ((rc = open_out(sr, err, sizeof err)) != 0) goto out;
    if (sr->rank == 0) print_banner(sr, ms, nm);
    sr->last_progress = now_s();

    for (int i = 0; i < nm; i++) {
        const cpb_method *m = ms[i];
        /* the method's granule, from its own check() on this shape */
        cpb_args a0 = sr->a;
        a0.seq = (int64_t)sr->r.C << 20;
        cpb_problem p0;
        memset(&p0, 0, sizeof p0);
        if (cpb_args_problem(&a0, m, sr->r.C, &p0, err, sizeof err) != CPB_OK) p0.C = sr->r.C;
        int64_t lo = plan.start, hi = plan.stop;
        if (plan.n_list > 0) {
            lo = hi = plan.list[0];
            for (int k = 1; k < plan.n_list; k++) {
                if (plan.list[k] < lo) lo = plan.list[k];
                if (plan.list[k] > hi) hi = plan.list[k];
            }
        }
        plan.granule = cpb_sweep_granule(m, &p0, lo, hi);
        cpb_sweep_state st;
        cpb_sweep_begin(&st, &plan);
        if (sr->rank == 0) {
            printf("# %s: lengths are multiples of %lld tokens\n", m->name, (long long)plan.granule);
            fflush(stdout);
        }
        for (int64_t S; (S = cpb_sweep_next(&st)) > 0;) {
            /* trials left: this method's, then a plain estimate for the methods after it */
            int left = cpb_sweep_points_left(&st) - 1;
            for (int j = i + 1; j < nm; j++) {
                cpb_sweep_state fresh;
                cpb_sweep_begin(&fresh, &plan);
                left += cpb_sweep_points_left(&fresh);
            }
            cpb_sweep_report(&st, S, sweep_point(sr, m, S, left));
            if (sr->stop) break;
        }
        if (sr->stop) break;
        if (sr->rank == 0) {
            if (st.last_fit > 0 && st.first_oom > 0)
                printf("# %s: largest fit %lld tokens, first OOM %lld\n", m->name,
                       (long long)st.last_fit, (long long)st.first_oom);
            else if (st.last_fit > 0)
                printf("# %s: largest fit %lld tokens, no OOM up to there\n", m->name,
                       (long long)st.last_fit);
            else
                printf("# %s: no length fit\n", m->name);
            if (i + 1 < nm) {
                int left = 0;
                for (int j = i + 1; j < nm; j++) {
                    cpb_sweep_state fresh;
                    cpb_sweep_begin(&fresh, &plan);
                    left += cpb_sweep_points_left(&fresh);
                }
                print_progress(sr, left, ms[i + 1]->name);
            }
            fflush(stdout);
        }
    }
    if (sr->rank == 0 && sr->stop) printf("# stopped: a row could not be written to --out (above)\n");
    if (sr->rank == 0 && c->be->has_data && !sr->stop) {
        /* every method at a point had the same inputs: their fingerprints must agree */
        int compared = 0, bad = cpb_fingerprint_compare(sr->rows, sr->nrows, stdout, &compared);
        printf("# fingerprints (y, dx, dW norms): %d point%s with several methods, %d where a method disagrees\n",
               compared, compared == 1 ? "" : "s", bad);
        sr->errors += bad;
    }
    if (sr->rank == 0) {
        printf("# done: %d trials (%d run, %d from --out), %d errors\n", sr->prog.done,
               sr->prog.run, sr->prog.done - sr->prog.run, sr->errors);
    }
    err[0] = 0; /* errors of single trials were printed with their rows */
    rc = cpb_agree_bcast_int(sr->errors || sr->stop ? 1 : 0); /* rank 0 counted them */
out:
    if (rc && err[0] && sr->rank == 0) fprintf(stderr, "cpbench sweep: %s\n", err);
    teardown(sr);
    free(sr);
    return rc;
}
