/* model_scope_pp.c — pipeline parallelism of the whole-model estimate (model_scope_pp.h
 * states the layout and the schedule; docs/simulator.md "Pipeline parallelism" gives every
 * source).
 *
 * Sources:
 *   [NAR21] Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
 *           Using Megatron-LM", SC'21: sec. 2.2.1 (1F1B: bubble (p-1)/m of the ideal time,
 *           at most p micro-batches in flight), sec. 2.2.2 (interleaved: bubble (p-1)/(v m),
 *           v times the communication).
 *   [MCS]   Megatron-LM megatron/core/pipeline_parallel/schedules.py (@861a8fa2):
 *           forward_backward_pipelining_without_interleaving: num_warmup_microbatches =
 *           min(pp - rank - 1, num_microbatches), then 1F1B; its P2P (send_forward_recv_backward,
 *           send_backward_recv_forward) waits on its requests: not overlapped.
 *           forward_backward_pipelining_with_interleaving: num_warmup_microbatches =
 *           (pp - rank - 1) * 2 + (num_model_chunks - 1) * microbatch_group_size_per_vp_stage
 *           (default pp), all of them (m v) when m == pp, at most m v; overlap_p2p_comm
 *           overlaps its steady-state P2P with compute.  get_tensor_shapes: the message is
 *           [seq_length / cp (/ tp with sequence parallelism), micro_batch, hidden].
 *   [KOR22] Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
 *           Models" (arXiv 2205.05198) sec. 4.2.3: the first stage holds p micro-batches of
 *           L/p layers, (1 + (p-1)/(p v)) times that when interleaved (the count above).
 *   [MCC]   Megatron Core TransformerConfig num_layers_in_first_pipeline_stage /
 *           num_layers_in_last_pipeline_stage (--decoder-first-pipeline-num-layers,
 *           --decoder-last-pipeline-num-layers): the remaining layers split evenly over the
 *           other stages, which must divide. */
#include "model_scope_pp.h"

#include <stdio.h>
#include <string.h>

#include "knobs.h"
#include "model_scope.h"

const cpb_knob cpb_pp_knobs[] = {
    {.name = "pp", .type = CPB_KNOB_INT, .def = "0", .arg = "N",
     .help = "pipeline-parallel stages (Megatron's 1F1B schedule; the layers split over N stages, --gpus = tp x cp x "
             "pp x dp; plan keeps it as given, never searches it; default 1: none)",
     .points = CPB_KNOB_MODEL_SCOPE_POINTS, .setup = 1},
    {.name = "vpp", .type = CPB_KNOB_INT, .def = "0", .arg = "V",
     .help = "model chunks per pipeline rank: V > 1 is Megatron's interleaved schedule (bubble / V; needs --pp > 1 and "
             "the layers to divide by pp x V; default 1)",
     .points = CPB_KNOB_MODEL_SCOPE_POINTS, .setup = 1},
    {.name = "pp_first_layers", .type = CPB_KNOB_INT, .def = "0", .arg = "N",
     .help = "layers on the first pipeline stage (Megatron's --decoder-first-pipeline-num-layers; the rest split evenly; "
             "default: L / pp)",
     .points = CPB_KNOB_MODEL_SCOPE_POINTS, .setup = 1},
    {.name = "pp_last_layers", .type = CPB_KNOB_INT, .def = "0", .arg = "N",
     .help = "layers on the last pipeline stage (Megatron's --decoder-last-pipeline-num-layers; the rest split evenly; "
             "default: L / pp)",
     .points = CPB_KNOB_MODEL_SCOPE_POINTS, .setup = 1},
    {NULL}};

int cpb_pp_degree(const cpb_problem *p)
{
    int64_t v = cpb_knob_int(p, "pp");
    return v > 1 ? (int)v : 1;
}

int cpb_pp_plan_of(const cpb_problem *p, int layers, int m, cpb_pp_plan *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    const int pp = cpb_pp_degree(p);
    const int64_t v = cpb_knob_int(p, "vpp"), f = cpb_knob_int(p, "pp_first_layers"),
                  l = cpb_knob_int(p, "pp_last_layers");
    out->pp = pp;
    out->v = v > 1 ? (int)v : 1;
    out->m = m > 0 ? m : 1;
    out->layers = layers;
    out->first_given = f > 0 ? (int)f : 0;
    out->last_given = l > 0 ? (int)l : 0;
    if (pp > CPB_PP_MAX_STAGES) {
        snprintf(err, err_len, "--pp %d: at most %d pipeline stages", pp, CPB_PP_MAX_STAGES);
        return CPB_ERR_INVALID;
    }
    if (pp == 1 && (out->v > 1 || f > 0 || l > 0)) {
        snprintf(err, err_len, "%s splits the pipeline's stages: it needs --pp > 1",
                 out->v > 1 ? "--vpp" : f > 0 ? "--pp-first-layers" : "--pp-last-layers");
        return CPB_ERR_INVALID;
    }
    if (pp == 1) {
        out->first = out->mid = out->last = layers;
        return CPB_OK;
    }
    if (pp > layers) {
        snprintf(err, err_len, "--pp %d: more pipeline stages than the model's %d layers", pp, layers);
        return CPB_ERR_INVALID;
    }
    if (out->v > 1) {
        /* [MCS]/[MCC]: the interleaved schedule needs every chunk the same size here (an
         * uneven first or last stage with chunks is not modelled) */
        if (f > 0 || l > 0) {
            snprintf(err, err_len, "--vpp %d with --pp-first-layers / --pp-last-layers: uneven stages with an "
                     "interleaved schedule are not modelled; give one or the other", out->v);
            return CPB_ERR_INVALID;
        }
        if (layers % (pp * out->v)) {
            snprintf(err, err_len, "--pp %d x --vpp %d = %d model chunks do not divide the model's %d layers: give a "
                     "--vpp (or --pp) whose product divides %d", pp, out->v, pp * out->v, layers, layers);
            return CPB_ERR_INVALID;
        }
        out->first = out->mid = out->last = layers / pp;
        return CPB_OK;
    }
    /* [MCC]: the stages not given share the remaining layers evenly */
    int rest = layers - (f > 0 ? (int)f : 0) - (l > 0 ? (int)l : 0);
    int others = pp - (f > 0) - (l > 0);
    if (rest < 0 || (others == 0 && rest != 0) || (others > 0 && (rest <= 0 || rest % others))) {
        if (f <= 0 && l <= 0)
            snprintf(err, err_len, "--pp %d does not divide the model's %d layers: give a --pp that divides %d, or "
                     "Megatron's uneven first / last stage (--pp-first-layers N, --pp-last-layers N: the rest split "
                     "evenly over the other stages)", pp, layers, layers);
        else
            snprintf(err, err_len, "--pp %d with --pp-first-layers %lld and --pp-last-layers %lld: the other %d stages "
                     "cannot share the remaining %d of the %d layers evenly (each at least one)", pp, (long long)f,
                     (long long)l, others, rest, layers);
        return CPB_ERR_INVALID;
    }
    int even = others > 0 ? rest / others : 0;
    out->first = f > 0 ? (int)f : even;
    out->last = l > 0 ? (int)l : even;
    out->mid = even > 0 ? even : out->first; /* pp = 2 with both given: no middle rank */
    return CPB_OK;
}

void cpb_pp_rank_of(const cpb_pp_plan *pl, int r, cpb_pp_rank *out)
{
    memset(out, 0, sizeof *out);
    const int pp = pl->pp, m = pl->m, v = pl->v;
    out->first = r == 0;
    out->last = r == pp - 1;
    out->layers = pp == 1 ? pl->layers : out->first ? pl->first : out->last ? pl->last : pl->mid;
    if (pp == 1) {
        out->in_flight = 1;
    } else if (v == 1) {
        /* [MCS] 1F1B: min(pp - r - 1, m) warm-up forwards, then each steady-state forward
         * before its backward: min(pp - r, m) micro-batches' activations at once */
        int w = pp - r - 1 < m ? pp - r - 1 : m;
        out->in_flight = w + 1 < m ? w + 1 : m;
    } else {
        /* [MCS] interleaved: warm-up model chunks (pp - r - 1) 2 + (v - 1) pp, all m v when
         * m == pp, at most m v; one more in the steady state; a chunk is 1/v of the rank's
         * layers ([KOR22]: the first rank holds pp (1 + (pp - 1)/(pp v)) micro-batches' worth) */
        int total = m * v;
        int w = m == pp ? total : (pp - r - 1) * 2 + (v - 1) * pp;
        if (w > total) w = total;
        int chunks = w + 1 < total ? w + 1 : total;
        out->in_flight = (double)chunks / v;
    }
    out->live_layers = out->in_flight * out->layers;
}

double cpb_pp_step(cpb_pp_plan *pl, double t_layer, double t_head, double msg_bytes, const cpb_sim_hw *hw, int stride)
{
    const int pp = pl->pp;
    pl->t_max = pl->t_sum = 0;
    for (int r = 0; r < pp; r++) {
        cpb_pp_rank k;
        cpb_pp_rank_of(pl, r, &k);
        /* each rank's forward + backward of one micro-batch: its layers, and on the last the
         * LM head and loss (the first rank's embedding lookup is a gather of [s, D] rows, not
         * counted) */
        double t = k.layers * t_layer + (k.last ? t_head : 0);
        pl->t_sum += t;
        if (t > pl->t_max) pl->t_max = t;
    }
    /* [NAR21] sec. 2.2: one micro-batch crosses every stage forward and back (fill and drain:
     * the sum of the ranks' times), the other m - 1 follow at the slowest rank's pace:
     * m t_max + (t_sum - t_max); with all ranks equal (m + pp - 1) t, the bubble (pp - 1) t.
     * Interleaved (sec. 2.2.2): the fill and drain run in chunks of 1/v: bubble / v */
    pl->bubble_s = pp > 1 ? (pl->t_sum - pl->t_max) / pl->v : 0;
    /* the activation (forward) and its gradient (backward) between neighbour stages: over
     * NVLink when both are on one node, else the network (Megatron places PP outermost, so
     * neighbours are stride = tp x cp x dp ranks apart) */
    const int gpn = hw->gpus_per_node > 0 ? hw->gpus_per_node : 8;
    pl->msg_bytes = msg_bytes;
    pl->msg_inter = stride >= gpn;
    double bw = pl->msg_inter ? hw->inter_busbw : hw->sendrecv_busbw;
    double lat = pl->msg_inter ? hw->inter_lat : hw->coll_lat;
    pl->msg_s = pp > 1 && bw > 0 ? msg_bytes / bw + lat : 0;
    /* [MCS]: 1F1B's sends and receives wait on their requests, so on the critical path each
     * of the m + pp - 1 slots carries one activation and one gradient; the interleaved
     * schedule overlaps its steady state's (overlap_p2p_comm), leaving the fill's and
     * drain's 2 (pp - 1) exposed */
    pl->messages = pp == 1 ? 0 : pl->v == 1 ? 2.0 * (pl->m + pp - 1) : 2.0 * (pp - 1);
    pl->p2p_s = pl->messages * pl->msg_s;
    pl->pipe_s = pl->m * pl->t_max + pl->bubble_s + pl->p2p_s;
    return pl->pipe_s;
}

void cpb_pp_fixed_mem(struct cpb_fixed_mem *f, int pp)
{
    if (pp <= 1) return;
    const int peers = pp > 2 ? 2 : 1;
    const int64_t b = CPB_NCCL_BUFFSIZE * (int64_t)peers * CPB_NCCL_P2P_CHANNELS;
    f->p2p_peers += peers;
    f->nccl += b;
    f->total += b;
}

void cpb_pp_describe(const cpb_pp_plan *pl, char *buf, size_t len)
{
    if (pl->pp <= 1) {
        snprintf(buf, len, "none (1 stage)");
        return;
    }
    size_t n = (size_t)snprintf(buf, len, "%d stages, ", pl->pp);
    if (pl->first == pl->mid && pl->last == pl->mid)
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%d layers each", pl->mid);
    else
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "layers %d first, %d last, %d on each other stage",
                              pl->first, pl->last, pl->mid);
    if (pl->v > 1)
        snprintf(buf + n, n < len ? len - n : 0, ", interleaved: %d chunks of %d layers per rank", pl->v,
                 pl->mid / pl->v);
    else snprintf(buf + n, n < len ? len - n : 0, ", 1F1B");
}

void cpb_pp_row(const cpb_model_estimate *e, cpb_row *row)
{
    const cpb_pp_plan *pl = &e->pp;
    if (pl->pp <= 1 || !(row->step_s > 0)) return;
    const double P = pl->pp;
    row->tokens_per_s_per_gpu /= P;
    row->tflops_per_gpu /= P;
    row->tflops_per_gpu_megatron /= P;
    row->tflops_per_gpu_nemo /= P;
    row->mfu_causal /= P;
    row->mfu_megatron /= P;
    row->mfu_nemo /= P;
    /* the rest of the row was made as if the K micro-batches ran the whole model's layers
     * serially (serial); the pipeline's own time is the slowest rank's K micro-batches, the
     * bubble and the exposed sends */
    const double K = e->setup.grad_accum, L = e->spec->layers;
    const double serial = K * (L * e->layer_s + e->head_s + e->loss_s);
    const double g = serial > 0 ? pl->m * pl->t_max / serial : 1;
    row->fwd_s *= g;
    row->bwd_s = row->step_s - row->fwd_s;
    /* the critical path: what each step pays once stays, the layers' part is scaled */
    double opt_gpu = e->setup.opt_cpu ? 0 : e->optimizer_s, opt_host = e->setup.opt_cpu ? e->optimizer_s : 0;
    row->crit_compute_s = (row->crit_compute_s - opt_gpu) * g + opt_gpu + pl->bubble_s;
    row->crit_comm_s = (row->crit_comm_s - e->step_comm_s) * g + e->step_comm_s + pl->p2p_s;
    row->crit_host_s = (row->crit_host_s - opt_host) * g + opt_host;
    for (int k = 0; k < CPB_COLL_KIND_COUNT; k++) {
        double keep = k == CPB_COLL_ALL_GATHER ? e->step_comm_s : 0;
        row->crit_coll_s[k] = (row->crit_coll_s[k] - keep) * g + keep;
    }
    row->crit_coll_s[CPB_COLL_SENDRECV] += pl->p2p_s;
    row->comm_bytes = e->attn.comm_bytes * e->pp_worst.layers;
    row->pcie_bytes = e->attn.pcie_bytes * e->pp_worst.layers;
}

void cpb_pp_print(FILE *f, const cpb_model_estimate *e)
{
    const cpb_pp_plan *pl = &e->pp;
    if (pl->pp <= 1) return;
    char d[256];
    cpb_pp_describe(pl, d, sizeof d);
    const cpb_pp_rank *w = &e->pp_worst;
    fprintf(f, "pipeline: %s; %d micro-batches per step; memory is the worst rank's: rank %d (%s) with %d layers and "
               "%.3g micro-batches' activations in flight (Megatron's schedules.py warm-up count)%s\n",
            d, pl->m, e->pp_worst_rank, w->first ? "the first" : w->last ? "the last" : "a middle one", w->layers,
            w->in_flight, w->first ? ", the embedding" : w->last ? ", the LM head and the loss" : "");
    if (e->status != CPB_OK && !(pl->pipe_s > 0)) return;
    fprintf(f, "pipeline time per step: %d x the slowest rank's micro-batch %.4g s + bubble %.4g s (fill and drain%s) + "
               "%.0f exposed sends of %.3g MiB at %.4g s each (%s%s) = %.4g s\n",
            pl->m, pl->t_max, pl->bubble_s, pl->v > 1 ? ", / vpp" : "", pl->messages, pl->msg_bytes / 1048576.0,
            pl->msg_s, pl->msg_inter ? "network: neighbour stages on different nodes" : "NVLink",
            pl->v > 1 ? "; the steady state's overlapped" : "; 1F1B waits on its sends", pl->pipe_s);
}
