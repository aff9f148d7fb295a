/* sim_world.c — the state shared by the contexts of one simulated world: per-rank traces,
 * the group table (matched by member list) and the interned op names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_record.h"
#include "sim_world.h"

int cpb_sim_world_create(int world, cpb_sim_world **out)
{
    *out = NULL;
    if (world <= 0) return CPB_ERR_INVALID;
    cpb_sim_world *w = calloc(1, sizeof *w);
    if (!w) return CPB_ERR_NOMEM_HOST;
    w->world = world;
    w->period = world;
    w->traces = calloc((size_t)world, sizeof *w->traces);
    if (!w->traces) {
        free(w);
        return CPB_ERR_NOMEM_HOST;
    }
    for (int r = 0; r < world; r++) w->traces[r].rank = r;
    *out = w;
    return CPB_OK;
}

void cpb_sim_world_clear_traces(cpb_sim_world *w)
{
    for (int r = 0; r < w->world; r++) {
        sim_trace_free(&w->traces[r]);
        memset(&w->traces[r], 0, sizeof w->traces[r]);
        w->traces[r].rank = r;
    }
}

void cpb_sim_world_destroy(cpb_sim_world *w)
{
    if (!w) return;
    cpb_sim_world_clear_traces(w);
    free(w->traces);
    free(w->spare);
    for (int i = 0; i < w->ngroups; i++) free(w->groups[i].ranks);
    free(w->groups);
    sim_names_free(w);
    free(w->rn);
    free(w);
}

const char *cpb_sim_world_name(const cpb_sim_world *w, int idx)
{
    return (idx >= 0 && idx < w->nnames) ? w->names[idx] : "?";
}
