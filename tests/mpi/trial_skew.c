/* trial_skew.c — a rank that reaches a trial late does not lengthen the others' measured
 * step (a barrier precedes the step's clock; driver/trial.c).
 *
 * Under mpirun -np 2 on the cpu backend: rank 1 sleeps 2 s before a tiny ulysses step
 * (milliseconds of work).  Without the barrier rank 0's clock would start at once and its
 * forward would wait the 2 s in its first all-to-all; with it, every rank's measured step
 * is the step.  The bound, 1 s, is half the planted skew: the test checks that the skew is
 * not measured, not how fast anything runs. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cpb_backend.h"
#include "cpb_method.h"
#include "cpb_presets.h"
#include "mpi_test_ctx.h"
#include "registry.h"
#include "trial.h"

int main(void)
{
    cpb_ctx *ctx = cpb_test_mpi_ctx("trial_skew", &cpb_backend_cpu, "");
    int rank = cpb_rank(ctx), C = cpb_world_size(ctx);
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cpb_preset_find("tiny", &p);
    p.S = 64 * C;
    p.C = C;
    p.dtype = CPB_FP32;
    const cpb_method *m = cpb_method_find("ulysses");
    cpb_layer L;
    static cpb_row r;
    cpb_row_init(&r);
    int rc = m ? cpb_trial_setup(ctx, m, &p, NULL, 1, &L) : CPB_ERR_INVALID;
    if (rc == CPB_OK && rank == 1) sleep(2);
    if (rc == CPB_OK) rc = cpb_trial_step(ctx, m, &L, &r);
    double step = rc == CPB_OK ? r.step_s : 1e9, worst = step;
    MPI_Allreduce(&step, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("trial_skew: slowest measured step %.3f s with a 2 s late rank (%s)\n", worst,
               rc == CPB_OK ? cpb_status_name(rc) : cpb_errmsg(ctx));
    cpb_free_all(ctx);
    cpb_ctx_destroy(ctx);
    MPI_Finalize();
    return rc == CPB_OK && worst < 1.0 ? 0 : 1;
}
