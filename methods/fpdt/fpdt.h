/* fpdt.h — FPDT (Fully Pipelined Distributed Transformer, DeepSpeed), shared between the
 * files of methods/fpdt/: the chunk geometry, the state forward hands to backward, and the
 * packing helpers for the per-chunk Ulysses all-to-alls.
 *
 * FPDT is Ulysses applied per sequence chunk (DESIGN.md section 4).  The chunk is global:
 * `chunk` tokens, u = S / chunk chunks, c = chunk / C local tokens per rank per chunk.  Rank
 * r's local chunk i holds global tokens [i*chunk + r*c, i*chunk + (r+1)*c), so the
 * all-to-all of local chunk i yields the contiguous global segment i on every rank.
 *
 * Tensors of a chunk on the wire and on the host ("packed" = all-to-all slot order):
 *   sequence side, packed  [C slots][c tokens][blk]   slot m goes to / comes from rank m
 *   head side              [chunk tokens][heads][d]   tokens in global order
 * For K,V with G < C the kv heads are replicated: rank m gets kv head m / rep, so the
 * packed K send buffer has its G distinct blocks at slots b*rep and copies in between.
 */
#ifndef CPB_FPDT_H
#define CPB_FPDT_H

#include "cpb.h"
#include "cpb_method.h"

/* DeepSpeed's and the paper's chunk size, in global tokens */
#define FPDT_DEFAULT_CHUNK 65536

typedef struct fpdt_dims {
    int C, rank;
    int64_t S, D;
    int H, G, d;
    int64_t chunk;    /* global tokens per chunk */
    int64_t u;        /* chunks */
    int64_t c;        /* local tokens per rank per chunk */
    int hq;           /* query heads per rank after the all-to-all: H / C */
    int hk;           /* kv heads per rank: G / C, or 1 when replicated (G < C) */
    int rep;          /* ranks sharing one kv head: C / G when G < C, else 1 */
    int nb;           /* distinct kv blocks across ranks: C / rep */
    int64_t nq;       /* elements of a head-side q-like chunk: chunk * hq * d (= c * H * d) */
    int64_t nkv;      /* elements of a head-side k or v chunk: chunk * hk * d */
    int64_t nlse;     /* elements of a chunk's lse or delta: hq * chunk (fp32) */
    cpb_dtype E;      /* storage dtype */
    double base;      /* RoPE base */
    int bwd_o;        /* pipelined backward: the KV loop loads o_j (--fpdt-bwd o) rather than delta_j */
} fpdt_dims;

/* Fill m for problem p and rank; CPB_ERR_INVALID with a reason in why when p is refused. */
int fpdt_dims_init(const cpb_problem *p, int rank, fpdt_dims *m, char *why, size_t why_len);

/* What forward leaves in pinned host memory for backward: u chunks of each. */
typedef struct fpdt_state {
    fpdt_dims m;
    cpb_buf *q_h;    /* [u][chunk][hq][d] q after RoPE, head layout */
    cpb_buf *k_h;    /* [u][chunk][hk][d] K after RoPE */
    cpb_buf *v_h;    /* [u][chunk][hk][d] V */
    cpb_buf *o_h;    /* [u][chunk][hq][d] attention output, head layout (for delta, or loaded by the KV loop) */
    cpb_buf *os_h;   /* [u][c][H*d] attention output, sequence layout (for dWo) */
    cpb_buf *lse_h;  /* [u][hq][chunk] fp32 */
} fpdt_state;

/* the two schedules (--fpdt-impl), each with its own state in the block the harness gives
 * forward (fpdt_method.c sizes it for either): the pipelined one (fpdt_fwd.c, fpdt_bwd*.c)
 * keeps an fpdt_state, DeepSpeed's (fpdt_ds*.c) an fpdt_ds */
int fpdt_pipe_forward(cpb_ctx *ctx, cpb_layer *L, void *state);
int fpdt_pipe_backward(cpb_ctx *ctx, cpb_layer *L, void *state);
int fpdt_ds_forward(cpb_ctx *ctx, cpb_layer *L, void *state);
int fpdt_ds_backward(cpb_ctx *ctx, cpb_layer *L, void *state);
/* 1 when p runs the pipelined schedule (--fpdt-impl pipelined); DeepSpeed's is the default */
int fpdt_pipelined(const cpb_problem *p);

/* ---- packing helpers (fpdt_pack.c) ---- */

/* rows [i*c, (i+1)*c) of a [s][ld] layer tensor */
cpb_view fpdt_rows(const fpdt_dims *m, cpb_buf *b, int64_t i, int64_t ld);

/* send = x_i W, packed: slot b*rep + t (t < rep) holds x_i times W's column block b
 * (nblocks blocks of blk columns of a [D][nblocks*blk] weight). */
int fpdt_project_packed(cpb_ctx *ctx, int stream, const fpdt_dims *m, cpb_view x_i, cpb_buf *w,
                        int nblocks, int64_t blk, int rep, cpb_buf *send);

/* seq [c][nblocks*blk] = the packed receive buffer with its rep replicas of each block
 * summed (the gradient of a replicated kv head is the sum of its replicas). */
int fpdt_unpack(cpb_ctx *ctx, int stream, const fpdt_dims *m, cpb_buf *recv, int nblocks,
                int64_t blk, int rep, cpb_buf *seq);

/* the head-side view of a chunk tensor [chunk][heads][d] at element offset off */
cpb_view fpdt_head_view(const fpdt_dims *m, cpb_buf *b, int64_t off, int heads);
/* the lse/delta view [hq][chunk] (fp32) at element offset off */
cpb_view fpdt_lse_view(const fpdt_dims *m, cpb_buf *b, int64_t off);
/* the global positions of chunk i after the all-to-all: [i*chunk, (i+1)*chunk) */
void fpdt_chunk_positions(const fpdt_dims *m, int64_t i, cpb_segs *out);

#endif
