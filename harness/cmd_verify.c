/* cmd_verify.c — `cpbench verify`: see verify.h and the README.  Owns MPI's life cycle for
 * the command (the contexts it creates only join it), so it can create one context per
 * method and gather results with MPI between them. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cpb_cuda.h"
#include "verify.h"

/* before MPI_Init: print argument errors once, from the launcher's rank 0 */
static int launcher_rank(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v) return atoi(v);
    }
    return 0;
}

int cpb_cmd_verify(int argc, char **argv)
{
    cpb_args a;
    char err[1024];
    cpb_args_defaults(&a);
    if (cpb_args_parse(argc - 1, argv + 1, &a, err, sizeof err) != CPB_OK) {
        if (launcher_rank() == 0) fprintf(stderr, "cpbench verify: %s\n", err);
        return 2;
    }
    /* a cuda backend that cannot start here (no GPU, a library missing) refuses before any work */
    char why[8192];
    if (strcmp(a.backend, "cuda") == 0 && cpb_cuda_device_count(why, sizeof why) <= 0) {
        if (launcher_rank() == 0) fprintf(stderr, "cpbench verify: the cuda backend cannot run here: %s\n", why);
        return 2;
    }
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS) {
        fprintf(stderr, "cpbench verify: MPI_Init failed (start it with mpirun -np C)\n");
        return 1;
    }
    int rc = a.n_cases ? cpb_verify_cases(&a) : cpb_verify_invocation(&a, NULL);
    fflush(stdout);
    if (!inited) MPI_Finalize();
    return rc;
}
