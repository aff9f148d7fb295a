/* cmd_run.c — `cpbench run`: one trial of one method.
 *
 *   cpbench run --backend sim --method M --model P --gpus C --seq S [--gpu PROFILE]
 *               [--gpus-per-node N] [--scope layer|model] [--calibration FILE] [--out FILE]
 *   mpirun -np C cpbench run --backend cpu|cuda --method M --model P --seq S
 *               [--warmup N --iters N] [--out FILE]
 *
 * Prints peak, intermediate and host memory with the breakdown by tag, and the times
 * (predicted on sim, measured on cpu/cuda).  Exit code: 0 when the trial ran (an OOM is a
 * result), 2 for bad input or a shape the method refuses, 1 for any other failure (a
 * stream race, a broken allocation rule, a backend error, a results file not written). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cpb_backend.h"
#include "gpu_profiles.h"
#include "profile_iter.h"
#include "model_scope.h"
#include "results_from_run.h"
#include "results_h5.h"
#include "run_trial.h"

static int exit_code(int code)
{
    if (code == CPB_OK || code == CPB_ERR_OOM) return 0;
    return code == CPB_ERR_INVALID ? 2 : 1;
}

/* rank 0: append the row to --out */
static int write_out(const cpb_args *a, int argc, char **argv, const cpb_run_row *row, const cpb_problem *p,
                     int warmup, int iters)
{
    if (!a->out) return 0;
    cpb_results_row rr;
    cpb_results_from_run(row, p, warmup, iters, &rr);
    char err[1024];
    if (cpb_results_write_row(a->out, argc, argv, &rr, err, sizeof err) != CPB_OK) {
        fprintf(stderr, "cpbench run: %s\n", err);
        return 1;
    }
    return 0;
}

/* the largest context the whole model fits, --seq-start (128K) doubling up to --seq-stop
 * (32M), bisected to --bisect (256K) */
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

static int run_sim(const cpb_args *a, const cpb_method *m, int argc, char **argv)
{
    char err[1024];
    cpb_gpu_profile prof;
    if (cpb_gpu_profile_get(a->gpu[0] ? a->gpu : NULL, &prof, err, sizeof err) != CPB_OK) {
        fprintf(stderr, "cpbench run: --gpu: %s\n", err);
        return 2;
    }
    int C = a->gpus > 0 ? a->gpus : 8;
    cpb_problem p;
    memset(&p, 0, sizeof p);
    if (cpb_args_problem(a, C, &p, err, sizeof err) != CPB_OK) {
        fprintf(stderr, "cpbench run: %s\n", err);
        return 2;
    }
    cpb_sim_opts so;
    cpb_sim_opts_from_args(a, &so);
    cpb_run_row row;
    int rc;
    if (strcmp(a->scope, "model") == 0) {
        cpb_model_estimate *e = NULL;
        rc = cpb_model_estimate_new(&p, m, &so, &e, err, sizeof err);
        if (rc != CPB_OK) {
            fprintf(stderr, "cpbench run: %s\n", err);
            return exit_code(rc) == 0 ? 1 : exit_code(rc);
        }
        cpb_model_estimate_print(stdout, e);
        cpb_model_estimate_row(e, &row);
        cpb_model_estimate_free(e);
        print_max_context(a, m, &p, &so);
    } else {
        rc = cpb_run_sim(&p, m, &so, &row);
        if (rc != CPB_OK) {
            fprintf(stderr, "cpbench run: %s\n", row.reason);
            return exit_code(rc) == 0 ? 1 : exit_code(rc);
        }
        cpb_run_row_print(stdout, &row);
    }
    if (write_out(a, argc, argv, &row, &p, 0, 0)) return 1;
    return exit_code(row.code);
}

static int run_measured(const cpb_args *a, const cpb_method *m, int argc, char **argv)
{
    char err[1024];
    if (strcmp(a->scope, "model") == 0) {
        fprintf(stderr, "cpbench run: --scope model is an estimate of the simulator: use --backend sim\n");
        return 2;
    }
    cpb_ctx_opts co;
    cpb_args_ctx_opts(a, &co);
    cpb_ctx *ctx = NULL;
    int crc = cpb_ctx_create(&co, &ctx, err, sizeof err);
    if (crc != CPB_OK) {
        fprintf(stderr, "cpbench run: %s\n", err);
        /* a backend that cannot start here (no GPU, a library missing) refuses: exit 2 */
        return crc == CPB_ERR_UNSUPPORTED || crc == CPB_ERR_INVALID ? 2 : 1;
    }
    int C = cpb_world_size(ctx), rank = cpb_rank(ctx), code = 0;
    cpb_problem p;
    memset(&p, 0, sizeof p);
    if (a->gpus > 0 && a->gpus != C) {
        snprintf(err, sizeof err, "--gpus %d but %d ranks were started: on the %s backend the world size is the "
                                  "number of ranks (mpirun -np %d)", a->gpus, C, a->backend, a->gpus);
        code = 2;
    } else if (cpb_args_problem(a, C, &p, err, sizeof err) != CPB_OK) {
        code = 2;
    }
    if (code) {
        if (rank == 0) fprintf(stderr, "cpbench run: %s\n", err);
        cpb_ctx_destroy(ctx);
        return code;
    }
    cpb_run_row row;
    int rc = cpb_run_measured(ctx, &p, m, a->warmup, a->iters, a->seed, &row);
    if (rank == 0) {
        if (rc != CPB_OK) fprintf(stderr, "cpbench run: %s\n", row.reason);
        else cpb_run_row_print(stdout, &row);
    }
    code = rc != CPB_OK ? 1 : exit_code(row.code);
    if (rank == 0 && rc == CPB_OK && write_out(a, argc, argv, &row, &p, a->warmup, a->iters)) code = 1;
    /* every rank leaves with rank 0's verdict (the results file is written there) */
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (inited && !fin && C > 1) MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    cpb_ctx_destroy(ctx);
    return code;
}

int cpb_cmd_run(int argc, char **argv)
{
    cpb_args a;
    char err[1024];
    cpb_args_defaults(&a);
    if (cpb_args_parse(argc - 1, argv + 1, &a, err, sizeof err) != CPB_OK) {
        fprintf(stderr, "cpbench run: %s\n", err);
        return 2;
    }
    cpb_profile_iter_select(a.profile_iter); /* the trial loop brackets that iteration */
    const cpb_method *ms[2];
    int n = cpb_args_methods(&a, ms, 2, err, sizeof err);
    if (n < 0) {
        fprintf(stderr, "cpbench run: %s\n", err);
        return 2;
    }
    if (n != 1) {
        fprintf(stderr, "cpbench run: runs one method; give --method NAME (use `cpbench sweep` for several)\n");
        return 2;
    }
    if (strcmp(a.scope, "layer") != 0 && strcmp(a.scope, "model") != 0) {
        fprintf(stderr, "cpbench run: --scope must be layer or model, got '%s'\n", a.scope);
        return 2;
    }
    if (strcmp(a.backend, "sim") == 0) return run_sim(&a, ms[0], argc, argv);
    return run_measured(&a, ms[0], argc, argv);
}
