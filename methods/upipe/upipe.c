/* upipe.c — the UPipe method struct (schedule in upipe_plan.c, phases in upipe_fwd.c and
 * upipe_bwd.c). */
#include "common/knobs.h"
#include "upipe/upipe.h"

static const cpb_knob upipe_knobs[] = {
    CPB_KNOB_HEAD_CHUNK("C, the ranks"),
    {.name = "upipe_bwd", .type = CPB_KNOB_CHOICE, .def = "o", .choices = "o|delta", .arg = "o|delta",
     .help = "upipe backward: exchange each stage's o (as the reference; cuDNN's backward takes it) or only "
             "delta = rowsum(dO*o) (less memory; our attention kernels only, docs/attention.md)"},
    {NULL}};

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
