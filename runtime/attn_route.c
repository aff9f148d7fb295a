/* attn_route.c — which attention implementation serves a call (cpb_attn_route.h). */
#include <stdio.h>
#include <string.h>

#include "cpb_attn_route.h"

const char *cpb_attn_impl_name(cpb_attn_impl i)
{
    switch (i) {
    case CPB_ATTN_CUDNN: return "cudnn";
    case CPB_ATTN_FA2: return "fa2";
    case CPB_ATTN_FA3: return "fa3";
    default: return "own";
    }
}

int cpb_attn_choice_parse(const char *s)
{
    if (!s || !*s || !strcmp(s, "auto")) return CPB_ATTN_CHOOSE_AUTO;
    if (!strcmp(s, "cudnn")) return CPB_ATTN_CHOOSE_CUDNN;
    if (!strcmp(s, "own")) return CPB_ATTN_CHOOSE_OWN;
    if (!strcmp(s, "fa2")) return CPB_ATTN_CHOOSE_FA2;
    if (!strcmp(s, "fa3")) return CPB_ATTN_CHOOSE_FA3;
    return -1;
}

/* cuDNN's kernels index a tensor with 32-bit offsets: its elements 0 .. span-1 must have
 * indices below 2^31, so a span of exactly 2^31 elements (Llama3-8B's q at 4M tokens with
 * 4 heads per rank: [2^22][4][128]) is still served */
#define CUDNN_MAX_SPAN ((int64_t)1 << 31)
/* the lengths of a bottom-right causal call are multiples of this (cpb_attn_route_call) */
#define CUDNN_BR_MULTIPLE 64

int cpb_attn_cudnn_mask(const cpb_attn_args *a)
{
    const int64_t off = a->q_pos0 - a->k_pos0;
    if (!a->causal || off >= a->k.rows - 1) return CPB_ATTN_MASK_NONE;
    return off == 0 ? CPB_ATTN_MASK_TOP_LEFT : CPB_ATTN_MASK_BOTTOM_RIGHT;
}

static int own(cpb_attn_route *r, const char *fmt, const char *what)
{
    r->impl = CPB_ATTN_OWN;
    r->adapt = 0;
    snprintf(r->why, sizeof r->why, fmt, what);
    return 0;
}

static int64_t span(const cpb_view *v)
{
    if (cpb_view_count(v) == 0) return 0;
    return (v->rows - 1) * v->row_stride + (v->heads - 1) * v->head_stride + v->dim;
}

/* a bf16 [rows][heads][d] operand taken as it is: 16-byte aligned start and strides, and
 * for cuDNN (limit32) indexable with 32-bit offsets */
static const char *operand_problem(const cpb_view *v, int limit32)
{
    if (!v->buf) return "missing";
    if (v->buf->dtype != CPB_BF16) return "not bf16";
    if (v->off % 8 || v->row_stride % 8 || (v->heads > 1 && v->head_stride % 8)) return "not 16-byte aligned";
    if (limit32 && span(v) > CUDNN_MAX_SPAN) return "past 2^31 elements";
    return NULL;
}

static const char *tensor_problem(const cpb_view *v)
{
    return operand_problem(v, 1);
}

/* --attn fa2|fa3: FlashAttention's rules (cpb_attn_route.h), read from its mha_fwd/mha_bwd
 * (csrc/flash_attn/flash_api.cpp, hopper/flash_api.cpp): bf16, head dim a multiple of 8 up
 * to 256 ("head_size should be a multiple of 8", get_max_headdim), int64 offsets, causal
 * aligned bottom-right, a backward from o and dO (it computes softmax_d = rowsum(dO * o)
 * itself: no delta input).  What it cannot take as it is goes through the temporaries
 * cuDNN's adapted calls use. */
static void flash_route(const cpb_attn_args *a, int bwd, cpb_attn_choice choice, int caps, cpb_attn_route *r)
{
    const cpb_attn_impl impl = choice == CPB_ATTN_CHOOSE_FA3 ? CPB_ATTN_FA3 : CPB_ATTN_FA2;
    const char *who = impl == CPB_ATTN_FA3 ? "FlashAttention-3" : "FlashAttention-2";
    int64_t d = a->q.dim, sq = a->q.rows, sk = a->k.rows;
    if (sq <= 0 || sk <= 0 || a->q.heads <= 0) {
        own(r, "%s", "an empty call");
        return;
    }
    if (d % 8 || d > 256) {
        char m[96];
        snprintf(m, sizeof m, "head dim %lld (%s: a multiple of 8 up to 256)", (long long)d, who);
        own(r, "%s", m);
        return;
    }
    /* bottom-right causal (q_pos0 - k_pos0 == sk - sq), or every query sees every key */
    int64_t off = a->q_pos0 - a->k_pos0;
    if (a->causal && off != sk - sq && off < sk - 1) {
        own(r, "%s", "a causal mask with general position offsets");
        return;
    }
    if (bwd && !a->o.buf) {
        own(r, "%s", "no o (FlashAttention's backward computes softmax_d from o)");
        return;
    }
    struct { const char *name; const cpb_view *v; } in[] = {
        {"q", &a->q}, {"k", &a->k}, {"v", &a->v}, {"o", &a->o}, {"dO", &a->d_o}};
    for (int i = 0; i < (bwd ? 5 : 3); i++) {
        const char *p = operand_problem(in[i].v, 0);
        if (p) {
            char m[96];
            snprintf(m, sizeof m, "%s %s", in[i].name, p);
            own(r, "%s", m);
            return;
        }
    }
    if (!bwd && operand_problem(&a->o, 0)) r->adapt |= CPB_ATTN_ADAPT_O;
    r->adapt |= CPB_ATTN_ADAPT_LSE; /* its softmax_lse is its own contiguous [h][sq] fp32 */
    if (bwd) {
        const cpb_view *g[] = {&a->dq, &a->dk, &a->dv};
        int grads = a->accumulate;
        for (int i = 0; i < 3; i++) grads |= operand_problem(g[i], 0) != NULL;
        if (grads) r->adapt |= CPB_ATTN_ADAPT_GRADS;
    }
    r->impl = impl;
    if (!(caps & CPB_ATTN_CAP_FLASH_MODEL)) {
        r->unavailable = 1;
        snprintf(r->why, sizeof r->why, "--attn %s is simulator-only (%s's published curve): no such kernel here; "
                 "use --backend sim or --attn auto|cudnn|own", cpb_attn_impl_name(impl), who);
    }
}

void cpb_attn_route_call(const cpb_attn_args *a, int bwd, cpb_attn_choice choice, int caps,
                         cpb_attn_route *r)
{
    memset(r, 0, sizeof *r);
    const int cudnn_present = (caps & CPB_ATTN_CAP_CUDNN) != 0;
    if (choice == CPB_ATTN_CHOOSE_OWN) {
        own(r, "%s", "--attn own");
        return;
    }
    if (choice == CPB_ATTN_CHOOSE_FA2 || choice == CPB_ATTN_CHOOSE_FA3) {
        flash_route(a, bwd, choice, caps, r);
        return;
    }
    int64_t d = a->q.dim, sq = a->q.rows, sk = a->k.rows;
    if (sq <= 0 || sk <= 0 || a->q.heads <= 0) {
        own(r, "%s", "an empty call");
        return;
    }
    if (d % 8 || d > 128) {
        char m[64];
        snprintf(m, sizeof m, "head dim %lld", (long long)d);
        own(r, "%s (cuDNN: a multiple of 8 up to 128)", m);
        return;
    }
    /* masks: none, top-left causal, bottom-right causal, or a causal call every query of
     * which sees every key */
    int64_t off = a->q_pos0 - a->k_pos0;
    if (a->causal && off != 0 && off < sk - 1) {
        if (off < 0 || off != sk - sq) { /* off < 0: the first queries see no key */
            own(r, "%s", "a causal mask with general position offsets");
            return;
        }
        /* bottom-right (the last query sees every key: one chunk against its whole prefix,
         * TransformerEngine's all-gather schedule).  cudnn-frontend refuses it when s_q >
         * s_kv (never here: off > 0 means sk > sq) and, before cuDNN 9.6, when a length is not a multiple
         * of 64 (scaled_dot_product_flash_attention.h, validate: "Bottom right causal mask
         * is only supported with s_q multiple of 64, and s_kv multiple of 64").  The route
         * applies that rule whatever the version, so that every backend routes, and
         * allocates, alike. */
        if (sq % CUDNN_BR_MULTIPLE || sk % CUDNN_BR_MULTIPLE) {
            own(r, "%s", "a bottom-right causal mask with a length off a multiple of 64");
            return;
        }
    }
    struct { const char *name; const cpb_view *v; } in[] = {
        {"q", &a->q}, {"k", &a->k}, {"v", &a->v}, {"o", &a->o}, {"dO", &a->d_o}};
    int nin = bwd ? 5 : 3;
    if (bwd && !a->o.buf) {
        own(r, "%s", "no o (cuDNN's backward recomputes delta from o)");
        return;
    }
    for (int i = 0; i < nin; i++) {
        const char *p = tensor_problem(in[i].v);
        if (p) {
            char m[96];
            snprintf(m, sizeof m, "%s %s", in[i].name, p);
            own(r, "%s", m);
            return;
        }
    }
    const cpb_view *outs[] = {&a->o, &a->dq, &a->dk, &a->dv};
    for (int i = 0; i < (bwd ? 4 : 1); i++)
        if (span(outs[i]) > CUDNN_MAX_SPAN) {
            own(r, "%s", "a tensor past cuDNN's 2^31-element indexing");
            return;
        }
    /* what cuDNN cannot write (or read) in place goes through aligned temporaries */
    if (!bwd && tensor_problem(&a->o)) r->adapt |= CPB_ATTN_ADAPT_O;
    /* lse always goes through a contiguous temporary: cuDNN wants its stats 16-byte aligned,
     * and whether a view is depends on its row offset, which differs by rank (zigzag ring
     * steps give some ranks the second half of q): adapting only the misaligned ones would
     * make ranks allocate differently (the symmetric-allocation rule, DESIGN section 3).
     * The temporary is [L][hq] fp32, a copy out (or in, for a backward) per call. */
    r->adapt |= CPB_ATTN_ADAPT_LSE;
    if (bwd) {
        const cpb_view *g[] = {&a->dq, &a->dk, &a->dv};
        int grads = a->accumulate;
        for (int i = 0; i < 3; i++) grads |= tensor_problem(g[i]) != NULL;
        if (grads) r->adapt |= CPB_ATTN_ADAPT_GRADS;
    }
    r->impl = CPB_ATTN_CUDNN;
    if (!cudnn_present) {
        if (choice == CPB_ATTN_CHOOSE_CUDNN) {
            r->unavailable = 1;
        } else {
            own(r, "%s", "cuDNN attention is not available on this backend");
        }
    }
}

static int64_t longest(const cpb_attn_args *a)
{
    return a->q.rows > a->k.rows ? a->q.rows : a->k.rows;
}

/* The bound, read from the pinned cudnn-frontend 1.32.0 (scripts/fetch-cudnn-frontend.sh;
 * FE = .deps/cudnn-frontend/include/cudnn_frontend/node/scaled_dot_product_flash_attention.h,
 * GI = .../cudnn_frontend/graph_interface.h) for the graphs attn_cudnn.cpp builds: dense
 * tensors (no ragged offsets, no max_total_seq_len), no padding mask, no bias or dBias, no
 * dropout, no alibi, is_deterministic_algorithm left false, d <= 128, cuDNN 9.0 or newer
 * (attn_cudnn.cpp's load() refuses older).  docs/attention.md has the derivation.
 *
 * A plan's workspace is the engine's own plus the frontend's (GI:1398-1415, cudnn_ws +
 * fe_workspace_size; the frontend's is the sum over the graph's nodes, node_interface.h:428).
 * - Forward: both SDPA nodes take the frontend workspace of SDPANodeBase (FE:619-627), the
 *   16-byte-aligned alibi slopes only: 0 bytes here.  Row max and sum stay inside the fused
 *   kernel; the stats go to our lse.
 * - Backward (CompositeSDPABackwardNode, FE:2378-2393): dQ_accum + dK_fullhead +
 *   dV_fullhead + softmax_sum (+ padding-mask lengths), where
 *     dQ_accum, fp32 [hq][sq][d] (FE:2280-2296), exists unless use_dp_workspace, which is
 *       set only for cuDNN 8.9.5 up to 9.0 (FE:1762-1808), with dBias, or in deterministic
 *       mode (FE:1842-1849; 1823-1840 is the deterministic Hopper opt-in): none of ours;
 *     dK_fullhead, dV_fullhead (GQA only) are non-virtual, and sized, only for a ragged dK/dV
 *       with max_total_seq_len_kv (FE:2128-2141, 2240-2254); dense, they are virtual and take
 *       no workspace (FE:2143-2144, 2256-2257);
 *     softmax_sum, fp32 [hq][sq] (FE:1919-1936);
 *     two int32 lengths per batch when s_kv % 128 != 0 on cuDNN <= 9.15 (the frontend's
 *       padding-mask workaround, FE:1466-1470 and 2388-2390): 8 bytes at batch 1.
 * - The engine's own workspace (the backend plan's, get_cudnn_workspace_size_node) is not in
 *   the frontend's sources: ENGINE_WS below is an assumption, not a derivation.
 *   CPB_CUDNN_WS_LOG=1 prints what each plan really needs against this bound, and a plan
 *   that needs more fails its call (status error, both numbers): never a silent overrun.
 * Sized with L = max(sq, sk) where the frontend has sq, so that the ranks of a zigzag ring
 * step, (s, s/2) on some and (s/2, s) on others, allocate alike (DESIGN section 3). */
#define ENGINE_WS ((int64_t)1 << 20)

int64_t cpb_attn_cudnn_workspace_bytes(const cpb_attn_args *a, int bwd)
{
    int64_t L = longest(a), hq = a->q.heads, d = a->q.dim;
    if (!bwd) return ENGINE_WS;
    int64_t dq_accum = 4 * hq * L * d, softmax_sum = 4 * hq * L, lengths = 2 * 4;
    int64_t b = dq_accum + softmax_sum + lengths + ENGINE_WS;
    /* the cpu and sim backends compute in it what our kernels' workspace holds (an fp32 dq
     * and, without a given delta, its rows: never more than the two terms above) */
    int64_t own_ws = 4 * (a->q.rows * hq * d + (a->delta.buf ? 0 : a->q.rows * hq));
    return b > own_ws ? b : own_ws;
}

/* FlashAttention's buffers (cpb_attn_route.h), from the pinned source read for this rule
 * (Dao-AILab/flash-attention at 0251105a, 2026-08-15):
 * - FA2, csrc/flash_attn/flash_api.cpp, mha_bwd (lines 871-940): head_size_rounded =
 *   round_multiple(d, d <= 128 ? 32 : 64), seqlen_q_rounded = round_multiple(sq, 128);
 *   softmax_d fp32 {b, h, seqlen_q_rounded}; dq_accum fp32 {b, seqlen_q_rounded, h,
 *   head_size_rounded} (not deterministic); for MQA/GQA dk_expanded, dv_expanded {b, sk, h, d}
 *   in the input dtype (bf16), summed into dk, dv after the kernel.
 * - FA3, hopper/flash_api.cpp, mha_bwd (lines 1368-1497, 1536-1542): head_size_rounded =
 *   round_up_headdim(d) (64, 96, 128, 192, 256); kBlockM_sm90 = 128 (d <= 64), 64 (<= 96), 64
 *   causal / 80 otherwise (<= 128), 64 above; kBlockN_sm90 = 128 (<= 128), 96 (<= 192), 80;
 *   softmax_d and softmax_lse_log2 fp32 {b, h, round(sq, kBlockM)} each; dq_accum fp32
 *   {b, h, round(sq, kBlockM) * head_size_rounded}; for MQA/GQA dk_accum, dv_accum fp32
 *   {b, h_k, round(sk, kBlockN) * head_size_rounded} each; dq_semaphore int32
 *   {ceil(sq / kBlockM), b, h} (dk/dv semaphores only in deterministic mode).
 * - Forward: both write softmax_lse {b, h, sq} fp32 (the lse temporary) and o; split-KV
 *   accumulators (out_accum, softmax_lse_accum) exist only when num_splits > 1, which their
 *   heuristics choose when the m-blocks fill less than 80% of the SMs, or (FA3,
 *   hopper/heuristics.h:29-34) for a non-causal call whose one kv head exceeds 50 MiB with
 *   at least 2 x SMs m-blocks.  NOT modelled: the route has no SM count; docs/attention.md. */
static int64_t round_up(int64_t x, int64_t m)
{
    return (x + m - 1) / m * m;
}

int64_t cpb_attn_flash_workspace_bytes(const cpb_attn_args *a, int bwd, cpb_attn_impl impl)
{
    if (!bwd) return 0;
    const int64_t L = longest(a), hq = a->q.heads, hk = a->k.heads, d = a->q.dim;
    if (impl == CPB_ATTN_FA2) {
        const int64_t dr = round_up(d, d <= 128 ? 32 : 64), Lr = round_up(L, 128);
        int64_t b = 4 * hq * Lr + 4 * Lr * hq * dr;
        if (hk != hq) b += 2 * 2 * L * hq * d; /* dk_expanded, dv_expanded: bf16 */
        return b;
    }
    const int64_t dr = d <= 64 ? 64 : d <= 96 ? 96 : d <= 128 ? 128 : d <= 192 ? 192 : 256;
    /* FA3's is_causal for the kernel: a causal call in which some key is masked */
    const int causal = a->causal && (a->q_pos0 - a->k_pos0) < a->k.rows - 1;
    const int64_t bm = dr <= 64 ? 128 : dr <= 96 ? 64 : dr <= 128 ? (causal ? 64 : 80) : 64;
    const int64_t bn = dr <= 128 ? 128 : dr <= 192 ? 96 : 80;
    const int64_t Lm = round_up(L, bm), Ln = round_up(L, bn);
    int64_t b = 2 * 4 * hq * Lm + 4 * hq * Lm * dr + 4 * (Lm / bm) * hq;
    if (hk != hq) b += 2 * 4 * hk * Ln * dr;
    return b;
}

int64_t cpb_attn_cudnn_temp_elems(const cpb_attn_args *a, int which)
{
    int64_t L = longest(a);
    switch (which) {
    case CPB_ATTN_TMP_LSE: return L * a->q.heads;
    case CPB_ATTN_TMP_DK:
    case CPB_ATTN_TMP_DV: return L * a->k.heads * a->q.dim;
    default: return L * a->q.heads * a->q.dim;
    }
}

/* the one implementation the counted classes used, "mixed" for more than one, "" for none */
static const char *usage_of(const cpb_attn_usage *u, int b0, int b1)
{
    int used = -1;
    for (int i = 0; i < CPB_ATTN_IMPL_COUNT; i++) {
        int64_t n = 0;
        for (int b = b0; b <= b1; b++) n += u->calls[b][i];
        if (!n) continue;
        if (used >= 0) return "mixed";
        used = i;
    }
    return used < 0 ? "" : cpb_attn_impl_name((cpb_attn_impl)used);
}

const char *cpb_attn_usage_impl(const cpb_attn_usage *u)
{
    return usage_of(u, 0, 1);
}

const char *cpb_attn_usage_class_impl(const cpb_attn_usage *u, int bwd)
{
    return usage_of(u, bwd ? 1 : 0, bwd ? 1 : 0);
}

void cpb_attn_usage_describe(const cpb_attn_usage *u, char *out, size_t len)
{
    size_t o = 0;
    out[0] = '\0';
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < CPB_ATTN_IMPL_COUNT && o < len; i++) {
            if (!u->calls[b][i]) continue;
            o += (size_t)snprintf(out + o, len - o, "%s%s %s %lld", o ? ", " : "", b ? "bwd" : "fwd",
                                  cpb_attn_impl_name((cpb_attn_impl)i), (long long)u->calls[b][i]);
            if (i == CPB_ATTN_OWN && u->own_why[b][0] && o < len)
                o += (size_t)snprintf(out + o, len - o, " (%s)", u->own_why[b]);
        }
}
