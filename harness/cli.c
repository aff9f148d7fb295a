/* cli.c — helpers every subcommand shares (cli.h). */
#include "cli.h"

#include <stdio.h>

#include "ranks.h"

int cpb_cli_exit_code(int status)
{
    if (status == CPB_OK || status == CPB_ERR_OOM) return 0;
    return status == CPB_ERR_INVALID ? 2 : 1;
}

const cpb_backend *cpb_cli_backend(const cpb_cli *c, const char *cmd)
{
    if (!c->be && cpb_ranks_rank() == 0) fprintf(stderr, "cpbench %s: --backend: %s\n", cmd, c->be_why);
    return c->be;
}
