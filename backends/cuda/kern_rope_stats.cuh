/* kern_rope_stats.cuh — RoPE forward/backward (fp64 angles), the attention delta
 * rowsum(dO * o), and the log-sum-exp merge of partial attention results.  Each mirrors
 * the cpu backend's arithmetic (backends/cpu) so the self-test can hold them to fp32
 * tolerances. */
#ifndef CPB_KERN_ROPE_STATS_CUH
#define CPB_KERN_ROPE_STATS_CUH

#include <math.h>

#include "cuda_dev.cuh"

namespace cpbk_rope_stats {


const int kThreads = 256;

/* Llama interleaved pairs: (x[2i], x[2i+1]) rotated by pos * base^(-2i/d), in fp64 as the
 * cpu backend does (an fp32 angle near position 2^23 is off by up to half a radian) */
__global__ void rope_kernel(kview x, kseg_inline segs, int nseg, double base, int inverse, int64_t n)
{
    const int64_t *start = segs.t, *pos0 = segs.t + nseg + 1;
    int64_t half = x.dim / 2;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < n;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = t % half, rh = t / half;
        int64_t h = rh % x.heads, r = rh / x.heads;
        /* segment of row r: the last start <= r */
        int lo = 0, hi = nseg - 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) / 2;
            if (start[mid] <= r) lo = mid;
            else hi = mid - 1;
        }
        double pos = (double)(pos0[lo] + (r - start[lo]));
        double theta = pow(base, -2.0 * (double)i / (double)x.dim);
        double sn, cs;
        sincos(pos * theta, &sn, &cs);
        if (inverse) sn = -sn;
        int64_t o = kv_off(x, r, h, 2 * i);
        double a = kv_get(x, o), b = kv_get(x, o + 1);
        kv_put(x, o, (float)(a * cs - b * sn));
        kv_put(x, o + 1, (float)(a * sn + b * cs));
    }
}

/* one warp per (row, head) */
__global__ void delta_kernel(kview o, kview d_o, kview delta, int64_t items)
{
    int lane = threadIdx.x & 31;
    int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
    int64_t nwarps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t it = warp; it < items; it += nwarps) {
        int64_t h = it % o.heads, r = it / o.heads;
        float acc = 0.0f;
        for (int64_t c = lane; c < o.dim; c += 32)
            acc += kv_get(d_o, kv_off(d_o, r, h, c)) * kv_get(o, kv_off(o, r, h, c));
        acc = warp_sum(acc);
        if (lane == 0) kv_put(delta, kv_off(delta, r, h, 0), acc);
    }
}

/* lse' = max + log1p(exp(min - max)), never exp of an lse itself; a -inf partial adds
 * nothing, a -inf accumulator takes the partial as it is (as the cpu backend does) */
__global__ void merge_kernel(kview oa, kview la, kview op, kview lp, int64_t items)
{
    int lane = threadIdx.x & 31;
    int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
    int64_t nwarps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t it = warp; it < items; it += nwarps) {
        int64_t h = it % oa.heads, r = it / oa.heads;
        float l_acc = kv_get(la, kv_off(la, r, h, 0)), l_part = kv_get(lp, kv_off(lp, r, h, 0));
        /* every lane has read lse_acc before lane 0 rewrites it below (lanes are scheduled
         * independently: a late reader would see the new value and take the other branch) */
        __syncwarp();
        if (l_part == -INFINITY) continue;
        if (l_acc == -INFINITY) {
            for (int64_t c = lane; c < oa.dim; c += 32)
                kv_put(oa, kv_off(oa, r, h, c), kv_get(op, kv_off(op, r, h, c)));
            if (lane == 0) kv_put(la, kv_off(la, r, h, 0), l_part);
            continue;
        }
        float mx = fmaxf(l_acc, l_part), mn = fminf(l_acc, l_part);
        float l_new = mx + log1pf(expf(mn - mx));
        float wa = expf(l_acc - l_new), wp = expf(l_part - l_new);
        for (int64_t c = lane; c < oa.dim; c += 32) {
            int64_t oo = kv_off(oa, r, h, c);
            kv_put(oa, oo, kv_get(oa, oo) * wa + kv_get(op, kv_off(op, r, h, c)) * wp);
        }
        if (lane == 0) kv_put(la, kv_off(la, r, h, 0), l_new);
    }
}

} // namespace cpbk_rope_stats

#endif
