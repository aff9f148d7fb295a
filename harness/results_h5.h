/* results_h5.h — the results file: an HDF5 table `/runs`, one row per trial.
 *
 * Rows are appended and flushed one at a time (H5Dset_extent + H5Dwrite + H5Fflush), so a
 * sweep killed mid-way leaves a valid file holding every finished row.  Serial HDF5, written
 * by rank 0 only, default (earliest) format bounds so that a file whose writer died reopens
 * without h5clear, fixed-length strings so that h5py reads it as a plain numpy record array.
 *
 * Each process that appends is a "session": a row of `/sessions` with its provenance
 * (command line, git commit, date, host, versions, GPU); every run row names its session.
 * The file's own attributes are the schema name and version plus the provenance of the
 * session that created it.  results/README.md documents every column.
 */
#ifndef CPB_RESULTS_H5_H
#define CPB_RESULTS_H5_H

#include <stdint.h>
#include <stddef.h>

#include "cpb.h"
#include "provenance.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CPB_RESULTS_SCHEMA "cpbench-results"
/* Bump when a column changes; files of another version are refused for appending (reading
 * converts by column name and works across versions). */
#define CPB_RESULTS_SCHEMA_VERSION 2

/* The columns of /runs.  X-macro so the struct, the HDF5 compound type and the column list
 * printed by `cpbench sweep --help` cannot disagree.
 *   S(name, len, doc)  fixed-length NUL-terminated string of len bytes
 *   I(name, doc)       int32      L(name, doc) int64      F(name, doc) float64
 *   A(name, n, doc)    int64[n] array */
#define CPB_RESULTS_COLUMNS(S, I, L, F, A)                                                    \
    I(session, "index into /sessions: the process that wrote the row")                      \
    S(timestamp, 32, "UTC time the row was written, ISO 8601")                               \
    S(method, 24, "method name (ring, ulysses, upipe, fpdt, offload, metp, tp, ...)")        \
    S(model, 32, "model preset")                                                             \
    S(backend, 8, "cpu, sim or cuda: sim rows are predictions, cpu and cuda rows measurements") \
    S(gpu, 48, "GPU name (cuda), simulator GPU profile (sim), or cpu")                      \
    S(scope, 8, "layer (one attention layer) or model (simulator's whole-model estimate)")  \
    S(status, 12, "ok, oom, skipped or error")                                              \
    S(reason, 512, "why the trial was skipped or failed (empty when ok)")                    \
    S(dtype, 8, "storage dtype (bf16, fp32)")                                                \
    I(world_size, "C, ranks / GPUs")                                                         \
    L(seq_len, "S, global tokens")                                                           \
    L(hidden, "D")                                                                           \
    I(heads, "H, query heads")                                                               \
    I(kv_heads, "G, key/value heads")                                                        \
    I(head_dim, "d")                                                                         \
    I(head_chunk, "upipe: query heads per stage (0 = method default)")                       \
    L(seq_chunk, "fpdt: global tokens per chunk (0 = method default)")                       \
    I(offload_group, "offload: heads per backward group (0 = default)")                      \
    I(ulysses_degree, "usp / hybrid: Ulysses group size (0 = default)")                      \
    S(fpdt_impl, 12, "fpdt: deepspeed (DeepSpeed's schedule, the default) or pipelined")     \
    S(framework, 16, "model scope: training setup (torchtitan, deepspeed); empty on layer rows") \
    L(host_ram_bytes, "sim: --host-ram, host memory of a node as asked (0 = the GPU profile's)") \
    I(warmup, "untimed warm-up steps")                                                       \
    I(iters, "timed steps (step time = median of the slowest rank)")                         \
    L(capacity_bytes, "device capacity the trial ran under")                                 \
    L(peak_bytes, "tracked device high-water (max_memory_allocated)")                        \
    L(reserved_bytes, "allocator-pool reserved high-water (max_memory_reserved; = peak on cpu/sim)") \
    L(device_used_bytes, "driver-level used device memory above the baseline (cuda only, else 0)") \
    L(intermediate_bytes, "high-water of non-fixed tags (paper's intermediate tensor memory)") \
    L(host_peak_bytes, "pinned host high-water (offloading methods)")                        \
    L(model_state_bytes, "model scope: sharded params, grads, optimizer states at the peak (0 on layer rows)") \
    L(attn_act_bytes, "model scope: the attention layer's activations at the peak")          \
    L(other_bytes, "model scope: everything else at the peak (gathered weights, buffers, checkpoints, MLP, loss)") \
    L(fwd_peak_bytes, "device high-water during forward")                                    \
    L(bwd_peak_bytes, "device high-water during backward")                                   \
    A(at_peak_bytes, CPB_TAG_COUNT, "device bytes by tag at the peak; names in the attribute at_peak_tags") \
    F(step_s, "forward+backward seconds (sim: modelled)")                                    \
    F(fwd_s, "forward seconds")                                                              \
    F(bwd_s, "backward seconds")                                                             \
    F(tokens_per_s, "S / step_s")                                                            \
    F(tokens_per_s_per_gpu, "S / (step_s * C), the paper's metric")                          \
    F(tflops_per_gpu, "model TFLOP/s per GPU (DESIGN section 6)")                            \
    F(comm_bytes, "bytes sent by the busiest rank")                                          \
    F(pcie_bytes, "host<->device bytes of the busiest rank")

typedef struct cpb_results_row {
#define CPB_RCOL_S_(name, len, doc) char name[len];
#define CPB_RCOL_I_(name, doc) int32_t name;
#define CPB_RCOL_L_(name, doc) int64_t name;
#define CPB_RCOL_F_(name, doc) double name;
#define CPB_RCOL_A_(name, n, doc) int64_t name[n];
    CPB_RESULTS_COLUMNS(CPB_RCOL_S_, CPB_RCOL_I_, CPB_RCOL_L_, CPB_RCOL_F_, CPB_RCOL_A_)
#undef CPB_RCOL_S_
#undef CPB_RCOL_I_
#undef CPB_RCOL_L_
#undef CPB_RCOL_F_
#undef CPB_RCOL_A_
} cpb_results_row;

/* A zeroed row with status "ok" and scope "layer". */
void cpb_results_row_init(cpb_results_row *r);
/* Copy s into a fixed-length column, truncating (the row's strings always end in NUL). */
void cpb_results_set_str(char *dst, size_t len, const char *s);
#define CPB_RESULTS_SET(row, col, s) cpb_results_set_str((row)->col, sizeof (row)->col, (s))

typedef struct cpb_results cpb_results; /* an open results file */

/* Open `path` for appending, creating it when absent.  An existing file must be a cpbench
 * results file of this schema version; anything else (not HDF5, no schema attribute, another
 * version, a /runs of another layout) is refused with CPB_ERR_IO and a message, and left
 * untouched (it is validated read-only before it is opened for writing).  Records `prov` as
 * a new row of /sessions.  Call on rank 0 only. */
int cpb_results_open(const char *path, const cpb_provenance *prov, cpb_results **out,
                     char *err, size_t err_len);
/* Append one row (its `session` is set to this file's session) and flush it to disk. */
int cpb_results_append(cpb_results *f, cpb_results_row *row, char *err, size_t err_len);
int64_t cpb_results_rows(const cpb_results *f); /* rows in /runs, earlier sessions included */
void cpb_results_close(cpb_results *f);

/* Open (or create) `path`, append `row` as one new session whose provenance is argv and the
 * row's backend, gpu and world size, and close: what `cpbench run --out FILE` does.  Rank 0
 * only. */
int cpb_results_write_row(const char *path, int argc, char **argv, cpb_results_row *row,
                          char *err, size_t err_len);

/* Read every row of /runs (malloc'd array in *rows, free() it).  Checks the schema name;
 * converts by column name, so files of other versions read too (missing columns zero). */
int cpb_results_read(const char *path, cpb_results_row **rows, int64_t *n, char *err,
                     size_t err_len);

/* 1 when rows a and b describe the same trial: method, model, backend, gpu, scope, dtype,
 * world size, sequence length, shape, method options, framework and host memory (an
 * interrupted sweep skips such points).  `gpu` is compared only when both rows name one. */
int cpb_results_same_point(const cpb_results_row *a, const cpb_results_row *b);

/* Column names in table order, NULL-terminated (for docs and tests). */
const char *const *cpb_results_column_names(void);

#ifdef __cplusplus
}
#endif
#endif
