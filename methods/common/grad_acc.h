/* grad_acc.h — the accumulators of a layer's backward shared by methods: the dW partials
 * zeroed before the GEMMs accumulate into them, and an fp32 dx accumulator. */
#ifndef CPB_GRAD_ACC_H
#define CPB_GRAD_ACC_H

#include "cpb_method.h"

#ifdef __cplusplus
extern "C" {
#endif

/* zero the dW partials (backward overwrites them; its GEMMs accumulate in fp32) */
int cpb_zero_dw(cpb_ctx *ctx, cpb_layer *L);
/* dx accumulates over q, k, v and over the stages / head groups / chunks: in fp32, so the
 * error of a bf16 run does not grow with their number.  The accumulator is L->dx itself
 * when the storage is fp32, else a new fp32 buffer [s][D]; cpb_dx_acc_end writes L->dx and
 * frees it. */
int cpb_dx_acc_begin(cpb_ctx *ctx, cpb_layer *L, cpb_buf **dx32);
int cpb_dx_acc_end(cpb_ctx *ctx, cpb_layer *L, cpb_buf **dx32);

#ifdef __cplusplus
}
#endif
#endif
