/* ranks.h — this process among the MPI ranks, as the driver sees them, and agreement
 * across ranks.
 *
 * main() starts MPI (MPI_Init_thread, MPI_THREAD_MULTIPLE) for the commands whose backend
 * runs one MPI rank per process, and says so with cpb_ranks_begin(1); nothing else in the
 * program initialises or finalises MPI.  Every helper below is collective over
 * MPI_COMM_WORLD when MPI was started, and the identity on a world of one when it was not
 * (sim runs, `cpbench list`).  Each helper is progress for the watchdog (watchdog.h). */
#ifndef CPB_RANKS_H
#define CPB_RANKS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void cpb_ranks_begin(int mpi_started);
/* 1 when main started MPI */
int cpb_ranks_mpi(void);
int cpb_ranks_rank(void);
int cpb_ranks_size(void);
/* MPI_Get_library_version's first line ("" without MPI) */
void cpb_ranks_mpi_version(char *out, size_t len);

/* The worst status over the ranks (the largest code: CPB_OK is 0); msg becomes the message
 * of the lowest rank that failed, prefixed "rank N: " when that is not rank 0.  msg must
 * hold len bytes on every rank. */
int cpb_agree_status(int rc, char *msg, size_t len);
/* rank 0's value */
int cpb_agree_bcast_int(int v);
/* bytes from rank `root` to every rank */
void cpb_agree_bcast(void *buf, size_t bytes, int root);
/* every rank's `bytes` of mine, in rank order, into all (size * bytes) */
void cpb_agree_allgather(const void *mine, void *all, size_t bytes);
/* element-wise maximum / sum over the ranks, in place */
void cpb_agree_max_double(double *v, int n);
void cpb_agree_max_i64(int64_t *v, int n);
void cpb_agree_sum_int(int *v, int n);
/* the largest value over the ranks and the lowest rank holding it */
double cpb_agree_maxloc(double v, int *rank);
/* every rank waits for every other */
void cpb_agree_barrier(void);

#ifdef __cplusplus
}
#endif
#endif
