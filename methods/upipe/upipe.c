/* upipe.c — the UPipe method struct (schedule in upipe_plan.c, phases in upipe_fwd.c and
 * upipe_bwd.c). */
#include "common/knobs.h"
#include "upipe/upipe.h"

static const cpb_knob upipe_knobs[] = {CPB_KNOB_HEAD_CHUNK("C, the ranks"), CPB_KNOB_UPIPE_BWD, {NULL}};

const cpb_method cpb_method_upipe = {
    .name = "upipe",
    .summary = "UPipe (Untied Ulysses): Ulysses in head stages of U heads reusing one set of a2a buffers",
    .check = upipe_check,
    .token_layout = cpb_layout_contiguous,
    .weight_shard = NULL,
    .state_size = sizeof(upipe_state),
    .forward = upipe_forward,
    .backward = upipe_backward,
    .knobs = upipe_knobs,
};
