/* flops_nemo.h — the third model-FLOP convention, `nemo` (results/README.md "Model FLOPs
 * and MFU"): the count NVIDIA NeMo's performance tables divide by the step time.
 *
 * Source: NVIDIA/NeMo nemo/utils/flops_formulas.py `llama2()` / `llama3()` at tag
 * v2.3.0rc2 (9ff7e755, the NeMo 25.04.rc2 container), per global batch:
 *
 *     gbs S L D^2 (12 + 12 G/H + 18 F/D + 12 S/D + 6 V/(L D))
 *
 * (`nemotron()`, whose MLP has two matrices, has 12 F/D in place of 18 F/D: 6 m F/D with
 * m the MLP's matrices, which is how this file reads the MLP term for any model).  The
 * attention core is 12 S^2 D per layer: Q K^T and P V over the whole S x S score matrix,
 * no causal half, forward and two backward GEMMs; Megatron-LM's count halves it
 * (flops_formulas.py adopted the causal half only in NVIDIA/NeMo#14424, 2025-08).  The
 * projections are written in D^2 and G/H, i.e. NeMo takes H d = D: this file keeps the
 * formula as written, so for a model with H d != D it prints what NeMo would print, not
 * the matrices' FLOPs.  LoRA is not discounted (the formula has no term for it).
 *
 * The NeMo 24.03-era tables (NeMo-Framework-Launcher examples/README.md at 693244ac,
 * 2024-03-05: Llama2-7B 15066 tokens/s/GPU at 694 TFLOP/s/GPU, Llama2-70B 1594 at 708)
 * are this count to three digits (46.09 and 444.5 GFLOP/token), the causal-half count
 * is 7% and 4% lower: docs/external.md "The NeMo rows". */
#ifndef CPB_FLOPS_NEMO_H
#define CPB_FLOPS_NEMO_H

#include "cpb.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cpb_model_spec;

/* One training step's model FLOPs on one sequence of p->S tokens, convention nemo (above). */
double cpb_model_nemo_flops(const cpb_problem *p, const struct cpb_model_spec *sp);
/* One attention layer's share of it (layer rows): S D^2 (12 + 12 G/H) + 12 S^2 D. */
double cpb_layer_nemo_flops(const cpb_problem *p);

#ifdef __cplusplus
}
#endif

#endif
