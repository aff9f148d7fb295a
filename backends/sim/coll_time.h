/* coll_time.h — collective durations of the timing model (backend-internal). */
#ifndef CPB_SIM_COLL_TIME_H
#define CPB_SIM_COLL_TIME_H

#include "sim_hw.h"
#include "sim_world.h"

/* send `bytes` to world rank dst while receiving from src, once both peers are there */
double sim_sendrecv_time(const cpb_sim_hw *hw, int me, int dst, int src, double bytes);
/* a collective of kind (cpb_coll_kind) over group g, bytes = the largest bytes_sent of a
 * member (bus bytes), once every member is there */
double sim_group_coll_time(const cpb_sim_hw *hw, int kind, const sim_group *g, double bytes);

#endif
