/* knobs.c — a problem's method-option values by name (cpb.h). */
#include <stdio.h>
#include <string.h>

#include "cpb.h"

const cpb_knob_value *cpb_knobs_find(const cpb_knobs *k, const char *name)
{
    for (int i = 0; i < k->n; i++)
        if (strcmp(k->v[i].name, name) == 0) return &k->v[i];
    return NULL;
}

static cpb_knob_value *slot(cpb_knobs *k, const char *name)
{
    if (strlen(name) >= CPB_KNOB_LEN) return NULL;
    cpb_knob_value *v = (cpb_knob_value *)cpb_knobs_find(k, name);
    if (v) return v;
    if (k->n >= CPB_MAX_KNOBS) return NULL;
    v = &k->v[k->n++];
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", name);
    return v;
}

int cpb_knobs_set_int(cpb_knobs *k, const char *name, int64_t value)
{
    cpb_knob_value *v = slot(k, name);
    if (!v) return CPB_ERR_INVALID;
    v->i = value;
    return CPB_OK;
}

int cpb_knobs_set_str(cpb_knobs *k, const char *name, const char *value)
{
    cpb_knob_value *v = slot(k, name);
    if (!v || strlen(value) >= CPB_KNOB_LEN) return CPB_ERR_INVALID;
    snprintf(v->s, sizeof v->s, "%s", value);
    return CPB_OK;
}

int64_t cpb_knob_int(const cpb_problem *p, const char *name)
{
    const cpb_knob_value *v = cpb_knobs_find(&p->knobs, name);
    return v ? v->i : 0;
}

const char *cpb_knob_str(const cpb_problem *p, const char *name)
{
    const cpb_knob_value *v = cpb_knobs_find(&p->knobs, name);
    return v ? v->s : "";
}
