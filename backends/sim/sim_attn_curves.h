/* sim_attn_curves.h — FlashAttention-2 and -3 (--attn fa2|fa3) in the simulator: their
 * published TFLOP/s over sequence length and head dim, and what a GPU profile makes of them;
 * and cuDNN's SDPA where a measured curve of it is published (the B200, below).
 * Estimates, never measurements of ours: every row that used them says so (the results
 * column `estimates`; docs/attention.md, "FlashAttention 2 and 3 in the simulator"). */
#ifndef CPB_SIM_ATTN_CURVES_H
#define CPB_SIM_ATTN_CURVES_H

#include "sim_hw.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The benchmark the curves come from (FlashAttention-3 paper, Shah et al. 2024, section 4.1):
 * bf16, batch x length = 16384 tokens, hidden (heads x head dim) = 2048, on an H100 80GB
 * SXM5, whose dense bf16 peak is CPB_FLASH_CURVE_PEAK. */
#define CPB_FLASH_CURVE_TOKENS 16384.0
#define CPB_FLASH_CURVE_HIDDEN 2048.0
#define CPB_FLASH_CURVE_PEAK 989.4e12

/* TFLOP/s of impl (CPB_ATTN_FA2 or CPB_ATTN_FA3) on the benchmark's H100 at length L and
 * head dim d: linear in log2(L) between the published lengths (512 .. 16K; the end values
 * outside), linear in log2(d) between the published head dims (64, 128, 256; the end
 * values outside; the backward is published for 64 and 128 only).  causal: the lower-
 * triangle call (FLOPs counted over the triangle, as the paper does).  The causal
 * backward is not published: it is the non-causal backward times the forward's
 * causal/non-causal ratio at the same L and d (an estimate).  0 for another impl. */
double cpb_sim_flash_tflops(int impl, int bwd, int causal, double L, double d);

/* The fraction of hw's peak the benchmark's call of length L reaches on hw: the curve over
 * CPB_FLASH_CURVE_PEAK on a Hopper profile (sm_arch 90: the same kernel, the same fraction
 * of a smaller or larger peak); FA2 on Ampere (sm_arch 80) scaled so that its forward at
 * d 128, 16K, non-causal reaches the FlashAttention-2 paper's 73% of the A100's peak (the
 * curve's shape is the H100's); FA2 on any other arch at the H100's TFLOP/s (its mma.sync
 * path does not use the newer tensor-core instructions).  All estimates. */
double cpb_sim_flash_bench_eff(const cpb_sim_hw *hw, int impl, int bwd, int causal, double L, double d);

/* "FlashAttention-3 (Shah et al. 2024, Fig. 5-6, H100 bf16)" and the like, for reports */
const char *cpb_sim_flash_source(int impl);

/* cuDNN's fused SDPA (--attn cudnn) measured on a part, where it is published: the
 * profile's cpb_sim_hw.attn_fwd_curve / attn_bwd_curve names the table (0: none; the
 * eff_max, k_half form of op_time.c then runs).
 * CPB_CUDNN_CURVE_B200: NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training (commit
 * 9793df5, cuDNN 9.10.2, PyTorch 2.8 CUDNN_ATTENTION, "NVIDIA B200"): batch 1, 128 query
 * heads, 8 KV heads, d 128, causal, bf16, lengths 512 .. 128K. */
#define CPB_CUDNN_CURVE_NONE 0
#define CPB_CUDNN_CURVE_B200 1
#define CPB_CUDNN_B200_HEADS 128.0 /* query heads of the benchmark's call (batch 1) */
#define CPB_CUDNN_B200_D 128.0
#define CPB_CUDNN_B200_MIN_LEN 512.0
#define CPB_CUDNN_B200_MAX_LEN 131072.0

/* TFLOP/s (causal FLOPs: the triangle, the script's own count) of the benchmark's causal
 * call of length L: linear in log2(L) between the published lengths, the end values
 * outside.  0 for curve NONE or an unknown one. */
double cpb_sim_cudnn_tflops(int curve, int bwd, double L);
/* that rate as a fraction of hw's peak (the achieved TFLOP/s kept when the peak is
 * calibrated); 0 when there is no curve */
double cpb_sim_cudnn_bench_eff(const cpb_sim_hw *hw, int curve, int bwd, double L);
/* the source, for reports ("" for none) */
const char *cpb_sim_cudnn_source(int curve);

#ifdef __cplusplus
}
#endif
#endif
