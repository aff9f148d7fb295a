/* ranks.c — see ranks.h.  The one place besides main that talks to MPI about the world:
 * the driver's other files call these helpers. */
#include "ranks.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "watchdog.h"

static int mpi_on;

void cpb_ranks_begin(int mpi_started)
{
    mpi_on = mpi_started != 0;
}

int cpb_ranks_mpi(void)
{
    return mpi_on;
}

/* MPI is up and not yet finalised: a destructor or exit path that asks for the rank after
 * MPI_Finalize (Open MPI 5 aborts a call on the world communicator then, exit 14) gets the
 * answer of a single process */
static int mpi_usable(void)
{
    int fin = 0;
    if (!mpi_on) return 0;
    MPI_Finalized(&fin);
    return !fin;
}

int cpb_ranks_rank(void)
{
    int r = 0;
    if (mpi_usable()) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

int cpb_ranks_size(void)
{
    int n = 1;
    if (mpi_usable()) MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

void cpb_ranks_mpi_version(char *out, size_t len)
{
    if (!len) return;
    out[0] = 0;
    if (!mpi_on) return;
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int vl = 0;
    if (MPI_Get_library_version(v, &vl) != MPI_SUCCESS) return;
    v[strcspn(v, "\r\n")] = 0; /* Open MPI's string runs over several lines */
    snprintf(out, len, "%s", v);
}

int cpb_agree_status(int rc, char *msg, size_t len)
{
    if (!mpi_on) return rc;
    cpb_watchdog_beat("agreeing with the other ranks on an outcome");
    int world = cpb_ranks_size(), me = cpb_ranks_rank();
    int worst = rc, first = rc != 0 ? me : world, first_all = world;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&first, &first_all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (worst == 0 || !msg || !len) return worst;
    char *buf = calloc(1, len);
    if (!buf) return worst;
    snprintf(buf, len, "%s", msg);
    MPI_Bcast(buf, (int)len, MPI_CHAR, first_all, MPI_COMM_WORLD);
    if (first_all != 0) snprintf(msg, len, "rank %d: %s", first_all, buf);
    else snprintf(msg, len, "%s", buf);
    free(buf);
    cpb_watchdog_beat(NULL);
    return worst;
}

int cpb_agree_bcast_int(int v)
{
    if (!mpi_on) return v;
    cpb_watchdog_beat("waiting for rank 0's word");
    MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
    cpb_watchdog_beat(NULL);
    return v;
}

void cpb_agree_bcast(void *buf, size_t bytes, int root)
{
    if (!mpi_on) return;
    cpb_watchdog_beat("receiving a rank's data");
    MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD);
    cpb_watchdog_beat(NULL);
}

void cpb_agree_allgather(const void *mine, void *all, size_t bytes)
{
    if (!mpi_on) {
        memcpy(all, mine, bytes);
        return;
    }
    cpb_watchdog_beat("gathering every rank's start-up");
    MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    cpb_watchdog_beat(NULL);
}

void cpb_agree_max_double(double *v, int n)
{
    cpb_watchdog_beat("reducing over the ranks");
    if (mpi_on) MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
}

void cpb_agree_max_i64(int64_t *v, int n)
{
    if (mpi_on) MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
}

void cpb_agree_sum_int(int *v, int n)
{
    if (mpi_on) MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
}

double cpb_agree_maxloc(double v, int *rank)
{
    struct { double v; int r; } in = {v, cpb_ranks_rank()}, out = in;
    cpb_watchdog_beat("reducing over the ranks");
    if (mpi_on) MPI_Allreduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    if (rank) *rank = out.r;
    return out.v;
}

void cpb_agree_barrier(void)
{
    if (!mpi_on) return;
    cpb_watchdog_beat("waiting for every rank at a barrier");
    MPI_Barrier(MPI_COMM_WORLD);
    cpb_watchdog_beat(NULL);
}
