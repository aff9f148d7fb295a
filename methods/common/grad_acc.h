/* grad_acc.h — the accumulators of a layer's backward shared by methods: the dW partials
 * zeroed before the GEMMs accumulate into them, and dx zeroed before the projections'
 * GEMMs add into it. */
#ifndef CPB_GRAD_ACC_H
#define CPB_GRAD_ACC_H

#include "cpb_method.h"

#ifdef __cplusplus
extern "C" {
#endif

/* zero the dW partials (backward overwrites them; its GEMMs accumulate in fp32) */
int cpb_zero_dw(cpb_ctx *ctx, cpb_layer *L);
/* dx accumulates over q, k, v (and the stages / head groups) in the layer's dx itself, in
 * the storage dtype, one GEMM (beta = 1) per projection and stage: what the references do
 * (UPipe's untied_ulysses/fully_fused_attn.py: dx.addmm_ per stage in bf16; Ulysses' q, k, v
 * nn.Linear backwards summed by autograd in bf16).  cpb_dx_begin zeroes L->dx and hands it
 * out. */
int cpb_dx_begin(cpb_ctx *ctx, cpb_layer *L, cpb_buf **dx);

#ifdef __cplusplus
}
#endif
#endif
