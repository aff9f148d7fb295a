/* model_scope.h — `--scope model`: a first-principles estimate of training the whole model
 * with one context-parallel method for its attention layers (docs/simulator.md lists every
 * assumption; model_scope.c states each in place).
 *
 * Memory per GPU: FSDP/ZeRO-3 model states sharded over the C GPUs, the gathered layer(s),
 * the checkpointed layer inputs (first and last layer on the device, the rest offloaded to
 * host memory), the residual-stream buffers, a tiled MLP and a fused linear cross-entropy,
 * plus the attention layer's traced peak for the method (cpb_sim_layer).  Time per step:
 * per layer a forward, a recomputed forward and a backward of attention (timing model) and
 * of the MLP (FLOPs), FSDP gathers and reduce-scatters and checkpoint copies over PCIe
 * (overlapped with compute), the LM head and the optimizer step. */
#ifndef CPB_MODEL_SCOPE_H
#define CPB_MODEL_SCOPE_H

#include <stdio.h>

#include "row.h"
#include "sim_layer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* what the model adds to the attention shape of its preset */
typedef struct cpb_model_spec {
    const char *name;   /* preset name */
    int layers;
    int64_t ffn;        /* MLP intermediate size (SwiGLU: gate, up, down) */
    int64_t vocab;
    int tied;           /* 1: the LM head shares the embedding matrix */
    const char *source;
} cpb_model_spec;

/* the spec of preset `name`, NULL when the preset has none */
const cpb_model_spec *cpb_model_spec_find(const char *name);

enum { CPB_MOMENT_ATTN_BWD = 0, CPB_MOMENT_MLP_BWD, CPB_MOMENT_LOSS, CPB_MOMENT_COUNT };
const char *cpb_model_moment_name(int moment);

typedef struct cpb_model_mem {
    int64_t states;     /* sharded bf16 params, fp32 grads, fp32 Adam moments */
    int64_t gathered;   /* FSDP-gathered params/grads beyond the attention trace's own */
    int64_t attn_fixed; /* the attention trace's weights and weight gradients */
    int64_t attn_act;   /* the attention trace's activations (x, y, dy, dx, intermediates) */
    int64_t ckpt;       /* checkpointed layer inputs kept on the device */
    int64_t residual;   /* residual-stream buffers of the layer being recomputed */
    int64_t work;       /* MLP tile or cross-entropy chunk */
    int64_t total;
} cpb_model_mem;

typedef struct cpb_model_estimate {
    cpb_problem p;
    const cpb_model_spec *spec;
    const cpb_method *m;
    char gpu[32];
    int status;                     /* CPB_OK, CPB_ERR_OOM (device), CPB_ERR_NOMEM_HOST, or the
                                       attention trial's failure */
    char reason[1024];
    double params;                  /* parameter count */
    cpb_model_mem moment[CPB_MOMENT_COUNT];
    int peak_moment;
    int64_t capacity;               /* usable device bytes */
    int64_t host_bytes, host_capacity; /* pinned host bytes per GPU (checkpoints + method) */
    /* time per step, seconds */
    double attn_layer_s;            /* forward + recomputed forward + backward */
    double mlp_layer_s, norm_layer_s, fsdp_layer_s, ckpt_layer_s, layer_s;
    double head_s, optimizer_s, step_s;
    double model_flops;             /* per step, without the recomputation (cpb_row_rates) */
    cpb_row attn;                   /* the attention layer on the simulator */
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
