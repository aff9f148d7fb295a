/* cpb_attn_route.h — which attention implementation serves a call.
 *
 * Two implementations exist on GPUs: cuDNN's fused SDPA (through cudnn-frontend) and our
 * own kernels.  Which one serves a call is decided here, by one pure function of the call
 * and the --attn choice, in the runtime front-end, before any backend sees the op.  So the
 * cpu and sim backends make the same decision as the cuda backend, allocate the same
 * workspace and temporaries for it, and "sim bytes == cpu bytes" holds for every --attn.
 *
 * What cuDNN serves directly: bf16 q, k, v, o (and dO, dq, dk, dv); head dim a multiple of 8
 * up to 128; GQA; [rows][heads][d] views with 16-byte aligned offsets and strides; no mask,
 * the causal mask aligned top-left (q_pos0 == k_pos0) or bottom-right (q_pos0 - k_pos0 ==
 * sk - sq, both lengths multiples of 64: the last query sees every key), or a causal call in
 * which every query sees every key; lse out; a backward from q, k, v, o, dO and an external lse.
 * Adapted (aligned temporaries plus a copy or axpby, all in the front-end, so every backend
 * counts them): a forward whose o is fp32 or unaligned (ring's merge accumulators), an lse
 * view that is not 16-byte aligned, a backward that accumulates into dq, dk, dv or whose
 * gradients are fp32 or unaligned.  Our kernels: everything else (a backward with no o,
 * general position offsets, fp32 inputs, tensors past cuDNN's 32-bit indexing). */
#ifndef CPB_ATTN_ROUTE_H
#define CPB_ATTN_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "cpb.h"

#ifdef __cplusplus
extern "C" {
#endif

/* FA2, FA3: FlashAttention-2 and -3, simulator-only accounting inputs (--attn fa2|fa3): only
 * a backend that models time serves them (the sim: published curves, backends/sim/
 * sim_attn_curves.c; their workspace rule below); the cpu and cuda backends have no such
 * kernel and refuse them (docs/attention.md, "FlashAttention 2 and 3 in the simulator"). */
typedef enum cpb_attn_impl {
    CPB_ATTN_OWN = 0,
    CPB_ATTN_CUDNN = 1,
    CPB_ATTN_FA2 = 2,
    CPB_ATTN_FA3 = 3,
    CPB_ATTN_IMPL_COUNT
} cpb_attn_impl;
const char *cpb_attn_impl_name(cpb_attn_impl i); /* "own", "cudnn", "fa2", "fa3" */

/* --attn: "own" (always our kernels), "cudnn" (cuDNN wherever it serves the call; an error
 * where the backend has no cuDNN), "auto" (cuDNN wherever it serves the call and the
 * backend has it, else ours), "fa2" / "fa3" (FlashAttention-2 / -3 wherever it serves the
 * call, else ours; an error where the backend does not model them).  The cpu and sim
 * backends model a GPU with cuDNN; only the sim models FlashAttention. */
typedef enum cpb_attn_choice {
    CPB_ATTN_CHOOSE_AUTO = 0,
    CPB_ATTN_CHOOSE_CUDNN,
    CPB_ATTN_CHOOSE_OWN,
    CPB_ATTN_CHOOSE_FA2,
    CPB_ATTN_CHOOSE_FA3
} cpb_attn_choice;
/* the choice named s ("auto", "cudnn", "own", "fa2", "fa3"; NULL or "" = auto); -1 when unknown */
int cpb_attn_choice_parse(const char *s);

/* what the backend offers the route (the caps argument of cpb_attn_route_call) */
enum {
    CPB_ATTN_CAP_CUDNN = 1,       /* cuDNN attention is present (or modelled: cpu, sim) */
    CPB_ATTN_CAP_FLASH_MODEL = 2, /* FlashAttention 2/3 are modelled (the sim backend only) */
};

/* The mask cuDNN applies to a call the route sent it: none (not causal, or every query sees
 * every key), causal aligned top-left (query i sees keys 0..i) or bottom-right (query i sees
 * keys 0..i + sk - sq). */
enum { CPB_ATTN_MASK_NONE = 0, CPB_ATTN_MASK_TOP_LEFT = 1, CPB_ATTN_MASK_BOTTOM_RIGHT = 2 };
int cpb_attn_cudnn_mask(const cpb_attn_args *a);

/* what an adapted cuDNN call puts in temporaries */
enum {
    CPB_ATTN_ADAPT_O = 1,     /* forward o: written to a bf16 temporary, then copied */
    CPB_ATTN_ADAPT_LSE = 2,   /* lse: a contiguous fp32 temporary (copied out, or in for a backward) */
    CPB_ATTN_ADAPT_GRADS = 4, /* backward dq, dk, dv: bf16 temporaries, then axpby */
};

typedef struct cpb_attn_route {
    cpb_attn_impl impl;
    int adapt;        /* CPB_ATTN_ADAPT_* bits (cuDNN only) */
    int unavailable;  /* --attn cudnn / fa2 / fa3 on a backend without it: the call is an error */
    char why[160];    /* why our kernels serve the call (impl == own), or why the chosen
                         implementation is unavailable, else "" */
} cpb_attn_route;

/* The decision for one call (bwd: a backward).  caps: CPB_ATTN_CAP_* bits of the backend
 * (1 = cuDNN only: the cpu backend; the sim adds CPB_ATTN_CAP_FLASH_MODEL).  Pure: no
 * context, no state.
 * FlashAttention (--attn fa2|fa3) serves what cuDNN serves with three differences read from
 * its source: head dims up to 256, no 2^31-element limit (its offsets are int64: index_t in
 * csrc/flash_attn/src/flash.h), and a causal mask aligned bottom-right (q_pos0 - k_pos0 ==
 * sk - sq; FlashAttention >= 2.1), which for sq == sk is cuDNN's top-left.  Its lse is its
 * own contiguous softmax_lse [h][sq] buffer, and its backward writes dq, dk, dv without
 * accumulation, so the same temporaries as cuDNN's adapted calls stand for them. */
void cpb_attn_route_call(const cpb_attn_args *a, int bwd, cpb_attn_choice choice, int caps,
                         cpb_attn_route *out);

/* Bytes of cuDNN's workspace the front-end allocates (tag workspace) for a call it routes
 * to cuDNN: a declared bound, so the cpu and sim backends track the bytes the cuda backend
 * uses; the cuda backend fails (status error) when a plan needs more.  As cudnn-frontend
 * 1.32 sizes it for our dense graphs (attn_route.c cites the lines): the engine's own
 * workspace (an assumed 1 MiB) forward; backward also the fp32 dQ accumulator [hq][L][d],
 * the fp32 softmax sum [hq][L] and 8 bytes of sequence lengths.  Sized with
 * L = max(sq, sk) for both lengths, so the ranks of a zigzag ring step (whose shapes are
 * (s, s/2) on some ranks and (s/2, s) on others) allocate alike. */
int64_t cpb_attn_cudnn_workspace_bytes(const cpb_attn_args *a, int bwd);
/* Bytes of FlashAttention's own device buffers for one call (impl CPB_ATTN_FA2 or FA3),
 * tracked as workspace, as each mha_bwd allocates them (attn_route.c cites the lines):
 * forward 0 (its softmax_lse is the lse temporary; split-KV accumulators are not allocated
 * for training-sized calls, see attn_route.c); backward
 *   FA2 (csrc/flash_attn/flash_api.cpp, mha_bwd): softmax_d fp32 [hq][sq128] + dq_accum fp32
 *       [sq128][hq][d32] + for GQA dk_expanded, dv_expanded bf16 [sk][hq][d] each;
 *   FA3 (hopper/flash_api.cpp, mha_bwd): softmax_d and softmax_lse_log2 fp32 [hq][sq128]
 *       each + dq_accum fp32 [hq][sq128 * dr] + for GQA dk_accum, dv_accum fp32
 *       [hk][sk128 * dr] each + the int32 semaphores;
 * sq128 = sq rounded up to 128, d32 = d rounded up to 32, dr = FA3's rounded head dim.
 * Sized with L = max(sq, sk) for both lengths, as the cuDNN bound (ranks allocate alike). */
int64_t cpb_attn_flash_workspace_bytes(const cpb_attn_args *a, int bwd, cpb_attn_impl impl);
/* elements of a temporary of an adapted call: o and dq bf16 [L][hq][d], dk and dv bf16
 * [L][hk][d], lse fp32 [hq][L] (L as above) */
enum { CPB_ATTN_TMP_O, CPB_ATTN_TMP_LSE, CPB_ATTN_TMP_DQ, CPB_ATTN_TMP_DK, CPB_ATTN_TMP_DV };
int64_t cpb_attn_cudnn_temp_elems(const cpb_attn_args *a, int which);

/* The implementations a trial's attention calls used: counts per (fwd/bwd, impl), and the
 * first reason our kernels served a call of each class. */
typedef struct cpb_attn_usage {
    int64_t calls[2][CPB_ATTN_IMPL_COUNT]; /* [bwd][impl] */
    char own_why[2][160];
} cpb_attn_usage;
/* "cudnn", "own", "fa2", "fa3", "mixed" (more than one), or "" when there was no attention call */
const char *cpb_attn_usage_impl(const cpb_attn_usage *u);
/* the same for one call class: the forward calls (bwd 0) or the backward calls (bwd 1) */
const char *cpb_attn_usage_class_impl(const cpb_attn_usage *u, int bwd);
/* "fwd cudnn 12, bwd own 12 (no o: ...)" */
void cpb_attn_usage_describe(const cpb_attn_usage *u, char *out, size_t len);

#ifdef __cplusplus
}
#endif
#endif
