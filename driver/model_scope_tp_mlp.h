/* model_scope_tp_mlp.h — the MLP's tensor-parallel collectives under --tp (Megatron
 * sequence parallelism), for the whole-model estimate.
 *
 * With sequence parallelism each TP rank holds 1/tp of the layer's tokens between the
 * blocks; the MLP's first matrices (ColumnParallelLinear) all-gather the input, the last
 * (RowParallelLinear) reduce-scatter the output:
 *   forward:  all-gather x, reduce-scatter y                                       2
 *   backward: all-gather dy (RowParallelLinear's backward), all-gather x again for
 *             the weight gradient (ColumnParallelLinear saves its local input only),
 *             reduce-scatter dx                                                    3
 *   a full checkpoint's recompute repeats the forward's                          + 2
 * (megatron/core/tensor_parallel/layers.py, LinearWithGradAccumulationAndAsyncCommunication
 * and mappings.py gather_from_sequence_parallel_region /
 * reduce_scatter_to_sequence_parallel_region, NVIDIA/Megatron-LM; the same five as the
 * attention layer's, which the attention trial traces: tp_compose.h).  Each moves the
 * gathered [tp x s, D] bf16 tensor: (tp - 1)/tp of it over the bus per rank.
 *
 * Exposed, not overlapped: Megatron overlaps them only with --tp-comm-overlap (Transformer
 * Engine userbuffers), which the NeMo recipes leave off (NeMo-Framework-Launcher
 * conf/training/llama/llama2_7b.yaml @8e0cf6f1 `ub_tp_comm_overlap: False`; NVIDIA/NeMo
 * v2.3.0rc2 nemo/collections/llm/recipes/llama3_8b.py `MegatronCommOverlapCallback(
 * tp_comm_overlap=False)`) and Megatron-LM's default leaves off.  The all-gathers carry
 * bf16 even under --linear-dtype fp8 (Transformer Engine 1.x gathers the high-precision
 * input without userbuffers) [EST for later TE versions]. */
#ifndef CPB_MODEL_SCOPE_TP_MLP_H
#define CPB_MODEL_SCOPE_TP_MLP_H

#include "sim/sim_hw.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collectives of one layer's MLP per micro-batch sequence: 5, 7 with full checkpointing. */
int cpb_tp_mlp_collectives(int full_ckpt);
/* Seconds of one layer's MLP TP collectives on one GPU: tp ranks, `tokens_per_gpu` tokens on
 * each (the gathered tensor holds tp x that), hidden D, bf16; inside a node (hw->coll_busbw,
 * coll_lat) when tp <= the node's GPUs, else over the network (inter_busbw, inter_lat).
 * 0 when tp <= 1. */
double cpb_tp_mlp_comm_s(const cpb_sim_hw *hw, int tp, double tokens_per_gpu, double D, int full_ckpt);

#ifdef __cplusplus
}
#endif

#endif
