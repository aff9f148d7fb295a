/* test_repeat.c — cpb_repeat (cpb.h): on the simulator, alike iterations recorded three or
 * four times and replicated must give what running every one gives, exactly: the trace
 * (entry by entry, event ids, sequence numbers and names included), read before and after
 * its replicated runs are stored, the context's counters, the allocation count and hash,
 * the peak and the replay's times.  A loop whose iterations are not alike runs on as usual;
 * one whose last iteration breaks the promise is an error that says so.  And every method
 * that loops over ring steps gives the same rows with and without replication. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_backend.h"
#include "cpb_presets.h"
#include "gpu_profiles.h"
#include "knobs.h"
#include "registry.h"
#include "row.h"
#include "sim/sim_world.h"
#include "sim/timeline.h"
#include "sim_layer.h"

enum { ALIKE, LAST_DIFFERS, ALTERNATE, LEAK };

typedef struct toy {
    int mode, n, comm;
    cpb_buf *buf[2], *acc;
    cpb_event prev; /* the last iteration's arrival: each waits on the one before's */
} toy;

/* a ring step: send one buffer on, receive the other, a temporary filled and added in */
static int toy_step(cpb_ctx *ctx, void *arg, int i)
{
    toy *T = arg;
    const int r = cpb_rank(ctx), C = cpb_world_size(ctx);
    CPB_TRY(cpb_stream_join(ctx, T->comm, CPB_STREAM_COMPUTE));
    CPB_TRY(cpb_sendrecv(ctx, T->comm, NULL, cpb_span(T->buf[i % 2], 0, 64), (r + 1) % C,
                         cpb_span(T->buf[(i + 1) % 2], 0, 64), (r + C - 1) % C));
    cpb_event arrived;
    CPB_TRY(cpb_event_record(ctx, T->comm, &arrived));
    const int64_t n = T->mode == ALTERNATE && i % 2 ? 128 : 64;
    cpb_buf *tmp = NULL;
    CPB_TRY(cpb_alloc(ctx, &tmp, n, CPB_FP32, CPB_TAG_WORKSPACE, "toy_tmp"));
    CPB_TRY(cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_span(tmp, 0, n), 1.0f));
    if (T->prev.id >= 0) CPB_TRY(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, T->prev));
    CPB_TRY(cpb_axpby(ctx, CPB_STREAM_COMPUTE, 1.0f, cpb_span(tmp, 0, 64), 1.0f, cpb_span(T->acc, 0, 64)));
    if (T->mode == LAST_DIFFERS && i == T->n - 1) CPB_TRY(cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_span(tmp, 0, n), 2.0f));
    if (T->mode == LEAK) {
        cpb_buf *kept = NULL; /* never freed: the iteration does not leave the memory as it found it */
        CPB_TRY(cpb_alloc(ctx, &kept, 32, CPB_FP32, CPB_TAG_ATTN, "toy_kept"));
    }
    CPB_TRY(cpb_free(ctx, CPB_STREAM_COMPUTE, &tmp));
    T->prev = arrived;
    return CPB_OK;
}

typedef struct world {
    cpb_sim_world *w;
    cpb_ctx *ctx[3];
    int n, rc[3];
} world;

/* a world of n ranks that runs the toy loop of `iters` steps (no_repeat: every one runs) */
static void run_world(world *W, int n, int iters, int mode, int no_repeat)
{
    memset(W, 0, sizeof *W);
    W->n = n;
    cr_assert_eq(cpb_sim_world_create(n, &W->w), CPB_OK);
    for (int r = 0; r < n; r++) {
        cpb_ctx_opts o = {0};
        o.sim_rank = r;
        o.sim_world = n;
        o.race_check = 1;
        o.backend_shared = W->w;
        o.no_repeat = no_repeat;
        char err[256];
        cr_assert_eq(cpb_ctx_create(&cpb_backend_sim, &o, &W->ctx[r], err, sizeof err), CPB_OK, "%s", err);
        cpb_ctx *ctx = W->ctx[r];
        cr_assert_eq(cpb_range_push(ctx, "trial"), CPB_OK);
        cr_assert_eq(cpb_range_push(ctx, "fwd"), CPB_OK);
        toy T = {mode, iters, 0, {NULL, NULL}, NULL, {-1}};
        cr_assert_eq(cpb_stream(ctx, "comm", &T.comm), CPB_OK);
        for (int b = 0; b < 2; b++) cr_assert_eq(cpb_alloc(ctx, &T.buf[b], 64, CPB_FP32, CPB_TAG_KV_RING, "toy_kv"), CPB_OK);
        cr_assert_eq(cpb_alloc(ctx, &T.acc, 64, CPB_FP32, CPB_TAG_ATTN, "toy_acc"), CPB_OK);
        /* one op before the loop and one after: the loop's entries sit between others */
        cr_assert_eq(cpb_fill(ctx, CPB_STREAM_COMPUTE, cpb_span(T.acc, 0, 64), 0.0f), CPB_OK);
        W->rc[r] = cpb_repeat(ctx, 0, iters, "step", toy_step, &T);
        if (W->rc[r] == CPB_OK) {
            if (T.prev.id >= 0) cr_assert_eq(cpb_stream_wait(ctx, CPB_STREAM_COMPUTE, T.prev), CPB_OK);
            cr_assert_eq(cpb_copy(ctx, CPB_STREAM_COMPUTE, cpb_span(T.buf[0], 0, 64), cpb_span(T.acc, 0, 64)), CPB_OK);
        }
        cpb_range_pop(ctx);
        cpb_range_pop(ctx);
    }
}

static void close_world(world *W)
{
    for (int r = 0; r < W->n; r++) cpb_ctx_destroy(W->ctx[r]);
    cpb_sim_world_destroy(W->w);
}

/* the traces of a and b read alike, entry by entry (names by their text) */
static void same_traces(const world *A, const world *B, const char *when)
{
    for (int r = 0; r < A->n; r++) {
        const sim_trace *x = &A->w->traces[r], *y = &B->w->traces[r];
        cr_assert_eq(sim_trace_len(x), sim_trace_len(y), "%s, rank %d: %lld entries, %lld running every iteration", when,
                     r, (long long)sim_trace_len(x), (long long)sim_trace_len(y));
        cr_assert_eq(x->nevents, y->nevents, "%s, rank %d: events", when, r);
        sim_iter ia, ib;
        sim_iter_start(&ia, x);
        sim_iter_start(&ib, y);
        for (int64_t k = 0;; k++) {
            const sim_entry *e = sim_iter_next(&ia), *f = sim_iter_next(&ib);
            cr_assert_eq(!e, !f, "%s, rank %d, entry %lld: one trace ends", when, r, (long long)k);
            if (!e) break;
            cr_assert(e->type == f->type && e->phase == f->phase && e->kind == f->kind && e->stream == f->stream &&
                          e->bytes == f->bytes && e->pcie == f->pcie && e->impl == f->impl,
                      "%s, rank %d, entry %lld differs", when, r, (long long)k);
            if (e->type == SIM_RECORD || e->type == SIM_WAIT)
                cr_assert_eq(e->ev, f->ev, "%s, rank %d, entry %lld: event %d, %d running every iteration", when, r,
                             (long long)k, e->ev, f->ev);
            if (e->type == SIM_OP)
                cr_assert(e->flops == f->flops && e->w0 == f->w0 && e->w1 == f->w1 && e->w2 == f->w2 && e->w3 == f->w3,
                          "%s, rank %d, op %lld", when, r, (long long)k);
            if (e->type == SIM_COLL) {
                cr_assert(e->seq == f->seq && e->group == f->group && e->dst == f->dst && e->src == f->src,
                          "%s, rank %d, collective %lld: sequence %lld, %lld running every iteration", when, r,
                          (long long)k, (long long)e->seq, (long long)f->seq);
                char a[512], b[512];
                cr_assert_str_eq(cpb_sim_entry_name(A->w, e, a, sizeof a), cpb_sim_entry_name(B->w, f, b, sizeof b),
                                 "%s, rank %d, collective %lld's name", when, r, (long long)k);
            }
        }
    }
}

static void same_counters(const world *A, const world *B)
{
    for (int r = 0; r < A->n; r++) {
        const cpb_ctx *x = A->ctx[r], *y = B->ctx[r];
        cr_assert_eq(x->n_ops, y->n_ops, "rank %d: ops", r);
        cr_assert_eq(x->n_colls, y->n_colls, "rank %d: collectives", r);
        cr_assert_eq(x->flops, y->flops, "rank %d: flops", r);
        cr_assert_eq(x->comm_bytes, y->comm_bytes, "rank %d: bytes sent", r);
        cr_assert_eq(x->nevents, y->nevents, "rank %d: events", r);
        cr_assert_eq(x->next_buf_id, y->next_buf_id, "rank %d: buffer ids", r);
        cr_assert_eq(x->dev.n_allocs, y->dev.n_allocs, "rank %d: allocations", r);
        cr_assert_eq(x->dev.trace_hash, y->dev.trace_hash, "rank %d: allocation hash %016llx, %016llx running every "
                     "iteration", r, (unsigned long long)x->dev.trace_hash, (unsigned long long)y->dev.trace_hash);
        cr_assert_eq(x->dev.peak, y->dev.peak, "rank %d: peak", r);
        cr_assert_eq(x->groups[0]->seq, y->groups[0]->seq, "rank %d: the world's sequence number", r);
    }
}

static double step_of(world *W)
{
    cpb_gpu_profile prof;
    char err[512] = "";
    cr_assert_eq(cpb_gpu_profile_get("h100-sxm", &prof, err, sizeof err), CPB_OK, "%s", err);
    cpb_sim_timing t;
    cr_assert_eq(cpb_sim_timeline(W->w, &prof.hw, &t, err, sizeof err), CPB_OK, "%s", err);
    return t.step_s;
}

Test(repeat, replicated_iterations_are_the_iterations_run)
{
    /* loops too short to replicate, with an odd and an even number in the middle */
    const int lengths[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 40};
    for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++) {
        world A, B;
        run_world(&A, 3, lengths[k], ALIKE, 0);
        run_world(&B, 3, lengths[k], ALIKE, 1);
        for (int r = 0; r < 3; r++) cr_assert_eq(A.rc[r], CPB_OK, "%d steps: %s", lengths[k], cpb_errmsg(A.ctx[r]));
        if (lengths[k] >= 8) cr_assert_gt(A.w->traces[0].nreps, 0, "%d steps: nothing replicated", lengths[k]);
        same_counters(&A, &B);
        same_traces(&A, &B, "replicated runs read in place");
        for (int r = 0; r < 3; r++) {
            cr_assert_lt(A.w->traces[r].n, lengths[k] >= 8 ? B.w->traces[r].n : B.w->traces[r].n + 1,
                         "%d steps: the copies are not stored until asked", lengths[k]);
            cr_assert_eq(sim_trace_expand(&A.w->traces[r]), CPB_OK);
            cr_assert_eq(A.w->traces[r].nreps, 0);
        }
        same_traces(&A, &B, "replicated runs stored");
        cr_assert_eq(step_of(&A), step_of(&B), "%d steps: the replay's step", lengths[k]);
        close_world(&A);
        close_world(&B);
    }
}

Test(repeat, iterations_that_are_not_alike_run_as_usual)
{
    for (int mode = ALTERNATE; mode <= LEAK; mode++) {
        world A, B;
        run_world(&A, 3, 12, mode, 0);
        run_world(&B, 3, 12, mode, 1);
        for (int r = 0; r < 3; r++) cr_assert_eq(A.rc[r], CPB_OK, "%s", cpb_errmsg(A.ctx[r]));
        cr_assert_eq(A.w->traces[0].nreps, 0, "mode %d: iterations that differ were replicated", mode);
        same_counters(&A, &B);
        same_traces(&A, &B, "not replicated");
        cr_assert_eq(step_of(&A), step_of(&B));
        close_world(&A);
        close_world(&B);
    }
}

Test(repeat, a_last_iteration_that_breaks_the_promise_is_an_error)
{
    world A;
    run_world(&A, 3, 12, LAST_DIFFERS, 0);
    cr_assert_eq(A.rc[0], CPB_ERR_INVALID);
    cr_assert(strstr(cpb_errmsg(A.ctx[0]), "step11 is not iteration step"), "%s", cpb_errmsg(A.ctx[0]));
    cr_assert(strstr(cpb_errmsg(A.ctx[0]), "declared alike"), "%s", cpb_errmsg(A.ctx[0]));
    close_world(&A);
    world B; /* running every iteration, the same loop is simply run */
    run_world(&B, 3, 12, LAST_DIFFERS, 1);
    cr_assert_eq(B.rc[0], CPB_OK);
    close_world(&B);
}

/* a layer trial with and without replication: the same row */
static int same_row(const char *method, const char *model, int C, int64_t S, const char *knob, const char *value,
                    const char *attn)
{
    const cpb_method *m = cpb_method_find(method);
    cr_assert(m, "%s", method);
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find(model, &p), CPB_OK);
    p.C = C;
    p.S = S;
    p.dtype = CPB_BF16;
    cpb_knobs given = {0};
    if (knob && value[0] >= '0' && value[0] <= '9') cr_assert_eq(cpb_knobs_set_int(&given, knob, atoll(value)), CPB_OK);
    else if (knob) cr_assert_eq(cpb_knobs_set_str(&given, knob, value), CPB_OK);
    if (attn) cr_assert_eq(cpb_knobs_set_str(&given, "attn", attn), CPB_OK);
    char err[512];
    if (cpb_knobs_apply(m, &given, &p, err, sizeof err) != CPB_OK || (m->check && m->check(&p, err, sizeof err) != CPB_OK)) {
        cr_log_info("%s on %d: %s", method, C, err);
        return 0;
    }
    static cpb_row a, b;
    cpb_sim_opts o = {0};
    o.mem_cap = o.host_mem_cap = (int64_t)1 << 60;
    cr_assert_eq(cpb_sim_layer(&p, m, &o, &a), CPB_OK);
    o.no_repeat = 1;
    cr_assert_eq(cpb_sim_layer(&p, m, &o, &b), CPB_OK);
    const char *k = knob ? value : "";
    cr_assert_str_eq(a.status, "ok", "%s %s on %d: %s", method, k, C, a.reason);
    cr_assert_str_eq(a.status, b.status);
    cr_assert_eq(a.peak_bytes, b.peak_bytes, "%s %s on %d: peak", method, k, C);
    cr_assert_eq(a.n_allocs, b.n_allocs, "%s %s on %d: allocations", method, k, C);
    cr_assert_eq(a.alloc_hash, b.alloc_hash, "%s %s on %d: allocation hash", method, k, C);
    cr_assert(memcmp(a.tag_peak, b.tag_peak, sizeof a.tag_peak) == 0, "%s %s on %d: per-tag peaks", method, k, C);
    cr_assert_eq(a.fwd_s, b.fwd_s, "%s %s on %d: forward %.17g, %.17g running every iteration", method, k, C, a.fwd_s,
                 b.fwd_s);
    cr_assert_eq(a.step_s, b.step_s, "%s %s on %d: step %.17g, %.17g", method, k, C, a.step_s, b.step_s);
    cr_assert_eq(a.crit_compute_s, b.crit_compute_s, "%s %s on %d: critical path", method, k, C);
    cr_assert_eq(a.crit_comm_s, b.crit_comm_s, "%s %s on %d: critical path", method, k, C);
    cr_assert_eq(a.comm_bytes, b.comm_bytes, "%s %s on %d: bytes sent", method, k, C);
    cr_assert_eq(a.replayed_ranks, b.replayed_ranks, "%s %s on %d: replayed ranks", method, k, C);
    cr_assert_str_eq(a.attn_calls, b.attn_calls, "%s %s on %d: attention calls", method, k, C);
    return 1;
}

Test(repeat, methods_give_the_same_rows_with_replication)
{
    int n = 0;
    /* every ring layout; an odd ring, a ring of two nodes and one replayed by symmetry */
    const char *layouts[] = {"zigzag", "striped", "contiguous"};
    const int worlds[] = {7, 16, 96};
    for (int l = 0; l < 3; l++)
        for (int w = 0; w < 3; w++) /* striped and contiguous: masks cuDNN takes on some ranks only */
            n += same_row("ring", "llama3-8b", worlds[w], l == 1 ? 1024 * (int64_t)worlds[w] : 96 * 1024 * 7, "ring_layout",
                          layouts[l], l ? "own" : NULL); /* striped: a position segment per token, 1,024 at most */
    n += same_row("ring", "qwen3-32b", 12, 48 * 1024 * 12, NULL, NULL, NULL); /* H*d != D */
    n += same_row("ring", "llama3-8b", 24, 24 * 8192, NULL, NULL, "own");    /* our kernels throughout */
    n += same_row("metp", "llama3-8b", 16, 512 * 1024, NULL, NULL, NULL);   /* inner rings per head group */
    n += same_row("usp", "llama3-8b", 64, 4 * 1024 * 1024, "ulysses_degree", "2", NULL);
    n += same_row("hupipe", "llama3-8b", 64, 4 * 1024 * 1024, "ulysses_degree", "1", NULL);
    n += same_row("hupipe", "llama2-7b", 48, 3 * 1024 * 1024, "ulysses_degree", "4", NULL); /* MHA, 12-rank rings */
    n += same_row("dring", "llama3-8b", 64, 4 * 1024 * 1024, "inner_ring", "4", NULL);
    n += same_row("dring", "llama3-8b", 96, 6 * 1024 * 1024, "inner_ring", "12", NULL);
    cr_assert_eq(n, 17, "only %d of the 17 trials ran", n);
}

Test(repeat, the_replay_stops_at_the_deadline)
{
    /* --timeout bounds the replay too (sim_world.h: deadline): with the steps replicated it
     * can be a point's longest part */
    world A;
    run_world(&A, 3, 40, ALIKE, 0);
    A.w->deadline = 1e-9; /* long past on CLOCK_MONOTONIC */
    cpb_gpu_profile prof;
    char err[512] = "";
    cr_assert_eq(cpb_gpu_profile_get("h100-sxm", &prof, err, sizeof err), CPB_OK, "%s", err);
    cpb_sim_timing t;
    cr_assert_eq(cpb_sim_timeline(A.w, &prof.hw, &t, err, sizeof err), CPB_ERR_UNSUPPORTED);
    cr_assert_eq(A.w->timed_out, 1);
    cr_assert(strstr(err, "--timeout"), "%s", err);
    A.w->deadline = 0;
    A.w->timed_out = 0;
    cr_assert_eq(cpb_sim_timeline(A.w, &prof.hw, &t, err, sizeof err), CPB_OK, "%s", err);
    close_world(&A);
}
