/* print_row.c — a trial's row as `cpbench run` prints it: memory with the breakdown by
 * tag, the times, the traffic. */
#include "print_row.h"
#include "progress.h"

#include <string.h>

/* bytes in the largest binary unit that keeps the number >= 1 (tiny test problems too) */
static const char *human(double b, char *buf, size_t n)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && (b >= 1024.0 || b <= -1024.0)) {
        b /= 1024.0;
        u++;
    }
    snprintf(buf, n, u ? "%10.3f %-3s" : "%10.0f %-3s", b, unit[u]);
    return buf;
}

void cpb_print_row(FILE *f, const cpb_row *row, const cpb_backend *be)
{
    const int predicted = be->models_time;
    char b1[32], b2[32];
    fprintf(f, "%s on %s, scope %s%s, S = %lld, %d %s%s (backend %s, %s)\n", row->method, row->model, row->scope,
            strcmp(row->scope, "layer") == 0 ? " (one attention layer's forward and backward, not a training step)" : "",
            (long long)row->seq_len, row->world_size, predicted ? "simulated " : "",
            row->world_size == 1 ? "rank" : "ranks", row->backend, row->gpu);
    if (row->model_layers > 0)
        fprintf(f, "model: %d layers, %.2fB parameters, %s MLP (%s), %s, biases: %s, %s\n", row->model_layers,
                row->model_params / 1e9, row->model_mlp_matrices == 2 ? "two-matrix" : "gated", row->model_act,
                row->model_tied ? "tied embeddings" : "untied embeddings", row->model_bias[0] ? row->model_bias : "none",
                row->model_norm);
    fprintf(f, "status: %s%s%s\n", row->status, row->reason[0] ? " — " : "", row->reason);
    /* what served each call class (a delta backward runs on our kernels whatever --attn says) */
    if (row->attn_impl[0])
        fprintf(f, "attention: forward %s, backward %s (%s)\n", row->attn_fwd_impl[0] ? row->attn_fwd_impl : "-",
                row->attn_bwd_impl[0] ? row->attn_bwd_impl : "-", row->attn_calls);
    if (row->estimates[0]) fprintf(f, "estimates: %s (the prediction took these from estimates, not measurements)\n", row->estimates);
    if (row->code != CPB_OK && row->code != CPB_ERR_OOM) return;
    fprintf(f, "memory (rank %d%s):\n", row->worst_rank, row->code == CPB_ERR_OOM ? ", up to the failed allocation" : "");
    fprintf(f, "  peak          %s", human((double)row->peak_bytes, b1, sizeof b1));
    if (row->capacity_bytes > 0) {
        char cap[32], *c = cap;
        human((double)row->capacity_bytes, cap, sizeof cap);
        while (*c == ' ') c++;
        fprintf(f, "  (%.1f%% of %s)", 100.0 * row->peak_bytes / row->capacity_bytes, c);
    }
    fprintf(f, "\n  forward peak  %s\n", human((double)row->fwd_peak_bytes, b1, sizeof b1));
    fprintf(f, "  backward peak %s\n", human((double)row->bwd_peak_bytes, b1, sizeof b1));
    fprintf(f, "  intermediate  %s\n", human((double)row->intermediate_bytes, b1, sizeof b1));
    fprintf(f, "  host (pinned) %s\n", human((double)row->host_peak_bytes, b1, sizeof b1));
    /* the allocator pool's high-water (= peak where there is no caching pool) and, where the
     * backend sees the driver, what it saw used beyond the start-up baseline */
    fprintf(f, "  reserved      %s\n", human((double)row->reserved_bytes, b1, sizeof b1));
    if (be->mem_highwater)
        fprintf(f, "  device used   %s\n", human((double)row->device_used_bytes, b1, sizeof b1));
    fprintf(f, "  by tag at the peak (tag high-water in brackets):\n");
    for (int t = 0; t < CPB_TAG_COUNT; t++)
        if (row->at_peak_bytes[t] || row->tag_peak[t])
            fprintf(f, "    %-10s %s  [%s]%s\n", cpb_tag_name(t), human((double)row->at_peak_bytes[t], b1, sizeof b1),
                    human((double)row->tag_peak[t], b2, sizeof b2), cpb_tag_is_fixed(t) ? "" : "  intermediate");
    /* an OOM (or any row that did not run to the end) has no step time or throughput */
    if (row->code != CPB_OK) {
        fprintf(f, "time: none (%s: no step completed, so no step time or throughput)\n", row->status);
        return;
    }
    if (predicted) fprintf(f, "time (predicted by the timing model):\n");
    else fprintf(f, "time (measured on %s, median of the slowest rank):\n", cpb_backend_time_clock(be));
    char t1[32], t2[32], t3[32];
    cpb_format_seconds(t1, sizeof t1, row->fwd_s);
    cpb_format_seconds(t2, sizeof t2, row->bwd_s);
    cpb_format_seconds(t3, sizeof t3, row->step_s);
    fprintf(f, "  forward       %10s s\n  backward      %10s s\n  step          %10s s\n", t1, t2, t3);
    fprintf(f, "  tokens/s/GPU  %10.2f\n  TFLOP/s/GPU   %10.3f  (model FLOPs counted as causal; as megatron %.3f; as nemo %.3f)\n",
            row->tokens_per_s_per_gpu, row->tflops_per_gpu, row->tflops_per_gpu_megatron, row->tflops_per_gpu_nemo);
    if (row->peak_tflops > 0)
        fprintf(f, "  MFU           %9.1f%%  causal, %.1f%% megatron, %.1f%% nemo, of a %.0f TFLOP/s peak (results/README.md)\n",
                100 * row->mfu_causal, 100 * row->mfu_megatron, 100 * row->mfu_nemo, row->peak_tflops);
    else
        fprintf(f, "  MFU                  -  (no GPU profile gives this device's peak)\n");
    if (predicted) {
        fprintf(f, "  busy per stream (slowest rank):\n");
        for (int s = 0; s < row->nstreams; s++)
        {
            cpb_format_seconds(t1, sizeof t1, row->stream_busy_s[s]);
            fprintf(f, "    %-12s %10s s\n", row->stream_names[s], t1);
        }
        double crit = row->crit_compute_s + row->crit_comm_s + row->crit_host_s;
        if (crit > 0)
            fprintf(f, "  critical path: compute %.1f%%, collectives %.1f%%, host copies %.1f%%\n",
                    100 * row->crit_compute_s / crit, 100 * row->crit_comm_s / crit, 100 * row->crit_host_s / crit);
        if (row->replayed_ranks > 0 && row->replayed_ranks < row->world_size)
            fprintf(f, "  ranks simulated: %d of %d (the others are alike by symmetry%s)\n", row->replayed_ranks,
                    row->world_size, row->sym_op_diff > 0 ? ", up to some ops' work" : "");
        if (row->sym_op_diff > 0)
            fprintf(f, "  alike ranks' op times differ by %.3f%% of the op time\n", 100 * row->sym_op_diff);
        if (row->sym_fallback[0]) fprintf(f, "  ranks simulated: every rank of %d: %s\n", row->world_size, row->sym_fallback);
    }
    fprintf(f, "  bytes sent    %s per rank (busiest)\n", human(row->comm_bytes, b1, sizeof b1));
    fprintf(f, "  PCIe copies   %s per rank\n", human(row->pcie_bytes, b1, sizeof b1));
}
