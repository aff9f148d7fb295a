/* registry.c — the methods compiled in (methods/registry.def). */
#include <string.h>

#include "cpb_method.h"

#define X(name) extern const cpb_method cpb_method_##name;
#include "registry.def"
#undef X

static const cpb_method *const methods[] = {
#define X(name) &cpb_method_##name,
#include "registry.def"
#undef X
    NULL};

int cpb_method_count(void)
{
    return (int)(sizeof methods / sizeof methods[0]) - 1;
}

const cpb_method *cpb_method_at(int i)
{
    return (i >= 0 && i < cpb_method_count()) ? methods[i] : NULL;
}

const cpb_method *cpb_method_find(const char *name)
{
    for (int i = 0; i < cpb_method_count(); i++)
        if (strcmp(methods[i]->name, name) == 0) return methods[i];
    return NULL;
}
