/* cmd_run.c — `cpbench run`: one trial of one method (the point runner of point.h).
 *
 *   cpbench run --backend sim --method M --model P --gpus C --seq S [--gpu PROFILE]
 *               [--gpus-per-node N] [--scope layer|model] [--calibration FILE] [--out FILE]
 *   mpirun -np C cpbench run --backend cpu|cuda --method M --model P --seq S
 *               [--warmup N --iters N] [--out FILE]
 *
 * Prints peak, intermediate and host memory with the breakdown by tag, and the times
 * (predicted on sim, measured on cpu/cuda).  Exit code: 0 when the trial ran (an OOM is a
 * result), 2 for bad input or a shape the method refuses (then nothing is written: --out
 * is checked before the trial and written only with a trial's row), 1 for any other
 * failure (a stream race, a broken allocation rule, a backend error, a results file not
 * written). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "model_scope.h"
#include "point.h"
#include "print_row.h"
#include "profile_iter.h"
#include "ranks.h"
#include "results_h5.h"

/* the largest context the whole model fits, --seq-start (128K) doubling, then --seq-stop
 * (32M) itself, bisected to --bisect (256K) */
static void print_max_context(const cpb_args *a, const cpb_method *m, const cpb_problem *p, const cpb_sim_opts *so)
{
    int64_t start = a->seq_start > 0 ? a->seq_start : (int64_t)128 << 10;
    int64_t stop = a->seq_stop > 0 ? a->seq_stop : (int64_t)32 << 20;
    int64_t step = a->bisect > 0 ? a->bisect : (int64_t)256 << 10;
    int64_t best = 0;
    int evals = 0;
    char err[1024];
    if (cpb_model_max_context(p, m, so, start, stop, step, &best, &evals, err, sizeof err) != CPB_OK) {
        printf("largest context that fits: not found (%s)\n", err);
        return;
    }
    if (best == 0)
        printf("largest context that fits: none from %lld tokens (%d estimates)\n", (long long)start, evals);
    else
        printf("largest context that fits: %lld tokens (%.2fM; searched %lld..%lld to within %lld, %d estimates)%s\n",
               (long long)best, best / 1048576.0, (long long)start, (long long)stop, (long long)step, evals,
               best >= stop ? " — the search's upper end: raise --seq-stop" : "");
}

/* the trial on every rank; the report and --out on rank 0 */
static int run(const cpb_cli *c, const cpb_method *m, cpb_runner *r)
{
    const cpb_args *a = &c->a;
    const int model = strcmp(a->scope, "model") == 0, rank0 = r->rank == 0;
    char err[1024];
    cpb_problem p;
    int prc = cpb_args_problem(a, m, r->C, &p, err, sizeof err);
    if (prc != CPB_OK) {
        if (rank0) fprintf(stderr, "cpbench run: %s%s\n", err, prc == CPB_ERR_REFUSED ? " (nothing was run or written)" : "");
        return 2;
    }
    static cpb_row row; /* large */
    cpb_model_estimate *e = NULL;
    int rc = cpb_run_point(r, m, &p, a->scope, &row, model ? &e : NULL);
    if (rc != CPB_OK) {
        if (rank0) fprintf(stderr, "cpbench run: %s\n", row.reason);
        cpb_model_estimate_free(e);
        return rc == CPB_ERR_INVALID || rc == CPB_ERR_REFUSED ? 2 : 1;
    }
    if (row.code == CPB_ERR_REFUSED) { /* a refusal is no trial: nothing to print or write */
        if (rank0) fprintf(stderr, "cpbench run: %s (nothing was run or written)\n", row.reason);
        cpb_model_estimate_free(e);
        return 2;
    }
    int code = cpb_cli_exit_code(row.code);
    if (rank0) {
        if (e) {
            cpb_model_estimate_print(stdout, e);
            print_max_context(a, m, &p, &r->o.sim);
        } else {
            cpb_print_row(stdout, &row, c->be);
        }
        if (a->out && cpb_results_write_row(a->out, a->force, c->argc, c->argv, c->be, &row, err, sizeof err) != CPB_OK) {
            fprintf(stderr, "cpbench run: %s\n", err);
            code = 1;
        }
    }
    cpb_model_estimate_free(e);
    /* every rank leaves with rank 0's verdict (the results file is written there) */
    return cpb_agree_bcast_int(code);
}

int cpb_cmd_run(const cpb_cli *c)
{
    const cpb_args *a = &c->a;
    char err[1024];
    const int rank0 = cpb_ranks_rank() == 0;
    cpb_profile_iter_select(a->profile_iter); /* the trial loop brackets that iteration */
    const cpb_method *ms[1];
    if (strcmp(a->method, "all") == 0 || strchr(a->method, ',')) {
        if (rank0) fprintf(stderr, "cpbench run: runs one method, and --method %s names several; give --method NAME "
                           "(`cpbench sweep` or `cpbench verify` take several)\n", a->method);
        return 2;
    }
    if (cpb_args_methods(a, ms, 1, err, sizeof err) < 0) {
        if (rank0) fprintf(stderr, "cpbench run: %s\n", err);
        return 2;
    }
    const cpb_backend *be = cpb_cli_backend(c, "run");
    if (!be) return 2;
    if (strcmp(a->scope, "model") == 0 && !be->models_time) {
        if (rank0) fprintf(stderr, "cpbench run: --scope model is an estimate of the simulator: use --backend sim\n");
        return 2;
    }
    int code = cpb_cli_check_out(a, "run");
    if (code) return code;
    cpb_runner_opts ro;
    if (cpb_args_runner_opts(a, be, NULL, 0, NULL, &ro, err, sizeof err) != CPB_OK) {
        if (rank0) fprintf(stderr, "cpbench run: %s\n", err);
        return 2;
    }
    ro.isolate = 0; /* `run` is one trial in this process */
    static cpb_runner r;
    int rc = cpb_runner_open(&r, &ro, err, sizeof err);
    if (rc != CPB_OK) {
        if (rank0) fprintf(stderr, "cpbench run: %s\n", err);
        /* a backend that cannot start here (no GPU, a library missing) refuses: exit 2 */
        return rc == CPB_ERR_INVALID || rc == CPB_ERR_UNSUPPORTED ? 2 : 1;
    }
    code = run(c, ms[0], &r);
    cpb_runner_close(&r);
    return code;
}
