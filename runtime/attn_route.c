/* attn_route.c — which attention implementation serves a call (cpb_attn_route.h). */
#include <stdio.h>
#include <string.h>

#include "cpb_attn_route.h"

const char *cpb_attn_impl_name(cpb_attn_impl i)
{
    return i == CPB_ATTN_CUDNN ? "cudnn" : "own";
}

int cpb_attn_choice_parse(const char *s)
{
    if (!s || !*s || !strcmp(s, "auto")) return CPB_ATTN_CHOOSE_AUTO;
    if (!strcmp(s, "cudnn")) return CPB_ATTN_CHOOSE_CUDNN;
    if (!strcmp(s, "own")) return CPB_ATTN_CHOOSE_OWN;
    return -1;
}

/* cuDNN's kernels index a tensor with 32-bit offsets: its elements 0 .. span-1 must have
 * indices below 2^31, so a span of exactly 2^31 elements (Llama3-8B's q at 4M tokens with
 * 4 heads per rank: [2^22][4][128]) is still served */
#define CUDNN_MAX_SPAN ((int64_t)1 << 31)

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

/* a bf16 [rows][heads][d] operand cuDNN takes as it is: 16-byte aligned start and strides */
static const char *tensor_problem(const cpb_view *v)
{
    if (!v->buf) return "missing";
    if (v->buf->dtype != CPB_BF16) return "not bf16";
    if (v->off % 8 || v->row_stride % 8 || (v->heads > 1 && v->head_stride % 8)) return "not 16-byte aligned";
    if (span(v) > CUDNN_MAX_SPAN) return "past 2^31 elements";
    return NULL;
}

void cpb_attn_route_call(const cpb_attn_args *a, int bwd, cpb_attn_choice choice, int cudnn_present,
                         cpb_attn_route *r)
{
    memset(r, 0, sizeof *r);
    if (choice == CPB_ATTN_CHOOSE_OWN) {
        own(r, "%s", "--attn own");
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
    /* masks: none, top-left causal, or a causal call every query of which sees every key */
    int64_t off = a->q_pos0 - a->k_pos0;
    if (a->causal && off != 0 && off < sk - 1) {
        own(r, "%s", "a causal mask with general position offsets");
        return;
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

int64_t cpb_attn_cudnn_workspace_bytes(const cpb_attn_args *a, int bwd)
{
    int64_t L = longest(a), hq = a->q.heads, hk = a->k.heads, d = a->q.dim;
    const int64_t slack = (int64_t)1 << 20; /* engine-private scratch (semaphores, tile counters) */
    if (!bwd) return slack + 2 * 4 * L * hq; /* row max and sum of the softmax */
    /* backward, as cudnn-frontend's SDPA backward graph lays out its workspace: an fp32 dQ
     * accumulator [hq][sq][d] (or, where the frontend picks it, a bf16 dP tile of up to
     * 256 MiB instead), the softmax sum [hq][sq] fp32, and for GQA dK and dV per query head
     * in bf16 [hq][sk][d] before they are summed over the group */
    int64_t r64 = (L + 63) / 64 * 64, dp = 2 * hq * r64 * r64, dq_acc = 4 * L * hq * d;
    if (dp > ((int64_t)256 << 20)) dp = (int64_t)256 << 20;
    int64_t b = (dq_acc > dp ? dq_acc : dp) + 4 * L * hq + slack;
    if (hq != hk) b += 2 * 2 * L * hq * d;
    /* the cpu and sim backends compute in it what our kernels' workspace holds */
    int64_t own_ws = 4 * (a->q.rows * hq * d + (a->delta.buf ? 0 : a->q.rows * hq));
    return b > own_ws ? b : own_ws;
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

const char *cpb_attn_usage_impl(const cpb_attn_usage *u)
{
    int64_t own = u->calls[0][CPB_ATTN_OWN] + u->calls[1][CPB_ATTN_OWN];
    int64_t dnn = u->calls[0][CPB_ATTN_CUDNN] + u->calls[1][CPB_ATTN_CUDNN];
    if (own && dnn) return "mixed";
    if (dnn) return "cudnn";
    if (own) return "own";
    return "";
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
