/* test_reference.c — the fp64 reference layer is the oracle of every verification, so it
 * is checked against first principles: finite differences of the loss sum(y * dy) for its
 * gradients, RoPE's algebra, GQA as MHA with shared kv weights, causality. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_rand.h"
#include "cpb_reference.h"

typedef struct layer {
    cpb_problem p;
    float *x, *dy, *wq, *wk, *wv, *wo;
    double *y, *dx, *dwq, *dwk, *dwv, *dwo;
} layer;

static float *randf(int64_t n, uint64_t seed, float scale)
{
    float *a = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) a[i] = scale * cpb_rand_u(seed, i);
    return a;
}

static layer make(int64_t S, int64_t D, int H, int G, int d, uint64_t seed)
{
    layer L;
    memset(&L, 0, sizeof L);
    L.p.S = S;
    L.p.D = D;
    L.p.H = H;
    L.p.G = G;
    L.p.d = d;
    L.p.rope_base = 10000;
    L.p.C = 1;
    const int64_t HD = (int64_t)H * d, GD = (int64_t)G * d;
    L.x = randf(S * D, seed, 1);
    L.dy = randf(S * D, seed + 1, 1);
    L.wq = randf(D * HD, seed + 2, 2.0f / sqrtf((float)D));
    L.wk = randf(D * GD, seed + 3, 2.0f / sqrtf((float)D));
    L.wv = randf(D * GD, seed + 4, 1.0f / sqrtf((float)D));
    L.wo = randf(HD * D, seed + 5, 1.0f / sqrtf((float)HD));
    L.y = calloc((size_t)(S * D), sizeof(double));
    L.dx = calloc((size_t)(S * D), sizeof(double));
    L.dwq = calloc((size_t)(D * HD), sizeof(double));
    L.dwk = calloc((size_t)(D * GD), sizeof(double));
    L.dwv = calloc((size_t)(D * GD), sizeof(double));
    L.dwo = calloc((size_t)(HD * D), sizeof(double));
    return L;
}

static void unmake(layer *L)
{
    void *all[] = {L->x, L->dy, L->wq, L->wk, L->wv, L->wo, L->y, L->dx, L->dwq, L->dwk, L->dwv, L->dwo};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

static void run(layer *L)
{
    char err[512];
    cpb_ref_in in = {L->x, L->wq, L->wk, L->wv, L->wo, L->dy};
    cpb_ref_out out = {L->y, L->dx, L->dwq, L->dwk, L->dwv, L->dwo};
    cr_assert_eq(cpb_reference_layer(&L->p, &in, &out, err, sizeof err), CPB_OK, "%s", err);
}

/* loss = sum(y * dy): its gradient with respect to the inputs is what backward returns */
static double loss(layer *L)
{
    run(L);
    double s = 0;
    for (int64_t i = 0; i < L->p.S * L->p.D; i++) s += L->y[i] * (double)L->dy[i];
    return s;
}

/* central difference in the input element e[i], with the step the float actually took */
static double numeric_grad(layer *L, float *e, int64_t i)
{
    float orig = e[i];
    float up = orig + 1e-2f, dn = orig - 1e-2f;
    e[i] = up;
    double lu = loss(L);
    e[i] = dn;
    double ld = loss(L);
    e[i] = orig;
    return (lu - ld) / ((double)up - (double)dn);
}

static void check_grad(layer *L, const char *what, float *e, const double *g, int64_t n)
{
    /* analytic gradient from an unperturbed run */
    run(L);
    double *analytic = malloc(sizeof(double) * (size_t)n);
    memcpy(analytic, g, sizeof(double) * (size_t)n);
    double gmax = 0;
    for (int64_t i = 0; i < n; i++) gmax = fmax(gmax, fabs(analytic[i]));
    cr_assert(gmax > 1e-3, "%s: gradient is (nearly) zero, the check would be vacuous", what);
    for (int k = 0; k < 7; k++) {
        int64_t i = (int64_t)((k * 7919 + 13) % n);
        double num = numeric_grad(L, e, i);
        cr_assert(fabs(num - analytic[i]) <= 2e-5 * gmax + 1e-7,
                  "%s[%lld]: analytic %.9g, finite difference %.9g", what, (long long)i, analytic[i], num);
    }
    free(analytic);
}

Test(reference, gradients_match_finite_differences)
{
    /* GQA (H 4, G 2), H*d != D, odd S */
    layer L = make(7, 10, 4, 2, 4, 11);
    const int64_t S = 7, D = 10, HD = 16, GD = 8;
    check_grad(&L, "dx", L.x, L.dx, S * D);
    check_grad(&L, "dwq", L.wq, L.dwq, D * HD);
    check_grad(&L, "dwk", L.wk, L.dwk, D * GD);
    check_grad(&L, "dwv", L.wv, L.dwv, D * GD);
    check_grad(&L, "dwo", L.wo, L.dwo, HD * D);
    unmake(&L);
}

static double dot(const double *a, const double *b, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

Test(reference, rope_algebra)
{
    const int d = 16;
    double q[16], k[16], a[16], b[16];
    for (int i = 0; i < d; i++) {
        q[i] = cpb_rand_u(5, i);
        k[i] = cpb_rand_u(6, i);
    }
    /* position 0 is the identity */
    memcpy(a, q, sizeof a);
    cpb_reference_rope(a, 1, 1, d, 0, 500000, 0);
    for (int i = 0; i < d; i++) cr_assert_eq(a[i], q[i]);
    /* a rotation: pair norms are kept, and the inverse undoes it */
    memcpy(a, q, sizeof a);
    cpb_reference_rope(a, 1, 1, d, 12345, 500000, 0);
    for (int i = 0; i < d / 2; i++)
        cr_assert_float_eq(hypot(a[2 * i], a[2 * i + 1]), hypot(q[2 * i], q[2 * i + 1]), 1e-12);
    cr_assert(fabs(a[0] - q[0]) > 1e-3, "position 12345 rotates the first pair");
    cpb_reference_rope(a, 1, 1, d, 12345, 500000, 1);
    for (int i = 0; i < d; i++) cr_assert_float_eq(a[i], q[i], 1e-12);
    /* the first pair turns by exactly pos radians (theta_0 = 1), Llama's interleaved pairs */
    memcpy(a, q, sizeof a);
    cpb_reference_rope(a, 1, 1, d, 3, 10000, 0);
    cr_assert_float_eq(a[0], q[0] * cos(3.0) - q[1] * sin(3.0), 1e-12);
    cr_assert_float_eq(a[1], q[0] * sin(3.0) + q[1] * cos(3.0), 1e-12);
    /* pair i turns by pos * base^(-2i/d) (written out for base 10000, d 16: 10^(-i/2)) */
    for (int i = 0; i < d / 2; i++) {
        double th = 3.0 * pow(10.0, -0.5 * i);
        cr_assert_float_eq(a[2 * i], q[2 * i] * cos(th) - q[2 * i + 1] * sin(th), 1e-12, "pair %d", i);
        cr_assert_float_eq(a[2 * i + 1], q[2 * i] * sin(th) + q[2 * i + 1] * cos(th), 1e-12, "pair %d", i);
    }
    /* scores depend only on relative positions, also near 2^23 where fp32 angles fail */
    const int64_t shifts[] = {1, 1000, (int64_t)1 << 23, ((int64_t)1 << 23) + 77};
    memcpy(a, q, sizeof a);
    memcpy(b, k, sizeof b);
    cpb_reference_rope(a, 1, 1, d, 10, 500000, 0);
    cpb_reference_rope(b, 1, 1, d, 3, 500000, 0);
    double s0 = dot(a, b, d);
    for (size_t t = 0; t < sizeof shifts / sizeof shifts[0]; t++) {
        memcpy(a, q, sizeof a);
        memcpy(b, k, sizeof b);
        cpb_reference_rope(a, 1, 1, d, 10 + shifts[t], 500000, 0);
        cpb_reference_rope(b, 1, 1, d, 3 + shifts[t], 500000, 0);
        cr_assert_float_eq(dot(a, b, d), s0, 1e-8, "shift %lld", (long long)shifts[t]);
    }
    /* rows take consecutive positions, heads share their row's position */
    double rows[2 * 2 * 16];
    for (int i = 0; i < 64; i++) rows[i] = q[i % 16];
    cpb_reference_rope(rows, 2, 2, d, 40, 500000, 0);
    memcpy(a, q, sizeof a);
    cpb_reference_rope(a, 1, 1, d, 41, 500000, 0);
    for (int i = 0; i < d; i++) {
        cr_assert_float_eq(rows[32 + i], a[i], 1e-12);
        cr_assert_float_eq(rows[48 + i], a[i], 1e-12);
    }
}

Test(reference, gqa_equals_mha_with_shared_kv_weights)
{
    const int64_t S = 12, D = 16;
    const int H = 6, G = 2, d = 4, g = H / G;
    layer gqa = make(S, D, H, G, d, 21);
    layer mha = make(S, D, H, H, d, 21);
    memcpy(mha.x, gqa.x, sizeof(float) * S * D);
    memcpy(mha.dy, gqa.dy, sizeof(float) * S * D);
    memcpy(mha.wq, gqa.wq, sizeof(float) * D * H * d);
    memcpy(mha.wo, gqa.wo, sizeof(float) * H * d * D);
    /* kv head of query head h is h / g: copy its columns to head h */
    for (int64_t r = 0; r < D; r++)
        for (int h = 0; h < H; h++)
            for (int c = 0; c < d; c++) {
                mha.wk[r * H * d + h * d + c] = gqa.wk[r * G * d + (h / g) * d + c];
                mha.wv[r * H * d + h * d + c] = gqa.wv[r * G * d + (h / g) * d + c];
            }
    run(&gqa);
    run(&mha);
    for (int64_t i = 0; i < S * D; i++) {
        cr_assert_float_eq(mha.y[i], gqa.y[i], 1e-12);
        cr_assert_float_eq(mha.dx[i], gqa.dx[i], 1e-12);
    }
    for (int64_t i = 0; i < D * H * d; i++) cr_assert_float_eq(mha.dwq[i], gqa.dwq[i], 1e-12);
    /* the shared kv weight's gradient is the sum over the heads that share it */
    for (int64_t r = 0; r < D; r++)
        for (int kv = 0; kv < G; kv++)
            for (int c = 0; c < d; c++) {
                double sk = 0, sv = 0;
                for (int j = 0; j < g; j++) {
                    sk += mha.dwk[r * H * d + (kv * g + j) * d + c];
                    sv += mha.dwv[r * H * d + (kv * g + j) * d + c];
                }
                cr_assert_float_eq(sk, gqa.dwk[r * G * d + kv * d + c], 1e-12);
                cr_assert_float_eq(sv, gqa.dwv[r * G * d + kv * d + c], 1e-12);
            }
    unmake(&gqa);
    unmake(&mha);
}

Test(reference, causal_and_first_token_sees_only_itself)
{
    const int64_t S = 9, D = 8;
    layer L = make(S, D, 2, 1, 4, 31);
    run(&L);
    double *y0 = malloc(sizeof(double) * S * D);
    memcpy(y0, L.y, sizeof(double) * S * D);
    for (int64_t c = 0; c < D; c++) L.x[(S - 1) * D + c] += 0.5f; /* change the last token */
    run(&L);
    for (int64_t i = 0; i < (S - 1) * D; i++) cr_assert_eq(L.y[i], y0[i], "token %lld saw the future", (long long)(i / D));
    int changed = 0;
    for (int64_t c = 0; c < D; c++) changed |= L.y[(S - 1) * D + c] != y0[(S - 1) * D + c];
    cr_assert(changed);
    /* token 0 attends only to itself: y_0 = (x_0 Wv) per head, times Wo */
    double o[8] = {0};
    for (int h = 0; h < 2; h++)
        for (int c = 0; c < 4; c++)
            for (int64_t r = 0; r < D; r++) o[h * 4 + c] += (double)L.x[r] * L.wv[r * 4 + c];
    for (int64_t c = 0; c < D; c++) {
        double y = 0;
        for (int j = 0; j < 8; j++) y += o[j] * L.wo[j * D + c];
        cr_assert_float_eq(L.y[c], y, 1e-12);
    }
    free(y0);
    unmake(&L);
}

Test(reference, refuses_bad_shapes)
{
    char err[512];
    cpb_problem p = {0};
    p.S = 8;
    p.D = 8;
    p.H = 3;
    p.G = 2;
    p.d = 4;
    p.rope_base = 10000;
    cpb_ref_in in = {0};
    cpb_ref_out out = {0};
    cr_assert_eq(cpb_reference_layer(&p, &in, &out, err, sizeof err), CPB_ERR_INVALID);
    cr_assert_not_null(strstr(err, "H % G"), "%s", err);
    p.H = 4;
    p.S = CPB_REF_MAX_SEQ + 2;
    cr_assert_eq(cpb_reference_layer(&p, &in, &out, err, sizeof err), CPB_ERR_INVALID);
    cr_assert_not_null(strstr(err, "--seq"), "%s", err);
}
