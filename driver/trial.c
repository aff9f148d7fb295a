/* trial.c — one rank's layer trial (trial.h): the layer in the method's layout, its inputs,
 * forward then backward, and the memory of each phase. */
#include "trial.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_choice.h"
#include "ranks.h"
#include "tp_compose.h"
#include "verify_inputs.h"

/* ---------------------------------------------------------------- setup */

int cpb_method_refusal(const cpb_method *m, const cpb_problem *p, char *msg, size_t len)
{
    char why[1024] = "";
    if (cpb_tp_check(m, p, why, sizeof why) == CPB_OK) return CPB_OK; /* the method's check under --tp */
    if (msg && len) snprintf(msg, len, "%s refuses this shape: %s", m->name, why[0] ? why : "(no reason given)");
    return CPB_ERR_REFUSED;
}

/* upload rows of a global [S][D] array at the layer's token positions */
static int upload_tokens(cpb_ctx *ctx, const cpb_layer *L, cpb_buf *b, const float *global)
{
    const int64_t D = L->p.D;
    float *local = malloc(sizeof(float) * (size_t)(L->s * D));
    if (!local) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "trial setup: out of host memory staging '%s'", b->name);
    int64_t row = 0;
    for (int i = 0; i < L->tokens.n; i++) {
        memcpy(local + row * D, global + L->tokens.pos0[i] * D, sizeof(float) * (size_t)(L->tokens.len[i] * D));
        row += L->tokens.len[i];
    }
    int rc = cpb_upload(ctx, cpb_whole(b), local);
    free(local);
    return rc;
}

/* upload the columns of `heads` (global [D][total*d]) into a local [D][n*d] */
static int upload_cols(cpb_ctx *ctx, const cpb_layer *L, cpb_buf *b, const float *global, int total,
                       const int *heads, int n)
{
    const int64_t D = L->p.D, d = L->p.d, gld = (int64_t)total * d, lld = (int64_t)n * d;
    float *local = malloc(sizeof(float) * (size_t)(D * lld));
    if (!local) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "trial setup: out of host memory staging '%s'", b->name);
    for (int64_t r = 0; r < D; r++)
        for (int i = 0; i < n; i++)
            memcpy(local + r * lld + i * d, global + r * gld + heads[i] * d, sizeof(float) * (size_t)d);
    int rc = cpb_upload(ctx, cpb_whole(b), local);
    free(local);
    return rc;
}

/* upload the rows of query heads (global wo [H*d][D]) into a local [n*d][D] */
static int upload_rows(cpb_ctx *ctx, const cpb_layer *L, cpb_buf *b, const float *global, const int *heads, int n)
{
    const int64_t D = L->p.D, d = L->p.d;
    float *local = malloc(sizeof(float) * (size_t)(n * d * D));
    if (!local) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "trial setup: out of host memory staging '%s'", b->name);
    for (int i = 0; i < n; i++)
        memcpy(local + i * d * D, global + heads[i] * d * D, sizeof(float) * (size_t)(d * D));
    int rc = cpb_upload(ctx, cpb_whole(b), local);
    free(local);
    return rc;
}

/* device fill with the global values of verify_inputs.h */
static int fill_tokens(cpb_ctx *ctx, const cpb_layer *L, cpb_buf *b, uint64_t seed, cpb_input_id t)
{
    const int64_t D = L->p.D;
    int64_t row = 0;
    for (int i = 0; i < L->tokens.n; i++) {
        cpb_view v = cpb_span(b, row * D, L->tokens.len[i] * D);
        CPB_TRY(cpb_fill_random(ctx, CPB_STREAM_COMPUTE, v, cpb_input_seed(seed, t), L->tokens.pos0[i] * D,
                                cpb_input_scale(&L->p, t)));
        row += L->tokens.len[i];
    }
    return CPB_OK;
}

static int fill_cols(cpb_ctx *ctx, const cpb_layer *L, cpb_buf *b, uint64_t seed, cpb_input_id t,
                     const int *heads, int n)
{
    const int64_t D = L->p.D, d = L->p.d;
    for (int i = 0; i < n; i++) {
        cpb_view v = cpb_mat(b, i * d, D, d, n * d);
        CPB_TRY(cpb_fill_random(ctx, CPB_STREAM_COMPUTE, v, cpb_input_seed(seed, t), (int64_t)heads[i] * D * d,
                                cpb_input_scale(&L->p, t)));
    }
    return CPB_OK;
}

static int fill_rows(cpb_ctx *ctx, const cpb_layer *L, cpb_buf *b, uint64_t seed, const int *heads, int n)
{
    const int64_t D = L->p.D, d = L->p.d;
    for (int i = 0; i < n; i++) {
        cpb_view v = cpb_span(b, i * d * D, d * D);
        CPB_TRY(cpb_fill_random(ctx, CPB_STREAM_COMPUTE, v, cpb_input_seed(seed, CPB_INPUT_WO), (int64_t)heads[i] * d * D,
                                cpb_input_scale(&L->p, CPB_INPUT_WO)));
    }
    return CPB_OK;
}

int cpb_trial_setup(cpb_ctx *ctx, const cpb_method *m, const cpb_problem *p, const cpb_global_inputs *in,
                    uint64_t seed, cpb_layer *L)
{
    memset(L, 0, sizeof *L);
    char why[1100];
    if (cpb_method_refusal(m, p, why, sizeof why) != CPB_OK) return cpb_fail(ctx, CPB_ERR_REFUSED, "%s", why);
    if (p->C != cpb_world_size(ctx))
        return cpb_fail(ctx, CPB_ERR_INVALID, "problem is for %d ranks but the context has %d", p->C,
                        cpb_world_size(ctx));
    cpb_ctx_set_problem(ctx, p);
    L->p = *p;
    int rank = cpb_rank(ctx);
    if (cpb_tp_token_layout(m, p, rank, &L->tokens) != CPB_OK)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: no token layout for S %lld on %d ranks", m->name,
                        (long long)p->S, p->C);
    L->s = cpb_segs_total(&L->tokens);
    if (cpb_tp_weight_shard(m, p, rank, &L->shard) != CPB_OK)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: no weight shard for H %d, G %d on %d ranks", m->name, p->H, p->G,
                        p->C);
    if (L->s <= 0 || L->shard.nq <= 0 || L->shard.nkv <= 0)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s: rank %d holds %lld tokens, %d query and %d kv heads; every rank "
                        "needs some of each", m->name, rank, (long long)L->s, L->shard.nq, L->shard.nkv);
    const int64_t D = p->D, d = p->d, s = L->s, nq = L->shard.nq, nkv = L->shard.nkv;
    const cpb_dtype dt = p->dtype;
    CPB_TRY(cpb_alloc(ctx, &L->x, s * D, dt, CPB_TAG_X, "x"));
    CPB_TRY(cpb_alloc(ctx, &L->dy, s * D, dt, CPB_TAG_DY, "dy"));
    CPB_TRY(cpb_alloc(ctx, &L->wq, D * nq * d, dt, CPB_TAG_WEIGHTS, "wq"));
    CPB_TRY(cpb_alloc(ctx, &L->wk, D * nkv * d, dt, CPB_TAG_WEIGHTS, "wk"));
    CPB_TRY(cpb_alloc(ctx, &L->wv, D * nkv * d, dt, CPB_TAG_WEIGHTS, "wv"));
    CPB_TRY(cpb_alloc(ctx, &L->wo, nq * d * D, dt, CPB_TAG_WEIGHTS, "wo"));
    CPB_TRY(cpb_alloc(ctx, &L->y, s * D, dt, CPB_TAG_Y, "y"));
    CPB_TRY(cpb_alloc(ctx, &L->dx, s * D, dt, CPB_TAG_DX, "dx"));
    CPB_TRY(cpb_alloc(ctx, &L->dwq, D * nq * d, CPB_FP32, CPB_TAG_GRADS, "dwq"));
    CPB_TRY(cpb_alloc(ctx, &L->dwk, D * nkv * d, CPB_FP32, CPB_TAG_GRADS, "dwk"));
    CPB_TRY(cpb_alloc(ctx, &L->dwv, D * nkv * d, CPB_FP32, CPB_TAG_GRADS, "dwv"));
    CPB_TRY(cpb_alloc(ctx, &L->dwo, nq * d * D, CPB_FP32, CPB_TAG_GRADS, "dwo"));
    const int *q = L->shard.q, *kv = L->shard.kv;
    if (in) {
        CPB_TRY(upload_tokens(ctx, L, L->x, in->x));
        CPB_TRY(upload_tokens(ctx, L, L->dy, in->dy));
        CPB_TRY(upload_cols(ctx, L, L->wq, in->wq, p->H, q, (int)nq));
        CPB_TRY(upload_cols(ctx, L, L->wk, in->wk, p->G, kv, (int)nkv));
        CPB_TRY(upload_cols(ctx, L, L->wv, in->wv, p->G, kv, (int)nkv));
        CPB_TRY(upload_rows(ctx, L, L->wo, in->wo, q, (int)nq));
    } else {
        CPB_TRY(fill_tokens(ctx, L, L->x, seed, CPB_INPUT_X));
        CPB_TRY(fill_tokens(ctx, L, L->dy, seed, CPB_INPUT_DY));
        CPB_TRY(fill_cols(ctx, L, L->wq, seed, CPB_INPUT_WQ, q, (int)nq));
        CPB_TRY(fill_cols(ctx, L, L->wk, seed, CPB_INPUT_WK, kv, (int)nkv));
        CPB_TRY(fill_cols(ctx, L, L->wv, seed, CPB_INPUT_WV, kv, (int)nkv));
        CPB_TRY(fill_rows(ctx, L, L->wo, seed, q, (int)nq));
    }
    cpb_buf *zero[] = {L->y, L->dx, L->dwq, L->dwk, L->dwv, L->dwo};
    for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
        CPB_TRY(cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_whole(zero[i]), 0.0f));
    return cpb_sync(ctx);
}

/* ---------------------------------------------------------------- phases */

/* Start a phase: high-water marks restart from the live state, but the allocation count
 * and sequence hash keep running (they describe the whole trial). */
static void phase_begin(cpb_mem_stats *m)
{
    m->peak = m->live;
    memcpy(m->tag_peak, m->tag_live, sizeof m->tag_peak);
    memcpy(m->at_peak, m->tag_live, sizeof m->at_peak);
    m->intermediate_peak = m->intermediate_live;
}

/* the phase's peak (returned) and its details */
static int64_t phase_end(const cpb_ctx *ctx, cpb_row_phase *ph)
{
    const cpb_mem_stats *d = cpb_device_mem(ctx), *h = cpb_host_mem(ctx);
    ph->intermediate_peak = d->intermediate_peak;
    ph->live_end = d->live;
    ph->host_peak = h->peak;
    memcpy(ph->at_peak, d->at_peak, sizeof ph->at_peak);
    memcpy(ph->tag_peak, d->tag_peak, sizeof ph->tag_peak);
    memcpy(ph->tag_live_end, d->tag_live, sizeof ph->tag_live_end);
    ph->host_live_end = h->live;
    return d->peak;
}

/* fold a phase's high-water marks into the running whole-trial ones */
static void merge_peaks(cpb_mem_stats *whole, const cpb_mem_stats *phase)
{
    if (phase->peak > whole->peak) {
        whole->peak = phase->peak;
        memcpy(whole->at_peak, phase->at_peak, sizeof whole->at_peak);
    }
    for (int t = 0; t < CPB_TAG_COUNT; t++)
        if (phase->tag_peak[t] > whole->tag_peak[t]) whole->tag_peak[t] = phase->tag_peak[t];
    if (phase->intermediate_peak > whole->intermediate_peak) whole->intermediate_peak = phase->intermediate_peak;
}

/* restore whole-trial peaks in the context and take the running counters from it */
static void close_phase(cpb_ctx *ctx, cpb_mem_stats *whole_dev, cpb_mem_stats *whole_host)
{
    merge_peaks(whole_dev, &ctx->dev);
    merge_peaks(whole_host, &ctx->host);
    int64_t dpeak = whole_dev->peak, hpeak = whole_host->peak;
    cpb_mem_stats d = ctx->dev, h = ctx->host;
    /* live values, counts, hash and capacity from the context; peaks from the merge */
    d.peak = dpeak;
    memcpy(d.at_peak, whole_dev->at_peak, sizeof d.at_peak);
    memcpy(d.tag_peak, whole_dev->tag_peak, sizeof d.tag_peak);
    d.intermediate_peak = whole_dev->intermediate_peak;
    h.peak = hpeak;
    memcpy(h.at_peak, whole_host->at_peak, sizeof h.at_peak);
    memcpy(h.tag_peak, whole_host->tag_peak, sizeof h.tag_peak);
    h.intermediate_peak = whole_host->intermediate_peak;
    *whole_dev = d;
    *whole_host = h;
}

/* the method's forward (bwd 0) or backward inside its range "<name>/fwd|bwd" */
static int run_phase(cpb_ctx *ctx, const cpb_method *m, cpb_layer *L, void *state, int bwd)
{
    CPB_RANGE(ctx, cpb_tp_phase(ctx, m, L, state, bwd), "%s/%s", m->name, bwd ? "bwd" : "fwd");
    return CPB_OK;
}

/* pop the ranges a failed method left open, down to `depth` */
static void unwind_ranges(cpb_ctx *ctx, int depth)
{
    while (ctx->range_depth > depth) cpb_range_pop(ctx);
}

void cpb_trial_memory(const cpb_ctx *ctx, cpb_row *r)
{
    const cpb_mem_stats *dev = cpb_device_mem(ctx), *host = cpb_host_mem(ctx);
    r->capacity_bytes = dev->capacity;
    r->peak_bytes = dev->peak;
    r->reserved_bytes = dev->peak; /* a backend with a caching pool reports its own (point.c) */
    r->intermediate_bytes = dev->intermediate_peak;
    r->host_peak_bytes = host->peak;
    memcpy(r->at_peak_bytes, dev->at_peak, sizeof r->at_peak_bytes);
    memcpy(r->tag_peak, dev->tag_peak, sizeof r->tag_peak);
    memcpy(r->host_at_peak, host->at_peak, sizeof r->host_at_peak);
    r->n_allocs = dev->n_allocs;
    r->alloc_hash = dev->trace_hash;
    cpb_attn_row_fill(ctx, r);
}

int cpb_trial_step(cpb_ctx *ctx, const cpb_method *m, cpb_layer *L, cpb_row *r)
{
    memset(&r->fwd, 0, sizeof r->fwd);
    memset(&r->bwd, 0, sizeof r->bwd);
    r->fwd_peak_bytes = r->bwd_peak_bytes = 0;
    r->fwd_s = r->bwd_s = r->step_s = 0;
    const int depth0 = ctx->range_depth;
    const double comm0 = ctx->comm_bytes, pcie0 = ctx->pcie_bytes;
    const int timed = !ctx->be->models_time; /* a timing model predicts the times itself */
    cpb_mem_stats whole_dev = ctx->dev, whole_host = ctx->host;
    const size_t state_size = cpb_tp_state_size(m, &L->p); /* with --tp, the wrapper's too */
    void *state = state_size ? calloc(1, state_size) : NULL;
    if (state_size && !state) {
        int rc = cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "%s: out of host memory for its %zu-byte state", m->name,
                          state_size);
        cpb_row_set_status(r, rc, cpb_errmsg(ctx));
        return rc;
    }
    /* each phase is timed between two marks (cpb_time_mark): on the cuda backend events on
     * the device, taken before the host's wait for the streams, so neither that wait's
     * polling delay nor the host's gap between the phases is in a time */
    enum { M_FWD0, M_FWD1, M_BWD0, M_BWD1 };
    int rc = cpb_range_push(ctx, "trial");
    if (rc == CPB_OK) rc = cpb_sync(ctx);
    /* every rank starts its clock together: a late rank's lateness is not a step's time
     * (every rank of a measured step arrives here, whatever its status, so none waits alone) */
    if (timed && cpb_world_size(ctx) > 1) cpb_agree_barrier();
    if (rc == CPB_OK && timed) rc = cpb_time_mark(ctx, M_FWD0);
    if (rc == CPB_OK) {
        phase_begin(&ctx->dev);
        phase_begin(&ctx->host);
        rc = cpb_range_push(ctx, "fwd");
    }
    if (rc == CPB_OK) rc = run_phase(ctx, m, L, state, 0);
    if (rc == CPB_OK) rc = cpb_range_pop(ctx);
    if (rc == CPB_OK && timed) rc = cpb_time_mark(ctx, M_FWD1);
    if (rc == CPB_OK) rc = cpb_sync(ctx);
    r->fwd_peak_bytes = phase_end(ctx, &r->fwd);
    close_phase(ctx, &whole_dev, &whole_host);
    ctx->dev = whole_dev;
    ctx->host = whole_host;
    if (rc == CPB_OK) {
        phase_begin(&ctx->dev);
        phase_begin(&ctx->host);
        if (timed) rc = cpb_time_mark(ctx, M_BWD0);
        if (rc == CPB_OK) rc = cpb_range_push(ctx, "bwd");
        if (rc == CPB_OK) rc = run_phase(ctx, m, L, state, 1);
        if (rc == CPB_OK) rc = cpb_range_pop(ctx);
        if (rc == CPB_OK && timed) rc = cpb_time_mark(ctx, M_BWD1);
        if (rc == CPB_OK) rc = cpb_sync(ctx);
        r->bwd_peak_bytes = phase_end(ctx, &r->bwd);
        close_phase(ctx, &whole_dev, &whole_host);
        ctx->dev = whole_dev;
        ctx->host = whole_host;
    }
    free(state);
    double fwd_s = 0, bwd_s = 0;
    if (rc == CPB_OK && timed) rc = cpb_time_between(ctx, M_FWD0, M_FWD1, &fwd_s);
    if (rc == CPB_OK && timed) rc = cpb_time_between(ctx, M_BWD0, M_BWD1, &bwd_s);
    if (rc == CPB_OK && ctx->range_depth != depth0 + 1)
        rc = cpb_fail(ctx, CPB_ERR_INVALID, "%s left %d range(s) open: every cpb_range_push needs its pop",
                      m->name, ctx->range_depth - depth0 - 1);
    unwind_ranges(ctx, depth0); /* the trial's own range, and any a failed method left open */
    cpb_row_set_status(r, rc, cpb_errmsg(ctx)[0] ? cpb_errmsg(ctx) : cpb_status_name(rc));
    cpb_trial_memory(ctx, r);
    if (timed && rc == CPB_OK) {
        r->fwd_s = fwd_s;
        r->bwd_s = bwd_s;
        r->step_s = fwd_s + bwd_s; /* a training step does not stop between its phases */
    }
    r->comm_bytes = ctx->comm_bytes - comm0;
    r->pcie_bytes = ctx->pcie_bytes - pcie0;
    return rc;
}
