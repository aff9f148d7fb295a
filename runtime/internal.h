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

/* cpb_repeat's log (repeat.c): each front-end call that changes a counter of the context
 * tells it, when ctx->rep_log is set, so that a replicated iteration can change them alike */
void cpb_repeat_log_alloc(cpb_ctx *ctx, int freed, int host, int64_t bytes, int tag);
void cpb_repeat_log_op(cpb_ctx *ctx, double flops, double pcie);
void cpb_repeat_log_coll(cpb_ctx *ctx, cpb_group *g, double bytes_sent);
void cpb_repeat_log_attn(cpb_ctx *ctx, int bwd, int impl);
void cpb_repeat_log_event(cpb_ctx *ctx);
/* the allocation hash's step (alloc.c): h after an allocation (ev 1) or free (2) */
uint64_t cpb_alloc_hash_put(uint64_t h, int ev, int64_t bytes, int tag);
/* `copies` more runs of a block of `events` allocations and frees (`allocs` of them
 * allocations) whose hash from 0 is `block`, on device (host 0) or pinned host memory, as
 * the allocator would count them (the count, the sequence hash, the buffer ids) */
void cpb_alloc_repeat(cpb_ctx *ctx, int host, uint64_t block, int64_t events, int64_t allocs, int64_t copies);

#endif
