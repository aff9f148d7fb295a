/* row.h — the one type a trial's outcome has, from one rank's trial to the results file:
 * the columns of the results table (/runs, results/README.md), then details that are
 * printed and used by the runners but not stored.
 *
 * A row is made in three steps: cpb_row_point fills the columns that name the point (what
 * ran where), a runner (trial.h, sim_layer.h, point.h) fills the outcome, and
 * cpb_row_rates derives the throughput columns from the step time, once, for every kind
 * of run. */
#ifndef CPB_ROW_H
#define CPB_ROW_H

#include <stddef.h>
#include <stdint.h>

#include "cpb.h"
#include "cpb_backend.h"
#include "cpb_method.h"

#ifdef __cplusplus
extern "C" {
#endif

/* bytes of the options column */
#define CPB_ROW_OPTIONS_LEN 256

/* The columns of /runs.  X-macro so the struct, the HDF5 compound type and the column list
 * cannot disagree.
 *   S(name, len, doc)  fixed-length NUL-terminated string of len bytes
 *   I(name, doc)       int32      L(name, doc) int64      F(name, doc) float64
 *   A(name, n, doc)    int64[n] array
 * After them come the knob columns, one per knob of knobs.h (head_chunk, seq_chunk, ...,
 * fpdt_impl, then the driver's framework and host_ram_bytes): int32 (integer knobs), int64
 * (token and byte counts) or a string (choices), named after the knob; a knob the row's
 * method does not have, or that does not belong to its kind of point, is 0 or "". */
#define CPB_ROW_COLUMNS(S, I, L, F, A)                                                         \
    I(session, "index into /sessions: the process that wrote the row")                      \
    S(timestamp, 32, "UTC time the row was written, ISO 8601")                               \
    S(method, 24, "method name (ring, ulysses, upipe, fpdt, offload, metp, tp, ...)")        \
    S(model, 32, "model preset")                                                             \
    S(backend, 8, "cpu, sim or cuda: sim rows are predictions, cpu and cuda rows measurements") \
    S(gpu, 48, "GPU name (cuda), simulator GPU profile (sim), or cpu")                      \
    S(scope, 8, "layer (one attention layer) or model (simulator's whole-model estimate)")  \
    S(status, 12, "ok, oom, refused or error (files before schema 4: skipped for refused)") \
    S(reason, 1024, "why the method refused the trial or it failed (empty when ok)")         \
    S(dtype, 8, "storage dtype (bf16, fp32)")                                                \
    S(attn_impl, 8, "attention implementation the calls ran: cudnn, own, fa2, fa3 or mixed (empty: no attention call)") \
    S(attn_fwd_impl, 8, "the implementation that served the forward calls: cudnn, own, fa2, fa3 or mixed") \
    S(attn_bwd_impl, 8, "the implementation that served the backward calls: cudnn, own, fa2, fa3 or mixed") \
    S(attn_calls, 192, "attention calls per class (fwd/bwd) and implementation, with why our kernels served a class") \
    S(estimates, 256, "what the prediction took from estimates, comma-separated: attn.fa2 / attn.fa3 (published " \
      "curves), gpu.KEY (a GPU profile figure not on its datasheet, named by its calibration key); \"\" none") \
    F(attn_plan_s, "seconds building cuDNN plans in the warm-up, outside the timed steps (cuda; else 0)") \
    I(world_size, "C, ranks / GPUs")                                                         \
    L(seq_len, "S, global tokens")                                                           \
    L(hidden, "D")                                                                           \
    I(heads, "H, query heads")                                                               \
    I(kv_heads, "G, key/value heads")                                                        \
    I(head_dim, "d")                                                                         \
    I(model_layers, "the model's layers (its preset's or config.json's; 0: a shape without a model)") \
    L(model_ffn, "the model's MLP intermediate size")                                        \
    L(model_vocab, "the model's vocabulary")                                                 \
    F(model_params, "the model's parameter count (results/README.md says what is counted)")  \
    I(model_mlp_matrices, "3: gated MLP (gate, up, down: SwiGLU, GeGLU); 2: two-matrix MLP (up, down)") \
    S(model_act, 24, "the MLP's activation (hidden_act)")                                   \
    I(model_tied, "1: the LM head shares the embedding matrix")                              \
    S(model_bias, 32, "linear layers with biases, comma-separated: q,k,v / o / mlp / head (\"\" none)") \
    S(model_norm, 24, "norms: rmsnorm or layernorm (weight and bias) x per layer, +qk: q and k normed per head") \
    L(seed, "input seed (every method at a point gets the same inputs)")                     \
    I(warmup, "untimed warm-up steps")                                                       \
    I(iters, "timed steps (step time = median of the slowest rank)")                         \
    S(options, CPB_ROW_OPTIONS_LEN, "options that change the result and have no column of their own, canonical: " \
      "mem-cap=42949672960;calibration=fnv1a64:... (\"\" = none given)")                      \
    S(plan, 64, "plan rows: the recommendation's marks, space-separated: recommended, tie, under-floor, " \
      "uncalibrated (\"\" on other rows)")                                                    \
    L(capacity_bytes, "device capacity the trial ran under")                                 \
    L(peak_bytes, "tracked device high-water (max_memory_allocated)")                        \
    L(reserved_bytes, "allocator-pool reserved high-water (max_memory_reserved; = peak on cpu/sim: the model scope's prediction of it is peak_reserved_bytes)") \
    L(device_used_bytes, "driver-level used device memory above the baseline (cuda only, else 0)") \
    L(intermediate_bytes, "high-water of non-fixed tags (paper's intermediate tensor memory)") \
    L(host_peak_bytes, "pinned host high-water (offloading methods)")                        \
    L(model_state_bytes, "model scope: sharded params, grads, optimizer states at the peak (0 on layer rows)") \
    L(attn_act_bytes, "model scope: the attention layer's activations at the peak")          \
    L(other_bytes, "model scope: everything else at the peak (gathered weights, buffers, checkpoints, MLP, loss)") \
    L(fixed_bytes, "model scope: the fixed per-GPU memory (CUDA context, NCCL buffers, cuBLAS workspaces, allocator reserve)") \
    L(alloc_reserve_bytes, "model scope: the caching allocator's reserve (cached free blocks and rounding beyond the " \
      "requested bytes) at the moment of peak_reserved_bytes, replayed for the loss, 0 where not modelled; not in fit") \
    L(peak_reserved_bytes, "model scope: predicted max_memory_reserved: the moment's total less the CUDA context and " \
      "NCCL buffers, plus alloc_reserve_bytes (max over the moments); not a limit on fit; 0 on layer rows") \
    L(peak_device_bytes, "model scope: predicted nvidia-smi used memory: the moment's total plus alloc_reserve_bytes " \
      "(max over the moments); not a limit on fit; 0 on layer rows") \
    L(fwd_peak_bytes, "device high-water during forward")                                    \
    L(bwd_peak_bytes, "device high-water during backward")                                   \
    A(at_peak_bytes, CPB_TAG_COUNT, "device bytes by tag at the peak; names in the attribute at_peak_tags") \
    F(step_s, "forward+backward seconds (sim: modelled)")                                    \
    F(fwd_s, "forward seconds")                                                              \
    F(bwd_s, "backward seconds")                                                             \
    F(tokens_per_s, "S / step_s")                                                            \
    F(tokens_per_s_per_gpu, "S / (step_s * C), the paper's metric")                          \
    F(tflops_per_gpu, "model TFLOP/s per GPU, convention causal (results/README.md)")       \
    F(peak_tflops, "the GPU profile's dense bf16 peak, TFLOP/s per GPU (0: none, cpu rows)") \
    F(mfu_causal, "tflops_per_gpu / peak_tflops (0 without a peak)")                         \
    F(tflops_per_gpu_megatron, "model TFLOP/s per GPU, convention megatron (results/README.md)") \
    F(mfu_megatron, "tflops_per_gpu_megatron / peak_tflops (0 without a peak)")              \
    F(tflops_per_gpu_nemo, "model TFLOP/s per GPU, convention nemo (results/README.md)")     \
    F(mfu_nemo, "tflops_per_gpu_nemo / peak_tflops (0 without a peak)")                      \
    F(comm_bytes, "bytes sent by the busiest rank")                                          \
    F(pcie_bytes, "host<->device bytes of the busiest rank")                                 \
    F(y_norm, "fingerprint: L2 norm of y (0 on sim: no data; NaN when it could not be taken)") \
    F(dx_norm, "fingerprint: L2 norm of dx")                                                  \
    F(dw_norm, "fingerprint: L2 norm of the assembled dW (Wq, Wk, Wv, Wo gradients)")

/* device memory of one phase of a trial beyond its peak (the peak is a column) */
typedef struct cpb_row_phase {
    int64_t intermediate_peak;        /* high-water of non-fixed tags during the phase */
    int64_t live_end;                 /* device bytes live when the phase ends */
    int64_t host_peak;                /* pinned host high-water during the phase */
    int64_t at_peak[CPB_TAG_COUNT];   /* breakdown by tag at the phase's peak */
    int64_t tag_peak[CPB_TAG_COUNT];  /* per-tag high-water during the phase */
    /* device bytes of each tag, and pinned host bytes, live when the phase ends (the
     * per-call temporaries rule, runtime/cpb_method.h, is checked on them) */
    int64_t tag_live_end[CPB_TAG_COUNT];
    int64_t host_live_end;
} cpb_row_phase;

/* the knob columns, by the knob's index in knobs.h (i for integers, s for choices) */
typedef struct cpb_row_knobs {
    int64_t i[CPB_MAX_KNOBS];
    char s[CPB_MAX_KNOBS][CPB_KNOB_LEN];
} cpb_row_knobs;

typedef struct cpb_row {
#define CPB_RCOL_S_(name, len, doc) char name[len];
#define CPB_RCOL_I_(name, doc) int32_t name;
#define CPB_RCOL_L_(name, doc) int64_t name;
#define CPB_RCOL_F_(name, doc) double name;
#define CPB_RCOL_A_(name, n, doc) int64_t name[n];
    CPB_ROW_COLUMNS(CPB_RCOL_S_, CPB_RCOL_I_, CPB_RCOL_L_, CPB_RCOL_F_, CPB_RCOL_A_)
#undef CPB_RCOL_S_
#undef CPB_RCOL_I_
#undef CPB_RCOL_L_
#undef CPB_RCOL_F_
#undef CPB_RCOL_A_
    cpb_row_knobs knobs;
    /* ---- details: printed and used by the runners, not stored */
    int code;                        /* cpb_status of the trial (the status column's source) */
    int worst_rank;                  /* the rank whose memory the row reports */
    int64_t tag_peak[CPB_TAG_COUNT]; /* per-tag high-water of the whole trial */
    int64_t host_at_peak[CPB_TAG_COUNT];
    cpb_row_phase fwd, bwd;          /* bwd marks are measured from the end of forward */
    int64_t n_allocs;                /* device allocations of the trial ... */
    uint64_t alloc_hash;             /* ... and the hash of their (size, tag) sequence */
    int nstreams;
    char stream_names[CPB_MAX_STREAMS][24];
    double stream_busy_s[CPB_MAX_STREAMS]; /* sim: the slowest rank's busy time per stream */
    /* sim: the step's critical path by kind of work (seconds: compute, collectives, host
     * copies; sim/timeline.h), and how many ranks the timing model replayed */
    double crit_compute_s, crit_comm_s, crit_host_s;
    double crit_coll_s[CPB_COLL_KIND_COUNT];
    int replayed_ranks;
    double sym_op_diff;              /* sim: how much the ops of ranks taken as alike differ */
    /* sim: why the timing model replayed every rank where one rank per class of ranks alike
     * was asked for (--sim-ranks symmetric, or auto from 8 ranks up); "" when it did not
     * (printed by `run`, not a results column) */
    char sym_fallback[256];
} cpb_row;

/* A zeroed row with status "ok" and scope "layer". */
void cpb_row_init(cpb_row *r);
/* Copy s into a fixed-length column, truncating (the row's strings always end in NUL). */
void cpb_row_set_str(char *dst, size_t len, const char *s);
#define CPB_ROW_SET(row, col, s) cpb_row_set_str((row)->col, sizeof (row)->col, (s))

/* cpb_row_init, then the columns that name point (m, p) on backend be (its gpu column:
 * the device, the simulator's profile, or "cpu") at `scope` ("layer" or "model"): the
 * method's knobs and the driver's that belong to such a point (knobs.h). */
void cpb_row_point(cpb_row *r, const cpb_method *m, const cpb_problem *p, const cpb_backend *be,
                   const char *gpu, const char *scope);

/* a knob column of the row (0 / "" when the row's method has no such knob) */
int64_t cpb_row_knob_int(const cpb_row *r, const char *name);
const char *cpb_row_knob_str(const cpb_row *r, const char *name);

/* the status column of a cpb_status: "ok", "oom", "refused" (CPB_ERR_REFUSED: the method's
 * check() refused the shape) or "error" (every other code, CPB_ERR_INVALID included) */
const char *cpb_row_status_name(int code);
/* a status column's cpb_status (what a row read from a file had: "skipped", the name before
 * schema 4, is CPB_ERR_REFUSED; "error" and anything unknown CPB_ERR_BACKEND) */
int cpb_row_code_of_status(const char *status);
/* code, status and reason (the reason only when code is not CPB_OK) */
void cpb_row_set_status(cpb_row *r, int code, const char *reason);

/* Model FLOPs of one layer (DESIGN section 6), convention causal: causal attention counts
 * the lower triangle, fwd 2*S*S*H*d, bwd 2.5x fwd; projections 2*S*D*(H+2G)*d + 2*S*H*d*D
 * forward, twice that backward. */
void cpb_layer_model_flops(const cpb_problem *p, double *fwd, double *bwd);
/* The same layer's FLOPs (forward and backward), convention megatron: 6 x the projections'
 * parameters x S + 6 S^2 H d (Megatron-LM's self-attention term of one layer). */
double cpb_layer_megatron_flops(const cpb_problem *p);
/* The throughput columns from step_s, seq_len and world_size, for `flops` model FLOPs per
 * step under the causal convention, `flops_megatron` under the megatron one and
 * `flops_nemo` under the nemo one (flops_nemo.h) (the layer's, or the whole model's for
 * scope model), and the MFUs against the row's peak_tflops (set it first; 0: MFUs 0); all
 * zero when step_s is not > 0. */
void cpb_row_rates(cpb_row *r, double flops, double flops_megatron, double flops_nemo);

/* The point key, the one place it is defined: 1 when rows a and b describe the same trial:
 * method, model, backend, gpu, scope, dtype, world size, sequence length, shape, seed,
 * warm-up and timed steps, every knob column and the options column (every other option
 * that changes a result, harness/args.c's KEY options): an interrupted sweep skips such
 * points.  `gpu` is compared only when both rows name one (an --isolate sweep on a GPU
 * learns the name from its trials). */
int cpb_row_same_point(const cpb_row *a, const cpb_row *b);

#ifdef __cplusplus
}
#endif
#endif
