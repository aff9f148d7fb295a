/* attn_choice.h — the --attn knob (which attention implementation serves the calls it can:
 * runtime/backend/cpb_attn_route.h) and how the driver reports the implementations: the
 * results row's attn_impl and attn_calls, the provenance, `cpbench list`. */
#ifndef CPB_ATTN_CHOICE_H
#define CPB_ATTN_CHOICE_H

#include <stddef.h>

#include "cpb_backend.h"
#include "cpb_method.h"

#ifdef __cplusplus
extern "C" {
#endif

/* the knob every point has: attn = auto | cudnn | own */
extern const cpb_knob cpb_attn_knobs[];

/* "attention: cudnn (compiled in; cuDNN 9.19.0 from ...), own" or "attention: cudnn (not
 * compiled in: why), own" for the cuda backend be (NULL: no cuda backend in this build) */
void cpb_attn_impls_line(const cpb_backend *cuda, char *out, size_t len);

/* the row's attention columns from what the context's calls used since the last reset */
struct cpb_row;
void cpb_attn_row_fill(const cpb_ctx *ctx, struct cpb_row *r);

#ifdef __cplusplus
}
#endif
#endif
