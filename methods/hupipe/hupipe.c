/* hupipe.c — the hybrid UPipe method struct (plan in hupipe_plan.c, phases in
 * hupipe_fwd.c and hupipe_bwd.c). */
#include "common/knobs.h"
#include "hupipe/hupipe.h"

static const cpb_knob hupipe_knobs[] = {CPB_KNOB_HEAD_CHUNK("u, the Ulysses degree"), CPB_KNOB_ULYSSES_DEGREE,
                                        CPB_KNOB_UPIPE_BWD, {NULL}};

const cpb_method cpb_method_hupipe = {
    .name = "hupipe",
    .summary = "hybrid UPipe: UPipe head stages inside a node (--ulysses-degree) x zigzag ring across nodes",
    .check = hupipe_check,
    .token_layout = cpb_grid_layout,
    .weight_shard = NULL,
    .state_size = sizeof(hupipe_state),
    .forward = hupipe_forward,
    .backward = hupipe_backward,
    .knobs = hupipe_knobs,
};
