/* sim_attn_curves.c — the published FlashAttention-2/-3 curves and cuDNN's measured B200
 * curve (at the end; sim_attn_curves.h).
 *
 * Source: Jay Shah, Ganesh Bikshandi, Ying Zhang, Vijay Thakkar, Pradeep Ramani, Tri Dao,
 * "FlashAttention-3: Fast and Accurate Attention with Asynchrony and Low-precision"
 * (arXiv 2407.08608, 2024), Figure 5 "Attention forward speed (BF16) on H100 SXM5" (a-c
 * without, d-f with the causal mask; head dim 64, 128, 256) and Figure 6 "Attention
 * backward speed (BF16) on H100 SXM5" (head dim 64, 128; without mask).  The figures label
 * each bar with its TFLOP/s; those labels are the points below, for both FlashAttention-2
 * (as the FA3 authors measured it on the H100) and FlashAttention-3.  FlashAttention-2's own
 * paper (Dao 2023, arXiv 2307.08691) gives A100 figures; the text we could read states
 * only its range, "50-73% of the theoretical maximum FLOPs/s" on the A100 (abstract): the
 * Ampere scaling below uses its top, 73%, and nothing else from it.
 * Setup of every point: bf16, batch x length = 16K tokens, hidden 2048 (heads = 2048 / d).
 * The same table is in docs/attention.md. */
#include "sim_attn_curves.h"

#include <math.h>

#include "cpb_attn_route.h"

static const double lens[6] = {512, 1024, 2048, 4096, 8192, 16384};

typedef struct flash_curve {
    int impl, bwd, causal, d;
    double tflops[6]; /* at lens[] */
} flash_curve;

static const flash_curve curves[] = {
    /* FlashAttention-3, forward (Fig. 5) */
    {CPB_ATTN_FA3, 0, 0, 64, {333, 392, 460, 476, 496, 497}},
    {CPB_ATTN_FA3, 0, 0, 128, {467, 565, 625, 638, 646, 648}},
    {CPB_ATTN_FA3, 0, 0, 256, {482, 639, 707, 736, 746, 756}},
    {CPB_ATTN_FA3, 0, 1, 64, {197, 265, 371, 420, 460, 473}},
    {CPB_ATTN_FA3, 0, 1, 128, {292, 423, 521, 579, 602, 616}},
    {CPB_ATTN_FA3, 0, 1, 256, {286, 427, 537, 612, 628, 642}},
    /* FlashAttention-3, backward (Fig. 6, no mask) */
    {CPB_ATTN_FA3, 1, 0, 64, {272, 363, 422, 453, 472, 474}},
    {CPB_ATTN_FA3, 1, 0, 128, {316, 424, 501, 542, 559, 561}},
    /* FlashAttention-2 on the H100, forward (Fig. 5) */
    {CPB_ATTN_FA2, 0, 0, 64, {282, 306, 318, 321, 322, 324}},
    {CPB_ATTN_FA2, 0, 0, 128, {309, 350, 362, 368, 370, 370}},
    {CPB_ATTN_FA2, 0, 0, 256, {275, 313, 321, 323, 324, 326}},
    {CPB_ATTN_FA2, 0, 1, 64, {180, 229, 262, 284, 295, 299}},
    {CPB_ATTN_FA2, 0, 1, 128, {191, 260, 298, 319, 333, 335}},
    {CPB_ATTN_FA2, 0, 1, 256, {208, 251, 278, 293, 297, 298}},
    /* FlashAttention-2 on the H100, backward (Fig. 6, no mask) */
    {CPB_ATTN_FA2, 1, 0, 64, {198, 238, 264, 279, 287, 291}},
    {CPB_ATTN_FA2, 1, 0, 128, {214, 260, 291, 310, 318, 322}},
};
#define NCURVES ((int)(sizeof curves / sizeof curves[0]))

/* FlashAttention-2 paper: up to 73% of the A100's peak; the H100 curve's point it is put at */
#define FA2_AMPERE_TOP_EFF 0.73
#define FA2_H100_FWD_TOP 370.0 /* forward, d 128, 16K, no mask (Fig. 5b) */

static double clamp(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* one curve at length L: linear in log2(L), the end values outside */
static double at_length(const flash_curve *c, double L)
{
    double x = log2(clamp(L, lens[0], lens[5]));
    for (int i = 0; i < 5; i++) {
        double x0 = log2(lens[i]), x1 = log2(lens[i + 1]);
        if (x <= x1) return c->tflops[i] + (c->tflops[i + 1] - c->tflops[i]) * (x - x0) / (x1 - x0);
    }
    return c->tflops[5];
}

/* the published curves of (impl, bwd, causal) at L, interpolated over head dim */
static double published(int impl, int bwd, int causal, double L, double d)
{
    const flash_curve *lo = NULL, *hi = NULL; /* the nearest published dims below and above d */
    for (int i = 0; i < NCURVES; i++) {
        const flash_curve *c = &curves[i];
        if (c->impl != impl || c->bwd != bwd || c->causal != causal) continue;
        if (c->d <= d && (!lo || c->d > lo->d)) lo = c;
        if (c->d >= d && (!hi || c->d < hi->d)) hi = c;
    }
    if (!lo && !hi) return 0.0;
    if (!lo) return at_length(hi, L);
    if (!hi || hi == lo) return at_length(lo, L);
    double t = (log2(d) - log2((double)lo->d)) / (log2((double)hi->d) - log2((double)lo->d));
    return at_length(lo, L) + (at_length(hi, L) - at_length(lo, L)) * t;
}

double cpb_sim_flash_tflops(int impl, int bwd, int causal, double L, double d)
{
    if (impl != CPB_ATTN_FA2 && impl != CPB_ATTN_FA3) return 0.0;
    if (!(L > 0) || !(d > 0)) return 0.0;
    if (!bwd || !causal) return published(impl, bwd, causal, L, d);
    /* causal backward: not published; the forward's mask ratio carried over (estimate) */
    double nc = published(impl, 0, 0, L, d), c = published(impl, 0, 1, L, d);
    return nc > 0 ? published(impl, 1, 0, L, d) * c / nc : 0.0;
}

double cpb_sim_flash_bench_eff(const cpb_sim_hw *hw, int impl, int bwd, int causal, double L, double d)
{
    double tf = cpb_sim_flash_tflops(impl, bwd, causal, L, d) * 1e12;
    if (!(tf > 0) || !(hw->peak_flops > 0)) return 0.0;
    if (hw->sm_arch == 90 || impl == CPB_ATTN_FA3) return tf / CPB_FLASH_CURVE_PEAK;
    if (hw->sm_arch == 80) return tf / (FA2_H100_FWD_TOP * 1e12) * FA2_AMPERE_TOP_EFF;
    return tf / hw->peak_flops;
}

const char *cpb_sim_flash_source(int impl)
{
    if (impl == CPB_ATTN_FA3)
        return "FlashAttention-3 (Shah et al. 2024, Fig. 5-6: H100 bf16, 512-16K, d 64/128/256)";
    if (impl == CPB_ATTN_FA2)
        return "FlashAttention-2 (as measured on the H100 in Shah et al. 2024, Fig. 5-6; Ampere: scaled to "
               "Dao 2023's 73% of A100 peak)";
    return "";
}

/* ---------------------------------------------------------------- cuDNN, measured
 *
 * Source: NVIDIA/cudnn-frontend, commit 9793df569ce413f4b1844a9176f7ae24dd981603
 * ("cudnn frontend v1.13.0", 2025-07-16), benchmark/sdpa_benchmark_training/:
 * artifacts/sdpa_bf16_benchmark_results_NVIDIA_B200.csv, rows backend = pyt_cudnn (PyTorch
 * 2.8.0a0 nv25.06 SDPA with SDPBackend.CUDNN_ATTENTION, cuDNN 9.10.2 = 91002, "NVIDIA B200",
 * free clock: README.md and artifacts/sample_b200_bf16_run.txt), columns fwd_tflops_per_sec
 * and bwd_tflops_per_sec as published.  Setup (benchmark_bf16_sdpa.py): batch 1, 128 query
 * heads, 8 KV heads (enable_gqa), d 128, is_causal, bf16; the median of 10 timed calls
 * (after 5 warm-up) of one call between two CUDA events.  FLOPs (its flops()): forward
 * 4 B Sq Skv Hq d / 2 for causal, backward 2.5 times that; e.g. 32K forward: 3.518e13 FLOP
 * in 24.611 ms = 1429.6 TFLOP/s.
 * Below ~4K the published times carry a per-call floor (every backend takes 0.16-0.19 ms
 * at 512, cuDNN 0.157 ms at 512 and 0.182 ms at 1K for four times the work): dispatch
 * inside the event window on an idle GPU, which a training step's queued kernels do not
 * wait for.  The points are taken as published, so short cuDNN calls on this curve are
 * slow (an overstatement of their time, not corrected here). */
static const double cudnn_b200_lens[9] = {512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072};
static const double cudnn_b200_fwd[9] = {54.727, 189.172, 485.444, 874.116, 1197.391,
                                         1349.763, 1429.616, 1448.032, 1330.234};
static const double cudnn_b200_bwd[9] = {38.041, 150.773, 367.518, 694.726, 939.954,
                                         1072.799, 1124.432, 1058.154, 1023.503};

/* linear in log2(L) between points, the end values outside */
static double log_interp(const double *x, const double *y, int n, double L)
{
    double lx = log2(clamp(L, x[0], x[n - 1]));
    for (int i = 0; i + 1 < n; i++) {
        double x0 = log2(x[i]), x1 = log2(x[i + 1]);
        if (lx <= x1) return y[i] + (y[i + 1] - y[i]) * (lx - x0) / (x1 - x0);
    }
    return y[n - 1];
}

double cpb_sim_cudnn_tflops(int curve, int bwd, double L)
{
    if (curve != CPB_CUDNN_CURVE_B200 || !(L > 0)) return 0.0;
    return log_interp(cudnn_b200_lens, bwd ? cudnn_b200_bwd : cudnn_b200_fwd, 9, L);
}

double cpb_sim_cudnn_bench_eff(const cpb_sim_hw *hw, int curve, int bwd, double L)
{
    double tf = cpb_sim_cudnn_tflops(curve, bwd, L) * 1e12;
    return tf > 0 && hw->peak_flops > 0 ? tf / hw->peak_flops : 0.0;
}

const char *cpb_sim_cudnn_source(int curve)
{
    if (curve == CPB_CUDNN_CURVE_B200)
        return "cuDNN 9.10.2 SDPA measured on a B200 (NVIDIA/cudnn-frontend @9793df5 "
               "benchmark/sdpa_benchmark_training: causal, d 128, 512-128K)";
    return "";
}
