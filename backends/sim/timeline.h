/* timeline.h — the simulator's timing model: replay the traces of every rank of a world
 * on per-stream timelines and predict the forward, backward and step times.
 *
 * Rules (docs/simulator.md explains them and their limits):
 * - each rank has one timeline per stream; an entry starts when its stream is free and
 *   the events it waits for have completed (program order per stream, events across
 *   streams, a sync joins every stream of the rank);
 * - a compute op takes max(flops / (peak * eff), bytes / hbm_bw) + launch, with eff a
 *   function of the work in the call (GEMM and attention curves separate); a batched GEMM
 *   is one kernel, and a GEMM with fewer output tiles than SMs is split over k (split-K);
 * - a host<->device copy moves bytes/2 (the front-end counts source plus destination) at
 *   min(pcie_gpu_bw, pcie_node_bw / n), n the mean number of the node's GPUs copying in
 *   the same direction meanwhile (found by a fixed-point iteration over passes);
 * - a collective completes when its last participant has arrived (members matched by
 *   group and sequence number; send/recv waits for its two peers only) and then takes
 *   latency + bytes_sent / bus bandwidth, NVLink inside a node, the network when the
 *   group spans nodes (rank / gpus_per_node differ);
 * - set-up entries (outside trial/fwd and trial/bwd) take no time;
 * - only ranks 0 .. period-1 are replayed (sim_world.h); rank m arrives where rank
 *   m % period arrives at the collective moved back by the rank's distance to it. */
#ifndef CPB_SIM_TIMELINE_H
#define CPB_SIM_TIMELINE_H

#include "sim_hw.h"
#include "sim_world.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the critical path of a step spends its time on: compute ops on the GPU, collectives
 * (NVLink or network), host<->device copies and host fills. */
enum { CPB_SIM_CRIT_COMPUTE = 0, CPB_SIM_CRIT_COMM, CPB_SIM_CRIT_HOST, CPB_SIM_CRIT_COUNT };

typedef struct cpb_sim_timing {
    double fwd_s, bwd_s, step_s;
    int slowest_rank;                      /* the rank whose last entry ends last */
    int nstreams;
    char stream_names[CPB_MAX_STREAMS][24];
    double busy_s[CPB_MAX_STREAMS];        /* the slowest rank's busy time per stream */
    double comm_bytes;                     /* bytes sent by the busiest rank (timed phases) */
    double pcie_bytes;                     /* host<->device bytes of the busiest rank */
    int passes;                            /* fixed-point passes of the PCIe sharing */
    int64_t entries;                       /* trace entries replayed, all ranks */
    int replayed_ranks;                    /* the world's period (sim_world.h) */
    /* the critical path (from the last entry of the slowest rank back, each entry to the
     * one whose end set its start), its timed seconds by kind of work, and its
     * collectives' seconds by cpb_coll_kind */
    double crit_s[CPB_SIM_CRIT_COUNT];
    double crit_coll_s[CPB_COLL_KIND_COUNT];
} cpb_sim_timing;

/* Replay the world's traces (ranks 0 .. w->period-1; every rank by default).  Returns CPB_OK, or CPB_ERR_INVALID with a message in err
 * when the traces do not match (a collective some member never reaches, peers that
 * disagree), CPB_ERR_NOMEM_HOST when out of memory. */
int cpb_sim_timeline(cpb_sim_world *w, const cpb_sim_hw *hw, cpb_sim_timing *out, char *err,
                     size_t err_len);

/* Lower bounds on the times cpb_sim_timeline would give, from rank r's trace alone: each
 * stream runs its entries one after another, so the step lasts at least the sum of any one
 * stream's timed entries (ops at their modelled time with no PCIe sharing, collectives at
 * their transfer time for this rank's own bytes, never their wait), and the forward at
 * least that of its forward entries.  *fwd_s <= fwd_s and *step_s <= step_s of the replay
 * of any world whose ranks include r's trace (tests/unit/test_sim_bound.c). */
void cpb_sim_lower_bound(const cpb_sim_world *w, const cpb_sim_hw *hw, int r, double *fwd_s, double *step_s);

/* modelled duration of one op entry (exported for tests); share: see sim_entry.share */
double cpb_sim_op_time(const cpb_sim_hw *hw, const sim_entry *e);
/* efficiency curves (fraction of peak) */
double cpb_sim_gemm_eff(const cpb_sim_hw *hw, int64_t m, int64_t n, int64_t k, int64_t batch);
/* the split-K factor the GEMM curve assumes for an m x n x k GEMM of `batch` entries */
double cpb_sim_gemm_splits(const cpb_sim_hw *hw, int64_t m, int64_t n, int64_t k, int64_t batch);
double cpb_sim_attn_eff(const cpb_sim_hw *hw, int bwd, int64_t rows, int64_t heads, int64_t pairs);
/* the same for implementation impl (cpb_attn_impl: CPB_ATTN_CUDNN, as above, or
 * CPB_ATTN_OWN, our kernels' ceilings) */
double cpb_sim_attn_eff_of(const cpb_sim_hw *hw, int impl, int bwd, int64_t rows, int64_t heads, int64_t pairs);
/* the same for any implementation, with the head dim d the FlashAttention curves need
 * (CPB_ATTN_FA2, CPB_ATTN_FA3: sim_attn_curves.h; others as cpb_sim_attn_eff_of) */
double cpb_sim_attn_eff_d(const cpb_sim_hw *hw, int impl, int bwd, int64_t rows, int64_t heads, int64_t pairs,
                          int64_t d);

#ifdef __cplusplus
}
#endif
#endif
