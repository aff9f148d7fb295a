/* coll_time.c — modelled duration of a collective once its participants have arrived
 * (timeline.h states the rules). */
#include "coll_time.h"

static int node_of(const cpb_sim_hw *hw, int rank)
{
    return rank / (hw->gpus_per_node > 0 ? hw->gpus_per_node : 8);
}

double sim_sendrecv_time(const cpb_sim_hw *hw, int me, int dst, int src, double bytes)
{
    if (dst == me && src == me) return 2.0 * bytes / hw->hbm_bw + hw->launch; /* a local copy */
    int intra = node_of(hw, me) == node_of(hw, dst) && node_of(hw, me) == node_of(hw, src);
    double bw = intra ? hw->sendrecv_busbw : hw->inter_busbw;
    return (intra ? hw->coll_lat : hw->inter_lat) + bytes / bw;
}

double sim_group_coll_time(const cpb_sim_hw *hw, int kind, const sim_group *g, double bytes)
{
    if (g->size <= 1) return hw->launch; /* a local copy at most */
    int n0 = node_of(hw, g->ranks[0]), spans = 0;
    for (int i = 1; i < g->size; i++)
        if (node_of(hw, g->ranks[i]) != n0) spans = 1;
    double lat = spans ? hw->inter_lat : hw->coll_lat;
    if (kind == CPB_COLL_ALL_TO_ALL) {
        if (!spans) return lat + bytes / hw->a2a_busbw;
        /* each member sends (size-1) equal pieces: those to other nodes go over the
         * network, the rest over NVLink, at the same time; the worst member sets the pace */
        double worst = 0;
        for (int i = 0; i < g->size; i++) {
            int off = 0;
            for (int j = 0; j < g->size; j++)
                if (node_of(hw, g->ranks[j]) != node_of(hw, g->ranks[i])) off++;
            double f = (double)off / (double)(g->size - 1);
            double t_nv = bytes * (1.0 - f) / hw->a2a_busbw, t_net = bytes * f / hw->inter_busbw;
            double t = t_nv > t_net ? t_nv : t_net;
            if (t > worst) worst = t;
        }
        return lat + worst;
    }
    /* ring / tree collectives: a group spanning nodes runs at the slower of the links */
    double bw = hw->coll_busbw;
    if (spans && hw->inter_busbw < bw) bw = hw->inter_busbw;
    return lat + bytes / bw;
}
