/* cmd_tools.c — `cpbench selftest` and `cpbench bench-kernels`: the cuda backend's tools
 * (backends/cuda/tools) on the backend --backend names. */
#include <stdio.h>

#include "cli.h"
#include "cuda_tools.h"
#include "ranks.h"
#include "registry.h"

/* the tools are the cuda backend's: --backend names another (the cpu backend checks the
 * tools themselves, a stand-in plugin the host code) */
static const cpb_backend *tool_backend(const cpb_cli *c, const char *cmd)
{
    if (c->a.backend_given) return cpb_cli_backend(c, cmd);
    char why[512];
    const cpb_backend *be = cpb_backend_find("cuda", why, sizeof why);
    if (!be && cpb_ranks_rank() == 0) fprintf(stderr, "cpbench %s: %s\n", cmd, why);
    return be;
}

int cpb_cmd_selftest(const cpb_cli *c)
{
    const cpb_backend *be = tool_backend(c, "selftest");
    if (!be) return 2;
    cpb_tool_opts o = {0};
    o.be = be;
    cpb_args_ctx_opts(&c->a, &o.ctx);
    return cpb_selftest(&o);
}

int cpb_cmd_bench_kernels(const cpb_cli *c)
{
    const cpb_backend *be = tool_backend(c, "bench-kernels");
    if (!be) return 2;
    cpb_tool_opts o = {0};
    o.be = be;
    cpb_args_ctx_opts(&c->a, &o.ctx);
    o.warmup = c->a.warmup;
    o.iters = c->a.iters;
    o.seq_start = c->a.seq_start;
    o.seq_stop = c->a.seq_stop;
    o.out = c->a.out;
    return cpb_bench_kernels(&o);
}
