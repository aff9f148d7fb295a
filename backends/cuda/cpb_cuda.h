/* cpb_cuda.h — the few things the harness asks of the cuda backend beyond cpb_backend:
 * whether a device is present, and the driver-level memory high-waters of DESIGN section 3.
 * Defined by the cuda plugin; cpbench forwards its calls to the plugin (backends/cuda_loader.c),
 * answering "no device" when the plugin does not load.  Callers guard their calls with
 * #ifdef CPB_HAVE_CUDA (this build made the plugin). */
#ifndef CPB_CUDA_H
#define CPB_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "cpb_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of CUDA devices this process can use (0 when the driver or device is absent;
 * never fails hard).  When 0, why says what cudaGetDeviceCount answered. */
int cpb_cuda_device_count(char *why, size_t why_len);

/* Name, memory and multiprocessor count of device `dev` (provenance, calibration files);
 * any output pointer may be NULL. */
int cpb_cuda_device_info(int dev, char *name, size_t name_len, int64_t *total_bytes, int *num_sms);
/* the device a cuda context runs on (-1 for another backend) */
int cpb_cuda_ctx_device(const cpb_ctx *ctx);

/* 1: attention runs on the generic kernels only (any head dim, fp32 CUDA-core math), also
 * where the tensor-core kernels apply; 0: the fastest applicable kernel (the default, or
 * the generic ones when the environment has CPB_CUDA_ATTN=generic).  For the self-test,
 * which checks both, and as a fallback should a faster kernel misbehave on some GPU. */
int cpb_cuda_set_attn_generic(cpb_ctx *ctx, int generic);

/* reserved: the memory pool's reserved high-water (torch max_memory_reserved);
 * device_used: high-water of driver-level used memory minus the baseline taken after
 * CUDA, cuBLAS and NCCL start-up (what nvidia-smi would show for this process, plus other
 * processes on the same GPU in --comm mpi runs).  Both in bytes. */
int cpb_cuda_mem_highwater(cpb_ctx *ctx, int64_t *reserved, int64_t *device_used);
/* Restart both high-waters from the current state (start of a trial). */
int cpb_cuda_mem_reset_highwater(cpb_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
