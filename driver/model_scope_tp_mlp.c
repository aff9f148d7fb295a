/* model_scope_tp_mlp.c — the MLP's TP collectives (model_scope_tp_mlp.h). */
#include "model_scope_tp_mlp.h"

int cpb_tp_mlp_collectives(int full_ckpt)
{
    return 2 + 3 + (full_ckpt ? 2 : 0);
}

double cpb_tp_mlp_comm_s(const cpb_sim_hw *hw, int tp, double tokens_per_gpu, double D, int full_ckpt)
{
    if (tp <= 1 || !(tokens_per_gpu > 0) || !(D > 0)) return 0.0;
    int gpn = hw->gpus_per_node > 0 ? hw->gpus_per_node : 8;
    double bw = tp > gpn ? hw->inter_busbw : hw->coll_busbw, lat = tp > gpn ? hw->inter_lat : hw->coll_lat;
    if (!(bw > 0)) return 0.0;
    /* one all-gather or reduce-scatter of the [tp x s, D] bf16 tensor: (tp - 1)/tp of it per rank */
    double one = (double)(tp - 1) / tp * tp * tokens_per_gpu * D * 2.0 / bw + lat;
    return cpb_tp_mlp_collectives(full_ckpt) * one;
}
