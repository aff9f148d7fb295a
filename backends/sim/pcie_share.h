/* pcie_share.h — PCIe sharing factors of the timing model (backend-internal). */
#ifndef CPB_SIM_PCIE_SHARE_H
#define CPB_SIM_PCIE_SHARE_H

#include "sim_world.h"

/* one host<->device copy of the last pass (all copies given share the node's link in one
 * direction) */
typedef struct sim_copy {
    double t0, t1;
    sim_entry *e;
    int w;      /* how many GPUs of the node make this copy (ranks alike by symmetry) */
} sim_copy;

/* set each copy's e->share to its mean concurrency; max_change = largest change of a
 * share.  Returns 0, or -1 when out of memory. */
int sim_pcie_shares(sim_copy *c, int64_t n, double *max_change);

#endif
