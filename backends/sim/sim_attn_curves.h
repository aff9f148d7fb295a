/* sim_attn_curves.h — FlashAttention-2 and -3 (--attn fa2|fa3) in the simulator: their
 * published TFLOP/s over sequence length and head dim, and what a GPU profile makes of them.
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

#ifdef __cplusplus
}
#endif
#endif
