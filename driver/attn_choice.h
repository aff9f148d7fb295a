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

/* the knob every point has: attn = auto | cudnn | own | fa2 | fa3 */
extern const cpb_knob cpb_attn_knobs[];

/* 1 when --attn `choice` is an estimate-only model (fa2, fa3: the simulator's published
 * curves), which `cpbench plan` tries only when asked for */
int cpb_attn_choice_is_estimate(const char *choice);

/* CPB_OK when p's --attn can run on backend be, else CPB_ERR_REFUSED with why: fa2 and fa3
 * are simulator-only accounting inputs (the cpu and cuda backends have no FlashAttention) */
int cpb_attn_backend_refusal(const cpb_problem *p, const cpb_backend *be, char *why, size_t why_len);
/* CPB_OK when p's --attn exists on the GPU of profile prof, else CPB_ERR_REFUSED with why:
 * FlashAttention-3's kernels are for Hopper (sm90) only */
struct cpb_gpu_profile;
int cpb_attn_gpu_refusal(const cpb_problem *p, const struct cpb_gpu_profile *prof, char *why, size_t why_len);

/* "attention: cudnn (compiled in; cuDNN 9.19.0 from ...), own" or "attention: cudnn (not
 * compiled in: why), own" for the cuda backend be (NULL: no cuda backend in this build) */
void cpb_attn_impls_line(const cpb_backend *cuda, char *out, size_t len);

/* the row's attention columns from what the context's calls used since the last reset:
 * attn_impl, attn_fwd_impl, attn_bwd_impl (the implementation per call class), attn_calls */
struct cpb_row;
void cpb_attn_row_fill(const cpb_ctx *ctx, struct cpb_row *r);
/* the fraction of hw's peak a long causal attention forward of p's --attn reaches (cudnn,
 * auto: the profile's cuDNN ceiling; own: ours; fa2, fa3: the published 16K causal point
 * at p's head dim): what the model scope's selective recompute of the attention core costs */
struct cpb_sim_hw;
double cpb_attn_fwd_ceiling(const cpb_problem *p, const struct cpb_sim_hw *hw);
/* the row's estimates column: attn.fa2 / attn.fa3 where a call class ran on a published
 * curve, then gpu.KEY for each estimated figure of the profile (NULL: none) */
void cpb_attn_row_estimates(struct cpb_row *r, const struct cpb_gpu_profile *prof);

#ifdef __cplusplus
}
#endif
#endif
