/* internal.h — helpers shared by the runtime front-end files. */
#ifndef CPB_INTERNAL_H
#define CPB_INTERNAL_H

#include "cpb_backend.h"

/* bounds and sanity of a view; `what` names the op and operand in the message */
int cpb_view_check(cpb_ctx *ctx, const char *what, const cpb_view *v);
/* 1 when cpb_view_check would pass: per-op paths test this first and format the
 * message naming the operand only on failure */
int cpb_view_ok(const cpb_view *v);
/* sets ctx->opname to "<range>/<op>" and advances the stream's race clock */
void cpb_op_begin(cpb_ctx *ctx, int stream, const char *op);
/* number of (query, key) pairs attention computes (causal with offsets, or all) */
int64_t cpb_attn_pairs(int64_t sq, int64_t sk, int causal, int64_t q_pos0, int64_t k_pos0);

#endif
