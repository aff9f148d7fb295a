/* test_cpu_attention.c — the cpu backend's attention forward and backward against a
 * materialised-softmax reference in double precision (itself checked against finite
 * differences), with GQA, causal masks at global offsets (queries after the keys, and
 * before them so that some rows see no key), non-causal, odd sizes, strided views, fp32
 * and bf16 storage, delta given or computed, and the accumulate flag. */
#include <string.h>

#include "test_cpu_util.h"

typedef struct acase {
    int64_t sq, sk, hq, hk, d;
    int causal;
    int64_t qp, kp; /* global position of query row 0 and key row 0 */
    float scale;    /* 0: 1/sqrt(d) */
} acase;

static int64_t visible(const acase *c, int64_t i)
{
    if (!c->causal) return c->sk;
    int64_t n = c->qp - c->kp + i + 1;
    return n < 0 ? 0 : (n > c->sk ? c->sk : n);
}

static double ascale(const acase *c)
{
    return c->scale != 0.0f ? (double)c->scale : 1.0 / sqrt((double)c->d);
}

/* forward: o [sq][hq][d], lse [hq][sq] */
static void ref_fwd(const acase *c, const double *q, const double *k, const double *v, double *o, double *lse)
{
    int64_t g = c->hq / c->hk, d = c->d;
    double *s = t_dalloc(c->sk);
    for (int64_t h = 0; h < c->hq; h++)
        for (int64_t i = 0; i < c->sq; i++) {
            int64_t kh = h / g, vis = visible(c, i);
            double *orow = o + (i * c->hq + h) * d;
            for (int64_t x = 0; x < d; x++) orow[x] = 0;
            if (vis == 0) {
                lse[h * c->sq + i] = -INFINITY;
                continue;
            }
            double m = -INFINITY, sum = 0;
            for (int64_t j = 0; j < vis; j++) {
                double dot = 0;
                for (int64_t x = 0; x < d; x++) dot += q[(i * c->hq + h) * d + x] * k[(j * c->hk + kh) * d + x];
                s[j] = ascale(c) * dot;
                if (s[j] > m) m = s[j];
            }
            for (int64_t j = 0; j < vis; j++) sum += exp(s[j] - m);
            double l = m + log(sum);
            lse[h * c->sq + i] = l;
            for (int64_t j = 0; j < vis; j++) {
                double p = exp(s[j] - l);
                for (int64_t x = 0; x < d; x++) orow[x] += p * v[(j * c->hk + kh) * d + x];
            }
        }
    free(s);
}

/* gradients of L = sum(dO * o) by the materialised softmax: P, dP = dO V^T,
 * dS = P (dP - rowsum(P dP)) */
static void ref_bwd(const acase *c, const double *q, const double *k, const double *v, const double *dout, double *dq,
                    double *dk, double *dv)
{
    int64_t g = c->hq / c->hk, d = c->d, sk = c->sk;
    double *p = t_dalloc(sk), *dp = t_dalloc(sk);
    memset(dq, 0, sizeof(double) * (size_t)(c->sq * c->hq * d));
    memset(dk, 0, sizeof(double) * (size_t)(sk * c->hk * d));
    memset(dv, 0, sizeof(double) * (size_t)(sk * c->hk * d));
    double sc = ascale(c);
    for (int64_t h = 0; h < c->hq; h++)
        for (int64_t i = 0; i < c->sq; i++) {
            int64_t kh = h / g, vis = visible(c, i);
            if (vis == 0) continue;
            const double *qi = q + (i * c->hq + h) * d, *gi = dout + (i * c->hq + h) * d;
            double m = -INFINITY, sum = 0, delta = 0;
            for (int64_t j = 0; j < vis; j++) {
                double dot = 0;
                for (int64_t x = 0; x < d; x++) dot += qi[x] * k[(j * c->hk + kh) * d + x];
                p[j] = sc * dot;
                if (p[j] > m) m = p[j];
            }
            for (int64_t j = 0; j < vis; j++) sum += exp(p[j] - m);
            for (int64_t j = 0; j < vis; j++) {
                p[j] = exp(p[j] - m) / sum;
                double dot = 0;
                for (int64_t x = 0; x < d; x++) dot += gi[x] * v[(j * c->hk + kh) * d + x];
                dp[j] = dot;
                delta += p[j] * dot;
            }
            for (int64_t j = 0; j < vis; j++) {
                double ds = p[j] * (dp[j] - delta);
                for (int64_t x = 0; x < d; x++) {
                    dv[(j * c->hk + kh) * d + x] += p[j] * gi[x];
                    dq[(i * c->hq + h) * d + x] += sc * ds * k[(j * c->hk + kh) * d + x];
                    dk[(j * c->hk + kh) * d + x] += sc * ds * qi[x];
                }
            }
        }
    free(p);
    free(dp);
}

static double *to_d(const float *x, int64_t n)
{
    double *y = t_dalloc(n);
    for (int64_t i = 0; i < n; i++) y[i] = x[i];
    return y;
}

/* ---------------------------------------------------------------- device side */

typedef struct adev {
    cpb_buf *qb, *kb, *vb, *ob, *lb, *dob, *dqb, *dkb, *dvb, *deltab;
    cpb_attn_args a;
    int64_t nq, nk;
    double *q, *k, *v, *dout; /* the stored inputs, as the reference sees them */
} adev;

static void dev_setup(cpb_ctx *ctx, const acase *c, cpb_dtype dt, adev *D, uint64_t seed)
{
    memset(D, 0, sizeof *D);
    int64_t sq = c->sq, sk = c->sk, hq = c->hq, hk = c->hk, d = c->d;
    D->nq = sq * hq * d;
    D->nk = sk * hk * d;
    /* q lives in a wider buffer (one extra head per row) to exercise strides */
    D->qb = t_buf(ctx, sq * (hq + 1) * d, dt, "q");
    D->kb = t_buf(ctx, D->nk, dt, "k");
    D->vb = t_buf(ctx, D->nk, dt, "v");
    D->ob = t_buf(ctx, D->nq, dt, "o");
    D->lb = t_buf(ctx, (hq + 1) * (sq + 3), CPB_FP32, "lse");
    D->dob = t_buf(ctx, D->nq, dt, "dO");
    D->dqb = t_buf(ctx, D->nq, dt, "dq");
    D->dkb = t_buf(ctx, D->nk, dt, "dk");
    D->dvb = t_buf(ctx, D->nk, dt, "dv");
    D->deltab = t_buf(ctx, hq * sq, CPB_FP32, "delta");
    cpb_attn_args *a = &D->a;
    a->q = cpb_heads(D->qb, d, sq, hq, d, (hq + 1) * d, d);
    a->k = cpb_heads(D->kb, 0, sk, hk, d, hk * d, d);
    a->v = cpb_heads(D->vb, 0, sk, hk, d, hk * d, d);
    a->o = cpb_heads(D->ob, 0, sq, hq, d, hq * d, d);
    a->lse = cpb_lse_view(D->lb, sq + 3, 1, hq, 2, sq);
    a->d_o = cpb_heads(D->dob, 0, sq, hq, d, hq * d, d);
    a->dq = cpb_heads(D->dqb, 0, sq, hq, d, hq * d, d);
    a->dk = cpb_heads(D->dkb, 0, sk, hk, d, hk * d, d);
    a->dv = cpb_heads(D->dvb, 0, sk, hk, d, hk * d, d);
    a->causal = c->causal;
    a->q_pos0 = c->qp;
    a->k_pos0 = c->kp;
    a->scale = c->scale;
    float *f;
    f = t_fill_view(ctx, a->q, seed + 1, 1.0f), D->q = to_d(f, D->nq), free(f);
    f = t_fill_view(ctx, a->k, seed + 2, 1.0f), D->k = to_d(f, D->nk), free(f);
    f = t_fill_view(ctx, a->v, seed + 3, 1.0f), D->v = to_d(f, D->nk), free(f);
    f = t_fill_view(ctx, a->d_o, seed + 4, 1.0f), D->dout = to_d(f, D->nq), free(f);
    /* garbage in the outputs: the ops must overwrite it */
    cr_assert_eq(cpb_fill(ctx, 0, cpb_whole(D->ob), NAN), CPB_OK);
    cr_assert_eq(cpb_fill(ctx, 0, cpb_whole(D->lb), NAN), CPB_OK);
}

static void dev_free(adev *D)
{
    free(D->q), free(D->k), free(D->v), free(D->dout);
}

static double fwd_case(const acase *c, cpb_dtype dt, double tol)
{
    cpb_ctx *ctx = t_ctx();
    adev D;
    dev_setup(ctx, c, dt, &D, 11);
    cr_assert_eq(cpb_attn_fwd(ctx, 0, &D.a), CPB_OK, "%s", cpb_errmsg(ctx));
    double *o = t_dalloc(D.nq), *lse = t_dalloc(c->hq * c->sq);
    ref_fwd(c, D.q, D.k, D.v, o, lse);
    float *go = t_get(ctx, D.a.o), *gl = t_get(ctx, D.a.lse);
    /* t_get of the lse view gives [sq][hq]; the reference is [hq][sq] */
    double lerr = 0;
    int64_t empty = 0;
    for (int64_t i = 0; i < c->sq; i++)
        for (int64_t h = 0; h < c->hq; h++) {
            double r = lse[h * c->sq + i], x = gl[i * c->hq + h];
            if (r == -INFINITY) {
                empty++;
                cr_assert(x == -INFINITY, "row %lld head %lld sees no key: lse must be -inf, is %g", (long long)i,
                          (long long)h, x);
                for (int64_t e = 0; e < c->d; e++)
                    cr_assert(go[(i * c->hq + h) * c->d + e] == 0.0f, "empty row must have o == 0");
                continue;
            }
            double e = fabs(x - r);
            if (!(e <= lerr)) lerr = e;
        }
    double eo = t_maxabs(go, o, D.nq);
    cr_log_info("attn fwd sq %lld sk %lld hq %lld hk %lld d %lld causal %d qp %lld kp %lld %s: max |o err| %.3g, "
                "|lse err| %.3g, %lld empty rows",
                (long long)c->sq, (long long)c->sk, (long long)c->hq, (long long)c->hk, (long long)c->d, c->causal,
                (long long)c->qp, (long long)c->kp, cpb_dtype_name(dt), eo, lerr, (long long)empty);
    cr_assert(eo <= tol, "o error %g > %g", eo, tol);
    cr_assert(lerr <= tol * 4, "lse error %g > %g", lerr, tol * 4);
    if (c->causal && c->qp < c->kp) cr_assert_gt(empty, 0, "the case was meant to have rows that see nothing");
    free(go), free(gl), free(o), free(lse);
    dev_free(&D);
    cpb_ctx_destroy(ctx);
    return eo;
}

static const acase fwd_cases[] = {
    {37, 53, 6, 2, 16, 0, 0, 0, 0},         /* non-causal, GQA 3 */
    {37, 53, 6, 2, 16, 1, 100, 80, 0},      /* queries after the keys' start */
    {37, 53, 6, 2, 16, 1, 10, 30, 0},       /* rows 0..19 see nothing */
    {130, 130, 4, 4, 8, 1, 0, 0, 0},        /* causal diagonal over several blocks */
    {70, 150, 3, 1, 24, 1, 200, 100, 0.3f}, /* MQA, explicit scale, partial key blocks */
    {65, 129, 2, 1, 16, 1, 64, 0, 0},       /* block edges: 64 + 1 rows, 128 + 1 keys */
};

Test(cpu_attention, forward_fp32)
{
    for (size_t i = 0; i < sizeof fwd_cases / sizeof fwd_cases[0]; i++) fwd_case(&fwd_cases[i], CPB_FP32, 1e-5);
}

Test(cpu_attention, forward_bf16)
{
    for (size_t i = 0; i < sizeof fwd_cases / sizeof fwd_cases[0]; i++) fwd_case(&fwd_cases[i], CPB_BF16, 2e-2);
}

/* ---------------------------------------------------------------- backward */

enum { DELTA_FROM_O = 0, DELTA_GIVEN = 1 };

static void bwd_case(const acase *c, cpb_dtype dt, int delta_mode, int accumulate, double tol)
{
    cpb_ctx *ctx = t_ctx();
    adev D;
    dev_setup(ctx, c, dt, &D, 23);
    cr_assert_eq(cpb_attn_fwd(ctx, 0, &D.a), CPB_OK, "%s", cpb_errmsg(ctx));
    cpb_attn_args a = D.a;
    if (delta_mode == DELTA_GIVEN) {
        a.delta = cpb_lse_view(D.deltab, c->sq, 0, c->hq, 0, c->sq);
        cr_assert_eq(cpb_attn_delta(ctx, 0, a.o, a.d_o, a.delta), CPB_OK, "%s", cpb_errmsg(ctx));
        memset(&a.o, 0, sizeof a.o); /* backward must not need o then */
    }
    float *pq = NULL, *pk = NULL, *pv = NULL;
    if (accumulate) {
        a.accumulate = 1;
        pq = t_fill_view(ctx, a.dq, 31, 0.5f);
        pk = t_fill_view(ctx, a.dk, 32, 0.5f);
        pv = t_fill_view(ctx, a.dv, 33, 0.5f);
    } else {
        cr_assert_eq(cpb_fill(ctx, 0, cpb_whole(D.dqb), NAN), CPB_OK);
        cr_assert_eq(cpb_fill(ctx, 0, cpb_whole(D.dkb), NAN), CPB_OK);
        cr_assert_eq(cpb_fill(ctx, 0, cpb_whole(D.dvb), NAN), CPB_OK);
    }
    int64_t live = cpb_device_mem(ctx)->live;
    cr_assert_eq(cpb_attn_bwd(ctx, 0, &a), CPB_OK, "%s", cpb_errmsg(ctx));
    cr_assert_eq(cpb_device_mem(ctx)->live, live, "the workspace must be freed");
    double *dq = t_dalloc(D.nq), *dk = t_dalloc(D.nk), *dv = t_dalloc(D.nk);
    ref_bwd(c, D.q, D.k, D.v, D.dout, dq, dk, dv);
    if (accumulate) {
        for (int64_t i = 0; i < D.nq; i++) dq[i] += pq[i];
        for (int64_t i = 0; i < D.nk; i++) dk[i] += pk[i], dv[i] += pv[i];
    }
    float *gq = t_get(ctx, a.dq), *gk = t_get(ctx, a.dk), *gv = t_get(ctx, a.dv);
    double eq = t_relerr(gq, dq, D.nq, 1e-3), ek = t_relerr(gk, dk, D.nk, 1e-3), ev = t_relerr(gv, dv, D.nk, 1e-3);
    cr_log_info("attn bwd sq %lld sk %lld hq %lld hk %lld causal %d qp %lld kp %lld %s delta %s acc %d: rel err "
                "dq %.3g dk %.3g dv %.3g",
                (long long)c->sq, (long long)c->sk, (long long)c->hq, (long long)c->hk, c->causal, (long long)c->qp,
                (long long)c->kp, cpb_dtype_name(dt), delta_mode ? "given" : "from o", accumulate, eq, ek, ev);
    cr_assert(eq <= tol && ek <= tol && ev <= tol, "backward errors dq %g dk %g dv %g > %g", eq, ek, ev, tol);
    /* rows that see no key have no gradient (plus what was there with accumulate) */
    for (int64_t i = 0; i < c->sq; i++)
        if (visible(c, i) == 0)
            for (int64_t e = 0; e < c->hq * c->d; e++)
                cr_assert(gq[i * c->hq * c->d + e] == (accumulate ? pq[i * c->hq * c->d + e] : 0.0f),
                          "row %lld sees nothing but got a dq", (long long)i);
    free(gq), free(gk), free(gv), free(dq), free(dk), free(dv), free(pq), free(pk), free(pv);
    dev_free(&D);
    cpb_ctx_destroy(ctx);
}

static const acase bwd_cases[] = {
    {37, 53, 6, 2, 16, 1, 100, 80, 0},
    {37, 53, 6, 2, 16, 1, 10, 30, 0},
    {37, 53, 6, 2, 16, 0, 0, 0, 0},
    {130, 97, 4, 2, 8, 1, 33, 0, 0},
};

Test(cpu_attention, backward_fp32_delta_from_o)
{
    for (size_t i = 0; i < sizeof bwd_cases / sizeof bwd_cases[0]; i++)
        bwd_case(&bwd_cases[i], CPB_FP32, DELTA_FROM_O, 0, 1e-5);
}

Test(cpu_attention, backward_fp32_delta_given)
{
    for (size_t i = 0; i < sizeof bwd_cases / sizeof bwd_cases[0]; i++)
        bwd_case(&bwd_cases[i], CPB_FP32, DELTA_GIVEN, 0, 1e-5);
}

Test(cpu_attention, backward_fp32_accumulate)
{
    bwd_case(&bwd_cases[0], CPB_FP32, DELTA_FROM_O, 1, 1e-5);
    bwd_case(&bwd_cases[1], CPB_FP32, DELTA_GIVEN, 1, 1e-5);
}

Test(cpu_attention, backward_bf16)
{
    for (size_t i = 0; i < sizeof bwd_cases / sizeof bwd_cases[0]; i++)
        bwd_case(&bwd_cases[i], CPB_BF16, i % 2 ? DELTA_GIVEN : DELTA_FROM_O, (int)(i == 3), 2e-2);
}

/* The reference gradient itself, against central differences of the reference forward
 * for L = sum(dO * o), on a small causal GQA problem with offsets. */
Test(cpu_attention, reference_matches_finite_differences)
{
    acase c = {5, 7, 4, 2, 4, 1, 6, 3, 0};
    int64_t nq = c.sq * c.hq * c.d, nk = c.sk * c.hk * c.d;
    float *f = t_rand_array(2 * nq + 2 * nk, 5, 1.0f);
    double *q = to_d(f, nq), *k = to_d(f + nq, nk), *v = to_d(f + nq + nk, nk), *g = to_d(f + nq + 2 * nk, nq);
    free(f);
    double *dq = t_dalloc(nq), *dk = t_dalloc(nk), *dv = t_dalloc(nk), *o = t_dalloc(nq), *lse = t_dalloc(c.hq * c.sq);
    ref_bwd(&c, q, k, v, g, dq, dk, dv);
    double *xs[3] = {q, k, v}, *gs[3] = {dq, dk, dv};
    int64_t ns[3] = {nq, nk, nk};
    double worst = 0;
    for (int t = 0; t < 3; t++)
        for (int64_t i = 0; i < ns[t]; i++) {
            double keep = xs[t][i], l[2];
            for (int sgn = 0; sgn < 2; sgn++) {
                xs[t][i] = keep + (sgn ? -1e-6 : 1e-6);
                ref_fwd(&c, q, k, v, o, lse);
                l[sgn] = 0;
                for (int64_t e = 0; e < nq; e++) l[sgn] += g[e] * o[e];
            }
            xs[t][i] = keep;
            double fd = (l[0] - l[1]) / 2e-6, e = fabs(fd - gs[t][i]);
            if (e > worst) worst = e;
        }
    cr_log_info("reference gradient vs finite differences: max abs error %.3g", worst);
    cr_assert_lt(worst, 1e-7);
    free(q), free(k), free(v), free(g), free(dq), free(dk), free(dv), free(o), free(lse);
}

/* What ring attention relies on: the backward over key blocks, each given the *global* lse
 * and delta of the full attention, adds up to the backward over all keys (dq summed over
 * the blocks with accumulate, dk/dv of each block in place). */
Test(cpu_attention, backward_by_key_blocks_with_global_lse)
{
    acase c = {29, 45, 4, 2, 8, 1, 40, 20, 0};
    cpb_ctx *ctx = t_ctx();
    adev D;
    dev_setup(ctx, &c, CPB_FP32, &D, 41);
    cr_assert_eq(cpb_attn_fwd(ctx, 0, &D.a), CPB_OK, "%s", cpb_errmsg(ctx));
    cpb_attn_args full = D.a;
    full.delta = cpb_lse_view(D.deltab, c.sq, 0, c.hq, 0, c.sq);
    cr_assert_eq(cpb_attn_delta(ctx, 0, full.o, full.d_o, full.delta), CPB_OK);
    cr_assert_eq(cpb_attn_bwd(ctx, 0, &full), CPB_OK, "%s", cpb_errmsg(ctx));
    float *fq = t_get(ctx, full.dq), *fk = t_get(ctx, full.dk), *fv = t_get(ctx, full.dv);
    cpb_buf *dq2 = t_buf(ctx, D.nq, CPB_FP32, "dq2"), *dk2 = t_buf(ctx, D.nk, CPB_FP32, "dk2");
    cpb_buf *dv2 = t_buf(ctx, D.nk, CPB_FP32, "dv2");
    /* accumulate applies to dk, dv too: the second block adds to zeros */
    cr_assert_eq(cpb_fill(ctx, 0, cpb_whole(dk2), 0.0f), CPB_OK);
    cr_assert_eq(cpb_fill(ctx, 0, cpb_whole(dv2), 0.0f), CPB_OK);
    int64_t cut[3] = {0, 13, c.sk}; /* the second block starts mid-way, at a masked key for early rows */
    for (int b = 0; b < 2; b++) {
        cpb_attn_args p = full;
        int64_t n = cut[b + 1] - cut[b];
        p.k = cpb_view_rows(full.k, cut[b], n);
        p.v = cpb_view_rows(full.v, cut[b], n);
        p.k_pos0 = c.kp + cut[b];
        p.dq = cpb_heads(dq2, 0, c.sq, c.hq, c.d, c.hq * c.d, c.d);
        p.dk = cpb_view_rows(cpb_heads(dk2, 0, c.sk, c.hk, c.d, c.hk * c.d, c.d), cut[b], n);
        p.dv = cpb_view_rows(cpb_heads(dv2, 0, c.sk, c.hk, c.d, c.hk * c.d, c.d), cut[b], n);
        p.accumulate = b > 0;
        cr_assert_eq(cpb_attn_bwd(ctx, 0, &p), CPB_OK, "%s", cpb_errmsg(ctx));
    }
    float *bq = t_get(ctx, cpb_whole(dq2)), *bk = t_get(ctx, cpb_whole(dk2)), *bv = t_get(ctx, cpb_whole(dv2));
    double *rq = to_d(fq, D.nq), *rk = to_d(fk, D.nk), *rv = to_d(fv, D.nk);
    double eq = t_relerr(bq, rq, D.nq, 1e-3), ek = t_relerr(bk, rk, D.nk, 1e-3), ev = t_relerr(bv, rv, D.nk, 1e-3);
    cr_log_info("backward by key blocks vs whole: dq %.3g dk %.3g dv %.3g", eq, ek, ev);
    cr_assert(eq < 1e-6 && ek < 1e-6 && ev < 1e-6, "blocks %g %g %g", eq, ek, ev);
    free(fq), free(fk), free(fv), free(bq), free(bk), free(bv), free(rq), free(rk), free(rv);
    dev_free(&D);
    cpb_ctx_destroy(ctx);
}
