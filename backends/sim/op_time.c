/* op_time.c — modelled duration of one compute op or copy (timeline.h states the rules;
 * the constants come from the GPU profile, driver/gpu_profiles.c). */
#include <math.h>

#include "timeline.h"

/* Fraction of the SMs kept busy when `units` equal thread blocks run in waves of num_sms:
 * the last, partial wave leaves SMs idle (wave quantization). */
static double wave_eff(const cpb_sim_hw *hw, double units)
{
    if (units <= 0) return 1.0;
    double sms = hw->num_sms > 0 ? hw->num_sms : 1;
    double waves = ceil(units / sms);
    return units / (waves * sms);
}

double cpb_sim_gemm_eff(const cpb_sim_hw *hw, int64_t m, int64_t n, int64_t k, int64_t batch)
{
    double tm = hw->gemm_tile_m > 0 ? hw->gemm_tile_m : 128;
    double tn = hw->gemm_tile_n > 0 ? hw->gemm_tile_n : 128;
    double tiles = ceil((double)m / tm) * ceil((double)n / tn) * (double)(batch > 0 ? batch : 1);
    /* the fixed cost of a tile (prologue, epilogue, pipeline fill) is amortized over the
     * reduction depth k */
    double depth = (double)k / ((double)k + hw->gemm_k_half);
    return hw->gemm_eff_max * wave_eff(hw, tiles) * depth;
}

double cpb_sim_attn_eff(const cpb_sim_hw *hw, int bwd, int64_t rows, int64_t heads, int64_t pairs)
{
    if (rows <= 0 || pairs <= 0) return 1.0;
    double tr = hw->attn_tile_rows > 0 ? hw->attn_tile_rows : 128;
    double blocks = ceil((double)rows / tr) * (double)heads;
    /* keys per query row: the work over which a row block's fixed cost (loading Q, writing
     * O and lse, the partly masked diagonal tile) is amortized */
    double kv = (double)pairs / (double)rows;
    double k_half = bwd ? hw->attn_bwd_k_half : hw->attn_fwd_k_half;
    double emax = bwd ? hw->attn_bwd_eff_max : hw->attn_fwd_eff_max;
    return emax * wave_eff(hw, blocks) * kv / (kv + k_half);
}

static double roofline(const cpb_sim_hw *hw, double flops, double eff, double bytes)
{
    double tc = (flops > 0 && eff > 0) ? flops / (hw->peak_flops * eff) : 0.0;
    double tm = bytes > 0 ? bytes / hw->hbm_bw : 0.0;
    return (tc > tm ? tc : tm) + hw->launch;
}

double cpb_sim_op_time(const cpb_sim_hw *hw, const sim_entry *e)
{
    if (e->phase == SIM_PHASE_SETUP) return 0.0;
    switch (e->kind) {
    case CPB_OP_GEMM:
        return roofline(hw, e->flops, cpb_sim_gemm_eff(hw, e->w0, e->w1, e->w2, e->w3), e->bytes);
    case CPB_OP_ATTN_FWD:
        return roofline(hw, e->flops, cpb_sim_attn_eff(hw, 0, e->w0, e->w1, e->w2), e->bytes);
    case CPB_OP_ATTN_BWD:
        return roofline(hw, e->flops, cpb_sim_attn_eff(hw, 1, e->w0, e->w1, e->w2), e->bytes);
    case CPB_OP_COPY:
        if (e->pcie != SIM_PCIE_NONE) {
            double share = e->share > 1.0 ? e->share : 1.0;
            double bw = hw->pcie_node_bw / share;
            if (hw->pcie_gpu_bw < bw) bw = hw->pcie_gpu_bw;
            /* the front-end counts source plus destination bytes; the link moves one copy */
            return (e->bytes / 2.0) / bw + hw->launch;
        }
        return roofline(hw, 0, 0, e->bytes);
    default:
        /* RoPE, delta, merge, fill, axpby: streaming kernels bound by HBM */
        return roofline(hw, 0, 0, e->bytes);
    }
}
