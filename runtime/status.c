/* status.c — error values and names. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cpb_backend.h"

const char *cpb_status_name(int status)
{
    switch (status) {
    case CPB_OK: return "ok";
    case CPB_ERR_OOM: return "oom";
    case CPB_ERR_INVALID: return "invalid";
    case CPB_ERR_UNSUPPORTED: return "unsupported";
    case CPB_ERR_BACKEND: return "backend-error";
    case CPB_ERR_COMM: return "comm-error";
    case CPB_ERR_RACE: return "race";
    case CPB_ERR_IO: return "io-error";
    case CPB_ERR_NOMEM_HOST: return "host-oom";
    case CPB_ERR_REFUSED: return "refused";
    default: return "error";
    }
}

const char *cpb_errmsg(const cpb_ctx *ctx)
{
    return ctx ? ctx->err : "no context";
}

int cpb_fail(cpb_ctx *ctx, int code, const char *fmt, ...)
{
    if (!ctx) return code;
    /* keep the first error: later ones are usually consequences of it */
    if (ctx->err_code == CPB_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
        va_end(ap);
        ctx->err_code = code;
    }
    return code;
}

void cpb_clear_error(cpb_ctx *ctx)
{
    if (!ctx) return;
    ctx->err[0] = 0;
    ctx->err_code = CPB_OK;
}

size_t cpb_dtype_size(cpb_dtype t)
{
    return t == CPB_BF16 ? 2 : 4;
}

const char *cpb_dtype_name(cpb_dtype t)
{
    return t == CPB_BF16 ? "bf16" : "fp32";
}

static const char *const tag_names[CPB_TAG_COUNT] = {
    "x", "weights", "y", "dy", "dx", "grads", "qkv", "a2a", "saved", "attn",
    "kv_ring", "gather", "grad_act", "fetch", "workspace", "temp",
};

const char *cpb_tag_name(cpb_tag t)
{
    return (t >= 0 && t < CPB_TAG_COUNT) ? tag_names[t] : "?";
}

int cpb_tag_is_fixed(cpb_tag t)
{
    return t < CPB_TAG_FIXED_END;
}

const char *cpb_op_kind_name(cpb_op_kind k)
{
    static const char *const n[CPB_OP_KIND_COUNT] = {
        "gemm", "rope", "attn_fwd", "attn_bwd", "attn_delta", "lse_merge",
        "copy", "fill", "axpby", "fill_random", "sumsq"};
    return (k >= 0 && k < CPB_OP_KIND_COUNT) ? n[k] : "?";
}

const char *cpb_coll_kind_name(cpb_coll_kind k)
{
    static const char *const n[CPB_COLL_KIND_COUNT] = {
        "all_to_all", "sendrecv", "broadcast", "reduce", "all_reduce", "all_gather",
        "reduce_scatter"};
    return (k >= 0 && k < CPB_COLL_KIND_COUNT) ? n[k] : "?";
}
