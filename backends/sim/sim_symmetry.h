/* sim_symmetry.h — ranks of a simulated world that are alike by symmetry.
 *
 * Moving every rank of a world by p places (rank r -> (r + p) mod C) maps the machine onto
 * itself when p keeps each node whole: any p when all ranks share one node, a multiple of
 * the node size otherwise.  If each rank's trace is, entry for entry, the trace of rank
 * r mod P with every peer and group moved the same way (the same ops, sizes, streams and
 * events), then ranks r and r + P have the same timeline, and the timing model need replay
 * only ranks 0 .. P-1 (the world's period, sim_world.h).  The driver records those ranks,
 * checks the move against sample ranks with this file's comparison, and falls back to a
 * larger period (every rank, in the end) when a sample differs. */
#ifndef CPB_SIM_SYMMETRY_H
#define CPB_SIM_SYMMETRY_H

#include "sim_hw.h"
#include "sim_world.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The periods below C that keep every node whole, ascending (the divisors of C when C <=
 * gpus_per_node; the multiples of gpus_per_node that divide C when the nodes are full;
 * none when the last node is partial).  Returns how many were written to out (<= max). */
int cpb_sim_periods(int C, int gpus_per_node, int *out, int max);

/* 1 when rank img's trace is rank rep's with every peer and group member moved by
 * (img - rep) places: the same entries, streams, events and collectives (bytes, peers,
 * groups); 0 with the first difference in why.  The timed ops may differ in their work
 * (ring attention's backward adds the dK,dV rows a step touched, which depend on the
 * rank): *op_diff is the sum of the differences of their modelled times (on hw) over
 * rep's modelled op time, 0 when the traces are alike exactly.  Both traces must be
 * recorded. */
int cpb_sim_traces_alike(const cpb_sim_world *w, const cpb_sim_hw *hw, int rep, int img, double *op_diff, char *why,
                         size_t why_len);

/* forget rank r's trace (a sample rank, once compared) */
void cpb_sim_world_drop_trace(cpb_sim_world *w, int r);

#ifdef __cplusplus
}
#endif
#endif
