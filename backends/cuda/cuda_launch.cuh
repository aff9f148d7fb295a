/* cuda_launch.cuh — the one way the cuda backend launches its kernels.
 *
 *   CPBK_LAUNCH(kernel, grid, block, smem, stream, args...)
 *
 * Under nvcc it is kernel<<<grid, block, smem, stream>>>(args...).  In the CPU stand-in
 * build (CPB_CUDA_STANDIN, backends/cuda/standin) the same launcher code enqueues the kernel on
 * the stand-in stream, where the kernel emulator (emu/) runs it when the stream's work is
 * forced; the arguments are converted to the kernel's parameter types and copied at the
 * launch, as CUDA does, and the launch configuration, the kernel's shared memory and its
 * pointer arguments are checked there, as the driver would.  Either way the launch error is then read
 * with cudaGetLastError(). */
#ifndef CPB_CUDA_LAUNCH_CUH
#define CPB_CUDA_LAUNCH_CUH

#ifdef CPB_CUDA_STANDIN
#include "standin/sd_launch.h"
#define CPBK_LAUNCH(kernel, grid, block, smem, stream, ...)                                         \
    cpb_sd_enqueue_kernel((stream), #kernel " (" __FILE__ ")", kernel, dim3(grid), dim3(block), (size_t)(smem), \
                          __VA_ARGS__)
#else
#define CPBK_LAUNCH(kernel, grid, block, smem, stream, ...) kernel<<<(grid), (block), (smem), (stream)>>>(__VA_ARGS__)
#endif

#endif
