/* attn_choice.c — the --attn knob and the reports of the attention implementations
 * (attn_choice.h). */
#include "attn_choice.h"

#include <stdio.h>
#include <string.h>

#include "row.h"

const cpb_knob cpb_attn_knobs[] = {
    {.name = "attn", .type = CPB_KNOB_CHOICE, .def = "auto", .choices = "auto|cudnn|own", .arg = "auto|cudnn|own",
     .help = "attention: cuDNN's fused SDPA for the calls it serves (auto: where the backend has it), or our kernels (docs/attention.md)"},
    {NULL}};

void cpb_attn_impls_line(const cpb_backend *cuda, char *out, size_t len)
{
    char why[512] = "";
    if (!cuda) {
        snprintf(out, len, "attention: cudnn (not compiled in: no cuda backend in this build), own");
        return;
    }
    if (!cuda->attn_cudnn) {
        /* the loader's stand-in table: the plugin did not load */
        snprintf(out, len, "attention: cudnn (not compiled in: the cuda plugin is not loaded), own");
        return;
    }
    cuda->attn_cudnn(why, sizeof why);
    snprintf(out, len, "attention: cudnn (%s), own", why[0] ? why : "no detail");
}

void cpb_attn_row_fill(const cpb_ctx *ctx, cpb_row *r)
{
    CPB_ROW_SET(r, attn_impl, cpb_attn_usage_impl(&ctx->attn_usage));
    char d[512];
    cpb_attn_usage_describe(&ctx->attn_usage, d, sizeof d);
    CPB_ROW_SET(r, attn_calls, d);
}
