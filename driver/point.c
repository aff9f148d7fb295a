/* point.c — the point runner (point.h). */
#include "point.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_choice.h"
#include "gpu_profiles.h"
#include "measured.h"
#include "provenance.h"
#include "ranks.h"
#include "sweep_isolate.h"

int cpb_runner_open(cpb_runner *r, const cpb_runner_opts *o, char *err, size_t err_len)
{
    memset(r, 0, sizeof *r);
    r->o = *o;
    const cpb_backend *be = o->be;
    if (be->models_time) {
        cpb_gpu_profile prof;
        if (cpb_gpu_profile_get(o->sim.gpu, &prof, err, err_len) != CPB_OK) return CPB_ERR_INVALID;
        snprintf(r->gpu, sizeof r->gpu, "%s", prof.name);
        r->C = o->gpus > 0 ? o->gpus : 8;
        return CPB_OK;
    }
    if (o->isolate) { /* children run under mpirun -np C */
        if (o->gpus <= 0) {
            snprintf(err, err_len, "--isolate on the %s backend starts `mpirun -np C cpbench run` per trial: give "
                     "--gpus C (and run the sweep itself without mpirun)", be->name);
            return CPB_ERR_INVALID;
        }
        r->C = o->gpus;
        return CPB_OK;
    }
    r->C = cpb_ranks_size();
    r->rank = cpb_ranks_rank();
    if (o->gpus > 0 && o->gpus != r->C) {
        snprintf(err, err_len, "--gpus %d but %d ranks were started: on the %s backend the world size is the number "
                 "of ranks (mpirun -np %d)", o->gpus, r->C, be->name, o->gpus);
        return CPB_ERR_INVALID;
    }
    cpb_ctx_opts co = o->ctx;
    co.use_mpi = cpb_ranks_mpi();
    int rc = cpb_ctx_create(be, &co, &r->ctx, err, err_len);
    rc = cpb_agree_status(rc, err, err_len);
    if (rc != CPB_OK) {
        cpb_ctx_destroy(r->ctx);
        r->ctx = NULL;
        return rc == CPB_ERR_INVALID ? CPB_ERR_INVALID : rc;
    }
    cpb_ctx_gpu_name(r->ctx, r->gpu, sizeof r->gpu);
    return CPB_OK;
}

void cpb_runner_close(cpb_runner *r)
{
    if (r->ctx) cpb_ctx_destroy(r->ctx);
    r->ctx = NULL;
}

void cpb_runner_point_row(const cpb_runner *r, const cpb_method *m, const cpb_problem *p, const char *scope,
                          cpb_row *row)
{
    cpb_row_point(row, m, p, r->o.be, r->gpu, scope);
    CPB_ROW_SET(row, options, r->o.options);
    if (!r->o.be->models_time) {
        row->seed = (int64_t)r->o.seed;
        row->warmup = r->o.warmup;
        row->iters = r->o.iters;
    }
}

/* the whole-model estimate as the point's row */
static int run_model(cpb_runner *r, const cpb_method *m, const cpb_problem *p, cpb_row *row,
                     cpb_model_estimate **estimate)
{
    cpb_model_estimate *e = NULL;
    char err[1024] = "";
    int rc = cpb_model_estimate_new(p, m, &r->o.sim, &e, err, sizeof err);
    if (rc != CPB_OK) {
        cpb_runner_point_row(r, m, p, "model", row);
        cpb_row_set_status(row, rc, err);
        /* a preset without a whole-model description: bad input (a sweep records the row) */
        return rc;
    }
    cpb_model_estimate_row(e, row);
    if (estimate) *estimate = e;
    else cpb_model_estimate_free(e);
    return CPB_OK;
}

int cpb_run_point(cpb_runner *r, const cpb_method *m, const cpb_problem *p, const char *scope, cpb_row *row,
                  cpb_model_estimate **estimate)
{
    if (estimate) *estimate = NULL;
    const int model = scope && strcmp(scope, "model") == 0;
    cpb_runner_point_row(r, m, p, scope, row);
    char why[1100];
    if (cpb_method_refusal(m, p, why, sizeof why) != CPB_OK || /* refused shape: nothing to run */
        cpb_attn_backend_refusal(p, r->o.be, why, sizeof why) != CPB_OK) { /* --attn fa2|fa3 off the sim */
        cpb_row_set_status(row, CPB_ERR_REFUSED, why);
        cpb_provenance_utc_now(row->timestamp, sizeof row->timestamp);
        return CPB_OK;
    }
    int rc = CPB_OK;
    if (r->o.isolate) {
        char err[1024];
        cpb_row tmpl = *row;
        rc = cpb_isolate_trial(r->o.exe, r->o.nopts, r->o.opts, m->name, p->S, r->o.be->models_time ? 0 : r->C,
                               &tmpl, row, err, sizeof err);
        if (rc != CPB_OK) cpb_row_set_status(row, CPB_ERR_BACKEND, err);
        return CPB_OK;
    }
    if (model && !r->o.be->models_time) {
        cpb_row_set_status(row, CPB_ERR_INVALID, "--scope model is an estimate of the simulator: use --backend sim");
        return CPB_ERR_INVALID;
    }
    if (model) {
        rc = run_model(r, m, p, row, estimate);
    } else if (r->o.be->models_time) {
        rc = cpb_sim_layer(p, m, &r->o.sim, row);
    } else {
        rc = cpb_run_measured(r->ctx, p, m, r->o.warmup, r->o.iters, r->o.seed, r->gpu, row);
    }
    /* the runners name the point by its columns; the options that change its result are
     * the runner's (the same for every point) */
    CPB_ROW_SET(row, options, r->o.options);
    /* the time the trial finished */
    cpb_provenance_utc_now(row->timestamp, sizeof row->timestamp);
    return rc;
}
