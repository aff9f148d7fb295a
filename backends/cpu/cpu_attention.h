/* cpu_attention.h — what the attention forward and backward of the cpu backend share:
 * block sizes, the causal mask as a visible-key count per query row, and loading one
 * head of a [rows][heads][d] view into a dense fp32 [rows][d] array. */
#ifndef CPU_ATTENTION_H
#define CPU_ATTENTION_H

#include <math.h>

#include "cpu_load_store.h"

/* query rows and keys per block: the sq x sk score matrix is never materialised, only
 * one ATTN_BQ x ATTN_BK tile at a time */
#define ATTN_BQ 64
#define ATTN_BK 64

/* Keys visible to query row i form the prefix [0, n): causal means key k_pos0 + j is
 * visible to query q_pos0 + i iff k_pos0 + j <= q_pos0 + i. */
static inline int64_t attn_visible(const cpb_attn_args *a, int64_t i, int64_t sk)
{
    if (!a->causal) return sk;
    int64_t n = a->q_pos0 - a->k_pos0 + i + 1;
    return n < 0 ? 0 : (n > sk ? sk : n);
}

static inline float attn_scale(const cpb_attn_args *a)
{
    return a->scale != 0.0f ? a->scale : (float)(1.0 / sqrt((double)a->q.dim));
}

/* head h of v as a dense fp32 [v->rows][v->dim] array */
static inline void attn_load_head(const cpb_view *v, int64_t h, float *out)
{
    for (int64_t r = 0; r < v->rows; r++) cpu_ld_vec(v, r, h, out + r * v->dim);
}

#endif
