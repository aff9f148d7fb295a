/* model_scope_host_share.c — how much of a node's host memory one GPU's process may use in
 * the whole-model estimate.
 *
 * A node's host memory is shared by the training processes running on it, one per GPU in
 * use: a job on fewer GPUs than the node has leaves the rest of the memory to its own
 * processes (nothing else on the node claims it).  Dividing by the node's GPU count, as if
 * every GPU of the node trained, makes a 1-GPU job look host-bound 8x too early.  The
 * published case that shows it: ALST trains Llama-8B at 500K tokens on ONE H100 of a node
 * with 1.9 TB of host memory, the parameters, the optimizer and every layer's checkpointed
 * input offloaded to the CPU (github.com/snowflakedb/ArcticTraining
 * projects/sequence-parallelism/run-h100-sp1-llama-8b.yml and README.md "Environment used to
 * create these examples"; arXiv 2506.13996): about 130 GB of model states and 130 GB of
 * checkpoints in one process, more than an eighth of the node.
 *
 * The processes on a node: min(GPUs of the job, GPUs per node); a job spanning nodes fills
 * each (the launchers place ranks node by node).  --host-mem-cap still overrides. */
#include "gpu_profiles.h"
#include "model_scope.h"

int64_t cpb_host_per_used_gpu(const struct cpb_gpu_profile *prof, int64_t gpus)
{
    int64_t gpn = prof->hw.gpus_per_node > 0 ? prof->hw.gpus_per_node : 8;
    int64_t on_node = gpus > 0 && gpus < gpn ? gpus : gpn;
    return prof->host_node_bytes / on_node;
}
