/* cpu_internal.h — what the files of the cpu backend share.  The backend runs every op in
 * program order on the calling thread (streams and events are orderings that program
 * order already satisfies), math in fp32 over bf16 or fp32 storage, collectives over MPI
 * (or locally when the world is one process without MPI). */
#ifndef CPU_INTERNAL_H
#define CPU_INTERNAL_H

#include "cpb_backend.h"

/* ops, one file each (cpu_gemm.c, cpu_rope.c, cpu_attention_*.c, cpu_elementwise.c) */
int cpu_gemm(cpb_ctx *ctx, const cpb_op *op);
int cpu_rope(cpb_ctx *ctx, const cpb_op *op);
int cpu_attn_fwd(cpb_ctx *ctx, const cpb_op *op);
int cpu_attn_bwd(cpb_ctx *ctx, const cpb_op *op);
int cpu_attn_delta(cpb_ctx *ctx, const cpb_op *op);
int cpu_lse_merge(cpb_ctx *ctx, const cpb_op *op);
int cpu_copy(cpb_ctx *ctx, const cpb_op *op);
int cpu_fill(cpb_ctx *ctx, const cpb_op *op);
int cpu_axpby(cpb_ctx *ctx, const cpb_op *op);
int cpu_fill_random(cpb_ctx *ctx, const cpb_op *op);
int cpu_sumsq(cpb_ctx *ctx, const cpb_op *op);

/* collectives (cpu_collectives.c) */
int cpu_run_coll(cpb_ctx *ctx, const cpb_coll *c);
int cpu_group_create(cpb_ctx *ctx, cpb_group *g);
void cpu_group_destroy(cpb_ctx *ctx, cpb_group *g);
/* largest message, in bytes, the backend hands to one MPI call (counts are int in MPI) */
int64_t cpu_coll_piece_bytes(void);

/* fp32 scratch internal to the backend (not tracked: it stands for registers and shared
 * memory of a GPU kernel, or the converted operands of a bf16 GEMM).  Fails with a
 * message naming `what`. */
float *cpu_scratch(cpb_ctx *ctx, int64_t nelem, const char *what);

#endif
