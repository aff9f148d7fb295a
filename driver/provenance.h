/* provenance.h — where a results row came from: the command line, the code (git commit),
 * the machine, the library versions and the GPU (or the simulator's GPU profile).
 * Collected once per process and stored with the results (results_h5.h: /sessions and the
 * file attributes). */
#ifndef CPB_PROVENANCE_H
#define CPB_PROVENANCE_H

#include <stddef.h>

#include "cpb_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cpb_provenance {
    char command_line[2048]; /* argv joined with spaces, shell-quoted where needed */
    char git_commit[48];     /* CPB_GIT_COMMIT of the build */
    char date[32];           /* UTC, ISO 8601 */
    char host[128];
    char backend[8];         /* cpu | sim | cuda */
    char gpu[128];           /* the rows' gpu column: device name, sim profile, or "cpu" ("" when
                                the devices are known only to the trials, e.g. --isolate) */
    int gpu_count;           /* ranks: GPUs used (cuda), simulated world (sim), MPI ranks (cpu) */
    char hdf5_version[32];
    char mpi_version[256];   /* MPI_Get_library_version when MPI was started, else "" */
    char cuda_version[64];   /* the backend's versions hook: "runtime 12.4, driver 12.6" */
    char nccl_version[32];   /* ... NCCL, when the backend links it */
    char cudnn_version[32];  /* ... cuDNN, when the backend loaded it */
    char attention[384];     /* the attention implementations: the cuda backend's ("attention:
                                cudnn (compiled in; ...), own"), or what the sim profile models */
} cpb_provenance;

/* Fill p.  be/gpu/gpu_count describe what produced the numbers (gpu may be NULL).  Never
 * fails: unknown items stay empty. */
void cpb_provenance_collect(cpb_provenance *p, int argc, char **argv, const cpb_backend *be,
                            const char *gpu, int gpu_count);

/* argv joined into one shell-pasteable line (arguments with spaces or quotes are quoted). */
void cpb_provenance_join_argv(char *out, size_t len, int argc, char **argv);

/* Current UTC time as ISO 8601 ("2026-11-29T09:00:00Z"). */
void cpb_provenance_utc_now(char *out, size_t len);

#ifdef __cplusplus
}
#endif
#endif
