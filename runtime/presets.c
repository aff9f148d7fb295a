/* presets.c — model presets (DESIGN.md section 1 table; attention shapes only). */
#include <stdio.h>
#include <string.h>

#include "cpb_presets.h"

static const cpb_preset presets[] = {
    {"llama3-8b", 4096, 32, 8, 128, 500000.0, "32 layers, FFN 14336"},
    {"qwen3-32b", 5120, 64, 8, 128, 1000000.0, "64 layers, FFN 25600, H*d != D; QK-norm omitted"},
    {"llama3-70b", 8192, 64, 8, 128, 500000.0, "80 layers, FFN 28672"},
    {"llama2-7b", 4096, 32, 32, 128, 10000.0, "MHA (G = H): METP's claims are for MHA"},
    /* small enough for the reference layer and MPI tests; every field can be overridden */
    {"tiny", 64, 8, 2, 16, 10000.0, "for tests; override any field"},
};

int cpb_preset_count(void)
{
    return (int)(sizeof presets / sizeof presets[0]);
}

const cpb_preset *cpb_preset_at(int i)
{
    return (i >= 0 && i < cpb_preset_count()) ? &presets[i] : NULL;
}

int cpb_preset_find(const char *name, cpb_problem *out)
{
    for (int i = 0; name && i < cpb_preset_count(); i++) {
        const cpb_preset *p = &presets[i];
        if (strcmp(p->name, name) != 0) continue;
        out->D = p->D;
        out->H = p->H;
        out->G = p->G;
        out->d = p->d;
        out->rope_base = p->rope_base;
        snprintf(out->model, sizeof out->model, "%s", p->name);
        return CPB_OK;
    }
    return CPB_ERR_INVALID;
}

const char *cpb_preset_names(void)
{
    static char names[256];
    if (!names[0]) {
        size_t len = 0;
        for (int i = 0; i < cpb_preset_count(); i++)
            len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "",
                                    presets[i].name);
    }
    return names;
}
