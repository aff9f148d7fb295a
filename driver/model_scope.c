/* model_scope.c — the whole-model estimate (model_scope.h).  Every assumption is stated
 * where it is used and collected in docs/simulator.md.  Nothing is fitted to the published
 * throughput or maximum-length tables. */
#include "model_scope.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_profiles.h"
#include "sim/timeline.h"

/* Bytes per parameter of the sharded model states (bf16 parameters, fp32
 * gradients and Adam states): 2 (bf16 param) + 4 (fp32 grad) + 4 + 4 (Adam m, v). */
#define STATE_BYTES_PER_PARAM 14.0
/* Bytes per parameter the optimizer step reads and writes (Adam, HBM bound): reads param
 * 2, grad 4, m 4, v 4; writes param 2, m 4, v 4. */
#define ADAM_BYTES_PER_PARAM 24.0
#define BF16 2
#define FP32 4

const char *cpb_model_moment_name(int moment)
{
    static const char *const n[CPB_MOMENT_COUNT] = {"attention backward", "MLP backward", "loss (fused linear CE)"};
    return moment >= 0 && moment < CPB_MOMENT_COUNT ? n[moment] : "?";
}

typedef struct shape {
    double S, s, C, D, H, G, d, F, V, L;
    double p_attn, p_mlp, p_norm, p_layer, p_embed, p_head, p_total;
} shape;

static shape shape_of(const cpb_problem *p, const cpb_model_spec *sp)
{
    shape x;
    x.S = (double)p->S;
    x.C = p->C;
    x.s = x.S / x.C;
    x.D = (double)p->D;
    x.H = p->H;
    x.G = p->G;
    x.d = p->d;
    x.F = (double)sp->ffn;
    x.V = (double)sp->vocab;
    x.L = sp->layers;
    x.p_attn = x.D * (x.H + 2 * x.G) * x.d + x.H * x.d * x.D;
    x.p_mlp = 3 * x.D * x.F; /* SwiGLU: gate, up [D, F], down [F, D] */
    x.p_norm = 2 * x.D;      /* two RMSNorm weights per layer */
    x.p_layer = x.p_attn + x.p_mlp + x.p_norm;
    x.p_embed = x.V * x.D;
    x.p_head = sp->tied ? 0 : x.V * x.D;
    x.p_total = x.L * x.p_layer + x.p_embed + x.p_head + x.D; /* + final norm */
    return x;
}

static void sum(cpb_model_mem *m)
{
    m->total = m->states + m->gathered + m->attn_fixed + m->attn_act + m->ckpt + m->residual + m->work;
}

/* Memory per GPU at the three candidate peaks of a training step. */
static void memory(cpb_model_estimate *e, const shape *x)
{
    const cpb_row *t = &e->attn;
    const double sD = x->s * x->D;
    /* FSDP/ZeRO-3: every state sharded evenly over the C GPUs */
    int64_t states = (int64_t)(STATE_BYTES_PER_PARAM * x->p_total / x->C);
    /* Full activation checkpointing: each layer's input [s, D] bf16 is kept; the first and
     * last layer's on the device, the others offloaded to pinned host memory. */
    int64_t ckpt = (int64_t)(2 * sD * BF16);
    /* The layer's own [s, D] buffers in the trace (trial.c allocates x, y, dy, dx in the
     * storage dtype).  In the model the attention output y is consumed by the residual add
     * h = r + y and freed at once, and dy is the residual gradient dh itself (h = r + y
     * gives dy = dh): so y is not live in a backward, and dy needs no buffer of its own. */
    const int64_t sdb = (int64_t)(sD * (double)cpb_dtype_size(e->p.dtype));
    int64_t attn_fixed = t->at_peak_bytes[CPB_TAG_WEIGHTS] + t->at_peak_bytes[CPB_TAG_GRADS];

    /* A: attention backward of a middle layer (after its recomputed forward and its MLP
     * backward).  FSDP holds the layer's MLP and norm parameters (bf16; the attention
     * weights are in the trace), prefetches the next layer's parameters (bf16, FSDP2's
     * default of one layer ahead) and keeps the layer's MLP gradients (fp32 reduce dtype)
     * until their reduce-scatter. */
    cpb_model_mem *a = &e->moment[CPB_MOMENT_ATTN_BWD];
    a->states = states;
    a->gathered = (int64_t)((x->p_mlp + x->p_norm) * BF16 + x->p_layer * BF16 + x->p_mlp * FP32);
    a->attn_fixed = attn_fixed;
    a->attn_act = t->peak_bytes - attn_fixed - t->at_peak_bytes[CPB_TAG_Y];
    a->ckpt = ckpt;
    /* the layer's input r, fetched back from the host (its norm's backward needs it), and
     * the input of the next layer to process, prefetched while this one runs */
    a->residual = (int64_t)(2 * sD * BF16);
    a->work = 0;
    sum(a);

    /* B: MLP backward of the same layer: the attention's saved state from the recomputed
     * forward is live; the MLP is tiled over the sequence in tiles of D tokens (Arctic
     * Long Sequence Training's TiledMLP default, the paper's "tiled MLP"); one tile keeps
     * gate, up, the activation and their three gradients, [T, F] bf16 each. */
    cpb_model_mem *b = &e->moment[CPB_MOMENT_MLP_BWD];
    double T = x->s < x->D ? x->s : x->D;
    b->states = states;
    b->gathered = a->gathered; /* the same layer and prefetch; MLP grads being produced */
    b->attn_fixed = attn_fixed;
    /* the attention's saved state at the end of its forward, less y (freed after the
     * residual add) and dx (not yet produced; the trial allocates it up front) */
    b->attn_act = t->fwd.live_end - attn_fixed - 2 * sdb;
    if (b->attn_act < 0) b->attn_act = 0;
    b->ckpt = ckpt;
    /* r, h = r + y (its norm's backward needs it) and the prefetched next input */
    b->residual = (int64_t)(3 * sD * BF16);
    b->work = (int64_t)(6 * T * x->F * BF16);
    sum(b);

    /* C: the loss.  A fused linear cross-entropy (Liger's FLCE, the paper's choice) never
     * holds all logits: chunks of c tokens with c*V ~ s*D (its chunk rule), fp32 logits
     * and their gradient; the LM head is gathered (bf16) with its fp32 gradient; the
     * final hidden state and its gradient [s, D] bf16. */
    cpb_model_mem *c = &e->moment[CPB_MOMENT_LOSS];
    double head = x->p_head > 0 ? x->p_head : x->p_embed;
    c->states = states;
    c->gathered = (int64_t)(head * BF16 + head * FP32);
    c->attn_fixed = 0;
    c->attn_act = 0;
    c->ckpt = ckpt;
    c->residual = (int64_t)(2 * sD * BF16);
    c->work = (int64_t)(2 * sD * FP32);
    sum(c);

    e->peak_moment = 0;
    for (int k = 1; k < CPB_MOMENT_COUNT; k++)
        if (e->moment[k].total > e->moment[e->peak_moment].total) e->peak_moment = k;
    /* host: the L-2 offloaded checkpoints plus what the method itself keeps on the host */
    e->host_bytes = (int64_t)((x->L - 2) * sD * BF16) + t->host_peak_bytes;
}

/* Time per step on one GPU. */
static void timing(cpb_model_estimate *e, const shape *x, const cpb_sim_hw *hw)
{
    const double sD = x->s * x->D;
    /* attention: the layer trial's forward and backward from the timing model; the
     * checkpointed forward runs twice (forward, recompute before backward) */
    e->attn_layer_s = 2 * e->attn.fwd_s + e->attn.bwd_s;
    /* MLP: 3 GEMMs of 2*s*D*F FLOPs forward at the GEMM efficiency of one tile
     * (T x F x D); recomputed once; backward twice the forward */
    double T = x->s < x->D ? x->s : x->D;
    double eff = cpb_sim_gemm_eff(hw, (int64_t)T, (int64_t)x->F, (int64_t)x->D, 1);
    double mlp_fwd = 3 * 2 * x->s * x->D * x->F / (hw->peak_flops * eff);
    e->mlp_layer_s = 4 * mlp_fwd;
    /* two RMSNorms (read + write [s, D]) and two residual adds (two reads, one write) per
     * pass, HBM bound; passes: forward, recompute, backward counted twice */
    e->norm_layer_s = 4 * (2 * 2 + 2 * 3) * sD * BF16 / hw->hbm_bw;
    /* FSDP: all-gather the layer's bf16 params for the forward and again for the backward
     * (reshard after forward, FSDP2's default) and reduce-scatter its fp32 gradients;
     * bus bytes (C-1)/C of the full size; network bandwidth when C spans nodes */
    int gpn = hw->gpus_per_node > 0 ? hw->gpus_per_node : 8;
    double bw = x->C > gpn ? hw->inter_busbw : hw->coll_busbw;
    double lat = x->C > gpn ? hw->inter_lat : hw->coll_lat;
    e->fsdp_layer_s = x->C > 1 ? (2 * BF16 + FP32) * x->p_layer * (x->C - 1) / x->C / bw + 3 * lat : 0;
    /* checkpoint offload: [s, D] bf16 to the host in the forward and back in the backward,
     * while every GPU of the node does the same (they share the node's host link) */
    double sharing = x->C < gpn ? x->C : gpn;
    double pcie = hw->pcie_node_bw / sharing < hw->pcie_gpu_bw ? hw->pcie_node_bw / sharing : hw->pcie_gpu_bw;
    e->ckpt_layer_s = x->L > 2 ? 2 * sD * BF16 / pcie : 0;
    /* FSDP prefetch and the offload run on their own streams: a layer takes the longest
     * of its compute, its parameter traffic and its copies (perfect overlap) */
    double compute = e->attn_layer_s + e->mlp_layer_s + e->norm_layer_s;
    e->layer_s = compute;
    if (e->fsdp_layer_s > e->layer_s) e->layer_s = e->fsdp_layer_s;
    if (e->ckpt_layer_s > e->layer_s) e->layer_s = e->ckpt_layer_s;
    /* LM head with the fused cross-entropy: forward 2*s*D*V, the fused backward (dX and
     * dW) twice that, computed in the same pass; chunks of c ~ s*D/V tokens */
    double chunk = ceil(x->s * x->D / x->V);
    if (chunk < 1) chunk = 1;
    double head_eff = cpb_sim_gemm_eff(hw, (int64_t)chunk, (int64_t)x->V, (int64_t)x->D, 1);
    e->head_s = 3 * 2 * x->s * x->D * x->V / (hw->peak_flops * head_eff);
    /* Adam over this GPU's shard, HBM bound */
    e->optimizer_s = ADAM_BYTES_PER_PARAM * x->p_total / x->C / hw->hbm_bw;
    e->step_s = x->L * e->layer_s + e->head_s + e->optimizer_s;
    /* model FLOPs without the recomputation (the usual MFU convention): per layer the
     * attention layer's FLOPs of DESIGN section 6 plus the MLP's 3 x (2 S D F) x 3, plus
     * the head's 3 x 2 S D V */
    double af, ab;
    cpb_layer_model_flops(&e->p, &af, &ab);
    double total = x->L * (af + ab + 3 * 3 * 2 * x->S * x->D * x->F) + 3 * 2 * x->S * x->D * x->V;
    e->model_flops = total;
}

int cpb_model_estimate_new(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o,
                           cpb_model_estimate **out, char *err, size_t err_len)
{
    *out = NULL;
    cpb_sim_opts defaults = {0};
    if (!o) o = &defaults;
    const cpb_model_spec *sp = cpb_model_spec_find(p->model);
    if (!sp) {
        snprintf(err, err_len, "--scope model needs a model preset with its layers, MLP and vocabulary "
                               "(llama3-8b, qwen3-32b, llama3-70b, llama2-7b, tiny); '%s' has none",
                 p->model[0] ? p->model : "(custom shape)");
        return CPB_ERR_INVALID;
    }
    cpb_gpu_profile prof;
    if (cpb_gpu_profile_get(o->gpu, &prof, err, err_len) != CPB_OK) return CPB_ERR_INVALID;
    if (o->calibration && o->calibration[0]) {
        int rc = cpb_gpu_profile_calibrate(&prof, o->calibration, err, err_len);
        if (rc != CPB_OK) return rc;
    }
    if (o->gpus_per_node > 0) prof.hw.gpus_per_node = o->gpus_per_node;
    cpb_model_estimate *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, err_len, "out of host memory");
        return CPB_ERR_NOMEM_HOST;
    }
    e->p = *p;
    e->spec = sp;
    e->m = m;
    snprintf(e->gpu, sizeof e->gpu, "%s", prof.name);
    e->capacity = o->mem_cap > 0 ? o->mem_cap : cpb_gpu_profile_usable(&prof);
    e->host_capacity = o->host_mem_cap > 0 ? o->host_mem_cap : cpb_gpu_profile_host_per_gpu(&prof);
    /* trace the attention layer without a capacity, so its full peak is known even when
     * the model does not fit; the capacity is checked on the model's total below */
    cpb_sim_opts so = *o;
    so.mem_cap = (int64_t)1 << 60;
    so.host_mem_cap = (int64_t)1 << 60;
    int rc = cpb_sim_layer(p, m, &so, &e->attn);
    if (rc != CPB_OK) {
        snprintf(err, err_len, "%s", e->attn.reason);
        free(e);
        return rc;
    }
    if (e->attn.code != CPB_OK) {
        e->status = e->attn.code;
        snprintf(e->reason, sizeof e->reason, "attention layer: %s", e->attn.reason);
        *out = e;
        return CPB_OK;
    }
    shape x = shape_of(p, sp);
    e->params = x.p_total;
    memory(e, &x);
    timing(e, &x, &prof.hw);
    const cpb_model_mem *pk = &e->moment[e->peak_moment];
    if (pk->total > e->capacity) {
        e->status = CPB_ERR_OOM;
        snprintf(e->reason, sizeof e->reason, "needs %.2f GiB per GPU at the %s peak, %.2f GiB usable",
                 pk->total / 1073741824.0, cpb_model_moment_name(e->peak_moment), e->capacity / 1073741824.0);
    } else if (e->host_bytes > e->host_capacity) {
        e->status = CPB_ERR_NOMEM_HOST;
        snprintf(e->reason, sizeof e->reason, "needs %.2f GiB of host memory per GPU for offloaded checkpoints%s, "
                 "%.2f GiB available", e->host_bytes / 1073741824.0,
                 e->attn.host_peak_bytes ? " and the method's host buffers" : "", e->host_capacity / 1073741824.0);
    }
    *out = e;
    return CPB_OK;
}

void cpb_model_estimate_free(cpb_model_estimate *e)
{
    free(e);
}
