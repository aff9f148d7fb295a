/* cmd_sweep.c — `cpbench sweep`: for each method, grow S until the first OOM (or walk
 * --seq-list), bisect down to --bisect, append one row per trial to --out and print one
 * aligned line per trial, nccl-tests style.  Points already in --out are not run again
 * (an interrupted sweep resumes).  The choice of points is sweep.c's; a trial runs in this
 * process (sim, or cpu/cuda under mpirun) or, with --isolate, in a child process. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "cpb_backend.h"
#include "gpu_profiles.h"
#include "model_scope.h"
#include "profile_iter.h"
#include "progress.h"
#include "results_from_run.h"
#include "results_h5.h"
#include "run_trial.h"
#include "sweep.h"
#include "sweep_isolate.h"

#define MAX_METHODS 64

typedef struct sweep_run {
    cpb_args a;
    int argc;                   /* the command line, for provenance and --isolate children */
    char **argv;
    char exe[PATH_MAX];
    int C;                      /* world size */
    char gpu[48];               /* gpu column known before a trial runs ("" = any) */
    int mpi, rank;              /* in-process cpu/cuda: MPI ranks */
    int we_init_mpi;
    cpb_ctx *ctx;               /* in-process cpu/cuda: one context for the whole sweep */
    cpb_results *out;           /* rank 0 with --out */
    cpb_results_row *prev;      /* rows already in --out (resume) */
    int64_t nprev;
    cpb_progress prog;
    int errors;                 /* trials with status error */
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

static int is_sim(const sweep_run *sr) { return strcmp(sr->a.backend, "sim") == 0; }

/* ---------------------------------------------------------------- one point */

/* an earlier row of --out for this point whose outcome is a result (ok, oom, skipped) */
static const cpb_results_row *cached_row(const sweep_run *sr, const cpb_results_row *tmpl)
{
    for (int64_t i = sr->nprev - 1; i >= 0; i--) {
        const cpb_results_row *r = &sr->prev[i];
        if (cpb_results_same_point(r, tmpl) && strcmp(r->status, "error") != 0) return r;
    }
    return NULL;
}

/* Run point p of method m in this process or a child; fills row. */
static void run_point(sweep_run *sr, const cpb_method *m, const cpb_problem *p,
                      const cpb_results_row *tmpl, cpb_results_row *row)
{
    char why[1024] = "";
    *row = *tmpl;
    if (m->check(p, why, sizeof why) != CPB_OK) { /* refused shape: nothing to run */
        CPB_RESULTS_SET(row, status, "skipped");
        CPB_RESULTS_SET(row, reason, why);
        return;
    }
    int rc;
    cpb_run_row rr;
    memset(&rr, 0, sizeof rr);
    if (sr->a.isolate) {
        char err[1024];
        rc = cpb_isolate_trial(sr->exe, sr->argc - 1, sr->argv + 1, m->name, p->S,
                               is_sim(sr) ? 0 : sr->C, tmpl, row, err, sizeof err);
        if (rc != CPB_OK) {
            CPB_RESULTS_SET(row, status, "error");
            CPB_RESULTS_SET(row, reason, err);
        }
        return;
    }
    if (is_sim(sr) && strcmp(sr->a.scope, "model") == 0) {
        /* whole-model estimate (model_scope.h): the same row `cpbench run --scope model` writes */
        cpb_sim_opts so;
        cpb_sim_opts_from_args(&sr->a, &so);
        cpb_model_estimate *e = NULL;
        char err[1024] = "";
        rc = cpb_model_estimate_new(p, m, &so, &e, err, sizeof err);
        if (rc != CPB_OK) {
            CPB_RESULTS_SET(row, status, rc == CPB_ERR_INVALID ? "skipped" : "error");
            CPB_RESULTS_SET(row, reason, err);
            return;
        }
        cpb_model_estimate_row(e, &rr);
        cpb_model_estimate_free(e);
        cpb_results_from_run(&rr, p, 0, 0, row);
    } else if (is_sim(sr)) {
        cpb_sim_opts so;
        cpb_sim_opts_from_args(&sr->a, &so);
        rc = cpb_run_sim(p, m, &so, &rr);
        cpb_results_from_run(&rr, p, 0, 0, row);
    } else {
        rc = cpb_run_measured(sr->ctx, p, m, sr->a.warmup, sr->a.iters, sr->a.seed, &rr);
        cpb_results_from_run(&rr, p, sr->a.warmup, sr->a.iters, row);
    }
    if (rc != CPB_OK && strcmp(row->status, "ok") == 0) CPB_RESULTS_SET(row, status, "error");
}

/* rank 0's choice, the same on every rank */
static int bcast_int(const sweep_run *sr, int v)
{
    if (sr->mpi) MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return v;
}

static void print_progress(sweep_run *sr, int left, const char *next)
{
    char line[512];
    cpb_progress_format_line(line, sizeof line, &sr->prog, left, next);
    printf("%s\n", line);
    sr->last_progress = now_s();
}

/* Run (or find in --out) one point; print and record it.  Returns its status. */
static cpb_point_status sweep_point(sweep_run *sr, const cpb_method *m, int64_t S, int left)
{
    cpb_args a = sr->a;
    a.seq = S;
    cpb_problem p;
    char err[1024];
    cpb_results_row tmpl, row;
    memset(&p, 0, sizeof p);
    int prc = cpb_args_problem(&a, sr->C, &p, err, sizeof err);
    if (prc != CPB_OK) p.S = S, p.C = sr->C;
    cpb_results_point(&p, m->name, a.backend, sr->gpu, a.scope, &tmpl);
    if (is_sim(sr)) cpb_results_sim_point(a.scope, a.framework, a.host_ram, &tmpl);
    row = tmpl; /* ranks other than 0 take a cached point's status from rank 0 */

    const cpb_results_row *hit = sr->rank == 0 ? cached_row(sr, &tmpl) : NULL;
    int cached = bcast_int(sr, hit != NULL);
    double t0 = now_s();
    if (cached) {
        if (hit) row = *hit;
    } else if (prc != CPB_OK) {
        row = tmpl;
        CPB_RESULTS_SET(&row, status, "skipped");
        CPB_RESULTS_SET(&row, reason, err);
    } else {
        run_point(sr, m, &p, &tmpl, &row);
    }
    double dt = now_s() - t0;

    int status = cpb_point_status_parse(row.status);
    if (status < 0) status = CPB_POINT_ERROR;
    status = bcast_int(sr, status);
    cpb_progress_add(&sr->prog, dt, cached);
    if (sr->rank != 0) return (cpb_point_status)status;

    if (status == CPB_POINT_ERROR) sr->errors++;
    char line[512];
    cpb_progress_format_row(line, sizeof line, &row, cached ? "(in --out already)" : "");
    printf("%s\n", line);
    if (row.reason[0] && !cached) printf("#   %s %lld: %s\n", row.status, (long long)row.seq_len, row.reason);
    if (sr->out && !cached && cpb_results_append(sr->out, &row, err, sizeof err) != CPB_OK) {
        fprintf(stderr, "cpbench sweep: %s\n", err);
        sr->errors++;
    }
    if (now_s() - sr->last_progress >= PROGRESS_EVERY_S) print_progress(sr, left, "");
    fflush(stdout);
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

/* world size and the gpu column known before a trial; MPI and the context for cpu/cuda */
static int setup_world(sweep_run *sr, char *err, size_t len)
{
    const cpb_args *a = &sr->a;
    if (is_sim(sr)) {
        cpb_gpu_profile prof;
        if (cpb_gpu_profile_get(a->gpu[0] ? a->gpu : NULL, &prof, err, len) != CPB_OK) return 2;
        snprintf(sr->gpu, sizeof sr->gpu, "%s", prof.name);
        sr->C = a->gpus > 0 ? a->gpus : 8;
        return 0;
    }
    if (strcmp(a->backend, "cpu") == 0) snprintf(sr->gpu, sizeof sr->gpu, "cpu");
    if (a->isolate) { /* children run under mpirun -np C */
        if (a->gpus <= 0) {
            snprintf(err, len, "--isolate on the %s backend starts `mpirun -np C cpbench run` per "
                               "trial: give --gpus C (and run the sweep itself without mpirun)",
                     a->backend);
            return 2;
        }
        sr->C = a->gpus;
        return 0;
    }
    int init = 0;
    MPI_Initialized(&init);
    if (!init) {
        if (MPI_Init(NULL, NULL) != MPI_SUCCESS) {
            snprintf(err, len, "MPI_Init failed: start the %s sweep with mpirun -np C", a->backend);
            return 2;
        }
        sr->we_init_mpi = 1;
    }
    sr->mpi = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &sr->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &sr->C);
    if (a->gpus > 0 && a->gpus != sr->C) {
        snprintf(err, len, "--gpus %d but mpirun started %d ranks: on the %s backend the world "
                           "size is the number of ranks (mpirun -np %d)",
                 a->gpus, sr->C, a->backend, a->gpus);
        return 2;
    }
    cpb_ctx_opts co;
    cpb_args_ctx_opts(a, &co);
    if (cpb_ctx_create(&co, &sr->ctx, err, len) != CPB_OK) return 1;
    return 0;
}

static void teardown(sweep_run *sr)
{
    if (sr->out) cpb_results_close(sr->out);
    free(sr->prev);
    if (sr->ctx) cpb_ctx_destroy(sr->ctx);
    if (sr->we_init_mpi) {
        int fin = 0;
        MPI_Finalized(&fin);
        if (!fin) MPI_Finalize();
    }
}

/* rank 0: earlier rows of --out (to resume) and the file open for appending */
static int open_out(sweep_run *sr, char *err, size_t len)
{
    if (!sr->a.out || sr->rank != 0) return 0;
    if (access(sr->a.out, F_OK) == 0 &&
        cpb_results_read(sr->a.out, &sr->prev, &sr->nprev, err, len) != CPB_OK)
        return 2;
    cpb_provenance prov;
    cpb_provenance_collect(&prov, sr->argc, sr->argv, sr->a.backend, sr->gpu[0] ? sr->gpu : NULL,
                           sr->C);
    return cpb_results_open(sr->a.out, &prov, &sr->out, err, len) == CPB_OK ? 0 : 2;
}

static void print_banner(const sweep_run *sr, const cpb_method *const *ms, int nm)
{
    const cpb_args *a = &sr->a;
    printf("# cpbench sweep  backend %s%s  gpu %s  world %d  model %s  scope %s\n", a->backend,
           is_sim(sr) ? " (predictions of the timing model, not measurements)" : " (measured)",
           sr->gpu[0] ? sr->gpu : "(from the device)", sr->C, a->model, a->scope);
    printf("# methods:");
    for (int i = 0; i < nm; i++) printf(" %s", ms[i]->name);
    if (a->n_seq_list > 0) {
        printf("\n# lengths:");
        for (int i = 0; i < a->n_seq_list; i++) printf(" %lld", (long long)a->seq_list[i]);
    } else {
        printf("\n# lengths: %lld to %lld, x%g", (long long)a->seq_start, (long long)a->seq_stop,
               a->factor);
    }
    if (a->bisect > 0) printf(", then bisect to %lld", (long long)a->bisect);
    printf("%s\n", a->isolate ? "; each trial in its own process" : "");
    if (a->out)
        printf("# results: %s (%lld rows already there; their points are not run again)\n", a->out,
               (long long)sr->nprev);
    cpb_progress_header(stdout);
    fflush(stdout);
}

/* ---------------------------------------------------------------- the command */

int cpb_cmd_sweep(int argc, char **argv)
{
    sweep_run *sr = calloc(1, sizeof *sr);
    if (!sr) {
        fprintf(stderr, "cpbench sweep: out of host memory\n");
        return 1;
    }
    sr->argc = argc;
    sr->argv = argv;
    char err[2048] = "";
    int rc = 0;
    cpb_args_defaults(&sr->a);
    const cpb_method *ms[MAX_METHODS];
    int nm = 0;
    cpb_sweep_plan plan;

    ssize_t n = readlink("/proc/self/exe", sr->exe, sizeof sr->exe - 1);
    if (n > 0) sr->exe[n] = 0;
    else snprintf(sr->exe, sizeof sr->exe, "cpbench");

    if (cpb_args_parse(argc - 1, argv + 1, &sr->a, err, sizeof err) != CPB_OK) {
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
    if (strcmp(sr->a.scope, "model") == 0 && strcmp(sr->a.backend, "sim") != 0) {
        snprintf(err, sizeof err, "--scope model is an estimate of the simulator: use --backend sim");
        rc = 2;
        goto out;
    }
    if ((nm = cpb_args_methods(&sr->a, ms, MAX_METHODS, err, sizeof err)) < 0) {
        rc = 2;
        goto out;
    }
    cpb_profile_iter_select(sr->a.profile_iter); /* the trial loop brackets that iteration */
    if ((rc = setup_world(sr, err, sizeof err)) != 0) goto out;
    if ((rc = open_out(sr, err, sizeof err)) != 0) goto out;
    if (sr->rank == 0) print_banner(sr, ms, nm);
    sr->last_progress = now_s();

    for (int i = 0; i < nm; i++) {
        const cpb_method *m = ms[i];
        /* the method's granule, from its own check() on this shape */
        cpb_args a0 = sr->a;
        a0.seq = (int64_t)sr->C << 20;
        cpb_problem p0;
        memset(&p0, 0, sizeof p0);
        if (cpb_args_problem(&a0, sr->C, &p0, err, sizeof err) != CPB_OK) p0.C = sr->C;
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
        }
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
    if (sr->rank == 0) {
        printf("# done: %d trials (%d run, %d from --out), %d errors\n", sr->prog.done,
               sr->prog.run, sr->prog.done - sr->prog.run, sr->errors);
    }
    err[0] = 0; /* errors of single trials were printed with their rows */
    rc = sr->errors ? 1 : 0;
out:
    if (rc && err[0]) fprintf(stderr, "cpbench sweep: %s\n", err);
    teardown(sr);
    free(sr);
    return rc;
}
