/* cuda_tools.h — the cuda backend's self-test and kernel benchmark (`cpbench selftest`,
 * `cpbench bench-kernels`).  Written against the runtime API and the backend's optional
 * hooks only (cpb_backend.h), so they build in every configuration and run on whatever
 * backend --backend names: the cuda plugin on a GPU, its CPU stand-in under ctest, or the
 * cpu backend itself (the tools checking themselves).  Collective over the MPI ranks when
 * main started MPI (driver/ranks.h). */
#ifndef CPB_CUDA_TOOLS_H
#define CPB_CUDA_TOOLS_H

#include <stdint.h>

#include "cpb_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cpb_tool_opts {
    const cpb_backend *be;   /* the backend under test / measured */
    cpb_ctx_opts ctx;        /* --comm, --mem-cap (use_mpi is set by the tool) */
    int warmup, iters;       /* bench-kernels: per timed region */
    int64_t seq_start, seq_stop; /* bench-kernels: attention lengths (0: 4096 .. 65536) */
    const char *out;         /* bench-kernels: the calibration file to write */
} cpb_tool_opts;

/* Every op of o->be against the cpu backend on small shapes, collectives against values
 * computed here, streams and events, the memory accounting.  One line per check; exit code
 * 0 when every check passed, 1 when one failed, 2 when nothing could be tested (no device,
 * a backend without data). */
int cpb_selftest(const cpb_tool_opts *o);

/* What o->be's kernels and links achieve on this machine, printed and with o->out written
 * as a simulator calibration file (driver/gpu_profiles.h lists the keys).  Exit code as
 * cpb_selftest's. */
int cpb_bench_kernels(const cpb_tool_opts *o);

#ifdef __cplusplus
}
#endif
#endif
