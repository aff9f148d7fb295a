/* attn_emu.cpp — the cuda backend's attention kernels (generic and tensor-core, forward
 * and backward) run on the CPU emulator of emu.h against a double-precision reference:
 * a check of indexing, masks, offsets, GQA, strides, tiling and synchronisation that
 * needs no GPU.  Build and run (docs/cuda.md):
 *   g++ -std=c++20 -O2 -pthread -D_GNU_SOURCE -Ibackends/cuda -Iruntime \
 *       -I/usr/local/cuda/include backends/cuda/emu/attn_emu.cpp -o /tmp/attn_emu && /tmp/attn_emu
 * Exit 0 when every case is within tolerance. */
#include "emu/emu.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cpb_rand.h"
#include "kern_attn_generic.cuh"
#include "kern_attn_tc.cuh"

struct Case {
    int64_t sq, sk;
    int hq, hk, d, causal;
    int64_t qp, kp;
    int accumulate;
};

/* bf16 storage [rows][heads+pad][d] with the view on heads pad..; 16-byte aligned */
struct Tensor {
    std::vector<uint16_t> bf;
    std::vector<float> f32;
    int64_t rows, heads, d, pad;
    bool is_bf16;
    kview view(bool bf16)
    {
        kview v;
        int64_t hb = heads + pad;
        v.bf16 = bf16;
        v.p = bf16 ? (void *)(bf.data() + pad * d) : (void *)(f32.data() + pad * d);
        v.rows = rows, v.heads = heads, v.dim = d, v.rs = hb * d, v.hs = d;
        return v;
    }
    float at(int64_t r, int64_t h, int64_t c) const
    {
        int64_t o = (r * (heads + pad) + pad + h) * d + c;
        return is_bf16 ? cpb_bf16_to_f32(bf[o]) : f32[o];
    }
};

static Tensor make(int64_t rows, int64_t heads, int64_t d, int64_t pad, bool bf16, uint64_t seed, float scale)
{
    Tensor t;
    t.rows = rows, t.heads = heads, t.d = d, t.pad = pad, t.is_bf16 = bf16;
    int64_t n = rows * (heads + pad) * d + 8;
    t.bf.assign(n, 0);
    t.f32.assign(n, 0.0f);
    for (int64_t i = 0; i < n; i++) {
        float x = scale * cpb_rand_u(seed, i);
        t.bf[i] = cpb_f32_to_bf16(x);
        t.f32[i] = bf16 ? cpb_bf16_to_f32(t.bf[i]) : x;
    }
    return t;
}

static int failures = 0;

static void compare(const char *what, const Case &c, const char *path, const std::vector<double> &ref,
                    const std::vector<float> &got, double tol)
{
    double emax = 0, rmax = 0;
    size_t worst = 0;
    bool bad = false;
    for (size_t i = 0; i < ref.size(); i++) {
        if (std::isinf(ref[i]) || std::isinf(got[i])) {
            if (ref[i] != (double)got[i]) bad = true, worst = i;
            continue;
        }
        if (std::isnan(got[i])) bad = true, worst = i;
        double e = std::fabs(ref[i] - got[i]);
        if (e > emax) emax = e, worst = i;
        rmax = std::max(rmax, std::fabs(ref[i]));
    }
    double rel = emax / (rmax > 0 ? rmax : 1);
    bool ok = !bad && rel <= tol;
    if (!ok) failures++;
    printf("%-4s %-7s %-6s d%-3d sq%-4lld sk%-4lld h%d/%d %s pos %lld/%lld acc%d: rel err %.2e (tol %.0e)%s\n",
           ok ? "ok" : "FAIL", path, what, c.d, (long long)c.sq, (long long)c.sk, c.hq, c.hk, c.causal ? "causal" : "full",
           (long long)c.qp, (long long)c.kp, c.accumulate, rel, tol,
           ok ? "" : (bad ? " (inf/nan mismatch)" : ""));
    if (!ok) printf("     worst element %zu: ref %.7g got %.7g\n", worst, ref[worst], (double)got[worst]);
}

/* reference in double: o, lse, and with dO: dq, dk, dv (delta from the reference o) */
struct Ref {
    std::vector<double> o, lse, dq, dk, dv, delta;
};

static Ref reference(const Case &c, const Tensor &q, const Tensor &k, const Tensor &v, const Tensor &dO, float scale)
{
    Ref r;
    int64_t d = c.d, g = c.hq / c.hk;
    r.o.assign(c.sq * c.hq * d, 0), r.lse.assign(c.hq * c.sq, -INFINITY), r.dq.assign(c.sq * c.hq * d, 0);
    r.dk.assign(c.sk * c.hk * d, 0), r.dv.assign(c.sk * c.hk * d, 0), r.delta.assign(c.hq * c.sq, 0);
    std::vector<double> p(c.sk);
    for (int64_t h = 0; h < c.hq; h++) {
        int64_t kh = h / g;
        for (int64_t i = 0; i < c.sq; i++) {
            double m = -INFINITY;
            for (int64_t j = 0; j < c.sk; j++) {
                bool vis = !c.causal || c.kp + j <= c.qp + i;
                double s = 0;
                for (int64_t x = 0; x < d; x++) s += (double)q.at(i, h, x) * k.at(j, kh, x);
                p[j] = vis ? s * scale : -INFINITY;
                m = std::max(m, p[j]);
            }
            if (m == -INFINITY) continue;
            double l = 0;
            for (int64_t j = 0; j < c.sk; j++) l += p[j] = std::exp(p[j] - m);
            r.lse[h * c.sq + i] = m + std::log(l);
            for (int64_t j = 0; j < c.sk; j++) p[j] /= l;
            double dl = 0;
            for (int64_t x = 0; x < d; x++) {
                double o = 0;
                for (int64_t j = 0; j < c.sk; j++) o += p[j] * v.at(j, kh, x);
                r.o[(i * c.hq + h) * d + x] = o;
                dl += o * dO.at(i, h, x);
            }
            r.delta[h * c.sq + i] = dl;
            for (int64_t j = 0; j < c.sk; j++) {
                if (p[j] == 0) continue;
                double dp = 0;
                for (int64_t x = 0; x < d; x++) dp += (double)dO.at(i, h, x) * v.at(j, kh, x);
                double ds = p[j] * (dp - dl);
                for (int64_t x = 0; x < d; x++) {
                    r.dv[(j * c.hk + kh) * d + x] += p[j] * dO.at(i, h, x);
                    r.dq[(i * c.hq + h) * d + x] += ds * k.at(j, kh, x) * scale;
                    r.dk[(j * c.hk + kh) * d + x] += ds * q.at(i, h, x) * scale;
                }
            }
        }
    }
    return r;
}

static void run_case(const Case &c, bool tc)
{
    const char *path = tc ? "tc" : "generic";
    int64_t d = c.d;
    bool bf = tc; /* tensor cores take bf16; the generic path is checked in fp32 */
    Tensor q = make(c.sq, c.hq, d, 1, bf, 1, 2.0f), k = make(c.sk, c.hk, d, 1, bf, 2, 2.0f);
    Tensor v = make(c.sk, c.hk, d, 1, bf, 3, 1.0f), dO = make(c.sq, c.hq, d, 1, bf, 4, 1.0f);
    float scale = (float)(1.0 / std::sqrt((double)d));
    Ref r = reference(c, q, k, v, dO, scale);
    /* outputs in fp32: the kernels' own error, not bf16 output rounding */
    std::vector<float> o(c.sq * c.hq * d, 7.0f), lse(c.hq * c.sq, 7.0f);
    std::vector<float> dq(c.sq * c.hq * d), dk(c.sk * c.hk * d), dv(c.sk * c.hk * d);
    for (size_t i = 0; i < dq.size(); i++) dq[i] = c.accumulate ? 0.5f : 9.0f;
    for (size_t i = 0; i < dk.size(); i++) dk[i] = dv[i] = c.accumulate ? 0.25f : 9.0f;
    std::vector<float> lse_ref_f(r.lse.begin(), r.lse.end()), delta_f(r.delta.begin(), r.delta.end());
    std::vector<float> dq_acc(c.sq * c.hq * d + 1, 123.0f);
    kattn a;
    memset(&a, 0, sizeof a);
    a.q = q.view(bf), a.k = k.view(bf), a.v = v.view(bf), a.d_o = dO.view(bf);
    auto flat = [](float *p, int64_t rows, int64_t heads, int64_t dim) {
        kview x;
        x.p = p, x.bf16 = 0, x.rows = rows, x.heads = heads, x.dim = dim, x.rs = heads * dim, x.hs = dim;
        return x;
    };
    auto stat = [&](float *p) {
        kview x;
        x.p = p, x.bf16 = 0, x.rows = c.sq, x.heads = c.hq, x.dim = 1, x.rs = 1, x.hs = c.sq;
        return x;
    };
    a.o = flat(o.data(), c.sq, c.hq, d);
    a.lse = stat(lse.data());
    a.causal = c.causal, a.accumulate = c.accumulate, a.q_pos0 = c.qp, a.k_pos0 = c.kp, a.scale = scale;
    a.dq = flat(dq.data(), c.sq, c.hq, d), a.dk = flat(dk.data(), c.sk, c.hk, d), a.dv = flat(dv.data(), c.sk, c.hk, d);
    a.dq_acc = dq_acc.data();

    /* forward */
    if (tc) {
        size_t smem = sizeof(uint16_t) * (size_t)(cpbk_tc::kBQ + 2 * cpbk_tc::kBK) * (d + cpbk_tc::kPad);
        dim3 grid((unsigned)((c.sq + cpbk_tc::kBQ - 1) / cpbk_tc::kBQ), (unsigned)c.hq);
        if (d == 64) emu_launch(grid, dim3(128), smem, [&] { cpbk_tc::fwd_tc_kernel<64>(a); });
        else emu_launch(grid, dim3(128), smem, [&] { cpbk_tc::fwd_tc_kernel<128>(a); });
    } else {
        using namespace cpbk_generic;
        size_t smem = sizeof(float) * (size_t)(2 * kTile * (d + 1) + kRows * d);
        dim3 grid((unsigned)((c.sq + kRows - 1) / kRows), (unsigned)c.hq);
        if (d <= 32) emu_launch(grid, dim3(256), smem, [&] { fwd_kernel<1>(a); });
        else if (d <= 64) emu_launch(grid, dim3(256), smem, [&] { fwd_kernel<2>(a); });
        else emu_launch(grid, dim3(256), smem, [&] { fwd_kernel<4>(a); });
    }
    double tol = tc ? 1.5e-2 : 1e-5;
    compare("o", c, path, r.o, o, tol);
    compare("lse", c, path, r.lse, lse, tc ? 1e-3 : 1e-5);

    /* backward from the reference lse and delta */
    a.lse = stat(lse_ref_f.data());
    a.delta = stat(delta_f.data());
    if (tc) {
        using namespace cpbk_tc;
        std::fill(dq_acc.begin(), dq_acc.end(), 0.0f); /* the launcher's cudaMemsetAsync */
        size_t smem = sizeof(uint16_t) * ((size_t)(2 * kBK + 2 * kBQ) * (d + kPad) + (size_t)kBK * (kBQ + kPad)) +
                      sizeof(float) * 2 * kBQ;
        dim3 grid((unsigned)((c.sk + kBK - 1) / kBK), (unsigned)c.hk);
        if (d == 64) emu_launch(grid, dim3(128), smem, [&] { bwd_tc_kernel<64>(a); });
        else emu_launch(grid, dim3(128), smem, [&] { bwd_tc_kernel<128>(a); });
        emu_launch(dim3(2), dim3(64), 0, [&] { dq_finish_kernel(a); });
    } else {
        using namespace cpbk_generic;
        size_t smem_dq = sizeof(float) * (size_t)(2 * kTile * (d + 1) + 2 * kRows * d);
        size_t smem_kv = smem_dq + sizeof(float) * 2 * kTile;
        dim3 gq((unsigned)((c.sq + kRows - 1) / kRows), (unsigned)c.hq);
        dim3 gk((unsigned)((c.sk + kRows - 1) / kRows), (unsigned)c.hk);
        if (d <= 32) {
            emu_launch(gq, dim3(256), smem_dq, [&] { dq_kernel<1>(a); });
            emu_launch(gk, dim3(256), smem_kv, [&] { dkdv_kernel<1>(a); });
        } else if (d <= 64) {
            emu_launch(gq, dim3(256), smem_dq, [&] { dq_kernel<2>(a); });
            emu_launch(gk, dim3(256), smem_kv, [&] { dkdv_kernel<2>(a); });
        } else {
            emu_launch(gq, dim3(256), smem_dq, [&] { dq_kernel<4>(a); });
            emu_launch(gk, dim3(256), smem_kv, [&] { dkdv_kernel<4>(a); });
        }
    }
    if (c.accumulate) {
        for (auto &x : r.dq) x += 0.5;
        for (auto &x : r.dk) x += 0.25;
        for (auto &x : r.dv) x += 0.25;
    }
    double tg = tc ? 2e-2 : 1e-5;
    compare("dq", c, path, r.dq, dq, tg);
    compare("dk", c, path, r.dk, dk, tg);
    compare("dv", c, path, r.dv, dv, tg);
}

int main(int argc, char **argv)
{
    const Case cases[] = {
        {37, 53, 4, 2, 64, 1, 16, 0, 0},   /* odd sizes, GQA, offset: last row sees all */
        {37, 53, 4, 2, 128, 1, 0, 10, 1},  /* rows that see no key */
        {130, 100, 2, 1, 64, 1, 70, 0, 0}, /* several tiles both ways */
        {70, 90, 2, 2, 128, 0, 0, 0, 0},   /* full (non-causal) */
        {48, 64, 2, 1, 64, 1, 4096, 1024, 1}, /* later ring step: nothing masked */
        {65, 129, 2, 2, 128, 1, 64, 0, 0},
    };
    const Case small_d[] = {
        {33, 17, 6, 3, 32, 0, 0, 0, 1},
        {40, 40, 2, 1, 80, 1, 0, 0, 0},
        {5, 70, 2, 2, 16, 1, 60, 0, 0},
    };
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    int n = quick ? 2 : (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < n; i++) {
        run_case(cases[i], true);
        run_case(cases[i], false);
    }
    for (const Case &c : small_d) run_case(c, false);
    printf("attn_emu: %s (%d failure%s)\n", failures ? "FAILED" : "all passed", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
