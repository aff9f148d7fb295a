/* dring.c — LoongTrain's 2D-Attention (Gu et al. 2024, arXiv 2406.18485): head parallelism
 * (Ulysses, --ulysses-degree u, inside a node) times double-ring attention over the
 * context-parallel group (common/dring_attn.h: inner rings of --inner-ring ranks, an outer
 * ring across them).  The schedule is usp's (methods/usp: project, exchange seq->head in
 * the Ulysses group, ring attention over the ring group, exchange back); only the ring is
 * double.  With --inner-ring equal to the ring degree it is usp. */
#include <stdio.h>

#include "common/dring_attn.h"
#include "common/knobs.h"
#include "usp/usp.h"

static int check_inner_ring(const cpb_problem *p, char *why, size_t why_len)
{
    int u = cpb_grid_degree(p), w = cpb_dring_inner(p);
    int R = u > 0 && p->C % u == 0 ? p->C / u : 0;
    if (R && (w < 1 || R % w)) {
        snprintf(why, why_len, "--inner-ring %d must divide the ring degree R = C/u = %d (C = %d, u = %d)", w, R, p->C,
                 u);
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

/* plan: every divisor of the ranks (those that do not divide R are refused) */
static const cpb_knob dring_knobs[] = {
    CPB_KNOB_ULYSSES_DEGREE,
    {.name = "inner_ring", .type = CPB_KNOB_INT, .def = "0", .check = check_inner_ring, .arg = "w",
     .help = "ranks per inner ring of the double ring (default: the largest whose w*u ranks fit a node of 8)",
     .candidates = cpb_candidates_rank_divisors},
    {NULL}};

static int dring_check(const cpb_problem *p, char *why, size_t why_len)
{
    return cpb_grid_check("dring", p, why, why_len);
}

const cpb_method cpb_method_dring = {
    .name = "dring",
    .summary = "LoongTrain 2D-Attention: Ulysses inside a node x double-ring attention (inner rings, an outer ring)",
    .check = dring_check,
    .token_layout = cpb_grid_layout,
    .weight_shard = NULL,
    .state_size = sizeof(usp_state),
    .forward = usp_forward,
    .backward = usp_backward,
    .knobs = dring_knobs,
};
