/* test_memory_fpdt.c — FPDT's memory behaviour on the simulator, for both schedules.
 *
 * Pipelined (--fpdt-impl pipelined, methods/fpdt/fpdt_fwd.c, fpdt_bwd*.c): its device
 * working set is a fixed set of chunk-sized buffers, so the intermediate bytes do not move
 * when S doubles at a fixed chunk, while the pinned host memory holding the finished
 * chunks grows with S.
 *
 * DeepSpeed's (the default, methods/fpdt/fpdt_ds*.c): besides its chunk-sized buffers it
 * keeps sequence-length tensors on the device (the outputs of every chunk and their
 * concatenation, the full grad_output, the per-chunk input gradients), so its device bytes
 * grow with S; its host memory is one pinned buffer per chunk of each saved tensor.
 *
 * The expected bytes are written out from the schedules as formulas of S, C, D, H, G, d
 * and the chunk. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "test_problem.h"
#include "cpb_method.h"
#include "sim_layer.h"

static cpb_problem problem(int64_t S, int64_t chunk, int C, int H, int G, int d, int64_t D, cpb_dtype dt)
{
    cpb_problem p = cpb_test_problem(S, C, D, H, G, d, dt);
    cpb_knobs_set_int(&p.knobs, "seq_chunk", chunk);
    cpb_knobs_set_str(&p.knobs, "fpdt_impl", "pipelined"); /* the formulas below are the pipelined schedule's */
    return p;
}

/* the chunk geometry of DESIGN section 4 (fpdt) */
typedef struct geo {
    int64_t u, c, hq, hk, nq, nkv, nlse, E;
    int bwd_o; /* --fpdt-bwd o (the default): the KV loop loads o_j; delta: delta_j */
} geo;

static geo geometry(const cpb_problem *p)
{
    geo g;
    int64_t chunk = cpb_knob_int(p, "seq_chunk");
    g.u = p->S / chunk;
    g.c = chunk / p->C;
    g.hq = p->H / p->C;
    g.hk = p->G >= p->C ? p->G / p->C : 1; /* kv heads replicated when G < C */
    g.nq = chunk * g.hq * p->d;              /* a q-like chunk, head side (= c * H * d) */
    g.nkv = chunk * g.hk * p->d;             /* a K or V chunk, head side */
    g.nlse = g.hq * chunk;                   /* a chunk's lse or delta (fp32) */
    g.E = p->dtype == CPB_BF16 ? 2 : 4;
    g.bwd_o = strcmp(cpb_knob_str(p, "fpdt_bwd"), "delta") != 0;
    return g;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* ---------------------------------------------------------------- pipelined */

/* forward: send q,k,v + head q,k,v + fetched K,V slots + o block, o seq (storage);
 * fp32 o accumulator, lse accumulator and lse block */
static int64_t fwd_intermediate(const cpb_problem *p)
{
    geo g = geometry(p);
    int64_t nfetch = min64(2, g.u - 1);
    return g.E * (4 * g.nq + 4 * g.nkv + 2 * nfetch * g.nkv) + 4 * (g.nq + g.nlse + (g.u > 1 ? g.nlse : 0));
}

/* fp32 elements of the attention backward's workspace for one (i, j) block, from the
 * runtime's one sizing function: the dq accumulator, and the delta rows it derives from o
 * when delta is not given (--fpdt-bwd o) */
static int64_t attn_bwd_workspace(const cpb_problem *p)
{
    geo g = geometry(p);
    cpb_buf delta = {0};
    cpb_attn_args a = {0};
    a.q = cpb_heads(NULL, 0, cpb_knob_int(p, "seq_chunk"), g.hq, p->d, g.hq * p->d, p->d);
    if (!g.bwd_o) a.delta = cpb_heads(&delta, 0, cpb_knob_int(p, "seq_chunk"), g.hq, 1, 1, cpb_knob_int(p, "seq_chunk"));
    int64_t ws = cpb_attn_bwd_workspace_elems(&a);
    cr_assert_eq(ws, g.nq + (g.bwd_o ? g.nlse : 0),
                 "the attention backward workspace is no longer an fp32 dq (and delta rows): update the formulas");
    return ws;
}

/* backward, KV loop: K,V slots, fp32 dK,dV; per q slot q, dO (storage), lse (fp32), o
 * (storage; --fpdt-bwd delta: delta, fp32), dq (fp32); finishing a chunk: dq,dk,dv send +
 * receive + sequence layout (storage), the fp32 accumulator of the chunk's dx;
 * the attention backward's workspace.  The first pass (prep): dO send and head layout, o
 * in sequence layout (and with delta: o in head layout and delta) */
static int64_t bwd_intermediate(const cpb_problem *p)
{
    geo g = geometry(p);
    int64_t kvs = min64(2, g.u), qs = min64(2, g.u * (g.u + 1) / 2);
    int64_t cGd = g.c * p->G * p->d;
    int64_t slot = g.bwd_o ? g.E * 3 * g.nq + 4 * (g.nlse + g.nq) : g.E * 2 * g.nq + 4 * (2 * g.nlse + g.nq);
    int64_t loop = g.E * 2 * kvs * g.nkv + 4 * 2 * g.nkv + qs * slot;
    int64_t finish = g.E * (3 * g.nq + 4 * g.nkv + 2 * cGd) + 4 * g.c * p->D;
    int64_t prep = g.bwd_o ? g.E * 3 * g.nq : g.E * 4 * g.nq + 4 * g.nlse;
    int64_t main = loop + finish + 4 * attn_bwd_workspace(p);
    return main > prep ? main : prep;
}

static int64_t expected_intermediate(const cpb_problem *p)
{
    int64_t f = fwd_intermediate(p), b = bwd_intermediate(p);
    return f > b ? f : b;
}

/* pinned host at its peak (backward's first pass, everything allocated): q, o (head and
 * sequence layout), dO (storage) and K, V of every chunk; fp32 lse (and delta with
 * --fpdt-bwd delta); fp32 dq accumulators of chunks 1..u-1 */
static int64_t expected_host(const cpb_problem *p)
{
    geo g = geometry(p);
    return g.E * g.u * (4 * g.nq + 2 * g.nkv) + 4 * ((g.bwd_o ? 1 : 2) * g.u * g.nlse + (g.u - 1) * g.nq);
}

/* host<->device bytes: forward offloads q, K, V, o (2 layouts), lse of each chunk and
 * fetches K,V of chunks 0..i-1 for chunk i; backward fetches o (sequence layout; with
 * --fpdt-bwd delta also head layout) and offloads dO (and delta) once per chunk, fetches
 * K,V once per outer step, and for each of the u(u+1)/2 blocks q, dO, lse and o (or
 * delta), plus dq in and out for the blocks off the first outer step. */
static double expected_pcie(const cpb_problem *p)
{
    geo g = geometry(p);
    double E = (double)g.E, u = (double)g.u;
    double pairs = u * (u + 1) / 2, later = pairs - u; /* blocks (i, j) with j > i */
    double fwd = u * (E * (3 * g.nq + 2 * g.nkv) + 4 * g.nlse) + (u * (u - 1) / 2) * E * 2 * g.nkv;
    double prep = g.bwd_o ? u * E * 2 * g.nq : u * (E * 3 * g.nq + 4 * g.nlse);
    double block = g.bwd_o ? E * 3 * g.nq + 4 * g.nlse : E * 2 * g.nq + 4 * 2 * g.nlse;
    double loop = u * E * 2 * g.nkv + pairs * block + 2 * later * 4 * g.nq;
    return fwd + prep + loop;
}

static cpb_row sim(const cpb_problem *p, const char *method)
{
    const cpb_method *m = cpb_method_find(method);
    cr_assert_not_null(m, "method %s is not registered", method);
    cpb_row r;
    int rc = cpb_sim_layer(p, m, NULL, &r);
    cr_assert_eq(rc, CPB_OK, "cpb_sim_layer: %s", r.reason);
    cr_assert_eq(r.code, CPB_OK, "%s S=%lld: %s", method, (long long)p->S, r.reason);
    return r;
}

/* device bytes as the formula says; a backend that models cuBLAS's GEMM workspace adds one
 * per stream running GEMMs (fpdt: the compute stream only) */
static int device_bytes_ok(int64_t measured, int64_t formula)
{
    return measured == formula || measured == formula + cpb_gemm_workspace_bytes();
}

static void check_exact(const cpb_problem *p)
{
    cpb_row r = sim(p, "fpdt");
    cr_expect(device_bytes_ok(r.intermediate_bytes, expected_intermediate(p)),
              "S=%lld C=%d G=%d: intermediate %lld bytes, formula %lld", (long long)p->S, p->C, p->G,
              (long long)r.intermediate_bytes, (long long)expected_intermediate(p));
    cr_expect(device_bytes_ok(r.fwd.intermediate_peak, fwd_intermediate(p)),
              "forward intermediate %lld, formula %lld", (long long)r.fwd.intermediate_peak,
              (long long)fwd_intermediate(p));
    cr_expect_eq(r.host_peak_bytes, expected_host(p), "S=%lld C=%d G=%d: host peak %lld bytes, formula %lld",
                 (long long)p->S, p->C, p->G, (long long)r.host_peak_bytes, (long long)expected_host(p));
}

Test(memory_fpdt, bytes_match_the_formulas)
{
    /* G < C (replicated kv), G > C, fp32 and bf16, several chunk counts incl. u = 1, 2;
     * each with the KV loop loading o (the default) and delta */
    cpb_problem cases[] = {
        problem(4096, 1024, 4, 8, 2, 32, 256, CPB_BF16),
        problem(3072, 1024, 4, 16, 8, 16, 192, CPB_FP32),
        problem(1536, 768, 3, 6, 3, 16, 80, CPB_BF16),
        problem(1000, 1000, 5, 5, 5, 8, 48, CPB_FP32),
        problem(12 * 120, 120, 8, 8, 1, 8, 40, CPB_BF16),
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_exact(&cases[i]);
        cpb_problem pd = cases[i];
        cpb_knobs_set_str(&pd.knobs, "fpdt_bwd", "delta");
        check_exact(&pd);
    }
}

Test(memory_fpdt, device_flat_host_linear_when_S_doubles)
{
    /* llama3-8b-like heads at a small chunk: S doubles, the chunk stays */
    const int64_t chunk = 2048;
    cpb_problem a = problem(8 * chunk, chunk, 8, 32, 8, 128, 4096, CPB_BF16);
    cpb_problem b = problem(16 * chunk, chunk, 8, 32, 8, 128, 4096, CPB_BF16);
    cpb_row ra = sim(&a, "fpdt"), rb = sim(&b, "fpdt");
    double dev_ratio = (double)rb.intermediate_bytes / (double)ra.intermediate_bytes;
    double host_ratio = (double)rb.host_peak_bytes / (double)ra.host_peak_bytes;
    cr_expect_leq(dev_ratio, 1.01, "device intermediate grows %.3fx when S doubles (%lld -> %lld bytes)", dev_ratio,
                  (long long)ra.intermediate_bytes, (long long)rb.intermediate_bytes);
    cr_expect(device_bytes_ok(rb.intermediate_bytes, expected_intermediate(&b)));
    /* host grows like S: u (u - 1 for the dq accumulators) chunks of everything */
    double want = (double)expected_host(&b) / (double)expected_host(&a);
    cr_expect(host_ratio > 1.95 && host_ratio < 2.1, "host peak grows %.3fx when S doubles, want about 2", host_ratio);
    cr_expect(host_ratio > want - 1e-9 && host_ratio < want + 1e-9, "host ratio %.6f, formula %.6f", host_ratio, want);
    cr_expect_eq(rb.host_peak_bytes, expected_host(&b));
}

Test(memory_fpdt, host_device_traffic_is_quadratic_in_chunks)
{
    cpb_problem a = problem(4 * 1024, 1024, 4, 8, 4, 32, 256, CPB_BF16);
    cpb_problem b = problem(8 * 1024, 1024, 4, 8, 4, 32, 256, CPB_BF16);
    cpb_row ra = sim(&a, "fpdt"), rb = sim(&b, "fpdt");
    cr_expect(ra.pcie_bytes > 0.999 * expected_pcie(&a) && ra.pcie_bytes < 1.001 * expected_pcie(&a),
              "u=4: %.0f PCIe bytes, formula %.0f", ra.pcie_bytes, expected_pcie(&a));
    cr_expect(rb.pcie_bytes > 0.999 * expected_pcie(&b) && rb.pcie_bytes < 1.001 * expected_pcie(&b),
              "u=8: %.0f PCIe bytes, formula %.0f", rb.pcie_bytes, expected_pcie(&b));
    /* doubling u more than doubles the traffic (the u(u+1)/2 blocks dominate) */
    cr_expect_gt(rb.pcie_bytes, 2.5 * ra.pcie_bytes);
    /* loading delta instead of o moves fewer bytes per block: E*nq - 4*nlse of them */
    cpb_problem ad = a;
    cpb_knobs_set_str(&ad.knobs, "fpdt_bwd", "delta");
    cpb_row rd = sim(&ad, "fpdt");
    cr_expect(rd.pcie_bytes > 0.999 * expected_pcie(&ad) && rd.pcie_bytes < 1.001 * expected_pcie(&ad),
              "u=4, --fpdt-bwd delta: %.0f PCIe bytes, formula %.0f", rd.pcie_bytes, expected_pcie(&ad));
    cr_expect_lt(rd.pcie_bytes, ra.pcie_bytes);
}

Test(memory_fpdt, below_ulysses_at_long_sequences)
{
    const cpb_method *uly = cpb_method_find("ulysses");
    if (!uly) cr_skip_test("ulysses is not registered");
    const int64_t chunk = 2048;
    cpb_problem p = problem(16 * chunk, chunk, 8, 32, 8, 128, 4096, CPB_BF16);
    cpb_row f = sim(&p, "fpdt"), u = sim(&p, "ulysses");
    /* ulysses holds all S tokens' q, k, v, o on the device; fpdt two chunks' worth */
    cr_expect_lt(f.intermediate_bytes, u.intermediate_bytes / 2,
                 "fpdt %lld intermediate bytes, ulysses %lld", (long long)f.intermediate_bytes,
                 (long long)u.intermediate_bytes);
}

/* ---------------------------------------------------------------- DeepSpeed's schedule */

static cpb_problem ds_problem(int64_t S, int64_t chunk, int C, int H, int G, int d, int64_t D, cpb_dtype dt)
{
    cpb_problem p = problem(S, chunk, C, H, G, d, D, dt);
    cpb_knobs_set_str(&p.knobs, "fpdt_impl", "deepspeed");
    return p;
}

/* Pinned host, never freed before the end of the backward: per chunk the layer input
 * [c][D], q, K, V, o (storage), lse (fp32) from the forward; dO (storage) and the fp32 dq
 * accumulator from the backward. */
static int64_t ds_host(const cpb_problem *p)
{
    geo g = geometry(p);
    return g.u * (g.E * (g.c * p->D + 2 * g.nq + 2 * g.nkv) + 4 * g.nlse) + g.u * (g.E + 4) * g.nq;
}

/* Device intermediate peak, for u >= 3 chunks (elements; nq = c*H*d is also one chunk's
 * output in sequence layout, so u*nq = s*H*d).
 * - end of the forward: the u chunk outputs and their torch.cat (2 E u nq), the first
 *   block's q, K, V, o, lse loaded for the backward, the barrier's 4 bytes;
 * - start of the backward: the cat and the full grad_output (2 E u nq) and the same loads;
 * - block (0, 1) once the next block's inputs are in: grad_output (E u nq) and the
 *   per-chunk input gradients (E s D), the layer input's chunk (E c D), K_0, V_0, the
 *   current and next q, o, dO, the dO send and dq, dk, dv of the block (E (8 nq + 4 nkv)),
 *   three fp32 dq (chunks 0, 1, 2), fp32 dK, dV, two fp32 lse (12 nq + 8 nkv + 8 nlse). */
static int64_t ds_intermediate(const cpb_problem *p)
{
    geo g = geometry(p);
    int64_t s = p->S / p->C;
    int64_t loads = g.E * (2 * g.nq + 2 * g.nkv) + 4 * g.nlse;
    int64_t fwd_end = 2 * g.E * g.u * g.nq + loads + 4;
    int64_t bwd_start = 2 * g.E * g.u * g.nq + loads + 4;
    int64_t block01 = g.E * g.u * g.nq + g.E * s * p->D + g.E * g.c * p->D + g.E * (8 * g.nq + 4 * g.nkv) +
                      12 * g.nq + 8 * g.nkv + 8 * g.nlse + 4;
    int64_t m = fwd_end > bwd_start ? fwd_end : bwd_start;
    return m > block01 ? m : block01;
}

Test(memory_fpdt, deepspeed_bytes_match_the_formulas)
{
    /* u = 3, 4, 6, 8; G < C, G = C, G > C; H*d != D; fp32 and bf16 */
    cpb_problem cases[] = {
        ds_problem(4096, 1024, 4, 8, 2, 32, 256, CPB_BF16),
        ds_problem(3072, 1024, 4, 16, 8, 16, 192, CPB_FP32),
        ds_problem(2304, 768, 3, 6, 3, 16, 80, CPB_BF16),
        ds_problem(8 * 120, 120, 8, 8, 1, 8, 40, CPB_BF16),
        ds_problem(6 * 320, 320, 5, 5, 5, 8, 48, CPB_FP32),
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const cpb_problem *p = &cases[i];
        cpb_row r = sim(p, "fpdt");
        cr_expect(device_bytes_ok(r.intermediate_bytes, ds_intermediate(p)),
                  "deepspeed S=%lld C=%d G=%d %s: intermediate %lld bytes, formula %lld", (long long)p->S, p->C, p->G,
                  cpb_dtype_name(p->dtype), (long long)r.intermediate_bytes, (long long)ds_intermediate(p));
        cr_expect_eq(r.host_peak_bytes, ds_host(p), "deepspeed S=%lld C=%d G=%d: host peak %lld bytes, formula %lld",
                     (long long)p->S, p->C, p->G, (long long)r.host_peak_bytes, (long long)ds_host(p));
    }
}

/* DeepSpeed's sequence-length device tensors: at a fixed chunk, doubling S adds about
 * E*(s*H*d + s*D) bytes per doubling of s (grad_output and the input gradients) where the
 * pipelined schedule's device bytes stay flat */
Test(memory_fpdt, deepspeed_device_grows_with_S_pipelined_does_not)
{
    const int64_t chunk = 2048;
    cpb_problem a = ds_problem(8 * chunk, chunk, 8, 32, 8, 128, 4096, CPB_BF16);
    cpb_problem b = ds_problem(16 * chunk, chunk, 8, 32, 8, 128, 4096, CPB_BF16);
    cpb_row ra = sim(&a, "fpdt"), rb = sim(&b, "fpdt");
    cr_expect(device_bytes_ok(ra.intermediate_bytes, ds_intermediate(&a)));
    cr_expect(device_bytes_ok(rb.intermediate_bytes, ds_intermediate(&b)));
    int64_t grown = rb.intermediate_bytes - ra.intermediate_bytes;
    int64_t ds = a.S / a.C; /* s grows by this many tokens */
    cr_expect_eq(grown, 2 * ds * (a.H * a.d + a.D), "deepspeed grows %lld bytes", (long long)grown);
    cpb_knobs_set_str(&a.knobs, "fpdt_impl", "pipelined");
    cpb_knobs_set_str(&b.knobs, "fpdt_impl", "pipelined");
    cpb_row pa = sim(&a, "fpdt"), pb = sim(&b, "fpdt");
    cr_expect_eq(pa.intermediate_bytes, pb.intermediate_bytes);
    cr_expect_gt(ra.intermediate_bytes, pa.intermediate_bytes);
}
