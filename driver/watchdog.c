/* watchdog.c — see watchdog.h. */
#include "watchdog.h"

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "ranks.h"

static atomic_ulong beats;
static _Atomic(const char *) doing = "starting";
static atomic_int running, finalizing;
static int stop_flag; /* under lock */
static pthread_t thread;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static double timeout;
static int may_abort;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *watch(void *arg)
{
    (void)arg;
    const int rank = cpb_ranks_rank();
    unsigned long last = atomic_load(&beats);
    double since = now_s();
    /* check a few times per timeout, at least once a second */
    double tick = timeout / 4 < 1.0 ? timeout / 4 : 1.0;
    pthread_mutex_lock(&lock);
    while (!stop_flag) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        double end = (double)until.tv_sec + 1e-9 * (double)until.tv_nsec + tick;
        until.tv_sec = (time_t)end;
        until.tv_nsec = (long)((end - (double)(time_t)end) * 1e9);
        pthread_cond_timedwait(&wake, &lock, &until); /* cpb_watchdog_stop wakes it at once */
        if (stop_flag) break;
        unsigned long b = atomic_load(&beats);
        double t = now_s();
        if (b != last) {
            last = b;
            since = t;
            continue;
        }
        if (t - since < timeout) continue;
        fprintf(stderr,
                "cpbench: rank %d: no progress for %.0f s (--timeout %g) while %s: another rank is stopped, dead or "
                "much slower; ending every rank (give a larger --timeout if a trial step legitimately takes longer)\n",
                rank, t - since, timeout, atomic_load(&doing));
        fflush(stderr);
        if (may_abort && !atomic_load(&finalizing)) MPI_Abort(MPI_COMM_WORLD, 1);
        _exit(1);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

int cpb_watchdog_start(double timeout_s, int mpi_abort)
{
    if (atomic_load(&running) || !(timeout_s > 0)) return 0;
    timeout = timeout_s;
    may_abort = mpi_abort;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wake, &ca);
    pthread_condattr_destroy(&ca);
    stop_flag = 0;
    if (pthread_create(&thread, NULL, watch, NULL) != 0) return -1;
    atomic_store(&running, 1);
    return 0;
}

void cpb_watchdog_beat(const char *what)
{
    if (what) atomic_store(&doing, what);
    atomic_fetch_add(&beats, 1);
}

void cpb_watchdog_finalizing(void)
{
    atomic_store(&finalizing, 1);
    cpb_watchdog_beat("finalising MPI");
}

void cpb_watchdog_stop(void)
{
    if (!atomic_load(&running)) return;
    pthread_mutex_lock(&lock);
    stop_flag = 1;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
    pthread_join(thread, NULL);
    atomic_store(&running, 0);
}
