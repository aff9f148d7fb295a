/* emu.h — a CPU emulator of just enough CUDA to run the kernels of backends/cuda/kern_*.cuh
 * on a machine without a GPU.
 *
 * Every CUDA thread of a block runs on a fiber of the calling OS thread (emu_core.cpp):
 * a thread runs until it finishes or reaches a synchronisation point (__syncthreads, a
 * warp-synchronous call: __syncwarp, __shfl_*_sync, mma.sync), where it yields to the next
 * thread.  A kernel that never synchronises therefore runs as a plain loop over its threads
 * on one fiber (the fast path, found by the emulator itself, not declared); the others get a
 * fiber per suspended thread, taken from a pool that lives as long as the OS thread.
 *
 * Threads run in a fixed order between synchronisation points, so an intra-warp ordering bug
 * (a lane reading what another lane writes without a __syncwarp between them) shows up the
 * same way every run.  A barrier that not every live thread of the block (or warp) reaches is
 * reported as divergent synchronisation, which hangs or is undefined on a GPU.  Dynamic
 * shared memory starts as 0xff bytes (NaN as fp32 and bf16) in every block, so a read before
 * a write shows.  It checks indexing, masking, fragment bookkeeping and synchronisation; it
 * cannot check the hardware's own fragment layouts, which follow the PTX ISA (cited in
 * kern_attn_tc.cuh), nor occupancy, nor timing. */
#ifndef CPB_CUDA_EMU_H
#define CPB_CUDA_EMU_H

#ifndef CPB_CUDA_EMU
#define CPB_CUDA_EMU 1
#endif

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

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

/* the CUDA thread the emulator is running on this OS thread (set before it runs or resumes) */
inline thread_local uint3 threadIdx, blockIdx;
inline thread_local dim3 blockDim, gridDim;

/* ---------------------------------------------------------------- emulator services */

/* the block's dynamic shared memory, 16-byte aligned like the GPU's */
void *cpb_emu_smem();
/* __syncthreads: every live thread of the block arrives */
void cpb_emu_block_barrier();
/* __syncwarp with the full mask */
void cpb_emu_warp_barrier();
/* the value `v` of lane `src` of this warp (full mask; all live lanes take part) */
float cpb_emu_shfl(float v, int src_lane);
/* mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 over the warp, with the PTX ISA
 * fragment layouts (g = lane/4, t = lane%4): A a0 (g, 2t..2t+1), a1 (g+8, 2t..),
 * a2 (g, 2t+8..), a3 (g+8, 2t+8..); B b0 (k 2t..2t+1, n g), b1 (k 2t+8.., n g);
 * C c0 (g, 2t), c1 (g, 2t+1), c2 (g+8, 2t), c3 (g+8, 2t+1) */
void cpb_emu_mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
/* a mask other than all 32 lanes is not emulated: fail the launch saying so */
void cpb_emu_check_mask(unsigned mask, const char *what);

inline void __syncthreads()
{
    cpb_emu_block_barrier();
}

inline void __syncwarp(unsigned mask = 0xffffffffu)
{
    cpb_emu_check_mask(mask, "__syncwarp");
    cpb_emu_warp_barrier();
}

inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask)
{
    cpb_emu_check_mask(mask, "__shfl_xor_sync");
    return cpb_emu_shfl(v, (int)(threadIdx.x % 32) ^ lane_mask);
}

inline float __shfl_sync(unsigned mask, float v, int src)
{
    cpb_emu_check_mask(mask, "__shfl_sync");
    return cpb_emu_shfl(v, src);
}

/* threads of one launch share one OS thread, but two launches may run at once on two
 * streams' executors */
inline float atomicAdd(float *p, float v)
{
    return std::atomic_ref<float>(*p).fetch_add(v);
}

/* ---------------------------------------------------------------- running a grid */

/* Run body(ctx) once per CUDA thread of grid x block with `smem` bytes of dynamic shared
 * memory per block, on the calling OS thread.  Returns 0, or -1 with the reason in err
 * (divergent synchronisation, an unsupported mask); the launch is then abandoned. */
int cpb_emu_run(dim3 grid, dim3 block, size_t smem, void (*body)(void *), void *ctx, char *err, size_t err_len);

/* the kernel emulator's tests: run kernel() (a lambda calling the kernel) on every thread */
template <class F>
int emu_launch(dim3 grid, dim3 block, size_t smem, F kernel)
{
    char err[512];
    int rc = cpb_emu_run(grid, block, smem, [](void *k) { (*static_cast<F *>(k))(); }, &kernel, err, sizeof err);
    if (rc != 0) fprintf(stderr, "emu: %s\n", err);
    return rc;
}

#endif
