/* kern_attn_generic.cuh — attention forward and backward for any head dim up to 256, any
 * sequence lengths, causal masks with global offsets, GQA, strided bf16/fp32 views.
 *
 * One warp per query row (forward, dq) or per key row (dk, dv); a block of kRows warps
 * shares 32-key (or 32-query) tiles staged in shared memory as fp32.  Softmax statistics
 * are fp32 and online (FlashAttention style: running max and sum, no S x S matrix).
 * This is the correctness path every shape can take; cuda_ops.c picks the tensor-core
 * kernels where they apply.
 *
 * Backward follows FlashAttention-2: P = exp(s*scale - lse), dV += P^T dO,
 * dP = dO V^T, dS = P * (dP - delta), dQ += dS K * scale, dK += dS^T Q * scale.
 * dq is computed per query row and dk, dv per key row (looping over the g query heads of
 * the key's kv head), so every output element has exactly one writer: no atomics. */
#ifndef CPB_KERN_ATTN_GENERIC_CUH
#define CPB_KERN_ATTN_GENERIC_CUH

#include <math.h>

#include "cuda_dev.cuh"

namespace cpbk_generic {


const int kRows = 8;  /* warps (rows) per block */
const int kTile = 32; /* keys (forward, dq) or queries (dk, dv) per shared tile */

/* number of keys query row r sees: keys j with k_pos0 + j <= q_pos0 + r */
__device__ __forceinline__ int64_t visible_keys(const kattn &a, int64_t r)
{
    int64_t sk = a.k.rows;
    if (!a.causal) return sk;
    int64_t v = a.q_pos0 - a.k_pos0 + r + 1;
    return v < 0 ? 0 : (v > sk ? sk : v);
}

/* first query row that sees key j */
__device__ __forceinline__ int64_t first_query(const kattn &a, int64_t j)
{
    if (!a.causal) return 0;
    int64_t f = j - (a.q_pos0 - a.k_pos0);
    return f < 0 ? 0 : f;
}

/* stage rows [r0, r0+kTile) of head h of two views into padded fp32 tiles (zeros past
 * `rows`) */
__device__ void load_tiles(const kview &x, const kview &y, int64_t r0, int64_t rows, int64_t h, int d,
                           float *xs, float *ys)
{
    int ld = d + 1;
    for (int idx = threadIdx.x; idx < kTile * d; idx += blockDim.x) {
        int rr = idx / d, c = idx % d;
        int64_t r = r0 + rr;
        float xv = 0.0f, yv = 0.0f;
        if (r < rows) {
            xv = kv_get(x, kv_off(x, r, h, c));
            yv = kv_get(y, kv_off(y, r, h, c));
        }
        xs[rr * ld + c] = xv;
        ys[rr * ld + c] = yv;
    }
}

template <int NT>
__global__ void __launch_bounds__(kRows * 32) fwd_kernel(kattn a)
{
    CPBK_DYN_SMEM(float, sm);
    const int d = (int)a.q.dim, ld = d + 1;
    float *Ks = sm, *Vs = Ks + kTile * ld, *Qs = Vs + kTile * ld;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t h = blockIdx.y, kh = h / (a.q.heads / a.k.heads);
    const int64_t sq = a.q.rows, sk = a.k.rows;
    const int64_t row0 = (int64_t)blockIdx.x * kRows, i = row0 + warp;
    const bool row_ok = i < sq;
    const int64_t last = row0 + kRows - 1 < sq - 1 ? row0 + kRows - 1 : sq - 1;
    const int64_t jend = visible_keys(a, last); /* the block's last row sees the most */
    const int64_t myvis = row_ok ? visible_keys(a, i) : 0;
    const float scale = a.scale;

    if (row_ok)
        for (int c = lane; c < d; c += 32) Qs[warp * d + c] = kv_get(a.q, kv_off(a.q, i, h, c));
    float o[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) o[t] = 0.0f;
    float m = -INFINITY, l = 0.0f;

    for (int64_t t0 = 0; t0 < jend; t0 += kTile) {
        __syncthreads(); /* the previous tile is consumed (and Qs is visible) */
        load_tiles(a.k, a.v, t0, sk, kh, d, Ks, Vs);
        __syncthreads();
        if (!row_ok || t0 >= myvis) continue; /* warp-uniform */
        int64_t j = t0 + lane;
        bool ok = j < myvis;
        float s = -INFINITY;
        if (ok) {
            float acc = 0.0f;
            for (int c = 0; c < d; c++) acc += Qs[warp * d + c] * Ks[lane * ld + c];
            s = acc * scale;
        }
        float mn = fmaxf(m, warp_max(s)); /* finite: lane 0's key is visible */
        float corr = m == -INFINITY ? 0.0f : expf(m - mn);
        float p = ok ? expf(s - mn) : 0.0f;
        l = l * corr + warp_sum(p);
        m = mn;
        int jmax = myvis - t0 < kTile ? (int)(myvis - t0) : kTile;
#pragma unroll
        for (int t = 0; t < NT; t++) o[t] *= corr;
        for (int jj = 0; jj < jmax; jj++) {
            float pj = __shfl_sync(0xffffffffu, p, jj);
#pragma unroll
            for (int t = 0; t < NT; t++) {
                int c = lane + 32 * t;
                if (c < d) o[t] += pj * Vs[jj * ld + c];
            }
        }
    }
    if (!row_ok) return;
    float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
    for (int t = 0; t < NT; t++) {
        int c = lane + 32 * t;
        if (c < d) kv_put(a.o, kv_off(a.o, i, h, c), o[t] * inv);
    }
    if (lane == 0) kv_put(a.lse, kv_off(a.lse, i, h, 0), l > 0.0f ? m + logf(l) : -INFINITY);
}

/* dq for one query row per warp */
template <int NT>
__global__ void __launch_bounds__(kRows * 32) dq_kernel(kattn a)
{
    CPBK_DYN_SMEM(float, sm);
    const int d = (int)a.q.dim, ld = d + 1;
    float *Ks = sm, *Vs = Ks + kTile * ld, *Qs = Vs + kTile * ld, *dOs = Qs + kRows * d;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t h = blockIdx.y, kh = h / (a.q.heads / a.k.heads);
    const int64_t sq = a.q.rows, sk = a.k.rows;
    const int64_t row0 = (int64_t)blockIdx.x * kRows, i = row0 + warp;
    const bool row_ok = i < sq;
    const int64_t last = row0 + kRows - 1 < sq - 1 ? row0 + kRows - 1 : sq - 1;
    const int64_t jend = visible_keys(a, last);
    const int64_t myvis = row_ok ? visible_keys(a, i) : 0;
    const float scale = a.scale;
    float lse = 0.0f, delta = 0.0f;
    if (row_ok) {
        for (int c = lane; c < d; c += 32) {
            Qs[warp * d + c] = kv_get(a.q, kv_off(a.q, i, h, c));
            dOs[warp * d + c] = kv_get(a.d_o, kv_off(a.d_o, i, h, c));
        }
        lse = kv_get(a.lse, kv_off(a.lse, i, h, 0));
        delta = kv_get(a.delta, kv_off(a.delta, i, h, 0));
    }
    float dq[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) dq[t] = 0.0f;

    for (int64_t t0 = 0; t0 < jend; t0 += kTile) {
        __syncthreads();
        load_tiles(a.k, a.v, t0, sk, kh, d, Ks, Vs);
        __syncthreads();
        if (!row_ok || t0 >= myvis) continue;
        int64_t j = t0 + lane;
        float ds = 0.0f;
        if (j < myvis && lse != -INFINITY) {
            float s = 0.0f, dp = 0.0f;
            for (int c = 0; c < d; c++) {
                s += Qs[warp * d + c] * Ks[lane * ld + c];
                dp += dOs[warp * d + c] * Vs[lane * ld + c];
            }
            float p = expf(s * scale - lse);
            ds = p * (dp - delta);
        }
        int jmax = myvis - t0 < kTile ? (int)(myvis - t0) : kTile;
        for (int jj = 0; jj < jmax; jj++) {
            float dsj = __shfl_sync(0xffffffffu, ds, jj);
#pragma unroll
            for (int t = 0; t < NT; t++) {
                int c = lane + 32 * t;
                if (c < d) dq[t] += dsj * Ks[jj * ld + c];
            }
        }
    }
    if (!row_ok) return;
#pragma unroll
    for (int t = 0; t < NT; t++) {
        int c = lane + 32 * t;
        if (c >= d) continue;
        int64_t off = kv_off(a.dq, i, h, c);
        float r = dq[t] * scale;
        if (a.accumulate) r += kv_get(a.dq, off);
        kv_put(a.dq, off, r);
    }
}

/* dk, dv for one key row per warp, summed over the g query heads that share its kv head */
template <int NT>
__global__ void __launch_bounds__(kRows * 32) dkdv_kernel(kattn a)
{
    CPBK_DYN_SMEM(float, sm);
    const int d = (int)a.q.dim, ld = d + 1;
    float *Qs = sm, *dOs = Qs + kTile * ld, *Ks = dOs + kTile * ld, *Vs = Ks + kRows * d;
    float *Ls = Vs + kRows * d, *Ds = Ls + kTile;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t kh = blockIdx.y, g = a.q.heads / a.k.heads;
    const int64_t sq = a.q.rows, sk = a.k.rows;
    const int64_t key0 = (int64_t)blockIdx.x * kRows, j = key0 + warp;
    const bool key_ok = j < sk;
    const int64_t istart = first_query(a, key0); /* the block's first key is seen first */
    const int64_t myfirst = first_query(a, j);
    const float scale = a.scale;
    if (key_ok)
        for (int c = lane; c < d; c += 32) {
            Ks[warp * d + c] = kv_get(a.k, kv_off(a.k, j, kh, c));
            Vs[warp * d + c] = kv_get(a.v, kv_off(a.v, j, kh, c));
        }
    float dk[NT], dv[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) dk[t] = dv[t] = 0.0f;

    for (int64_t h = kh * g; h < (kh + 1) * g; h++) {
        for (int64_t i0 = istart; i0 < sq; i0 += kTile) {
            __syncthreads();
            load_tiles(a.q, a.d_o, i0, sq, h, d, Qs, dOs);
            if (threadIdx.x < kTile) {
                int64_t r = i0 + threadIdx.x;
                Ls[threadIdx.x] = r < sq ? kv_get(a.lse, kv_off(a.lse, r, h, 0)) : -INFINITY;
                Ds[threadIdx.x] = r < sq ? kv_get(a.delta, kv_off(a.delta, r, h, 0)) : 0.0f;
            }
            __syncthreads();
            if (!key_ok) continue;
            int64_t i = i0 + lane;
            float p = 0.0f, ds = 0.0f;
            if (i < sq && i >= myfirst && Ls[lane] != -INFINITY) {
                float s = 0.0f, dp = 0.0f;
                for (int c = 0; c < d; c++) {
                    s += Qs[lane * ld + c] * Ks[warp * d + c];
                    dp += dOs[lane * ld + c] * Vs[warp * d + c];
                }
                p = expf(s * scale - Ls[lane]);
                ds = p * (dp - Ds[lane]);
            }
            int imax = sq - i0 < kTile ? (int)(sq - i0) : kTile;
            for (int ii = 0; ii < imax; ii++) {
                float pi = __shfl_sync(0xffffffffu, p, ii);
                float dsi = __shfl_sync(0xffffffffu, ds, ii);
#pragma unroll
                for (int t = 0; t < NT; t++) {
                    int c = lane + 32 * t;
                    if (c < d) {
                        dv[t] += pi * dOs[ii * ld + c];
                        dk[t] += dsi * Qs[ii * ld + c];
                    }
                }
            }
        }
    }
    if (!key_ok) return;
#pragma unroll
    for (int t = 0; t < NT; t++) {
        int c = lane + 32 * t;
        if (c >= d) continue;
        int64_t ok = kv_off(a.dk, j, kh, c), ov = kv_off(a.dv, j, kh, c);
        float rk = dk[t] * scale, rv = dv[t];
        if (a.accumulate) {
            rk += kv_get(a.dk, ok);
            rv += kv_get(a.dv, ov);
        }
        kv_put(a.dk, ok, rk);
        kv_put(a.dv, ov, rv);
    }
}

} // namespace cpbk_generic

#endif
