/* emu.h — a CPU emulator of just enough CUDA to run the attention kernels of
 * backends/cuda/kern_attn_*.cuh on a machine without a GPU: every block is run by real
 * threads (std::thread) with std::barrier for __syncthreads and per-warp barriers for the
 * warp-synchronous primitives (__shfl_*_sync, mma.sync m16n8k16 bf16).  It checks the
 * kernels' indexing, masking, fragment bookkeeping and synchronisation against a
 * double-precision reference (emu/attn_emu.cpp); it cannot check the hardware's own
 * fragment layouts, which follow the PTX ISA (cited in kern_attn_tc.cuh).  Slow: small
 * shapes only. */
#ifndef CPB_CUDA_EMU_H
#define CPB_CUDA_EMU_H

#define CPB_CUDA_EMU 1

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "cpb_bf16.h"

#ifndef __global__
#define __global__
#endif
#undef __launch_bounds__
#define __launch_bounds__(x)
#ifndef __align__
#define __align__(n) alignas(n)
#endif

struct emu_block {
    std::barrier<> bar;
    std::vector<std::unique_ptr<std::barrier<>>> warp_bar;
    std::vector<unsigned char> smem;
    std::vector<float> slot;             /* [warp][32] shuffle exchange */
    std::vector<uint32_t> frag;          /* [warp][32][10] mma operands */
    emu_block(int threads, size_t smem_bytes)
        : bar(threads), smem(smem_bytes + 16), slot((size_t)threads), frag((size_t)threads * 10)
    {
        for (int w = 0; w < threads / 32; w++) warp_bar.emplace_back(new std::barrier<>(32));
    }
};

inline thread_local uint3 threadIdx, blockIdx;
inline thread_local dim3 blockDim, gridDim;
inline thread_local emu_block *emu_cur;

inline void *cpb_emu_smem()
{
    /* 16-byte aligned like dynamic shared memory */
    uintptr_t p = (uintptr_t)emu_cur->smem.data();
    return (void *)((p + 15) & ~(uintptr_t)15);
}

inline void __syncthreads()
{
    emu_cur->bar.arrive_and_wait();
}

inline void emu_warp_sync()
{
    emu_cur->warp_bar[threadIdx.x / 32]->arrive_and_wait();
}

inline void __syncwarp(unsigned = 0xffffffffu)
{
    emu_warp_sync();
}

inline float emu_shfl(float v, int src_lane)
{
    int w = threadIdx.x / 32, l = threadIdx.x % 32;
    emu_cur->slot[w * 32 + l] = v;
    emu_warp_sync();
    float r = emu_cur->slot[w * 32 + (src_lane & 31)];
    emu_warp_sync();
    return r;
}

inline float __shfl_xor_sync(unsigned, float v, int mask)
{
    return emu_shfl(v, (int)(threadIdx.x % 32) ^ mask);
}

inline float __shfl_sync(unsigned, float v, int src)
{
    return emu_shfl(v, src);
}

inline float atomicAdd(float *p, float v)
{
    return std::atomic_ref<float>(*p).fetch_add(v);
}

inline float emu_lo(uint32_t r)
{
    return cpb_bf16_to_f32((uint16_t)(r & 0xffffu));
}

inline float emu_hi(uint32_t r)
{
    return cpb_bf16_to_f32((uint16_t)(r >> 16));
}

/* mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 with the PTX ISA fragment layouts
 * (g = lane/4, t = lane%4): A a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..),
 * a3 (g+8, 2t+8..); B b0 (k 2t..2t+1, n g), b1 (k 2t+8.., n g); C c0 (g, 2t), c1 (g, 2t+1),
 * c2 (g+8, 2t), c3 (g+8, 2t+1) */
inline void cpb_emu_mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    int w = threadIdx.x / 32, l = threadIdx.x % 32;
    uint32_t *f = &emu_cur->frag[(size_t)(w * 32 + l) * 10];
    f[0] = a[0], f[1] = a[1], f[2] = a[2], f[3] = a[3], f[4] = b0, f[5] = b1;
    emu_warp_sync();
    float A[16][16], B[16][8];
    for (int L = 0; L < 32; L++) {
        const uint32_t *x = &emu_cur->frag[(size_t)(w * 32 + L) * 10];
        int g = L >> 2, t = L & 3;
        A[g][2 * t] = emu_lo(x[0]), A[g][2 * t + 1] = emu_hi(x[0]);
        A[g + 8][2 * t] = emu_lo(x[1]), A[g + 8][2 * t + 1] = emu_hi(x[1]);
        A[g][2 * t + 8] = emu_lo(x[2]), A[g][2 * t + 9] = emu_hi(x[2]);
        A[g + 8][2 * t + 8] = emu_lo(x[3]), A[g + 8][2 * t + 9] = emu_hi(x[3]);
        B[2 * t][g] = emu_lo(x[4]), B[2 * t + 1][g] = emu_hi(x[4]);
        B[2 * t + 8][g] = emu_lo(x[5]), B[2 * t + 9][g] = emu_hi(x[5]);
    }
    emu_warp_sync();
    int g = l >> 2, t = l & 3;
    const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
    for (int e = 0; e < 4; e++) {
        float s = c[e];
        for (int k = 0; k < 16; k++) s += A[rows[e]][k] * B[k][cols[e]];
        c[e] = s;
    }
}

/* run kernel(args...) on every block of grid, each block on blockDim real threads */
template <class F>
void emu_launch(dim3 grid, dim3 block, size_t smem, F kernel)
{
    int threads = (int)(block.x * block.y * block.z);
    for (unsigned by = 0; by < grid.y; by++)
        for (unsigned bx = 0; bx < grid.x; bx++) {
            emu_block blk(threads, smem);
            std::vector<std::thread> ts;
            for (int tid = 0; tid < threads; tid++)
                ts.emplace_back([&, tid] {
                    threadIdx = make_uint3((unsigned)tid, 0, 0);
                    blockIdx = make_uint3(bx, by, 0);
                    blockDim = block;
                    gridDim = grid;
                    emu_cur = &blk;
                    kernel();
                });
            for (auto &t : ts) t.join();
        }
}

#endif
