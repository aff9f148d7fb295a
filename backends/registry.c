/* registry.c — the backends by the name a user types (registry.h); cuda is the plugin
 * cuda_loader.c opens. */
#include "registry.h"

#include <stdio.h>
#include <string.h>

#include "cuda_loader.h"

static const cpb_backend *cpu_get(void) { return &cpb_backend_cpu; }
static const cpb_backend *sim_get(void) { return &cpb_backend_sim; }

static const struct {
    const char *name;
    const cpb_backend *(*get)(void);
    const char *absent; /* why get() may return NULL */
    /* how this build has it, for `cpbench list`; 1 when it loaded (NULL: compiled in) */
    int (*describe)(char *out, size_t len);
} slots[] = {
    {"cpu", cpu_get, "", NULL},
    {"sim", sim_get, "", NULL},
    {"cuda", cpb_backend_cuda_get, "not compiled in (no CUDA toolkit at build time)", cpb_cuda_plugin_describe},
};
#define NSLOTS ((int)(sizeof slots / sizeof slots[0]))

int cpb_backend_count(void)
{
    return NSLOTS;
}

const char *cpb_backend_name_at(int i)
{
    return i >= 0 && i < NSLOTS ? slots[i].name : NULL;
}

const cpb_backend *cpb_backend_at(int i, char *why, size_t why_len)
{
    if (i < 0 || i >= NSLOTS) return NULL;
    const cpb_backend *be = slots[i].get();
    if (!be && why && why_len) snprintf(why, why_len, "%s", slots[i].absent);
    return be;
}

int cpb_backend_describe_at(int i, char *out, size_t len)
{
    if (i >= 0 && i < NSLOTS && slots[i].describe) return slots[i].describe(out, len);
    snprintf(out, len, "compiled in");
    return 1;
}

int cpb_backend_known(const char *name)
{
    for (int i = 0; name && i < NSLOTS; i++)
        if (strcmp(slots[i].name, name) == 0) return 1;
    return 0;
}

const cpb_backend *cpb_backend_find(const char *name, char *why, size_t why_len)
{
    for (int i = 0; name && i < NSLOTS; i++)
        if (strcmp(slots[i].name, name) == 0) {
            char absent[256] = "";
            const cpb_backend *be = cpb_backend_at(i, absent, sizeof absent);
            if (!be && why && why_len)
                snprintf(why, why_len, "backend '%s' is not available in this build: %s; `cpbench list` "
                         "shows what was built", name, absent);
            return be;
        }
    if (why && why_len) {
        size_t n = (size_t)snprintf(why, why_len, "unknown backend '%s'; backends:", name ? name : "");
        for (int i = 0; i < NSLOTS && n < why_len; i++)
            n += (size_t)snprintf(why + n, why_len - n, "%s %s", i ? "," : "", slots[i].name);
    }
    return NULL;
}
