/* watchdog.h — ends every rank when a run over several MPI ranks makes no progress: a rank
 * that is stopped (SIGSTOP, a debugger) or dead leaves the others waiting in a collective
 * forever, so a thread of each rank watches a progress counter the driver bumps (at every
 * agreement across ranks, every trial step, every point of a sweep).  When it has not
 * moved for --timeout seconds the thread prints what the rank was doing and ends the job
 * with MPI_Abort (every rank, the stopped one included, is killed by the launcher).
 *
 * A single process (the simulator, `cpbench list`) runs no watchdog: there is no peer to
 * wait for.  The cuda backend's NCCL calls have their own watchdog (the backend's); this
 * one is the driver's, over MPI. */
#ifndef CPB_WATCHDOG_H
#define CPB_WATCHDOG_H

#ifdef __cplusplus
extern "C" {
#endif

/* Start the watchdog thread (once; MPI must be initialised).  mpi_abort: MPI was given
 * MPI_THREAD_MULTIPLE, so the thread may call MPI_Abort; otherwise it prints and exits,
 * and the launcher ends the other ranks.  0, or -1 when no thread could be started. */
int cpb_watchdog_start(double timeout_s, int mpi_abort);
/* Progress: `doing` (a string that outlives the call) says what comes next, for the
 * message.  Cheap; a no-op when no watchdog runs. */
void cpb_watchdog_beat(const char *doing);
/* MPI is being finalised: a timeout from now on exits without calling MPI. */
void cpb_watchdog_finalizing(void);
/* Stop and join the thread. */
void cpb_watchdog_stop(void);

#ifdef __cplusplus
}
#endif
#endif
