/* cpb_reference.h — the single-device reference of the layer (DESIGN.md section 1): the
 * oracle verify compares every method against.  Straightforward fp64 code with a
 * materialised S x S attention per head; it shares nothing with the methods' path (no
 * runtime ops, no backend), so an error in the runtime cannot hide in both. */
#ifndef CPB_REFERENCE_H
#define CPB_REFERENCE_H

#include <stddef.h>

#include "cpb.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Global inputs, row-major fp32 (already rounded to the storage dtype by the caller):
 * x, dy [S][D]; wq [D][H*d]; wk, wv [D][G*d]; wo [H*d][D]. */
typedef struct cpb_ref_in {
    const float *x, *wq, *wk, *wv, *wo, *dy;
} cpb_ref_in;

/* Caller-allocated fp64 outputs of the shapes of y, dx (= x), dwq (= wq), ... */
typedef struct cpb_ref_out {
    double *y, *dx, *dwq, *dwk, *dwv, *dwo;
} cpb_ref_out;

/* The largest S the reference accepts (it materialises S x S per head). */
#define CPB_REF_MAX_SEQ 16384

/* Forward and backward of the layer for p's S, D, H, G, d, rope_base (C, dtype and method
 * options are ignored).  Returns CPB_OK, CPB_ERR_INVALID (bad shape) or
 * CPB_ERR_NOMEM_HOST, with a message in err. */
int cpb_reference_layer(const cpb_problem *p, const cpb_ref_in *in, cpb_ref_out *out, char *err,
                        size_t err_len);

/* RoPE (Llama interleaved pairs) in place on v [rows][heads][d], row r at global position
 * pos0 + r; fp64 angles pos * base^(-2i/d).  inverse = 1 rotates by -angle. */
void cpb_reference_rope(double *v, int64_t rows, int heads, int d, int64_t pos0, double base,
                        int inverse);

#ifdef __cplusplus
}
#endif
#endif
