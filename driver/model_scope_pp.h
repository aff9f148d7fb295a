/* model_scope_pp.h — pipeline parallelism as a layout part of the whole-model estimate
 * (`--pp N`, docs/simulator.md "Pipeline parallelism").
 *
 * The layout: --gpus = tp x cp x pp x dp.  Megatron places the pipeline outermost (its
 * default rank order "tp-cp-ep-dp-pp", megatron/core/parallel_state.py), so a stage is the
 * tp x cp x dp GPUs of one slice of the layers and its neighbour stage is tp x cp x dp ranks
 * away.  Each stage holds its layers' model states, sharded over the stage's data-parallel
 * group as without PP.  The schedule is Megatron's 1F1B (Narayanan et al., "Efficient
 * Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC'21, sec. 2.2.1)
 * or, with --vpp V > 1, its interleaved form (sec. 2.2.2): V model chunks per rank.
 *
 * Layers per stage: L / pp, or Megatron Core's uneven split (TransformerConfig
 * num_layers_in_first_pipeline_stage / num_layers_in_last_pipeline_stage, the command-line
 * --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers): the first and /
 * or last stage given, the rest divided evenly over the other stages; anything that does not
 * divide is refused, naming the option. */
#ifndef CPB_MODEL_SCOPE_PP_H
#define CPB_MODEL_SCOPE_PP_H

#include <stddef.h>
#include <stdio.h>

#include "cpb.h"
#include "cpb_method.h"
#include "sim/sim_hw.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CPB_PP_MAX_STAGES 4096

typedef struct cpb_pp_plan {
    int pp;                  /* pipeline stages (1: none) */
    int v;                   /* model chunks per rank (--vpp; 1: the plain 1F1B schedule) */
    int m;                   /* micro-batches per optimizer step (the grad_accum part) */
    int layers;              /* the model's layers */
    int first, mid, last;    /* layers on the first rank, on each middle rank, on the last rank */
    int first_given, last_given; /* --pp-first-layers / --pp-last-layers as asked (0: even split) */
    /* time (cpb_pp_step) */
    double t_max;            /* the slowest rank's forward + backward of one micro-batch */
    double t_sum;            /* every rank's, summed (one micro-batch through the pipeline) */
    double msg_bytes;        /* one activation (or its gradient) sent between stages: [s/(cp tp), B, D] */
    double msg_s;            /* its time at the link's bandwidth, plus latency */
    int msg_inter;           /* 1: stage neighbours are on different nodes (network) */
    double messages;         /* messages on the critical path per step (exposed) */
    double bubble_s;         /* the pipeline's fill and drain: (t_sum - t_max) / v */
    double p2p_s;            /* messages x msg_s */
    double pipe_s;           /* m x t_max + bubble + p2p: the forward-backward of a step */
} cpb_pp_plan;

/* the pipeline knobs (--pp, --vpp, --pp-first-layers, --pp-last-layers): a part of every
 * model-scope point (knobs.c registers the table) */
extern const cpb_knob cpb_pp_knobs[];

/* the stages of p (its pp knobs) for a model of `layers` layers and `m` micro-batches per
 * step; CPB_ERR_INVALID with err naming the option when the layers do not split as asked */
int cpb_pp_plan_of(const cpb_problem *p, int layers, int m, cpb_pp_plan *out, char *err, size_t err_len);
/* the pp knob as a degree (1 when not given) */
int cpb_pp_degree(const cpb_problem *p);

/* one rank r of the pipeline (0 = first): its layers, whether it holds the embedding (the
 * first) and the LM head and loss (the last), and the layers' activations it holds at its
 * peak: the micro-batches (model chunks) in flight under the schedule x their layers */
typedef struct cpb_pp_rank {
    int layers;
    int first, last;
    double in_flight;        /* micro-batches whose forward ran and whose backward has not (1F1B:
                                min(pp - r, m)); interleaved: model chunks / v */
    double live_layers;      /* layers' saved activations held at the peak: in_flight x layers */
} cpb_pp_rank;
void cpb_pp_rank_of(const cpb_pp_plan *pl, int r, cpb_pp_rank *out);

/* Time of a step's forward-backward on the pipeline (sets pl's time fields; returns
 * pipe_s).  t_layer: one layer's forward + backward of one micro-batch; t_head: the LM head
 * and loss of one micro-batch (on the last rank); msg_bytes: one message between stages;
 * hw's bandwidths; stride: GPUs between neighbour stages (tp x cp x dp). */
double cpb_pp_step(cpb_pp_plan *pl, double t_layer, double t_head, double msg_bytes, const cpb_sim_hw *hw, int stride);

/* the pipeline's NCCL point-to-point connections in the fixed memory: one peer (pp = 2) or
 * two (the previous and next stage) */
struct cpb_fixed_mem;
void cpb_pp_fixed_mem(struct cpb_fixed_mem *f, int pp);

/* --pp in an estimate's row (cpb_model_estimate_row, after the rates and critical path
 * without PP): the rates per GPU over every GPU of a replica (C x pp: the model FLOPs of the
 * step divided by all tp x cp x pp x dp GPUs, as Megatron-LM's training_log divides by the
 * world size); the forward's share and the critical path scaled from the layers' serial
 * time to the pipeline's, the bubble counted as compute (waiting on other stages' compute)
 * and the exposed point-to-point sends as communication (send/recv) */
struct cpb_model_estimate;
struct cpb_row;
void cpb_pp_row(const struct cpb_model_estimate *e, struct cpb_row *row);
/* the estimate's "pipeline:" line (nothing without --pp) */
void cpb_pp_print(FILE *f, const struct cpb_model_estimate *e);

/* "2 stages x 16 layers, 1F1B (Megatron: ...)": the assumptions line's value */
void cpb_pp_describe(const cpb_pp_plan *pl, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
