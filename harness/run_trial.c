/* run_trial.c — one trial turned into a results row (run_trial.h): on the simulator from
 * cpb_sim_layer, on cpu/cuda from measured steps reduced over the ranks. */
#include "run_trial.h"
#include "profile_iter.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trial.h"
#ifdef CPB_HAVE_CUDA
#include "cuda/cpb_cuda.h"
#endif

void cpb_sim_opts_from_args(const cpb_args *a, cpb_sim_opts *o)
{
    memset(o, 0, sizeof *o);
    o->gpu = a->gpu[0] ? a->gpu : NULL;
    o->calibration = a->calibration;
    o->gpus_per_node = a->gpus_per_node;
    o->mem_cap = a->mem_cap;
    o->host_mem_cap = a->host_mem_cap;
    o->no_race_check = a->no_race_check;
}

void cpb_layer_model_flops(const cpb_problem *p, double *fwd, double *bwd)
{
    double S = (double)p->S, D = (double)p->D, H = p->H, G = p->G, d = p->d;
    double attn_f = 2.0 * S * S * H * d; /* 4*S*S*H*d over the lower triangle */
    double proj_f = 2.0 * S * D * (H + 2.0 * G) * d + 2.0 * S * H * d * D;
    *fwd = attn_f + proj_f;
    *bwd = 2.5 * attn_f + 2.0 * proj_f;
}

const char *cpb_run_status_name(int code)
{
    switch (code) {
    case CPB_OK: return "ok";
    case CPB_ERR_OOM: return "oom";
    case CPB_ERR_INVALID: return "skipped";
    default: return "error";
    }
}

static void row_init(cpb_run_row *row, const cpb_problem *p, const cpb_method *m, const char *backend,
                     const char *gpu)
{
    memset(row, 0, sizeof *row);
    snprintf(row->method, sizeof row->method, "%s", m ? m->name : "?");
    snprintf(row->model, sizeof row->model, "%s", p->model[0] ? p->model : "custom");
    snprintf(row->backend, sizeof row->backend, "%s", backend);
    snprintf(row->gpu, sizeof row->gpu, "%s", gpu);
    snprintf(row->scope, sizeof row->scope, "layer");
    row->world_size = p->C;
    row->seq_len = p->S;
    row->head_chunk = p->head_chunk;
    row->seq_chunk = p->seq_chunk;
    row->timestamp = (double)time(NULL);
}

static void row_status(cpb_run_row *row, int code, const char *reason)
{
    row->code = code;
    snprintf(row->status, sizeof row->status, "%s", cpb_run_status_name(code));
    snprintf(row->reason, sizeof row->reason, "%s", code == CPB_OK ? "" : reason);
}

static void row_memory(cpb_run_row *row, const cpb_trial_result *tr)
{
    row->peak_bytes = tr->dev.peak;
    row->reserved_bytes = tr->dev.peak; /* no caching pool on cpu and sim */
    row->intermediate_bytes = tr->dev.intermediate_peak;
    row->host_peak_bytes = tr->host.peak;
    row->capacity = tr->dev.capacity;
    memcpy(row->at_peak, tr->dev.at_peak, sizeof row->at_peak);
    memcpy(row->tag_peak, tr->dev.tag_peak, sizeof row->tag_peak);
    row->fwd_peak = tr->fwd.peak;
    row->bwd_peak = tr->bwd.peak;
}

static void row_rates(cpb_run_row *row, const cpb_problem *p)
{
    if (row->step_s <= 0) return;
    double f, b;
    cpb_layer_model_flops(p, &f, &b);
    row->tokens_per_s = (double)p->S / row->step_s;
    row->tokens_per_s_per_gpu = row->tokens_per_s / p->C;
    row->tflops_per_gpu = (f + b) / p->C / row->step_s / 1e12;
}

int cpb_run_sim(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o, cpb_run_row *row)
{
    row_init(row, p, m, "sim", o && o->gpu && o->gpu[0] ? o->gpu : "h100-sxm");
    cpb_sim_result *r = malloc(sizeof *r);
    if (!r) {
        row_status(row, CPB_ERR_NOMEM_HOST, "out of host memory");
        return CPB_ERR_NOMEM_HOST;
    }
    int rc = cpb_sim_layer(p, m, o, r);
    row_status(row, r->status, r->reason);
    if (rc != CPB_OK) {
        free(r);
        return rc;
    }
    row->worst_rank = r->worst_rank;
    row_memory(row, &r->mem);
    if (r->status == CPB_OK) {
        row->fwd_s = r->fwd_s;
        row->bwd_s = r->bwd_s;
        row->step_s = r->step_s;
        row->comm_bytes = r->comm_bytes;
        row->pcie_bytes = r->pcie_bytes;
        row->nstreams = r->nstreams;
        memcpy(row->stream_names, r->stream_names, sizeof row->stream_names);
        memcpy(row->stream_busy_s, r->stream_busy_s, sizeof row->stream_busy_s);
        row_rates(row, p);
    }
    free(r);
    return CPB_OK;
}

/* ---------------------------------------------------------------- measured (cpu/cuda) */

static int mpi_world(const cpb_ctx *ctx)
{
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    return ctx->world > 1 && inited && !finalized;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int cpb_run_measured(cpb_ctx *ctx, const cpb_problem *p, const cpb_method *m, int warmup, int iters, uint64_t seed,
                     cpb_run_row *row)
{
    row_init(row, p, m, ctx->be->name, ctx->be->name);
    if (iters < 1) iters = 1;
    if (warmup < 0) warmup = 0;
    const int multi = mpi_world(ctx);
    double *t = calloc((size_t)(3 * iters), sizeof *t); /* step, fwd, bwd per iteration */
    cpb_trial_result *tr = calloc(1, sizeof *tr);
    if (!t || !tr) {
        free(t), free(tr);
        row_status(row, CPB_ERR_NOMEM_HOST, "out of host memory");
        return CPB_ERR_NOMEM_HOST;
    }
    cpb_layer L;
    const int on_cuda = strcmp(ctx->be->name, "cuda") == 0;
#ifdef CPB_HAVE_CUDA
    if (on_cuda) cpb_cuda_mem_reset_highwater(ctx); /* reserved / device-used of this trial */
#endif
    int rc = cpb_trial_setup(ctx, m, p, NULL, seed, &L);
    char reason[1024];
    snprintf(reason, sizeof reason, "%s", rc == CPB_OK ? "" : cpb_errmsg(ctx));
    int64_t peak_max = 0;
    cpb_trial_result best = {0};
    for (int it = 0; rc == CPB_OK && it < warmup + iters; it++) {
#ifdef CPB_HAVE_CUDA
        /* after the warm-up: what NCCL and cuBLAS set up at their first use is baseline */
        if (on_cuda && it == warmup && warmup > 0) cpb_cuda_mem_reset_highwater(ctx);
#endif
        cpb_reset_stats(ctx);
        /* --profile-iter: a profiler capture range around one step */
        rc = cpb_profile_iter_begin(ctx, it);
        if (rc == CPB_OK) {
            rc = cpb_trial_step(ctx, m, &L, tr); /* sets tr->reason on failure */
            if (rc == CPB_OK && (rc = cpb_profile_iter_end(ctx, it)) != CPB_OK)
                snprintf(tr->reason, sizeof tr->reason, "%s", cpb_errmsg(ctx));
        } else {
            snprintf(tr->reason, sizeof tr->reason, "%s", cpb_errmsg(ctx));
        }
        if (rc != CPB_OK) {
            snprintf(reason, sizeof reason, "%s", tr->reason);
            break;
        }
        if (tr->dev.peak >= peak_max) {
            peak_max = tr->dev.peak;
            best = *tr;
        }
        if (it >= warmup) {
            int k = it - warmup;
            t[k] = tr->step_s;
            t[iters + k] = tr->fwd_s;
            t[2 * iters + k] = tr->bwd_s;
            row->comm_bytes = tr->comm_bytes;
            row->pcie_bytes = tr->pcie_bytes;
        }
    }
    if (rc != CPB_OK) {
        best = *tr;
        best.status = rc;
    }
    /* the CUDA pool's reserved and the driver-level used high-waters (DESIGN section 3) */
    int64_t hw[2] = {0, 0};
#ifdef CPB_HAVE_CUDA
    if (on_cuda) cpb_cuda_mem_highwater(ctx, &hw[0], &hw[1]);
#endif
    cpb_free_all(ctx);
    cpb_clear_error(ctx);
    /* every rank must report the same outcome: take the worst status, the slowest rank per
     * iteration and the largest peak */
    int code = rc;
    struct { double v; int r; } mine = {(double)best.dev.peak, ctx->rank}, worst = mine;
    if (multi) {
        MPI_Allreduce(&rc, &code, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, t, 3 * iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
        MPI_Bcast(&best, (int)sizeof best, MPI_BYTE, worst.r, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, &row->comm_bytes, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, &row->pcie_bytes, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (code != CPB_OK) {
            /* the message of the lowest rank that failed with the worst code */
            int cand = rc == code ? ctx->rank : ctx->world, who = 0;
            MPI_Allreduce(&cand, &who, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            MPI_Bcast(reason, (int)sizeof reason, MPI_CHAR, who, MPI_COMM_WORLD);
        }
    }
    if (multi && on_cuda) MPI_Allreduce(MPI_IN_PLACE, hw, 2, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    row->worst_rank = worst.r;
    row_status(row, code, reason);
    row_memory(row, &best);
    if (on_cuda) {
        row->reserved_bytes = hw[0];
        row->device_used_bytes = hw[1];
    }
    if (code == CPB_OK) {
        row->iters = iters;
        row->step_s = median(t, iters);
        row->fwd_s = median(t + iters, iters);
        row->bwd_s = median(t + 2 * iters, iters);
        row_rates(row, p);
    }
    row->nstreams = ctx->nstreams;
    memcpy(row->stream_names, ctx->stream_names, sizeof row->stream_names);
    free(t);
    free(tr);
    return CPB_OK;
}

/* ---------------------------------------------------------------- printing */

static double gib(int64_t b)
{
    return (double)b / 1073741824.0;
}

/* bytes in the largest binary unit that keeps the number >= 1 (tiny test problems too) */
static const char *human(double b, char *buf, size_t n)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && (b >= 1024.0 || b <= -1024.0)) {
        b /= 1024.0;
        u++;
    }
    snprintf(buf, n, u ? "%10.3f %-3s" : "%10.0f %-3s", b, unit[u]);
    return buf;
}

void cpb_run_row_print(FILE *f, const cpb_run_row *row)
{
    char b1[32], b2[32];
    fprintf(f, "%s on %s: %s, S = %lld, %d %s%s (backend %s, %s)\n", row->method, row->model, row->scope,
            (long long)row->seq_len, row->world_size, strcmp(row->backend, "sim") == 0 ? "simulated " : "",
            row->world_size == 1 ? "rank" : "ranks", row->backend, row->gpu);
    fprintf(f, "status: %s%s%s\n", row->status, row->reason[0] ? " — " : "", row->reason);
    if (row->code != CPB_OK && row->code != CPB_ERR_OOM) return;
    fprintf(f, "memory (rank %d%s):\n", row->worst_rank, row->code == CPB_ERR_OOM ? ", up to the failed allocation" : "");
    fprintf(f, "  peak          %s", human((double)row->peak_bytes, b1, sizeof b1));
    if (row->capacity > 0) fprintf(f, "  (%.1f%% of %.3f GiB)", 100.0 * row->peak_bytes / row->capacity, gib(row->capacity));
    fprintf(f, "\n  forward peak  %s\n", human((double)row->fwd_peak, b1, sizeof b1));
    fprintf(f, "  backward peak %s\n", human((double)row->bwd_peak, b1, sizeof b1));
    fprintf(f, "  intermediate  %s\n", human((double)row->intermediate_bytes, b1, sizeof b1));
    fprintf(f, "  host (pinned) %s\n", human((double)row->host_peak_bytes, b1, sizeof b1));
    fprintf(f, "  by tag at the peak (tag high-water in brackets):\n");
    for (int t = 0; t < CPB_TAG_COUNT; t++)
        if (row->at_peak[t] || row->tag_peak[t])
            fprintf(f, "    %-10s %s  [%s]%s\n", cpb_tag_name(t), human((double)row->at_peak[t], b1, sizeof b1),
                    human((double)row->tag_peak[t], b2, sizeof b2), cpb_tag_is_fixed(t) ? "" : "  intermediate");
    if (row->code != CPB_OK) return;
    int sim = strcmp(row->backend, "sim") == 0;
    fprintf(f, "time (%s):\n", sim ? "predicted by the timing model" : "measured, median of the slowest rank");
    fprintf(f, "  forward       %10.3f ms\n  backward      %10.3f ms\n  step          %10.3f ms\n", 1e3 * row->fwd_s,
            1e3 * row->bwd_s, 1e3 * row->step_s);
    fprintf(f, "  tokens/s/GPU  %10.2f\n  TFLOP/s/GPU   %10.3f\n", row->tokens_per_s_per_gpu, row->tflops_per_gpu);
    if (sim) {
        fprintf(f, "  busy per stream (slowest rank):\n");
        for (int s = 0; s < row->nstreams; s++)
            fprintf(f, "    %-12s %10.3f ms\n", row->stream_names[s], 1e3 * row->stream_busy_s[s]);
    }
    fprintf(f, "  bytes sent    %s per rank (busiest)\n", human(row->comm_bytes, b1, sizeof b1));
    fprintf(f, "  PCIe copies   %s per rank\n", human(row->pcie_bytes, b1, sizeof b1));
}
