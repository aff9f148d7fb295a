/* ops_emu.cpp — the cuda backend's element-wise, RoPE, delta and lse-merge kernels run on
 * the CPU emulator of emu.h against the cpu backend's formulas (backends/cpu), with small
 * grids so the grid-stride loops wrap.  Build and run like attn_emu.cpp:
 *   g++ -std=c++20 -O2 -pthread -D_GNU_SOURCE -Ibackends/cuda -Iruntime \
 *       -I/usr/local/cuda/include backends/cuda/emu/ops_emu.cpp -o /tmp/ops_emu && /tmp/ops_emu */
#include "emu/emu.h"

#include <cstdio>
#include <vector>

#include "cpb_rand.h"
#include "kern_elementwise.cuh"
#include "kern_rope_stats.cuh"

static int failures = 0;

static void check(const char *what, const std::vector<double> &ref, const std::vector<float> &got, double tol)
{
    double emax = 0, rmax = 0;
    size_t worst = 0;
    bool bad = false;
    for (size_t i = 0; i < ref.size(); i++) {
        if (std::isinf(ref[i]) || std::isinf(got[i]) || std::isnan(got[i])) {
            if (!(ref[i] == (double)got[i])) bad = true, worst = i;
            continue;
        }
        double e = std::fabs(ref[i] - got[i]);
        if (e > emax) emax = e, worst = i;
        rmax = std::max(rmax, std::fabs(ref[i]));
    }
    double rel = emax / (rmax > 0 ? rmax : 1);
    bool ok = !bad && rel <= tol;
    failures += !ok;
    printf("%-4s %-44s rel err %.2e (tol %.0e)\n", ok ? "ok" : "FAIL", what, rel, tol);
    if (!ok) printf("     worst element %zu: ref %.9g got %.9g\n", worst, ref[worst], (double)got[worst]);
}

static kview fview(float *p, int64_t rows, int64_t heads, int64_t dim, int64_t rs, int64_t hs)
{
    kview v;
    v.p = p, v.bf16 = 0, v.rows = rows, v.heads = heads, v.dim = dim, v.rs = rs, v.hs = hs;
    return v;
}

static void rope()
{
    using namespace cpbk_rope_stats;
    const int64_t rows = 12, heads = 3, hb = 4, d = 128;
    const double base = 500000.0;
    std::vector<float> x(rows * hb * d);
    for (size_t i = 0; i < x.size(); i++) x[i] = cpb_rand_u(5, (int64_t)i);
    /* segments: near 2^23, small, 5e6 */
    const int64_t pos0[3] = {(1LL << 23) - 5, 3, 5000000}, len[3] = {5, 4, 3};
    kseg_inline inl;
    memset(&inl, 0, sizeof inl);
    int64_t r = 0;
    for (int i = 0; i < 3; i++) {
        inl.t[i] = r;
        inl.t[3 + 1 + i] = pos0[i];
        r += len[i];
    }
    inl.t[3] = r;
    std::vector<double> ref(x.begin(), x.end());
    int64_t row = 0;
    for (int sgi = 0; sgi < 3; sgi++)
        for (int64_t tt = 0; tt < len[sgi]; tt++, row++)
            for (int64_t h = 1; h < hb; h++) /* the view: heads 1..3 */
                for (int64_t i = 0; i < d / 2; i++) {
                    double th = pow(base, -2.0 * (double)i / (double)d), ang = (double)(pos0[sgi] + tt) * th;
                    int64_t o = (row * hb + h) * d + 2 * i;
                    double a = x[o], b = x[o + 1];
                    ref[o] = (float)(a * cos(ang) - b * sin(ang));
                    ref[o + 1] = (float)(a * sin(ang) + b * cos(ang));
                }
    kview v = fview(x.data() + d, rows, heads, d, hb * d, d);
    int64_t n = rows * heads * (d / 2);
    emu_launch(dim3(3), dim3(64), 0, [&] { rope_kernel(v, inl, 3, base, 0, n); });
    check("rope d128 head slice, 3 segments", ref, x, 1e-6);
    /* and back */
    std::vector<double> orig(x.size());
    for (size_t i = 0; i < x.size(); i++) orig[i] = cpb_rand_u(5, (int64_t)i);
    emu_launch(dim3(2), dim3(32), 0, [&] { rope_kernel(v, inl, 3, base, 1, n); });
    check("rope then inverse rope restores x", orig, x, 1e-6);
}

static void merge_delta()
{
    using namespace cpbk_rope_stats;
    const int64_t s = 37, h = 4, d = 64;
    std::vector<float> oa(s * h * d), op(s * h * d), la(h * (s + 3)), lp(h * s), dl(h * s);
    for (size_t i = 0; i < oa.size(); i++) oa[i] = cpb_rand_u(41, (int64_t)i), op[i] = cpb_rand_u(42, (int64_t)i);
    for (size_t i = 0; i < la.size(); i++) {
        float u = cpb_rand_u(43, (int64_t)i);
        la[i] = i % 7 == 0 ? -INFINITY : (i % 5 == 0 ? 95.0f + u : 3.0f * u);
    }
    for (size_t i = 0; i < lp.size(); i++) {
        float u = cpb_rand_u(44, (int64_t)i);
        lp[i] = i % 6 == 1 ? -INFINITY : (i % 4 == 0 ? 96.0f + u : 3.0f * u);
    }
    /* delta first (reads the original o's) */
    std::vector<double> dref(h * s);
    for (int64_t r = 0; r < s; r++)
        for (int64_t hh = 0; hh < h; hh++) {
            double acc = 0;
            for (int64_t c = 0; c < d; c++) acc += (double)oa[(r * h + hh) * d + c] * op[(r * h + hh) * d + c];
            dref[hh * s + r] = acc;
        }
    kview O = fview(oa.data(), s, h, d, h * d, d), P = fview(op.data(), s, h, d, h * d, d);
    kview D = fview(dl.data(), s, h, 1, 1, s);
    emu_launch(dim3(2), dim3(64), 0, [&] { delta_kernel(O, P, D, s * h); });
    check("delta s37 h4 d64", dref, dl, 1e-6);
    /* merge, the cpu backend's formula */
    std::vector<double> oref(oa.begin(), oa.end()), lref(la.begin(), la.end());
    for (int64_t r = 0; r < s; r++)
        for (int64_t hh = 0; hh < h; hh++) {
            float l_acc = la[hh * (s + 3) + 2 + r], l_part = lp[hh * s + r];
            if (l_part == -INFINITY) continue;
            float *a = &oa[(r * h + hh) * d], *pp = &op[(r * h + hh) * d];
            double *ao = &oref[(r * h + hh) * d];
            if (l_acc == -INFINITY) {
                for (int64_t c = 0; c < d; c++) ao[c] = pp[c];
                lref[hh * (s + 3) + 2 + r] = l_part;
                continue;
            }
            float mx = fmaxf(l_acc, l_part), mn = fminf(l_acc, l_part);
            float ln = mx + log1pf(expf(mn - mx));
            float wa = expf(l_acc - ln), wp = expf(l_part - ln);
            for (int64_t c = 0; c < d; c++) ao[c] = a[c] * wa + pp[c] * wp;
            lref[hh * (s + 3) + 2 + r] = ln;
        }
    kview LA = fview(la.data() + 2, s, h, 1, 1, s + 3), LP = fview(lp.data(), s, h, 1, 1, s);
    emu_launch(dim3(2), dim3(96), 0, [&] { merge_kernel(O, LA, P, LP, s * h); });
    check("lse_merge o_acc (-inf, lse > 88)", oref, oa, 1e-6);
    check("lse_merge lse_acc", lref, la, 1e-7);
}

static void elementwise()
{
    using namespace cpbk_elementwise;
    const int64_t rows = 7, heads = 5, dim = 24, n = rows * heads * dim;
    std::vector<float> src(n), dst32(n, 1.0f);
    std::vector<uint16_t> dst16(n, 0);
    for (int64_t i = 0; i < n; i++) src[i] = cpb_rand_u(11, i) * 3.0f;
    /* fp32 head slice (heads 1..3) -> bf16 head slice (heads 2..4) */
    kview s = fview(src.data() + dim, rows, 3, dim, heads * dim, dim);
    kview d16 = s;
    d16.p = dst16.data() + 2 * dim, d16.bf16 = 1;
    emu_launch(dim3(2), dim3(64), 0, [&] { copy_kernel(d16, s); });
    std::vector<double> ref(n, 0.0);
    std::vector<float> got(n);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 0; h < heads; h++)
            for (int64_t c = 0; c < dim; c++) {
                int64_t o = (r * heads + h) * dim + c;
                ref[o] = h >= 2 ? cpb_round_bf16(src[(r * heads + h - 1) * dim + c]) : 0.0;
                got[o] = cpb_bf16_to_f32(dst16[o]);
            }
    check("copy fp32 head slice -> bf16 head slice", ref, got, 0.0);
    /* fill_random over a strided fp32 view, base 1000 */
    kview fr = fview(dst32.data() + dim, rows, 3, dim, heads * dim, dim);
    emu_launch(dim3(3), dim3(32), 0, [&] { fill_random_kernel(fr, 77, 1000, 0.5f); });
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 0; h < heads; h++)
            for (int64_t c = 0; c < dim; c++) {
                int64_t o = (r * heads + h) * dim + c;
                ref[o] = (h >= 1 && h <= 3) ? 0.5f * cpb_rand_u(77, 1000 + (r * 3 + h - 1) * dim + c) : 1.0;
            }
    check("fill_random head slice, base 1000", ref, dst32, 0.0);
    /* axpby with beta 0 over NaN, then with beta */
    std::vector<float> y(n, NAN);
    kview X = fview(src.data(), rows, heads, dim, heads * dim, dim), Y = fview(y.data(), rows, heads, dim, heads * dim, dim);
    emu_launch(dim3(2), dim3(64), 0, [&] { axpby_kernel(2.0f, X, 0.0f, Y); });
    emu_launch(dim3(2), dim3(64), 0, [&] { axpby_kernel(0.5f, X, -1.25f, Y); });
    for (int64_t i = 0; i < n; i++) ref[i] = -1.25f * (2.0f * src[i]) + 0.5f * src[i];
    check("axpby beta 0 over NaN, then beta -1.25", ref, y, 1e-7);
}

/* the sum of squares of a strided bf16 view and of an fp32 one, accumulating, on one block
 * whose threads outnumber the elements of neither (the grid-stride share) */
static void sumsq()
{
    using namespace cpbk_elementwise;
    const int64_t rows = 37, heads = 5, dim = 24, n = rows * heads * dim;
    std::vector<float> src(n);
    std::vector<uint16_t> src16(n);
    for (int64_t i = 0; i < n; i++) {
        src[i] = cpb_rand_u(13, i) * 2.0f;
        src16[i] = cpb_f32_to_bf16(src[i]);
    }
    /* heads 1..3 of every row */
    double ref32 = 0, ref16 = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 1; h < 4; h++)
            for (int64_t c = 0; c < dim; c++) {
                double a = src[(r * heads + h) * dim + c], b = cpb_bf16_to_f32(src16[(r * heads + h) * dim + c]);
                ref32 += a * a;
                ref16 += b * b;
            }
    kview x32 = fview(src.data() + dim, rows, 3, dim, heads * dim, dim);
    kview x16 = x32;
    x16.p = src16.data() + dim, x16.bf16 = 1;
    std::vector<float> out(1, 123.0f);
    emu_launch(dim3(1), dim3(64), 64 * sizeof(double), [&] { sumsq_kernel(x32, out.data(), 0); });
    check("sumsq fp32 head slice (overwrites)", std::vector<double>{ref32}, out, 1e-6);
    emu_launch(dim3(1), dim3(32), 32 * sizeof(double), [&] { sumsq_kernel(x16, out.data(), 1); });
    check("sumsq bf16 head slice, accumulated", std::vector<double>{ref32 + ref16}, out, 1e-6);
}

int main()
{
    rope();
    merge_delta();
    elementwise();
    sumsq();
    printf("ops_emu: %s (%d failure%s)\n", failures ? "FAILED" : "all passed", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
