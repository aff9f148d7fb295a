/* model_scope.c — the whole-model estimate (model_scope.h).  Every assumption is stated
 * where it is used and collected in docs/simulator.md.  Nothing is fitted to the published
 * throughput or maximum-length tables. */
#include "model_scope.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_choice.h"
#include "flops_nemo.h"
#include "model_scope_tp_mlp.h"
#include "model_scope_pp.h"
#include "gpu_profiles.h"
#include "sim/timeline.h"

#define BF16 2
#define FP32 4

const char *cpb_model_moment_name(int moment)
{
    static const char *const n[CPB_MOMENT_COUNT] = {"attention backward", "MLP backward", "loss"};
    return moment >= 0 && moment < CPB_MOMENT_COUNT ? n[moment] : "?";
}

typedef struct shape {
    double S, s, C, D, H, G, d, F, V, L;
    double N, W; /* GPUs the states are sharded over; every GPU (C x replicas) */
    double m; /* MLP weight matrices: 3 gated (gate, up, down), 2 two-matrix (up, down) */
    double p_attn, p_mlp, p_norm, p_layer, p_embed, p_head, p_total;
    /* LoRA of rank r (0: none): the adapters' parameters; the trainable parameters (the
     * adapters with LoRA, else every parameter) of a layer, of its MLP and of the model */
    double r, l_attn, l_mlp;
    double t_layer, t_mlp, t_total;
    /* the pipeline rank the memory is of (model_scope_pp.h; without --pp the whole model):
     * live, the layers' saved activations it holds at its peak (its micro-batches in flight
     * x its layers); loss, 1 when the LM head and loss run on it */
    double live;
    int loss;
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
    x.m = cpb_model_mlp_matrices(sp);
    /* the parameter count by part (model_spec.c): projections, MLP matrices, norms and
     * the biases the model has */
    cpb_model_param_count c;
    cpb_model_params(p, sp, &c);
    x.p_attn = c.attn;
    x.p_mlp = c.mlp;
    x.p_norm = c.norm;
    x.p_layer = c.layer;
    x.p_embed = c.embed;
    x.p_head = c.head;
    x.p_total = c.total;
    x.r = c.lora_rank;
    x.l_attn = c.lora_attn;
    x.l_mlp = c.lora_mlp;
    x.t_layer = x.r > 0 ? c.lora_layer : c.layer;
    x.t_mlp = x.r > 0 ? c.lora_mlp : c.mlp;
    x.t_total = x.r > 0 ? c.lora_total : c.total;
    x.live = x.L;
    x.loss = 1;
    return x;
}

/* the smallest power of two >= n (n > 0) */
static int64_t pow2_ceil(int64_t n)
{
    int64_t b = 1;
    while (b < n) b <<= 1;
    return b;
}

static void sum(cpb_model_mem *m)
{
    m->total = m->states + m->gathered + m->comm + m->attn_fixed + m->attn_act + m->ckpt + m->residual + m->work +
               m->fixed;
}

cpb_model_buckets cpb_model_mem_buckets(const cpb_model_mem *m)
{
    cpb_model_buckets b;
    b.model = m->states;
    b.attn_act = m->attn_act;
    b.fixed = m->fixed;
    b.other = m->total - m->states - m->attn_act - m->fixed;
    return b;
}

/* tokens of one MLP tile (tok: the micro-batch's tokens on this GPU) */
static double mlp_tile(const cpb_framework *f, const shape *x, const cpb_problem *p, double tok)
{
    double T = x->D; /* TiledMLP: tiles of D tokens (Arctic Long Sequence Training's default) */
    if (f->mlp_tile == CPB_MLP_TILE_FPDT) {
        /* Megatron-DeepSpeed: fpdt_FFN_chunk_size = FPDT chunk / sequence-parallel size / 2 */
        double chunk = cpb_knob_int(p, "seq_chunk") > 0 ? (double)cpb_knob_int(p, "seq_chunk") : 65536.0;
        T = chunk / x->C / 2;
    }
    return tok < T ? tok : T;
}

/* tokens of one loss chunk */
static double loss_chunk(const cpb_framework *f, const shape *x, double tok)
{
    /* FPDT_LogitsLoss (gpt_model.py): s / (65536 / C / 32) chunks of the local sequence,
     * i.e. 65536 / C / 32 tokens each (256 on 8 GPUs) */
    if (f->loss == CPB_LOSS_FPDT_CHUNKED) return fmax(1.0, floor(65536.0 / x->C / 32));
    /* Liger's fused linear cross-entropy: chunks of c tokens with c*V ~ s*D */
    return fmax(1.0, ceil(tok * x->D / x->V));
}

/* a bucket size: elements, or (negative) a multiple of D^2 (Hugging Face's "auto" DeepSpeed
 * sizes: reduce_bucket_size = D^2, stage3_prefetch_bucket_size = 0.9 D^2) */
static double bucket(double v, const shape *x)
{
    return v < 0 ? -v * x->D * x->D : v;
}

/* parameters gathered ahead of the current layer, and gradient elements in flight in the
 * reduce-scatter buffer */
static double prefetch_params(const cpb_framework *f, const shape *x)
{
    return f->prefetch_layers * x->p_layer + bucket(f->prefetch_params, x);
}

static double rs_elems(const cpb_framework *f, const shape *x)
{
    /* with LoRA only the adapters have gradients: a bucket holds at most all of them */
    double b = bucket(f->rs_params, x);
    if (x->r > 0 && b > x->t_total) b = x->t_total;
    return f->rs_layers * x->t_layer + b;
}

/* the MLP's tile: tokens and [T, F] buffers of its backward (an untiled MLP under autograd:
 * the recomputed gate, up, silu(gate) and their product, and two [s, F] gradients in
 * flight: 6 [s, F] [EST]) */
static double mlp_tokens(const cpb_model_estimate *e, const shape *x, double tok)
{
    return e->setup.tiled_mlp ? mlp_tile(e->fw, x, &e->p, tok) : tok;
}

static int mlp_buffers(const cpb_model_estimate *e)
{
    return e->setup.tiled_mlp ? e->fw->mlp_tile_buffers : 6;
}

/* Memory per GPU at the three candidate peaks of a training step. */
static void memory(cpb_model_estimate *e, const shape *x)
{
    const cpb_framework *f = e->fw;
    const cpb_setup *su = &e->setup;
    const cpb_row *t = &e->attn;
    const double B = su->micro_batch;
    const double tok = x->s * B; /* tokens of one micro-batch on this GPU */
    const double sD = x->s * x->D * B;
    /* sharded states: the parts' bytes per parameter (model_scope_setup.c), sharded over
     * the C GPUs or replicated; those offloaded are in host memory */
    /* with LoRA a frozen base (weights only) and the adapters' full trainable state */
    double dev_states, host_states;
    cpb_setup_state_bytes(su, x->p_total, x->t_total, x->N, &dev_states, &host_states);
    int64_t states = (int64_t)dev_states;
    e->host_states = (int64_t)host_states;
    const int full = su->ckpt == CPB_CKPT_FULL, offload = full && su->ckpt_offload;
    /* The layer's own [s, D] buffers in the trace (trial.c allocates x, y, dy, dx in the
     * storage dtype).  In the model the attention output y is consumed by the residual add
     * h = r + y and freed at once, and dy is the residual gradient dh itself (h = r + y
     * gives dy = dh): so y is not live in a backward, and dy needs no buffer of its own. */
    const int64_t sdb = (int64_t)(x->s * x->D * (double)cpb_dtype_size(e->p.dtype));
    const int64_t trace_fixed = t->at_peak_bytes[CPB_TAG_WEIGHTS] + t->at_peak_bytes[CPB_TAG_GRADS];
    int64_t attn_fixed = trace_fixed;
    /* LoRA: the frozen projections have no weight gradients: the trace's gradients at its
     * peak are taken out, the adapters' weights and gradients put in (an estimate: the
     * trace's peak with its gradient buffers, less them) */
    if (x->r > 0)
        attn_fixed = t->at_peak_bytes[CPB_TAG_WEIGHTS] + (int64_t)(x->l_attn * (BF16 + f->grad_compute_bytes));
    /* the attention's saved state at the end of its forward, less y (freed after the
     * residual add) and dx (not yet produced; the trial allocates it up front); one trace
     * per sequence of the micro-batch */
    int64_t attn_saved = t->fwd.live_end - trace_fixed - 2 * sdb;
    if (attn_saved < 0) attn_saved = 0;
    attn_saved = (int64_t)(attn_saved * B);
    /* activation checkpointing.  full: each layer's input [s, D] bf16; the framework keeps
     * some on the device and offloads the rest to host memory (or keeps all without
     * offload).  none / selective: every layer keeps what its backward needs: the
     * attention's saved state (with a fused attention kernel, Megatron's selective
     * recompute of the attention core keeps nothing less [MCR]), the MLP's (its input; an
     * untiled one also its four [s, F] intermediates), and the two norms' inputs [EST] */
    double keep = attn_saved + sD * BF16 + (su->tiled_mlp ? 0 : (x->m == 3 ? 4 : 2) * tok * x->F * BF16) + 2 * sD * BF16;
    int64_t ckpt, ckpt_all;
    /* (under --pp the rank's layers x its micro-batches in flight: x->live) */
    const double live = x->live;
    if (full) ckpt = ckpt_all = (int64_t)((offload ? fmin(f->ckpt_device_layers, live) : live) * sD * BF16);
    else ckpt = (int64_t)((live - 1) * keep), ckpt_all = (int64_t)(live * keep);
    /* the framework's communication buffers: the gradients in flight to their
     * reduce-scatter (FSDP2: the previous layer's, in reduce_dtype; ZeRO-3: its bucket) */
    int64_t comm = (int64_t)(rs_elems(f, x) * f->grad_reduce_bytes);
    /* Megatron's buckets are views of its contiguous gradient buffer, already in the
     * states [MCDDP] */
    if (su->zero < 3 && f->grad_sync_per_step) comm = 0;
    /* the current layer's MLP and norm parameters and what is gathered ahead (compute
     * dtype; the attention weights are in the trace); below ZeRO-3 the parameters are
     * replicated in the states (an autocast copy of the layer without a 16-bit copy) */
    int64_t params = su->zero >= 3 ? (int64_t)(((x->p_mlp + x->p_norm + x->l_mlp) + prefetch_params(f, x)) * BF16)
                     : su->copy16_eff || x->r > 0 ? 0 : (int64_t)((x->p_mlp + x->p_norm) * BF16);
    /* unsharded MLP gradients held until the layer's reduce-scatter (FSDP2); ZeRO-3 moves
     * each gradient into its bucket as it is produced; below ZeRO-3 they are the states'
     * gradient buffer */
    int64_t mlp_grads = f->rs_params != 0 || su->zero < 3 ? 0 : (int64_t)(x->t_mlp * f->grad_compute_bytes);
    /* under --tp T a GPU gathers and holds 1/T of each matrix (cpb_setup_state_bytes) */
    if (su->tp > 1) params /= su->tp, mlp_grads /= su->tp;

    /* A: attention backward of a middle layer (after its recomputed forward and its MLP
     * backward) */
    cpb_model_mem *a = &e->moment[CPB_MOMENT_ATTN_BWD];
    a->states = states;
    a->gathered = params + mlp_grads;
    a->comm = comm;
    a->attn_fixed = attn_fixed;
    a->attn_act = (int64_t)((t->peak_bytes - trace_fixed - t->at_peak_bytes[CPB_TAG_Y]) * B);
    a->ckpt = ckpt;
    /* with offload: the layer's input r, fetched back from the host (its norm's backward
     * needs it), and the input of the next layer to process, prefetched while this one
     * runs; without, both are among the kept inputs */
    a->residual = offload ? (int64_t)(2 * sD * BF16) : 0;
    a->work = 0;
    a->fixed = e->fixed.total;
    sum(a);

    /* B: MLP backward of the same layer: the attention's saved state from the recomputed
     * forward is live, and one MLP tile's working set */
    cpb_model_mem *b = &e->moment[CPB_MOMENT_MLP_BWD];
    double T = mlp_tokens(e, x, tok);
    b->states = states;
    /* the same parameters; the MLP gradients being produced, or FPDT_FFN's fp32
     * accumulators of them */
    b->gathered = params + (su->tiled_mlp && f->mlp_fp32_grads ? (int64_t)(x->t_mlp * FP32) : mlp_grads);
    b->comm = comm;
    b->attn_fixed = attn_fixed;
    b->attn_act = attn_saved;
    b->ckpt = ckpt;
    /* r, h = r + y (its norm's backward needs it) and the prefetched next input (with
     * offload); h alone without; none with the layer's saved state kept */
    b->residual = offload ? (int64_t)(3 * sD * BF16) : full ? (int64_t)(sD * BF16) : 0;
    /* the framework's [T, F] buffers are a gated MLP's (gate, up, activation, product and
     * their gradients); a two-matrix MLP makes half as many [T, F] tensors (up, activation
     * and their gradients): half the buffers (an estimate) */
    b->work = (int64_t)(mlp_buffers(e) * (x->m == 3 ? 1.0 : 0.5) * T * x->F * BF16);
    b->fixed = e->fixed.total;
    sum(b);

    /* C: the loss.  The LM head gathered (compute dtype) with its gradient; the final
     * hidden state and its gradient [s, D]. */
    cpb_model_mem *c = &e->moment[CPB_MOMENT_LOSS];
    double head = x->p_head > 0 ? x->p_head : x->p_embed, cl = loss_chunk(f, x, tok);
    /* with LoRA the LM head is frozen: no gradient of it */
    const double head_grad = x->r > 0 ? 0 : head;
    c->states = states;
    c->comm = comm;
    c->attn_fixed = 0;
    c->attn_act = 0;
    c->ckpt = ckpt_all;
    c->residual = (int64_t)(2 * sD * BF16);
    if (!su->fused_loss) {
        /* the whole logits [s, V]: bf16 (returned with the output), their fp32 upcast's
         * log-softmax kept by cross_entropy, and in the backward its fp32 gradient and the
         * bf16 one: 12 bytes per logit at the peak [EST: LlamaForCausalLM, TorchTitan's loss] */
        c->gathered = (int64_t)(head * BF16 + head_grad * f->grad_compute_bytes);
        c->work = (int64_t)(12 * tok * x->V);
    } else if (f->loss == CPB_LOSS_FPDT_CHUNKED) {
        /* FPDT_LogitsLoss: an fp32 grad_logit_weights [V, D]; per chunk the fp32 logits,
         * softmax and its gradient; the per-chunk grad_lm_output list and its torch.cat
         * (two [s, D]) */
        c->gathered = (int64_t)(head * BF16 + head_grad * FP32);
        c->work = (int64_t)(3 * cl * x->V * FP32 + 2 * sD * BF16);
    } else {
        /* Liger's fused linear cross-entropy: fp32 logits and their gradient of one chunk */
        c->gathered = (int64_t)(head * BF16 + head_grad * f->grad_compute_bytes);
        c->work = (int64_t)(2 * cl * x->V * FP32);
    }
    c->fixed = e->fixed.total;
    sum(c);
    /* a pipeline rank without the LM head has no loss moment */
    if (!x->loss) memset(c, 0, sizeof *c);

    e->peak_moment = 0;
    for (int k = 1; k < CPB_MOMENT_COUNT; k++)
        if (e->moment[k].total > e->moment[e->peak_moment].total) e->peak_moment = k;
    /* The caching allocator's reserve (model_scope_loss_seq.c): the loss replayed on the
     * allocator within the room the rest of its moment leaves; the other moments are not
     * replayed (reserve 0: not modelled).  Reserved memory is monotone between releases, so
     * max_memory_reserved is the largest over the moments of what each holds; it never
     * enters the fit (the totals above). */
    memset(e->reserve, 0, sizeof e->reserve);
    cpb_loss_reserve_of(su, su->cp, tok, x->V, x->D, e->capacity - (c->total - c->work), &e->loss_reserve);
    e->reserve[CPB_MOMENT_LOSS] = e->loss_reserve.reserve;
    e->reserved_moment = 0;
    for (int k = 1; k < CPB_MOMENT_COUNT; k++)
        if (e->moment[k].total + e->reserve[k] > e->moment[e->reserved_moment].total + e->reserve[e->reserved_moment])
            e->reserved_moment = k;
    /* the CUDA context and NCCL's buffers are outside the caching allocator (cudaMalloc /
     * cuMem by the driver and by NCCL itself); the cuBLAS workspaces and the allocator
     * items of the fixed memory are blocks of it (docs/simulator.md) */
    const int64_t outside = e->fixed.cuda_ctx + e->fixed.nccl;
    e->peak_device = e->moment[e->reserved_moment].total + e->reserve[e->reserved_moment];
    e->peak_reserved = e->peak_device - outside;
    /* host: the offloaded checkpoints, what the method itself keeps on the host, and
     * FPDT_LogitsLoss's lm_output.to('cpu').  A pinned copy is a block of PyTorch's caching
     * host allocator, which rounds every request up to a power of two and keeps the block
     * (aten/src/ATen/core/CachingHostAllocator.h: PowerOf2Ceil) [PT]; a pageable one is
     * malloc'd at its size.  The method's own host buffers are traced at their sizes (for
     * DeepSpeed's FPDT at 64K-token chunks on Llama's shapes those are powers of two).
     * And the model states offloaded to the host (optimizer, parameters). */
    e->ckpt_pageable = f->pin_max_tokens <= 0 || e->p.S > f->pin_max_tokens;
    e->ckpt_host_block = e->ckpt_pageable ? (int64_t)(sD * BF16) : pow2_ceil((int64_t)(sD * BF16));
    e->host_bytes = (offload ? (int64_t)fmax(0, live - f->ckpt_device_layers) * e->ckpt_host_block : 0) +
                    (int64_t)(t->host_peak_bytes * B);
    if (su->fused_loss && f->loss == CPB_LOSS_FPDT_CHUNKED) e->host_bytes += (int64_t)(sD * BF16);
    e->host_bytes += e->host_states;
}

/* one GPU's host<->device bandwidth for a copy every GPU of the node makes at once:
 * pinned (the node's links shared) or pageable (staged by the CPU) */
static double host_copy_bw(const cpb_sim_hw *hw, const shape *x, int pageable)
{
    int gpn = hw->gpus_per_node > 0 ? hw->gpus_per_node : 8;
    double sharing = x->W < gpn ? x->W : gpn;
    double bw = hw->pcie_node_bw / sharing < hw->pcie_gpu_bw ? hw->pcie_node_bw / sharing : hw->pcie_gpu_bw;
    if (pageable && hw->pcie_pageable_bw > 0 && hw->pcie_pageable_bw < bw) bw = hw->pcie_pageable_bw;
    return bw;
}

/* One forward pass of the LoRA adapters (rank x->r) of a layer's attention projections
 * (attn = 1) or MLP matrices (attn = 0) over tok tokens, seconds: each adapter is two thin
 * GEMMs, 2 tok r (in + out) FLOPs, and (as PEFT's lora.Linear runs it: the adapter's
 * output added to the frozen layer's, result + B(A(x)) * scaling) reads its input [tok, in],
 * writes and reads [tok, r], writes [tok, out] and adds it into the output (read, read,
 * write): the larger of the GEMMs' time and that HBM traffic [EST: rank-r GEMMs are
 * memory bound, r FLOPs per byte of input]. */
static double lora_fwd_s(const shape *x, const cpb_sim_hw *hw, double tok, int attn)
{
    if (!(x->r > 0)) return 0;
    const double D = x->D, F = x->F, hd = x->H * x->d, gd = x->G * x->d;
    double io[4][2] = {{D, hd}, {D, gd}, {D, gd}, {hd, D}}, mlp[3][2] = {{D, F}, {D, F}, {F, D}};
    if (x->m == 2) mlp[1][0] = F, mlp[1][1] = D; /* two-matrix: up [D -> F], down [F -> D] */
    double (*mats)[2] = attn ? io : mlp;
    int n = attn ? 4 : (int)x->m;
    double t = 0;
    for (int i = 0; i < n; i++) {
        double in = mats[i][0], out = mats[i][1];
        double flops = 2 * tok * x->r * (in + out);
        double eff = cpb_sim_gemm_eff(hw, (int64_t)tok, (int64_t)x->r, (int64_t)in, 1);
        double bytes = BF16 * tok * (in + 2 * x->r + 4 * out);
        double tc = flops / (hw->peak_flops * eff), tm = bytes / hw->hbm_bw;
        t += tc > tm ? tc : tm;
    }
    return t;
}

/* Time per step on one GPU. */
static void timing(cpb_model_estimate *e, const shape *x, const cpb_gpu_profile *prof)
{
    const cpb_sim_hw *hw = &prof->hw;
    const cpb_framework *f = e->fw;
    const cpb_setup *su = &e->setup;
    const double B = su->micro_batch, K = su->grad_accum;
    const double tok = x->s * B;
    const double sD = x->s * x->D * B;
    const int full = su->ckpt == CPB_CKPT_FULL, offload = full && su->ckpt_offload;
    /* attention: the layer trial's forward and backward from the timing model, per
     * sequence of the micro-batch; with full checkpointing the forward runs twice (forward,
     * recompute before backward); selective recompute repeats the attention core's
     * forward: 2 S^2 H d / C causal FLOPs at the ceiling of --attn's implementation [EST] */
    e->attn_layer_s = (full ? 2 * e->attn.fwd_s : e->attn.fwd_s) + e->attn.bwd_s;
    if (su->ckpt == CPB_CKPT_SELECTIVE)
        e->attn_layer_s += 2 * x->S * x->S * x->H * x->d / x->C / (hw->peak_flops * cpb_attn_fwd_ceiling(&e->p, hw));
    e->attn_layer_s *= B;
    /* LoRA: the frozen projections' backward skips their weight-gradient GEMMs (the trial's
     * backward computes them: their FLOPs over the C GPUs, (2 S D (H + 2G) d + 2 S H d D) / C,
     * at the GEMM efficiency of a [D x s] by [s x (H + 2G) d] product taken out [EST]); the
     * adapters run in every forward pass and twice in the backward */
    e->lora_attn_s = 0;
    if (x->r > 0) {
        double dw = (2 * x->S * x->D * (x->H + 2 * x->G) * x->d + 2 * x->S * x->H * x->d * x->D) / x->C;
        double dw_eff = cpb_sim_gemm_eff(hw, (int64_t)x->D, (int64_t)((x->H + 2 * x->G) * x->d), (int64_t)x->s, 1);
        double saved = B * dw / (hw->peak_flops * dw_eff);
        e->lora_attn_s = ((full ? 2 : 1) + 2) * lora_fwd_s(x, hw, tok, 1) - saved;
        e->attn_layer_s += e->lora_attn_s;
    }
    /* MLP: m GEMMs of 2*s*D*F FLOPs (3 gated, 2 two-matrix) per forward-equivalent at the GEMM efficiency of one
     * tile (T x F x D); the framework's number of forward-equivalents (a tiled MLP's
     * backward recomputes each tile; an untiled one: forward, recompute, backward 2x);
     * one fewer without the checkpoint's recompute.  fp8: the profile's fp8 dense peak */
    double T = mlp_tokens(e, x, tok);
    double eff = cpb_sim_gemm_eff(hw, (int64_t)T, (int64_t)x->F, (int64_t)x->D, 1);
    double peak = su->fp8 ? prof->fp8_flops : hw->peak_flops;
    double mlp_fwd = x->m * 2 * tok * x->D * x->F / (peak * eff);
    /* each tile's backward adds its weight gradient into the layer's (the framework's
     * accumulator: bf16 .grad or fp32 buffers), HBM bound; an untiled MLP's GEMM writes it */
    e->mlp_acc_s = su->tiled_mlp ? ceil(tok / T) * f->mlp_grad_acc_bytes * x->m * x->D * x->F / hw->hbm_bw : 0;
    e->mlp_passes = (su->tiled_mlp ? f->mlp_passes : 4.0) - (full ? 0 : 1);
    /* LoRA: a frozen matrix's backward is its dX GEMM only, one forward-equivalent less
     * (the weight-gradient GEMMs: TiledMLP's and the untiled backward's 2x is 1x, FPDT_FFN's
     * 8 GEMM units 5), and no weight gradient to accumulate per tile; the adapters run in
     * each of the passes, their backward twice (dX and their own dA, dB) */
    double adapters = x->r > 0 ? e->mlp_passes * lora_fwd_s(x, hw, tok, 0) : 0;
    if (x->r > 0) e->mlp_passes -= 1, e->mlp_acc_s = 0;
    /* fp8: the linears' casts (model_scope_fp8.c), HBM bound, over the framework's fp8
     * library; its forward passes are the MLP's passes less the backward's two; per tile
     * the weight is cast again.  Not with LoRA (frozen weights: no weight-gradient GEMM,
     * whose operand copies the rule counts) [not modelled] */
    e->fp8_cast_s = 0;
    if (su->fp8 && !(x->r > 0)) {
        double tiles = su->tiled_mlp ? ceil(tok / T) : 1;
        e->fp8_cast_s = cpb_fp8_mlp_cast_bytes(&f->fp8, tok, x->D, x->F, (int)x->m, e->mlp_passes - 2, tiles) /
                        hw->hbm_bw;
    }
    e->mlp_layer_s = e->mlp_passes * mlp_fwd + e->mlp_acc_s + adapters + e->fp8_cast_s;
    /* two RMSNorms (read + write [s, D]) and two residual adds (two reads, one write) per
     * pass, HBM bound; passes: forward, recompute, backward counted twice */
    e->norm_layer_s = (full ? 4 : 3) * (2 * 2 + 2 * 3) * sD * BF16 / hw->hbm_bw;
    /* parameter traffic: FSDP2 all-gathers the bf16 layer for the forward and once more
     * for the recompute and backward (reshard after forward), then reduce-scatters the
     * gradients in reduce_dtype; ZeRO-3 gathers for the forward, the recompute and the
     * backward separately (it releases each module's parameters after use).  Bus bytes
     * (C-1)/C of the full size; network bandwidth when C spans nodes.  Below ZeRO-3 the
     * parameters are replicated: only the gradients' reduction (all-reduce without
     * sharding), per micro-batch in the layers, or once per step (grad_sync_per_step) */
    int gpn = hw->gpus_per_node > 0 ? hw->gpus_per_node : 8;
    double bw = x->N > gpn ? hw->inter_busbw : hw->coll_busbw;
    double lat = x->N > gpn ? hw->inter_lat : hw->coll_lat;
    double gathers = su->zero >= 3 ? (f->rs_params != 0 ? (full ? 3 : 2) : 2) : 0;
    double reduce = su->zero == 0 ? 2 : 1;
    double per_layer_reduce = su->zero >= 3 || !f->grad_sync_per_step ? reduce : 0;
    /* (with LoRA the frozen base is gathered as before; only the adapters' gradients are reduced) */
    double traffic = x->r > 0 ? gathers * BF16 * x->p_layer + per_layer_reduce * f->grad_reduce_bytes * x->t_layer
                              : (gathers * BF16 + per_layer_reduce * f->grad_reduce_bytes) * x->p_layer;
    e->fsdp_layer_s = x->N > 1 ? traffic * (x->N - 1) / x->N / bw + (gathers + per_layer_reduce) * lat : 0;
    /* parameter offload (or FSDP2's CPU offload, where the parameters are the master): each
     * gather first copies this GPU's shard from host memory */
    if (su->param_offload || (su->opt_cpu && !su->copy16_eff)) e->fsdp_layer_s += gathers * BF16 * x->p_layer / x->N / host_copy_bw(hw, x, 0);
    /* checkpoint offload: [s, D] bf16 to the host in the forward and back in the backward
     * for every offloaded layer, while every GPU of the node does the same; pageable above
     * the framework's pinning limit */
    double offloaded = offload ? (x->L - f->ckpt_device_layers) / x->L : 0;
    e->ckpt_layer_s = offloaded > 0 ? offloaded * 2 * sD * BF16 / host_copy_bw(hw, x, e->ckpt_pageable) : 0;
    /* The checkpoint copies of save_on_cpu / DeepSpeed's checkpoint_in_cpu run on the
     * compute stream: they add to the layer's compute.  Parameter traffic has its own
     * streams and overlaps (contention with the method's own all-to-all not modelled). */
    /* --tp: the MLP's sequence-parallel all-gathers and reduce-scatters, on the compute
     * stream's path (no --tp-comm-overlap: model_scope_tp_mlp.h); the attention layer's own
     * are in its trial */
    e->tp_mlp_comm_s = cpb_tp_mlp_comm_s(hw, su->tp, tok, x->D, full);
    double compute = e->attn_layer_s + e->mlp_layer_s + e->norm_layer_s + e->tp_mlp_comm_s;
    if (f->ckpt_blocking) compute += e->ckpt_layer_s;
    e->layer_s = compute;
    if (e->fsdp_layer_s > e->layer_s) e->layer_s = e->fsdp_layer_s;
    if (!f->ckpt_blocking && e->ckpt_layer_s > e->layer_s) e->layer_s = e->ckpt_layer_s;
    /* LM head: forward 2*s*D*V, backward (dX and dW) twice that, in chunks of the loss (the
     * whole micro-batch at once without a fused loss) */
    double chunk = su->fused_loss ? loss_chunk(f, x, tok) : tok;
    double head_eff = cpb_sim_gemm_eff(hw, (int64_t)chunk, (int64_t)x->V, (int64_t)x->D, 1);
    double head_flops = (x->r > 0 ? 2 : 3) * 2 * tok * x->D * x->V; /* LoRA: a frozen head's backward is dX only */
    if (su->fused_loss && f->loss == CPB_LOSS_FPDT_CHUNKED) head_flops += 2 * tok * x->D * x->V; /* its backward recomputes the logits */
    e->head_s = head_flops / (hw->peak_flops * head_eff);
    /* the loss's element-wise passes over the fp32 logits [s, V]: Liger's fused kernel
     * writes them and reads and rewrites them as the gradient (12 bytes per logit);
     * FPDT_LogitsLoss runs .float(), softmax, log and nll forward and recomputes the
     * softmax, subtracts, scales and casts backward (~54 bytes per logit), and copies the
     * final hidden state to the host (pageable .to('cpu')) and back chunk by chunk; the
     * whole logits: the upcast (2 + 4), log-softmax (4 + 4), its backward (4 + 4) and the
     * cast back (4 + 2): 28 bytes per logit [EST] */
    if (!su->fused_loss)
        e->loss_s = 28 * tok * x->V / hw->hbm_bw;
    else if (f->loss == CPB_LOSS_FPDT_CHUNKED)
        e->loss_s = 54 * tok * x->V / hw->hbm_bw + 2 * sD * BF16 / host_copy_bw(hw, x, 1);
    else
        e->loss_s = 12 * tok * x->V / hw->hbm_bw;
    /* and each chunk adds its head-gradient product into the [V, D] accumulator */
    if (su->fused_loss && !(x->r > 0)) e->loss_s += ceil(tok / chunk) * f->head_grad_acc_bytes * x->V * x->D / hw->hbm_bw;
    /* the optimizer over this GPU's shard (the whole model below ZeRO-1), HBM bound on the
     * GPU; on the CPU (offload): Adam's pass over the fp32 master, gradient, m and v in
     * host memory (28 bytes per parameter, and the 16-bit copy written: 2) while every GPU
     * of the node steps its own shard, over the node's host memory bandwidth, plus the
     * PCIe copies: the 16-bit gradients down and the updated 16-bit parameters back up
     * [ZO]; counted after the backward, not overlapped with it [EST] */
    /* (with LoRA the trainable parameters are the adapters) */
    double shard = su->zero >= 1 ? x->t_total / x->N : x->t_total;
    double opt_gpu = su->zero >= 1 ? f->optimizer_bytes * x->t_total / x->N / hw->hbm_bw
                                   : f->optimizer_bytes * x->t_total / hw->hbm_bw;
    e->opt_host_s = e->opt_pcie_s = 0;
    if (su->opt_cpu) {
        double sharing = x->W < gpn ? x->W : gpn;
        e->opt_host_s = (28 + (su->copy16_eff ? 2 : 0)) * shard * sharing / prof->host_mem_bw;
        e->opt_pcie_s = (su->grad_bytes + BF16) * shard / host_copy_bw(hw, x, 0);
        e->optimizer_s = e->opt_host_s + e->opt_pcie_s;
    } else {
        e->optimizer_s = opt_gpu;
    }
    /* per step, ZeRO 1-2: the updated 16-bit parameters all-gathered; and the gradients
     * reduced once per step where the framework does so */
    /* Under --tp T a GPU holds 1/T of each matrix (as its states: cpb_setup_state_bytes), so
     * it reduces and gathers 1/T of the parameters, over the N/T GPUs that hold the same
     * slice (Megatron's data-parallel group of a TP rank, megatron/core/parallel_state.py)
     * [MCDO]; the norms, replicated across TP, are counted as sliced too (a 1e-4 part) */
    const double tpd = su->tp > 1 ? su->tp : 1, t_gpu = x->t_total / tpd, n_dp = x->N / tpd;
    e->step_comm_s = 0;
    if (n_dp > 1 && su->zero < 3) {
        if (su->zero >= 1) e->step_comm_s += BF16 * t_gpu * (n_dp - 1) / n_dp / bw + lat;
        if (f->grad_sync_per_step)
            e->step_comm_s += reduce * f->grad_reduce_bytes * t_gpu * (n_dp - 1) / n_dp / bw + lat;
    }
    /* HSDP: each replica's gradient shard all-reduced across the replicas (2 (R-1)/R of it
     * on the bus), over the network when the world spans nodes; per micro-batch unless the
     * framework reduces once per step */
    if (su->hsdp && su->dp > 1) {
        /* (the replicas of one pipeline stage: its C x dp GPUs; x->W counts every stage) */
        const double stage_w = x->C * su->dp;
        double R = su->dp, wbw = stage_w > gpn ? hw->inter_busbw : hw->coll_busbw,
               wlat = stage_w > gpn ? hw->inter_lat : hw->coll_lat;
        double ar = 2 * f->grad_reduce_bytes * x->t_total / x->N * (R - 1) / R / wbw + wlat;
        e->step_comm_s += (f->grad_sync_per_step ? 1 : K) * ar;
    }
    /* a micro-batch: every layer, the head and the loss; the step: K micro-batches, the
     * optimizer and what is paid once per step */
    e->micro_s = x->L * e->layer_s + e->head_s + e->loss_s;
    e->step_s = K * e->micro_s + e->optimizer_s + e->step_comm_s;
    /* model FLOPs without the recomputation, under both conventions of results/README.md
     * (causal: per layer the attention layer's FLOPs of DESIGN section 6 plus the MLP's
     * 3 x (m x 2 S D F), plus the head's 3 x 2 S D V; megatron: Megatron-LM's count); per
     * sequence, B x K sequences per step */
    cpb_model_flops(&e->p, e->spec, &e->model_flops, &e->model_flops_megatron);
    e->model_flops_nemo = cpb_model_nemo_flops(&e->p, e->spec) * B * K;
    e->model_flops *= B * K;
    e->model_flops_megatron *= B * K;
}

/* the shape of pipeline rank k: its layers, its parameters (its layers'; the first's the
 * embedding, the last's the LM head and final norm: with tied embeddings Megatron keeps a
 * copy of the word embeddings on the last stage as its output layer,
 * megatron/core/models/common/language_module: setup_embeddings_and_output_layer), the
 * trainable ones, and the layers' activations it holds at its peak */
static shape pp_rank_shape(const shape *x, const cpb_pp_rank *k)
{
    shape y = *x;
    const double final_norm = x->p_total - x->L * x->p_layer - x->p_embed - x->p_head;
    y.L = k->layers;
    y.live = k->live_layers;
    y.loss = k->last;
    y.p_total = k->layers * x->p_layer + (k->first ? x->p_embed : 0) +
                (k->last ? (x->p_head > 0 ? x->p_head : x->p_embed) + final_norm : 0);
    /* with LoRA the adapters of its layers (the head excluded, as without PP) */
    y.t_total = x->r > 0 ? k->layers * x->t_layer : y.p_total;
    return y;
}

/* --pp: memory is the worst rank's (each rank's moments with its layers, parameters and
 * micro-batches in flight: the first holds the most in flight under 1F1B, the last the LM
 * head and the loss); time is the pipeline's (cpb_pp_step): the per-layer times as without
 * PP, the optimizer and the per-step collectives over the largest rank's parameters */
static void pp_estimate(cpb_model_estimate *e, const shape *x, const cpb_gpu_profile *prof)
{
    cpb_pp_plan *pl = &e->pp;
    cpb_model_mem worst[CPB_MOMENT_COUNT];
    int worst_moment = 0;
    int64_t worst_host = 0, worst_host_states = 0, worst_block = 0;
    int worst_pageable = 0;
    double t_max = 0;
    for (int r = 0; r < pl->pp; r++) {
        cpb_pp_rank k;
        cpb_pp_rank_of(pl, r, &k);
        shape y = pp_rank_shape(x, &k);
        if (y.t_total > t_max) t_max = y.t_total;
        memory(e, &y);
        if (r == 0 || e->moment[e->peak_moment].total > worst[worst_moment].total) {
            memcpy(worst, e->moment, sizeof worst);
            worst_moment = e->peak_moment;
            worst_host = e->host_bytes;
            worst_host_states = e->host_states;
            worst_block = e->ckpt_host_block;
            worst_pageable = e->ckpt_pageable;
            e->pp_worst_rank = r;
            e->pp_worst = k;
        }
    }
    memcpy(e->moment, worst, sizeof worst);
    e->peak_moment = worst_moment;
    e->host_bytes = worst_host;
    e->host_states = worst_host_states;
    e->ckpt_host_block = worst_block;
    e->ckpt_pageable = worst_pageable;
    /* per-layer, head, loss and optimizer times as without PP; the optimizer and the per-step
     * gradient reduction over the largest rank's trainable parameters (the ranks step at
     * once: the slowest bounds the step) */
    shape t = *x;
    t.t_total = t_max;
    t.p_total = t_max;
    timing(e, &t, prof);
    /* the pipeline: m micro-batches through pp stages, each message [s/(cp tp), B, D] in
     * the 16-bit dtype (Megatron's get_tensor_shapes with sequence parallelism) between
     * neighbour stages tp x cp x dp ranks apart */
    const double msg = x->s * e->setup.micro_batch * x->D * BF16;
    cpb_pp_step(pl, e->layer_s, e->head_s + e->loss_s, msg, &prof->hw, (int)(x->C * e->setup.dp));
    e->micro_s = pl->t_max;
    e->step_s = pl->pipe_s + e->optimizer_s + e->step_comm_s;
}

int cpb_model_estimate_new(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o,
                           cpb_model_estimate **out, char *err, size_t err_len)
{
    *out = NULL;
    cpb_sim_opts defaults = {0};
    if (!o) o = &defaults;
    const cpb_model_spec *sp = cpb_model_spec_find(p->model);
    if (!sp) {
        snprintf(err, err_len, "--scope model needs a model with its layers, MLP and vocabulary: a preset "
                               "(llama3-8b, qwen3-32b, llama3-70b, llama2-7b, tiny) or --model-config FILE; '%s' has none",
                 p->model[0] ? p->model : "(custom shape)");
        return CPB_ERR_INVALID;
    }
    cpb_setup setup;
    CPB_TRY(cpb_setup_of(p, &setup, err, err_len));
    const cpb_framework *fw = setup.fw;
    /* the pipeline's stages (model_scope_pp.c): refused before anything runs when the
     * layers do not split as asked */
    cpb_pp_plan pl;
    CPB_TRY(cpb_pp_plan_of(p, sp->layers, setup.grad_accum, &pl, err, err_len));
    cpb_gpu_profile prof;
    int prc = cpb_sim_profile(o, p, &prof, err, err_len);
    if (prc != CPB_OK) return prc;
    if (setup.fp8 && !(prof.fp8_flops > 0)) {
        snprintf(err, err_len, "--linear-dtype fp8: the %s profile has no fp8 tensor-core rate", prof.name);
        return CPB_ERR_INVALID;
    }
    cpb_model_estimate *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, err_len, "out of host memory");
        return CPB_ERR_NOMEM_HOST;
    }
    e->p = *p;
    e->spec = sp;
    e->fw = fw;
    e->setup = setup;
    e->m = m;
    snprintf(e->gpu, sizeof e->gpu, "%s", prof.name);
    /* the device's memory: the fixed per-GPU memory is a bucket of the peak (cpb_fixed_mem),
     * not a reserve subtracted here */
    e->capacity = o->mem_cap > 0 ? o->mem_cap : prof.mem_bytes;
    /* the node's host memory over the job's processes on it (model_scope_host_share.c) */
    e->pp = pl;
    e->host_capacity = o->host_mem_cap > 0 ? o->host_mem_cap
                                           : cpb_host_per_used_gpu(&prof, (int64_t)p->C * (setup.dp > 0 ? setup.dp : 1) * pl.pp);
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
    /* the layout: the context-parallel group of C GPUs, replicated dp times; the states
     * sharded over every GPU or within a replica (HSDP) */
    /* (--pp: each stage is such a layout of C x dp GPUs, the states of its layers sharded
     * over its data-parallel group: model_scope_pp.h) */
    x.W = x.C * setup.dp;
    x.N = setup.hsdp ? x.C : x.W;
    e->params = x.p_total;
    cpb_fixed_mem_of(&prof, p, m->name, x.W, x.N, setup.dp, e->attn.nstreams, &e->fixed);
    cpb_pp_fixed_mem(&e->fixed, pl.pp);
    x.W *= pl.pp;
    if (pl.pp == 1) {
        memory(e, &x);
        timing(e, &x, &prof);
    } else {
        pp_estimate(e, &x, &prof);
    }
    const cpb_model_mem *pk = &e->moment[e->peak_moment];
    /* the reason names what bounds the run: device memory or host memory */
    if (pk->total > e->capacity) {
        e->status = CPB_ERR_OOM;
        snprintf(e->reason, sizeof e->reason, "device memory: needs %.2f GiB per GPU at the %s peak, %.2f GiB usable",
                 pk->total / 1073741824.0, cpb_model_moment_name(e->peak_moment), e->capacity / 1073741824.0);
    } else if (e->host_bytes > e->host_capacity) {
        e->status = CPB_ERR_NOMEM_HOST;
        char states[96] = "";
        if (e->host_states > 0)
            snprintf(states, sizeof states, " and the offloaded model states (%.2f GiB)", e->host_states / 1073741824.0);
        snprintf(e->reason, sizeof e->reason, "host memory: needs %.2f GiB per GPU for offloaded checkpoints%s%s, "
                 "%.2f GiB available (node host memory / the job's GPUs on the node; --host-ram)%s", e->host_bytes / 1073741824.0,
                 e->attn.host_peak_bytes ? " and the method's host buffers" : "", states, e->host_capacity / 1073741824.0,
                 e->ckpt_pageable ? "" : "; pinned checkpoint copies are rounded up to powers of two by PyTorch's "
                                         "caching host allocator");
    }
    *out = e;
    return CPB_OK;
}

void cpb_model_estimate_free(cpb_model_estimate *e)
{
    free(e);
}
