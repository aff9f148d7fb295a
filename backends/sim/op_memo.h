/* op_memo.h — cpb_sim_op_time with a memo of the works seen last.  A trace is mostly runs of
 * the same few ops (a ring's steps, replicated by cpb_repeat), and the efficiency curves
 * (the attention curves above all) cost more than the rest of a replay, a comparison or a
 * bound.  Exact: an entry that reads as a memo slot's (every field the op time reads)
 * gets the time computed for it. */
#ifndef CPB_SIM_OP_MEMO_H
#define CPB_SIM_OP_MEMO_H

#include "timeline.h"

#define CPB_OP_MEMO_SLOTS 64

typedef struct cpb_op_memo {
    sim_entry e[CPB_OP_MEMO_SLOTS];
    double t[CPB_OP_MEMO_SLOTS];
    unsigned char used[CPB_OP_MEMO_SLOTS];
} cpb_op_memo;

static inline double cpb_op_memo_time(cpb_op_memo *m, const cpb_sim_hw *hw, const sim_entry *x)
{
    uint64_t h = (uint64_t)x->kind * 0x9e3779b97f4a7c15ull ^ (uint64_t)x->w0 * 0xc2b2ae3d27d4eb4full ^
                 (uint64_t)x->w1 * 0x27d4eb2f165667c5ull ^ (uint64_t)x->w2 * 0x165667b19e3779f9ull ^
                 (uint64_t)(int64_t)x->bytes;
    const int k = (int)((h * 0xff51afd7ed558ccdull) >> 58); /* 6 bits: CPB_OP_MEMO_SLOTS */
    const sim_entry *y = &m->e[k];
    if (m->used[k] && y->phase == x->phase && y->kind == x->kind && y->impl == x->impl && y->pcie == x->pcie &&
        y->flops == x->flops && y->bytes == x->bytes && y->w0 == x->w0 && y->w1 == x->w1 && y->w2 == x->w2 &&
        y->w3 == x->w3 && y->share == x->share)
        return m->t[k];
    m->e[k] = *x;
    m->used[k] = 1;
    return m->t[k] = cpb_sim_op_time(hw, x);
}

#endif
