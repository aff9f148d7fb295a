/* sweep_isolate.h — `cpbench sweep --isolate`: each trial in its own process.
 *
 * The sweep (a plain process, not under mpirun) forks and execs `cpbench run` with the
 * sweep's own options plus --method M --seq S --out TMP.h5, and reads the row back.  On the
 * cpu and cuda backends the child is started as `mpirun -np C cpbench run ...` (C from
 * --gpus; the launcher from $CPB_MPIRUN, default "mpirun", with extra flags from
 * $CPB_MPIRUN_FLAGS).  A child that dies without writing its row (a crash, the kernel's
 * OOM killer, a driver error the tracked capacity did not foresee) becomes a row with status
 * "error" and the reason: its exit status and the last line it printed.
 *
 * The trial's folder is $TMPDIR/cpbench-isolate-XXXXXX (/tmp without TMPDIR).  The sweep's
 * child is a keeper that dies with the sweep (PR_SET_PDEATHSIG): when the sweep is killed,
 * the keeper ends the trial (SIGTERM, then SIGKILL) and removes the folder, so no trial
 * outlives its sweep holding its file's lock. */
#ifndef CPB_SWEEP_ISOLATE_H
#define CPB_SWEEP_ISOLATE_H

#include <stddef.h>
#include <stdint.h>

#include "results_h5.h"
#include "row.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The child's argv (NULL-terminated, malloc'd strings; free with cpb_isolate_free_argv):
 * [launcher...] exe run <sweep options without --method, --seq, --seq-start, --seq-stop,
 * --seq-list, --factor, --bisect, --out, --isolate> --method method --seq S --out out.
 * `opts` are the sweep's options (after the command name).  `mpi_np` > 0 prefixes the MPI
 * launcher. */
char **cpb_isolate_argv(const char *exe, int nopts, char **opts, const char *method,
                        int64_t S, const char *out, int mpi_np);
void cpb_isolate_free_argv(char **argv);

/* Run one isolated trial and fill *row from the child's results file (or, when the child
 * wrote none, an "error" row with the reason).  `tmpl` gives the row's identifying columns
 * for that case.  Returns CPB_OK when *row is filled; an error only when no child could be
 * started (message in err). */
int cpb_isolate_trial(const char *exe, int nopts, char **opts, const char *method, int64_t S,
                      int mpi_np, const cpb_row *tmpl, cpb_row *row, char *err,
                      size_t err_len);

#ifdef __cplusplus
}
#endif
#endif
