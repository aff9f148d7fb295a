/* op_time.c — modelled duration of one compute op or copy (timeline.h states the rules;
 * the constants come from the GPU profile, driver/gpu_profiles.c). */
#include <math.h>

#include "cpb_attn_route.h"
#include "sim_attn_curves.h"
#include "timeline.h"

/* Fraction of the SMs kept busy when `units` equal thread blocks run in waves of num_sms:
 * the last, partial wave leaves SMs idle (wave quantization). */
static double wave_eff(const cpb_sim_hw *hw, double units)
{
    if (units <= 0) return 1.0;
    double sms = hw->num_sms > 0 ? hw->num_sms : 1;
    double waves = ceil(units / sms);
    return units / (waves * sms);
}

/* Split-K (cuBLASLt's CUBLASLT_ALGO_CONFIG_SPLITK_NUM; CUTLASS's split-K and Hopper
 * stream-K kernels): when the output has fewer tiles than the GPU has SMs, the library
 * splits the reduction over k so every SM gets work, and adds the fp32 partial tiles in a
 * second pass.  Model: as many splits as fill the SMs, each at least GEMM_SPLITK_MIN_K
 * deep ([EST]: four 64-deep k steps of a Hopper main loop, below which a split costs more
 * in prologue and fix-up than it gains). */
#define GEMM_SPLITK_MIN_K 256.0

static double gemm_tiles(const cpb_sim_hw *hw, int64_t m, int64_t n, int64_t batch)
{
    double tm = hw->gemm_tile_m > 0 ? hw->gemm_tile_m : 128;
    double tn = hw->gemm_tile_n > 0 ? hw->gemm_tile_n : 128;
    return ceil((double)m / tm) * ceil((double)n / tn) * (double)(batch > 0 ? batch : 1);
}

double cpb_sim_gemm_splits(const cpb_sim_hw *hw, int64_t m, int64_t n, int64_t k, int64_t batch)
{
    double tiles = gemm_tiles(hw, m, n, batch), sms = hw->num_sms > 0 ? hw->num_sms : 1;
    if (tiles <= 0 || tiles >= sms) return 1.0;
    double by_sms = floor(sms / tiles), by_depth = floor((double)k / GEMM_SPLITK_MIN_K);
    double s = by_sms < by_depth ? by_sms : by_depth;
    return s > 1.0 ? s : 1.0;
}

double cpb_sim_gemm_eff(const cpb_sim_hw *hw, int64_t m, int64_t n, int64_t k, int64_t batch)
{
    /* a batched GEMM is one kernel: its batch entries' tiles share the waves */
    double tiles = gemm_tiles(hw, m, n, batch);
    double splits = cpb_sim_gemm_splits(hw, m, n, k, batch);
    /* the fixed cost of a tile (prologue, epilogue, pipeline fill) is amortized over the
     * reduction depth of one split */
    double kk = (double)k / splits;
    double depth = kk / (kk + hw->gemm_k_half);
    return hw->gemm_eff_max * wave_eff(hw, tiles * splits) * depth;
}

/* Longest-processing-time-first: a causal call's row blocks do unequal work (block i of a
 * square causal call attends i+1 key tiles), and FlashAttention-3 hands the longest
 * remaining tile to the first free SM (hopper/tile_scheduler.hpp,
 * DynamicPersistentTileScheduler: "longest-processing-time-first scheduling"); the
 * backward's dK,dV blocks are launched longest first too, and the in-order block dispatch
 * then is the same greedy list schedule [EST].  The idle tail is then the shortest tiles,
 * not a whole wave.  Greedy LPT on the SMs, exactly, for up to LPT_MAX_JOBS tiles; above
 * that the tail is below one short tile per SM (the bound total/P + shortest job). */
#define LPT_MAX_JOBS 200000

static double lpt_schedule(int P, double row_blocks, double heads);

/* the schedule of a shape is worked out once: a trace repeats few shapes many times, and
 * the timeline replays it several times (one direct-mapped memo; the simulator is
 * single-threaded) */
static double lpt_eff(const cpb_sim_hw *hw, double row_blocks, double heads)
{
    /* 1,024 slots and a mixing hash: a plan's trials pass hundreds of shapes (ring steps of
     * every length at every head count), and 64 slots keyed by rb * 31 + h * 7 kept
     * evicting each other (lpt_schedule was 4% of a 64-GPU plan) */
    enum { MEMO = 1024 };
    static struct { int P; double rb, h, eff; } memo[MEMO];
    int P = hw->num_sms > 0 ? hw->num_sms : 1;
    uint64_t key = ((uint64_t)(int64_t)row_blocks * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)(int64_t)heads * 0xC2B2AE3D27D4EB4Full) ^
                   (uint64_t)P;
    unsigned slot = (unsigned)((key ^ (key >> 29)) % MEMO);
    if (memo[slot].P == P && memo[slot].rb == row_blocks && memo[slot].h == heads) return memo[slot].eff;
    double eff = lpt_schedule(P, row_blocks, heads);
    memo[slot].P = P, memo[slot].rb = row_blocks, memo[slot].h = heads, memo[slot].eff = eff;
    return eff;
}

static double lpt_schedule(int P, double row_blocks, double heads)
{
    double n = row_blocks * heads, total = heads * row_blocks * (row_blocks + 1) / 2;
    if (n <= 0) return 1.0;
    if (n > LPT_MAX_JOBS) return total / (total + P);
    double load[1024];
    if (P > 1024) P = 1024;
    for (int i = 0; i < P; i++) load[i] = 0;
    /* a min-heap of the SMs' loads; jobs in decreasing size, each to the least loaded SM */
    for (int64_t size = (int64_t)row_blocks; size >= 1; size--)
        for (int64_t h = 0; h < (int64_t)heads; h++) {
            load[0] += (double)size;
            for (int i = 0;;) { /* sift down */
                int l = 2 * i + 1, r = l + 1, m = i;
                if (l < P && load[l] < load[m]) m = l;
                if (r < P && load[r] < load[m]) m = r;
                if (m == i) break;
                double t = load[i];
                load[i] = load[m];
                load[m] = t;
                i = m;
            }
        }
    double span = 0;
    for (int i = 0; i < P; i++)
        if (load[i] > span) span = load[i];
    return total / (P * span);
}

double cpb_sim_attn_eff(const cpb_sim_hw *hw, int bwd, int64_t rows, int64_t heads, int64_t pairs)
{
    return cpb_sim_attn_eff_of(hw, CPB_ATTN_CUDNN, bwd, rows, heads, pairs);
}

double cpb_sim_attn_eff_of(const cpb_sim_hw *hw, int impl, int bwd, int64_t rows, int64_t heads, int64_t pairs)
{
    if (rows <= 0 || pairs <= 0) return 1.0;
    double tr = hw->attn_tile_rows > 0 ? hw->attn_tile_rows : 128;
    double row_blocks = ceil((double)rows / tr);
    /* a square causal call (cpb_attn_pairs of sq == sk, equal offsets) is scheduled longest
     * first; any other call has row blocks of equal work and runs in waves */
    int causal_square = pairs == rows * (rows + 1) / 2;
    double wave = causal_square ? lpt_eff(hw, row_blocks, (double)heads) : wave_eff(hw, row_blocks * (double)heads);
    /* keys per query row: the work over which a row block's fixed cost (loading Q, writing
     * O and lse, the partly masked diagonal tile) is amortized */
    double kv = (double)pairs / (double)rows;
    double k_half = bwd ? hw->attn_bwd_k_half : hw->attn_fwd_k_half;
    double emax = bwd ? hw->attn_bwd_eff_max : hw->attn_fwd_eff_max;
    if (impl == CPB_ATTN_OWN) emax = bwd ? hw->attn_own_bwd_eff_max : hw->attn_own_fwd_eff_max;
    return emax * wave * kv / (kv + k_half);
}

/* FlashAttention (--attn fa2|fa3): the published curve at the call's equivalent length (a
 * square causal call: its rows, with the causal curve; any other: the keys per query row,
 * with the unmasked curve), times the call's SM occupancy relative to the benchmark's
 * (16K tokens, hidden 2048: 16384 / L sequences of 2048 / d heads), since the published
 * figure already carries the benchmark's own waves. */
static double cudnn_measured_eff(const cpb_sim_hw *hw, int curve, int bwd, int64_t rows, int64_t heads,
                                 int64_t pairs);

double cpb_sim_attn_eff_d(const cpb_sim_hw *hw, int impl, int bwd, int64_t rows, int64_t heads, int64_t pairs,
                          int64_t d)
{
    int curve = bwd ? hw->attn_bwd_curve : hw->attn_fwd_curve;
    if (impl == CPB_ATTN_CUDNN && curve != CPB_CUDNN_CURVE_NONE)
        return cudnn_measured_eff(hw, curve, bwd, rows, heads, pairs);
    if (impl != CPB_ATTN_FA2 && impl != CPB_ATTN_FA3) return cpb_sim_attn_eff_of(hw, impl, bwd, rows, heads, pairs);
    if (rows <= 0 || pairs <= 0 || d <= 0) return 1.0;
    const double tr = hw->attn_tile_rows > 0 ? hw->attn_tile_rows : 128;
    const int causal_square = pairs == rows * (rows + 1) / 2;
    const double L = causal_square ? (double)rows : (double)pairs / (double)rows;
    double rb = ceil((double)rows / tr);
    double wave = causal_square ? lpt_eff(hw, rb, (double)heads) : wave_eff(hw, rb * (double)heads);
    /* the benchmark's call at the curve point used (lengths outside 512..16K take the end) */
    double Lb = L < 512 ? 512 : L > CPB_FLASH_CURVE_TOKENS ? CPB_FLASH_CURVE_TOKENS : L;
    double seqs_heads = floor(CPB_FLASH_CURVE_TOKENS / Lb) * floor(CPB_FLASH_CURVE_HIDDEN / (double)d);
    if (seqs_heads < 1) seqs_heads = 1;
    double rb_b = ceil(Lb / tr);
    double wave_b = causal_square ? lpt_eff(hw, rb_b, seqs_heads) : wave_eff(hw, rb_b * seqs_heads);
    double eff = cpb_sim_flash_bench_eff(hw, impl, bwd, causal_square, L, (double)d);
    return wave_b > 0 ? eff * wave / wave_b : eff;
}

/* cuDNN on a part with a measured curve (sim_attn_curves.h; only causal d 128 calls are
 * measured): the curve at the call's equivalent causal length (a square causal call: its
 * rows; any other call: twice its keys per query row, the causal call with as many keys
 * per row on average [EST]: the measured causal rate carried to unmasked calls, as the
 * eff_max / k_half form carries one curve over both), times the call's SM occupancy over
 * the benchmark's (one sequence of 128 heads of L/128 row blocks, longest first), as the
 * FlashAttention curves above.  Any head dim takes d 128's rate [EST]. */
static double cudnn_measured_eff(const cpb_sim_hw *hw, int curve, int bwd, int64_t rows, int64_t heads,
                                 int64_t pairs)
{
    if (rows <= 0 || pairs <= 0) return 1.0;
    const double tr = hw->attn_tile_rows > 0 ? hw->attn_tile_rows : 128;
    const int causal_square = pairs == rows * (rows + 1) / 2;
    const double L = causal_square ? (double)rows : 2.0 * (double)pairs / (double)rows;
    double rb = ceil((double)rows / tr);
    double wave = causal_square ? lpt_eff(hw, rb, (double)heads) : wave_eff(hw, rb * (double)heads);
    double Lb = L < CPB_CUDNN_B200_MIN_LEN ? CPB_CUDNN_B200_MIN_LEN : L > CPB_CUDNN_B200_MAX_LEN ? CPB_CUDNN_B200_MAX_LEN : L;
    double wave_b = lpt_eff(hw, ceil(Lb / tr), CPB_CUDNN_B200_HEADS);
    double eff = cpb_sim_cudnn_bench_eff(hw, curve, bwd, L);
    return wave_b > 0 ? eff * wave / wave_b : eff;
}

static double roofline(const cpb_sim_hw *hw, double flops, double eff, double bytes)
{
    double tc = (flops > 0 && eff > 0) ? flops / (hw->peak_flops * eff) : 0.0;
    double tm = bytes > 0 ? bytes / hw->hbm_bw : 0.0;
    return (tc > tm ? tc : tm) + hw->launch;
}

double cpb_sim_op_time(const cpb_sim_hw *hw, const sim_entry *e)
{
    if (e->phase == SIM_PHASE_SETUP) return 0.0;
    switch (e->kind) {
    case CPB_OP_GEMM: {
        /* split-K writes and reads back fp32 partial tiles of the output */
        double splits = cpb_sim_gemm_splits(hw, e->w0, e->w1, e->w2, e->w3);
        double fixup = splits > 1.0 ? 2.0 * 4.0 * splits * (double)e->w0 * (double)e->w1 * (double)(e->w3 > 0 ? e->w3 : 1) : 0.0;
        return roofline(hw, e->flops, cpb_sim_gemm_eff(hw, e->w0, e->w1, e->w2, e->w3), e->bytes + fixup);
    }
    case CPB_OP_ATTN_FWD:
        return roofline(hw, e->flops, cpb_sim_attn_eff_d(hw, e->impl, 0, e->w0, e->w1, e->w2, e->w3), e->bytes);
    case CPB_OP_ATTN_BWD:
        return roofline(hw, e->flops, cpb_sim_attn_eff_d(hw, e->impl, 1, e->w0, e->w1, e->w2, e->w3), e->bytes);
    case CPB_OP_FILL:
        if (e->pcie == SIM_HOST_FILL && hw->host_fill_bw > 0) return e->bytes / hw->host_fill_bw + hw->launch;
        return roofline(hw, 0, 0, e->bytes);
    case CPB_OP_COPY:
        if (e->pcie == SIM_PCIE_H2D || e->pcie == SIM_PCIE_D2H) {
            double share = e->share > 1.0 ? e->share : 1.0;
            double bw = hw->pcie_node_bw / share;
            if (hw->pcie_gpu_bw < bw) bw = hw->pcie_gpu_bw;
            /* the front-end counts source plus destination bytes; the link moves one copy */
            return (e->bytes / 2.0) / bw + hw->launch;
        }
        return roofline(hw, 0, 0, e->bytes);
    default:
        /* RoPE, delta, merge, fill, axpby: streaming kernels bound by HBM */
        return roofline(hw, 0, 0, e->bytes);
    }
}
