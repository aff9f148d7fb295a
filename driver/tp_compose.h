/* tp_compose.h — `--tp N`: Megatron-LM tensor parallelism with sequence parallelism around
 * any context-parallel method, as one composition (docs/methods.md, "--tp").
 *
 * World = tp x cp ranks, TP inner: world rank w is member w % tp of the TP group of ranks
 * [w - w % tp, w - w % tp + tp) (adjacent ranks, so TP traffic stays inside a node, as
 * Megatron places it) and member w / tp of the CP group {w % tp, w % tp + tp, ...}.  Each
 * TP rank holds H/tp query heads and G/tp kv heads (one kv head, replicated, when G < tp);
 * the method runs unchanged over the CP group on that head shard (a runtime scope:
 * cpb_scope_enter), between the TP group's collectives:
 *     forward:  x all-gathered over TP -> method forward -> y partial reduce-scattered over TP
 *     backward: dy and x all-gathered over TP -> method backward -> dx partial reduce-scattered
 * (megatron/core/tensor_parallel/mappings.py: gather_from_sequence_parallel_region,
 * reduce_scatter_to_sequence_parallel_region; layers.py re-gathers the input for the weight
 * gradient).  Token layout: the method's layout at the CP rank, cut into tp contiguous
 * pieces; weight shard: the method's shard of the TP rank's heads, in global head ids.
 *
 * The functions below are what the driver asks of a method; each is the method's own answer
 * when the point's tp is 1, so the driver calls them for every point. */
#ifndef CPB_TP_COMPOSE_H
#define CPB_TP_COMPOSE_H

#include <stddef.h>

#include "cpb_backend.h"
#include "cpb_method.h"

#ifdef __cplusplus
extern "C" {
#endif

/* the --tp knob (a driver knob of every point) */
extern const cpb_knob cpb_tp_knobs[];

/* p's tensor-parallel degree: its tp knob, 1 when absent or 0 (the knob's default: none) */
int cpb_tp_degree(const cpb_problem *p);
/* The problem the method runs on inside the composition: C = p->C / tp, H / tp query heads,
 * G / tp kv heads (1 when G < tp), tp 0 (none).  CPB_ERR_INVALID with a reason naming the values
 * when tp does not divide them (the same refusals as the knob's check). */
int cpb_tp_inner_problem(const cpb_problem *p, cpb_problem *inner, char *why, size_t why_len);

/* m's check() of p under p's tp: 0 or non-zero with the reason (no "<m> refuses" prefix) */
int cpb_tp_check(const cpb_method *m, const cpb_problem *p, char *why, size_t why_len);
/* the global tokens and weight heads world rank `rank` holds */
int cpb_tp_token_layout(const cpb_method *m, const cpb_problem *p, int rank, cpb_segs *out);
int cpb_tp_weight_shard(const cpb_method *m, const cpb_problem *p, int rank, cpb_shard *out);
/* bytes of the state forward hands to backward (the method's, and the wrapper's with tp > 1) */
size_t cpb_tp_state_size(const cpb_method *m, const cpb_problem *p);
/* m's forward (bwd 0) or backward on L (the rank's layer of cpb_trial_setup) under L->p's tp */
int cpb_tp_phase(cpb_ctx *ctx, const cpb_method *m, cpb_layer *L, void *state, int bwd);

/* `cpbench plan`: the tp values worth trying for p (driver/plan_tp.c) */
int cpb_plan_tp_candidates(const cpb_problem *p, int64_t *out, int max);
/* 0 when p's TP groups stay inside nodes of gpus_per_node GPUs (0: 8), else non-zero with
 * the reason: plan searches only those (a --tp given to plan is tried as given) */
int cpb_plan_tp_within_node(const cpb_problem *p, int gpus_per_node, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
