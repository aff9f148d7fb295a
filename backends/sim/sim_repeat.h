/* sim_repeat.h — the simulator's cpb_repeat hooks (cpb_backend.h: repeat_mark, repeat_alike,
 * repeat_copy, repeat_last; sim_repeat.c says how). */
#ifndef CPB_SIM_REPEAT_H
#define CPB_SIM_REPEAT_H

#include "sim_world.h"

int64_t sim_repeat_mark(cpb_ctx *ctx);
int sim_repeat_alike(cpb_ctx *ctx, const cpb_repeat_span *s);
int sim_repeat_copy(cpb_ctx *ctx, const cpb_repeat_span *s);
int sim_repeat_last(cpb_ctx *ctx, const cpb_repeat_span *s);

#endif
