/* A method-like file that uses only the runtime API: compiled with the methods' include
 * path, it must build (the control of method_includes_backend.c). */
#include "common/a2a.h"
#include "cpb_method.h"

int layer_probe_api(cpb_ctx *ctx, cpb_buf **b)
{
    return cpb_alloc(ctx, b, 16, CPB_FP32, CPB_TAG_TEMP, "probe");
}
