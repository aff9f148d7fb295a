/* fpdt_method.c — FPDT's method entry: which shapes it accepts, its chunk geometry, its
 * interleaved token layout and its options.  The schedules are in fpdt_fwd.c, fpdt_bwd*.c
 * (pipelined) and fpdt_ds*.c (DeepSpeed's). */
#include <stdio.h>
#include <string.h>

#include "fpdt.h"
#include "fpdt_ds.h"

#define REFUSE(...)                                                                        \
    do {                                                                                   \
        if (why && why_len) snprintf(why, why_len, __VA_ARGS__);                           \
        return CPB_ERR_INVALID;                                                            \
    } while (0)

int fpdt_dims_init(const cpb_problem *p, int rank, fpdt_dims *m, char *why, size_t why_len)
{
    const int C = p->C;
    if (C <= 0) REFUSE("fpdt: world size %d must be positive", C);
    if (p->S <= 0 || p->D <= 0 || p->H <= 0 || p->G <= 0 || p->d <= 0)
        REFUSE("fpdt: S, D, H, G and d must be positive (S %lld, D %lld, H %d, G %d, d %d)", (long long)p->S,
               (long long)p->D, p->H, p->G, p->d);
    if (p->H % p->G) REFUSE("fpdt: %d query heads are not a multiple of %d kv heads (H %% G != 0)", p->H, p->G);
    if (p->d % 2) REFUSE("fpdt: head dim %d must be even (RoPE rotates pairs)", p->d);
    const int64_t given = cpb_knob_int(p, "seq_chunk");
    if (given < 0) REFUSE("fpdt: --seq-chunk %lld must be positive", (long long)given);
    /* DeepSpeed's convention: the chunk is global, default 64K tokens or the whole sequence */
    int64_t chunk = given > 0 ? given : (p->S < FPDT_DEFAULT_CHUNK ? p->S : FPDT_DEFAULT_CHUNK);
    if (p->S % chunk)
        REFUSE("fpdt: sequence %lld is not a multiple of the chunk %lld global tokens (--seq-chunk%s); "
               "choose S as a multiple of the chunk",
               (long long)p->S, (long long)chunk, given ? "" : ", default 65536");
    if (chunk % C)
        REFUSE("fpdt: chunk %lld global tokens is not divisible by the %d ranks (--seq-chunk must be a "
               "multiple of C)", (long long)chunk, C);
    if (p->H % C)
        REFUSE("fpdt: %d query heads are not divisible by the %d ranks (Ulysses needs H %% C == 0)", p->H, C);
    if (p->G % C && C % p->G)
        REFUSE("fpdt: %d kv heads and %d ranks: Ulysses needs G %% C == 0 or C %% G == 0 (kv heads are "
               "replicated when G < C)", p->G, C);
    int64_t u = p->S / chunk;
    if (C > 1 && u > CPB_MAX_SEGS)
        REFUSE("fpdt: %lld chunks exceed the %d token segments a layout can hold; use a larger --seq-chunk",
               (long long)u, CPB_MAX_SEGS);
    if (rank < 0 || rank >= C) REFUSE("fpdt: rank %d outside the world of %d", rank, C);
    const char *impl = cpb_knob_str(p, "fpdt_impl");
    if (impl[0] && strcmp(impl, "deepspeed") != 0 && strcmp(impl, "pipelined") != 0)
        REFUSE("fpdt: unknown schedule '%s' (--fpdt-impl deepspeed or pipelined)", impl);
    const char *bwd = cpb_knob_str(p, "fpdt_bwd");
    if (!fpdt_pipelined(p) && strcmp(bwd, "delta") == 0)
        REFUSE("fpdt: --fpdt-bwd delta is a choice of the pipelined schedule (--fpdt-impl pipelined); "
               "DeepSpeed's backward loads o");
    if (!fpdt_pipelined(p) && u > FPDT_DS_MAX_CHUNKS)
        REFUSE("fpdt: %lld chunks exceed the %d DeepSpeed's schedule keeps tables for; use a larger --seq-chunk "
               "(or --fpdt-impl pipelined)", (long long)u, FPDT_DS_MAX_CHUNKS);

    m->C = C;
    m->rank = rank;
    m->S = p->S;
    m->D = p->D;
    m->H = p->H;
    m->G = p->G;
    m->d = p->d;
    m->chunk = chunk;
    m->u = u;
    m->c = chunk / C;
    m->hq = p->H / C;
    if (p->G >= C) {
        m->hk = p->G / C;
        m->rep = 1;
    } else {
        m->hk = 1;
        m->rep = C / p->G;
    }
    m->nb = C / m->rep;
    m->nq = chunk * m->hq * p->d;
    m->nkv = chunk * m->hk * p->d;
    m->nlse = (int64_t)m->hq * chunk;
    m->E = p->dtype;
    m->base = p->rope_base;
    m->bwd_o = strcmp(bwd, "delta") != 0;
    return CPB_OK;
}

static int fpdt_check(const cpb_problem *p, char *why, size_t why_len)
{
    fpdt_dims m;
    return fpdt_dims_init(p, 0, &m, why, why_len);
}

/* rank r's local chunk i is global [i*chunk + r*c, i*chunk + (r+1)*c): u segments */
static int fpdt_token_layout(const cpb_problem *p, int rank, cpb_segs *out)
{
    fpdt_dims m;
    cpb_segs_clear(out);
    CPB_TRY(fpdt_dims_init(p, rank, &m, NULL, 0));
    for (int64_t i = 0; i < m.u; i++)
        if (cpb_segs_add(out, i * m.chunk + (int64_t)rank * m.c, m.c) < 0) return CPB_ERR_INVALID;
    return CPB_OK;
}

static int check_seq_chunk(const cpb_problem *p, char *why, size_t why_len)
{
    int64_t chunk = cpb_knob_int(p, "seq_chunk");
    if (chunk && (chunk % p->C || p->S % chunk)) {
        snprintf(why, why_len, "--seq-chunk %lld must divide --seq %lld and be a multiple of the %d ranks",
                 (long long)chunk, (long long)p->S, p->C);
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

/* plan: S/n for n = 8, 16, .. 128 chunks, each at least 32K tokens and a multiple of the
 * ranks (smaller chunks trade device memory for host traffic and per-chunk overhead; the
 * schedule's work grows as the square of the chunks, so more than 128 would only slow the
 * search); a length too short for 8 such chunks gets the fewest chunks that divide it. */
static int seq_chunk_candidates(const cpb_problem *p, int64_t *out, int max)
{
    int k = 0;
    for (int64_t n = 128; n >= 1 && k < max; n /= 2) {
        int64_t c = p->S / n;
        if (p->S % n || c < 32768 || (p->C > 0 && c % p->C)) continue;
        if (n >= 8 || k == 0) out[k++] = c;
        if (n < 8) break;
    }
    return k;
}

static const cpb_knob fpdt_knobs[] = {
    {.name = "seq_chunk", .type = CPB_KNOB_TOKENS, .def = "0", .check = check_seq_chunk, .arg = "N",
     .help = "global tokens per chunk (default 65536)", .candidates = seq_chunk_candidates},
    /* the knob changes the schedule, so it is the method's */
    {.name = "fpdt_impl", .type = CPB_KNOB_CHOICE, .def = "deepspeed", .choices = "deepspeed|pipelined",
     .arg = "deepspeed|pipelined", .help = "DeepSpeed's schedule (the default) or the pipelined one"},
    /* what the pipelined backward's KV loop loads besides q, dO and lse: o, so cuDNN's
     * backward (which derives delta from o) serves its blocks; or delta = rowsum(dO * o),
     * 1/d of o's elements in fp32, which only our kernels take (docs/attention.md) */
    {.name = "fpdt_bwd", .type = CPB_KNOB_CHOICE, .def = "o", .choices = "o|delta", .arg = "o|delta",
     .help = "pipelined schedule: the backward loads each chunk's o (cuDNN serves it) or only delta = "
             "rowsum(dO*o) (less host traffic; our attention kernels only)"},
    {NULL}};

int fpdt_pipelined(const cpb_problem *p)
{
    return strcmp(cpb_knob_str(p, "fpdt_impl"), "pipelined") == 0;
}

/* forward and backward hand over one state block, sized for either schedule */
typedef union fpdt_any_state {
    fpdt_state pipelined;
    fpdt_ds deepspeed;
} fpdt_any_state;

static int fpdt_forward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    return fpdt_pipelined(&L->p) ? fpdt_pipe_forward(ctx, L, state) : fpdt_ds_forward(ctx, L, state);
}

static int fpdt_backward(cpb_ctx *ctx, cpb_layer *L, void *state)
{
    return fpdt_pipelined(&L->p) ? fpdt_pipe_backward(ctx, L, state) : fpdt_ds_backward(ctx, L, state);
}

const cpb_method cpb_method_fpdt = {
    .name = "fpdt",
    .summary = "FPDT: Ulysses per sequence chunk, finished chunks in pinned host memory; --fpdt-impl deepspeed "
               "(DeepSpeed's schedule, default) or pipelined",
    .check = fpdt_check,
    .token_layout = fpdt_token_layout,
    .weight_shard = NULL,
    .state_size = sizeof(fpdt_any_state),
    .forward = fpdt_forward,
    .backward = fpdt_backward,
    .knobs = fpdt_knobs,
};
