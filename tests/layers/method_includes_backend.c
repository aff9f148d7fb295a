/* A method-like file that reaches for the backend interface: compiled with the methods'
 * include path, it must fail to find cpb_backend.h (a method is a schedule of runtime
 * calls and never sees a backend; tests/layers/layers.cmake). */
#include "cpb_method.h"
#include "cpb_backend.h"

int layer_probe_backend(cpb_ctx *ctx)
{
    return ctx->be->sync(ctx);
}
