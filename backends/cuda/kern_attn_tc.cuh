/* kern_attn_tc.cuh — attention forward and backward on bf16 tensor cores, FlashAttention-2 style, for
 * head dim 64 and 128 with bf16 q, k, v whose rows are 16-byte aligned.
 *
 * A block of 4 warps owns 64 query rows of one head (16 per warp) and walks the key axis
 * in tiles of 64 keys staged in shared memory.  Per tile each warp computes S = Q K^T with
 * mma.sync m16n8k16 (bf16 in, fp32 accumulate), masks (causal with the global offsets,
 * and keys past sk), keeps the online softmax statistics in fp32 registers (log2 domain),
 * turns P into bf16 A-fragments directly from the S accumulators (the FA2 register reuse)
 * and accumulates O += P V with mma.sync.  lse = (m + log2 l) * ln 2.
 *
 * Fragment layouts (PTX ISA, mma.m16n8k16 with .bf16): with g = lane / 4, t = lane % 4,
 *   A (16x16, row):  a0 = (g, 2t..2t+1)  a1 = (g+8, 2t..)  a2 = (g, 2t+8..)  a3 = (g+8, 2t+8..)
 *   B (16x8, col):   b0 = (k 2t..2t+1, n g)  b1 = (k 2t+8..2t+9, n g)
 *   C (16x8, f32):   c0 = (g, 2t)  c1 = (g, 2t+1)  c2 = (g+8, 2t)  c3 = (g+8, 2t+1)
 * and in a packed pair the lower-indexed element sits in the low 16 bits. */
#ifndef CPB_KERN_ATTN_TC_CUH
#define CPB_KERN_ATTN_TC_CUH

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda_dev.cuh"

namespace cpbk_tc {


const int kWarps = 4;
const int kBQ = 16 * kWarps; /* query rows per block */
const int kBK = 64;          /* keys per tile */
const int kPad = 8;          /* bf16 elements of row padding: conflict-free fragment loads */

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi); /* .x = lo in the low half */
    uint32_t r;
    memcpy(&r, &v, sizeof r); /* a register move; no type-punned pointer */
    return r;
}

__device__ __forceinline__ uint32_t pack_raw(uint16_t lo, uint16_t hi)
{
    return (uint32_t)lo | ((uint32_t)hi << 16);
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#elif defined(__CUDA_ARCH__)
#error "bf16 mma.sync needs sm_80 or newer: build with CMAKE_CUDA_ARCHITECTURES 80 and up"
#elif defined(CPB_CUDA_EMU)
    cpb_emu_mma_bf16(c, a, b0, b1);
#else
    (void)c, (void)a, (void)b0, (void)b1;
#endif
}

/* stage rows [r0, r0 + rows_tile) of head h of a bf16 view into smem (row stride D+kPad),
 * zeros past `rows`; 16-byte vectors (alignment checked by cpbk_attn_tc_applies) */
template <int D>
__device__ __forceinline__ void stage(const kview &x, int64_t r0, int rows_tile, int64_t rows, int64_t h, uint16_t *dst)
{
    const int vec_per_row = D / 8;
    const uint16_t *base = (const uint16_t *)x.p;
    for (int idx = threadIdx.x; idx < rows_tile * vec_per_row; idx += blockDim.x) {
        int rr = idx / vec_per_row, cv = idx % vec_per_row;
        int64_t r = r0 + rr;
        uint4 val = make_uint4(0u, 0u, 0u, 0u);
        if (r < rows) val = *reinterpret_cast<const uint4 *>(base + r * x.rs + h * x.hs + cv * 8);
        *reinterpret_cast<uint4 *>(dst + rr * (D + kPad) + cv * 8) = val;
    }
}

__device__ __forceinline__ int64_t visible(const kattn &a, int64_t r)
{
    int64_t sk = a.k.rows;
    if (!a.causal) return sk;
    int64_t v = a.q_pos0 - a.k_pos0 + r + 1;
    return v < 0 ? 0 : (v > sk ? sk : v);
}

template <int D>
__global__ void __launch_bounds__(kWarps * 32) fwd_tc_kernel(kattn a)
{
    CPBK_DYN_SMEM(uint16_t, smem);
    const int LD = D + kPad;
    uint16_t *Qs = smem, *Ks = Qs + kBQ * LD, *Vs = Ks + kBK * LD;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int64_t h = blockIdx.y, kh = h / (a.q.heads / a.k.heads);
    const int64_t sq = a.q.rows, sk = a.k.rows;
    const int64_t row0 = (int64_t)blockIdx.x * kBQ;
    const int64_t wrow0 = row0 + warp * 16; /* this warp's first row */
    const int64_t off = a.q_pos0 - a.k_pos0;
    const int64_t blast = row0 + kBQ - 1 < sq - 1 ? row0 + kBQ - 1 : sq - 1;
    const int64_t jend = visible(a, blast);
    const int64_t wlast = wrow0 + 15 < sq - 1 ? wrow0 + 15 : sq - 1;
    const int64_t wend = wrow0 < sq ? visible(a, wlast) : 0; /* keys this warp needs */
    const float sl2 = a.scale * 1.4426950408889634f;     /* scores in the log2 domain */

    stage<D>(a.q, row0, kBQ, sq, h, Qs);
    __syncthreads();
    /* Q fragments of the warp's 16 rows, all D/16 k-steps */
    uint32_t qf[D / 16][4];
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        const uint16_t *q0 = Qs + (warp * 16 + g) * LD + kk * 16 + 2 * t;
        const uint16_t *q8 = q0 + 8 * LD;
        qf[kk][0] = *reinterpret_cast<const uint32_t *>(q0);
        qf[kk][1] = *reinterpret_cast<const uint32_t *>(q8);
        qf[kk][2] = *reinterpret_cast<const uint32_t *>(q0 + 8);
        qf[kk][3] = *reinterpret_cast<const uint32_t *>(q8 + 8);
    }
    float oacc[D / 8][4];
#pragma unroll
    for (int n = 0; n < D / 8; n++) oacc[n][0] = oacc[n][1] = oacc[n][2] = oacc[n][3] = 0.0f;
    float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.0f, 0.0f};
    const int64_t ri[2] = {wrow0 + g, wrow0 + g + 8};

    for (int64_t t0 = 0; t0 < jend; t0 += kBK) {
        __syncthreads(); /* previous tile consumed */
        stage<D>(a.k, t0, kBK, sk, kh, Ks);
        stage<D>(a.v, t0, kBK, sk, kh, Vs);
        __syncthreads();
        if (t0 >= wend) continue; /* warp-uniform: nothing visible to this warp's rows */

        float s[kBK / 8][4];
#pragma unroll
        for (int n = 0; n < kBK / 8; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
            for (int n = 0; n < kBK / 8; n++) {
                const uint16_t *kp = Ks + (n * 8 + g) * LD + kk * 16 + 2 * t;
                mma_bf16(s[n], qf[kk], *reinterpret_cast<const uint32_t *>(kp),
                         *reinterpret_cast<const uint32_t *>(kp + 8));
            }
        /* scale, mask, row maxima (rows g and g+8 of the warp) */
        const bool need_mask = t0 + kBK > sk || (a.causal && t0 + kBK - 1 > wrow0 + off);
        float mt[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int n = 0; n < kBK / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float v = s[n][e] * sl2;
                if (need_mask) {
                    int64_t j = t0 + n * 8 + 2 * t + (e & 1);
                    int64_t i = ri[e >> 1];
                    if (j >= sk || (a.causal && j > i + off)) v = -INFINITY;
                }
                s[n][e] = v;
                mt[e >> 1] = fmaxf(mt[e >> 1], v);
            }
        float corr[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mt[r] = fmaxf(mt[r], __shfl_xor_sync(0xffffffffu, mt[r], 1));
            mt[r] = fmaxf(mt[r], __shfl_xor_sync(0xffffffffu, mt[r], 2));
            float mn = fmaxf(m_r[r], mt[r]);
            /* a row with nothing visible yet keeps m = -inf: use 0 as the reference so
             * exp2(-inf - 0) = 0 and no inf - inf arises */
            float mref = mn == -INFINITY ? 0.0f : mn;
            corr[r] = exp2f(m_r[r] - mref);
            m_r[r] = mn;
            l_r[r] *= corr[r];
        }
#pragma unroll
        for (int n = 0; n < D / 8; n++) {
            oacc[n][0] *= corr[0];
            oacc[n][1] *= corr[0];
            oacc[n][2] *= corr[1];
            oacc[n][3] *= corr[1];
        }
        /* P = exp2(s - m) as bf16 A-fragments; l from the same rounded values would bias
         * nothing measurable, the fp32 values are summed */
        uint32_t pf[kBK / 16][4];
#pragma unroll
        for (int n = 0; n < kBK / 8; n++) {
            float p[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float mref = m_r[e >> 1] == -INFINITY ? 0.0f : m_r[e >> 1];
                p[e] = exp2f(s[n][e] - mref);
                l_r[e >> 1] += p[e];
            }
            int kk = n >> 1, hi = n & 1;
            pf[kk][hi ? 2 : 0] = pack_bf16(p[0], p[1]);
            pf[kk][hi ? 3 : 1] = pack_bf16(p[2], p[3]);
        }
        /* O += P V: B-fragment (keys 2t, 2t+1 ; dim g) gathered from two V rows */
#pragma unroll
        for (int kk = 0; kk < kBK / 16; kk++) {
            const uint16_t *v0 = Vs + (kk * 16 + 2 * t) * LD + g;
#pragma unroll
            for (int n = 0; n < D / 8; n++) {
                const uint16_t *vp = v0 + n * 8;
                uint32_t b0 = pack_raw(vp[0], vp[LD]);
                uint32_t b1 = pack_raw(vp[8 * LD], vp[9 * LD]);
                mma_bf16(oacc[n], pf[kk], b0, b1);
            }
        }
    }
    /* finish: l summed over the quad, o = acc / l, lse in natural log */
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l_r[r] += __shfl_xor_sync(0xffffffffu, l_r[r], 1);
        l_r[r] += __shfl_xor_sync(0xffffffffu, l_r[r], 2);
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        int64_t i = ri[r];
        if (i >= sq) continue;
        float inv = l_r[r] > 0.0f ? 1.0f / l_r[r] : 0.0f;
#pragma unroll
        for (int n = 0; n < D / 8; n++) {
            int64_t o0 = kv_off(a.o, i, h, n * 8 + 2 * t);
            kv_put(a.o, o0, oacc[n][2 * r] * inv);
            kv_put(a.o, o0 + 1, oacc[n][2 * r + 1] * inv);
        }
        if (t == 0)
            kv_put(a.lse, kv_off(a.lse, i, h, 0),
                   l_r[r] > 0.0f ? (m_r[r] + log2f(l_r[r])) * 0.6931471805599453f : -INFINITY);
    }
}

/* ---------------------------------------------------------------- backward
 *
 * A block of 4 warps owns 64 keys of one kv head (16 per warp) and walks the query axis
 * in tiles of 64 rows, for each of the g query heads that share the kv head, so dK and dV
 * accumulate in registers with one writer per element.  Per tile each warp computes, for
 * its 16 keys, the transposed products (rows = keys, so P^T and dS^T come out of the
 * accumulators already laid out as A-fragments for the next products):
 *   S^T = K Q^T,  P^T = exp2(S^T * scale*log2e - lse*log2e)   (masked to 0)
 *   dP^T = V dO^T,  dS^T = P^T * (dP^T - delta)
 *   dV += P^T dO,   dK += dS^T Q
 * dS^T goes to shared memory, and each warp then adds dQ[16 rows] += dS K for the whole
 * tile into the fp32 workspace with atomics (FlashAttention-2's dq accumulator); a last
 * kernel applies the scale and writes dq. */
template <int D>
__global__ void __launch_bounds__(kWarps * 32) bwd_tc_kernel(kattn a)
{
    CPBK_DYN_SMEM(uint16_t, smem);
    const int LD = D + kPad, LDS = kBQ + kPad;
    uint16_t *Ks = smem, *Vs = Ks + kBK * LD, *Qs = Vs + kBK * LD, *dOs = Qs + kBQ * LD, *dSs = dOs + kBQ * LD;
    float *Ls = reinterpret_cast<float *>(dSs + kBK * LDS), *Ds = Ls + kBQ;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int64_t kh = blockIdx.y, grp = a.q.heads / a.k.heads;
    const int64_t sq = a.q.rows, sk = a.k.rows, hq = a.q.heads;
    const int64_t k0 = (int64_t)blockIdx.x * kBK, kw0 = k0 + warp * 16;
    const int64_t off = a.q_pos0 - a.k_pos0;
    const float sl2 = a.scale * 1.4426950408889634f;
    /* first query row that sees key j: j - off (causal) */
    int64_t istart = a.causal ? k0 - off : 0;
    if (istart < 0) istart = 0;
    const int64_t wfirst = a.causal ? kw0 - off : 0; /* this warp's first visible row */
    const int64_t jr[2] = {kw0 + g, kw0 + g + 8};

    stage<D>(a.k, k0, kBK, sk, kh, Ks);
    stage<D>(a.v, k0, kBK, sk, kh, Vs);

    float dk[D / 8][4], dv[D / 8][4];
#pragma unroll
    for (int n = 0; n < D / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) dk[n][e] = dv[n][e] = 0.0f;

    for (int64_t h = kh * grp; h < (kh + 1) * grp; h++) {
        for (int64_t i0 = istart; i0 < sq; i0 += kBQ) {
            __syncthreads(); /* previous tile (and its dS) consumed */
            stage<D>(a.q, i0, kBQ, sq, h, Qs);
            stage<D>(a.d_o, i0, kBQ, sq, h, dOs);
            if (threadIdx.x < kBQ) {
                int64_t i = i0 + threadIdx.x;
                float l = i < sq ? kv_get(a.lse, kv_off(a.lse, i, h, 0)) : -INFINITY;
                Ls[threadIdx.x] = l * 1.4426950408889634f; /* -inf stays -inf */
                Ds[threadIdx.x] = i < sq ? kv_get(a.delta, kv_off(a.delta, i, h, 0)) : 0.0f;
            }
            __syncthreads();
            const bool active = kw0 < sk && i0 + kBQ - 1 >= wfirst; /* warp-uniform */
            if (active) {
                float sp[kBQ / 8][4], dd[kBQ / 8][4];
#pragma unroll
                for (int n = 0; n < kBQ / 8; n++)
#pragma unroll
                    for (int e = 0; e < 4; e++) sp[n][e] = dd[n][e] = 0.0f;
                /* S^T = K Q^T and dP^T = V dO^T: A from K/V rows (contiguous pairs), B from
                 * Q/dO rows (contiguous pairs: B[k = dim][n = query]) */
#pragma unroll
                for (int kk = 0; kk < D / 16; kk++) {
                    uint32_t ka[4], va[4];
                    const uint16_t *kp = Ks + (warp * 16 + g) * LD + kk * 16 + 2 * t;
                    const uint16_t *vp = Vs + (warp * 16 + g) * LD + kk * 16 + 2 * t;
                    ka[0] = *reinterpret_cast<const uint32_t *>(kp);
                    ka[1] = *reinterpret_cast<const uint32_t *>(kp + 8 * LD);
                    ka[2] = *reinterpret_cast<const uint32_t *>(kp + 8);
                    ka[3] = *reinterpret_cast<const uint32_t *>(kp + 8 * LD + 8);
                    va[0] = *reinterpret_cast<const uint32_t *>(vp);
                    va[1] = *reinterpret_cast<const uint32_t *>(vp + 8 * LD);
                    va[2] = *reinterpret_cast<const uint32_t *>(vp + 8);
                    va[3] = *reinterpret_cast<const uint32_t *>(vp + 8 * LD + 8);
#pragma unroll
                    for (int n = 0; n < kBQ / 8; n++) {
                        const uint16_t *qp = Qs + (n * 8 + g) * LD + kk * 16 + 2 * t;
                        const uint16_t *op = dOs + (n * 8 + g) * LD + kk * 16 + 2 * t;
                        mma_bf16(sp[n], ka, *reinterpret_cast<const uint32_t *>(qp),
                                 *reinterpret_cast<const uint32_t *>(qp + 8));
                        mma_bf16(dd[n], va, *reinterpret_cast<const uint32_t *>(op),
                                 *reinterpret_cast<const uint32_t *>(op + 8));
                    }
                }
                /* P^T and dS^T; C layout: e -> (key g + 8*(e>>1), query 2t + (e&1)) */
#pragma unroll
                for (int n = 0; n < kBQ / 8; n++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        int qc = n * 8 + 2 * t + (e & 1);
                        int64_t i = i0 + qc, j = jr[e >> 1];
                        float l2 = Ls[qc];
                        bool vis = i < sq && j < sk && l2 != -INFINITY && (!a.causal || j <= i + off);
                        float p = vis ? exp2f(sp[n][e] * sl2 - l2) : 0.0f;
                        sp[n][e] = p;
                        dd[n][e] = p * (dd[n][e] - Ds[qc]);
                    }
                /* dV += P^T dO and dK += dS^T Q: A from the accumulators (k = queries),
                 * B[k = query][n = dim] gathered from two rows */
#pragma unroll
                for (int kq = 0; kq < kBQ / 16; kq++) {
                    uint32_t pa[4], sa[4];
                    pa[0] = pack_bf16(sp[2 * kq][0], sp[2 * kq][1]);
                    pa[1] = pack_bf16(sp[2 * kq][2], sp[2 * kq][3]);
                    pa[2] = pack_bf16(sp[2 * kq + 1][0], sp[2 * kq + 1][1]);
                    pa[3] = pack_bf16(sp[2 * kq + 1][2], sp[2 * kq + 1][3]);
                    sa[0] = pack_bf16(dd[2 * kq][0], dd[2 * kq][1]);
                    sa[1] = pack_bf16(dd[2 * kq][2], dd[2 * kq][3]);
                    sa[2] = pack_bf16(dd[2 * kq + 1][0], dd[2 * kq + 1][1]);
                    sa[3] = pack_bf16(dd[2 * kq + 1][2], dd[2 * kq + 1][3]);
                    const uint16_t *o0 = dOs + (kq * 16 + 2 * t) * LD + g;
                    const uint16_t *q0 = Qs + (kq * 16 + 2 * t) * LD + g;
#pragma unroll
                    for (int n = 0; n < D / 8; n++) {
                        const uint16_t *op = o0 + n * 8, *qp = q0 + n * 8;
                        mma_bf16(dv[n], pa, pack_raw(op[0], op[LD]), pack_raw(op[8 * LD], op[9 * LD]));
                        mma_bf16(dk[n], sa, pack_raw(qp[0], qp[LD]), pack_raw(qp[8 * LD], qp[9 * LD]));
                    }
                }
                /* dS^T of this warp's 16 keys to shared memory, for dQ */
#pragma unroll
                for (int n = 0; n < kBQ / 8; n++) {
                    uint16_t *r0 = dSs + (warp * 16 + g) * LDS + n * 8 + 2 * t;
                    *reinterpret_cast<uint32_t *>(r0) = pack_bf16(dd[n][0], dd[n][1]);
                    *reinterpret_cast<uint32_t *>(r0 + 8 * LDS) = pack_bf16(dd[n][2], dd[n][3]);
                }
            } else {
                for (int idx = lane; idx < 16 * kBQ; idx += 32)
                    dSs[(warp * 16 + idx / kBQ) * LDS + idx % kBQ] = 0;
            }
            __syncthreads();
            /* dQ[16 rows of warp] += dS K over the block's 64 keys, 4 dim-tiles at a time;
             * A = dS (row = query, k = key) gathered from dS^T, B = K[key][dim] gathered */
            const int64_t qr0 = i0 + warp * 16 + g, qr1 = qr0 + 8;
            if (i0 + warp * 16 < sq) {
#pragma unroll
                for (int nc = 0; nc < D / 8; nc += 4) {
                    float acc[4][4];
#pragma unroll
                    for (int n = 0; n < 4; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
#pragma unroll
                    for (int kk = 0; kk < kBK / 16; kk++) {
                        const uint16_t *sp0 = dSs + (kk * 16 + 2 * t) * LDS + warp * 16 + g;
                        uint32_t aa[4];
                        aa[0] = pack_raw(sp0[0], sp0[LDS]);
                        aa[1] = pack_raw(sp0[8], sp0[LDS + 8]);
                        aa[2] = pack_raw(sp0[8 * LDS], sp0[9 * LDS]);
                        aa[3] = pack_raw(sp0[8 * LDS + 8], sp0[9 * LDS + 8]);
                        const uint16_t *k0p = Ks + (kk * 16 + 2 * t) * LD + g;
#pragma unroll
                        for (int n = 0; n < 4; n++) {
                            const uint16_t *kp = k0p + (nc + n) * 8;
                            mma_bf16(acc[n], aa, pack_raw(kp[0], kp[LD]), pack_raw(kp[8 * LD], kp[9 * LD]));
                        }
                    }
#pragma unroll
                    for (int n = 0; n < 4; n++) {
                        int col = (nc + n) * 8 + 2 * t;
                        if (qr0 < sq) {
                            float *dst = a.dq_acc + (qr0 * hq + h) * D + col;
                            atomicAdd(dst, acc[n][0]);
                            atomicAdd(dst + 1, acc[n][1]);
                        }
                        if (qr1 < sq) {
                            float *dst = a.dq_acc + (qr1 * hq + h) * D + col;
                            atomicAdd(dst, acc[n][2]);
                            atomicAdd(dst + 1, acc[n][3]);
                        }
                    }
                }
            }
        }
    }
    /* dK (scaled), dV: C layout (key g / g+8, dim n*8 + 2t + (e&1)) */
#pragma unroll
    for (int r = 0; r < 2; r++) {
        int64_t j = jr[r];
        if (j >= sk) continue;
#pragma unroll
        for (int n = 0; n < D / 8; n++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                int64_t ok = kv_off(a.dk, j, kh, n * 8 + 2 * t + e), ov = kv_off(a.dv, j, kh, n * 8 + 2 * t + e);
                float rk = dk[n][2 * r + e] * a.scale, rv = dv[n][2 * r + e];
                if (a.accumulate) {
                    rk += kv_get(a.dk, ok);
                    rv += kv_get(a.dv, ov);
                }
                kv_put(a.dk, ok, rk);
                kv_put(a.dv, ov, rv);
            }
    }
}

/* the fp32 dq accumulator [sq][hq][d] as a view in dq's logical order */
__host__ __device__ inline kview dq_acc_view(const kattn &a)
{
    kview v = a.dq;
    v.p = a.dq_acc;
    v.bf16 = 0;
    v.hs = a.dq.dim;
    v.rs = a.dq.heads * a.dq.dim;
    return v;
}

/* dq = scale * dq_acc (+ dq when accumulating) */
__global__ void dq_finish_kernel(kattn a)
{
    walk(a.dq, dq_acc_view(a), [&](int64_t, int64_t o, int64_t oa) {
        float r = a.dq_acc[oa] * a.scale;
        if (a.accumulate) r += kv_get(a.dq, o);
        kv_put(a.dq, o, r);
    });
}

} // namespace cpbk_tc

#endif
