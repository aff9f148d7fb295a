/* cli.c — helpers every subcommand shares (cli.h). */
#include "cli.h"

#include <stdio.h>

#include "ranks.h"
#include "results_h5.h"

int cpb_cli_exit_code(int status)
{
    if (status == CPB_OK || status == CPB_ERR_OOM) return 0;
    return status == CPB_ERR_REFUSED ? 2 : 1;
}

const cpb_backend *cpb_cli_backend(const cpb_cli *c, const char *cmd)
{
    if (!c->be && cpb_ranks_rank() == 0) fprintf(stderr, "cpbench %s: --backend: %s\n", cmd, c->be_why);
    return c->be;
}

/* --out checked before anything runs, on rank 0 (which writes it), for every rank:
 * 0, or the exit code with the message printed */
int cpb_cli_check_out(const cpb_args *a, const char *cmd)
{
    if (!a->out) return 0;
    char err[1024] = "";
    int rc = cpb_ranks_rank() == 0 ? cpb_results_check_target(a->out, a->force, err, sizeof err) : CPB_OK;
    rc = cpb_agree_status(rc, err, sizeof err);
    if (rc == CPB_OK) return 0;
    if (cpb_ranks_rank() == 0) fprintf(stderr, "cpbench %s: --out: %s\n", cmd, err);
    return rc == CPB_ERR_INVALID ? 2 : 1;
}
