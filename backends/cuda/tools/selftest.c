/* selftest.c — `cpbench selftest --backend cuda [--comm mpi]`: every op of the cuda
 * backend against the cpu backend on small shapes, plus collectives (against values
 * computed here), streams and events, and the memory accounting (cuda_tools.h).
 *
 * Each check allocates the same buffers on a cuda context and a single-process cpu
 * context, fills them with the same seeded values (whole buffers, so parts an op must not
 * touch are compared too), runs the op on both, downloads both and compares: the error is
 * max |cuda - cpu| / max |cpu| over the buffer, against an fp32 or a bf16 tolerance.
 * One line per check, a summary, exit 0 only when every check passed; 2 when no GPU or no
 * backend with data is there (nothing was tested).  What only some backends have (the
 * choice of attention kernels, a caching pool's high-waters, a device's default capacity)
 * is checked where the backend's hooks say it exists.  CPB_SELFTEST_ONLY=attn_cudnn,... runs
 * only the named groups of checks (the `groups` table below). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_rand.h"
#include "cuda_tools.h"
#include "ranks.h"
#include "registry.h"

#define TOL_FP32 1e-4
#define TOL_BF16 2e-2

typedef struct st_t {
    cpb_ctx *g, *c; /* cuda (all ranks), cpu (this process only) */
    int rank, world;
    int pass, fail;
    const char *attn_path; /* which attention kernels run: "auto" or "generic" */
} st_t;

/* the same buffer on both backends */
typedef struct pbuf {
    cpb_buf *g, *c;
} pbuf;

static double tol_of(cpb_dtype t)
{
    return t == CPB_FP32 ? TOL_FP32 : TOL_BF16;
}

static void report(st_t *t, int ok, const char *label, const char *detail)
{
    if (ok) t->pass++;
    else t->fail++;
    if (t->rank == 0 || !ok) {
        if (t->world > 1) printf("[%d] ", t->rank);
        printf("%-5s %-58s %s\n", ok ? "ok" : "FAIL", label, detail);
    }
    fflush(stdout);
}

static void op_error(st_t *t, const char *label, int side, cpb_ctx *ctx)
{
    char d[2300];
    snprintf(d, sizeof d, "%s backend error: %s", side ? "cpu" : ctx->be->name, cpb_errmsg(ctx));
    report(t, 0, label, d);
    cpb_clear_error(ctx);
}

/* run EXPR on the cuda side (side 0) and the cpu side (side 1); CTX and B(p) name that
 * side's context and buffer.  Sets ok_ = 0 on an error. */
#define CTX (side ? t->c : t->g)
#define B(p) (side ? (p).c : (p).g)
#define ON_BOTH(label, EXPR)                                                               \
    for (int side = 0; side < 2; side++) {                                                 \
        int rc_ = (EXPR);                                                                  \
        if (rc_ != CPB_OK) {                                                               \
            op_error(t, label, side, CTX);                                                 \
            ok_ = 0;                                                                       \
        }                                                                                  \
    }

static int palloc(st_t *t, pbuf *b, int64_t n, cpb_dtype dt, int host, const char *name)
{
    b->g = b->c = NULL;
    int rc = host ? cpb_alloc_host(t->g, &b->g, n, dt, CPB_TAG_TEMP, name)
                  : cpb_alloc(t->g, &b->g, n, dt, CPB_TAG_TEMP, name);
    if (rc != CPB_OK) {
        op_error(t, name, 0, t->g);
        return rc;
    }
    rc = host ? cpb_alloc_host(t->c, &b->c, n, dt, CPB_TAG_TEMP, name) : cpb_alloc(t->c, &b->c, n, dt, CPB_TAG_TEMP, name);
    if (rc != CPB_OK) {
        op_error(t, name, 1, t->c);
        cpb_free(t->g, CPB_STREAM_COMPUTE, &b->g);
    }
    return rc;
}

static void pfree(st_t *t, pbuf *b)
{
    if (cpb_free(t->g, CPB_STREAM_COMPUTE, &b->g) != CPB_OK) op_error(t, "free", 0, t->g);
    if (cpb_free(t->c, CPB_STREAM_COMPUTE, &b->c) != CPB_OK) op_error(t, "free", 1, t->c);
}

/* upload the same host values to both sides (whole buffer) */
static int pset(st_t *t, pbuf *b, const float *h)
{
    if (cpb_upload(t->g, cpb_whole(b->g), h) != CPB_OK) {
        op_error(t, "upload", 0, t->g);
        return CPB_ERR_BACKEND;
    }
    if (cpb_upload(t->c, cpb_whole(b->c), h) != CPB_OK) {
        op_error(t, "upload", 1, t->c);
        return CPB_ERR_BACKEND;
    }
    return CPB_OK;
}

static int pfill(st_t *t, pbuf *b, uint64_t seed, float scale)
{
    int64_t n = b->g->nelem;
    float *h = malloc(sizeof(float) * (size_t)n);
    if (!h) return CPB_ERR_NOMEM_HOST;
    for (int64_t i = 0; i < n; i++) h[i] = scale * cpb_rand_u(seed, i);
    int rc = pset(t, b, h);
    free(h);
    return rc;
}

/* max |a - r| / max |r|; infinities must match exactly; NaN anywhere fails */
static double rel_err(const float *a, const float *r, int64_t n, int64_t *worst)
{
    double emax = 0.0, rmax = 0.0;
    *worst = -1;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(r[i])) {
            if (!(isnan(a[i]) && isnan(r[i]))) {
                *worst = i;
                return INFINITY;
            }
            continue;
        }
        if (isinf(r[i]) || isinf(a[i])) {
            if (a[i] != r[i]) {
                *worst = i;
                return INFINITY;
            }
            continue;
        }
        double e = fabs((double)a[i] - (double)r[i]);
        if (e > emax) {
            emax = e;
            *worst = i;
        }
        if (fabs((double)r[i]) > rmax) rmax = fabs((double)r[i]);
    }
    return emax == 0.0 ? 0.0 : emax / (rmax > 1e-30 ? rmax : 1e-30);
}

/* download both sides of b and compare; returns 1 when within tol */
static int pcompare(st_t *t, const char *label, const char *what, pbuf *b, double tol)
{
    int64_t n = b->g->nelem;
    float *hg = malloc(sizeof(float) * (size_t)n), *hc = malloc(sizeof(float) * (size_t)n);
    char d[512];
    if (!hg || !hc) {
        free(hg);
        free(hc);
        report(t, 0, label, "out of host memory");
        return 0;
    }
    int ok = 1;
    if (cpb_download(t->g, cpb_whole(b->g), hg) != CPB_OK) {
        op_error(t, label, 0, t->g);
        ok = 0;
    } else if (cpb_download(t->c, cpb_whole(b->c), hc) != CPB_OK) {
        op_error(t, label, 1, t->c);
        ok = 0;
    }
    if (ok) {
        int64_t w;
        double e = rel_err(hg, hc, n, &w);
        ok = e <= tol;
        char full[256];
        snprintf(full, sizeof full, "%s [%s]", label, what);
        if (ok)
            snprintf(d, sizeof d, "rel err %.2e (tol %.0e)", e, tol);
        else
            snprintf(d, sizeof d, "rel err %.2e > tol %.0e; worst element %lld: %s %.7g, cpu %.7g", e, tol,
                     (long long)w, t->g->be->name, w >= 0 ? hg[w] : 0.0, w >= 0 ? hc[w] : 0.0);
        report(t, ok, full, d);
    }
    free(hg);
    free(hc);
    return ok;
}

static void sync_both(st_t *t)
{
    if (cpb_sync(t->g) != CPB_OK) op_error(t, "sync", 0, t->g);
    if (cpb_sync(t->c) != CPB_OK) op_error(t, "sync", 1, t->c);
}

static cpb_view on(cpb_buf *b, cpb_view geo)
{
    geo.buf = b;
    return geo;
}

/* ---------------------------------------------------------------- element-wise */

static void check_fill_copy(st_t *t)
{
    for (int dti = 0; dti < 2; dti++) {
        cpb_dtype dt = dti ? CPB_FP32 : CPB_BF16;
        const char *dn = cpb_dtype_name(dt);
        char label[160];
        int ok_ = 1;
        pbuf a, b, h, hf;
        /* [7][5][24] buffers; views: heads 1..3 (strided head slice) */
        int64_t rows = 7, heads = 5, dim = 24, n = rows * heads * dim;
        cpb_view slice = cpb_heads(NULL, dim, rows, 3, dim, heads * dim, dim);
        if (palloc(t, &a, n, dt, 0, "a") || palloc(t, &b, n, CPB_FP32, 0, "b") || palloc(t, &h, n, dt, 1, "h") ||
            palloc(t, &hf, n, CPB_FP32, 1, "hf"))
            return;
        pfill(t, &a, 11, 1.0f);
        pfill(t, &b, 12, 1.0f);
        pfill(t, &h, 13, 1.0f);
        pfill(t, &hf, 14, 1.0f);

        snprintf(label, sizeof label, "fill %s head slice", dn);
        ON_BOTH(label, cpb_fill(CTX, 0, on(B(a), slice), 0.375f));
        pcompare(t, label, "a", &a, 0.0);

        snprintf(label, sizeof label, "fill_random %s head slice, base 1000", dn);
        ON_BOTH(label, cpb_fill_random(CTX, 0, on(B(a), slice), 77, 1000, 0.5f));
        pcompare(t, label, "a", &a, 0.0);

        snprintf(label, sizeof label, "copy fp32 -> %s head slice (kernel)", dn);
        ON_BOTH(label, cpb_copy(CTX, 0, on(B(a), slice), on(B(b), slice)));
        pcompare(t, label, "a", &a, 0.0);

        snprintf(label, sizeof label, "copy %s -> fp32 rows 2..5 (kernel or DMA)", dn);
        ON_BOTH(label, cpb_copy(CTX, 0, cpb_view_rows(cpb_heads(B(b), 0, rows, heads, dim, heads * dim, dim), 2, 3),
                                cpb_view_rows(cpb_heads(B(a), 0, rows, heads, dim, heads * dim, dim), 3, 3)));
        pcompare(t, label, "b", &b, 0.0);

        snprintf(label, sizeof label, "copy device -> pinned host %s rows (DMA)", dn);
        ON_BOTH(label, cpb_copy(CTX, 0, cpb_mat(B(h), 5, 4, 50, 60), cpb_mat(B(a), 0, 4, 50, 55)));
        pcompare(t, label, "h", &h, 0.0);

        snprintf(label, sizeof label, "copy pinned host -> device %s whole (DMA)", dn);
        ON_BOTH(label, cpb_copy(CTX, 0, cpb_whole(B(a)), cpb_whole(B(h))));
        pcompare(t, label, "a", &a, 0.0);

        snprintf(label, sizeof label, "copy pinned host fp32 -> device %s slice (kernel, UVA)", dn);
        ON_BOTH(label, cpb_copy(CTX, 0, on(B(a), slice), on(B(hf), slice)));
        pcompare(t, label, "a", &a, 0.0);

        snprintf(label, sizeof label, "copy device %s slice -> pinned host fp32 (kernel, UVA)", dn);
        ON_BOTH(label, cpb_copy(CTX, 0, on(B(hf), cpb_heads(NULL, 0, rows, 3, dim, heads * dim, dim)), on(B(a), slice)));
        pcompare(t, label, "hf", &hf, 0.0);

        snprintf(label, sizeof label, "axpby 0.5*x(%s slice) - 1.25*y(fp32)", dn);
        ON_BOTH(label, cpb_axpby(CTX, 0, 0.5f, on(B(a), slice), -1.25f, on(B(b), slice)));
        pcompare(t, label, "y", &b, TOL_FP32);

        snprintf(label, sizeof label, "axpby beta 0 into %s", dn);
        ON_BOTH(label, cpb_axpby(CTX, 0, -2.0f, on(B(b), slice), 0.0f, on(B(a), slice)));
        pcompare(t, label, "y", &a, tol_of(dt));
        sync_both(t);
        (void)ok_;
        pfree(t, &a);
        pfree(t, &b);
        pfree(t, &h);
        pfree(t, &hf);
    }
}

/* host <-> device round trip of the upload/download path itself */
static void check_updown(st_t *t)
{
    for (int dti = 0; dti < 2; dti++) {
        cpb_dtype dt = dti ? CPB_FP32 : CPB_BF16;
        int64_t n = 1000;
        cpb_buf *b = NULL;
        char label[96];
        snprintf(label, sizeof label, "upload/download %s strided view", cpb_dtype_name(dt));
        if (cpb_alloc(t->g, &b, 3 * n, dt, CPB_TAG_TEMP, "ud") != CPB_OK) {
            op_error(t, label, 0, t->g);
            continue;
        }
        float *h = malloc(sizeof(float) * n * 2);
        for (int64_t i = 0; i < n; i++) h[i] = (float)(i % 97) * 0.25f - 7.0f; /* exact in bf16 */
        cpb_view v = cpb_mat(b, 7, n / 10, 10, 29);
        int ok = cpb_upload(t->g, v, h) == CPB_OK && cpb_download(t->g, v, h + n) == CPB_OK;
        if (!ok) {
            op_error(t, label, 0, t->g);
        } else {
            int64_t w;
            double e = rel_err(h + n, h, n, &w);
            char d[96];
            snprintf(d, sizeof d, "rel err %.2e (exact expected)", e);
            report(t, e == 0.0, label, d);
        }
        free(h);
        cpb_free(t->g, 0, &b);
    }
}

/* ---------------------------------------------------------------- GEMM */

static void gemm_case(st_t *t, cpb_dtype in, cpb_dtype out, int ta, int tb, int64_t m, int64_t n, int64_t k,
                      int64_t batch, int bcast_b, float alpha, float beta)
{
    char label[200];
    snprintf(label, sizeof label, "gemm %s->%s t%d%d m%lld n%lld k%lld batch%lld%s a%.1f b%.1f", cpb_dtype_name(in),
             cpb_dtype_name(out), ta, tb, (long long)m, (long long)n, (long long)k, (long long)batch,
             bcast_b ? " bcastB" : "", alpha, beta);
    /* stored shapes (row-major), with padding in the leading dimension and head layout
     * [rows][batch][cols] so batched views have both strides */
    int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    int64_t bb = bcast_b ? 1 : batch;
    int64_t lda = batch * ac + 3, ldb = bb * bc + 5, ldc = batch * n + 2;
    pbuf A, Bm, C;
    if (palloc(t, &A, ar * lda, in, 0, "A") || palloc(t, &Bm, br * ldb, in, 0, "B") || palloc(t, &C, m * ldc, out, 0, "C"))
        return;
    pfill(t, &A, 21, 1.0f);
    pfill(t, &Bm, 22, 1.0f);
    pfill(t, &C, 23, 1.0f);
    cpb_view ga = cpb_heads(NULL, 1, ar, batch, ac, lda, ac);
    cpb_view gb = cpb_heads(NULL, 2, br, bb, bc, ldb, bcast_b ? 0 : bc);
    cpb_view gc = cpb_heads(NULL, 0, m, batch, n, ldc, n);
    int ok_ = 1;
    ON_BOTH(label, cpb_gemm(CTX, 0, ta, tb, alpha, on(B(A), ga), on(B(Bm), gb), beta, on(B(C), gc)));
    (void)ok_;
    /* fp32 accumulation over k terms of products rounded like the inputs */
    pcompare(t, label, "C", &C, out == CPB_FP32 && in == CPB_FP32 ? TOL_FP32 : (out == CPB_FP32 ? 1e-3 : TOL_BF16));
    pfree(t, &A);
    pfree(t, &Bm);
    pfree(t, &C);
}

static void check_gemm(st_t *t)
{
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            gemm_case(t, CPB_FP32, CPB_FP32, ta, tb, 37, 53, 29, 1, 0, 1.5f, 0.0f);
            gemm_case(t, CPB_BF16, CPB_BF16, ta, tb, 37, 53, 29, 1, 0, 1.0f, 0.0f);
            gemm_case(t, CPB_BF16, CPB_FP32, ta, tb, 64, 48, 128, 3, 0, 1.0f, 1.0f);
        }
    gemm_case(t, CPB_BF16, CPB_BF16, 0, 1, 33, 17, 64, 4, 0, 1.0f, 0.0f);
    gemm_case(t, CPB_BF16, CPB_BF16, 0, 0, 33, 17, 64, 4, 1, 1.0f, 0.0f);
    gemm_case(t, CPB_FP32, CPB_FP32, 1, 0, 96, 80, 300, 2, 1, -0.5f, 0.25f);
    gemm_case(t, CPB_BF16, CPB_FP32, 1, 0, 256, 192, 1000, 1, 0, 1.0f, 1.0f);
}

/* ---------------------------------------------------------------- RoPE */

static void rope_case(st_t *t, cpb_dtype dt, int64_t d, double base, int slice)
{
    char label[200];
    int64_t rows = 12, heads = 3, hbuf = slice ? heads + 2 : heads;
    cpb_segs pos;
    cpb_segs_clear(&pos);
    cpb_segs_add(&pos, (1LL << 23) - 5, 5); /* near 2^23: fp32 angles would be far off */
    cpb_segs_add(&pos, 3, 4);
    cpb_segs_add(&pos, 5000000, 3);
    pbuf x;
    if (palloc(t, &x, rows * hbuf * d, dt, 0, "x")) return;
    pfill(t, &x, 31, 1.0f);
    cpb_view v = cpb_heads(NULL, slice ? d : 0, rows, heads, d, hbuf * d, d);
    for (int inv = 0; inv < 2; inv++) {
        snprintf(label, sizeof label, "rope%s %s d%lld base %.0f%s, positions to 2^23", inv ? "_bwd" : "", cpb_dtype_name(dt),
                 (long long)d, base, slice ? " head slice" : "");
        int ok_ = 1;
        ON_BOTH(label, cpb_rope(CTX, 0, on(B(x), v), &pos, base, inv));
        (void)ok_;
        pcompare(t, label, "x", &x, tol_of(dt));
    }
    /* many segments: the device-table path */
    cpb_segs many;
    cpb_segs_clear(&many);
    for (int i = 0; i < 12; i++) cpb_segs_add(&many, 1000 * i + 7 * (i % 3) + 100000, 1);
    snprintf(label, sizeof label, "rope %s d%lld, 12 one-row segments", cpb_dtype_name(dt), (long long)d);
    int ok_ = 1;
    ON_BOTH(label, cpb_rope(CTX, 0, on(B(x), v), &many, base, 0));
    (void)ok_;
    pcompare(t, label, "x", &x, tol_of(dt));
    pfree(t, &x);
}

static void check_rope(st_t *t)
{
    rope_case(t, CPB_FP32, 128, 500000.0, 0);
    rope_case(t, CPB_BF16, 128, 1000000.0, 1);
    rope_case(t, CPB_FP32, 16, 10000.0, 1);
    /* more than 64 segments: the table travels through device memory */
    pbuf x;
    int64_t rows = 100, d = 64;
    if (palloc(t, &x, rows * d, CPB_FP32, 0, "x")) return;
    pfill(t, &x, 33, 1.0f);
    cpb_segs pos;
    cpb_segs_clear(&pos);
    for (int i = 0; i < 100; i++) cpb_segs_add(&pos, 3 * (int64_t)i * i + 1, 1);
    int ok_ = 1;
    ON_BOTH("rope fp32 d64, 100 segments (device table)",
            cpb_rope(CTX, 0, cpb_heads(B(x), 0, rows, 1, d, d, d), &pos, 500000.0, 0));
    (void)ok_;
    pcompare(t, "rope fp32 d64, 100 segments (device table)", "x", &x, TOL_FP32);
    pfree(t, &x);
}

/* ---------------------------------------------------------------- lse merge, delta */

static void check_merge_delta(st_t *t)
{
    for (int dti = 0; dti < 2; dti++) {
        cpb_dtype dt = dti ? CPB_FP32 : CPB_BF16;
        int64_t s = 37, h = 4, d = 64;
        pbuf oa, op, la, lp, dlt;
        if (palloc(t, &oa, s * h * d, dt, 0, "o_acc") || palloc(t, &op, s * h * d, dt, 0, "o_part") ||
            palloc(t, &la, h * (s + 3), CPB_FP32, 0, "lse_acc") || palloc(t, &lp, h * s, CPB_FP32, 0, "lse_part") ||
            palloc(t, &dlt, h * s, CPB_FP32, 0, "delta"))
            return;
        pfill(t, &oa, 41, 1.0f);
        pfill(t, &op, 42, 1.0f);
        /* lse values: large (exp would overflow fp32), ordinary, and -inf on either side */
        float *l = malloc(sizeof(float) * (size_t)(h * (s + 3)));
        for (int64_t i = 0; i < h * (s + 3); i++) {
            float u = cpb_rand_u(43, i);
            l[i] = i % 7 == 0 ? -INFINITY : (i % 5 == 0 ? 95.0f + u : 3.0f * u);
        }
        pset(t, &la, l);
        for (int64_t i = 0; i < h * s; i++) {
            float u = cpb_rand_u(44, i);
            l[i] = i % 6 == 1 ? -INFINITY : (i % 4 == 0 ? 96.0f + u : 3.0f * u);
        }
        pset(t, &lp, l);
        free(l);
        char label[160];
        snprintf(label, sizeof label, "lse_merge %s s%lld h%lld d%lld (-inf and lse > 88)", cpb_dtype_name(dt),
                 (long long)s, (long long)h, (long long)d);
        int ok_ = 1;
        ON_BOTH(label, cpb_lse_merge(CTX, 0, cpb_heads(B(oa), 0, s, h, d, h * d, d), cpb_lse_view(B(la), s + 3, 0, h, 2, s),
                                     cpb_heads(B(op), 0, s, h, d, h * d, d), cpb_lse_view(B(lp), s, 0, h, 0, s)));
        pcompare(t, label, "o_acc", &oa, tol_of(dt));
        pcompare(t, label, "lse_acc", &la, TOL_FP32);
        snprintf(label, sizeof label, "attn_delta %s s%lld h%lld d%lld", cpb_dtype_name(dt), (long long)s, (long long)h,
                 (long long)d);
        ON_BOTH(label, cpb_attn_delta(CTX, 0, cpb_heads(B(oa), 0, s, h, d, h * d, d), cpb_heads(B(op), 0, s, h, d, h * d, d),
                                      cpb_lse_view(B(dlt), s, 0, h, 0, s)));
        (void)ok_;
        pcompare(t, label, "delta", &dlt, dt == CPB_FP32 ? TOL_FP32 : 1e-3);
        pfree(t, &oa);
        pfree(t, &op);
        pfree(t, &la);
        pfree(t, &lp);
        pfree(t, &dlt);
    }
}

/* ---------------------------------------------------------------- attention */

typedef struct attn_case {
    int64_t sq, sk;
    int hq, hk, d, causal;
    int64_t qp, kp;
    cpb_dtype dt;
    int strided;  /* q/k/v/o as head slices of wider buffers, lse with a larger ld */
    int delta;    /* backward: 1 = delta given (cpb_attn_delta), 0 = computed from o */
    int accumulate;
} attn_case;

static void attn_check(st_t *t, const attn_case *c)
{
    char label[220];
    snprintf(label, sizeof label, "attn[%s] d%d sq%lld sk%lld h%d/%d %s pos %lld/%lld %s%s%s%s", t->attn_path, c->d,
             (long long)c->sq,
             (long long)c->sk, c->hq, c->hk, c->causal ? "causal" : "full", (long long)c->qp, (long long)c->kp,
             cpb_dtype_name(c->dt), c->strided ? " strided" : "", c->delta ? " delta" : "", c->accumulate ? " acc" : "");
    int64_t pad = c->strided ? 1 : 0, d = c->d;
    int64_t hqb = c->hq + pad, hkb = c->hk + pad, ld = c->sq + (c->strided ? 5 : 0), t0 = c->strided ? 2 : 0;
    pbuf q, k, v, o, lse, dO, dq, dk, dv, dlt;
    if (palloc(t, &q, c->sq * hqb * d, c->dt, 0, "q") || palloc(t, &k, c->sk * hkb * d, c->dt, 0, "k") ||
        palloc(t, &v, c->sk * hkb * d, c->dt, 0, "v") || palloc(t, &o, c->sq * hqb * d, c->dt, 0, "o") ||
        palloc(t, &lse, c->hq * ld, CPB_FP32, 0, "lse") || palloc(t, &dO, c->sq * hqb * d, c->dt, 0, "dO") ||
        palloc(t, &dq, c->sq * hqb * d, c->dt, 0, "dq") || palloc(t, &dk, c->sk * hkb * d, c->dt, 0, "dk") ||
        palloc(t, &dv, c->sk * hkb * d, c->dt, 0, "dv") || palloc(t, &dlt, c->hq * ld, CPB_FP32, 0, "delta"))
        return;
    pfill(t, &q, 51, 2.0f);
    pfill(t, &k, 52, 2.0f);
    pfill(t, &v, 53, 1.0f);
    pfill(t, &o, 54, 1.0f);
    pfill(t, &lse, 55, 1.0f);
    pfill(t, &dO, 56, 1.0f);
    pfill(t, &dq, 57, 1.0f);
    pfill(t, &dk, 58, 1.0f);
    pfill(t, &dv, 59, 1.0f);
    pfill(t, &dlt, 60, 1.0f);
    cpb_view gq = cpb_heads(NULL, pad * d, c->sq, c->hq, d, hqb * d, d);
    cpb_view gk = cpb_heads(NULL, pad * d, c->sk, c->hk, d, hkb * d, d);
    cpb_view gl = cpb_lse_view(NULL, ld, 0, c->hq, t0, c->sq);
    cpb_attn_args a[2];
    for (int side = 0; side < 2; side++) {
        memset(&a[side], 0, sizeof a[side]);
        a[side].q = on(B(q), gq);
        a[side].k = on(B(k), gk);
        a[side].v = on(B(v), gk);
        a[side].o = on(B(o), gq);
        a[side].lse = on(B(lse), gl);
        a[side].causal = c->causal;
        a[side].q_pos0 = c->qp;
        a[side].k_pos0 = c->kp;
        a[side].d_o = on(B(dO), gq);
        a[side].dq = on(B(dq), gq);
        a[side].dk = on(B(dk), gk);
        a[side].dv = on(B(dv), gk);
        a[side].accumulate = c->accumulate;
    }
    int ok_ = 1;
    ON_BOTH(label, cpb_attn_fwd(CTX, 0, &a[side]));
    if (!c->delta) { /* compare the forward once per shape */
        pcompare(t, label, "fwd o", &o, tol_of(c->dt));
        pcompare(t, label, "fwd lse", &lse, TOL_FP32);
    }
    if (c->delta) {
        ON_BOTH(label, cpb_attn_delta(CTX, 0, a[side].o, a[side].d_o, on(B(dlt), gl)));
        for (int side = 0; side < 2; side++) a[side].delta = on(B(dlt), gl);
    }
    const int64_t on_cudnn0 = t->g->attn_usage.calls[1][CPB_ATTN_CUDNN];
    ON_BOTH(label, cpb_attn_bwd(CTX, 0, &a[side]));
    (void)ok_;
    if (t->g->attn_choice == CPB_ATTN_CHOOSE_CUDNN)
        report(t, t->g->attn_usage.calls[1][CPB_ATTN_CUDNN] > on_cudnn0, label,
               t->g->attn_usage.calls[1][CPB_ATTN_CUDNN] > on_cudnn0 ? "ran on cuDNN" : t->g->attn_usage.own_why[1]);
    /* gradients sum many products: bf16 storage of dO/o makes them the loosest */
    double tg = c->dt == CPB_FP32 ? 2e-4 : 3e-2;
    pcompare(t, label, "bwd dq", &dq, tg);
    pcompare(t, label, "bwd dk", &dk, tg);
    pcompare(t, label, "bwd dv", &dv, tg);
    pbuf *all[] = {&q, &k, &v, &o, &lse, &dO, &dq, &dk, &dv, &dlt};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pfree(t, all[i]);
}

static void check_attn(st_t *t)
{
    const attn_case cases[] = {
        /* odd sizes, GQA, offsets (last query sees every key) */
        {37, 53, 4, 2, 64, 1, 16, 0, CPB_BF16, 1, 0, 0},
        {37, 53, 4, 2, 64, 1, 16, 0, CPB_FP32, 0, 1, 1},
        {37, 53, 4, 2, 64, 1, 16, 0, CPB_FP32, 1, 0, 0},
        /* d 128, MQA-like 4/1, aligned */
        {64, 64, 4, 1, 128, 1, 0, 0, CPB_BF16, 0, 0, 0},
        {64, 64, 4, 1, 128, 1, 0, 0, CPB_FP32, 0, 1, 0},
        /* rows that see no key (lse -inf, o 0): keys start after the first queries */
        {37, 53, 4, 2, 128, 1, 0, 10, CPB_BF16, 1, 0, 1},
        {37, 53, 4, 2, 128, 1, 0, 10, CPB_FP32, 0, 0, 0},
        /* several tiles in both directions, ring-style offsets */
        {130, 200, 2, 2, 128, 1, 70, 0, CPB_BF16, 0, 0, 0},
        {100, 33, 8, 2, 32, 1, 1000, 980, CPB_FP32, 1, 1, 0},
        /* a later ring step: every key before every query (no mask needed) */
        {48, 64, 4, 2, 64, 1, 4096, 1024, CPB_BF16, 0, 0, 0},
        /* non-causal, small head dims (the generic kernels) */
        {5, 70, 2, 2, 16, 0, 0, 0, CPB_FP32, 0, 0, 0},
        {33, 17, 6, 3, 32, 0, 0, 0, CPB_BF16, 1, 1, 1},
        {40, 40, 2, 1, 80, 1, 0, 0, CPB_FP32, 0, 0, 0},
        {129, 131, 8, 8, 64, 1, 2, 0, CPB_BF16, 0, 0, 0},
    };
    /* every case on the fastest applicable kernels, then on the generic ones (a backend
     * without a choice of kernels runs them once) */
    const cpb_backend *be = t->g->be;
    static const char *const kernels[] = {"auto", "generic"};
    for (int k = 0; k < (be->set_attn_kernels ? 2 : 1); k++) {
        if (be->set_attn_kernels && be->set_attn_kernels(t->g, kernels[k]) != CPB_OK) {
            op_error(t, "select attention kernels", 0, t->g);
            return;
        }
        t->attn_path = kernels[k];
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) attn_check(t, &cases[i]);
    }
    if (be->set_attn_kernels) be->set_attn_kernels(t->g, "auto");
}

/* cuDNN's fused attention against the cpu backend, for every call class the methods make
 * (cpb_attn_route.h): causal top-left (ring's diagonal, fpdt's i == j, the full
 * ulysses/upipe calls), causal bottom-right (a chunk against its whole prefix) and unmasked (later ring steps, fpdt's i > j), q shorter and longer
 * than kv, GQA ratios 1, 4 and 8, d 64 and 128, bf16, lse out, the backward from o, dO and
 * an external lse, accumulated (ring, fpdt: temporaries plus axpby), strided head views
 * with an lse of a larger leading dimension starting at an odd token (an lse temporary).
 * Each case must run on cuDNN (the route said so); the cpu side makes the same decision,
 * so its workspace and temporaries are the same. */
static void check_attn_cudnn(st_t *t)
{
    const attn_case cases[] = {
        /* causal, q = kv, GQA 4, d 128 */
        {256, 256, 8, 2, 128, 1, 0, 0, CPB_BF16, 0, 0, 0},
        /* causal, GQA 1, d 64, odd length */
        {197, 197, 4, 4, 64, 1, 0, 0, CPB_BF16, 0, 0, 0},
        /* unmasked, q shorter than kv, GQA 8, d 128 */
        {96, 320, 8, 1, 128, 0, 0, 0, CPB_BF16, 0, 0, 0},
        /* unmasked, q longer than kv, GQA 4, d 64 */
        {320, 96, 8, 2, 64, 0, 0, 0, CPB_BF16, 0, 0, 0},
        /* causal with every key before every query: served unmasked (a later ring step) */
        {128, 128, 8, 2, 128, 1, 4096, 1024, CPB_BF16, 0, 0, 0},
        /* accumulated backward (ring, fpdt), GQA 8 */
        {128, 128, 8, 1, 128, 1, 0, 0, CPB_BF16, 0, 0, 1},
        /* strided head slices, lse with ld + 5 from token 2: an lse temporary; accumulated */
        {130, 130, 4, 2, 64, 1, 0, 0, CPB_BF16, 1, 0, 1},
        {64, 200, 8, 2, 128, 0, 0, 0, CPB_BF16, 1, 0, 0},
        /* causal bottom-right (q_pos0 - k_pos0 = sk - sq: one chunk against its whole
         * prefix, TransformerEngine's all-gather schedule): GQA 4, d 128; MHA, d 64,
         * accumulated; GQA 8 on strided views */
        {128, 384, 8, 2, 128, 1, 256, 0, CPB_BF16, 0, 0, 0},
        {192, 256, 4, 4, 64, 1, 1088, 1024, CPB_BF16, 0, 0, 1},
        {64, 448, 8, 1, 128, 1, 384, 0, CPB_BF16, 1, 0, 0},
    };
    char why[512] = "";
    const cpb_backend *be = t->g->be;
    int st = be->attn_cudnn ? be->attn_cudnn(why, sizeof why) : 0;
    if (st != 2) {
        if (t->rank == 0)
            printf("  cuDNN attention cases not run: %s\n", why[0] ? why : "the backend has no cuDNN attention");
        return;
    }
    t->attn_path = "cudnn";
    cpb_ctx_set_attn(t->g, CPB_ATTN_CHOOSE_CUDNN);
    cpb_ctx_set_attn(t->c, CPB_ATTN_CHOOSE_CUDNN);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) attn_check(t, &cases[i]);
    cpb_ctx_set_attn(t->g, CPB_ATTN_CHOOSE_OWN);
    cpb_ctx_set_attn(t->c, CPB_ATTN_CHOOSE_OWN);
}

/* ---------------------------------------------------------------- streams and events */

static void check_streams(st_t *t)
{
    int sg = 0, sc = 0;
    if (cpb_stream(t->g, "selftest_side", &sg) != CPB_OK || cpb_stream(t->c, "selftest_side", &sc) != CPB_OK) {
        report(t, 0, "streams", "cpb_stream failed");
        return;
    }
    pbuf x, y;
    int64_t n = 1 << 20;
    if (palloc(t, &x, n, CPB_FP32, 0, "x") || palloc(t, &y, n, CPB_FP32, 0, "y")) return;
    int ok_ = 1;
    const char *label = "fill on compute, axpby on a side stream after an event, back";
    for (int side = 0; side < 2; side++) {
        cpb_ctx *ctx = CTX;
        int s = side ? sc : sg;
        cpb_event ev;
        int rc = cpb_fill(ctx, 0, cpb_whole(B(x)), 2.0f);
        if (!rc) rc = cpb_fill(ctx, 0, cpb_whole(B(y)), 1.0f);
        if (!rc) rc = cpb_event_record(ctx, 0, &ev);
        if (!rc) rc = cpb_stream_wait(ctx, s, ev);
        for (int i = 0; i < 5 && !rc; i++) rc = cpb_axpby(ctx, s, 1.0f, cpb_whole(B(x)), 1.0f, cpb_whole(B(y)));
        if (!rc) rc = cpb_stream_join(ctx, 0, s);
        if (!rc) rc = cpb_axpby(ctx, 0, 1.0f, cpb_whole(B(y)), 1.0f, cpb_whole(B(x)));
        if (rc) {
            op_error(t, label, side, ctx);
            ok_ = 0;
        }
    }
    (void)ok_;
    pcompare(t, label, "x", &x, 0.0);
    /* the clock advances across a synchronized region */
    double c0 = t->g->be->clock ? t->g->be->clock(t->g) : 0.0;
    cpb_stream_join(t->g, sg, 0);
    cpb_fill(t->g, sg, cpb_whole(x.g), 0.0f);
    cpb_sync(t->g);
    double c1 = t->g->be->clock ? t->g->be->clock(t->g) : 1.0;
    report(t, c1 > c0, "backend clock advances", c1 > c0 ? "" : "clock did not advance");
    cpb_stream_join(t->g, 0, sg);
    cpb_stream_join(t->c, 0, sc);
    pfree(t, &x);
    pfree(t, &y);
}

/* ---------------------------------------------------------------- memory */

static void check_memory(st_t *t)
{
    char d[256];
    cpb_ctx *g = t->g;
    /* the tracked capacity refuses with OOM, and nothing is allocated */
    int64_t cap = g->dev.capacity, live = g->dev.live;
    g->dev.capacity = live + (1 << 20);
    cpb_buf *b = NULL;
    int rc = cpb_alloc(g, &b, 1 << 20, CPB_FP32, CPB_TAG_TEMP, "too_big");
    g->dev.capacity = cap;
    snprintf(d, sizeof d, "status %s", cpb_status_name(rc));
    report(t, rc == CPB_ERR_OOM && !b && g->dev.live == live, "tracked capacity refuses 4 MiB past 1 MiB headroom", d);
    cpb_clear_error(g);
    if (b) cpb_free(g, 0, &b);
    if (g->be->probe) report(t, cap > 0, "default capacity is the device's free memory", "");

    /* a GEMM's workspace is a tracked allocation */
    cpb_free_all(g);
    pbuf A;
    if (palloc(t, &A, 64 * 64, CPB_BF16, 0, "A")) return;
    pfill(t, &A, 71, 1.0f);
    cpb_view m = cpb_mat(A.g, 0, 64, 64, 64);
    pbuf C;
    if (palloc(t, &C, 64 * 64, CPB_FP32, 0, "C")) return;
    rc = cpb_gemm(g, 0, 0, 1, 1.0f, m, m, 0.0f, cpb_mat(C.g, 0, 64, 64, 64));
    int64_t ws = g->dev.tag_live[CPB_TAG_WORKSPACE];
    snprintf(d, sizeof d, "workspace tag live %lld bytes, expected %lld", (long long)ws,
             (long long)cpb_gemm_workspace_bytes());
    report(t, rc == CPB_OK && ws == cpb_gemm_workspace_bytes(), "GEMM workspace through the tracked allocator", d);
    cpb_clear_error(g);
    pfree(t, &A);
    pfree(t, &C);
    if (!g->be->mem_highwater || !g->be->mem_highwater_reset) return;
    /* the pool's reserved high-water and the device-used high-water see a 256 MiB buffer */
    cpb_free_all(g);
    g->be->mem_highwater_reset(g);
    int64_t big = 256LL << 20;
    rc = cpb_alloc(g, &b, big / 4, CPB_FP32, CPB_TAG_TEMP, "big");
    if (!rc) rc = cpb_fill(g, 0, cpb_whole(b), 1.0f);
    if (!rc) rc = cpb_sync(g);
    int64_t res = 0, used = 0;
    if (!rc) rc = g->be->mem_highwater(g, &res, &used);
    snprintf(d, sizeof d, "reserved %.1f MiB, device used %.1f MiB (status %s)", res / 1048576.0, used / 1048576.0,
             cpb_status_name(rc));
    /* other ranks sharing the GPU (--comm mpi) can only add to device used */
    report(t, rc == CPB_OK && res >= big && used >= big / 2, "pool reserved / device-used high-waters", d);
    cpb_clear_error(g);
    if (b) cpb_free(g, 0, &b);
    cpb_free_all(g);
}

/* ---------------------------------------------------------------- copies over memPitch */

/* Same-dtype copies of one contiguous span longer than the device's memPitch, the widest
 * pitch of a 2-D copy (2147483647 bytes on an H100: offload moves 5.4 GB in one call at 5M
 * tokens): device -> device and device -> pinned host.  A 2-D copy whose pitch exceeds
 * memPitch fails outright; a split copy that misplaces a piece shows in the windows
 * checked, at both ends and across the memPitch boundary, against the same fill_random
 * values made by the cpu backend.  The span is memPitch and an eighth: 2.25 GiB on a GPU
 * (three such buffers), less on a device that allows less (the CPU stand-in's
 * CPB_STANDIN_MEMPITCH, so that four ranks on one host can afford it).  Only on a backend
 * whose device has such a limit: the cpu backend checking the self-test itself has none. */
static void check_large_copy(st_t *t)
{
    cpb_device_info di;
    memset(&di, 0, sizeof di);
    if (!t->g->be->device_info || t->g->be->device_info(t->g, &di) != CPB_OK || di.max_pitch_bytes <= 0) {
        cpb_clear_error(t->g);
        return;
    }
    const int64_t edge = di.max_pitch_bytes / 2; /* bf16 elements: the first one past it lies beyond memPitch */
    const int64_t n = edge + edge / 8 + 1;
    int64_t w = edge / 8 < 4096 ? edge / 8 : 4096;
    if (w < 1) w = 1;
    const int64_t starts[] = {0, edge - w / 2, n - w};
    char what[64];
    const double bytes = 2.0 * (double)n;
    const int u = bytes >= 1073741824.0 ? 3 : bytes >= 1048576.0 ? 2 : bytes >= 1024.0 ? 1 : 0;
    snprintf(what, sizeof what, "copy %.3g %s bf16", bytes / (double)(1LL << (10 * u)),
             (const char *[]){"bytes", "KiB", "MiB", "GiB"}[u]);
    cpb_ctx *g = t->g;
    cpb_buf *src = NULL, *dst = NULL, *host = NULL, *ref = NULL;
    float *hg = malloc(sizeof(float) * (size_t)w), *hc = malloc(sizeof(float) * (size_t)w);
    char d[512];
    int rc = hg && hc ? CPB_OK : CPB_ERR_NOMEM_HOST;
    if (!rc) rc = cpb_alloc(g, &src, n, CPB_BF16, CPB_TAG_TEMP, "big_src");
    if (!rc) rc = cpb_alloc(g, &dst, n, CPB_BF16, CPB_TAG_TEMP, "big_dst");
    if (!rc) rc = cpb_alloc_host(g, &host, n, CPB_BF16, CPB_TAG_TEMP, "big_host");
    if (!rc) rc = cpb_alloc(t->c, &ref, w, CPB_BF16, CPB_TAG_TEMP, "big_ref");
    if (!rc) rc = cpb_fill_random(g, 0, cpb_whole(src), 91, 0, 1.0f);
    if (!rc) rc = cpb_copy(g, 0, cpb_whole(dst), cpb_whole(src));
    if (!rc) rc = cpb_copy(g, 0, cpb_whole(host), cpb_whole(dst));
    if (!rc) rc = cpb_sync(g);
    if (rc) {
        snprintf(d, sizeof d, "%s", cpb_errmsg(g)[0] ? cpb_errmsg(g) : cpb_status_name(rc));
        char label[160];
        snprintf(label, sizeof label, "%s (memPitch %lld) device -> device -> pinned host", what,
                 (long long)di.max_pitch_bytes);
        report(t, 0, label, d);
    } else {
        for (int dev = 0; dev < 2; dev++)
            for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
                int64_t s0 = starts[k], bad = -1;
                rc = cpb_download(g, cpb_mat(dev ? dst : host, s0, 1, w, w), hg);
                if (!rc) rc = cpb_fill_random(t->c, 0, cpb_whole(ref), 91, s0, 1.0f);
                if (!rc) rc = cpb_download(t->c, cpb_whole(ref), hc);
                for (int64_t i = 0; !rc && i < w && bad < 0; i++)
                    if (hg[i] != hc[i]) bad = i;
                if (rc) snprintf(d, sizeof d, "download failed: %s %s", cpb_errmsg(g), cpb_errmsg(t->c));
                else if (bad >= 0)
                    snprintf(d, sizeof d, "element %lld: %.7g, expected %.7g", (long long)(s0 + bad), hg[bad], hc[bad]);
                else
                    snprintf(d, sizeof d, "elements %lld..%lld exact", (long long)s0, (long long)(s0 + w - 1));
                char label[160];
                snprintf(label, sizeof label, "%s %s, window %zu", what, dev ? "device -> device" : "-> pinned host", k);
                report(t, !rc && bad < 0, label, d);
                cpb_clear_error(g);
                cpb_clear_error(t->c);
            }
    }
    cpb_clear_error(g);
    if (src) cpb_free(g, 0, &src);
    if (dst) cpb_free(g, 0, &dst);
    if (host) cpb_free(g, 0, &host);
    if (ref) cpb_free(t->c, 0, &ref);
    free(hg);
    free(hc);
}

/* ---------------------------------------------------------------- collectives */

/* what rank r sends: seeded by (kind, rank), the same function on every rank */
static float cval(int kind, int r, int64_t i)
{
    return cpb_rand_u(9000 + 97 * (uint64_t)kind + (uint64_t)r, i);
}

static float round_dt(cpb_dtype dt, float x)
{
    if (dt == CPB_FP32) return x;
    /* round to nearest even bf16 */
    uint32_t u;
    memcpy(&u, &x, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}

static void coll_case(st_t *t, cpb_coll_kind kind, cpb_dtype dt, int stream, const char *sname)
{
    cpb_ctx *g = t->g;
    int W = t->world, r = t->rank;
    int64_t chunk = 1000 + 3;
    int64_t ns = chunk, nr = chunk;
    switch (kind) {
    case CPB_COLL_ALL_TO_ALL: ns = nr = chunk * W; break;
    case CPB_COLL_ALL_GATHER: nr = chunk * W; break;
    case CPB_COLL_REDUCE_SCATTER: ns = chunk * W; break;
    default: break;
    }
    char label[160];
    snprintf(label, sizeof label, "%s %s world %d on stream %s%s", cpb_coll_kind_name(kind), cpb_dtype_name(dt), W, sname,
             W == 1 ? " (local copy)" : "");
    cpb_buf *sb = NULL, *rb = NULL;
    float *h = malloc(sizeof(float) * (size_t)(ns + nr) * 2);
    float *want = h + ns, *got = want + nr;
    if (!h || cpb_alloc(g, &sb, ns, dt, CPB_TAG_A2A, "send") || cpb_alloc(g, &rb, nr, dt, CPB_TAG_A2A, "recv")) {
        op_error(t, label, 0, g);
        free(h);
        cpb_free_all(g);
        return;
    }
    for (int64_t i = 0; i < ns; i++) h[i] = cval(kind, r, i);
    for (int64_t i = 0; i < nr; i++) want[i] = 0.5f; /* recv's initial contents */
    int rc = cpb_upload(g, cpb_whole(sb), h);
    if (!rc) rc = cpb_upload(g, cpb_whole(rb), want);
    int root = W > 1 ? 1 : 0, inplace = 0;
    cpb_group *w = cpb_world(g);
    if (!rc) rc = cpb_stream_join(g, stream, 0);
    if (!rc) switch (kind) {
        case CPB_COLL_ALL_TO_ALL: rc = cpb_all_to_all(g, stream, w, cpb_whole(sb), cpb_whole(rb)); break;
        case CPB_COLL_SENDRECV:
            rc = cpb_sendrecv(g, stream, w, cpb_whole(sb), (r + 1) % W, cpb_whole(rb), (r + W - 1) % W);
            break;
        case CPB_COLL_BROADCAST: rc = cpb_broadcast(g, stream, w, cpb_whole(sb), root); inplace = 1; break;
        case CPB_COLL_REDUCE: rc = cpb_reduce(g, stream, w, cpb_whole(sb), cpb_whole(rb), root); break;
        case CPB_COLL_ALL_REDUCE: rc = cpb_all_reduce(g, stream, w, cpb_whole(sb)); inplace = 1; break;
        case CPB_COLL_ALL_GATHER: rc = cpb_all_gather(g, stream, w, cpb_whole(sb), cpb_whole(rb)); break;
        case CPB_COLL_REDUCE_SCATTER: rc = cpb_reduce_scatter(g, stream, w, cpb_whole(sb), cpb_whole(rb)); break;
        default: break;
        }
    /* joined even after a failed collective: the frees below are on stream 0, and a free not
     * ordered after the collective's read would be reported as a race in the next case */
    {
        int rj = cpb_stream_join(g, 0, stream);
        if (!rc) rc = rj;
    }
    if (!rc) rc = cpb_download(g, cpb_whole(inplace ? sb : rb), got);
    if (rc) {
        op_error(t, label, 0, g);
    } else {
        int64_t n = inplace ? ns : nr;
        for (int64_t i = 0; i < n; i++) {
            double e = 0.0;
            switch (kind) {
            case CPB_COLL_ALL_TO_ALL: e = round_dt(dt, cval(kind, (int)(i / chunk), r * chunk + i % chunk)); break;
            case CPB_COLL_SENDRECV: e = round_dt(dt, cval(kind, (r + W - 1) % W, i)); break;
            case CPB_COLL_BROADCAST: e = round_dt(dt, cval(kind, root, i)); break;
            case CPB_COLL_REDUCE:
                if (r != root) {
                    e = 0.5; /* untouched off the root */
                    break;
                }
                /* fall through */
            case CPB_COLL_ALL_REDUCE:
                for (int j = 0; j < W; j++) e += round_dt(dt, cval(kind, j, i));
                break;
            case CPB_COLL_ALL_GATHER: e = round_dt(dt, cval(kind, (int)(i / chunk), i % chunk)); break;
            case CPB_COLL_REDUCE_SCATTER:
                for (int j = 0; j < W; j++) e += round_dt(dt, cval(kind, j, r * chunk + i));
                break;
            default: break;
            }
            want[i] = (float)e;
        }
        int64_t wi;
        double err = rel_err(got, want, n, &wi);
        /* sums of bf16 values are rounded at each step by NCCL */
        double tol = dt == CPB_FP32 ? 1e-6 : 1.6e-2;
        char d[200];
        snprintf(d, sizeof d, "rel err %.2e (tol %.0e)%s", err, tol, err <= tol ? "" : " WRONG DATA");
        report(t, err <= tol, label, d);
    }
    free(h);
    cpb_free(g, 0, &sb);
    cpb_free(g, 0, &rb);
}

static void check_colls(st_t *t)
{
    int comm = 0;
    if (cpb_stream(t->g, "comm", &comm) != CPB_OK) {
        op_error(t, "stream comm", 0, t->g);
        return;
    }
    for (int k = 0; k < CPB_COLL_KIND_COUNT; k++)
        for (int dti = 0; dti < 2; dti++) {
            cpb_dtype dt = dti ? CPB_FP32 : CPB_BF16;
            coll_case(t, (cpb_coll_kind)k, dt, 0, "compute");
            coll_case(t, (cpb_coll_kind)k, dt, comm, "comm");
        }
}

/* ---------------------------------------------------------------- driver */

/* the groups of checks, in the order they run */
static const struct {
    const char *name;
    void (*run)(st_t *t);
} groups[] = {
    {"updown", check_updown},   {"fill_copy", check_fill_copy},   {"gemm", check_gemm},
    {"rope", check_rope},       {"merge_delta", check_merge_delta}, {"attn", check_attn},
    {"attn_cudnn", check_attn_cudnn}, {"streams", check_streams}, {"memory", check_memory},
    {"large_copy", check_large_copy}, {"colls", check_colls},
};

/* 1 when `name` is an item of the comma-separated `list` */
static int in_list(const char *list, const char *name)
{
    const size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0) return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* CPB_SELFTEST_ONLY's items that name no group (the first, in out), for its error */
static int unknown_group(const char *list, char *out, size_t len)
{
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        int known = 0;
        for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
            known |= strlen(groups[i].name) == n && strncmp(p, groups[i].name, n) == 0;
        if (!known) {
            snprintf(out, len, "%.*s", (int)n, p);
            return 1;
        }
        p += n + (p[n] == ',');
    }
    return 0;
}

int cpb_selftest(const cpb_tool_opts *o)
{
    const cpb_backend *be = o->be;
    char err[2048];
    const int rank0 = cpb_ranks_rank() == 0;
    if (!be->has_data || be->models_time) {
        if (rank0)
            fprintf(stderr, "cpbench selftest: compares the data of a backend with the cpu backend's; the %s backend "
                    "has none (its accounting is covered by ctest); run it with --backend cuda\n", be->name);
        return 2;
    }
    /* CPB_SELFTEST_ONLY=group[,group...]: only these groups of checks (a test that needs one
     * group, such as tests/fake_cudnn's cuDNN calls, does not wait for the others) */
    const char *only = getenv("CPB_SELFTEST_ONLY");
    char bad[64];
    if (only && unknown_group(only, bad, sizeof bad)) {
        if (rank0)
            fprintf(stderr, "cpbench selftest: CPB_SELFTEST_ONLY names '%s', which is no group of checks: give some of "
                    "updown, fill_copy, gemm, rope, merge_delta, attn, attn_cudnn, streams, memory, large_copy, colls\n",
                    bad);
        return 2;
    }
    char why[512] = "";
    if (be->probe && be->probe(why, sizeof why) <= 0) {
        if (rank0)
            fprintf(stderr, "cpbench selftest: no %s device present (%s); nothing was tested\n", be->name, why);
        return 2;
    }
    st_t t;
    memset(&t, 0, sizeof t);
    cpb_ctx_opts go = o->ctx;
    go.use_mpi = cpb_ranks_mpi();
    go.race_check = 1;
    if (cpb_ctx_create(be, &go, &t.g, err, sizeof err) != CPB_OK) {
        fprintf(stderr, "cpbench selftest: cannot create the %s context: %s\n", be->name, err);
        return 1;
    }
    cpb_ctx_opts co = {0};
    co.use_mpi = 0;
    co.race_check = 1;
    if (cpb_ctx_create(&cpb_backend_cpu, &co, &t.c, err, sizeof err) != CPB_OK) {
        fprintf(stderr, "cpbench selftest: cannot create the cpu context: %s\n", err);
        cpb_ctx_destroy(t.g);
        return 1;
    }
    t.rank = cpb_rank(t.g);
    t.world = cpb_world_size(t.g);
    if (t.rank == 0) {
        cpb_device_info di = {"", 0, 0, 0};
        if (be->device_info) be->device_info(t.g, &di);
        cpb_clear_error(t.g);
        printf("cpbench selftest: %s backend vs cpu backend%s%s (%.1f GiB), %d rank%s, comm %s\n", be->name,
               di.name[0] ? " on " : "", di.name, di.total_bytes / 1073741824.0, t.world, t.world == 1 ? "" : "s",
               go.comm ? go.comm : "default");
        printf("tolerances: max |%s - cpu| / max |cpu| <= %.0e (fp32), %.0e (bf16)\n", be->name, TOL_FP32, TOL_BF16);
    }
    /* our kernels first (--attn own), then cuDNN's where the backend has it */
    cpb_ctx_set_attn(t.g, CPB_ATTN_CHOOSE_OWN);
    cpb_ctx_set_attn(t.c, CPB_ATTN_CHOOSE_OWN);
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        if (!only || in_list(only, groups[i].name)) groups[i].run(&t);

    int counts[2] = {t.fail, t.pass};
    cpb_agree_sum_int(counts, 2);
    if (t.rank == 0)
        printf("selftest %s: %d passed, %d failed%s\n", be->name, counts[1], counts[0],
               t.world > 1 ? " (all ranks)" : "");
    cpb_ctx_destroy(t.c);
    cpb_ctx_destroy(t.g);
    return counts[0] ? 1 : 0;
}
