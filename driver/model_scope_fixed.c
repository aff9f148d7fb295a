/* model_scope_fixed.c — the fixed per-GPU memory of the whole-model estimate: what a
 * training process holds on each GPU whatever it trains, itemized, each item from a
 * documented size (docs/simulator.md "Fixed per-GPU memory" cites each source).  It is a
 * bucket of its own in the breakdown (cpb_model_mem.fixed); the model scope's capacity is
 * the device's memory, with nothing subtracted for it.
 *
 * - CUDA context: the profile's cuda_ctx_bytes, 287,047,680 bytes measured for a PyTorch
 *   process under lazy loading (pytorch/pytorch#86509, which made CUDA_MODULE_LOADING=LAZY
 *   PyTorch's default; lazy loading is CUDA's default on Linux since 12.2, CUDA C
 *   Programming Guide "Lazy Loading").  Kernels loaded on first use come on top and are not
 *   counted.
 * - NCCL buffers [EST: the counts]: one NCCL_BUFFSIZE (4 MiB by default, NCCL docs env.html)
 *   buffer per channel of each connection, the Simple protocol's (LL and LL128 buffers are
 *   smaller and not counted).  A ring collective (all-gather, reduce-scatter, all-reduce,
 *   broadcast) holds one receive connection per channel: channels x 4 MiB per communicator;
 *   point-to-point traffic (all-to-all, send/recv) one connection per peer with
 *   CPB_NCCL_P2P_CHANNELS channels each.  Communicators: the method's in its context-
 *   parallel group (its pattern below), the model states' group (FSDP / ZeRO gathers and
 *   reduce-scatters, or DDP's all-reduce) when it has more than one GPU, and HSDP's
 *   cross-replica all-reduce.
 * - cuBLAS: PyTorch's cuBLAS workspace (CUBLAS_WORKSPACE_CONFIG default ":4096:2:16:8",
 *   8,519,680 bytes) and cuBLASLt's (the profile's: 32 MiB on Hopper, 4 MiB on the A100),
 *   one handle on the compute stream.
 * - attention workspace: 0 here; the layer trial traces it (the `workspace` tag, the
 *   implementation's workspace bound), so it is already in the attention buckets.
 * - allocator reserve [EST]: PyTorch's caching allocator keeps its blocks per stream and
 *   serves requests of 1-10 MiB from 20 MiB segments it splits (kLargeBuffer); a freed block
 *   returns to its stream's pool.  One partly used 20 MiB segment per allocating stream is
 *   counted.  The fragmentation that grows with the step's changing sizes (the gap between
 *   max_memory_reserved and max_memory_allocated) is not modelled. */
#include <stdio.h>
#include <string.h>

#include "gpu_profiles.h"
#include "model_scope.h"

/* point-to-point peers and ring communicators of method `name` in a context-parallel group of
 * C GPUs (u: its Ulysses degree for the hybrids) */
static void method_pattern(const char *name, int C, int u, int *peers, int *rings)
{
    *peers = 0;
    *rings = 0;
    if (C <= 1) return;
    int nb = C == 2 ? 1 : 2; /* ring neighbours: the previous and the next */
    if (!strcmp(name, "ulysses") || !strcmp(name, "upipe") || !strcmp(name, "fpdt") || !strcmp(name, "offload")) {
        *peers = C - 1;  /* all-to-all over the group */
    } else if (!strcmp(name, "ring")) {
        *peers = nb;     /* K, V sent to the next, received from the previous */
    } else if (!strcmp(name, "usp") || !strcmp(name, "hupipe")) {
        if (u < 1 || u > C) u = C;
        int r = C / u;   /* all-to-all among u, zigzag ring among C / u */
        *peers = (u - 1) + (r > 1 ? (r == 2 ? 1 : 2) : 0);
    } else if (!strcmp(name, "metp")) {
        *rings = 1;      /* the weight shards' broadcasts ... */
        *peers = nb;     /* ... and the inner ring's send/recv */
    } else {
        *rings = 1;      /* tp and others: all-gather / reduce-scatter over the group */
    }
}

void cpb_fixed_mem_of(const cpb_gpu_profile *prof, const cpb_problem *p, const char *method, int W, int N, int dp,
                      int streams, cpb_fixed_mem *out)
{
    memset(out, 0, sizeof *out);
    out->cuda_ctx = prof->cuda_ctx_bytes;
    int u = (int)cpb_knob_int(p, "ulysses_degree");
    if (u <= 0) u = prof->hw.gpus_per_node < p->C ? prof->hw.gpus_per_node : p->C; /* the hybrids' default: a node */
    method_pattern(method, p->C, u, &out->p2p_peers, &out->ring_comms);
    if (N > 1) out->ring_comms++;                 /* the model states' gathers / reduce-scatters */
    else if (W > 1 && dp > 1) out->ring_comms++;  /* replicated states: DDP's all-reduce */
    if (N > 1 && W > N) out->ring_comms++;        /* HSDP: the all-reduce across the replicas */
    out->channels = prof->nccl_channels;
    out->nccl = CPB_NCCL_BUFFSIZE * ((int64_t)out->ring_comms * out->channels +
                                     (int64_t)out->p2p_peers * CPB_NCCL_P2P_CHANNELS);
    out->cublas = CPB_CUBLAS_WS_BYTES + prof->cublaslt_ws_bytes;
    out->attn_ws = 0;
    out->streams = streams > 0 ? streams : 1;
    out->frag = CPB_ALLOC_LARGE_SEGMENT * out->streams;
    out->total = out->cuda_ctx + out->nccl + out->cublas + out->attn_ws + out->frag;
}

void cpb_fixed_mem_describe(const cpb_fixed_mem *f, char *buf, size_t len)
{
    const double M = 1048576.0;
    snprintf(buf, len,
             "CUDA context %.0f MiB (measured, lazy loading), NCCL buffers %.0f MiB (estimate: 4 MiB x (%d ring "
             "communicator%s x %d channels + %d point-to-point peer%s x %d channels)), cuBLAS workspaces %.1f MiB, "
             "attention workspace in the layer trial's trace, allocator reserve %.0f MiB (estimate: a 20 MiB segment "
             "per stream x %d)",
             f->cuda_ctx / M, f->nccl / M, f->ring_comms, f->ring_comms == 1 ? "" : "s", f->channels, f->p2p_peers,
             f->p2p_peers == 1 ? "" : "s", CPB_NCCL_P2P_CHANNELS, f->cublas / M, f->frag / M, f->streams);
}
