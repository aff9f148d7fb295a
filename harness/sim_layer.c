/* sim_layer.c — cpb_sim_layer (cpb_sim.h): run one layer trial of method m for every rank
 * of a simulated world in this process, check the symmetric-allocation rule (DESIGN
 * section 3), report the largest peak, and predict the times with the timing model. */
#include <stdio.h>
#include <string.h>

#include "cpb_sim.h"
#include "gpu_profiles.h"
#include "run_trial.h"
#include "sim/sim_world.h"
#include "sim/timeline.h"

int cpb_sim_profile(const cpb_sim_opts *o, cpb_gpu_profile *prof, char *n_err, size_t n)
{
    char *err = n_err;
    CPB_TRY(cpb_gpu_profile_get(o->gpu, prof, err, n));
    if (o->calibration && o->calibration[0]) CPB_TRY(cpb_gpu_profile_calibrate(prof, o->calibration, err, n));
    if (o->gpus_per_node < 0) {
        snprintf(err, n, "gpus per node must be positive, got %d", o->gpus_per_node);
        return CPB_ERR_INVALID;
    }
    if (o->host_ram < 0) {
        snprintf(err, n, "--host-ram must be positive, got %lld bytes", (long long)o->host_ram);
        return CPB_ERR_INVALID;
    }
    if (o->gpus_per_node > 0) prof->hw.gpus_per_node = o->gpus_per_node;
    if (o->host_ram > 0) prof->host_node_bytes = o->host_ram;
    return CPB_OK;
}

/* one rank's trial on its own sim context; the trace goes to the shared world */
static int run_rank(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o, cpb_sim_world *w,
                    int rank, int64_t cap, int64_t host_cap, cpb_trial_result *tr)
{
    memset(tr, 0, sizeof *tr);
    cpb_ctx_opts co = {0};
    co.backend = "sim";
    co.sim_rank = rank;
    co.sim_world = p->C;
    co.capacity = cap;
    co.host_capacity = host_cap;
    co.race_check = !o->no_race_check;
    co.backend_shared = w;
    cpb_ctx *ctx = NULL;
    int rc = cpb_ctx_create(&co, &ctx, tr->reason, sizeof tr->reason);
    if (rc != CPB_OK) {
        tr->status = rc;
        return rc;
    }
    cpb_layer L;
    /* seed: the inputs' values do not matter without data; 1 as the CLI's default */
    rc = cpb_trial_setup(ctx, m, p, NULL, 1, &L);
    if (rc == CPB_OK) {
        cpb_reset_stats(ctx);
        rc = cpb_trial_step(ctx, m, &L, tr);
    } else {
        tr->status = rc;
        tr->dev = *cpb_device_mem(ctx);
        tr->host = *cpb_host_mem(ctx);
        snprintf(tr->reason, sizeof tr->reason, "%s", cpb_errmsg(ctx));
    }
    cpb_ctx_destroy(ctx);
    return rc;
}

static void fill_times(cpb_sim_result *r, const cpb_problem *p, const cpb_sim_timing *t)
{
    r->fwd_s = t->fwd_s;
    r->bwd_s = t->bwd_s;
    r->step_s = t->step_s;
    r->nstreams = t->nstreams;
    memcpy(r->stream_names, t->stream_names, sizeof r->stream_names);
    memcpy(r->stream_busy_s, t->busy_s, sizeof r->stream_busy_s);
    r->comm_bytes = t->comm_bytes;
    r->pcie_bytes = t->pcie_bytes;
    if (t->step_s > 0) {
        double fwd, bwd;
        cpb_layer_model_flops(p, &fwd, &bwd);
        r->tokens_per_s = (double)p->S / t->step_s;
        r->tokens_per_s_per_gpu = r->tokens_per_s / p->C;
        r->tflops_per_gpu = (fwd + bwd) / p->C / t->step_s / 1e12;
    }
}

int cpb_sim_layer(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o, cpb_sim_result *r)
{
    memset(r, 0, sizeof *r);
    cpb_sim_opts defaults = {0};
    if (!o) o = &defaults;
    cpb_gpu_profile prof;
    int rc = cpb_sim_profile(o, &prof, r->reason, sizeof r->reason);
    if (rc == CPB_OK && (!p || !m || p->C <= 0)) {
        snprintf(r->reason, sizeof r->reason, "simulator: a problem with C >= 1 ranks and a method are required");
        rc = CPB_ERR_INVALID;
    }
    if (rc != CPB_OK) {
        r->status = rc;
        return rc;
    }
    /* a method's refusal is a result, not bad input */
    char why[1024] = "";
    if (m->check && m->check(p, why, sizeof why) != CPB_OK) {
        r->status = CPB_ERR_INVALID;
        snprintf(r->reason, sizeof r->reason, "%s refuses this shape: %s", m->name, why[0] ? why : "(no reason given)");
        return CPB_OK;
    }
    cpb_sim_world *w = NULL;
    if (cpb_sim_world_create(p->C, &w) != CPB_OK) {
        r->status = CPB_ERR_NOMEM_HOST;
        snprintf(r->reason, sizeof r->reason, "simulator: out of host memory for a world of %d ranks", p->C);
        return CPB_OK;
    }
    int64_t cap = o->mem_cap > 0 ? o->mem_cap : cpb_gpu_profile_usable(&prof);
    int64_t host_cap = o->host_mem_cap > 0 ? o->host_mem_cap : cpb_gpu_profile_host_per_gpu(&prof);
    int64_t first_n = 0;
    uint64_t first_hash = 0;
    for (int k = 0; k < p->C; k++) {
        cpb_trial_result tr;
        int trc = run_rank(p, m, o, w, k, cap, host_cap, &tr);
        if (k == 0 || tr.dev.peak > r->mem.dev.peak) {
            r->worst_rank = k;
            r->mem = tr;
        }
        if (trc != CPB_OK) {
            /* every rank makes the same allocations (DESIGN section 3): the first failure,
             * an OOM included, is the trial's result */
            r->worst_rank = k;
            r->mem = tr;
            r->status = trc;
            snprintf(r->reason, sizeof r->reason, "rank %d: %s", k, tr.reason);
            cpb_sim_world_destroy(w);
            return CPB_OK;
        }
        if (k == 0) {
            first_n = tr.dev.n_allocs;
            first_hash = tr.alloc_hash;
        } else if (tr.dev.n_allocs != first_n || tr.alloc_hash != first_hash) {
            r->status = CPB_ERR_INVALID;
            snprintf(r->reason, sizeof r->reason,
                     "%s breaks the symmetric-allocation rule (DESIGN section 3): rank 0 makes %lld device "
                     "allocations (sequence hash %016llx), rank %d makes %lld (hash %016llx); every rank must "
                     "allocate the same sizes with the same tags in the same order",
                     m->name, (long long)first_n, (unsigned long long)first_hash, k, (long long)tr.dev.n_allocs,
                     (unsigned long long)tr.alloc_hash);
            cpb_sim_world_destroy(w);
            return CPB_OK;
        }
    }
    cpb_sim_timing t;
    char err[1024] = "";
    int trc = cpb_sim_timeline(w, &prof.hw, &t, err, sizeof err);
    cpb_sim_world_destroy(w);
    if (trc != CPB_OK) {
        r->status = trc;
        snprintf(r->reason, sizeof r->reason, "%s: %s", m->name, err);
        return CPB_OK;
    }
    fill_times(r, p, &t);
    r->status = CPB_OK;
    return CPB_OK;
}
