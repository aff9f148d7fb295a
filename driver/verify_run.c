/* verify_run.c — one verify invocation: the problem from the options, seeded inputs, the
 * reference on rank 0, and for each method: check, trial, gather, compare, report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_reference.h"
#include "fingerprint.h"
#include "knobs.h"
#include "ranks.h"
#include "tp_compose.h"
#include "verify.h"
#include "verify_inputs.h"

const char *cpb_verdict_name(cpb_verdict v)
{
    switch (v) {
    case CPB_VERDICT_PASS: return "PASS";
    case CPB_VERDICT_FAIL: return "FAIL";
    case CPB_VERDICT_REFUSED_OK: return "REFUSED-as-expected";
    case CPB_VERDICT_REFUSED: return "REFUSED";
    default: return "ERROR";
    }
}

static void fmt_bytes(int64_t b, char *out, size_t len)
{
    double v = (double)b;
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0) snprintf(out, len, "%lld B", (long long)b);
    else snprintf(out, len, "%.2f %s", v, unit[u]);
}

static void print_tags(const char *what, const int64_t *tags)
{
    printf("  %s:", what);
    int any = 0;
    for (int t = 0; t < CPB_TAG_COUNT; t++)
        if (tags[t]) {
            char b[32];
            fmt_bytes(tags[t], b, sizeof b);
            printf("%s %s %s", any ? "," : "", cpb_tag_name((cpb_tag)t), b);
            any = 1;
        }
    printf("%s\n", any ? "" : " none");
}

/* max|a - ref| / max|ref| (absolute when ref is all zero; inf when a is not finite) */
static double rel_max_err(const double *a, const double *ref, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(a[i])) return INFINITY;
        double e = fabs(a[i] - ref[i]);
        if (e > num) num = e;
        if (fabs(ref[i]) > den) den = fabs(ref[i]);
    }
    return den > 0 ? num / den : num;
}

typedef struct shared_case {
    const cpb_verify_opts *a;
    const cpb_problem *p;
    const cpb_host_inputs *in;
    const cpb_verify_results *ref; /* rank 0 */
    const char *label;             /* NULL: full report */
    int n_methods;
} shared_case;

/* the x this rank holds must be the host-rounded global rows: checks the upload's rounding
 * and the layout in one go */
static int check_uploaded_x(cpb_ctx *ctx, const cpb_layer *L, const float *gx, char *msg, size_t len)
{
    const int64_t D = L->p.D;
    float *local = malloc(sizeof(float) * (size_t)(L->s * D));
    if (!local) {
        snprintf(msg, len, "out of host memory checking the uploaded x");
        return CPB_ERR_NOMEM_HOST;
    }
    int rc = cpb_download(ctx, cpb_whole(L->x), local);
    if (rc != CPB_OK) snprintf(msg, len, "downloading x: %s", cpb_errmsg(ctx));
    int64_t row = 0;
    for (int i = 0; rc == CPB_OK && i < L->tokens.n; i++)
        for (int64_t j = 0; rc == CPB_OK && j < L->tokens.len[i]; j++, row++)
            for (int64_t c = 0; c < D; c++) {
                float want = gx[(L->tokens.pos0[i] + j) * D + c], got = local[row * D + c];
                if (memcmp(&want, &got, sizeof want) != 0) {
                    snprintf(msg, len, "x as stored on the device differs from the host-rounded input at token "
                             "%lld, column %lld (%.9g vs %.9g): the backend's %s rounding is not "
                             "round-to-nearest-even (cpb_bf16.h)", (long long)(L->tokens.pos0[i] + j),
                             (long long)c, got, want, cpb_dtype_name(L->p.dtype));
                    rc = CPB_ERR_BACKEND;
                    break;
                }
            }
    free(local);
    return rc;
}

/* The fingerprint's norms against those of the gathered results (double sums over the
 * same stored values): only the order and precision of the sums differ, fp32 on the
 * device, so they agree far inside any dtype's bar. */
#define FINGERPRINT_BAR 1e-5

static double fingerprint_error(const cpb_verify_results *res, const double fp[CPB_FP_COUNT])
{
    double ss[CPB_FP_COUNT] = {0, 0, 0}, worst = 0;
    for (int t = 0; t < CPB_VT_COUNT; t++) {
        int k = t == CPB_VT_Y ? CPB_FP_Y : t == CPB_VT_DX ? CPB_FP_DX : CPB_FP_DW;
        for (int64_t i = 0; i < res->n[t]; i++) ss[k] += res->t[t][i] * res->t[t][i];
    }
    for (int k = 0; k < CPB_FP_COUNT; k++) {
        double want = sqrt(ss[k]), e = fabs(fp[k] - want) / (want > 0 ? want : 1.0);
        if (!(e <= worst)) worst = e; /* NaN too */
    }
    return worst;
}

static void dump_path(const char *path, const char *method, int many, char *out, size_t len)
{
    if (!many) {
        snprintf(out, len, "%s", path);
        return;
    }
    /* several methods: FILE.h5 -> FILE.<method>.h5 */
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (dot && (!slash || dot > slash))
        snprintf(out, len, "%.*s.%s%s", (int)(dot - path), path, method, dot);
    else
        snprintf(out, len, "%s.%s", path, method);
}

static cpb_verdict run_method(const shared_case *sc, const cpb_method *m, double *max_err)
{
    const cpb_verify_opts *a = sc->a;
    const cpb_problem *p = sc->p;
    const int rank = cpb_ranks_rank();
    char msg[1024] = "";
    *max_err = NAN;
    cpb_ctx_opts o = a->ctx;
    o.use_mpi = cpb_ranks_mpi();
    cpb_ctx *ctx = NULL;
    int rc = cpb_ctx_create(a->be, &o, &ctx, msg, sizeof msg);
    cpb_layer L;
    cpb_row tr;
    cpb_row_init(&tr);
    cpb_verify_results res;
    memset(&res, 0, sizeof res);
    const char *stage = "creating the context";
    if (rc == CPB_OK) {
        cpb_reset_stats(ctx);
        stage = "setting up the layer";
        cpb_global_inputs gin = cpb_host_inputs_view(sc->in);
        rc = cpb_trial_setup(ctx, m, p, &gin, a->seed, &L);
        if (rc != CPB_OK) snprintf(msg, sizeof msg, "%s", cpb_errmsg(ctx));
    }
    rc = cpb_agree_status(rc, msg, sizeof msg);
    if (rc == CPB_OK) {
        stage = "checking the uploaded inputs";
        rc = cpb_agree_status(check_uploaded_x(ctx, &L, sc->in->x, msg, sizeof msg), msg, sizeof msg);
    }
    if (rc == CPB_OK) {
        stage = "running forward and backward";
        rc = cpb_trial_step(ctx, m, &L, &tr);
        if (rc != CPB_OK) snprintf(msg, sizeof msg, "%s", tr.reason);
        rc = cpb_agree_status(rc, msg, sizeof msg);
    }
    if (rc == CPB_OK) {
        stage = "gathering the results";
        if (rank == 0 && cpb_verify_results_alloc(p, &res) != CPB_OK) {
            rc = CPB_ERR_NOMEM_HOST;
            snprintf(msg, sizeof msg, "out of host memory for the gathered results");
        }
        rc = cpb_agree_status(rc, msg, sizeof msg);
        if (rc == CPB_OK) rc = cpb_verify_gather(ctx, &L, &tr, &res, msg, sizeof msg);
    }
    /* the fingerprint a benchmark row records, from the same outputs: it must equal the
     * norms of the gathered results (the dW assembly of shards and partial sums included) */
    double fp[CPB_FP_COUNT] = {NAN, NAN, NAN};
    if (rc == CPB_OK) {
        stage = "taking the fingerprint";
        rc = cpb_fingerprint(ctx, &L, fp);
        if (rc != CPB_OK) snprintf(msg, sizeof msg, "%s", cpb_errmsg(ctx));
        rc = cpb_agree_status(rc, msg, sizeof msg);
    }
    if (ctx) cpb_ctx_destroy(ctx); /* frees every buffer of the trial */
    if (rc != CPB_OK) {
        if (rank == 0) {
            if (sc->label) printf("%-28s %-10s ERROR while %s: %s (%s)\n", sc->label, m->name, stage, msg, cpb_status_name(rc));
            else printf("%s: ERROR while %s: %s (%s)\n", m->name, stage, msg, cpb_status_name(rc));
        }
        cpb_verify_results_free(&res);
        return CPB_VERDICT_ERROR;
    }
    int verdict = CPB_VERDICT_PASS;
    if (rank == 0) {
        const double bar = p->dtype == CPB_FP32 ? 1e-4 : 3e-2;
        double err[CPB_VT_COUNT], worst = 0;
        for (int t = 0; t < CPB_VT_COUNT; t++) {
            err[t] = rel_max_err(res.t[t], sc->ref->t[t], res.n[t]);
            if (!(err[t] <= bar)) verdict = CPB_VERDICT_FAIL;
            if (!(err[t] <= worst)) worst = err[t];
        }
        *max_err = worst;
        double fp_err = fingerprint_error(&res, fp);
        if (!(fp_err <= FINGERPRINT_BAR)) verdict = CPB_VERDICT_FAIL;
        char pk[32], im[32], hp[32];
        fmt_bytes(res.peak, pk, sizeof pk);
        fmt_bytes(res.intermediate, im, sizeof im);
        fmt_bytes(res.host_peak, hp, sizeof hp);
        if (sc->label) {
            printf("%-28s %-10s S=%lld D=%lld H=%d G=%d d=%d C=%d %s  max_err %.2e (bar %.0e)  peak %s  %s\n",
                   sc->label, m->name, (long long)p->S, (long long)p->D, p->H, p->G, p->d, p->C,
                   cpb_dtype_name(p->dtype), worst, bar, pk, cpb_verdict_name((cpb_verdict)verdict));
            if (verdict != CPB_VERDICT_PASS) {
                printf("%-28s %-10s  ", "", "");
                for (int t = 0; t < CPB_VT_COUNT; t++) printf(" %s %.2e", cpb_vt_names[t], err[t]);
                printf(" fingerprint %.2e (bar %.0e)\n", fp_err, FINGERPRINT_BAR);
            }
        } else {
            printf("%s:\n  %-6s %12s %10s\n", m->name, "tensor", "rel max err", "bar");
            for (int t = 0; t < CPB_VT_COUNT; t++)
                printf("  %-6s %12.3e %10.0e  %s\n", cpb_vt_names[t], err[t], bar, err[t] <= bar ? "PASS" : "FAIL");
            printf("  fingerprint: y_norm %.6g, dx_norm %.6g, dw_norm %.6g; off the gathered results' norms by "
                   "%.2e (bar %.0e)  %s\n", fp[CPB_FP_Y], fp[CPB_FP_DX], fp[CPB_FP_DW], fp_err, FINGERPRINT_BAR,
                   fp_err <= FINGERPRINT_BAR ? "PASS" : "FAIL");
            printf("  memory, largest over %d ranks: peak %s (rank %d), intermediate %s, host peak %s (rank %d)\n",
                   p->C, pk, res.peak_rank, im, hp, res.host_rank);
            print_tags("device at the peak", res.dev_at_peak);
            print_tags("device per-tag high-water", res.dev_tag_peak);
            if (res.host_peak) print_tags("host at the peak", res.host_at_peak);
            printf("%s: %s\n", m->name, cpb_verdict_name((cpb_verdict)verdict));
        }
        if (a->dump) {
            char path[4096], derr[1024];
            dump_path(a->dump, m->name, sc->n_methods > 1, path, sizeof path);
            cpb_dump_info info = {p, m->name, {sc->in->x, sc->in->wq, sc->in->wk, sc->in->wv, sc->in->wo, sc->in->dy}, &res};
            if (cpb_verify_dump(path, &info, derr, sizeof derr) != CPB_OK) {
                printf("%s: %s\n", m->name, derr);
                verdict = CPB_VERDICT_ERROR;
            } else if (!sc->label) {
                printf("  wrote %s\n", path);
            }
        }
        fflush(stdout);
    }
    cpb_verify_results_free(&res);
    return (cpb_verdict)cpb_agree_bcast_int(verdict);
}

/* rank 0: an error that stops the whole invocation */
static void report_error(const char *label, const char *msg)
{
    if (label) printf("%-28s ERROR: %s\n", label, msg);
    else printf("verify: %s\n", msg);
    fflush(stdout);
}

/* rank 0: the reference results for the case's inputs */
static int reference(const cpb_problem *p, const cpb_host_inputs *in, cpb_verify_results *ref, char *msg, size_t len)
{
    if (cpb_verify_results_alloc(p, ref) != CPB_OK) {
        snprintf(msg, len, "out of host memory for the reference results");
        return CPB_ERR_NOMEM_HOST;
    }
    cpb_ref_in ri = {in->x, in->wq, in->wk, in->wv, in->wo, in->dy};
    cpb_ref_out ro = {ref->t[CPB_VT_Y], ref->t[CPB_VT_DX], ref->t[CPB_VT_DWQ], ref->t[CPB_VT_DWK],
                      ref->t[CPB_VT_DWV], ref->t[CPB_VT_DWO]};
    return cpb_reference_layer(p, &ri, &ro, msg, len);
}

/* method m's problem: o's with m's knobs; CPB_ERR_REFUSED with the reason in why when m's
 * knobs or its check() refuse it */
static int method_problem(const cpb_verify_opts *o, const cpb_method *m, cpb_problem *q, char *why, size_t len)
{
    *q = o->p;
    if (cpb_knobs_apply(m, &o->knobs, q, why, len) != CPB_OK) return CPB_ERR_REFUSED;
    return cpb_tp_check(m, q, why, len) != CPB_OK ? CPB_ERR_REFUSED : CPB_OK;
}

/* Which methods run: check() is a pure function of the problem, so every rank decides the
 * same; rank 0 reports refusals (status refused, not a failure under --method all; a pass
 * under --expect-refuse)
 * and acceptances under --expect-refuse (a failure).  Returns how many run. */
static int select_methods(const cpb_verify_opts *a, const char *label, int *runs, int *failed, int *refused_hard)
{
    const int rank = cpb_ranks_rank(), all = a->all;
    int n_run = 0;
    for (int i = 0; i < a->n_methods; i++) {
        const cpb_method *m = a->methods[i];
        char why[1024] = "";
        cpb_problem q;
        int refused = method_problem(a, m, &q, why, sizeof why) != CPB_OK;
        runs[i] = !refused && !a->expect_refuse;
        n_run += runs[i];
        if (!refused && a->expect_refuse) *failed = 1;
        if (refused && !a->expect_refuse && !all) *refused_hard = 1;
        if (rank != 0) continue;
        const char *name = m->name;
        if (refused) {
            cpb_verdict v = a->expect_refuse ? CPB_VERDICT_REFUSED_OK : CPB_VERDICT_REFUSED;
            if (label) printf("%-28s %-10s %s: %s\n", label, name, cpb_verdict_name(v), why);
            else printf("%s: %s%s: %s\n", name, a->expect_refuse ? "refused as expected" : "refused",
                        all && !a->expect_refuse ? " (not a failure under --method all)" : "", why);
        } else if (a->expect_refuse) {
            if (label) printf("%-28s %-10s FAIL: accepted a shape it was expected to refuse\n", label, name);
            else printf("%s: FAIL: accepted a shape it was expected to refuse (--expect-refuse)\n", name);
        }
    }
    if (rank == 0) fflush(stdout);
    return n_run;
}

int cpb_verify_invocation(const cpb_verify_opts *a, const char *label)
{
    const int rank = cpb_ranks_rank();
    const cpb_problem p = a->p;
    char msg[1024] = "";
    int rc = CPB_OK;
    if (rank == 0 && !label) {
        printf("verify: model %s (S %lld, D %lld, H %d, G %d, d %d, rope base %g), %d ranks, %s, seed %llu, "
               "backend %s\n", p.model, (long long)p.S, (long long)p.D, p.H, p.G, p.d, p.rope_base, p.C,
               cpb_dtype_name(p.dtype), (unsigned long long)a->seed, a->be->name);
        fflush(stdout);
    }
    int runs[CPB_VERIFY_MAX_METHODS], failed = 0, refused_hard = 0;
    int n_run = select_methods(a, label, runs, &failed, &refused_hard);
    if (a->all && !a->expect_refuse && n_run == 0) {
        if (rank == 0) report_error(label, "no method accepts this shape");
        return 2;
    }
    if (n_run == 0) return failed ? 1 : (refused_hard ? 2 : 0);
    if (a->dump) { /* every dump file may be written, before any work (rank 0 writes them) */
        for (int i = 0; i < a->n_methods && rc == CPB_OK; i++) {
            char path[4096];
            dump_path(a->dump, a->methods[i]->name, n_run > 1, path, sizeof path);
            if (runs[i] && rank == 0) rc = cpb_verify_dump_check(path, a->force, msg, sizeof msg);
        }
        rc = cpb_agree_status(rc, msg, sizeof msg);
        if (rc != CPB_OK) {
            if (rank == 0) report_error(label, msg);
            return 2;
        }
    }

    cpb_host_inputs in;
    memset(&in, 0, sizeof in);
    cpb_verify_results ref;
    memset(&ref, 0, sizeof ref);
    rc = cpb_host_inputs_make(&p, a->seed, &in);
    if (rc != CPB_OK) snprintf(msg, sizeof msg, "out of host memory for the %lld x %lld inputs", (long long)p.S, (long long)p.D);
    if (rc == CPB_OK && rank == 0) rc = reference(&p, &in, &ref, msg, sizeof msg);
    rc = cpb_agree_status(rc, msg, sizeof msg);
    if (rc != CPB_OK) {
        if (rank == 0) report_error(label, msg);
        cpb_host_inputs_free(&in);
        cpb_verify_results_free(&ref);
        return rc == CPB_ERR_INVALID ? 2 : 1;
    }
    for (int i = 0; i < a->n_methods; i++) {
        if (!runs[i]) continue;
        cpb_problem q;
        char why[1024];
        method_problem(a, a->methods[i], &q, why, sizeof why); /* accepted by select_methods */
        shared_case sc = {a, &q, &in, &ref, label, n_run};
        double err;
        cpb_verdict v = run_method(&sc, a->methods[i], &err);
        if (v != CPB_VERDICT_PASS) failed = 1;
    }
    cpb_host_inputs_free(&in);
    cpb_verify_results_free(&ref);
    if (failed) return 1;
    return refused_hard ? 2 : 0;
}
