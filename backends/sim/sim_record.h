/* sim_record.h — appending to the shared state of a simulated world (backend-internal). */
#ifndef CPB_SIM_RECORD_H
#define CPB_SIM_RECORD_H

#include "sim_world.h"

/* index of `name` in the world's name table, added when new; -1 when out of memory */
int sim_intern(cpb_sim_world *w, const char *name);
/* sim_intern for a rank that names its collectives in the order another rank did: the
 * name at *cursor (the index after this rank's previous one) and the previous one are
 * tried first, with no hash
 * lookup (a cache miss in a table of every name: the ranks after the first find their
 * names there); *cursor moves past the index returned */
int sim_intern_next(cpb_sim_world *w, const char *name, int *cursor);
/* free the names' storage (cpb_sim_world_destroy) */
void sim_names_free(cpb_sim_world *w);
/* index of the `occurrence`-th group (0 = first) with these members (in this order), added
 * when new; -1 on OOM.  A rank may create several communicators with the same members
 * (each has its own sequence numbers): the k-th one of every member is the same group. */
int sim_group_find_or_add(cpb_sim_world *w, int n, const int *ranks, int occurrence);
/* a new entry of this type (sim_entry_type) at the end of the trace, with its type's
 * defaults (zeros; no name; collectives: no peers or root; ops: share 1); NULL when out
 * of memory */
sim_entry *sim_trace_push(sim_trace *t, int type);
/* room for n entries in t (its entries kept); 0, or -1 out of memory */
int sim_trace_reserve(sim_trace *t, int64_t n);
/* free t's entries (t empty after) */
void sim_trace_free(sim_trace *t);

#endif
