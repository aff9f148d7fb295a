/* bench_kernels.c — `cpbench bench-kernels [--out calib.txt] [--seq-start N]
 * [--seq-stop N] [--iters N]`: what the cuda backend's kernels and links achieve on this
 * machine, printed and optionally written as a calibration file for the simulator
 * (driver/gpu_profiles.h lists the keys; docs/cuda.md says how each is measured).
 *
 * Everything goes through the runtime API on a cuda context, so the numbers are what a
 * method's schedule gets.  FLOP counts are the runtime's: causal attention counts the
 * lower triangle only (forward 4*pairs*d*H, backward 2.5x that).  Under mpirun every rank
 * measures its own GPU; rank 0 reports, and collectives are measured when world > 1. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_tools.h"
#include "ranks.h"

typedef struct bench {
    cpb_ctx *ctx;
    int rank, world;
    int iters, warmup;
    char err[2400];
    char notes[8192]; /* per-call figures, written as comments into the calibration file */
} bench;

/* the median and the fastest of a call's timed runs, seconds */
typedef struct timing {
    double med, min;
} timing;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void note(bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(bench *b, const char *fmt, ...)
{
    size_t n = strlen(b->notes);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->notes + n, sizeof b->notes - n, fmt, ap);
    va_end(ap);
}

/* Give back what earlier measurements left in the backend's caches (cuda: the memory pool
 * is trimmed), so that each measurement starts from the same empty pool. */
static void fresh_memory(bench *b)
{
    cpb_free_all(b->ctx);
    if (b->ctx->be->mem_trial && b->ctx->be->mem_trial(b->ctx, CPB_MEM_TRIAL_START) != CPB_OK)
        cpb_clear_error(b->ctx); /* a trim that failed leaves more memory reserved, nothing worse */
}

/* One timed region: warm-up runs, then b->iters runs back to back, each between two marks
 * of the backend's timer (cpb_time_mark: on cuda, events recorded around the launches, so
 * the host's polling wait is not in the time).  Runs are not cut short by elapsed time: a
 * median needs its runs.  Collective regions start together (a barrier) and take the
 * slowest rank's time per run.  Returns CPB_OK, or an error with the message in b->err. */
typedef int (*bench_fn)(bench *b, void *arg);

static int time_it(bench *b, bench_fn fn, void *arg, int collective, timing *out)
{
    cpb_ctx *c = b->ctx;
    double *t = calloc((size_t)b->iters, sizeof *t);
    int rc = t ? CPB_OK : cpb_fail(c, CPB_ERR_NOMEM_HOST, "out of host memory");
    for (int i = 0; rc == CPB_OK && i < b->warmup; i++) rc = fn(b, arg);
    if (rc == CPB_OK) rc = cpb_sync(c);
    if (collective && b->world > 1) {
        /* every rank learns whether all are ready, so none waits alone in the barrier */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", rc == CPB_OK ? "" : cpb_errmsg(c));
        if (cpb_agree_status(rc, msg, sizeof msg) != CPB_OK && rc == CPB_OK)
            rc = cpb_fail(c, CPB_ERR_COMM, "another rank failed: %s", msg);
        if (rc == CPB_OK) cpb_agree_barrier();
    }
    for (int done = 0; rc == CPB_OK && done < b->iters;) {
        int n = b->iters - done < CPB_TIME_MARKS - 1 ? b->iters - done : CPB_TIME_MARKS - 1;
        rc = cpb_time_mark(c, 0);
        for (int i = 0; rc == CPB_OK && i < n; i++) {
            rc = fn(b, arg);
            if (rc == CPB_OK) rc = cpb_time_mark(c, i + 1);
        }
        if (rc == CPB_OK) rc = cpb_sync(c);
        for (int i = 0; rc == CPB_OK && i < n; i++) rc = cpb_time_between(c, i, i + 1, &t[done + i]);
        done += n;
    }
    if (collective && b->world > 1) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", rc == CPB_OK ? "" : cpb_errmsg(c));
        if (cpb_agree_status(rc, msg, sizeof msg) != CPB_OK && rc == CPB_OK)
            rc = cpb_fail(c, CPB_ERR_COMM, "another rank failed: %s", msg);
        if (rc == CPB_OK) cpb_agree_max_double(t, b->iters);
    }
    if (rc != CPB_OK) {
        snprintf(b->err, sizeof b->err, "%s", cpb_errmsg(c));
        cpb_clear_error(c);
        free(t);
        return rc;
    }
    qsort(t, (size_t)b->iters, sizeof *t, cmp_double);
    out->min = t[0];
    out->med = b->iters % 2 ? t[b->iters / 2] : 0.5 * (t[b->iters / 2 - 1] + t[b->iters / 2]);
    free(t);
    if (!(out->min > 0)) {
        snprintf(b->err, sizeof b->err, "a run took %g s on the %s: no time to divide by", out->min, cpb_time_clock(c));
        return CPB_ERR_BACKEND;
    }
    return CPB_OK;
}

/* ---------------------------------------------------------------- attention */

typedef struct attn_arg {
    cpb_attn_args a;
    int bwd;
} attn_arg;

static int run_attn(bench *b, void *arg)
{
    attn_arg *x = arg;
    return x->bwd ? cpb_attn_bwd(b->ctx, 0, &x->a) : cpb_attn_fwd(b->ctx, 0, &x->a);
}

/* causal, d 128, GQA 32/8 (Llama3-8B's attention), S tokens on one GPU, on the
 * implementation the context's --attn choice routes it to (cuDNN or ours) */
static int bench_attn(bench *b, int64_t S, double *fwd_tf, double *bwd_tf)
{
    const int H = 32, G = 8, d = 128;
    cpb_ctx *c = b->ctx;
    cpb_buf *q = NULL, *k = NULL, *v = NULL, *o = NULL, *lse = NULL, *dO = NULL, *dq = NULL, *dk = NULL, *dv = NULL;
    int rc = cpb_alloc(c, &q, S * H * d, CPB_BF16, CPB_TAG_QKV, "q");
    if (!rc) rc = cpb_alloc(c, &k, S * G * d, CPB_BF16, CPB_TAG_QKV, "k");
    if (!rc) rc = cpb_alloc(c, &v, S * G * d, CPB_BF16, CPB_TAG_QKV, "v");
    if (!rc) rc = cpb_alloc(c, &o, S * H * d, CPB_BF16, CPB_TAG_ATTN, "o");
    if (!rc) rc = cpb_alloc(c, &lse, S * H, CPB_FP32, CPB_TAG_ATTN, "lse");
    if (!rc) rc = cpb_alloc(c, &dO, S * H * d, CPB_BF16, CPB_TAG_GRAD_ACT, "dO");
    if (!rc) rc = cpb_alloc(c, &dq, S * H * d, CPB_BF16, CPB_TAG_GRAD_ACT, "dq");
    if (!rc) rc = cpb_alloc(c, &dk, S * G * d, CPB_BF16, CPB_TAG_GRAD_ACT, "dk");
    if (!rc) rc = cpb_alloc(c, &dv, S * G * d, CPB_BF16, CPB_TAG_GRAD_ACT, "dv");
    if (!rc) rc = cpb_fill_random(c, 0, cpb_whole(q), 1, 0, 1.0f);
    if (!rc) rc = cpb_fill_random(c, 0, cpb_whole(k), 2, 0, 1.0f);
    if (!rc) rc = cpb_fill_random(c, 0, cpb_whole(v), 3, 0, 1.0f);
    if (!rc) rc = cpb_fill_random(c, 0, cpb_whole(dO), 4, 0, 1.0f);
    if (rc) {
        snprintf(b->err, sizeof b->err, "%s", cpb_errmsg(c));
        cpb_clear_error(c);
        cpb_free_all(c);
        return rc;
    }
    attn_arg x;
    memset(&x, 0, sizeof x);
    x.a.q = cpb_heads(q, 0, S, H, d, H * d, d);
    x.a.k = cpb_heads(k, 0, S, G, d, G * d, d);
    x.a.v = cpb_heads(v, 0, S, G, d, G * d, d);
    x.a.o = cpb_heads(o, 0, S, H, d, H * d, d);
    x.a.lse = cpb_lse_view(lse, S, 0, H, 0, S);
    x.a.causal = 1;
    x.a.d_o = cpb_heads(dO, 0, S, H, d, H * d, d);
    x.a.dq = cpb_heads(dq, 0, S, H, d, H * d, d);
    x.a.dk = cpb_heads(dk, 0, S, G, d, G * d, d);
    x.a.dv = cpb_heads(dv, 0, S, G, d, G * d, d);
    double pairs = (double)S * (double)(S + 1) / 2.0;
    double ff = 4.0 * pairs * d * H;
    timing tf = {0, 0}, tb = {0, 0};
    x.bwd = 0;
    rc = time_it(b, run_attn, &x, 0, &tf);
    x.bwd = 1;
    if (rc == CPB_OK) rc = time_it(b, run_attn, &x, 0, &tb);
    cpb_free_all(c);
    if (rc != CPB_OK) return rc;
    /* the median run is the figure; the fastest shows how far the runs spread */
    *fwd_tf = ff / tf.med / 1e12;
    *bwd_tf = 2.5 * ff / tb.med / 1e12;
    const char *impl = b->ctx->attn_choice == CPB_ATTN_CHOOSE_OWN ? "own" : "cudnn";
    if (b->rank == 0)
        printf("attn %-5s S %6lld causal d%d H%d/G%d   fwd %9.6f s (min %9.6f) %6.1f TFLOP/s (best %6.1f)   "
               "bwd %9.6f s (min %9.6f) %6.1f TFLOP/s (best %6.1f)\n",
               impl, (long long)S, d, H, G, tf.med, tf.min, *fwd_tf, ff / tf.min / 1e12, tb.med,
               tb.min, *bwd_tf, 2.5 * ff / tb.min / 1e12);
    note(b, "# attn %s S %lld: fwd %.6f s median, %.6f min (%.1f TFLOP/s); bwd %.6f s median, %.6f min (%.1f TFLOP/s)\n",
         impl, (long long)S, tf.med, tf.min, *fwd_tf, tb.med, tb.min, *bwd_tf);
    return CPB_OK;
}

/* ---------------------------------------------------------------- GEMM */

typedef struct gemm_arg {
    cpb_view a, b, c;
    int tb;
} gemm_arg;

static int run_gemm(bench *b, void *arg)
{
    gemm_arg *g = arg;
    return cpb_gemm(b->ctx, 0, 0, g->tb, 1.0f, g->a, g->b, 0.0f, g->c);
}

static int bench_gemm(bench *b, int64_t m, int64_t n, int64_t k, int tb, const char *what, double *tflops)
{
    cpb_ctx *c = b->ctx;
    cpb_buf *A = NULL, *B = NULL, *C = NULL;
    int rc = cpb_alloc(c, &A, m * k, CPB_BF16, CPB_TAG_TEMP, "A");
    if (!rc) rc = cpb_alloc(c, &B, k * n, CPB_BF16, CPB_TAG_TEMP, "B");
    if (!rc) rc = cpb_alloc(c, &C, m * n, CPB_BF16, CPB_TAG_TEMP, "C");
    if (!rc) rc = cpb_fill_random(c, 0, cpb_whole(A), 5, 0, 1.0f);
    if (!rc) rc = cpb_fill_random(c, 0, cpb_whole(B), 6, 0, 1.0f);
    if (rc) {
        snprintf(b->err, sizeof b->err, "%s", cpb_errmsg(c));
        cpb_clear_error(c);
        cpb_free_all(c);
        return rc;
    }
    gemm_arg g = {cpb_mat(A, 0, m, k, k), tb ? cpb_mat(B, 0, n, k, k) : cpb_mat(B, 0, k, n, n), cpb_mat(C, 0, m, n, n), tb};
    timing t = {0, 0};
    rc = time_it(b, run_gemm, &g, 0, &t);
    cpb_free_all(c);
    if (rc != CPB_OK) return rc;
    double flops = 2.0 * m * n * k;
    *tflops = flops / t.med / 1e12;
    if (b->rank == 0)
        printf("gemm   %-28s m %6lld n %6lld k %6lld   %9.6f s (min %9.6f) %7.1f TFLOP/s (best %7.1f)\n", what,
               (long long)m, (long long)n, (long long)k, t.med, t.min, *tflops, flops / t.min / 1e12);
    note(b, "# gemm %s: %.6f s median, %.6f min (%.1f TFLOP/s)\n", what, t.med, t.min, *tflops);
    return CPB_OK;
}

/* ---------------------------------------------------------------- copies */

typedef struct copy_arg {
    cpb_view dst, src;
} copy_arg;

static int run_copy(bench *b, void *arg)
{
    copy_arg *x = arg;
    return cpb_copy(b->ctx, 0, x->dst, x->src);
}

/* device -> device (HBM: read + write), host -> device and device -> host (PCIe) */
static int bench_copies(bench *b, double *hbm_gbs, double *pcie_gbs)
{
    cpb_ctx *c = b->ctx;
    int64_t n = 256LL << 20; /* 512 MiB of bf16 */
    cpb_buf *d0 = NULL, *d1 = NULL, *h = NULL;
    int rc = cpb_alloc(c, &d0, n, CPB_BF16, CPB_TAG_TEMP, "d0");
    if (!rc) rc = cpb_alloc(c, &d1, n, CPB_BF16, CPB_TAG_TEMP, "d1");
    if (!rc) rc = cpb_alloc_host(c, &h, n, CPB_BF16, CPB_TAG_FETCH, "pinned");
    if (!rc) rc = cpb_fill(c, 0, cpb_whole(d0), 1.0f);
    if (!rc) rc = cpb_fill(c, 0, cpb_whole(d1), 1.0f);
    if (rc) {
        snprintf(b->err, sizeof b->err, "%s", cpb_errmsg(c));
        cpb_clear_error(c);
        cpb_free_all(c);
        return rc;
    }
    double bytes = (double)n * 2.0;
    copy_arg dd = {cpb_whole(d1), cpb_whole(d0)}, hd = {cpb_whole(d0), cpb_whole(h)}, dh = {cpb_whole(h), cpb_whole(d1)};
    timing t_dd = {0, 0}, t_hd = {0, 0}, t_dh = {0, 0};
    rc = time_it(b, run_copy, &dd, 0, &t_dd);
    if (rc == CPB_OK) rc = time_it(b, run_copy, &hd, 0, &t_hd);
    if (rc == CPB_OK) rc = time_it(b, run_copy, &dh, 0, &t_dh);
    cpb_free_all(c);
    if (rc != CPB_OK) return rc;
    *hbm_gbs = 2.0 * bytes / t_dd.med / 1e9;
    double h2d = bytes / t_hd.med / 1e9, d2h = bytes / t_dh.med / 1e9;
    *pcie_gbs = 0.5 * (h2d + d2h);
    if (b->rank == 0)
        printf("copy   device->device %.0f MiB  %7.1f GB/s (read+write; best %.1f)   host->device %6.1f GB/s (best %.1f)"
               "   device->host %6.1f GB/s (best %.1f) (pinned)\n",
               bytes / 1048576.0, *hbm_gbs, 2.0 * bytes / t_dd.min / 1e9, h2d, bytes / t_hd.min / 1e9, d2h,
               bytes / t_dh.min / 1e9);
    note(b, "# copy %.0f MiB: device->device %.6f s median, %.6f min; host->device %.6f, %.6f; device->host %.6f, %.6f\n",
         bytes / 1048576.0, t_dd.med, t_dd.min, t_hd.med, t_hd.min, t_dh.med,
         t_dh.min);
    return CPB_OK;
}

/* ---------------------------------------------------------------- collectives */

typedef struct coll_arg {
    cpb_view send, recv;
    int sendrecv;
    int dst, src;
} coll_arg;

static int run_coll(bench *b, void *arg)
{
    coll_arg *x = arg;
    if (x->sendrecv) return cpb_sendrecv(b->ctx, 0, NULL, x->send, x->dst, x->recv, x->src);
    return cpb_all_to_all(b->ctx, 0, NULL, x->send, x->recv);
}

static int bench_colls(bench *b, double *a2a_gbs, double *sr_gbs)
{
    cpb_ctx *c = b->ctx;
    int W = b->world;
    int64_t n = (128LL << 20) / W * W; /* 256 MiB of bf16 per rank */
    cpb_buf *s = NULL, *r = NULL;
    int rc = cpb_alloc(c, &s, n, CPB_BF16, CPB_TAG_A2A, "send");
    if (!rc) rc = cpb_alloc(c, &r, n, CPB_BF16, CPB_TAG_A2A, "recv");
    if (!rc) rc = cpb_fill(c, 0, cpb_whole(s), 1.0f);
    if (rc) {
        snprintf(b->err, sizeof b->err, "%s", cpb_errmsg(c));
        cpb_clear_error(c);
        cpb_free_all(c);
        return rc;
    }
    coll_arg a2a = {cpb_whole(s), cpb_whole(r), 0, 0, 0};
    coll_arg sr = {cpb_whole(s), cpb_whole(r), 1, (b->rank + 1) % W, (b->rank + W - 1) % W};
    double bytes = (double)n * 2.0;
    timing ta = {0, 0}, ts = {0, 0};
    rc = time_it(b, run_coll, &a2a, 1, &ta);
    if (rc == CPB_OK) rc = time_it(b, run_coll, &sr, 1, &ts);
    cpb_free_all(c);
    if (rc != CPB_OK) return rc;
    /* bus bandwidth (nccl-tests): what each rank puts on the wire per second */
    *a2a_gbs = bytes * (W - 1) / W / ta.med / 1e9;
    *sr_gbs = bytes / ts.med / 1e9;
    if (b->rank == 0)
        printf("comm   %d ranks, %.0f MiB per rank   all-to-all %7.1f GB/s busbw (best %.1f)   send/recv ring %7.1f GB/s "
               "busbw (best %.1f)\n",
               W, bytes / 1048576.0, *a2a_gbs, bytes * (W - 1) / W / ta.min / 1e9, *sr_gbs, bytes / ts.min / 1e9);
    note(b, "# comm %d ranks: all-to-all %.6f s median, %.6f min; send/recv %.6f, %.6f\n", W, ta.med,
         ta.min, ts.med, ts.min);
    return CPB_OK;
}

static int write_calibration(const char *path, const char *gpu, int64_t mem, int sms, const double *v, const char *const *keys,
                             int nkeys, int world, const bench *b)
{
    FILE *f = fopen(path, "w");
    if (!f) return CPB_ERR_IO;
    time_t t = time(NULL);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    fprintf(f, "# cpbench bench-kernels calibration (driver/gpu_profiles.h lists the keys)\n");
    fprintf(f, "# gpu: %s\n# date: %s\n# ranks: %d\n", gpu, date, world);
    fprintf(f, "# clock: %s; %d timed runs after %d warm-up per call; the keys take the median run\n",
            cpb_time_clock(b->ctx), b->iters, b->warmup);
    fputs(b->notes, f);
    fprintf(f, "mem_gib = %.3f\n", mem / 1073741824.0);
    fprintf(f, "num_sms = %d\n", sms);
    for (int i = 0; i < nkeys; i++)
        if (v[i] > 0) fprintf(f, "%s = %.2f\n", keys[i], v[i]);
    return fclose(f) == 0 ? CPB_OK : CPB_ERR_IO;
}

int cpb_bench_kernels(const cpb_tool_opts *o)
{
    const cpb_backend *be = o->be;
    char err[2048];
    const int rank0 = cpb_ranks_rank() == 0;
    if (be->models_time || !be->has_data) {
        if (rank0)
            fprintf(stderr, "cpbench bench-kernels: measures a backend's kernels on its clock; the %s backend models "
                    "time instead (its GPU profiles carry published figures); run it with --backend cuda\n", be->name);
        return 2;
    }
    char why[512] = "";
    if (be->probe && be->probe(why, sizeof why) <= 0) {
        if (rank0) fprintf(stderr, "cpbench bench-kernels: no %s device present (%s); nothing to measure\n", be->name, why);
        return 2;
    }
    int64_t s0 = o->seq_start > 0 ? o->seq_start : 4096, s1 = o->seq_stop > 0 ? o->seq_stop : 65536;
    if (s0 > s1) {
        if (rank0)
            fprintf(stderr, "cpbench bench-kernels: --seq-start %lld is above --seq-stop %lld\n", (long long)s0,
                    (long long)s1);
        return 2;
    }
    bench b;
    memset(&b, 0, sizeof b);
    /* a median and a minimum need runs: at least 5 */
    enum { MIN_ITERS = 5 };
    b.iters = o->iters >= MIN_ITERS ? o->iters : MIN_ITERS;
    b.warmup = o->warmup >= 0 ? o->warmup : 1;
    cpb_ctx_opts co = o->ctx;
    co.use_mpi = cpb_ranks_mpi();
    co.race_check = 0; /* no bookkeeping in the timed loops */
    if (cpb_ctx_create(be, &co, &b.ctx, err, sizeof err) != CPB_OK) {
        fprintf(stderr, "cpbench bench-kernels: %s\n", err);
        return 1;
    }
    b.rank = cpb_rank(b.ctx);
    b.world = cpb_world_size(b.ctx);
    cpb_device_info di = {"", 0, 0, 0};
    if (be->device_info) be->device_info(b.ctx, &di);
    cpb_clear_error(b.ctx);
    char gpu[256];
    snprintf(gpu, sizeof gpu, "%s", di.name[0] ? di.name : be->name);
    int64_t mem = di.total_bytes;
    int sms = di.num_sms;
    if (b.rank == 0) {
        printf("cpbench bench-kernels on %s (%.1f GiB, %d SMs), %d rank%s\n", gpu, mem / 1073741824.0, sms, b.world,
               b.world == 1 ? "" : "s");
        printf("timing: %s, %d timed runs after %d warm-up per call%s; median (min) per call, rates at the median "
               "(best at the min)\n",
               cpb_time_clock(b.ctx), b.iters, b.warmup,
               o->iters > 0 && o->iters < MIN_ITERS ? " (--iters raised to 5)" : "");
    }

    enum { K_FWD, K_BWD, K_OWN_FWD, K_OWN_BWD, K_GEMM, K_HBM, K_PCIE, K_A2A, K_SR, K_N };
    static const char *const keys[K_N] = {"attn_fwd_tflops", "attn_bwd_tflops", "attn_own_fwd_tflops",
                                          "attn_own_bwd_tflops", "gemm_tflops", "hbm_gbs", "pcie_gbs",
                                          "a2a_busbw_gbs", "sendrecv_busbw_gbs"};
    double v[K_N] = {0};
    int failed = 0;
    /* both attention implementations: cuDNN's (the simulator's attn_* keys) where the
     * backend has it, and ours (attn_own_*) */
    char dnn_why[512] = "";
    const int have_cudnn = be->attn_cudnn && be->attn_cudnn(dnn_why, sizeof dnn_why) == 2;
    if (!have_cudnn && b.rank == 0) printf("attn cudnn: not measured (%s)\n", dnn_why[0] ? dnn_why : "no cuDNN attention");
    /* a failure of one implementation (cuDNN refusing a call, say) ends its lengths but not
     * the other's: our kernels are still measured, and the run still fails at the end */
    for (int impl = have_cudnn ? 0 : 1; impl < 2; impl++) {
        cpb_ctx_set_attn(b.ctx, impl ? CPB_ATTN_CHOOSE_OWN : CPB_ATTN_CHOOSE_CUDNN);
        for (int64_t S = s0; S <= s1; S *= 2) {
            double f = 0, bw = 0;
            fresh_memory(&b);
            if (bench_attn(&b, S, &f, &bw) != CPB_OK) {
                fprintf(stderr, "[%d] attention (%s) S %lld: %s\n", b.rank, impl ? "own" : "cudnn", (long long)S, b.err);
                if (b.rank == 0)
                    printf("attn %-5s S %6lld and longer: not measured (the error above)\n", impl ? "own" : "cudnn",
                           (long long)S);
                failed = 1;
                break;
            }
            /* the calibration takes the best large call: the efficiency ceiling */
            double *vf = &v[impl ? K_OWN_FWD : K_FWD], *vb = &v[impl ? K_OWN_BWD : K_BWD];
            if (f > *vf) *vf = f;
            if (bw > *vb) *vb = bw;
        }
    }
    /* square, and Llama3-8B's fused q/k/v projection at 16K tokens (D 4096 -> 6144) */
    const struct {
        int64_t m, n, k;
        int tb;
        const char *what;
    } gemms[] = {{8192, 8192, 8192, 0, "square"}, {16384, 6144, 4096, 0, "x Wqkv (llama3-8b, 16K)"},
                 {4096, 4096, 16384, 1, "dW-like, B transposed"}};
    for (size_t i = 0; i < sizeof gemms / sizeof gemms[0]; i++) {
        double t = 0;
        fresh_memory(&b);
        if (bench_gemm(&b, gemms[i].m, gemms[i].n, gemms[i].k, gemms[i].tb, gemms[i].what, &t) != CPB_OK) {
            fprintf(stderr, "[%d] gemm %s: %s\n", b.rank, gemms[i].what, b.err);
            failed = 1;
        } else if (t > v[K_GEMM]) {
            v[K_GEMM] = t;
        }
    }
    fresh_memory(&b);
    if (bench_copies(&b, &v[K_HBM], &v[K_PCIE]) != CPB_OK) {
        fprintf(stderr, "[%d] copies: %s\n", b.rank, b.err);
        failed = 1;
    }
    fresh_memory(&b);
    if (b.world > 1 && bench_colls(&b, &v[K_A2A], &v[K_SR]) != CPB_OK) {
        fprintf(stderr, "[%d] collectives: %s\n", b.rank, b.err);
        failed = 1;
    }
    int rc = failed ? 1 : 0;
    if (b.rank == 0 && o->out) {
        if (write_calibration(o->out, gpu, mem, sms, v, keys, K_N, b.world, &b) != CPB_OK) {
            fprintf(stderr, "cpbench bench-kernels: cannot write %s\n", o->out);
            rc = 1;
        } else {
            printf("calibration written to %s (use: cpbench run --backend sim --calibration %s ...)\n", o->out,
                   o->out);
        }
    }
    cpb_ctx_destroy(b.ctx);
    return rc;
}
