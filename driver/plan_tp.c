/* plan_tp.c — the tensor-parallel degrees `cpbench plan` tries (the tp knob's candidates,
 * tp_compose.h).
 *
 * Megatron-LM's long-context recipes use TP 1-8 inside a node (TP's all-gathers and
 * reduce-scatters are on the critical path of every layer, so TP stays on NVLink) with CP
 * across; the composition places TP groups on adjacent ranks.  So the search is the powers
 * of two up to the 8 GPUs of an HGX node that divide the world, the query heads and
 * (either way) the kv heads: the values the knob's check accepts.  No TP is the knob's
 * default, 0, so that a candidate without TP is labelled and keyed as a run without --tp. */
#include "tp_compose.h"

#include <stdio.h>

int cpb_plan_tp_candidates(const cpb_problem *p, int64_t *out, int max)
{
    static const int tps[] = {1, 2, 4, 8};
    int n = 0;
    for (int i = 0; i < (int)(sizeof tps / sizeof tps[0]) && n < max; i++) {
        int t = tps[i];
        if (p->C % t || p->H % t || p->G <= 0 || (p->G % t && t % p->G)) continue;
        out[n++] = t == 1 ? 0 : t;
    }
    return n;
}

int cpb_plan_tp_within_node(const cpb_problem *p, int gpus_per_node, char *why, size_t why_len)
{
    const int tp = cpb_tp_degree(p), gpn = gpus_per_node > 0 ? gpus_per_node : 8;
    /* TP groups are blocks of tp adjacent ranks: inside a node when the world is one node,
     * or when tp divides the node's GPUs */
    if (tp == 1 || p->C <= gpn || gpn % tp == 0) return CPB_OK;
    snprintf(why, why_len, "--tp %d: a TP group of %d adjacent ranks would span nodes of %d GPUs (plan keeps a searched TP "
             "inside a node; plan --tp %d tries it)", tp, tp, gpn, tp);
    return CPB_ERR_INVALID;
}
