/* cmd_tools.c — `cpbench selftest`, `cpbench bench-kernels` and `cpbench device-props`: the
 * cuda backend's tools (backends/cuda/tools, the backend's hooks) on the backend --backend
 * names. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cuda_tools.h"
#include "ranks.h"
#include "registry.h"

/* what bench-kernels writes first in a calibration file (backends/cuda/tools/bench_kernels.c) */
#define CALIBRATION_FIRST_LINE "# cpbench bench-kernels calibration"

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

/* --out of bench-kernels may replace an earlier calibration file (its first line says so),
 * a file of something else only with --force, never a FIFO, directory or device: 0 or 2,
 * the same on every rank */
static int check_calibration_out(const cpb_args *a)
{
    if (!a->out) return 0;
    char err[1200] = "";
    int bad = 0;
    if (cpb_ranks_rank() == 0) {
        struct stat st;
        if (stat(a->out, &st) == 0 && !S_ISREG(st.st_mode)) {
            snprintf(err, sizeof err, "--out '%s' is not a regular file; it was left untouched", a->out);
            bad = 1;
        } else if (stat(a->out, &st) == 0 && !a->force) {
            char line[128] = "";
            FILE *f = fopen(a->out, "r");
            if (!f || !fgets(line, sizeof line, f) || strncmp(line, CALIBRATION_FIRST_LINE, strlen(CALIBRATION_FIRST_LINE)) != 0) {
                snprintf(err, sizeof err, "--out '%s' exists and is not a calibration file of bench-kernels; it was left "
                         "untouched. Give another file name, or --force to replace it", a->out);
                bad = 1;
            }
            if (f) fclose(f);
        }
    }
    bad = cpb_agree_status(bad, err, sizeof err);
    if (bad && cpb_ranks_rank() == 0) fprintf(stderr, "cpbench bench-kernels: %s\n", err);
    return bad ? 2 : 0;
}

int cpb_cmd_bench_kernels(const cpb_cli *c)
{
    const cpb_backend *be = tool_backend(c, "bench-kernels");
    if (!be) return 2;
    if (check_calibration_out(&c->a)) return 2;
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

/* every property of each visible device, as `key = value` lines: exit 0 when every device
 * was described, 2 when there is none (or the backend has no devices), 1 when one failed */
int cpb_cmd_device_props(const cpb_cli *c)
{
    const cpb_backend *be = tool_backend(c, "device-props");
    if (!be) return 2;
    if (!be->probe || !be->print_device_props) {
        fprintf(stderr, "cpbench device-props: the %s backend has no devices to describe; use --backend cuda\n",
                be->name);
        return 2;
    }
    char why[8192] = "";
    int n = be->probe(why, sizeof why);
    if (n <= 0) {
        fprintf(stderr, "cpbench device-props: no CUDA device to describe (%s)\n", why[0] ? why : "none found");
        return 2;
    }
    int bad = 0;
    for (int d = 0; d < n; d++) {
        if (d) printf("\n");
        bad |= be->print_device_props(d, stdout) != CPB_OK;
    }
    return bad ? 1 : 0;
}
