/* test_cpu_util.h — helpers shared by the cpu backend's unit tests: a single-process cpu
 * context (no MPI: every Criterion test is a forked process), buffers filled from a test
 * PRNG that shares nothing with the backend's cpb_rand, and error measures. */
#ifndef TEST_CPU_UTIL_H
#define TEST_CPU_UTIL_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "cpb_backend.h"
#include "registry.h"
#include "cpb_bf16.h"

static inline cpb_ctx *t_ctx_cap(int64_t capacity, int64_t host_capacity)
{
    cpb_ctx_opts o = {0};
        o.use_mpi = 0;
    o.race_check = 1;
    o.capacity = capacity;
    o.host_capacity = host_capacity;
    char err[512] = "";
    cpb_ctx *ctx = NULL;
    int rc = cpb_ctx_create(&cpb_backend_cpu, &o, &ctx, err, sizeof err);
    cr_assert_eq(rc, CPB_OK, "creating a cpu context: %s", err);
    return ctx;
}

static inline cpb_ctx *t_ctx(void)
{
    return t_ctx_cap(0, 0);
}

static inline cpb_buf *t_buf(cpb_ctx *ctx, int64_t n, cpb_dtype dt, const char *name)
{
    cpb_buf *b = NULL;
    int rc = cpb_alloc(ctx, &b, n, dt, CPB_TAG_TEMP, name);
    cr_assert_eq(rc, CPB_OK, "alloc %s: %s", name, cpb_errmsg(ctx));
    return b;
}

/* xorshift64*: the tests' own random numbers, uniform in [-1, 1) */
static inline float t_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    uint64_t r = *s * 2685821657736338717ull;
    return (float)((double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static inline float *t_rand_array(int64_t n, uint64_t seed, float scale)
{
    float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    cr_assert_not_null(x);
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t i = 0; i < n; i++) x[i] = scale * t_rand(&s);
    return x;
}

/* upload random values into a view and return what it now holds (after storage
 * rounding), row-major over (rows, heads, dim) */
static inline float *t_fill_view(cpb_ctx *ctx, cpb_view v, uint64_t seed, float scale)
{
    int64_t n = cpb_view_count(&v);
    float *x = t_rand_array(n, seed, scale);
    cr_assert_eq(cpb_upload(ctx, v, x), CPB_OK, "%s", cpb_errmsg(ctx));
    cr_assert_eq(cpb_download(ctx, v, x), CPB_OK, "%s", cpb_errmsg(ctx));
    return x;
}

static inline float *t_get(cpb_ctx *ctx, cpb_view v)
{
    int64_t n = cpb_view_count(&v);
    float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    cr_assert_not_null(x);
    cr_assert_eq(cpb_download(ctx, v, x), CPB_OK, "%s", cpb_errmsg(ctx));
    return x;
}

/* max |a - ref| / max(max |ref|, floor): the relative max error the project reports */
static inline double t_relerr(const float *a, const double *ref, int64_t n, double floor)
{
    double e = 0, m = floor;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - ref[i]);
        if (d != d) return INFINITY;
        if (d > e) e = d;
        if (fabs(ref[i]) > m) m = fabs(ref[i]);
    }
    return e / m;
}

static inline double t_maxabs(const float *a, const double *ref, int64_t n)
{
    double e = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - ref[i]);
        if (d != d) return INFINITY;
        if (d > e) e = d;
    }
    return e;
}

static inline double *t_dalloc(int64_t n)
{
    double *p = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    cr_assert_not_null(p);
    return p;
}

#endif
