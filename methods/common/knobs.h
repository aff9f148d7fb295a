/* knobs.h — method options that several methods share, declared once so that every table
 * that lists them agrees (cpb_method.h: cpb_knob).  A knob of one method only is declared in
 * its own table. */
#ifndef CPB_COMMON_KNOBS_H
#define CPB_COMMON_KNOBS_H

#include "cpb_method.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --head-chunk U: query heads per stage (upipe, hybrid upipe); U must divide H; plan tries
 * every divisor of H (the methods refuse those that are not multiples of their degree) */
int cpb_check_head_chunk(const cpb_problem *p, char *why, size_t why_len);
int cpb_candidates_head_divisors(const cpb_problem *p, int64_t *out, int max);
#define CPB_KNOB_HEAD_CHUNK(default_help)                                                   \
    {.name = "head_chunk", .type = CPB_KNOB_INT, .def = "0", .check = cpb_check_head_chunk, .arg = "U", \
     .help = "query heads per stage (default " default_help ")", .candidates = cpb_candidates_head_divisors}

/* --ulysses-degree u: the Ulysses group size of the rank grid (usp, hybrid upipe); u must
 * divide the ranks; plan tries every divisor of the ranks up to the query heads */
int cpb_check_ulysses_degree(const cpb_problem *p, char *why, size_t why_len);
int cpb_candidates_rank_divisors(const cpb_problem *p, int64_t *out, int max);
#define CPB_KNOB_ULYSSES_DEGREE                                                             \
    {.name = "ulysses_degree", .type = CPB_KNOB_INT, .def = "0", .check = cpb_check_ulysses_degree, .arg = "u", \
     .help = "Ulysses group size (default: the largest node-sized group the shape allows)", \
     .candidates = cpb_candidates_rank_divisors}

/* --upipe-bwd o|delta: what a UPipe stage's backward exchanges besides dO (upipe, hybrid
 * upipe): o, as the reference does, so cuDNN's backward (which derives delta from o) serves
 * it; or delta = rowsum(dO * o) only, a quarter of o's bytes at d = 128 in fp32, which only
 * our kernels take (docs/attention.md) */
#define CPB_KNOB_UPIPE_BWD                                                                  \
    {.name = "upipe_bwd", .type = CPB_KNOB_CHOICE, .def = "o", .choices = "o|delta", .arg = "o|delta", \
     .help = "backward exchanges each stage's o (as the reference; cuDNN serves it) or only delta = rowsum(dO*o) " \
             "(less memory; our attention kernels only)"}
/* 1 when p's UPipe backward exchanges delta rather than o */
int cpb_upipe_bwd_delta(const cpb_problem *p);

#ifdef __cplusplus
}
#endif
#endif
