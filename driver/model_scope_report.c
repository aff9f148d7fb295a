/* model_scope_report.c — the whole-model estimate as text, as a results row, and the
 * search for the largest context that fits. */
#include <stdlib.h>
#include <string.h>

#include "model_scope.h"
#include "registry.h"
#include "sweep.h"
#include "tp_compose.h"
#include "model_scope_tp_mlp.h"
#include "trial.h"

static double gib(int64_t b)
{
    return (double)b / 1073741824.0;
}

/* seconds with four significant digits and no exponent (as harness/progress.c's
 * cpb_format_seconds): "4109", "68.48", "0.1234", "0.0001235"; eight calls per line */
static const char *sec(double s)
{
    static char buf[8][32];
    static int k;
    char *b = buf[k++ & 7];
    double a = s < 0 ? -s : s;
    int dec = a >= 1000 ? 0 : a >= 100 ? 1 : a >= 10 ? 2 : a >= 1 ? 3 : a >= 0.1 ? 4 : a >= 0.01 ? 5 : a >= 0.001 ? 6 : 7;
    snprintf(b, sizeof buf[0], "%.*f", a == 0 ? 0 : dec, s);
    return b;
}

void cpb_model_estimate_print(FILE *f, const cpb_model_estimate *e)
{
    const cpb_problem *p = &e->p;
    const int gpus = p->C * e->setup.dp * e->pp.pp;
    fprintf(f, "%s on %s, scope model (whole model: %d layers, %.2fB parameters), S = %lld, %d simulated %s (%s)",
            e->m->name, p->model, e->spec->layers, e->params / 1e9, (long long)p->S, gpus, gpus == 1 ? "GPU" : "GPUs",
            e->gpu);
    if (e->setup.dp > 1) fprintf(f, ": %d replicas of a context-parallel group of %d", e->setup.dp, p->C);
    if (e->pp.pp > 1) fprintf(f, "%s%d pipeline stages", e->setup.dp > 1 ? ", in each of " : ": ", e->pp.pp);
    fprintf(f, "\n");
    if (e->setup.lora_rank > 0) {
        cpb_model_param_count c;
        cpb_model_params(p, e->spec, &c);
        fprintf(f, "LoRA rank %d: %.2fM trainable adapter parameters (%.3f%% of the model) on q, k, v, o and the %d MLP "
                   "matrices of every layer; the base frozen\n", e->setup.lora_rank, c.lora_total / 1e6,
                100 * c.lora_total / e->params, cpb_model_mlp_matrices(e->spec));
    }
    char desc[256];
    cpb_model_spec_describe(e->spec, desc, sizeof desc);
    fprintf(f, "model: %s\n", desc);
    fprintf(f, "framework: %s — %s\n", e->fw->name, e->fw->summary);
    if (cpb_tp_degree(p) > 1) /* the composition is traced for attention only (tp_compose.h) */
        fprintf(f, "tensor parallelism: --tp %d x %d CP ranks around the attention layer (traced); the rest of the model "
                "as without TP, but for the states and the per-step gradient reduction and parameter all-gather (1/tp of each "
                "weight matrix per GPU) and the MLP's own TP all-gathers and reduce-scatters (exposed); ZeRO-3's per-layer "
                "parameter traffic is not divided by tp [EST] "
                "(docs/methods.md, \"--tp\")\n",
                cpb_tp_degree(p), p->C / cpb_tp_degree(p));
    cpb_setup_print_assumptions(f, &e->setup, "");
    cpb_pp_print(f, e);
    fprintf(f, "status: %s%s%s\n", e->status == CPB_OK ? "ok" : e->status == CPB_ERR_OOM ? "oom" :
            e->status == CPB_ERR_NOMEM_HOST ? "host-oom" : cpb_status_name(e->status),
            e->reason[0] ? " — " : "", e->reason);
    if (e->attn.code != CPB_OK) return;
    fprintf(f, "attention: forward %s, backward %s (the attention layer's calls: %s)\n", e->attn.attn_fwd_impl,
            e->attn.attn_bwd_impl, e->attn.attn_calls);
    if (e->attn.estimates[0]) fprintf(f, "estimates: %s (taken from estimates, not measurements)\n", e->attn.estimates);
    if (e->status == CPB_ERR_OOM) {
        char fx[512];
        cpb_setup_fixes(&e->setup, fx, sizeof fx);
        if (fx[0]) fprintf(f, "  the usual fixes this setup does not have yet: %s\n", fx);
    }
    fprintf(f, "memory per GPU (GiB) at each candidate peak; device %.2f (the fixed memory is in the peak, not "
               "subtracted):\n", gib(e->capacity));
    fprintf(f, "  %-20s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "moment", "states", "gathered", "rs buf",
            "attn W", "attn act", "ckpt", "residual", "mlp/loss", "fixed", "total");
    for (int k = 0; k < CPB_MOMENT_COUNT; k++) {
        const cpb_model_mem *m = &e->moment[k];
        fprintf(f, "  %-20s %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f%s\n", cpb_model_moment_name(k),
                gib(m->states), gib(m->gathered), gib(m->comm), gib(m->attn_fixed), gib(m->attn_act), gib(m->ckpt),
                gib(m->residual), gib(m->work), gib(m->fixed), gib(m->total), k == e->peak_moment ? "  <- peak" : "");
    }
    cpb_model_buckets b = cpb_model_mem_buckets(&e->moment[e->peak_moment]);
    fprintf(f, "peak in four buckets: model states %.2f GiB, attention activations %.2f GiB, other %.2f GiB, "
               "fixed per GPU %.2f GiB\n", gib(b.model), gib(b.attn_act), gib(b.other), gib(b.fixed));
    /* the caching allocator's reserve: what max_memory_reserved and nvidia-smi would read,
     * beside the peak, never a limit on fit */
    const cpb_loss_reserve *lr = &e->loss_reserve;
    char how[160];
    if (lr->code == CPB_LOSS_CODE_NONE)
        snprintf(how, sizeof how, "not modelled for this setup's loss");
    else if (lr->oom)
        snprintf(how, sizeof how, "none: the loss's requests do not fit the room its moment leaves");
    else
        snprintf(how, sizeof how, "%.2f GiB at the loss, replayed: %s%s", gib(lr->reserve),
                 cpb_loss_code_name(lr->code), lr->releases ? "; cached segments released for room" : "");
    fprintf(f, "reserved (what max_memory_reserved would read; not a limit on fit): %.2f GiB at the %s; nvidia-smi "
               "%.2f GiB; the caching allocator's reserve %s; other moments' reserve not modelled\n",
            gib(e->peak_reserved), cpb_model_moment_name(e->reserved_moment), gib(e->peak_device), how);
    char fx[512];
    cpb_fixed_mem_describe(&e->fixed, fx, sizeof fx);
    fprintf(f, "fixed per GPU: %s\n", fx);
    fprintf(f, "host per GPU: %.2f GiB of %.2f GiB (checkpoint copies %s", gib(e->host_bytes), gib(e->host_capacity),
            e->ckpt_pageable ? "pageable" : "pinned");
    if (e->host_states > 0) fprintf(f, "; offloaded model states %.2f GiB", gib(e->host_states));
    fprintf(f, ")\n");
    /* a model that does not fit has no step: no step time or throughput (the rows agree) */
    if (e->status != CPB_OK) {
        fprintf(f, "time per step: none (%s: the step does not fit, so no step time or throughput)\n",
                e->status == CPB_ERR_OOM || e->status == CPB_ERR_NOMEM_HOST ? "out of memory" : cpb_status_name(e->status));
        return;
    }
    fprintf(f, "time per step (predicted, seconds):\n");
    /* the recompute term is what attn_layer_s adds for it (model_scope.c timing()): the whole
     * forward under full checkpointing, the attention core under selective, nothing under none */
    const double B = e->setup.micro_batch > 0 ? e->setup.micro_batch : 1;
    const double recompute_s = (e->attn_layer_s - e->lora_attn_s) / B - e->attn.fwd_s - e->attn.bwd_s;
    fprintf(f, "  per layer: attention %s s (fwd %s + recompute %s + bwd %s", sec(e->attn_layer_s), sec(e->attn.fwd_s),
            sec(recompute_s > 0 ? recompute_s : 0), sec(e->attn.bwd_s));
    if (e->setup.lora_rank > 0)
        fprintf(f, " %s LoRA %s: adapters less the frozen projections' weight gradients, an estimate",
                e->lora_attn_s < 0 ? "-" : "+", sec(e->lora_attn_s < 0 ? -e->lora_attn_s : e->lora_attn_s));
    char casts[64] = "";
    if (e->fp8_cast_s > 0) snprintf(casts, sizeof casts, " (fp8 casts %s s)", sec(e->fp8_cast_s));
    fprintf(f, "), MLP %s s%s%s, norms %s s", sec(e->mlp_layer_s),
            e->setup.lora_rank > 0 ? " (frozen: backward dX only; adapters included)" : "", casts,
            sec(e->norm_layer_s));
    if (e->tp_mlp_comm_s > 0) fprintf(f, ", MLP TP all-gathers/reduce-scatters %s s (exposed)", sec(e->tp_mlp_comm_s));
    fprintf(f, "\n");
    fprintf(f, "             checkpoint copies %s s (%s), parameter traffic %s s (overlapped) -> %s s\n",
            sec(e->ckpt_layer_s), e->fw->ckpt_blocking ? "on the compute stream" : "overlapped", sec(e->fsdp_layer_s),
            sec(e->layer_s));
    fprintf(f, "  LM head %s s, loss passes %s s, optimizer %s s", sec(e->head_s), sec(e->loss_s), sec(e->optimizer_s));
    if (e->setup.opt_cpu)
        fprintf(f, " (on the CPU: %s s over host memory + %s s of PCIe copies; an estimate, not overlapped)",
                sec(e->opt_host_s), sec(e->opt_pcie_s));
    fprintf(f, "\n");
    if (e->step_comm_s > 0) fprintf(f, "  per step: parameter all-gather / gradient reduction %s s\n", sec(e->step_comm_s));
    if (e->setup.micro_batch > 1 || e->setup.grad_accum > 1)
        fprintf(f, "  micro-batch of %d sequence%s %s s, x %d per step (an estimate: the attention trace of one sequence "
                "times %d)\n", e->setup.micro_batch, e->setup.micro_batch == 1 ? "" : "s", sec(e->micro_s),
                e->setup.grad_accum, e->setup.micro_batch);
    cpb_row *row = malloc(sizeof *row);
    if (!row) return;
    cpb_model_estimate_row(e, row);
    fprintf(f, "  step %s s, %.2f tokens/s/GPU, %.1f model TFLOP/s/GPU\n", sec(e->step_s), row->tokens_per_s_per_gpu,
            row->tflops_per_gpu);
    fprintf(f, "  MFU of the %.0f TFLOP/s peak: %.1f%% causal (%.1f TFLOP/s), %.1f%% megatron (%.1f TFLOP/s), "
            "%.1f%% nemo (%.1f TFLOP/s)\n",
            row->peak_tflops, 100 * row->mfu_causal, row->tflops_per_gpu, 100 * row->mfu_megatron,
            row->tflops_per_gpu_megatron, 100 * row->mfu_nemo, row->tflops_per_gpu_nemo);
    free(row);
}


/* The step's critical path by kind of work: per layer, the attention layer's own split
 * (its timeline's critical path) over its forward, recompute and backward, the MLP and
 * norms as compute, blocking checkpoint copies as host copies; a layer the parameter
 * traffic (or overlapped checkpoint copies) outlasts spends the excess on those; the head,
 * loss and optimizer are compute. */
static void model_critical_path(const cpb_model_estimate *e, cpb_row *row)
{
    const cpb_row *a = &e->attn;
    double at = a->crit_compute_s + a->crit_comm_s + a->crit_host_s, L = e->spec->layers;
    double fc = at > 0 ? a->crit_compute_s / at : 1, fm = at > 0 ? a->crit_comm_s / at : 0,
           fh = at > 0 ? a->crit_host_s / at : 0;
    double comp = e->attn_layer_s * fc + e->mlp_layer_s + e->norm_layer_s,
           comm = e->attn_layer_s * fm + e->tp_mlp_comm_s,
           host = e->attn_layer_s * fh + (e->fw->ckpt_blocking ? e->ckpt_layer_s : 0);
    double extra = e->layer_s - (comp + comm + host), fsdp = 0;
    if (extra > 0) {
        if (e->fsdp_layer_s >= e->layer_s) fsdp = extra, comm += extra;
        else host += extra;
    }
    /* K micro-batches per step; a GPU optimizer is compute, a CPU one host work and copies;
     * the per-step collectives communication */
    const double K = e->setup.grad_accum;
    double opt_gpu = e->setup.opt_cpu ? 0 : e->optimizer_s;
    row->crit_compute_s = (L * comp + e->head_s + e->loss_s) * K + opt_gpu;
    row->crit_comm_s = L * comm * K + e->step_comm_s;
    row->crit_host_s = L * host * K + (e->setup.opt_cpu ? e->optimizer_s : 0);
    for (int k = 0; k < CPB_COLL_KIND_COUNT; k++)
        row->crit_coll_s[k] = K * L * e->attn_layer_s * (at > 0 ? a->crit_coll_s[k] / at : 0);
    row->crit_coll_s[CPB_COLL_ALL_GATHER] += K * L * fsdp + e->step_comm_s; /* FSDP's gathers (and reduce-scatter) */
    /* the MLP's TP collectives: 3 all-gathers and 2 reduce-scatters of 5, a recompute's 1 + 1 more */
    const int n_tp = cpb_tp_mlp_collectives(e->setup.ckpt == CPB_CKPT_FULL);
    row->crit_coll_s[CPB_COLL_ALL_GATHER] += K * L * e->tp_mlp_comm_s * (n_tp == 5 ? 3.0 : 4.0) / n_tp;
    row->crit_coll_s[CPB_COLL_REDUCE_SCATTER] += K * L * e->tp_mlp_comm_s * (n_tp == 5 ? 2.0 : 3.0) / n_tp;
    row->replayed_ranks = a->replayed_ranks;
    row->sym_op_diff = a->sym_op_diff;
    memcpy(row->sym_fallback, a->sym_fallback, sizeof row->sym_fallback);
}

void cpb_model_estimate_row(const cpb_model_estimate *e, cpb_row *row)
{
    const cpb_problem *p = &e->p;
    cpb_row_point(row, e->m, p, &cpb_backend_sim, e->gpu, "model");
    row->peak_tflops = e->attn.peak_tflops; /* the profile the attention layer ran on */
    /* the attention implementations the layer's calls ran (per call class) and the
     * estimates the prediction took: the attention layer's, which every layer repeats */
    CPB_ROW_SET(row, attn_impl, e->attn.attn_impl);
    CPB_ROW_SET(row, attn_fwd_impl, e->attn.attn_fwd_impl);
    CPB_ROW_SET(row, attn_bwd_impl, e->attn.attn_bwd_impl);
    CPB_ROW_SET(row, attn_calls, e->attn.attn_calls);
    CPB_ROW_SET(row, estimates, e->attn.estimates);
    row->worst_rank = e->attn.worst_rank;
    /* a model that does not fit the host memory is out of memory too */
    cpb_row_set_status(row, e->status == CPB_ERR_NOMEM_HOST ? CPB_ERR_OOM : e->status, e->reason);
    if (e->attn.code != CPB_OK) return;
    const cpb_model_mem *pk = &e->moment[e->peak_moment];
    row->peak_bytes = pk->total;
    row->reserved_bytes = pk->total;
    cpb_model_buckets b = cpb_model_mem_buckets(pk);
    row->model_state_bytes = b.model;
    row->attn_act_bytes = b.attn_act;
    row->other_bytes = b.other;
    row->fixed_bytes = b.fixed;
    /* the allocator's reserve: beside the peak, not in it (model_scope.h) */
    row->alloc_reserve_bytes = e->reserve[e->reserved_moment];
    row->peak_reserved_bytes = e->peak_reserved;
    row->peak_device_bytes = e->peak_device;
    row->intermediate_bytes = e->attn.intermediate_bytes;
    row->host_peak_bytes = e->host_bytes;
    row->capacity_bytes = e->capacity;
    memcpy(row->at_peak_bytes, e->attn.at_peak_bytes, sizeof row->at_peak_bytes);
    memcpy(row->tag_peak, e->attn.tag_peak, sizeof row->tag_peak);
    row->fwd_peak_bytes = e->attn.fwd_peak_bytes;
    row->bwd_peak_bytes = e->attn.bwd_peak_bytes;
    row->y_norm = e->attn.y_norm; /* the attention layer's fingerprint */
    row->dx_norm = e->attn.dx_norm;
    row->dw_norm = e->attn.dw_norm;
    if (e->status != CPB_OK) return;
    row->step_s = e->step_s;
    row->fwd_s = e->setup.grad_accum * e->spec->layers *
                 (e->setup.micro_batch * e->attn.fwd_s + e->mlp_layer_s / e->mlp_passes +
                  e->tp_mlp_comm_s * 2 / cpb_tp_mlp_collectives(e->setup.ckpt == CPB_CKPT_FULL)); /* the forward pass's share */
    row->bwd_s = e->step_s - row->fwd_s;
    cpb_row_rates(row, e->model_flops, e->model_flops_megatron, e->model_flops_nemo);
    /* a step trains micro-batch x accumulation sequences of S tokens on each replica: the
     * rates per GPU are over the context-parallel group's GPUs (the row's world), the
     * tokens/s the whole job's (every replica) */
    row->tokens_per_s *= (double)e->setup.micro_batch * e->setup.grad_accum * e->setup.dp;
    row->tokens_per_s_per_gpu *= (double)e->setup.micro_batch * e->setup.grad_accum;
    row->comm_bytes = e->attn.comm_bytes * e->spec->layers;
    row->pcie_bytes = e->attn.pcie_bytes * e->spec->layers;
    row->nstreams = e->attn.nstreams;
    memcpy(row->stream_names, e->attn.stream_names, sizeof row->stream_names);
    memcpy(row->stream_busy_s, e->attn.stream_busy_s, sizeof row->stream_busy_s);
    model_critical_path(e, row);
    cpb_pp_row(e, row); /* --pp: rates per GPU over the replica's pp x C GPUs; the pipeline's time */
}

int cpb_model_max_context(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o, int64_t start, int64_t stop,
                          int64_t step, int64_t *best, int *evals, char *err, size_t err_len)
{
    *best = 0;
    *evals = 0;
    cpb_sweep_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.start = start;
    plan.stop = stop;
    plan.factor = 2.0;
    plan.bisect = step;
    plan.end_at_stop = 1; /* the answer lies in [start, stop]: stop itself is tried */
    plan.granule = cpb_sweep_granule(m, p, start, stop);
    if (cpb_sweep_plan_check(&plan, err, err_len) != CPB_OK) return CPB_ERR_INVALID;
    cpb_sweep_state st;
    cpb_sweep_begin(&st, &plan);
    for (int64_t S; (S = cpb_sweep_next(&st)) > 0;) {
        cpb_problem q = *p;
        q.S = S;
        cpb_point_status ps;
        if (cpb_method_refusal(m, &q, NULL, 0) != CPB_OK) {
            ps = CPB_POINT_REFUSED;
        } else {
            cpb_model_estimate *e = NULL;
            int rc = cpb_model_estimate_new(&q, m, o, &e, err, err_len);
            if (rc != CPB_OK) return rc;
            (*evals)++;
            if (e->status == CPB_OK) ps = CPB_POINT_OK;
            else if (e->status == CPB_ERR_OOM || e->status == CPB_ERR_NOMEM_HOST) ps = CPB_POINT_OOM;
            else ps = CPB_POINT_ERROR;
            if (ps == CPB_POINT_ERROR) snprintf(err, err_len, "%s at S = %lld: %s", m->name, (long long)S, e->reason);
            cpb_model_estimate_free(e);
            if (ps == CPB_POINT_ERROR) return CPB_ERR_INVALID;
        }
        if (ps == CPB_POINT_OK && S > *best) *best = S;
        cpb_sweep_report(&st, S, ps);
    }
    return CPB_OK;
}
