/* sim_layer.c — cpb_sim_layer (sim_layer.h): run one layer trial of method m for every rank
 * of a simulated world in this process, check the symmetric-allocation rule (DESIGN
 * section 3), report the largest peak, and predict the times with the timing model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fingerprint.h"
#include "gpu_profiles.h"
#include "host_memory.h"
#include "registry.h"
#include "sim/sim_world.h"
#include "sim/timeline.h"
#include "sim_layer.h"

const cpb_knob cpb_sim_knobs[] = {
    {.name = "host_ram_bytes", .type = CPB_KNOB_BYTES, .def = "0", .arg = "BYTES",
     .help = "host memory of a node (2T; default: the profile's)", .option = "--host-ram",
     .points = CPB_KNOB_TIMING_MODEL_POINTS},
    {NULL}};

int cpb_sim_profile(const cpb_sim_opts *o, const cpb_problem *p, cpb_gpu_profile *prof, char *err, size_t n)
{
    CPB_TRY(cpb_gpu_profile_get(o->gpu, prof, err, n));
    if (o->calibration && o->calibration[0]) CPB_TRY(cpb_gpu_profile_calibrate(prof, o->calibration, err, n));
    if (o->gpus_per_node < 0) {
        snprintf(err, n, "gpus per node must be positive, got %d", o->gpus_per_node);
        return CPB_ERR_INVALID;
    }
    const int64_t host_ram = p ? cpb_knob_int(p, "host_ram_bytes") : 0;
    if (host_ram < 0) {
        snprintf(err, n, "--host-ram must be positive, got %lld bytes", (long long)host_ram);
        return CPB_ERR_INVALID;
    }
    if (o->gpus_per_node > 0) prof->hw.gpus_per_node = o->gpus_per_node;
    if (host_ram > 0) prof->host_node_bytes = host_ram;
    return CPB_OK;
}

/* one rank's trial on its own sim context; the trace goes to the shared world */
static int run_rank(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o, cpb_sim_world *w,
                    int rank, int64_t cap, int64_t host_cap, cpb_row *r)
{
    cpb_ctx_opts co = {0};
    co.sim_rank = rank;
    co.sim_world = p->C;
    co.capacity = cap;
    co.host_capacity = host_cap;
    co.race_check = !o->no_race_check;
    co.backend_shared = w;
    cpb_ctx *ctx = NULL;
    char err[1024] = "";
    int rc = cpb_ctx_create(&cpb_backend_sim, &co, &ctx, err, sizeof err);
    if (rc != CPB_OK) {
        cpb_row_set_status(r, rc, err);
        return rc;
    }
    cpb_layer L;
    /* seed: the inputs' values do not matter without data; 1 as the CLI's default */
    rc = cpb_trial_setup(ctx, m, p, NULL, 1, &L);
    if (rc == CPB_OK) {
        cpb_reset_stats(ctx);
        rc = cpb_trial_step(ctx, m, &L, r);
        /* the fingerprint is accounted as on every backend (in the set-up phase, untimed);
         * without data its norms are 0 */
        double norms[CPB_FP_COUNT] = {NAN, NAN, NAN};
        if (rc == CPB_OK) cpb_fingerprint(ctx, &L, norms);
        cpb_clear_error(ctx);
        r->y_norm = norms[CPB_FP_Y];
        r->dx_norm = norms[CPB_FP_DX];
        r->dw_norm = norms[CPB_FP_DW];
    } else {
        cpb_row_set_status(r, rc, cpb_errmsg(ctx));
        cpb_trial_memory(ctx, r);
    }
    cpb_ctx_destroy(ctx);
    return rc;
}

static void fill_times(cpb_row *r, const cpb_problem *p, const cpb_sim_timing *t)
{
    r->fwd_s = t->fwd_s;
    r->bwd_s = t->bwd_s;
    r->step_s = t->step_s;
    r->nstreams = t->nstreams;
    memcpy(r->stream_names, t->stream_names, sizeof r->stream_names);
    memcpy(r->stream_busy_s, t->busy_s, sizeof r->stream_busy_s);
    r->comm_bytes = t->comm_bytes;
    r->pcie_bytes = t->pcie_bytes;
    double fwd, bwd;
    cpb_layer_model_flops(p, &fwd, &bwd);
    cpb_row_rates(r, fwd + bwd);
}

/* The simulator keeps every rank's trace, so its memory grows with the world (about as C^2
 * for a ring): after `done` of C ranks, 1 (with the message) when the rest would not fit
 * the memory this machine had available at the start. */
static int too_big_for_host(int C, int done, int64_t rss0, int64_t avail0, char *err, size_t len)
{
    if (rss0 < 0 || avail0 < 0 || done >= C) return 0;
    const int64_t used = cpb_host_rss_bytes() - rss0;
    if (used <= 0) return 0;
    const double need = (double)used / done * C;
    if (need <= 0.9 * (double)avail0) return 0;
    snprintf(err, len, "simulator: a world of %d ranks would need about %.1f GiB of host memory here (%.1f MiB per rank "
             "after %d ranks), more than the %.1f GiB available: simulate fewer ranks (--gpus)", C, need / 1073741824.0,
             (double)used / done / 1048576.0, done, (double)avail0 / 1073741824.0);
    return 1;
}

/* rank k's outcome as the row's (rk started as a copy of row: the point's columns agree) */
static void take_rank(cpb_row *row, const cpb_row *rk, int k)
{
    *row = *rk;
    row->worst_rank = k;
}

int cpb_sim_layer(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o, cpb_row *row)
{
    cpb_sim_opts defaults = {0};
    if (!o) o = &defaults;
    cpb_gpu_profile prof;
    char err[1024] = "";
    int rc = cpb_sim_profile(o, p, &prof, err, sizeof err);
    if (rc == CPB_OK && (!p || !m || p->C <= 0)) {
        snprintf(err, sizeof err, "simulator: a problem with C >= 1 ranks and a method are required");
        rc = CPB_ERR_INVALID;
    }
    if (!p) {
        cpb_row_init(row);
        cpb_row_set_status(row, rc, err);
        return rc;
    }
    cpb_row_point(row, m, p, &cpb_backend_sim, rc == CPB_OK ? prof.name : (o->gpu ? o->gpu : ""), "layer");
    if (rc != CPB_OK) {
        cpb_row_set_status(row, rc, err);
        return rc;
    }
    /* a method's refusal is a result, not bad input */
    if (cpb_method_refusal(m, p, err, sizeof err) != CPB_OK) {
        cpb_row_set_status(row, CPB_ERR_REFUSED, err);
        return CPB_OK;
    }
    cpb_sim_world *w = NULL;
    if (cpb_sim_world_create(p->C, &w) != CPB_OK) {
        snprintf(err, sizeof err, "simulator: out of host memory for a world of %d ranks", p->C);
        cpb_row_set_status(row, CPB_ERR_NOMEM_HOST, err);
        return CPB_OK;
    }
    int64_t cap = o->mem_cap > 0 ? o->mem_cap : cpb_gpu_profile_usable(&prof);
    int64_t host_cap = o->host_mem_cap > 0 ? o->host_mem_cap : cpb_gpu_profile_host_per_gpu(&prof);
    cpb_row *rk = malloc(sizeof *rk);
    if (!rk) {
        cpb_sim_world_destroy(w);
        cpb_row_set_status(row, CPB_ERR_NOMEM_HOST, "simulator: out of host memory");
        return CPB_OK;
    }
    int64_t first_n = 0;
    uint64_t first_hash = 0;
    const int64_t rss0 = cpb_host_rss_bytes(), avail0 = cpb_host_available_bytes();
    for (int k = 0; k < p->C; k++) {
        *rk = *row;
        int trc = run_rank(p, m, o, w, k, cap, host_cap, rk);
        if (trc == CPB_OK && too_big_for_host(p->C, k + 1, rss0, avail0, err, sizeof err)) {
            cpb_row_set_status(row, CPB_ERR_NOMEM_HOST, err);
            break;
        }
        if (trc != CPB_OK) {
            /* every rank makes the same allocations (DESIGN section 3): the first failure,
             * an OOM included, is the trial's result */
            take_rank(row, rk, k);
            snprintf(err, sizeof err, "rank %d: %s", k, rk->reason);
            cpb_row_set_status(row, trc, err);
            break;
        }
        if (k == 0 || rk->peak_bytes > row->peak_bytes) take_rank(row, rk, k);
        if (k == 0) {
            first_n = rk->n_allocs;
            first_hash = rk->alloc_hash;
        } else if (rk->n_allocs != first_n || rk->alloc_hash != first_hash) {
            snprintf(err, sizeof err,
                     "%s breaks the symmetric-allocation rule (DESIGN section 3): rank 0 makes %lld device "
                     "allocations (sequence hash %016llx), rank %d makes %lld (hash %016llx); every rank must "
                     "allocate the same sizes with the same tags in the same order",
                     m->name, (long long)first_n, (unsigned long long)first_hash, k, (long long)rk->n_allocs,
                     (unsigned long long)rk->alloc_hash);
            cpb_row_set_status(row, CPB_ERR_INVALID, err);
            break;
        }
    }
    free(rk);
    if (row->code == CPB_OK) {
        cpb_sim_timing t;
        int trc = cpb_sim_timeline(w, &prof.hw, &t, err, sizeof err);
        if (trc != CPB_OK) {
            char msg[1100];
            snprintf(msg, sizeof msg, "%s: %s", m->name, err);
            cpb_row_set_status(row, trc, msg);
        } else {
            fill_times(row, p, &t);
        }
    }
    cpb_sim_world_destroy(w);
    return CPB_OK;
}
