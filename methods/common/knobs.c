/* knobs.c — the checks of the shared knobs (knobs.h). */
#include "common/knobs.h"

#include <stdio.h>
#include <string.h>

int cpb_check_head_chunk(const cpb_problem *p, char *why, size_t why_len)
{
    int64_t U = cpb_knob_int(p, "head_chunk");
    if (U && p->H % U) {
        snprintf(why, why_len, "--head-chunk %lld must divide the %d query heads", (long long)U, p->H);
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

int cpb_check_ulysses_degree(const cpb_problem *p, char *why, size_t why_len)
{
    int64_t u = cpb_knob_int(p, "ulysses_degree");
    if (u && p->C % u) {
        snprintf(why, why_len, "--ulysses-degree %lld must divide the %d ranks", (long long)u, p->C);
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

/* the divisors of n that are at most cap, ascending */
static int divisors(int64_t n, int64_t cap, int64_t *out, int max)
{
    int k = 0;
    for (int64_t v = 1; v <= n && v <= cap && k < max; v++)
        if (n % v == 0) out[k++] = v;
    return k;
}

int cpb_candidates_head_divisors(const cpb_problem *p, int64_t *out, int max)
{
    return divisors(p->H, p->H, out, max);
}

int cpb_candidates_rank_divisors(const cpb_problem *p, int64_t *out, int max)
{
    return divisors(p->C, p->H, out, max);
}

int cpb_upipe_bwd_delta(const cpb_problem *p)
{
    return strcmp(cpb_knob_str(p, "upipe_bwd"), "delta") == 0;
}
