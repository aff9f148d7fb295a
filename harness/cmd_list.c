/* cmd_list.c — `cpbench list`: methods, model presets, backends compiled in. */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cpb_backend.h"
#include "cpb_method.h"
#include "cpb_presets.h"

#include "cuda/cpb_cuda.h"
#include "cuda_loader.h"

/* what was built, whether the plugin loads and with which libraries, and the devices */
static void cuda_line(void)
{
    char what[8192], why[8192] = "";
    if (!cpb_cuda_plugin_describe(what, sizeof what)) {
        printf("  %-6s %s\n", "cuda", what);
        return;
    }
    int n = cpb_cuda_device_count(why, sizeof why);
    if (n > 0)
        printf("  %-6s %s; %d device%s present\n", "cuda", what, n, n == 1 ? "" : "s");
    else
        printf("  %-6s %s; no usable device (%s)\n", "cuda", what, why[0] ? why : "none found");
}

int cpb_cmd_list(int argc, char **argv)
{
    cpb_args a;
    char err[1024];
    cpb_args_defaults(&a);
    if (cpb_args_parse(argc - 1, argv + 1, &a, err, sizeof err) != CPB_OK) {
        fprintf(stderr, "cpbench list: %s\n", err);
        return 2;
    }
    printf("Methods:\n");
    for (int i = 0; i < cpb_method_count(); i++)
        printf("  %-10s %s\n", cpb_method_at(i)->name, cpb_method_at(i)->summary);
    if (!cpb_method_count()) printf("  (none compiled in)\n");
    printf("\nModels (attention shapes; override with --hidden --heads --kv-heads --head-dim --rope-base):\n");
    printf("  %-11s %6s %4s %4s %4s %10s  %s\n", "preset", "D", "H", "G", "d", "rope base", "notes");
    for (int i = 0; i < cpb_preset_count(); i++) {
        const cpb_preset *p = cpb_preset_at(i);
        printf("  %-11s %6lld %4d %4d %4d %10.0f  %s\n", p->name, (long long)p->D, p->H, p->G, p->d,
               p->rope_base, p->notes);
    }
    printf("\nBackends:\n");
    printf("  %-6s compiled in (MPI ranks, real math)\n", "cpu");
    if (cpb_backend_find("sim"))
        printf("  %-6s compiled in (allocation accounting + timing model, one process)\n", "sim");
    else
        printf("  %-6s not compiled in\n", "sim");
    cuda_line();
    return 0;
}
