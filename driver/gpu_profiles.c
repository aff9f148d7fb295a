/* gpu_profiles.c — the simulator's GPU profiles.  Every constant names its source:
 * [PN] the published figures of docs/design.md ("Published figures we compare with"),
 * [DS] the vendor datasheet of the part, [EST] our estimate, stated with its reasoning
 * (override it with a calibration file measured on the real GPU: gpu_profiles.h).
 * Nothing here is fitted to the published throughput or maximum-length tables. */
#include "gpu_profiles.h"

#include <unistd.h>

#include "input_file.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpb.h"
#include "cpb_attn_route.h"
#include "sim/sim_attn_curves.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

/* Fixed per-GPU memory of the model scope, itemized (model_scope_fixed.c, docs/simulator.md
 * "Fixed per-GPU memory"):
 * - the CUDA context under lazy loading (CUDA_MODULE_LOADING=LAZY, the default on Linux
 *   since CUDA 12.2 [CUDA C Programming Guide, "Lazy Loading"], and set by PyTorch since
 *   1.13): 287,047,680 bytes measured for a PyTorch process's context in the pull request
 *   that made it PyTorch's default (pytorch/pytorch#86509; 666,632,192 bytes eager).  The
 *   kernels loaded later on first use are not added (an underestimate).
 * - cuBLASLt's workspace: 32 MiB on compute capability 9.x, 4 MiB on 8.x with >= 24 GiB
 *   (PyTorch aten/src/ATen/cuda/CUDABlas.cpp since pytorch/pytorch#120925, following the
 *   cuBLAS documentation of cublasSetWorkspace: 32 MiB recommended on Hopper, 4 MiB before).
 * - NCCL ring channels: 16 [EST] on NVSwitch nodes (NCCL picks its channel count from the
 *   topology, bounded by NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS, NCCL docs env.html). */
#define CUDA_CTX_LAZY_BYTES ((int64_t)287047680)
#define CUBLASLT_WS_HOPPER ((int64_t)(32 * MIB))
#define CUBLASLT_WS_AMPERE ((int64_t)(4 * MIB))
#define NCCL_RING_CHANNELS_NVSWITCH 16

/* Reserve of the layer scope only, every profile [EST]: memory the tracked allocator never
 * sees.  The model scope does not use it (it itemizes the fixed memory, above).
 *   CUDA context and loaded kernel modules (cuBLAS, cuDNN/attention, NCCL)  ~0.6 GiB
 *   NCCL buffers: per peer and channel (NCCL_BUFFSIZE 4 MiB) for 8 peers     ~1.0 GiB
 *   library workspaces: cuBLAS 32 MiB per stream (Hopper guidance), misc.    ~0.25 GiB
 *   allocator granularity / fragmentation slack                              ~0.15 GiB
 * total 2.0 GiB. */
#define RESERVE_BYTES ((int64_t)(2.0 * GIB))

/* Attention efficiency on Hopper [derived from PN]: cuDNN 9.19 SDPA on H200, d = 128, GQA,
 * causal, bf16: forward 591/644/673/688 TFLOP/s at 4K/8K/16K/32K tokens, backward
 * 474/541/579/581.  With eff = eff_max * kv / (kv + k_half), kv = keys per query row
 * (L/2 for a causal call of length L), the 4K and 32K points give
 *   forward:  k_half = 393 tokens, eff_max = 0.712  (predicts 8K: 642, 16K: 672; measured 644, 673)
 *   backward: k_half = 545 tokens, eff_max = 0.607  (predicts 8K: 530, 16K: 563; measured 541, 579)
 * The H200 has the H100's compute die (same 989 TFLOP/s); attention is compute bound, so
 * the same curve serves the H100.  FlashAttention-3's "up to 740 TFLOP/s (75%)" [PN] is
 * the same ceiling within 5%. */
#define HOPPER_ATTN_FWD_EFF 0.712
#define HOPPER_ATTN_FWD_KHALF 393.0
#define HOPPER_ATTN_BWD_EFF 0.607
#define HOPPER_ATTN_BWD_KHALF 545.0

/* Our kernels (kern_attn_tc.cuh, --attn own) [EST], until bench-kernels measures them
 * (calibration keys attn_own_fwd_tflops, attn_own_bwd_tflops): a plain mma.sync kernel
 * without ldmatrix, cp.async or double buffering, 16 query rows per warp, two
 * __syncthreads per tile; reading its SASS puts the forward at 100-160 TFLOP/s on an H100
 * (the middle, 130 TFLOP/s = 13% of peak); the backward does 8192 fp32 atomics per 64x64
 * tile for dQ, so FlashAttention-2's backward/forward ratio (~0.7) is its best case:
 * 90 TFLOP/s (9%).  On the A100, whose mma.sync is the native path, the same code is put
 * at 30-45% of FlashAttention-2 (~70%/60% of peak there): 0.26 forward, 0.18 backward.
 * The small-call shape (k_half) is taken to be cuDNN's. */
#define HOPPER_OWN_FWD_EFF 0.13
#define HOPPER_OWN_BWD_EFF 0.09
#define AMPERE_OWN_FWD_EFF 0.26
#define AMPERE_OWN_BWD_EFF 0.18

/* Host side, every profile [EST]:
 * - pageable copies: the driver stages them through its own pinned buffers with a CPU
 *   memcpy, synchronously, so one copy runs at about one core's memcpy rate, ~10 GB/s on
 *   the Xeons of HGX/DGX nodes (against ~55 GB/s pinned); each GPU's copy has its own core.
 * - a host thread filling memory (torch.zeros on the CPU under OMP_NUM_THREADS=1, which
 *   torchrun and the DeepSpeed launcher set by default per rank): ~10 GB/s, one core's
 *   store bandwidth. */
#define HOST_PAGEABLE_BW 10e9
#define HOST_FILL_BW 10e9

/* Host memory bandwidth of a node (a CPU optimizer's pass over the fp32 states, every GPU's
 * process stepping its shard at once):
 * - DGX H100 / H200 [DS]: two Xeon Platinum 8480C, 8 DDR5 channels each, 32 DIMMs (two per
 *   channel); Sapphire Rapids runs two DIMMs per channel at 4400 MT/s (the vendors' memory
 *   population rules, e.g. Dell PowerEdge XE9680's: 4800 at 1 DPC, 4400 at 2 DPC):
 *   2 x 8 x 8 B x 4.4e9 = 563 GB/s peak;
 * - DGX A100 [DS]: two AMD EPYC 7742, 8 DDR4-3200 channels each: 410 GB/s peak at one DIMM
 *   per channel (1 TB: 16 x 64 GB), 2933 MT/s at two (2 TB: 32 DIMMs): 375 GB/s.
 * [EST] streaming kernels (STREAM triad) reach about 80% of the DDR peak on these sockets;
 * that is the rate used (calibration key host_mem_gbs). */
#define SPR_2DPC_HOST_BW (0.8 * 2 * 8 * 8 * 4.4e9)
#define ROME_2DPC_HOST_BW (0.8 * 2 * 8 * 8 * 2.933e9)
#define ROME_1DPC_HOST_BW (0.8 * 2 * 8 * 8 * 3.2e9)
/* Dense fp8 tensor-core peak [DS]: H100 SXM5 and H200 1979 TFLOP/s (without sparsity);
 * the A100 has none. */
#define HOPPER_FP8_FLOPS 1979e12

/* The kernel rates of a Hopper-class part, one list for every profile that runs them:
 * - GEMM: large cuBLASLt bf16 GEMMs on H100 SXM are commonly measured at 700-800 TFLOP/s
 *   (0.75 of peak) [EST]; a tile's prologue/epilogue ~ two 64-deep K steps (k_half 128)
 *   [EST]; the cuBLAS/CUTLASS Hopper bf16 tile 128 x 256 [EST];
 * - attention: cuDNN's curve and our kernels' fractions above; FlashAttention-3's query
 *   block of 128 rows [EST]. */
#define HOPPER_KERNEL_RATES                                                                        \
    .gemm_eff_max = 0.75, .gemm_k_half = 128, .gemm_tile_m = 128, .gemm_tile_n = 256,              \
    .attn_fwd_eff_max = HOPPER_ATTN_FWD_EFF, .attn_fwd_k_half = HOPPER_ATTN_FWD_KHALF,             \
    .attn_bwd_eff_max = HOPPER_ATTN_BWD_EFF, .attn_bwd_k_half = HOPPER_ATTN_BWD_KHALF,             \
    .attn_own_fwd_eff_max = HOPPER_OWN_FWD_EFF, .attn_own_bwd_eff_max = HOPPER_OWN_BWD_EFF,        \
    .attn_tile_rows = 128

static const cpb_gpu_profile profiles[] = {
    {
        .name = "h100-sxm",
        .description = "NVIDIA H100 SXM5 80 GB (HGX/DGX H100 node, 8 GPUs, NVLink 4, NDR)",
        .mem_bytes = (int64_t)(81559 * MIB), /* [DS] 80 GB HBM3; nvidia-smi reports 81559 MiB */
        .reserve_bytes = RESERVE_BYTES,
        .cuda_ctx_bytes = CUDA_CTX_LAZY_BYTES, .cublaslt_ws_bytes = CUBLASLT_WS_HOPPER,
        .nccl_channels = NCCL_RING_CHANNELS_NVSWITCH,
        .host_node_bytes = (int64_t)2 << 40, /* [DS] DGX H100: 2 TB system memory, 32 x 64 GB DIMMs (binary: 2 TiB) */
        .host_mem_bw = SPR_2DPC_HOST_BW, .fp8_flops = HOPPER_FP8_FLOPS,
        .hw = {
            .peak_flops = 989e12,            /* [PN] bf16 dense peak */
            .num_sms = 132,                  /* [DS] H100 SXM5: 132 SMs */
            HOPPER_KERNEL_RATES,
            .hbm_bw = 3.0e12,                /* [PN] 3.35 TB/s peak; [EST] streaming kernels reach ~90% */
            .a2a_busbw = 370e9,              /* [PN] NCCL all-to-all bus bandwidth, NVLink 4 */
            .sendrecv_busbw = 370e9,         /* [PN] NCCL send/recv bus bandwidth, NVLink 4 */
            .coll_busbw = 370e9,             /* [EST] same links and NCCL: the [PN] figure */
            .inter_busbw = 45e9,             /* [DS] one 400 Gb/s NDR NIC per GPU = 50 GB/s;
                                                [EST] NCCL reaches ~90% of it */
            .coll_lat = 10e-6,               /* [EST] NCCL small-message latency on NVLink */
            .inter_lat = 20e-6,              /* [EST] NCCL small-message latency over IB */
            .pcie_gpu_bw = 55e9,             /* [PN] PCIe Gen5 x16 pinned copies, each way */
            .pcie_node_bw = 220e9,           /* [EST] two GPUs behind each of four PCIe switches
                                                with one Gen5 x16 uplink each: 4 x 55 GB/s */
            .pcie_pageable_bw = HOST_PAGEABLE_BW, .host_fill_bw = HOST_FILL_BW,
            .launch = 4e-6,                  /* [EST] back-to-back kernel launch overhead */
            .gpus_per_node = 8,
            .sm_arch = 90,                   /* [DS] Hopper, compute capability 9.0 */
        },
    },
    {
        .name = "h200",
        .description = "NVIDIA H200 SXM 141 GB (HGX H200 node, 8 GPUs, NVLink 4, NDR)",
        .mem_bytes = (int64_t)(143771 * MIB), /* [PN]/[DS] 141 GB HBM3e; nvidia-smi: 143771 MiB */
        .reserve_bytes = RESERVE_BYTES,
        .cuda_ctx_bytes = CUDA_CTX_LAZY_BYTES, .cublaslt_ws_bytes = CUBLASLT_WS_HOPPER,
        .nccl_channels = NCCL_RING_CHANNELS_NVSWITCH,
        .host_node_bytes = (int64_t)2 << 40, /* [DS] DGX H200: 2 TB system memory, 32 x 64 GB DIMMs (2 TiB) */
        .host_mem_bw = SPR_2DPC_HOST_BW, .fp8_flops = HOPPER_FP8_FLOPS,
        .hw = {
            .peak_flops = 989e12,            /* [PN]/[DS] the H100's compute die */
            .num_sms = 132,
            HOPPER_KERNEL_RATES,
            .hbm_bw = 4.3e12,                /* [DS] 4.8 TB/s; [EST] ~90% achieved */
            .a2a_busbw = 370e9, .sendrecv_busbw = 370e9, .coll_busbw = 370e9, /* NVLink 4 as H100 */
            .inter_busbw = 45e9, .coll_lat = 10e-6, .inter_lat = 20e-6,
            .pcie_gpu_bw = 55e9, .pcie_node_bw = 220e9, /* PCIe Gen5 as H100 */
            .pcie_pageable_bw = HOST_PAGEABLE_BW, .host_fill_bw = HOST_FILL_BW,
            .launch = 4e-6,
            .gpus_per_node = 8,
            .sm_arch = 90,
        },
    },
    {
        .name = "a100-80g",
        .description = "NVIDIA A100 SXM4 80 GB (HGX/DGX A100 node, 8 GPUs, NVLink 3, HDR)",
        .mem_bytes = (int64_t)(81920 * MIB), /* [DS] 80 GB HBM2e; nvidia-smi: 81920 MiB */
        .reserve_bytes = RESERVE_BYTES,
        .cuda_ctx_bytes = CUDA_CTX_LAZY_BYTES, .cublaslt_ws_bytes = CUBLASLT_WS_AMPERE,
        .nccl_channels = NCCL_RING_CHANNELS_NVSWITCH,
        .host_node_bytes = (int64_t)2 << 40, /* [DS] DGX A100 640 GB: 2 TB system memory (DIMMs: 2 TiB) */
        .host_mem_bw = ROME_2DPC_HOST_BW, .fp8_flops = 0,
        .hw = {
            .peak_flops = 312e12,            /* [DS] bf16 dense peak */
            .num_sms = 108,                  /* [DS] */
            .gemm_eff_max = 0.80,            /* [EST] large cuBLAS bf16 GEMMs reach ~250 TFLOP/s */
            .gemm_k_half = 128, .gemm_tile_m = 128, .gemm_tile_n = 256,
            .attn_fwd_eff_max = 0.70,        /* [EST] FlashAttention-2 paper: up to 73% of peak forward */
            .attn_fwd_k_half = HOPPER_ATTN_FWD_KHALF, /* [EST] same tiling overhead as Hopper */
            .attn_bwd_eff_max = 0.60,        /* [EST] FlashAttention-2 backward: about 60% of peak */
            .attn_bwd_k_half = HOPPER_ATTN_BWD_KHALF,
            .attn_own_fwd_eff_max = AMPERE_OWN_FWD_EFF, .attn_own_bwd_eff_max = AMPERE_OWN_BWD_EFF,
            .attn_tile_rows = 128,
            .hbm_bw = 1.8e12,                /* [DS] 2039 GB/s; [EST] ~90% achieved */
            .a2a_busbw = 230e9,              /* [EST] nccl-tests on DGX A100 (NVLink 3, 300 GB/s per
                                                direction) report ~230 GB/s bus bandwidth */
            .sendrecv_busbw = 230e9, .coll_busbw = 230e9,
            .inter_busbw = 22.5e9,           /* [DS] one 200 Gb/s HDR NIC per GPU; [EST] 90% */
            .coll_lat = 10e-6, .inter_lat = 20e-6,
            .pcie_gpu_bw = 25e9,             /* [EST] PCIe Gen4 x16 pinned copies (32 GB/s raw) */
            .pcie_node_bw = 100e9,           /* [DS] DGX A100: GPUs in pairs behind four PCIe
                                                switches, one Gen4 x16 uplink each: 4 x 25 GB/s */
            .pcie_pageable_bw = HOST_PAGEABLE_BW, .host_fill_bw = HOST_FILL_BW,
            .launch = 4e-6,
            .gpus_per_node = 8,
            .sm_arch = 80,                   /* [DS] Ampere, compute capability 8.0 */
        },
    },
    {
        .name = "a100-40g",
        .description = "NVIDIA A100 SXM4 40 GB (HGX/DGX A100 node, 8 GPUs, NVLink 3, HDR)",
        .mem_bytes = (int64_t)(40960 * MIB), /* [DS] 40 GB HBM2; nvidia-smi: 40960 MiB */
        .reserve_bytes = RESERVE_BYTES,
        .cuda_ctx_bytes = CUDA_CTX_LAZY_BYTES, .cublaslt_ws_bytes = CUBLASLT_WS_AMPERE,
        .nccl_channels = NCCL_RING_CHANNELS_NVSWITCH,
        .host_node_bytes = (int64_t)1 << 40, /* [DS] DGX A100 320 GB: 1 TB system memory (DIMMs: 1 TiB) */
        .host_mem_bw = ROME_1DPC_HOST_BW, .fp8_flops = 0,
        .hw = {
            .peak_flops = 312e12, .num_sms = 108,
            .gemm_eff_max = 0.80, .gemm_k_half = 128, .gemm_tile_m = 128, .gemm_tile_n = 256,
            .attn_fwd_eff_max = 0.70, .attn_fwd_k_half = HOPPER_ATTN_FWD_KHALF,
            .attn_bwd_eff_max = 0.60, .attn_bwd_k_half = HOPPER_ATTN_BWD_KHALF,
            .attn_own_fwd_eff_max = AMPERE_OWN_FWD_EFF, .attn_own_bwd_eff_max = AMPERE_OWN_BWD_EFF,
            .attn_tile_rows = 128,
            .hbm_bw = 1.4e12,                /* [DS] 1555 GB/s; [EST] ~90% achieved */
            .a2a_busbw = 230e9, .sendrecv_busbw = 230e9, .coll_busbw = 230e9,
            .inter_busbw = 22.5e9, .coll_lat = 10e-6, .inter_lat = 20e-6,
            .pcie_gpu_bw = 25e9, .pcie_node_bw = 100e9,
            .pcie_pageable_bw = HOST_PAGEABLE_BW, .host_fill_bw = HOST_FILL_BW,
            .launch = 4e-6,
            .gpus_per_node = 8,
            .sm_arch = 80,                   /* [DS] Ampere, compute capability 8.0 */
        },
    },    /* ---- issue 24: the GPUs of published long-context measurements.  Sources, named in
     * docs/simulator.md's profile table too:
     *   [DS-H100] NVIDIA H100 Tensor Core GPU datasheet (H100 SXM, H100 NVL columns; the
     *             earlier edition's H100 PCIe column), resources.nvidia.com/en-us-tensor-core
     *   [DS-H800] NVIDIA H800 Tensor Core GPU datasheet (H800 SXM5: the H100 SXM5's figures
     *             but NVLink 400 GB/s and FP64 1 TFLOPS)
     *   [DS-A800] NVIDIA A800 Tensor Core GPU datasheet (A800 80GB SXM: the A100 80GB SXM's
     *             figures but NVLink 400 GB/s)
     *   [DS-B200] NVIDIA HGX B200 / DGX B200 datasheets (per-GPU = the 8-GPU board's figure / 8)
     *   [SMI]     the memory the driver reports (nvidia-smi "MiB" total), as published in
     *             logs: H100 NVL 95830 MiB, B200 183359 MiB, H100 PCIe 81559 MiB
     * The datasheets print tensor rates with sparsity and mark them so; the dense rate is half
     * of it.  "Usual server": the vendor's 8-GPU board (HGX/DGX) for SXM parts; a PCIe part's
     * server is an assumption, and its fields are listed in .estimated. */
    {
        .name = "h800",
        .description = "NVIDIA H800 SXM5 80 GB (HGX H800 node, 8 GPUs, NVLink 400 GB/s, NDR)",
        .mem_bytes = (int64_t)(81559 * MIB), /* [DS-H800] 80 GB HBM3; [EST] the H100 SXM5's driver figure
                                                (same board and HBM stacks; no H800 log was found) */
        .reserve_bytes = RESERVE_BYTES,
        .cuda_ctx_bytes = CUDA_CTX_LAZY_BYTES, .cublaslt_ws_bytes = CUBLASLT_WS_HOPPER,
        .nccl_channels = NCCL_RING_CHANNELS_NVSWITCH,
        .host_node_bytes = (int64_t)2 << 40, /* [EST] usual HGX server: as DGX H100, 2 TB */
        .host_mem_bw = SPR_2DPC_HOST_BW,     /* [EST] as DGX H100 */
        .fp8_flops = 1979e12,                /* [DS-H800] 3,958 TFLOPS with sparsity */
        .hw = {
            .peak_flops = 989.5e12,          /* [DS-H800] bf16 1,979 TFLOPS with sparsity */
            .num_sms = 132,                  /* [DS-H800] the H100 SXM5's GH100 configuration */
            HOPPER_KERNEL_RATES,
            .hbm_bw = 3.0e12,                /* [DS-H800] 3.35 TB/s; [EST] ~90% achieved */
            /* [DS-H800] NVLink 400 GB/s against the H100's 900 GB/s: the H100's measured bus
             * bandwidth [PN] scaled by 400/900 [EST]; DeepSeek-V3's report (arXiv 2412.19437,
             * section 3.2.2) states 160 GB/s for its H800 NVLink, which agrees */
            .a2a_busbw = 164e9, .sendrecv_busbw = 164e9, .coll_busbw = 164e9,
            .inter_busbw = 45e9,             /* [EST] usual server: one 400 Gb/s NIC per GPU as
                                                HGX H100 (DeepSeek-V3's report: 50 GB/s IB per GPU) */
            .coll_lat = 10e-6, .inter_lat = 20e-6,
            .pcie_gpu_bw = 55e9, .pcie_node_bw = 220e9, /* [DS-H800] PCIe Gen5 128 GB/s; as H100 */
            .pcie_pageable_bw = HOST_PAGEABLE_BW, .host_fill_bw = HOST_FILL_BW,
            .launch = 4e-6,
            .gpus_per_node = 8,
            .sm_arch = 90,
        },
        .estimated = "mem_gib,a2a_busbw_gbs,sendrecv_busbw_gbs,coll_busbw_gbs,inter_busbw_gbs,host_mem_gib,host_mem_gbs",
    },
    {
        .name = "a800-80g",
        .description = "NVIDIA A800 SXM4 80 GB (HGX A800 node, 8 GPUs, NVLink 400 GB/s, HDR)",
        .mem_bytes = (int64_t)(81920 * MIB), /* [DS-A800] 80 GB HBM2e; [EST] the A100 80GB SXM4's driver figure */
        .reserve_bytes = RESERVE_BYTES,
        .cuda_ctx_bytes = CUDA_CTX_LAZY_BYTES, .cublaslt_ws_bytes = CUBLASLT_WS_AMPERE,
        .nccl_channels = NCCL_RING_CHANNELS_NVSWITCH,
        .host_node_bytes = (int64_t)2 << 40, /* [EST] usual HGX server: as DGX A100 640 GB, 2 TB */
        .host_mem_bw = ROME_2DPC_HOST_BW,    /* [EST] as DGX A100 */
        .fp8_flops = 0,                      /* [DS-A800] no fp8 tensor cores */
        .hw = {
            .peak_flops = 312e12,            /* [DS-A800] bf16 312 TFLOPS (624 with sparsity) */
            .num_sms = 108,                  /* [DS-A800] GA100 as A100 */
            .gemm_eff_max = 0.80, .gemm_k_half = 128, .gemm_tile_m = 128, .gemm_tile_n = 256,
            .attn_fwd_eff_max = 0.70, .attn_fwd_k_half = HOPPER_ATTN_FWD_KHALF, /* [EST] as a100-80g */
            .attn_bwd_eff_max = 0.60, .attn_bwd_k_half = HOPPER_ATTN_BWD_KHALF,
            .attn_own_fwd_eff_max = AMPERE_OWN_FWD_EFF, .attn_own_bwd_eff_max = AMPERE_OWN_BWD_EFF,
            .attn_tile_rows = 128,
            .hbm_bw = 1.8e12,                /* [DS-A800] 2,039 GB/s; [EST] ~90% achieved */
            /* [DS-A800] NVLink 400 GB/s against the A100's 600 GB/s: the a100-80g bus
             * bandwidth scaled by 400/600 [EST] */
            .a2a_busbw = 153e9, .sendrecv_busbw = 153e9, .coll_busbw = 153e9,
            .inter_busbw = 22.5e9,           /* [EST] usual server: one 200 Gb/s HDR NIC per GPU as DGX A100 */
            .coll_lat = 10e-6, .inter_lat = 20e-6,
            .pcie_gpu_bw = 25e9, .pcie_node_bw = 100e9, /* [DS-A800] PCIe Gen4 64 GB/s; as A100 */
            .pcie_pageable_bw = HOST_PAGEABLE_BW, .host_fill_bw = HOST_FILL_BW,
            .launch = 4e-6,
            .gpus_per_node = 8,
            .sm_arch = 80,
        },
        .estimated = "mem_gib,a2a_busbw_gbs,sendrecv_busbw_gbs,coll_busbw_gbs,inter_busbw_gbs,host_mem_gib,host_mem_gbs",
    },
    {
        .name = "h100-pcie",
        .description = "NVIDIA H100 PCIe 80 GB (8 cards in a PCIe server, NVLink bridges in pairs)",
        .mem_bytes = (int64_t)(81559 * MIB), /* [DS-H100] 80 GB HBM2e; [SMI] 81559 MiB */
        .reserve_bytes = RESERVE_BYTES,
        .cuda_ctx_bytes = CUDA_CTX_LAZY_BYTES, .cublaslt_ws_bytes = CUBLASLT_WS_HOPPER,
        .nccl_channels = NCCL_RING_CHANNELS_NVSWITCH, /* [EST] */
        .host_node_bytes = (int64_t)2 << 40, /* [EST] usual server assumed: 2 TB as the HGX nodes */
        .host_mem_bw = SPR_2DPC_HOST_BW,     /* [EST] two Sapphire Rapids sockets assumed */
        .fp8_flops = 1513e12,                /* [DS-H100] 3,026 TFLOPS with sparsity */
        .hw = {
            .peak_flops = 756.5e12,          /* [DS-H100] bf16 1,513 TFLOPS with sparsity */
            .num_sms = 114,                  /* [DS] H100 PCIe: 114 SMs (NVIDIA H100 whitepaper) */
            HOPPER_KERNEL_RATES,
            .hbm_bw = 1.8e12,                /* [DS-H100] 2.0 TB/s; [EST] ~90% achieved */
            /* [DS-H100] NVLink bridge 600 GB/s joins two cards only; PCIe Gen5 128 GB/s (64 each
             * way).  A collective over the usual server's 8 cards crosses PCIe, so its bus
             * bandwidth is PCIe's: [EST] ~80% of 64 GB/s; a ring step is as slow as its
             * slowest (PCIe) hop, so send/recv too */
            .a2a_busbw = 50e9, .sendrecv_busbw = 50e9, .coll_busbw = 50e9,
            .inter_busbw = 45e9,             /* [EST] usual server assumed: one 400 Gb/s NIC per GPU */
            .coll_lat = 10e-6, .inter_lat = 20e-6,
            .pcie_gpu_bw = 55e9,             /* [DS-H100] PCIe Gen5 x16; as H100 SXM [PN] */
            .pcie_node_bw = 220e9,           /* [EST] four Gen5 x16 uplinks, as HGX */
            .pcie_pageable_bw = HOST_PAGEABLE_BW, .host_fill_bw = HOST_FILL_BW,
            .launch = 4e-6,
            .gpus_per_node = 8,              /* [EST] usual server assumed: 8 cards */
            .sm_arch = 90,
        },
        .estimated = "a2a_busbw_gbs,sendrecv_busbw_gbs,coll_busbw_gbs,inter_busbw_gbs,pcie_node_gbs,host_mem_gib,"
                     "host_mem_gbs,gpus_per_node,nccl_channels",
    },
    {
        .name = "h100-nvl",
        .description = "NVIDIA H100 NVL 94 GB (PCIe cards, NVLink bridges in pairs; 8 cards per server)",
        .mem_bytes = (int64_t)(95830 * MIB), /* [DS-H100] 94 GB HBM3; [SMI] 95830 MiB */
        .reserve_bytes = RESERVE_BYTES,
        .cuda_ctx_bytes = CUDA_CTX_LAZY_BYTES, .cublaslt_ws_bytes = CUBLASLT_WS_HOPPER,
        .nccl_channels = NCCL_RING_CHANNELS_NVSWITCH, /* [EST] */
        .host_node_bytes = (int64_t)2 << 40, /* [EST] usual server assumed: 2 TB */
        .host_mem_bw = SPR_2DPC_HOST_BW,     /* [EST] */
        .fp8_flops = 1670.5e12,              /* [DS-H100] 3,341 TFLOPS with sparsity */
        .hw = {
            .peak_flops = 835.5e12,          /* [DS-H100] bf16 1,671 TFLOPS with sparsity */
            .num_sms = 132,                  /* [DS] H100 NVL: the full 132-SM configuration */
            HOPPER_KERNEL_RATES,
            .hbm_bw = 3.5e12,                /* [DS-H100] 3.9 TB/s; [EST] ~90% achieved */
            /* [DS-H100] NVLink bridge 600 GB/s between two cards, PCIe Gen5 128 GB/s: the
             * 8-card server's collectives cross PCIe, as h100-pcie [EST] */
            .a2a_busbw = 50e9, .sendrecv_busbw = 50e9, .coll_busbw = 50e9,
            .inter_busbw = 45e9,             /* [EST] usual server assumed: one 400 Gb/s NIC per GPU */
            .coll_lat = 10e-6, .inter_lat = 20e-6,
            .pcie_gpu_bw = 55e9, .pcie_node_bw = 220e9, /* [DS-H100] Gen5 x16; node [EST] */
            .pcie_pageable_bw = HOST_PAGEABLE_BW, .host_fill_bw = HOST_FILL_BW,
            .launch = 4e-6,
            .gpus_per_node = 8,              /* [EST] usual server assumed: 8 cards */
            .sm_arch = 90,
        },
        .estimated = "a2a_busbw_gbs,sendrecv_busbw_gbs,coll_busbw_gbs,inter_busbw_gbs,pcie_node_gbs,host_mem_gib,"
                     "host_mem_gbs,gpus_per_node,nccl_channels",
    },
    {
        .name = "b200",
        .description = "NVIDIA B200 180 GB (HGX/DGX B200 node, 8 GPUs, NVLink 5, NDR)",
        .mem_bytes = (int64_t)(183359 * MIB), /* [DS-B200] 1,440 GB HBM3e per 8 GPUs = 180 GB; [SMI] 183359 MiB */
        .reserve_bytes = RESERVE_BYTES,
        .cuda_ctx_bytes = CUDA_CTX_LAZY_BYTES,
        .cublaslt_ws_bytes = CUBLASLT_WS_HOPPER, /* [EST] PyTorch's 9.x size, assumed for 10.x */
        .nccl_channels = NCCL_RING_CHANNELS_NVSWITCH,
        .host_node_bytes = (int64_t)2 << 40, /* [DS-B200] DGX B200: 2 TB system memory (MLPerf
                                                systems list 32 x 64 GB DIMMs) */
        .host_mem_bw = SPR_2DPC_HOST_BW,     /* [EST] two Xeon sockets, 2 DIMMs per channel, as DGX H100 */
        .fp8_flops = 4.5e15,                 /* [DS-B200] 72 PFLOPS fp8 with sparsity per 8 GPUs */
        .hw = {
            .peak_flops = 2.25e15,           /* [DS-B200] 36 PFLOPS fp16/bf16 with sparsity per 8 GPUs */
            .num_sms = 148,                  /* device query of a B200 (148 multiprocessors) */
            /* [EST] the GEMM fraction of peak and our kernels' carried over from Hopper: no
             * published B200 curve was found; calibrate on the GPU.  cuDNN's attention:
             * its curve measured on a B200 by NVIDIA (cudnn-frontend @9793df5,
             * benchmark/sdpa_benchmark_training, cuDNN 9.10.2: causal, d 128, 512-128K;
             * backends/sim/sim_attn_curves.c), which replaces the Hopper eff_max / k_half
             * below; unmasked calls, other head dims and lengths outside 512-128K are read
             * off it [EST] (estimate key attn_cudnn_off_curve) */
            HOPPER_KERNEL_RATES,
            .attn_fwd_curve = CPB_CUDNN_CURVE_B200, .attn_bwd_curve = CPB_CUDNN_CURVE_B200,
            .hbm_bw = 7.2e12,                /* [DS-B200] 64 TB/s per 8 GPUs = 8 TB/s; [EST] ~90% */
            /* [DS-B200] NVLink 5: 1.8 TB/s per GPU, twice the H100's 900 GB/s: the H100's
             * measured bus bandwidth [PN] doubled [EST] */
            .a2a_busbw = 740e9, .sendrecv_busbw = 740e9, .coll_busbw = 740e9,
            .inter_busbw = 45e9,             /* [DS-B200] 8 x 400 Gb/s ConnectX-7 per node (one per
                                                GPU); [EST] NCCL reaches ~90% */
            .coll_lat = 10e-6, .inter_lat = 20e-6,
            .pcie_gpu_bw = 55e9,             /* PCIe Gen5 x16 host link (MLPerf B200 systems); as H100 */
            .pcie_node_bw = 220e9,           /* [EST] as HGX H100 */
            .pcie_pageable_bw = HOST_PAGEABLE_BW, .host_fill_bw = HOST_FILL_BW,
            .launch = 4e-6,
            .gpus_per_node = 8,
            .sm_arch = 100,                  /* Blackwell, compute capability 10.0 */
        },
        .estimated = "attn_cudnn_off_curve,attn_own_fwd_tflops,attn_own_bwd_tflops,gemm_tflops,"
                     "a2a_busbw_gbs,sendrecv_busbw_gbs,coll_busbw_gbs,host_mem_gbs,cublaslt_ws_mib",
    },
};

/* Other names of a profile: the generic part name people write for the usual variant */
static const struct { const char *alias, *name; } aliases[] = {
    {"h100", "h100-sxm"}, /* "H100" in papers and framework docs is the SXM5 part of HGX/DGX H100 */
};

void cpb_gpu_profile_attn_model(const cpb_gpu_profile *p, char *out, size_t len)
{
    const cpb_sim_hw *h = &p->hw;
    const double d = 128, L = 16384; /* the FlashAttention curves' point quoted */
    size_t n;
    if (h->attn_fwd_curve || h->attn_bwd_curve) {
        /* a measured cuDNN curve: its 32K causal point (the other pass: its ceiling) */
        const double Lc = 32768;
        int c = h->attn_fwd_curve ? h->attn_fwd_curve : h->attn_bwd_curve;
        n = (size_t)snprintf(out, len, "attention: cudnn %.0f/%.0f TFLOP/s fwd/bwd at 32K causal d 128 (%s%s), ",
                             h->attn_fwd_curve ? cpb_sim_cudnn_tflops(h->attn_fwd_curve, 0, Lc)
                                               : h->attn_fwd_eff_max * h->peak_flops / 1e12,
                             h->attn_bwd_curve ? cpb_sim_cudnn_tflops(h->attn_bwd_curve, 1, Lc)
                                               : h->attn_bwd_eff_max * h->peak_flops / 1e12,
                             cpb_sim_cudnn_source(c),
                             h->attn_fwd_curve && h->attn_bwd_curve ? "; unmasked, other d, other lengths [EST]"
                                                                    : "; the other pass calibrated");
    } else
        n = (size_t)snprintf(out, len,
                             "attention: cudnn %.0f/%.0f TFLOP/s fwd/bwd ceiling (cuDNN fused SDPA; Hopper: cuDNN 9.19 "
                             "measured on H200 [PN], else [EST]), ",
                             h->attn_fwd_eff_max * h->peak_flops / 1e12, h->attn_bwd_eff_max * h->peak_flops / 1e12);
    if (n >= len) return;
    n += (size_t)snprintf(
        out + n, len - n, "own %.0f/%.0f TFLOP/s (our kernels, [EST] until calibrated), fa2 %.0f/%.0f",
        h->attn_own_fwd_eff_max * h->peak_flops / 1e12, h->attn_own_bwd_eff_max * h->peak_flops / 1e12,
        cpb_sim_flash_bench_eff(h, CPB_ATTN_FA2, 0, 0, L, d) * h->peak_flops / 1e12,
        cpb_sim_flash_bench_eff(h, CPB_ATTN_FA2, 1, 0, L, d) * h->peak_flops / 1e12);
    if (n >= len) return;
    if (h->sm_arch == 90)
        n += (size_t)snprintf(out + n, len - n, ", fa3 %.0f/%.0f",
                              cpb_sim_flash_bench_eff(h, CPB_ATTN_FA3, 0, 0, L, d) * h->peak_flops / 1e12,
                              cpb_sim_flash_bench_eff(h, CPB_ATTN_FA3, 1, 0, L, d) * h->peak_flops / 1e12);
    if (n < len)
        n += (size_t)snprintf(out + n, len - n, " TFLOP/s at d 128, 16K, unmasked (published curves: estimates)");
    if (n < len && h->sm_arch != 90)
        snprintf(out + n, len - n, "; no fa3 (needs sm90, this GPU is sm%d)", h->sm_arch);
}

const char *cpb_gpu_profile_estimates(const cpb_gpu_profile *p)
{
    return p->estimated;
}

/* a calibrated key is measured: it leaves the profile's list of estimates */
static void drop_estimate(cpb_gpu_profile *p, const char *key)
{
    char out[sizeof p->estimated] = "";
    size_t n = 0;
    const char *s = p->estimated;
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (!(len == strlen(key) && strncmp(s, key, len) == 0) && n + len + 2 < sizeof out) {
            if (n) out[n++] = ',';
            memcpy(out + n, s, len);
            n += len;
            out[n] = 0;
        }
        s += len + (comma ? 1 : 0);
    }
    memcpy(p->estimated, out, sizeof out);
}

const char *cpb_gpu_profile_alias_at(int i, const char **profile)
{
    if (i < 0 || (size_t)i >= sizeof aliases / sizeof aliases[0]) return NULL;
    if (profile) *profile = aliases[i].name;
    return aliases[i].alias;
}

int cpb_gpu_profile_count(void)
{
    return (int)(sizeof profiles / sizeof profiles[0]);
}

const char *cpb_gpu_profile_name_at(int i)
{
    return (i >= 0 && i < cpb_gpu_profile_count()) ? profiles[i].name : NULL;
}

const char *cpb_gpu_profile_names(void)
{
    static char names[512];
    if (!names[0]) {
        size_t len = 0;
        for (int i = 0; i < cpb_gpu_profile_count(); i++)
            len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", profiles[i].name);
        for (size_t i = 0; i < sizeof aliases / sizeof aliases[0] && len < sizeof names; i++)
            len += (size_t)snprintf(names + len, sizeof names - len, ", %s (= %s)", aliases[i].alias, aliases[i].name);
    }
    return names;
}

int cpb_gpu_profile_get(const char *name, cpb_gpu_profile *out, char *err, size_t err_len)
{
    if (!name || !name[0]) name = CPB_GPU_DEFAULT;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(aliases[i].alias, name) == 0) name = aliases[i].name;
    for (int i = 0; i < cpb_gpu_profile_count(); i++)
        if (strcmp(profiles[i].name, name) == 0) {
            *out = profiles[i];
            return CPB_OK;
        }
    snprintf(err, err_len, "unknown GPU profile '%s' (valid: %s)", name, cpb_gpu_profile_names());
    return CPB_ERR_INVALID;
}

int64_t cpb_gpu_profile_usable(const cpb_gpu_profile *p)
{
    return p->mem_bytes - p->reserve_bytes;
}

int64_t cpb_gpu_profile_host_per_gpu(const cpb_gpu_profile *p)
{
    int gpn = p->hw.gpus_per_node > 0 ? p->hw.gpus_per_node : 8;
    return p->host_node_bytes / gpn;
}

/* ---------------------------------------------------------------- calibration file */

/* apply one key; 0 = ok, -1 = unknown key, -2 = value out of range */
static int apply(cpb_gpu_profile *p, const char *key, double v)
{
    cpb_sim_hw *h = &p->hw;
    if (!(v > 0)) return -2;
    /* a ceiling measured on the user's GPU replaces a published cuDNN curve of that pass
     * (the eff_max / k_half form then runs); with both passes calibrated nothing is read
     * off the curve any more */
    if (!strcmp(key, "attn_fwd_tflops")) h->attn_fwd_eff_max = v * 1e12 / h->peak_flops, h->attn_fwd_curve = 0;
    else if (!strcmp(key, "attn_bwd_tflops")) h->attn_bwd_eff_max = v * 1e12 / h->peak_flops, h->attn_bwd_curve = 0;
    else if (!strcmp(key, "attn_own_fwd_tflops")) h->attn_own_fwd_eff_max = v * 1e12 / h->peak_flops;
    else if (!strcmp(key, "attn_own_bwd_tflops")) h->attn_own_bwd_eff_max = v * 1e12 / h->peak_flops;
    else if (!strcmp(key, "attn_fwd_k_half")) h->attn_fwd_k_half = v;
    else if (!strcmp(key, "attn_bwd_k_half")) h->attn_bwd_k_half = v;
    else if (!strcmp(key, "gemm_tflops")) h->gemm_eff_max = v * 1e12 / h->peak_flops;
    else if (!strcmp(key, "gemm_k_half")) h->gemm_k_half = v;
    else if (!strcmp(key, "peak_tflops")) {
        /* keep the achieved rates: efficiencies are relative to the peak */
        double old = h->peak_flops;
        h->peak_flops = v * 1e12;
        h->attn_fwd_eff_max *= old / h->peak_flops;
        h->attn_bwd_eff_max *= old / h->peak_flops;
        h->attn_own_fwd_eff_max *= old / h->peak_flops;
        h->attn_own_bwd_eff_max *= old / h->peak_flops;
        h->gemm_eff_max *= old / h->peak_flops;
    } else if (!strcmp(key, "num_sms")) h->num_sms = (int)v;
    else if (!strcmp(key, "hbm_gbs")) h->hbm_bw = v * 1e9;
    else if (!strcmp(key, "a2a_busbw_gbs")) h->a2a_busbw = v * 1e9;
    else if (!strcmp(key, "sendrecv_busbw_gbs")) h->sendrecv_busbw = v * 1e9;
    else if (!strcmp(key, "coll_busbw_gbs")) h->coll_busbw = v * 1e9;
    else if (!strcmp(key, "inter_busbw_gbs")) h->inter_busbw = v * 1e9;
    else if (!strcmp(key, "pcie_gbs")) h->pcie_gpu_bw = v * 1e9;
    else if (!strcmp(key, "pcie_node_gbs")) h->pcie_node_bw = v * 1e9;
    else if (!strcmp(key, "pcie_pageable_gbs")) h->pcie_pageable_bw = v * 1e9;
    else if (!strcmp(key, "host_fill_gbs")) h->host_fill_bw = v * 1e9;
    else if (!strcmp(key, "launch_us")) h->launch = v * 1e-6;
    else if (!strcmp(key, "coll_lat_us")) h->coll_lat = v * 1e-6;
    else if (!strcmp(key, "inter_lat_us")) h->inter_lat = v * 1e-6;
    else if (!strcmp(key, "mem_gib")) p->mem_bytes = (int64_t)(v * GIB);
    else if (!strcmp(key, "reserve_gib")) p->reserve_bytes = (int64_t)(v * GIB);
    else if (!strcmp(key, "cuda_ctx_mib")) p->cuda_ctx_bytes = (int64_t)(v * MIB);
    else if (!strcmp(key, "cublaslt_ws_mib")) p->cublaslt_ws_bytes = (int64_t)(v * MIB);
    else if (!strcmp(key, "nccl_channels")) p->nccl_channels = (int)v;
    else if (!strcmp(key, "host_mem_gib")) p->host_node_bytes = (int64_t)(v * GIB);
    else if (!strcmp(key, "gpus_per_node")) h->gpus_per_node = (int)v;
    else if (!strcmp(key, "host_mem_gbs")) p->host_mem_bw = v * 1e9;
    else if (!strcmp(key, "fp8_tflops")) p->fp8_flops = v * 1e12;
    else return -1;
    drop_estimate(p, key);
    if (!h->attn_fwd_curve && !h->attn_bwd_curve) drop_estimate(p, "attn_cudnn_off_curve");
    return 0;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

int cpb_gpu_profile_calibrate(cpb_gpu_profile *p, const char *path, char *err, size_t err_len)
{
    /* the checked opener: a FIFO or a device is refused before any read */
    int fd;
    int orc = cpb_input_open(path, "--calibration", &fd, err, err_len);
    if (orc != CPB_OK) return orc;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        snprintf(err, err_len, "cannot read calibration file '%s': %s", path, strerror(errno));
        return CPB_ERR_IO;
    }
    char line[512];
    int ln = 0, rc = CPB_OK;
    while (rc == CPB_OK && fgets(line, sizeof line, f)) {
        ln++;
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *s = trim(line);
        if (!*s) continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, err_len, "%s:%d: expected `key = value`, got '%s'", path, ln, s);
            rc = CPB_ERR_INVALID;
            break;
        }
        *eq = 0;
        char *key = trim(s), *val = trim(eq + 1);
        double v;
        /* the one strict decimal parser (input_file.h): strtod would take hex and "inf" */
        if (cpb_parse_decimal(val, &v) != 0) {
            snprintf(err, err_len, "%s:%d: value of '%s' is not a number (plain decimal, no sign or hex): '%s'", path, ln, key, val);
            rc = CPB_ERR_INVALID;
            break;
        }
        int a = apply(p, key, v);
        if (a == -1) {
            snprintf(err, err_len, "%s:%d: unknown key '%s' (gpu_profiles.h lists the keys)", path, ln, key);
            rc = CPB_ERR_INVALID;
        } else if (a == -2) {
            snprintf(err, err_len, "%s:%d: '%s' must be positive, got %s", path, ln, key, val);
            rc = CPB_ERR_INVALID;
        }
    }
    fclose(f);
    return rc;
}
