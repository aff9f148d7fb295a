/* measured.c — a measured trial reduced over the ranks (measured.h). */
#include "measured.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fingerprint.h"
#include "flops_nemo.h"
#include "gpu_profiles.h"
#include "profile_iter.h"
#include "ranks.h"
#include "trial.h"

void cpb_ctx_gpu_name(cpb_ctx *ctx, char *out, size_t len)
{
    cpb_device_info di;
    if (ctx->be->device_info && ctx->be->device_info(ctx, &di) == CPB_OK) snprintf(out, len, "%s", di.name);
    else snprintf(out, len, "%s", ctx->be->name);
    cpb_clear_error(ctx);
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

/* one step, with --profile-iter's capture range around the selected one */
static int step(cpb_ctx *ctx, const cpb_method *m, cpb_layer *L, int it, cpb_row *r)
{
    int rc = cpb_profile_iter_begin(ctx, it);
    if (rc != CPB_OK) {
        cpb_row_set_status(r, rc, cpb_errmsg(ctx));
        return rc;
    }
    rc = cpb_trial_step(ctx, m, L, r);
    if (rc == CPB_OK && (rc = cpb_profile_iter_end(ctx, it)) != CPB_OK) cpb_row_set_status(r, rc, cpb_errmsg(ctx));
    return rc;
}

double cpb_device_peak_tflops(const char *gpu)
{
    const char *name = NULL;
    if (strstr(gpu, "H200")) name = "h200";
    else if (strstr(gpu, "H100") && (strstr(gpu, "HBM3") || strstr(gpu, "SXM"))) name = "h100-sxm";
    else if (strstr(gpu, "A100")) name = strstr(gpu, "80GB") ? "a100-80g" : "a100-40g"; /* both 312 dense */
    cpb_gpu_profile prof;
    char err[256];
    if (!name || cpb_gpu_profile_get(name, &prof, err, sizeof err) != CPB_OK) return 0;
    return prof.hw.peak_flops / 1e12;
}

int cpb_run_measured(cpb_ctx *ctx, const cpb_problem *p, const cpb_method *m, int warmup, int iters, uint64_t seed,
                     const char *gpu, cpb_row *row)
{
    cpb_row_point(row, m, p, ctx->be, gpu, "layer");
    row->peak_tflops = cpb_device_peak_tflops(row->gpu);
    row->seed = (int64_t)seed;
    if (iters < 1) iters = 1;
    if (warmup < 0) warmup = 0;
    row->warmup = warmup;
    row->iters = iters;
    double *t = calloc((size_t)(3 * iters), sizeof *t); /* step, fwd, bwd per iteration */
    cpb_row *it_row = malloc(sizeof *it_row);
    if (!t || !it_row) {
        free(t), free(it_row);
        cpb_row_set_status(row, CPB_ERR_NOMEM_HOST, "out of host memory");
        return CPB_ERR_NOMEM_HOST;
    }
    const cpb_backend *be = ctx->be;
    /* reserved / device-used of this trial (DESIGN section 3): what the backend's caches kept
     * for earlier trials of this process goes back first (a sweep without --isolate), so a
     * small trial after a large one reports its own reserved bytes */
    int rc = be->mem_trial ? be->mem_trial(ctx, CPB_MEM_TRIAL_START) : CPB_OK;
    if (rc == CPB_OK && be->mem_highwater_reset) be->mem_highwater_reset(ctx);
    cpb_layer L;
    memset(&L, 0, sizeof L);
    if (rc == CPB_OK) rc = cpb_trial_setup(ctx, m, p, NULL, seed, &L);
    if (rc != CPB_OK) {
        cpb_row_set_status(row, rc, cpb_errmsg(ctx));
        cpb_trial_memory(ctx, row);
    }
    /* the iteration with the largest peak gives the row its memory; the traffic is the last
     * measured iteration's */
    cpb_row best = *row;
    int64_t peak_max = -1;
    /* cuDNN plans are built at their first call, in the warm-up: counted apart */
    int64_t plans[3] = {0, 0, 0};
    double plan_s[3] = {0, 0, 0};
    if (be->attn_plan_stats) be->attn_plan_stats(&plans[0], &plan_s[0]);
    plans[1] = plans[0];
    plan_s[1] = plan_s[0];
    for (int it = 0; rc == CPB_OK && it < warmup + iters; it++) {
        if (it == warmup && be->attn_plan_stats) be->attn_plan_stats(&plans[1], &plan_s[1]);
        cpb_reset_stats(ctx);
        *it_row = *row;
        /* again after the warm-up: what the libraries set up at their first use (NCCL's
         * communicators and lazily connected buffers, cuBLAS) is the baseline, not the
         * method's memory (and leaves the capacity); the warm-up filled the caches, which a
         * timed step must not grow */
        if (it == warmup && warmup > 0 && be->mem_trial && (rc = be->mem_trial(ctx, CPB_MEM_TRIAL_TIMED)) != CPB_OK) {
            cpb_row_set_status(it_row, rc, cpb_errmsg(ctx));
            best = *it_row;
            break;
        }
        if (it == warmup && warmup > 0 && be->mem_highwater_reset && (rc = be->mem_highwater_reset(ctx)) != CPB_OK) {
            cpb_row_set_status(it_row, rc, cpb_errmsg(ctx));
            best = *it_row;
            break;
        }
        rc = step(ctx, m, &L, it, it_row);
        if (rc != CPB_OK) {
            best = *it_row;
            break;
        }
        if (it_row->peak_bytes > peak_max) {
            peak_max = it_row->peak_bytes;
            best = *it_row;
        }
        if (it >= warmup) {
            int k = it - warmup;
            t[k] = it_row->step_s;
            t[iters + k] = it_row->fwd_s;
            t[2 * iters + k] = it_row->bwd_s;
            row->comm_bytes = it_row->comm_bytes;
            row->pcie_bytes = it_row->pcie_bytes;
        }
    }
    double traffic[2] = {row->comm_bytes, row->pcie_bytes};
    *row = best;
    if (be->attn_plan_stats) {
        be->attn_plan_stats(&plans[2], &plan_s[2]);
        row->attn_plan_s = plan_s[1] - plan_s[0];
        if (plans[2] > plans[1]) {
            /* a plan built inside a timed step: its build time is in that step's time */
            char note[96];
            snprintf(note, sizeof note, "; %lld cuDNN plan(s) built in timed steps (%.3f s)",
                     (long long)(plans[2] - plans[1]), plan_s[2] - plan_s[1]);
            size_t n = strlen(row->attn_calls);
            snprintf(row->attn_calls + n, sizeof row->attn_calls - n, "%s", note);
        }
    }
    /* the high-waters of the steps, before the fingerprint allocates anything */
    int64_t hw[2] = {row->peak_bytes, 0}; /* no caching pool: reserved = peak */
    if (be->mem_highwater && be->mem_highwater(ctx, &hw[0], &hw[1]) != CPB_OK) hw[0] = row->peak_bytes;

    /* every rank reports the same outcome: the worst status (and the message of the lowest
     * failing rank), the slowest rank per iteration, the memory of the rank with the
     * largest peak, the busiest rank's traffic */
    char reason[sizeof row->reason];
    snprintf(reason, sizeof reason, "%s", row->reason);
    int code = cpb_agree_status(rc, reason, sizeof reason);
    /* the fingerprint of the last step's outputs, after every timed step (fingerprint.h) */
    double norms[CPB_FP_COUNT] = {NAN, NAN, NAN};
    if (code == CPB_OK) cpb_fingerprint(ctx, &L, norms);
    cpb_free_all(ctx);
    cpb_clear_error(ctx);
    int worst = 0;
    cpb_agree_maxloc((double)row->peak_bytes, &worst);
    cpb_agree_bcast(row, sizeof *row, worst);
    row->worst_rank = worst;
    cpb_agree_max_double(t, 3 * iters);
    cpb_agree_max_double(traffic, 2);
    cpb_agree_max_i64(hw, 2);
    row->comm_bytes = traffic[0];
    row->pcie_bytes = traffic[1];
    row->reserved_bytes = hw[0];
    row->device_used_bytes = hw[1];
    cpb_row_set_status(row, code, reason);
    row->y_norm = norms[CPB_FP_Y];
    row->dx_norm = norms[CPB_FP_DX];
    row->dw_norm = norms[CPB_FP_DW];
    if (code == CPB_OK) {
        row->step_s = median(t, iters);
        row->fwd_s = median(t + iters, iters);
        row->bwd_s = median(t + 2 * iters, iters);
        double f, b;
        cpb_layer_model_flops(p, &f, &b);
        cpb_row_rates(row, f + b, cpb_layer_megatron_flops(p), cpb_layer_nemo_flops(p));
    } else {
        row->step_s = row->fwd_s = row->bwd_s = 0;
        cpb_row_rates(row, 0, 0, 0);
    }
    row->nstreams = ctx->nstreams;
    memcpy(row->stream_names, ctx->stream_names, sizeof row->stream_names);
    free(t);
    free(it_row);
    return CPB_OK;
}
