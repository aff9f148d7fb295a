/* test_problem.h — a cpb_problem for tests, from its shape alone (method options 0 = the
 * methods' defaults; set them on the result). */
#ifndef CPB_TEST_PROBLEM_H
#define CPB_TEST_PROBLEM_H

#include <stdio.h>
#include <string.h>

#include "cpb.h"

static inline cpb_problem cpb_test_problem(int64_t S, int C, int64_t D, int H, int G, int d, cpb_dtype dt)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    p.S = S;
    p.D = D;
    p.H = H;
    p.G = G;
    p.d = d;
    p.rope_base = 10000.0;
    p.C = C;
    p.dtype = dt;
    snprintf(p.model, sizeof p.model, "tiny");
    /* the memory closed forms count our attention kernels' workspace; cuDNN's (the default
     * --attn auto) is checked against the cpu backend by sim_vs_cpu */
    cpb_knobs_set_str(&p.knobs, "attn", "own");
    return p;
}

#endif
