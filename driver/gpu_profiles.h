/* gpu_profiles.h — GPU profiles of the simulator: memory, compute, links (driver/
 * gpu_profiles.c gives every constant with its source) and the calibration file that
 * overrides them with values measured on a real GPU.
 *
 * Calibration file: plain text, one `key = value` per line, `#` starts a comment, blank
 * lines ignored; unknown keys and malformed values are errors (named with the line).
 * `cpbench bench-kernels` writes one; any subset of keys may be given.  Keys:
 *
 *   key                  unit      meaning
 *   attn_fwd_tflops      TFLOP/s   attention forward on a large causal call (sets the
 *                                  efficiency ceiling: attn_fwd_tflops / peak_tflops)
 *   attn_bwd_tflops      TFLOP/s   attention backward, likewise
 *   attn_fwd_k_half      tokens    keys per query row at which forward reaches half its
 *                                  ceiling (the shape of the small-call penalty)
 *   attn_bwd_k_half      tokens    the same for the backward
 *   attn_own_fwd_tflops  TFLOP/s   our attention kernels' forward (--attn own), likewise
 *   attn_own_bwd_tflops  TFLOP/s   our kernels' backward
 * (attn_fwd/bwd_tflops are cuDNN's fused SDPA, the default --attn; the k_half keys shape
 * both implementations' curves.  On a profile with a measured cuDNN curve (b200:
 * sim_attn_curves.h) attn_fwd/bwd_tflops replace that pass's curve, and a k_half key
 * shapes cuDNN only where they did)
 *   gemm_tflops          TFLOP/s   bf16 GEMM on a large call (sets gemm efficiency)
 *   gemm_k_half          elements  GEMM reduction depth at half efficiency
 *   peak_tflops          TFLOP/s   dense bf16 peak
 *   num_sms              count     streaming multiprocessors
 *   hbm_gbs              GB/s      achieved HBM bandwidth of streaming kernels
 *   a2a_busbw_gbs        GB/s      NCCL all-to-all bus bandwidth inside a node
 *   sendrecv_busbw_gbs   GB/s      NCCL send/recv bus bandwidth inside a node
 *   coll_busbw_gbs       GB/s      all-gather / reduce-scatter / all-reduce bus bandwidth
 *   inter_busbw_gbs      GB/s      per-GPU bus bandwidth across nodes
 *   pcie_gbs             GB/s      pinned host<->device copy, one GPU, one direction
 *   pcie_node_gbs        GB/s      all GPUs of a node together, one direction
 *   pcie_pageable_gbs    GB/s      a pageable (not pinned) copy, one GPU, one direction
 *   host_fill_gbs        GB/s      a host thread filling pinned memory (CPU memset)
 *   launch_us            us        kernel launch overhead
 *   coll_lat_us          us        collective latency inside a node
 *   inter_lat_us         us        collective latency across nodes
 *   mem_gib              GiB       device memory as the driver reports it
 *   reserve_gib          GiB       the layer scope's flat stand-in for the fixed per-GPU
 *                                  memory (the model scope itemizes it: model_scope_fixed.c)
 *   cuda_ctx_mib         MiB       the CUDA context (lazy loading) of a PyTorch process
 *   cublaslt_ws_mib      MiB       PyTorch's cuBLASLt workspace for this GPU
 *   nccl_channels        count     channels of an NCCL ring collective (an estimate)
 *   host_mem_gib         GiB       host memory per node (also --host-ram)
 *   gpus_per_node        count     GPUs per node
 *   host_mem_gbs         GB/s      host (CPU) memory bandwidth of a node, all sockets
 *   fp8_tflops           TFLOP/s   dense fp8 peak (0: the GPU has no fp8 tensor cores)
 *   (GB = 1e9 bytes; GiB = 2^30 bytes.)
 */
#ifndef CPB_GPU_PROFILES_H
#define CPB_GPU_PROFILES_H

#include <stddef.h>
#include <stdint.h>

#include "sim/sim_hw.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cpb_gpu_profile {
    char name[32];
    const char *description;
    int64_t mem_bytes;      /* device memory as the driver reports it */
    int64_t reserve_bytes;  /* the layer scope's flat stand-in for the fixed per-GPU memory (CUDA
                               context, NCCL, library workspaces); the model scope itemizes it
                               instead (model_scope_fixed.c) and does not subtract this */
    int64_t cuda_ctx_bytes; /* the CUDA context of a PyTorch process under lazy loading */
    int64_t cublaslt_ws_bytes; /* PyTorch's cuBLASLt workspace (per handle and stream) */
    int nccl_channels;      /* channels of one NCCL ring collective (all-gather, reduce-scatter) */
    int64_t host_node_bytes;/* host memory of one node */
    double host_mem_bw;     /* bytes/s: the node's host (CPU) memory bandwidth, all sockets (a CPU optimizer's pass) */
    double fp8_flops;       /* dense fp8 tensor-core peak, FLOP/s (0: none) */
    cpb_sim_hw hw;          /* the timing model's parameters */
    /* The figures of this profile that are estimates, not the part's datasheet (or its usual
     * server's), named by the calibration keys that would replace them (one exception:
     * attn_cudnn_off_curve, the cuDNN calls a measured cuDNN curve does not cover, read off
     * it; calibrating attn_fwd_tflops and attn_bwd_tflops removes it), comma-separated
     * ("" = none): e.g. "mem_gib,a2a_busbw_gbs".  A calibration file setting a key removes
     * it (a measured value is no longer an estimate).  Rows and `cpbench list` show them
     * (cpb_gpu_profile_estimates). */
    char estimated[256];
} cpb_gpu_profile;

#define CPB_GPU_DEFAULT "h100-sxm"

/* Fill *out with profile `name` (NULL or "" = the default; an alias, e.g. "h100", gives its
 * profile under the profile's own name).  Unknown name: CPB_ERR_INVALID with a message
 * listing the valid ones. */
int cpb_gpu_profile_get(const char *name, cpb_gpu_profile *out, char *err, size_t err_len);
/* Override constants from a calibration file (format above).  CPB_ERR_IO when it cannot
 * be read, CPB_ERR_INVALID for a bad line. */
int cpb_gpu_profile_calibrate(cpb_gpu_profile *p, const char *path, char *err, size_t err_len);
/* which attention the profile models, with its ceilings: "attention: cudnn 704/600 TFLOP/s
 * (cuDNN 9.19 SDPA ...), own 129/89 TFLOP/s (...)" */
void cpb_gpu_profile_attn_model(const cpb_gpu_profile *p, char *out, size_t len);
/* device bytes a layer-scope trial may use: memory minus the flat reserve (the layer scope
 * only; the model scope's capacity is the device's memory, mem_bytes, and its fixed per-GPU
 * memory is a bucket of the breakdown) */
int64_t cpb_gpu_profile_usable(const cpb_gpu_profile *p);
/* host bytes per GPU: the node's host memory shared by its GPUs */
int64_t cpb_gpu_profile_host_per_gpu(const cpb_gpu_profile *p);
/* the estimated figures of p (its `estimated` list), "" when none */
const char *cpb_gpu_profile_estimates(const cpb_gpu_profile *p);
/* "h100-sxm, h200, a100-80g, a100-40g, ..." (profiles, then "h100 (= h100-sxm)" for aliases) */
const char *cpb_gpu_profile_names(void);
int cpb_gpu_profile_count(void);
const char *cpb_gpu_profile_name_at(int i);
/* the aliases: alias i ("h100") and the profile it names ("h100-sxm"); NULL past the end */
const char *cpb_gpu_profile_alias_at(int i, const char **profile);

#ifdef __cplusplus
}
#endif
#endif
