/* model_scope_framework.c — the training setups the whole-model estimate can assume
 * (`--framework`): what the framework around the attention layer keeps in memory and
 * what it costs in time.  Each value names its source; docs/simulator.md collects them.
 *
 *   [TT]  the UPipe paper's TorchTitan setup, as published with it
 *         (github.com/togethercomputer/Untied-Ulysses: torchtitan/, exps/llama3_8b/ run scripts)
 *   [MDS] the paper's FPDT setup: Megatron-DeepSpeed with DeepSpeed 0.17.4 (the same
 *         repository, FPDT/Megatron-DeepSpeed/examples_deepspeed/sequence_parallel/
 *         run_single_8B.sh: --fp16, ZeRO stage 3, --checkpoint-activations
 *         --deepspeed-activation-checkpointing --checkpoint-in-cpu, FPDT_FFN and
 *         FPDT_LogitsLoss of megatron/patch/fpdt_layer.py)
 *   [FSDP2] torch.distributed.fsdp.fully_shard / MixedPrecisionPolicy documentation
 *   [DSC] DeepSpeed configuration documentation (zero_optimization defaults)
 *   [DSAC] deepspeed/runtime/activation_checkpointing/checkpointing.py (v0.17.4)
 *   [ZO]  DeepSpeed ZeRO-Offload tutorial (deepspeed.ai/tutorials/zero-offload) and the
 *         configuration documentation's zero_optimization.offload_optimizer / offload_param
 *   [ALST] DeepSpeed's Arctic Long Sequence Training tutorial
 *         (deepspeed.ai/tutorials/ulysses-alst-sequence-parallelism) and its paper,
 *         arXiv 2506.13996: Ulysses SP with ZeRO-3, CPU optimizer offload, TiledMLP,
 *         tiled fused logits+loss, activation checkpoint offload to the CPU
 *   [HFDS] Hugging Face Transformers' DeepSpeed guide (huggingface.co/docs/transformers/
 *         deepspeed: the ZeRO-3 template with offload_optimizer device cpu, "auto" bucket
 *         sizes) and TrainingArguments(gradient_checkpointing=True): torch.utils.checkpoint
 *         around each decoder layer, its input kept on the GPU; LlamaForCausalLM computes
 *         the whole [s, V] logits and upcasts them to fp32 for the cross-entropy
 *   [TTD] TorchTitan's documentation and JobConfig: parallelism.context_parallel_degree,
 *         activation_checkpoint.mode = none | selective | full, FSDP2 (fully_shard) with
 *         MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32); the loss is
 *         cross_entropy over the fp32 logits
 *   [MCDO] Megatron Core's distributed optimizer guide (docs.nvidia.com/megatron-core/
 *         developer-guide/latest/api-guide/dist_optimizer.html): bf16 parameters with fp32
 *         main gradients take 6 + 12/d bytes per parameter; fp32 main parameters for the step
 *   [MCR] Megatron Bridge / Megatron Core activation recomputation
 *         (recompute_granularity = selective, recompute_modules = [core_attn]): with a fused
 *         (flash / cuDNN) attention the core already keeps no score matrix, so selective
 *         recompute saves nothing more and repeats the attention core's forward
 *   [MCDDP] Megatron Core DistributedDataParallelConfig: gradient buckets of
 *         max(40M, 1M x dp) parameters, reduced once per step with overlap_grad_reduce
 *   [AOF8] torchao's float8 training (pytorch/ao torchao/float8/, the Float8Linear that
 *         TorchTitan's float8 converter swaps in; TorchTitan docs/performance.md @eaea6f6
 *         ran torchao eab345c): the default recipe scales tensorwise and dynamically
 *         (float8_linear.py, hp_tensor_to_float8_dynamic: an amax pass over the bf16 tensor,
 *         2 bytes read, then the scaled cast, 2 read and 1 written: 5 bytes per element) for
 *         the input and the weight in each forward and for the output gradient (e5m2) in the
 *         backward; torch._scaled_mm takes its first operand row-major and its second
 *         column-major, so float8_ops.py preprocess_addmm copies an fp8 operand in the other
 *         layout (a.contiguous() or b.t().contiguous().t(): 1 read, 1 written): the weight for
 *         dgrad (dy @ w), and dy^T and x for wgrad (dy^T @ x).  So fwd_x 5, fwd_w 5, bwd_x 2,
 *         bwd_dy 5 + 2, bwd_w 2 bytes per element [EST: counted as separate kernels, as
 *         written; torch.compile may fuse an amax with its cast's read] */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "model_scope.h"

static const cpb_framework frameworks[] = {
    {
        .name = "torchtitan",
        .summary = "TorchTitan FSDP2 (fp32 sharded params, bf16 compute), full activation checkpointing with "
                   "save_on_cpu offload, tiled MLP, fused linear cross-entropy (the UPipe paper's setup)",
        /* [FSDP2] fully_shard keeps the sharded parameters in their original dtype (fp32)
         * with MixedPrecisionPolicy(param_dtype=bf16): fp32 param 4 + fp32 grad 4 + Adam m,
         * v 4 + 4 = 16 bytes per parameter, divided by the FSDP degree */
        .state_bytes = 16.0,
        /* Adam (foreach, fp32): reads param, grad, m, v (16), writes param, m, v (12) */
        .optimizer_bytes = 28.0,
        /* [FSDP2] reduce_dtype fp32 ([TT] torchtitan's default mixed_precision_reduce) */
        .grad_reduce_bytes = 4,
        /* [FSDP2] unsharded gradients come out of autograd in param_dtype (bf16) */
        .grad_compute_bytes = 2,
        /* [FSDP2] implicit prefetching: the next layer's all-gather is issued one layer
         * ahead, forward and backward */
        .prefetch_layers = 1.0,
        .prefetch_params = 0,
        /* [FSDP2] the reduce-scatter of a layer's gradients runs on its own stream while
         * the next layer (in backward order) computes: one layer's fp32 reduce-scatter
         * input is in flight at that layer's attention backward */
        .rs_layers = 1.0,
        .rs_params = 0,
        /* [TT] first and last layer's input stay on the device (the offload hook skips
         * them); the other L-2 go to host memory through a save_on_cpu-style pack hook,
         * a copy on the compute stream (blocking it), both ways */
        .ckpt_device_layers = 2,
        .ckpt_blocking = 1,
        /* [PN] the paper's runs turn pinning off above 4M tokens: pageable copies
         * (run_all_8B.sh sets INP_PIN_MEMORY=False there; pinned, 5M's 5 GiB layer inputs
         * would each hold an 8 GiB block of PyTorch's caching host allocator [PT]) */
        .pin_max_tokens = (int64_t)4 << 20,
        /* [TT] TiledMLP (Arctic Long Sequence Training's, patch_torch_files/ulysses_sp.py):
         * tiles of D tokens; its backward recomputes each tile's forward: forward,
         * checkpoint recompute, tile recompute, backward (2x) = 5 forward-equivalents */
        .mlp_tile = CPB_MLP_TILE_HIDDEN,
        .mlp_passes = 5.0,
        .mlp_tile_buffers = 6,
        .mlp_fp32_grads = 0,
        /* [TT] TiledMLP runs autograd per tile: AccumulateGrad adds each tile's bf16 weight
         * gradient into .grad (the product written and read, .grad read and written) */
        .mlp_grad_acc_bytes = 8,
        .loss = CPB_LOSS_FUSED_LINEAR_CE,
        /* [TT] Liger's fused linear cross-entropy: torch.addmm(out=grad_weight, beta=1) per
         * chunk, the bf16 head gradient read and written in the GEMM's epilogue */
        .head_grad_acc_bytes = 4,
        .source = "github.com/togethercomputer/Untied-Ulysses torchtitan/ (FSDP2, TiledMLP, save_on_cpu "
                  "offload, Liger fused linear cross-entropy)",
        /* [FSDP2] fully_shard = ZeRO-3; the fp32 sharded parameters are the master, fp32
         * gradients, Adam on the GPU */
        .zero = 3, .opt_cpu = 0, .param_offload = 0, .master_bytes = 4, .grad_bytes = 4, .copy16 = 0,
        .ckpt = CPB_CKPT_FULL, .ckpt_offload = 1, .tiled_mlp = 1, .fused_loss = 1, .grad_sync_per_step = 0,
        /* the allocator replay of the loss (model_scope_loss_seq.c): non-fused, fused */
        .unfused_loss_code = CPB_LOSS_CODE_TORCHTITAN, .fused_loss_code = CPB_LOSS_CODE_LIGER,
        .parts_source = "[TT], [FSDP2]",
        /* [AOF8] --linear-dtype fp8 runs torchao Float8Linear, tensorwise dynamic scaling */
        .fp8 = {.fwd_x = 5, .fwd_w = 5, .bwd_x = 2, .bwd_dy = 7, .bwd_w = 2},
    },
    {
        .name = "deepspeed",
        .summary = "Megatron-DeepSpeed ZeRO-3 fp16, DeepSpeed activation checkpointing in CPU memory, FPDT_FFN "
                   "and FPDT_LogitsLoss (the UPipe paper's FPDT setup)",
        /* [MDS] --fp16 with ZeRO-3: fp16 param 2 + fp16 grad 2 + fp32 master param, Adam
         * m, v 12 = 16 bytes per parameter, partitioned over the data-parallel group */
        .state_bytes = 16.0,
        /* fused Adam on the fp32 master (16 read, 12 written) plus the fp16 copy (2 + 2) */
        .optimizer_bytes = 32.0,
        .grad_reduce_bytes = 2,
        .grad_compute_bytes = 2,
        /* [DSC] stage3_prefetch_bucket_size default 5e7 parameters gathered ahead */
        .prefetch_layers = 0,
        .prefetch_params = 5e7,
        /* [DSC] reduce_bucket_size default 5e8 elements: ZeRO-3's gradient bucket
         * (fp16) fills before its reduce-scatter */
        .rs_layers = 0,
        .rs_params = 5e8,
        /* [DSAC] checkpoint_in_cpu: every layer's input is copied with .to('cpu')
         * (pageable, synchronous) and back with .to(device) in the backward */
        .ckpt_device_layers = 0,
        .ckpt_blocking = 1,
        .pin_max_tokens = 0,
        /* [MDS] FPDT_FFN: chunks of (FPDT chunk / C / 2) tokens; forward w1 (gate|up, 2
         * GEMM units) and w2 (1); the checkpoint recompute repeats it (3); its backward
         * recomputes w1 (2), then grad_w2, grad_act (1 + 1), grad_w1 and grad_x (2 + 2):
         * 14 GEMM units = 14/3 forward-equivalents.  Working set of one chunk: z [T, 2F],
         * gate, up, sig, silu, activated, grad_act, silu', grad_gate, grad_up, grad_z
         * [T, 2F]: about 12 [T, F] buffers; fp32 grad_w1 and grad_w2 accumulators */
        .mlp_tile = CPB_MLP_TILE_FPDT,
        .mlp_passes = 14.0 / 3.0,
        .mlp_tile_buffers = 12,
        .mlp_fp32_grads = 1,
        /* [MDS] FPDT_FFN's backward: grad_w1.add_(matmul(...)), grad_w2.add_(...) per chunk:
         * the fp16 product written and read, the fp32 accumulator read and written */
        .mlp_grad_acc_bytes = 12,
        .loss = CPB_LOSS_FPDT_CHUNKED,
        /* [MDS] FPDT_LogitsLoss's backward: grad_logit_weights.add_(matmul(...)) per chunk
         * into an fp32 [V, D] accumulator, as FPDT_FFN's */
        .head_grad_acc_bytes = 12,
        .source = "github.com/togethercomputer/Untied-Ulysses FPDT/Megatron-DeepSpeed (ZeRO-3 fp16, "
                  "checkpoint-in-cpu, FPDT_FFN, FPDT_LogitsLoss); DeepSpeed 0.17.4",
        /* [MDS] ZeRO-3 with --fp16: 16-bit parameters and gradients, an fp32 master */
        .zero = 3, .opt_cpu = 0, .param_offload = 0, .master_bytes = 4, .grad_bytes = 2, .copy16 = 1,
        .ckpt = CPB_CKPT_FULL, .ckpt_offload = 1, .tiled_mlp = 1, .fused_loss = 1, .grad_sync_per_step = 0,
        /* the allocator replay of the loss (model_scope_loss_seq.c): non-fused, fused */
        .unfused_loss_code = CPB_LOSS_CODE_NONE, .fused_loss_code = CPB_LOSS_CODE_NONE,
        .parts_source = "[MDS], [DSC], [DSAC]", .half = "fp16",
    },
    {
        .name = "alst",
        .summary = "DeepSpeed Arctic Long Sequence Training: ZeRO-3 bf16 with the optimizer offloaded to the CPU, "
                   "TiledMLP, tiled fused logits and loss, checkpointed layer inputs offloaded to the CPU",
        /* [ALST] ZeRO-3 bf16: 16-bit parameters and gradients and an fp32 master; with
         * offload_optimizer the master, Adam m, v and an fp32 gradient partition are in host
         * memory and DeepSpeedCPUAdam steps there [ZO] */
        .state_bytes = 16.0,
        .optimizer_bytes = 32.0, /* used only when --optimizer gpu overrides the offload: as [MDS] */
        .grad_reduce_bytes = 2, .grad_compute_bytes = 2,
        /* [DSC] the ZeRO-3 defaults: a 5e7-parameter prefetch bucket, 5e8-element gradient bucket */
        .prefetch_layers = 0, .prefetch_params = 5e7, .rs_layers = 0, .rs_params = 5e8,
        /* [ALST] every layer's checkpointed input offloaded to the CPU: ArcticTraining's
         * CheckpointFunctionWithCPUOffload (arctic_training/monkey_patches.py, installed by
         * activation_checkpoint_cpu_offload) copies the layer's first input with
         * arg.detach().to("cpu") in the forward and .to(device) in the backward: synchronous
         * copies on the compute stream into pageable memory (malloc'd at its size, no
         * caching host allocator rounding) */
        .ckpt_device_layers = 0, .ckpt_blocking = 1, .pin_max_tokens = 0,
        /* [ALST] TiledMLP: tiles of about D tokens (ceil(s / D) shards), the tile's forward
         * recomputed in its backward: as [TT], whose TiledMLP is ALST's */
        .mlp_tile = CPB_MLP_TILE_HIDDEN, .mlp_passes = 5.0, .mlp_tile_buffers = 6, .mlp_fp32_grads = 0,
        .mlp_grad_acc_bytes = 8,
        /* [ALST] tiled fused logits + loss: chunks whose logits are about one [s, D] */
        .loss = CPB_LOSS_FUSED_LINEAR_CE, .head_grad_acc_bytes = 4,
        .source = "DeepSpeed ALST tutorial (deepspeed.ai/tutorials/ulysses-alst-sequence-parallelism); "
                  "arXiv 2506.13996",
        .zero = 3, .opt_cpu = 1, .param_offload = 0, .master_bytes = 4, .grad_bytes = 2, .copy16 = 1,
        .ckpt = CPB_CKPT_FULL, .ckpt_offload = 1, .tiled_mlp = 1, .fused_loss = 1, .grad_sync_per_step = 0,
        /* the allocator replay of the loss (model_scope_loss_seq.c): non-fused, fused */
        .unfused_loss_code = CPB_LOSS_CODE_ARCTIC, .fused_loss_code = CPB_LOSS_CODE_LIGER,
        .parts_source = "[ALST], [ZO], [DSC]",
    },
    {
        .name = "hf-zero3",
        .summary = "Hugging Face Trainer/Accelerate with DeepSpeed ZeRO-3 bf16, optimizer offloaded to the CPU, "
                   "gradient checkpointing with the layer inputs on the GPU, plain MLP and loss",
        .state_bytes = 16.0, .optimizer_bytes = 32.0,
        .grad_reduce_bytes = 2, .grad_compute_bytes = 2,
        /* [HFDS] the template's "auto" sizes: reduce_bucket_size = D^2,
         * stage3_prefetch_bucket_size = 0.9 D^2 (set per model: prefetch_params/rs_params
         * below are for D = 4096 and replaced from the model's D in model_scope.c) */
        .prefetch_layers = 0, .prefetch_params = -0.9, .rs_layers = 0, .rs_params = -1.0,
        .ckpt_device_layers = 0, .ckpt_blocking = 1, .pin_max_tokens = 0,
        /* plain SwiGLU MLP under autograd (the tile fields apply only with --tiled-mlp on) */
        .mlp_tile = CPB_MLP_TILE_HIDDEN, .mlp_passes = 5.0, .mlp_tile_buffers = 6, .mlp_fp32_grads = 0,
        .mlp_grad_acc_bytes = 8,
        .loss = CPB_LOSS_FUSED_LINEAR_CE, .head_grad_acc_bytes = 4,
        .source = "huggingface.co/docs/transformers/deepspeed (ZeRO-3 + offload_optimizer cpu template); "
                  "TrainingArguments.gradient_checkpointing",
        .zero = 3, .opt_cpu = 1, .param_offload = 0, .master_bytes = 4, .grad_bytes = 2, .copy16 = 1,
        .ckpt = CPB_CKPT_FULL, .ckpt_offload = 0, .tiled_mlp = 0, .fused_loss = 0, .grad_sync_per_step = 0,
        /* the allocator replay of the loss (model_scope_loss_seq.c): non-fused, fused */
        .unfused_loss_code = CPB_LOSS_CODE_HF, .fused_loss_code = CPB_LOSS_CODE_LIGER,
        .parts_source = "[HFDS], [ZO]",
    },
    {
        .name = "torchtitan-cp",
        .summary = "plain TorchTitan context parallel: FSDP2 (fp32 sharded params, bf16 compute), full activation "
                   "checkpointing with the layer inputs on the GPU, plain MLP and loss",
        .state_bytes = 16.0, .optimizer_bytes = 28.0,
        .grad_reduce_bytes = 4, .grad_compute_bytes = 2,
        .prefetch_layers = 1.0, .prefetch_params = 0, .rs_layers = 1.0, .rs_params = 0,
        .ckpt_device_layers = 0, .ckpt_blocking = 1, .pin_max_tokens = 0,
        .mlp_tile = CPB_MLP_TILE_HIDDEN, .mlp_passes = 5.0, .mlp_tile_buffers = 6, .mlp_fp32_grads = 0,
        .mlp_grad_acc_bytes = 8,
        .loss = CPB_LOSS_FUSED_LINEAR_CE, .head_grad_acc_bytes = 4,
        .source = "github.com/pytorch/torchtitan (context_parallel_degree, activation_checkpoint.mode = full, "
                  "FSDP2)",
        .zero = 3, .opt_cpu = 0, .param_offload = 0, .master_bytes = 4, .grad_bytes = 4, .copy16 = 0,
        .ckpt = CPB_CKPT_FULL, .ckpt_offload = 0, .tiled_mlp = 0, .fused_loss = 0, .grad_sync_per_step = 0,
        /* the allocator replay of the loss (model_scope_loss_seq.c): non-fused, fused */
        .unfused_loss_code = CPB_LOSS_CODE_TORCHTITAN, .fused_loss_code = CPB_LOSS_CODE_LIGER,
        .parts_source = "[TTD], [FSDP2]",
        /* [AOF8] --linear-dtype fp8 runs torchao Float8Linear, tensorwise dynamic scaling */
        .fp8 = {.fwd_x = 5, .fwd_w = 5, .bwd_x = 2, .bwd_dy = 7, .bwd_w = 2},
    },
    {
        .name = "megatron",
        .summary = "Megatron-LM / Megatron Core: distributed optimizer (bf16 params, fp32 main grads, sharded fp32 "
                   "master and Adam), selective recompute of the attention core, plain MLP, logits at once",
        /* [MCDO] 6 + 12/d bytes per parameter */
        .state_bytes = 18.0,
        /* Adam over the fp32 shard (16 read, 12 written) and the bf16 parameter written back (2) */
        .optimizer_bytes = 30.0,
        .grad_reduce_bytes = 4, .grad_compute_bytes = 2,
        /* parameters replicated: nothing gathered; [MCDDP] 4e7-parameter fp32 gradient buckets */
        .prefetch_layers = 0, .prefetch_params = 0, .rs_layers = 0, .rs_params = 4e7,
        .ckpt_device_layers = 0, .ckpt_blocking = 1, .pin_max_tokens = 0,
        .mlp_tile = CPB_MLP_TILE_HIDDEN, .mlp_passes = 5.0, .mlp_tile_buffers = 6, .mlp_fp32_grads = 0,
        .mlp_grad_acc_bytes = 8,
        .loss = CPB_LOSS_FUSED_LINEAR_CE, .head_grad_acc_bytes = 4,
        .source = "Megatron Core distributed optimizer and activation recomputation guides (docs.nvidia.com)",
        .zero = 1, .opt_cpu = 0, .param_offload = 0, .master_bytes = 4, .grad_bytes = 4, .copy16 = 1,
        .ckpt = CPB_CKPT_SELECTIVE, .ckpt_offload = 0, .tiled_mlp = 0, .fused_loss = 0, .grad_sync_per_step = 1,
        /* the allocator replay of the loss (model_scope_loss_seq.c): non-fused, fused */
        .unfused_loss_code = CPB_LOSS_CODE_NONE, .fused_loss_code = CPB_LOSS_CODE_NONE,
        .parts_source = "[MCDO], [MCR], [MCDDP]",
    },
};

#define NFRAMEWORKS ((int)(sizeof frameworks / sizeof frameworks[0]))

/* the choices name the presets above, torchtitan (the first) the default */
const cpb_knob cpb_model_scope_knobs[] = {
    {.name = "framework", .type = CPB_KNOB_CHOICE, .def = "torchtitan",
     .choices = "torchtitan|deepspeed|alst|hf-zero3|torchtitan-cp|megatron", .arg = "PRESET",
     .help = "training setup, a bundle of the parts below (torchtitan, deepspeed, alst, hf-zero3, torchtitan-cp, "
             "megatron; default torchtitan; `cpbench list` shows their parts)",
     .points = CPB_KNOB_MODEL_SCOPE_POINTS, .setup = 1},
    {NULL}};

const cpb_framework *cpb_framework_find(const char *name)
{
    if (!name || !name[0]) return &frameworks[0];
    for (int i = 0; i < NFRAMEWORKS; i++)
        if (strcmp(frameworks[i].name, name) == 0) return &frameworks[i];
    return NULL;
}

const char *cpb_framework_names(void)
{
    static char names[256];
    if (!names[0]) {
        size_t len = 0;
        for (int i = 0; i < NFRAMEWORKS; i++)
            len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", frameworks[i].name);
    }
    return names;
}

int cpb_framework_count(void)
{
    return NFRAMEWORKS;
}

const cpb_framework *cpb_framework_at(int i)
{
    return i >= 0 && i < NFRAMEWORKS ? &frameworks[i] : NULL;
}
