/* verify_dump_check.c — reads a `cpbench verify --dump` file and checks it end to end:
 * the attributes and dataset shapes of the documented layout, bf16 inputs that really are
 * bf16 values, and results that agree with the reference layer recomputed here from the
 * dumped inputs (the dump must hold the inputs exactly as the method used them).
 * Usage: verify_dump_check FILE METHOD WORLD_SIZE DTYPE.  Exit 0 when all holds. */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_reference.h"

static int fails;
#define CHECK(cond, ...)                                                                          \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            fprintf(stderr, "verify_dump_check: " __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                                               \
            fails++;                                                                             \
        }                                                                                        \
    } while (0)

static int64_t attr_i64(hid_t f, const char *name)
{
    int64_t v = -1;
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    CHECK(a >= 0 && H5Aread(a, H5T_NATIVE_INT64, &v) >= 0, "attribute %s missing or not an integer", name);
    if (a >= 0) H5Aclose(a);
    return v;
}

static double attr_f64(hid_t f, const char *name)
{
    double v = -1;
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    CHECK(a >= 0 && H5Aread(a, H5T_NATIVE_DOUBLE, &v) >= 0, "attribute %s missing or not a number", name);
    if (a >= 0) H5Aclose(a);
    return v;
}

static void attr_str(hid_t f, const char *name, char *out, size_t len)
{
    out[0] = 0;
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    CHECK(a >= 0, "attribute %s missing", name);
    if (a < 0) return;
    hid_t t = H5Aget_type(a);
    size_t n = H5Tget_size(t);
    char *buf = calloc(n + 1, 1);
    CHECK(H5Aread(a, t, buf) >= 0, "attribute %s unreadable", name);
    snprintf(out, len, "%s", buf);
    free(buf);
    H5Tclose(t);
    H5Aclose(a);
}

/* a float32 dataset of the given shape, or NULL */
static float *dataset(hid_t f, const char *name, int64_t rows, int64_t cols)
{
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    CHECK(d >= 0, "dataset %s missing", name);
    if (d < 0) return NULL;
    hid_t sp = H5Dget_space(d), t = H5Dget_type(d);
    hsize_t dims[2] = {0, 0};
    int nd = H5Sget_simple_extent_dims(sp, dims, NULL);
    float *v = NULL;
    CHECK(H5Tequal(t, H5T_IEEE_F32LE) > 0, "dataset %s is not float32", name);
    CHECK(nd == 2 && dims[0] == (hsize_t)rows && dims[1] == (hsize_t)cols,
          "dataset %s has shape [%llu, %llu], expected [%lld, %lld]", name, (unsigned long long)dims[0],
          (unsigned long long)dims[1], (long long)rows, (long long)cols);
    if (nd == 2 && dims[0] == (hsize_t)rows && dims[1] == (hsize_t)cols) {
        v = malloc(sizeof(float) * (size_t)(rows * cols));
        if (H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) {
            free(v);
            v = NULL;
        }
    }
    H5Tclose(t);
    H5Sclose(sp);
    H5Dclose(d);
    return v;
}

static double rel_err(const float *a, const double *ref, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num = fmax(num, fabs((double)a[i] - ref[i]));
        den = fmax(den, fabs(ref[i]));
    }
    return den > 0 ? num / den : num;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: verify_dump_check FILE METHOD WORLD_SIZE DTYPE\n");
        return 2;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *leftover = fopen(tmp, "r");
    CHECK(!leftover, "%s was left behind", tmp);
    if (leftover) fclose(leftover);
    hid_t f = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        fprintf(stderr, "verify_dump_check: cannot open %s\n", argv[1]);
        return 1;
    }
    cpb_problem p = {0};
    p.D = attr_i64(f, "hidden");
    p.H = (int)attr_i64(f, "heads");
    p.G = (int)attr_i64(f, "kv_heads");
    p.d = (int)attr_i64(f, "head_dim");
    p.rope_base = attr_f64(f, "rope_base");
    p.S = attr_i64(f, "seq");
    p.C = (int)attr_i64(f, "world_size");
    char method[64], dtype[16];
    attr_str(f, "method", method, sizeof method);
    attr_str(f, "dtype", dtype, sizeof dtype);
    CHECK(strcmp(method, argv[2]) == 0, "method '%s', expected '%s'", method, argv[2]);
    CHECK(p.C == atoi(argv[3]), "world_size %d, expected %s", p.C, argv[3]);
    CHECK(strcmp(dtype, argv[4]) == 0, "dtype '%s', expected '%s'", dtype, argv[4]);
    int64_t peak = attr_i64(f, "peak_bytes"), inter = attr_i64(f, "intermediate_bytes");
    CHECK(peak > 0 && inter > 0 && inter < peak, "peak_bytes %lld, intermediate_bytes %lld", (long long)peak,
          (long long)inter);
    if (fails || p.S <= 0 || p.D <= 0 || p.H <= 0 || p.G <= 0 || p.d <= 0) {
        H5Fclose(f);
        return 1;
    }
    const int64_t S = p.S, D = p.D, HD = (int64_t)p.H * p.d, GD = (int64_t)p.G * p.d;
    float *x = dataset(f, "x", S, D), *dy = dataset(f, "dy", S, D), *wq = dataset(f, "wq", D, HD);
    float *wk = dataset(f, "wk", D, GD), *wv = dataset(f, "wv", D, GD), *wo = dataset(f, "wo", HD, D);
    const char *rn[6] = {"y", "dx", "dwq", "dwk", "dwv", "dwo"};
    const int64_t rr[6] = {S, S, D, D, D, HD}, rc[6] = {D, D, HD, GD, GD, D};
    float *res[6];
    for (int t = 0; t < 6; t++) res[t] = dataset(f, rn[t], rr[t], rc[t]);
    H5Fclose(f);
    int complete = x && dy && wq && wk && wv && wo;
    for (int t = 0; t < 6; t++) complete = complete && res[t];
    if (complete && strcmp(dtype, "bf16") == 0) {
        /* inputs as the method used them: bf16 values (low 16 bits of the fp32 zero) */
        const float *in[6] = {x, dy, wq, wk, wv, wo};
        const int64_t n[6] = {S * D, S * D, D * HD, D * GD, D * GD, HD * D};
        for (int t = 0; t < 6; t++)
            for (int64_t i = 0; i < n[t]; i++) {
                uint32_t u;
                memcpy(&u, &in[t][i], 4);
                if (u & 0xffffu) {
                    CHECK(0, "input %d element %lld (%.9g) is not a bf16 value", t, (long long)i, in[t][i]);
                    break;
                }
            }
    }
    if (complete) {
        double *ref[6];
        for (int t = 0; t < 6; t++) ref[t] = calloc((size_t)(rr[t] * rc[t]), sizeof(double));
        char err[512];
        cpb_ref_in ri = {x, wq, wk, wv, wo, dy};
        cpb_ref_out ro = {ref[0], ref[1], ref[2], ref[3], ref[4], ref[5]};
        int rcode = cpb_reference_layer(&p, &ri, &ro, err, sizeof err);
        CHECK(rcode == CPB_OK, "reference: %s", err);
        const double bar = strcmp(dtype, "fp32") == 0 ? 1e-4 : 3e-2;
        for (int t = 0; rcode == CPB_OK && t < 6; t++) {
            double e = rel_err(res[t], ref[t], rr[t] * rc[t]);
            CHECK(e <= bar, "%s: relative max error %.3e over the bar %.0e", rn[t], e, bar);
        }
        for (int t = 0; t < 6; t++) free(ref[t]);
    }
    free(x);
    free(dy);
    free(wq);
    free(wk);
    free(wv);
    free(wo);
    for (int t = 0; t < 6; t++) free(res[t]);
    if (!fails) printf("verify_dump_check: %s (%s, %d ranks, %s) is complete and matches the reference\n", argv[1],
                       method, p.C, dtype);
    return fails ? 1 : 0;
}
