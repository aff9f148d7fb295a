/* cmd_device_props.c — `cpbench device-props`: the properties of every visible CUDA device
 * (cudaDeviceProp, driver and runtime versions, memory), as `key = value` lines, from the
 * cuda plugin.  Exit 0 when at least one device was described, 2 when there is none. */
#include <stdio.h>

#include "args.h"
#include "cpb_backend.h"
#include "cuda/cpb_cuda.h"

int cpb_cmd_device_props(int argc, char **argv)
{
    cpb_args a;
    char err[8192];
    cpb_args_defaults(&a);
    if (cpb_args_parse(argc - 1, argv + 1, &a, err, sizeof err) != CPB_OK) {
        fprintf(stderr, "cpbench device-props: %s\n", err);
        return 2;
    }
    int n = cpb_cuda_device_count(err, sizeof err);
    if (n <= 0) {
        fprintf(stderr, "cpbench device-props: no CUDA device to describe (%s)\n", err);
        return 2;
    }
    int bad = 0;
    for (int d = 0; d < n; d++) {
        if (d) printf("\n");
        bad |= cpb_cuda_print_device_props(d, stdout) != CPB_OK;
    }
    return bad ? 1 : 0;
}
