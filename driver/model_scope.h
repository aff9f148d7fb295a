/* model_scope.h — `--scope model`: a first-principles estimate of training the whole model
 * with one context-parallel method for its attention layers (docs/simulator.md lists every
 * assumption; model_scope.c states each in place).
 *
 * Everything around the attention layer follows a training setup: a set of parts (cpb_setup,
 * model_scope_setup.c: sharding, optimizer and parameter offload, master and gradient dtypes,
 * checkpointing and its offload, tiled MLP, fused loss, fp8 MLP, micro-batch, accumulation,
 * replicas and their shard group), each a knob, bundled by a `--framework` preset
 * (cpb_framework: TorchTitan FSDP2 by default, Megatron-DeepSpeed ZeRO-3, ALST, HF ZeRO-3,
 * plain TorchTitan CP, Megatron) and overridden part by part on the command line.  Memory per
 * GPU: the sharded model states, the gathered layer(s) and gradient buffers, the
 * reduce-scatter buffer in flight, the checkpointed layer inputs kept on the device, the
 * residual-stream buffers, the MLP tile and the loss chunk, plus the attention layer's
 * traced peak for the method (cpb_sim_layer); reported in the paper's three buckets.  Time
 * per step: per layer a forward, a recomputed forward and a backward of attention (timing
 * model) and of the MLP (FLOPs), checkpoint copies on the compute stream, parameter
 * traffic overlapped, the LM head, the loss and the optimizer step. */
#ifndef CPB_MODEL_SCOPE_H
#define CPB_MODEL_SCOPE_H

#include <stdio.h>

#include "model_scope_pp.h"
#include "row.h"
#include "sim_layer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* what the model adds to the attention shape of its preset (or of its --model-config).
 * The fields after `source` describe the layer's make-up; all zero is a Llama-style layer
 * (the presets): a gated MLP, no biases, two RMSNorms per layer. */
typedef struct cpb_model_spec {
    const char *name;   /* preset name */
    int layers;
    int64_t ffn;        /* MLP intermediate size */
    int64_t vocab;
    int tied;           /* 1: the LM head shares the embedding matrix */
    const char *source;
    int two_matrix;     /* 1: a two-matrix MLP (up, activation, down: GPT-NeoX, Phi); 0: gated
                           (gate, up, down: SwiGLU, GeGLU) */
    const char *act;    /* the MLP's activation (hidden_act); NULL: silu */
    int qkv_bias, o_bias, mlp_bias, head_bias; /* 1: those linear layers have biases */
    int norm_bias;      /* 1: LayerNorm (weight and bias); 0: RMSNorm (weight) */
    int norms;          /* norms per layer; 0: 2 (Phi's parallel block has 1) */
    int qk_norm;        /* 1: a norm of q and of k per head (Qwen3: 2 x head_dim weights) */
    const char *model_type; /* the config.json's model_type ("" or NULL: a preset, or none given) */
    const char *config_text; /* the config.json's whole text (NULL for a preset) */
} cpb_model_spec;

/* the spec of preset `name` or of a registered --model-config (model_config.h), NULL when
 * there is none */
const cpb_model_spec *cpb_model_spec_find(const char *name);

/* The parameter count of the model (p: its attention shape D, H, G, d), by part. */
typedef struct cpb_model_param_count {
    double attn;    /* one layer's q, k, v, o projections and their biases */
    double mlp;     /* one layer's MLP matrices and their biases */
    double norm;    /* one layer's norms (and q/k norms) */
    double layer;   /* attn + mlp + norm */
    double embed;   /* the input embedding [V, D] */
    double head;    /* the LM head [V, D] when untied, and its bias */
    double final_norm;
    double total;   /* layers x layer + embed + head + final_norm */
    /* LoRA adapters of rank r (the problem's --lora-rank; all zero without): an adapter on
     * a linear layer [in -> out] is A [in, r] and B [r, out], r (in + out) parameters, on
     * every attention projection (q, k, v, o) and MLP matrix (PEFT's target_modules =
     * "all-linear", the LM head excluded) */
    int lora_rank;
    double lora_attn;   /* one layer's adapters on q, k, v, o */
    double lora_mlp;    /* one layer's adapters on the MLP matrices */
    double lora_layer;  /* lora_attn + lora_mlp */
    double lora_total;  /* layers x lora_layer: the trainable parameters under LoRA */
} cpb_model_param_count;
void cpb_model_params(const cpb_problem *p, const cpb_model_spec *sp, cpb_model_param_count *out);
/* weight matrices of the MLP: 3 (gated) or 2 */
int cpb_model_mlp_matrices(const cpb_model_spec *sp);
/* Model FLOPs of one training step on one sequence of p->S tokens, without recomputation,
 * under the two conventions of results/README.md: `causal` (cpbench's: each layer's
 * cpb_layer_model_flops, the MLP's GEMMs forward and twice backward, the LM head's) and
 * `megatron` (Megatron-LM's num_floating_point_operations: 6 x the matrices' parameters x
 * tokens, the LM head's included, + 6 S^2 H d per layer for the causal attention core).
 * With LoRA (p's lora_rank knob > 0) `causal` counts what the step computes: a frozen
 * linear layer's backward is its dX GEMM only (once its forward, not twice), plus the
 * adapters' GEMMs forward and twice backward; `megatron` keeps its formula (it credits the
 * weight-gradient GEMMs a frozen base skips: results/README.md). */
void cpb_model_flops(const cpb_problem *p, const cpb_model_spec *sp, double *causal, double *megatron);
/* One line for the output's header: "gated MLP (gate, up, down; silu), embeddings untied,
 * no biases, RMSNorm x2 per layer" */
void cpb_model_spec_describe(const cpb_model_spec *sp, char *buf, size_t len);
/* the row's model columns (model_layers ... model_norm) from the spec of p->model; zeros
 * when it has none (a custom shape) */
void cpb_model_spec_row(const cpb_problem *p, cpb_row *r);

/* How the MLP is tiled over the sequence, and which loss implementation runs. */
enum { CPB_MLP_TILE_HIDDEN = 0, /* tiles of D tokens (TiledMLP) */
       CPB_MLP_TILE_FPDT };     /* tiles of FPDT chunk / C / 2 tokens (FPDT_FFN) */
enum { CPB_LOSS_FUSED_LINEAR_CE = 0, /* Liger: chunks of c tokens with c*V ~ s*D */
       CPB_LOSS_FPDT_CHUNKED };     /* FPDT_LogitsLoss: chunks of 256 tokens, fp32 logits */
/* Whose loss code runs, event by event, for the caching allocator's replay of the loss
 * (model_scope_loss_seq.c cites each); NONE: not replayed, the reserve not modelled. */
enum { CPB_LOSS_CODE_NONE = 0,
       CPB_LOSS_CODE_HF,          /* transformers ForCausalLMLoss: logits.float(), cross_entropy */
       CPB_LOSS_CODE_TORCHTITAN,  /* TorchTitan's loss_fn (pred.flatten(0, 1).float()) and del pred */
       CPB_LOSS_CODE_ARCTIC,      /* ArcticTraining SFTTrainer.loss: ForCausalLMLoss at SP 1, else not replayed */
       CPB_LOSS_CODE_LIGER };     /* Liger's fused_linear_cross_entropy_forward chunk loop */
const char *cpb_loss_code_name(int code);

/* fp8 linear layers' casts (model_scope_fp8.c): HBM bytes per element of a linear's input
 * x [T, K], weight w [K, N] and output gradient dy [T, N]; all zero where the framework's fp8
 * library is not modelled (then the casts are not counted: named in the docs). */
typedef struct cpb_fp8_casts {
    double fwd_x, fwd_w;         /* per forward pass (forward, recompute) */
    double bwd_x, bwd_dy, bwd_w; /* in the backward */
} cpb_fp8_casts;

double cpb_fp8_linear_cast_bytes(const cpb_fp8_casts *c, double T, double K, double N, double fwd_passes,
                                 double calls);
double cpb_fp8_mlp_cast_bytes(const cpb_fp8_casts *c, double T, double D, double F, int matrices,
                              double fwd_passes, double calls);

/* The training setup around the attention layer (`--framework`; model_scope_framework.c
 * gives every value its source). */
typedef struct cpb_framework {
    const char *name, *summary, *source;
    double state_bytes;      /* sharded model states per parameter */
    double optimizer_bytes;  /* bytes the optimizer step reads and writes per parameter */
    int grad_reduce_bytes;   /* dtype of the gradient reduce-scatter */
    int grad_compute_bytes;  /* dtype autograd produces unsharded gradients in */
    double prefetch_layers;  /* layers gathered ahead of the current one ... */
    double prefetch_params;  /* ... or parameters gathered ahead (a bucket) */
    double rs_layers;        /* layers' gradients in flight in the reduce-scatter buffer ... */
    double rs_params;        /* ... or elements of a gradient bucket */
    int ckpt_device_layers;  /* checkpointed layer inputs kept on the device */
    int ckpt_blocking;       /* checkpoint copies run on the compute stream */
    int64_t pin_max_tokens;  /* checkpoint copies pinned up to this length (0: pageable) */
    int mlp_tile;            /* CPB_MLP_TILE_* */
    double mlp_passes;       /* MLP forward-equivalents per step (3 GEMMs each) */
    int mlp_tile_buffers;    /* [T, F] storage-dtype buffers of one tile's backward */
    int mlp_fp32_grads;      /* 1: fp32 accumulators of the MLP weight gradients */
    int mlp_grad_acc_bytes;  /* HBM bytes per MLP weight element per tile to add the tile's weight gradient */
    int loss;                /* CPB_LOSS_* */
    int unfused_loss_code;   /* CPB_LOSS_CODE_*: the loss code without a fused loss (the allocator replay) */
    int fused_loss_code;     /* CPB_LOSS_CODE_*: the fused loss's code */
    int head_grad_acc_bytes; /* HBM bytes per LM-head element per loss chunk to add its gradient */
    /* ---- the preset's parts (model_scope_setup.c: each a knob the command line overrides) */
    int zero;                /* sharding stage of the model states: 0 none (DDP), 1 optimizer states, 2 + gradients,
                                3 + parameters (ZeRO-3, FSDP full shard) */
    int opt_cpu;             /* 1: optimizer states (fp32 master, Adam m, v) and step on the CPU */
    int param_offload;       /* 1: the sharded 16-bit parameters live in host memory */
    int master_bytes;        /* dtype of the weights the optimizer updates (4: fp32) */
    int grad_bytes;          /* dtype of the stored (accumulated) gradients */
    int copy16;              /* 1: a separate 16-bit compute copy of the parameters beside an fp32 master (DeepSpeed,
                                Megatron); 0: the stored parameters are the master (FSDP2) */
    int ckpt;                /* CPB_CKPT_* */
    int ckpt_offload;        /* 1: checkpointed layer inputs go to host memory */
    int tiled_mlp;           /* 1: the MLP runs in tiles of the sequence (mlp_tile), else at once */
    int fused_loss;          /* 1: the loss never holds the whole [s, V] logits (loss kind above), else logits at once */
    int grad_sync_per_step;  /* 1: gradients reduced once per optimizer step (after the last micro-batch); 0: every
                                micro-batch */
    const char *parts_source;/* where the parts come from */
    const char *half;        /* the 16-bit dtype's name: "fp16" or (NULL) "bf16" */
    cpb_fp8_casts fp8;       /* --linear-dtype fp8: the casts of its fp8 library (zero: not modelled) */
} cpb_framework;

/* activation checkpointing: none (every layer keeps its saved activations), full (each layer's
 * input; the layer recomputed in the backward), selective (Megatron's: the attention core
 * recomputed, everything else kept) */
enum { CPB_CKPT_NONE = 0, CPB_CKPT_FULL, CPB_CKPT_SELECTIVE };

/* The training setup as parts (model_scope_setup.c): the preset's values with the command
 * line's overrides, each with where its value came from. */
enum { CPB_PART_ZERO = 0, CPB_PART_OPTIMIZER, CPB_PART_PARAM_OFFLOAD, CPB_PART_MASTER, CPB_PART_GRAD,
       CPB_PART_LORA, CPB_PART_CKPT, CPB_PART_CKPT_OFFLOAD, CPB_PART_TILED_MLP, CPB_PART_FUSED_LOSS, CPB_PART_LINEAR,
       CPB_PART_MICRO_BATCH, CPB_PART_GRAD_ACCUM, CPB_PART_CP, CPB_PART_DP, CPB_PART_SHARD_GROUP, CPB_PART_PP,
       CPB_PART_COUNT };
typedef struct cpb_setup {
    const cpb_framework *fw;
    int zero, opt_cpu, param_offload, master_bytes, grad_bytes, ckpt, ckpt_offload, tiled_mlp, fused_loss;
    int fp8;                 /* linear layers outside attention (MLP) in fp8 */
    int copy16_eff;          /* a 16-bit compute copy beside an fp32 master is kept */
    int micro_batch, grad_accum;
    int lora_rank;           /* 0: every parameter trainable; R: a frozen base with LoRA adapters of rank R */
    int cp;                  /* the context-parallel degree: the attention trial's ranks (p->C) / tp */
    int tp;                  /* --tp: tensor-parallel degree around the attention (1: none) */
    int cp_given;            /* --cp as asked (0: not given) */
    int cp_searched;         /* plan's header: cp is searched (cp then holds the GPUs) */
    int dp;                  /* data-parallel replicas of the context-parallel group: cp x dp GPUs in all */
    int hsdp;                /* 1: the states are sharded within a replica (HSDP); 0: over every GPU */
    int pp, vpp;             /* --pp pipeline stages (1: none), --vpp model chunks per rank (1: plain 1F1B);
                                model_scope_pp.h */
    int pp_first, pp_last;   /* --pp-first-layers / --pp-last-layers (0: an even split) */
    int from_cli[CPB_PART_COUNT]; /* 1: given on the command line; 0: the preset's or the default */
    /* bytes per parameter of the model states, derived from the parts: replicated and
     * sharded (over the GPUs), on the device and in host memory */
    double dev_rep, dev_sh, host_rep, host_sh;
    double p16, master, grad, moments; /* the components (0 when absent) */
    /* with LoRA the bytes above are per trainable (adapter) parameter; the frozen base holds
     * its weights only, in the 16-bit dtype, per base parameter: */
    double base_dev_rep, base_dev_sh, base_host_rep, base_host_sh, base_bytes;
} cpb_setup;
/* the setup of p (its --framework and parts); CPB_ERR_INVALID with err for an unknown preset */
int cpb_setup_of(const cpb_problem *p, cpb_setup *out, char *err, size_t err_len);
/* the part's name, its value as text, and where it came from ("preset torchtitan", "command line") */
const char *cpb_setup_part_name(int part);
void cpb_setup_part_value(const cpb_setup *s, int part, char *buf, size_t len);
void cpb_setup_part_origin(const cpb_setup *s, int part, char *buf, size_t len);
/* bytes per parameter as text: "16 = fp32 master 4 + fp32 grads 4 + Adam m, v 8 (sharded)" */
void cpb_setup_bytes_text(const cpb_setup *s, char *buf, size_t len);
/* The assumptions block: one line per part with its value and where it came from, each
 * line starting with `prefix` ("", "# ") */
void cpb_setup_print_assumptions(FILE *f, const cpb_setup *s, const char *prefix);
/* "the optimizer offloaded to the CPU (--optimizer cpu), ..." : the usual fixes for a model
 * that does not fit that the setup does not already have ("" when none) */
void cpb_setup_fixes(const cpb_setup *s, char *buf, size_t len);
/* the same for the knobs given on the command line (a sweep's or plan's header) on `gpus`
 * GPUs; cp_search: plan searches the context-parallel degree unless the layout is given */
int cpb_setup_print_given(FILE *f, const cpb_knobs *given, int gpus, int cp_search, const char *prefix);
int cpb_setup_fixes_given(const cpb_knobs *given, char *buf, size_t len);
/* the part's knob ("zero", "lora_rank", ...); its value without the explanation ("3", "gpu",
 * "every GPU"); the setup of preset fw alone (no GPUs: the layout its default) */
const char *cpb_setup_part_knob(int part);
void cpb_setup_part_short(const cpb_setup *s, int part, char *buf, size_t len);
int cpb_setup_of_preset(const cpb_framework *fw, cpb_setup *out);
/* `cpbench list`: every preset with its parts */
void cpb_framework_list_print(FILE *f);
/* the parts' knobs (every model-scope point) */
extern const cpb_knob cpb_setup_knobs[];
/* Bytes per GPU of the model states (device and host) of `params` parameters of which
 * `trainable` are trained (the rest a frozen base: all of them with LoRA), sharded over N GPUs */
void cpb_setup_state_bytes(const cpb_setup *s, double params, double trainable, double N, double *dev, double *host);

/* The layout (model_scope_layout.c): `gpus` GPUs in all, as --cp N context-parallel ranks
 * times --dp R data-parallel replicas.  One source of truth: the GPUs and the CP degree;
 * the replicas are GPUs / cp.  --dp stays accepted as another way to say cp = GPUs / R (when
 * both are given they must agree).  Resolves the knobs given (the cp and dp knobs) for
 * `gpus` GPUs: *cp the context-parallel degree (the attention trial's ranks, p->C), and the
 * dp knob set to the replicas when a layout was given.  CPB_ERR_INVALID with a message
 * naming the option when cp or dp does not divide the GPUs or they disagree.  With --pp P
 * (model_scope_pp.h) the same holds for each stage's GPUs / P GPUs (--pp must divide the
 * GPUs). */
int cpb_layout_resolve(cpb_knobs *given, int gpus, int *cp, char *err, size_t err_len);
/* the GPUs of p's layout: p->C x its replicas x its pipeline stages */
int cpb_layout_gpus(const cpb_problem *p);
/* `cpbench plan`: the context-parallel degrees worth trying for p->C GPUs (the cp knob's
 * candidates): the divisors of the GPUs */
int cpb_layout_cp_candidates(const cpb_problem *p, int64_t *out, int max);
int cpb_framework_count(void);
const cpb_framework *cpb_framework_at(int i);

/* `name` (NULL or "" = torchtitan, the default); NULL when unknown */
const cpb_framework *cpb_framework_find(const char *name);
/* The model scope's knobs (knobs.h): --framework, the training setup, a column of every
 * model-scope row */
extern const cpb_knob cpb_model_scope_knobs[];
/* "torchtitan, deepspeed" */
const char *cpb_framework_names(void);

enum { CPB_MOMENT_ATTN_BWD = 0, CPB_MOMENT_MLP_BWD, CPB_MOMENT_LOSS, CPB_MOMENT_COUNT };
const char *cpb_model_moment_name(int moment);

typedef struct cpb_model_mem {
    int64_t states;     /* sharded params, grads and optimizer states (framework's bytes) */
    int64_t gathered;   /* gathered params and unsharded grads beyond the attention trace's */
    int64_t comm;       /* the gradient reduce-scatter buffer in flight */
    int64_t attn_fixed; /* the attention trace's weights and weight gradients */
    int64_t attn_act;   /* the attention trace's activations (x, y, dy, dx, intermediates) */
    int64_t ckpt;       /* checkpointed layer inputs kept on the device */
    int64_t residual;   /* residual-stream buffers of the layer being recomputed */
    int64_t work;       /* MLP tile or cross-entropy chunk */
    int64_t fixed;      /* the fixed per-GPU memory (cpb_fixed_mem: CUDA context, NCCL, workspaces,
                           allocator reserve), the same at every moment */
    int64_t total;
} cpb_model_mem;

/* The paper's three memory buckets and the fixed per-GPU memory: the sharded model states;
 * what the attention layer's forward and backward hold; everything else the step holds at
 * that moment; the memory a process holds whatever it trains (cpb_fixed_mem). */
typedef struct cpb_model_buckets {
    int64_t model, attn_act, other, fixed;
} cpb_model_buckets;

/* The fixed per-GPU memory (model_scope_fixed.c; docs/simulator.md "Fixed per-GPU memory"
 * gives each item's source): memory a training process holds on each GPU outside its
 * tensors, each item from a documented size. */
typedef struct cpb_fixed_mem {
    int64_t cuda_ctx;   /* the CUDA context under lazy loading (measured, PyTorch #86509) */
    int64_t nccl;       /* NCCL's buffers: NCCL_BUFFSIZE per channel of each connection [EST counts] */
    int64_t cublas;     /* PyTorch's cuBLAS and cuBLASLt workspaces of the compute stream */
    int64_t attn_ws;    /* the attention workspace outside the layer trial's trace (0: traced) */
    int64_t frag;       /* the caching allocator's reserve beyond the allocated bytes [EST] */
    int64_t total;
    int ring_comms;     /* NCCL communicators running ring collectives (all-gather, reduce-scatter, ...) */
    int p2p_peers;      /* peers of point-to-point connections (all-to-all, send/recv) */
    int channels;       /* channels of a ring collective */
    int streams;        /* streams allocating from the caching allocator */
} cpb_fixed_mem;
/* NCCL's defaults the estimate uses (NCCL docs, env.html): NCCL_BUFFSIZE 4 MiB; channels
 * per point-to-point peer (NCCL_NCHANNELS_PER_NET_PEER's default, 2, taken for NVLink peers
 * too [EST]) */
#define CPB_NCCL_BUFFSIZE ((int64_t)4 << 20)
#define CPB_NCCL_P2P_CHANNELS 2
/* PyTorch's cuBLAS workspace by default (CUBLAS_WORKSPACE_CONFIG ":4096:2:16:8": two 4 MiB
 * and eight 16 KiB chunks = 8,519,680 bytes); the caching allocator's large segment (20 MiB,
 * kLargeBuffer) */
#define CPB_CUBLAS_WS_BYTES ((int64_t)(2 * 4096 + 8 * 16) << 10)
#define CPB_ALLOC_LARGE_SEGMENT ((int64_t)20 << 20)
struct cpb_gpu_profile;
/* The fixed memory of one GPU for method `method` (its name) on problem p (the context-
 * parallel group of p->C GPUs; its --ulysses-degree for the hybrids) in a world of W GPUs
 * whose model states are sharded over groups of N (N = W, or C under HSDP with dp > 1
 * replicas), the attention trace holding `streams` streams. */
void cpb_fixed_mem_of(const struct cpb_gpu_profile *prof, const cpb_problem *p, const char *method, int W, int N,
                      int dp, int streams, cpb_fixed_mem *out);
/* host memory one GPU's process may use: the node's over the job's processes on it,
 * min(gpus, GPUs per node) (model_scope_host_share.c) */
int64_t cpb_host_per_used_gpu(const struct cpb_gpu_profile *prof, int64_t gpus);
/* "CUDA context 0.27 GiB (measured, lazy loading), NCCL buffers ..." : one line of text */
void cpb_fixed_mem_describe(const cpb_fixed_mem *f, char *buf, size_t len);
cpb_model_buckets cpb_model_mem_buckets(const cpb_model_mem *m);

/* The caching allocator's reserve in the loss phase (model_scope_loss_seq.c): the loss's
 * allocations and frees replayed on PyTorch's caching allocator (alloc_reserve.h) from an
 * empty pool, within `room` bytes (the capacity less the rest of the loss moment).  Never a
 * limit on fit: reported beside the peak, as what max_memory_reserved would read. */
typedef struct cpb_loss_reserve {
    int code;                /* CPB_LOSS_CODE_* replayed (NONE: not modelled, reserve 0) */
    int64_t requested_peak;  /* the replay's peak of the bytes the tensors requested */
    int64_t reserve;         /* the phase's max reserved less that peak (>= 0) */
    int64_t reserve_at_peak; /* reserved at the requested peak less it */
    int releases;            /* cached segments released after a failed cudaMalloc (room too small) */
    int oom;                 /* the loss's requests do not fit the room: no reserve */
} cpb_loss_reserve;
/* the loss of setup su on tok tokens per GPU of a model with vocabulary V and hidden D,
 * the context-parallel degree cp (whose code runs can depend on it) */
void cpb_loss_reserve_of(const cpb_setup *su, int cp, double tok, double V, double D, int64_t room,
                         cpb_loss_reserve *out);

typedef struct cpb_model_estimate {
    cpb_problem p;
    const cpb_model_spec *spec;
    const cpb_framework *fw;
    cpb_setup setup;                /* the parts: fw's, overridden by the command line */
    const cpb_method *m;
    char gpu[32];
    int status;                     /* CPB_OK, CPB_ERR_OOM (device), CPB_ERR_NOMEM_HOST, or the
                                       attention trial's failure */
    char reason[1024];
    double params;                  /* parameter count */
    cpb_model_mem moment[CPB_MOMENT_COUNT];
    int peak_moment;
    int64_t capacity;               /* device bytes (the profile's memory or --mem-cap); the fixed
                                       per-GPU memory is in the peak (fixed), not subtracted here */
    cpb_fixed_mem fixed;            /* the fixed per-GPU memory, itemized */
    /* The caching allocator's reserve (bytes it holds beyond the tensors' requests): replayed
     * for the loss (loss_reserve), 0 at the moments no sequence is replayed for (not
     * modelled).  It does not count toward fit (status, max context): the allocator
     * releases its cached segments before it fails. */
    cpb_loss_reserve loss_reserve;
    int64_t reserve[CPB_MOMENT_COUNT];
    int reserved_moment;            /* the moment of the largest total + reserve */
    int64_t peak_reserved;          /* predicted torch.cuda.max_memory_reserved: max over the moments of the
                                       total less the CUDA context and NCCL's buffers (outside the caching
                                       allocator) plus the reserve */
    int64_t peak_device;            /* predicted nvidia-smi used memory: max over the moments of total + reserve */
    int64_t host_bytes, host_capacity; /* host bytes per GPU (checkpoints + method) */
    int ckpt_pageable;              /* checkpoint copies are pageable (not pinned) */
    int64_t ckpt_host_block;        /* host bytes one offloaded checkpoint holds (pinned: rounded up to 2^k) */
    /* time per step, seconds */
    double attn_layer_s;            /* forward + recomputed forward + backward */
    double mlp_layer_s, norm_layer_s, fsdp_layer_s, ckpt_layer_s, layer_s;
    double mlp_acc_s;               /* of mlp_layer_s: adding each tile's weight gradient */
    double fp8_cast_s;              /* of mlp_layer_s: the fp8 linears' casts (model_scope_fp8.c) */
    double tp_mlp_comm_s;           /* per layer, beside mlp_layer_s: the MLP's exposed TP collectives under --tp
                                       (model_scope_tp_mlp.h); 0 without TP */
    double lora_attn_s;             /* of attn_layer_s with LoRA: the adapters' GEMMs less the frozen
                                       projections' weight-gradient GEMMs the trial computed */
    double mlp_passes;              /* MLP forward-equivalents per layer (the setup's) */
    double loss_s;                  /* the loss's element-wise passes and copies */
    double head_s, optimizer_s, step_s;
    int64_t host_states;            /* model states in host memory per GPU (optimizer / parameter offload) */
    double opt_host_s, opt_pcie_s;  /* of optimizer_s: a CPU optimizer's pass over host memory, its PCIe copies */
    double step_comm_s;             /* per optimizer step: parameter all-gather / gradient reduction outside the
                                       layers (ZeRO 0-2) */
    double micro_s;                 /* one micro-batch: layers, head and loss */
    double model_flops;             /* per step, without the recomputation (cpb_row_rates) */
    double model_flops_megatron;    /* the same counted as Megatron-LM does (cpb_model_flops) */
    double model_flops_nemo;        /* the same counted as NeMo's flops_formulas.py does (flops_nemo.h) */
    cpb_row attn;                   /* the attention layer on the simulator */
    /* --pp (model_scope_pp.h): the stages and the step's pipeline time; the rank whose memory
     * is the peak above (the worst of every rank's), and its layers and micro-batches in flight */
    cpb_pp_plan pp;
    int pp_worst_rank;
    cpb_pp_rank pp_worst;
} cpb_model_estimate;

/* Estimate method m on p (p->model must name a preset with a spec).  Returns CPB_OK when
 * an estimate was made (it may say OOM: e->status), or an error for bad input with err
 * set.  *out is malloc'd: release it with cpb_model_estimate_free. */
int cpb_model_estimate_new(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o,
                           cpb_model_estimate **out, char *err, size_t err_len);
void cpb_model_estimate_free(cpb_model_estimate *e);

/* The largest S in [start, stop] (multiples of the method's granule, doubling then
 * bisecting to `step`) whose estimate fits; 0 when none does.  *evals counts estimates. */
int cpb_model_max_context(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o,
                          int64_t start, int64_t stop, int64_t step, int64_t *best, int *evals,
                          char *err, size_t err_len);

void cpb_model_estimate_print(FILE *f, const cpb_model_estimate *e);
/* the estimate as a results row (scope "model") */
void cpb_model_estimate_row(const cpb_model_estimate *e, cpb_row *row);

#ifdef __cplusplus
}
#endif
#endif
