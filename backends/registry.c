/* registry.c — the backends by name (cuda: the plugin cuda_loader.c opens). */
#include <string.h>

#include "cpb_backend.h"

const cpb_backend *cpb_backend_find(const char *name)
{
    if (!name || strcmp(name, "cpu") == 0) return &cpb_backend_cpu;
    if (strcmp(name, "sim") == 0) return &cpb_backend_sim;
    if (strcmp(name, "cuda") == 0) return cpb_backend_cuda_get();
    return NULL;
}
