/* sim_hw.h — the parameters of the simulator's timing model (one GPU type and its node).
 * driver/gpu_profiles.c fills them per GPU (with the source of every value) and from a
 * calibration file; timeline.c uses them.  All rates are in SI units (FLOP/s, bytes/s),
 * times in seconds. */
#ifndef CPB_SIM_HW_H
#define CPB_SIM_HW_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cpb_sim_hw {
    double peak_flops;       /* dense bf16 tensor-core peak */
    int num_sms;             /* streaming multiprocessors (wave quantization) */
    /* GEMM: eff = gemm_eff_max * wave(tiles * splits) * kk / (kk + gemm_k_half), tiles over
     * m, n and the batch, kk = k / splits (split-K when tiles < num_sms; op_time.c) */
    double gemm_eff_max;
    double gemm_k_half;      /* reduction depth at which a GEMM reaches half its efficiency */
    int gemm_tile_m, gemm_tile_n; /* output tile of one thread block (wave quantization) */
    /* attention: eff = eff_max * wave(rows/attn_tile_rows * heads) * kv / (kv + k_half),
     * kv = the average number of keys one query row attends in the call (pairs / rows) */
    double attn_fwd_eff_max, attn_fwd_k_half;   /* cuDNN's fused SDPA (--attn cudnn) */
    double attn_bwd_eff_max, attn_bwd_k_half;
    /* our kernels (--attn own, and calls cuDNN does not serve): the same curve's shape with
     * their own ceilings */
    double attn_own_fwd_eff_max, attn_own_bwd_eff_max;
    int attn_tile_rows;      /* query rows of one thread block */
    double hbm_bw;           /* bytes/s achieved by streaming kernels (element-wise ops) */
    /* communication: bus bandwidth in the nccl-tests convention (cpb_coll.bytes_sent is
     * already in bus bytes), per GPU */
    double a2a_busbw;        /* all-to-all inside a node (NVLink) */
    double sendrecv_busbw;   /* send/recv inside a node */
    double coll_busbw;       /* all-gather, reduce-scatter, all-reduce, broadcast, reduce */
    double inter_busbw;      /* per GPU across nodes (network) */
    double coll_lat;         /* latency of one collective inside a node */
    double inter_lat;        /* latency of one collective spanning nodes */
    /* host <-> device copies */
    double pcie_gpu_bw;      /* pinned copies, one direction, one GPU alone */
    double pcie_node_bw;     /* all GPUs of a node together, one direction */
    double pcie_pageable_bw; /* a pageable (not pinned) copy, one GPU, one direction */
    double host_fill_bw;     /* bytes/s a host thread fills pinned memory at (a CPU memset) */
    double launch;           /* per kernel / copy launch overhead */
    int gpus_per_node;
    int sm_arch;             /* compute capability x 10 (80 Ampere, 90 Hopper, 100 Blackwell):
                                which attention kernels exist (FlashAttention-3 needs 90) and
                                how the FlashAttention curves carry over (sim_attn_curves.h) */
    /* cuDNN's measured curve of this part (CPB_CUDNN_CURVE_*, sim_attn_curves.h), per pass;
     * 0: none, the attn_*_eff_max / k_half form above.  A calibrated attn_fwd_tflops /
     * attn_bwd_tflops replaces it (gpu_profiles.c) */
    int attn_fwd_curve, attn_bwd_curve;
} cpb_sim_hw;

#ifdef __cplusplus
}
#endif
#endif
