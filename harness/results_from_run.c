/* results_from_run.c — see results_from_run.h. */
#include "results_from_run.h"

#include <string.h>
#include <time.h>

void cpb_results_point(const cpb_problem *p, const char *method, const char *backend,
                       const char *gpu, const char *scope, cpb_results_row *o)
{
    cpb_results_row_init(o);
    CPB_RESULTS_SET(o, method, method);
    CPB_RESULTS_SET(o, model, p->model);
    CPB_RESULTS_SET(o, backend, backend);
    CPB_RESULTS_SET(o, gpu, gpu);
    CPB_RESULTS_SET(o, scope, scope && *scope ? scope : "layer");
    CPB_RESULTS_SET(o, dtype, cpb_dtype_name(p->dtype));
    o->world_size = p->C;
    o->seq_len = p->S;
    o->hidden = p->D;
    o->heads = p->H;
    o->kv_heads = p->G;
    o->head_dim = p->d;
    o->head_chunk = p->head_chunk;
    o->seq_chunk = p->seq_chunk;
    o->offload_group = p->offload_group;
    o->ulysses_degree = p->ulysses_degree;
    CPB_RESULTS_SET(o, fpdt_impl, cpb_fpdt_impl_name(p->fpdt_impl));
}

void cpb_results_sim_point(const char *scope, const char *framework, int64_t host_ram, cpb_results_row *o)
{
    int model = scope && strcmp(scope, "model") == 0;
    CPB_RESULTS_SET(o, framework, model ? (framework && *framework ? framework : CPB_FRAMEWORK_DEFAULT) : "");
    o->host_ram_bytes = host_ram;
}

void cpb_results_from_run(const cpb_run_row *in, const cpb_problem *p, int warmup, int iters,
                          cpb_results_row *o)
{
    /* shape and options as asked (0 = the method's default), so that a sweep finds the
     * point again in the file whatever default the method resolves it to */
    cpb_results_point(p, in->method, in->backend, in->gpu, in->scope, o);
    CPB_RESULTS_SET(o, status, in->status);
    CPB_RESULTS_SET(o, reason, in->reason);
    o->warmup = warmup;
    o->iters = iters;
    o->capacity_bytes = in->capacity;
    o->peak_bytes = in->peak_bytes;
    o->reserved_bytes = in->reserved_bytes;
    o->device_used_bytes = in->device_used_bytes;
    o->intermediate_bytes = in->intermediate_bytes;
    o->host_peak_bytes = in->host_peak_bytes;
    o->model_state_bytes = in->model_state_bytes;
    o->attn_act_bytes = in->attn_act_bytes;
    o->other_bytes = in->other_bytes;
    if (strcmp(in->backend, "sim") == 0) cpb_results_sim_point(in->scope, in->framework, in->host_ram, o);
    o->fwd_peak_bytes = in->fwd_peak;
    o->bwd_peak_bytes = in->bwd_peak;
    memcpy(o->at_peak_bytes, in->at_peak, sizeof o->at_peak_bytes);
    o->step_s = in->step_s;
    o->fwd_s = in->fwd_s;
    o->bwd_s = in->bwd_s;
    o->tokens_per_s = in->tokens_per_s;
    o->tokens_per_s_per_gpu = in->tokens_per_s_per_gpu;
    o->tflops_per_gpu = in->tflops_per_gpu;
    o->comm_bytes = in->comm_bytes;
    o->pcie_bytes = in->pcie_bytes;
    if (in->timestamp > 0) { /* the time the trial finished, as ISO 8601 */
        time_t t = (time_t)in->timestamp;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(o->timestamp, sizeof o->timestamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
}
