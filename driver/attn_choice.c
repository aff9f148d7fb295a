/* attn_choice.c — the --attn knob and the reports of the attention implementations
 * (attn_choice.h). */
#include "attn_choice.h"

#include <stdio.h>
#include <string.h>

#include "gpu_profiles.h"
#include "row.h"
#include "sim/sim_attn_curves.h"

const cpb_knob cpb_attn_knobs[] = {
    {.name = "attn", .type = CPB_KNOB_CHOICE, .def = "auto", .choices = "auto|cudnn|own|fa2|fa3",
     .arg = "auto|cudnn|own|fa2|fa3",
     .help = "attention: cuDNN's fused SDPA for the calls it serves (auto: where the backend has it), our kernels, "
             "or (sim only, estimates) FlashAttention-2/-3's published curves (docs/attention.md)"},
    {NULL}};

double cpb_attn_fwd_ceiling(const cpb_problem *p, const cpb_sim_hw *hw)
{
    switch (cpb_attn_choice_parse(cpb_knob_str(p, "attn"))) {
    case CPB_ATTN_CHOOSE_OWN: return hw->attn_own_fwd_eff_max;
    case CPB_ATTN_CHOOSE_FA2: return cpb_sim_flash_bench_eff(hw, CPB_ATTN_FA2, 0, 1, CPB_FLASH_CURVE_TOKENS, p->d);
    case CPB_ATTN_CHOOSE_FA3: return cpb_sim_flash_bench_eff(hw, CPB_ATTN_FA3, 0, 1, CPB_FLASH_CURVE_TOKENS, p->d);
    default: return hw->attn_fwd_eff_max;
    }
}

int cpb_attn_choice_is_estimate(const char *choice)
{
    int c = cpb_attn_choice_parse(choice);
    return c == CPB_ATTN_CHOOSE_FA2 || c == CPB_ATTN_CHOOSE_FA3;
}

int cpb_attn_backend_refusal(const cpb_problem *p, const cpb_backend *be, char *why, size_t why_len)
{
    const char *attn = cpb_knob_str(p, "attn");
    if (!cpb_attn_choice_is_estimate(attn) || be->models_time) return CPB_OK;
    snprintf(why, why_len,
             "--attn %s is a simulator-only accounting input (%s's published TFLOP/s curve and workspace rule): "
             "the %s backend has no FlashAttention kernel; use --backend sim, or --attn auto|cudnn|own here",
             attn, strcmp(attn, "fa3") == 0 ? "FlashAttention-3" : "FlashAttention-2", be->name);
    return CPB_ERR_REFUSED;
}

int cpb_attn_gpu_refusal(const cpb_problem *p, const cpb_gpu_profile *prof, char *why, size_t why_len)
{
    if (cpb_attn_choice_parse(cpb_knob_str(p, "attn")) != CPB_ATTN_CHOOSE_FA3 || prof->hw.sm_arch == 90) return CPB_OK;
    /* FlashAttention-3's kernels are built for sm90a only (hopper/setup.py; its README:
     * "Requirements: H100 / H800 GPU") */
    snprintf(why, why_len,
             "--attn fa3: FlashAttention-3 runs on Hopper GPUs only (sm90), and the %s profile is sm%d; use --attn fa2 "
             "(FlashAttention-2) or a Hopper profile (h100-sxm, h200, h800, h100-pcie, h100-nvl)",
             prof->name, prof->hw.sm_arch);
    return CPB_ERR_REFUSED;
}

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
    CPB_ROW_SET(r, attn_fwd_impl, cpb_attn_usage_class_impl(&ctx->attn_usage, 0));
    CPB_ROW_SET(r, attn_bwd_impl, cpb_attn_usage_class_impl(&ctx->attn_usage, 1));
    char d[512];
    cpb_attn_usage_describe(&ctx->attn_usage, d, sizeof d);
    CPB_ROW_SET(r, attn_calls, d);
}

/* append one token to the estimates column */
static void add_estimate(cpb_row *r, const char *prefix, const char *token, size_t len)
{
    size_t n = strlen(r->estimates);
    if (n + strlen(prefix) + len + 2 > sizeof r->estimates) return;
    snprintf(r->estimates + n, sizeof r->estimates - n, "%s%s%.*s", n ? "," : "", prefix, (int)len, token);
}

void cpb_attn_row_estimates(cpb_row *r, const cpb_gpu_profile *prof)
{
    r->estimates[0] = 0;
    /* the FlashAttention curves: whichever class ran on them (in a mixed class, the calls
     * that did) */
    static const char *const fa[] = {"fa2", "fa3"};
    for (int i = 0; i < 2; i++)
        if (strcmp(r->attn_fwd_impl, fa[i]) == 0 || strcmp(r->attn_bwd_impl, fa[i]) == 0 ||
            ((strcmp(r->attn_fwd_impl, "mixed") == 0 || strcmp(r->attn_bwd_impl, "mixed") == 0) &&
             strstr(r->attn_calls, fa[i])))
            add_estimate(r, "attn.", fa[i], strlen(fa[i]));
    for (const char *s = prof ? cpb_gpu_profile_estimates(prof) : ""; s && *s;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        add_estimate(r, "gpu.", s, len);
        s += len + (comma ? 1 : 0);
    }
}
