/* mpi_test_ctx.h — the start of an MPI test program that has its own main: like cpbench's
 * main it owns MPI (MPI_Init_thread with MPI_THREAD_MULTIPLE: the cuda backend's CPU
 * stand-in runs collectives on stream threads), then makes a context of backend `be` over
 * the MPI world with the race check on.  On a failure it prints "prog: why" and ends the
 * job. */
#ifndef CPB_MPI_TEST_CTX_H
#define CPB_MPI_TEST_CTX_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpb_backend.h"
#include "ranks.h"

static inline cpb_ctx *cpb_test_mpi_ctx(const char *prog, const cpb_backend *be, const char *why_no_backend)
{
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "%s: MPI_Init_thread failed\n", prog);
        exit(1);
    }
    cpb_ranks_begin(1);
    char err[2048];
    cpb_ctx_opts co = {0};
    co.use_mpi = 1;
    co.race_check = 1;
    cpb_ctx *ctx = NULL;
    if (!be || cpb_ctx_create(be, &co, &ctx, err, sizeof err) != CPB_OK) {
        fprintf(stderr, "%s: %s\n", prog, be ? err : why_no_backend);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return ctx;
}

#endif
