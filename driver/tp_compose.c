/* tp_compose.c — `--tp N` around any method (tp_compose.h states the composition). */
#include "tp_compose.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tp_knob_check(const cpb_problem *p, char *why, size_t why_len);

const cpb_knob cpb_tp_knobs[] = {
    {.name = "tp", .type = CPB_KNOB_INT, .def = "0", .arg = "N",
     .help = "tensor-parallel degree around the method (Megatron TP + sequence parallelism; world = tp x cp, "
             "TP groups of adjacent ranks; 0 or 1: none, the default; docs/methods.md)",
     .check = tp_knob_check,
     .candidates = cpb_plan_tp_candidates},
    {NULL}};

int cpb_tp_degree(const cpb_problem *p)
{
    int64_t t = cpb_knob_int(p, "tp");
    return t > 1 ? (int)t : 1;
}

int cpb_tp_inner_problem(const cpb_problem *p, cpb_problem *q, char *why, size_t why_len)
{
    const int tp = cpb_tp_degree(p);
    *q = *p;
    if (tp == 1) return CPB_OK;
    if (p->C <= 0 || p->C % tp) {
        snprintf(why, why_len, "--tp %d needs the ranks to be a multiple of it (world = tp x cp): %d ranks", tp, p->C);
        return CPB_ERR_INVALID;
    }
    if (p->H % tp) {
        snprintf(why, why_len, "--tp %d shards the query heads: H = %d is not a multiple of tp = %d", tp, p->H, tp);
        return CPB_ERR_INVALID;
    }
    if (p->G <= 0 || (p->G % tp && tp % p->G)) {
        snprintf(why, why_len, "--tp %d shards the kv heads: G = %d must be a multiple or a divisor of tp = %d", tp,
                 p->G, tp);
        return CPB_ERR_INVALID;
    }
    q->C = p->C / tp;
    q->H = p->H / tp;
    q->G = p->G >= tp ? p->G / tp : 1; /* G < tp: the shard's query heads share one kv head, replicated */
    if (cpb_knobs_set_int(&q->knobs, "tp", 0) != CPB_OK) {
        snprintf(why, why_len, "--tp %d: no room for the inner problem's tp knob", tp);
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

static int tp_knob_check(const cpb_problem *p, char *why, size_t why_len)
{
    cpb_problem q;
    return cpb_tp_inner_problem(p, &q, why, why_len);
}

/* ---------------------------------------------------------------- layout and shard */

/* the method's own layout of the inner problem at CP rank r */
static int inner_layout(const cpb_method *m, const cpb_problem *q, int r, cpb_segs *out)
{
    return m->token_layout(q, r, out);
}

int cpb_tp_check(const cpb_method *m, const cpb_problem *p, char *why, size_t why_len)
{
    const int tp = cpb_tp_degree(p);
    if (tp == 1) return m->check ? m->check(p, why, why_len) : CPB_OK;
    cpb_problem q;
    if (cpb_tp_inner_problem(p, &q, why, why_len) != CPB_OK) return CPB_ERR_INVALID;
    char inner[900] = "";
    int bad = m->check && m->check(&q, inner, sizeof inner) != CPB_OK;
    /* the method's option checks too: they depend on the shape (a kv-head stride must divide
     * the kv heads the shard holds, not the model's) */
    for (const cpb_knob *k = m->knobs; !bad && k && k->name; k++)
        bad = k->check && k->check(&q, inner, sizeof inner) != CPB_OK;
    if (bad) {
        snprintf(why, why_len, "under --tp %d it runs on %d CP ranks with H = %d, G = %d heads: %s", tp, q.C, q.H, q.G,
                 inner[0] ? inner : "(no reason given)");
        return CPB_ERR_INVALID;
    }
    static cpb_segs segs; /* 16 KiB: not on the stack of every check */
    for (int r = 0; r < q.C; r++) {
        if (inner_layout(m, &q, r, &segs) != CPB_OK) {
            snprintf(why, why_len, "under --tp %d: no token layout for S = %lld on %d CP ranks", tp, (long long)p->S, q.C);
            return CPB_ERR_INVALID;
        }
        int64_t n = cpb_segs_total(&segs);
        if (n <= 0 || n % tp) {
            snprintf(why, why_len, "--tp %d cuts each CP rank's tokens into tp pieces: CP rank %d holds %lld of S = %lld "
                     "tokens, not a multiple of %d", tp, r, (long long)n, (long long)p->S, tp);
            return CPB_ERR_INVALID;
        }
    }
    return CPB_OK;
}

int cpb_tp_token_layout(const cpb_method *m, const cpb_problem *p, int rank, cpb_segs *out)
{
    const int tp = cpb_tp_degree(p);
    if (tp == 1) return m->token_layout(p, rank, out);
    cpb_problem q;
    char why[256];
    CPB_TRY(cpb_tp_inner_problem(p, &q, why, sizeof why));
    static cpb_segs whole;
    CPB_TRY(inner_layout(m, &q, rank / tp, &whole));
    int64_t n = cpb_segs_total(&whole);
    if (n % tp) return CPB_ERR_INVALID;
    /* the TP group's all-gather puts the pieces back in TP rank order: the method's rows */
    return cpb_segs_slice(&whole, (rank % tp) * (n / tp), n / tp, out) == 0 ? CPB_OK : CPB_ERR_INVALID;
}

/* the method's shard of the inner problem at CP rank r, in the inner problem's head ids */
static int inner_shard(const cpb_method *m, const cpb_problem *q, int r, cpb_shard *out)
{
    if (m->weight_shard) return m->weight_shard(q, r, out);
    cpb_shard_all(q, out);
    return CPB_OK;
}

int cpb_tp_weight_shard(const cpb_method *m, const cpb_problem *p, int rank, cpb_shard *out)
{
    const int tp = cpb_tp_degree(p);
    if (tp == 1) return inner_shard(m, p, rank, out);
    cpb_problem q;
    char why[256];
    CPB_TRY(cpb_tp_inner_problem(p, &q, why, sizeof why));
    CPB_TRY(inner_shard(m, &q, rank / tp, out));
    /* TP rank t holds query heads [t*H/tp, (t+1)*H/tp) and their kv heads: kv heads
     * [t*G/tp, ...) when G >= tp, else the one kv head its query heads use */
    const int t = rank % tp, g = p->H / p->G;
    for (int i = 0; i < out->nq; i++) out->q[i] += t * q.H;
    for (int i = 0; i < out->nkv; i++) out->kv[i] = p->G >= tp ? out->kv[i] + t * q.G : (t * q.H) / g;
    return CPB_OK;
}

/* ---------------------------------------------------------------- forward and backward */

/* what the wrapper keeps from forward to backward; the method's own state follows */
typedef struct tp_wrap {
    cpb_layer in;          /* the layer the method sees: the CP rank's tokens, the TP shard's heads */
    cpb_group *tpg, *cpg;  /* this rank's TP and CP groups */
} tp_wrap;

#define WRAP_BYTES ((sizeof(tp_wrap) + 63) / 64 * 64)

size_t cpb_tp_state_size(const cpb_method *m, const cpb_problem *p)
{
    return cpb_tp_degree(p) == 1 ? m->state_size : WRAP_BYTES + m->state_size;
}

/* stream `waiter` waits for the work issued so far on every stream: the method may leave
 * its last writes of y or dx (or reads of the gathered x) on a stream of its own */
static int join_all(cpb_ctx *ctx, int waiter)
{
    for (int s = 0; s < ctx->nstreams; s++) CPB_TRY(cpb_stream_join(ctx, waiter, s));
    return CPB_OK;
}

/* the TP and CP groups of this rank (TP inner), every rank in the same order: TP, then CP */
static int open_groups(cpb_ctx *ctx, int tp, tp_wrap *w)
{
    const int me = cpb_rank(ctx), C = cpb_world_size(ctx), cp = C / tp, t = me % tp, c = me / tp;
    int *members = malloc(sizeof(int) * (size_t)(tp > cp ? tp : cp));
    if (!members) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "--tp %d: out of host memory for the group members", tp);
    for (int j = 0; j < tp; j++) members[j] = c * tp + j;
    int rc = cpb_group_create(ctx, tp, members, &w->tpg);
    for (int j = 0; rc == CPB_OK && j < cp; j++) members[j] = j * tp + t;
    if (rc == CPB_OK) rc = cpb_group_create(ctx, cp, members, &w->cpg);
    free(members);
    return rc;
}

/* the layer the method sees (forward builds it; backward reuses it) */
static int open_inner(cpb_ctx *ctx, const cpb_method *m, const cpb_layer *L, int tp, tp_wrap *w)
{
    char why[512] = "";
    cpb_problem q;
    if (cpb_tp_inner_problem(&L->p, &q, why, sizeof why) != CPB_OK) return cpb_fail(ctx, CPB_ERR_INVALID, "%s", why);
    CPB_TRY(open_groups(ctx, tp, w));
    cpb_layer *in = &w->in;
    memset(in, 0, sizeof *in);
    in->p = q;
    const int c = cpb_rank(ctx) / tp;
    if (inner_layout(m, &q, c, &in->tokens) != CPB_OK || inner_shard(m, &q, c, &in->shard) != CPB_OK)
        return cpb_fail(ctx, CPB_ERR_INVALID, "--tp %d: %s has no layout or shard at CP rank %d of %d", tp, m->name, c, q.C);
    in->s = cpb_segs_total(&in->tokens);
    if (in->s != L->s * tp || in->shard.nq != L->shard.nq || in->shard.nkv != L->shard.nkv)
        return cpb_fail(ctx, CPB_ERR_INVALID, "--tp %d: the CP rank's %lld tokens, %d and %d heads do not match the "
                        "TP rank's %lld x %d tokens, %d and %d heads", tp, (long long)in->s, in->shard.nq,
                        in->shard.nkv, (long long)L->s, tp, L->shard.nq, L->shard.nkv);
    /* the TP shard's weights and their gradients are the method's whole weights */
    in->wq = L->wq, in->wk = L->wk, in->wv = L->wv, in->wo = L->wo;
    in->dwq = L->dwq, in->dwk = L->dwk, in->dwv = L->dwv, in->dwo = L->dwo;
    return CPB_OK;
}

/* The gathered inputs are ready for the method as the harness makes a layer's inputs ready
 * (cpb_trial_setup ends with cpb_sync): a method may read them on a stream it creates later
 * (fpdt's offload stream reads x), which no event recorded now could order. */
static int inputs_ready(cpb_ctx *ctx)
{
    return cpb_sync(ctx);
}

/* the method's phase inside its CP scope */
static int run_scoped(cpb_ctx *ctx, const cpb_method *m, tp_wrap *w, void *inner_state, int bwd)
{
    cpb_scope saved;
    CPB_TRY(cpb_scope_enter(ctx, w->cpg, &w->in.p, &saved));
    int rc = bwd ? m->backward(ctx, &w->in, inner_state) : m->forward(ctx, &w->in, inner_state);
    cpb_scope_leave(ctx, &saved);
    return rc;
}

/* rows [S/cp, D] all-gathered over TP from this rank's [s, D] piece into a new buffer */
static int gather_rows(cpb_ctx *ctx, int st, tp_wrap *w, cpb_buf *piece, cpb_buf **out, const char *name)
{
    CPB_TRY(cpb_alloc(ctx, out, w->in.s * w->in.p.D, piece->dtype, CPB_TAG_GATHER, name));
    CPB_RANGE(ctx, cpb_all_gather(ctx, st, w->tpg, cpb_whole(piece), cpb_whole(*out)), "%s", name);
    return CPB_OK;
}

static int tp_forward(cpb_ctx *ctx, const cpb_method *m, cpb_layer *L, tp_wrap *w, void *inner_state, int tp)
{
    int st;
    CPB_TRY(cpb_stream(ctx, "tp", &st));
    CPB_TRY(open_inner(ctx, m, L, tp, w));
    cpb_layer *in = &w->in;
    CPB_TRY(join_all(ctx, st));
    CPB_TRY(gather_rows(ctx, st, w, L->x, &in->x, "tp_x_gathered"));
    CPB_TRY(cpb_alloc(ctx, &in->y, in->s * L->p.D, L->p.dtype, CPB_TAG_GATHER, "tp_y_partial"));
    CPB_TRY(inputs_ready(ctx));
    CPB_TRY(run_scoped(ctx, m, w, inner_state, 0));
    /* y holds the partial sums of this shard's heads (Wo holds only their rows) */
    CPB_TRY(join_all(ctx, st));
    CPB_RANGE(ctx, cpb_reduce_scatter(ctx, st, w->tpg, cpb_whole(in->y), cpb_whole(L->y)), "tp_y_reduce_scatter");
    CPB_TRY(cpb_stream_join(ctx, CPB_STREAM_COMPUTE, st));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &in->y));
    /* Megatron keeps only the sequence shard of x and gathers it again for the backward */
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &in->x);
}

static int tp_backward(cpb_ctx *ctx, const cpb_method *m, cpb_layer *L, tp_wrap *w, void *inner_state)
{
    int st;
    CPB_TRY(cpb_stream(ctx, "tp", &st));
    cpb_layer *in = &w->in;
    CPB_TRY(join_all(ctx, st));
    /* dy for the output projection's backward, x for the input projections' weight
     * gradients: the wrapper cannot know when the method reads each, so both are gathered
     * before it runs and held through it (Megatron gathers x just before the weight
     * gradient: a peak at most one [S/cp, D] buffer above its) */
    CPB_TRY(gather_rows(ctx, st, w, L->dy, &in->dy, "tp_dy_gathered"));
    CPB_TRY(gather_rows(ctx, st, w, L->x, &in->x, "tp_x_gathered"));
    CPB_TRY(cpb_alloc(ctx, &in->dx, in->s * L->p.D, L->p.dtype, CPB_TAG_GATHER, "tp_dx_partial"));
    CPB_TRY(inputs_ready(ctx));
    CPB_TRY(run_scoped(ctx, m, w, inner_state, 1));
    CPB_TRY(join_all(ctx, st));
    CPB_RANGE(ctx, cpb_reduce_scatter(ctx, st, w->tpg, cpb_whole(in->dx), cpb_whole(L->dx)), "tp_dx_reduce_scatter");
    CPB_TRY(cpb_stream_join(ctx, CPB_STREAM_COMPUTE, st));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &in->dx));
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &in->x));
    return cpb_free(ctx, CPB_STREAM_COMPUTE, &in->dy);
}

int cpb_tp_phase(cpb_ctx *ctx, const cpb_method *m, cpb_layer *L, void *state, int bwd)
{
    const int tp = cpb_tp_degree(&L->p);
    if (tp == 1) return bwd ? m->backward(ctx, L, state) : m->forward(ctx, L, state);
    if (!state) return cpb_fail(ctx, CPB_ERR_INVALID, "--tp %d: no state block (cpb_tp_state_size)", tp);
    tp_wrap *w = state;
    void *inner_state = m->state_size ? (char *)state + WRAP_BYTES : NULL;
    return bwd ? tp_backward(ctx, m, L, w, inner_state) : tp_forward(ctx, m, L, w, inner_state, tp);
}
