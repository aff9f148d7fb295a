/* test_sim_model.c — the whole-model estimate (--scope model): its memory parts add up,
 * the attention part is the traced layer's, capacity and host memory are checked, the
 * largest context is found, and presets without a model description are refused. */
#include <criterion/criterion.h>
#include <string.h>

#include "cpb_method.h"
#include "cpb_presets.h"
#include "knobs.h"
#include "gpu_profiles.h"
#include "model_scope.h"
#include <stdio.h>
#include <stdlib.h>

static const cpb_method *first_method(void)
{
    /* ulysses when present: it accepts llama3-8b on 8 GPUs */
    const cpb_method *m = cpb_method_find("ulysses");
    return m ? m : cpb_method_at(0);
}

/* llama3-8b on 8 GPUs with every knob at its default (--framework torchtitan, ...) */
static cpb_problem llama(int64_t S)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("llama3-8b", &p), CPB_OK);
    p.C = 8;
    p.S = S;
    p.dtype = CPB_BF16;
    char err[512] = "";
    cr_assert_eq(cpb_knobs_apply(first_method(), NULL, &p, err, sizeof err), CPB_OK, "%s", err);
    return p;
}

Test(sim_model, parts_add_up_and_states_are_sharded)
{
    const cpb_method *m = first_method();
    cr_assert(m, "a method is registered");
    cpb_problem p = llama(1 << 20);
    cpb_model_estimate *e = NULL;
    char err[1024] = "";
    cr_assert_eq(cpb_model_estimate_new(&p, m, NULL, &e, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(e->status, CPB_OK, "%s", e->reason);
    /* Llama 3 8B: 8.03e9 parameters */
    cr_expect(e->params > 8.0e9 && e->params < 8.1e9, "params %g", e->params);
    for (int k = 0; k < CPB_MOMENT_COUNT; k++) {
        const cpb_model_mem *x = &e->moment[k];
        cr_expect_eq(x->total, x->states + x->gathered + x->comm + x->attn_fixed + x->attn_act + x->ckpt + x->residual +
                                   x->work + x->fixed);
        cr_expect_eq(x->fixed, e->fixed.total, "the fixed memory is the same at every moment");
        /* 16 bytes per parameter over 8 GPUs: Llama3-8B's 14.96 GiB */
        cr_expect_eq(x->states, (int64_t)(16.0 * e->params / 8));
        cr_expect(x->states > (int64_t)(14.95 * 1073741824.0) && x->states < (int64_t)(14.97 * 1073741824.0),
                  "%.3f GiB", x->states / 1073741824.0);
        cpb_model_buckets b = cpb_model_mem_buckets(x);
        cr_expect_eq(b.model + b.attn_act + b.other + b.fixed, x->total);
        cr_expect_eq(b.fixed, e->fixed.total);
        cr_expect_eq(b.model, x->states);
        cr_expect_eq(b.attn_act, x->attn_act);
    }
    const cpb_model_mem *a = &e->moment[CPB_MOMENT_ATTN_BWD];
    cr_expect_eq(a->attn_fixed + a->attn_act + e->attn.at_peak_bytes[CPB_TAG_Y], e->attn.peak_bytes,
                 "the attention part is the traced peak less the layer output");
    /* 30 layers' inputs of [128K, 4096] bf16 on the host */
    cr_expect_eq(e->host_bytes, 30LL * (1 << 17) * 4096 * 2 + e->attn.host_peak_bytes);
    cr_expect_gt(e->step_s, 32 * e->attn_layer_s, "every layer's attention is in the step");
    static cpb_row row;
    cpb_model_estimate_row(e, &row);
    cr_expect_gt(row.tokens_per_s_per_gpu, 0);
    cr_expect_float_eq(row.tokens_per_s_per_gpu, (double)p.S / (e->step_s * p.C), 1e-9);
    cr_expect_str_eq(row.scope, "model");
    cr_expect_str_eq(row.status, "ok");
    cr_expect_eq(row.peak_bytes, e->moment[e->peak_moment].total);
    cr_expect_eq(row.model_state_bytes + row.attn_act_bytes + row.other_bytes + row.fixed_bytes, row.peak_bytes);
    cr_expect_str_eq(cpb_row_knob_str(&row, "framework"), "torchtitan");
    cpb_model_estimate_free(e);
}

Test(sim_model, too_little_memory_is_oom_and_too_little_host_is_host_oom)
{
    const cpb_method *m = first_method();
    cpb_problem p = llama(1 << 20);
    cpb_sim_opts o = {0};
    o.mem_cap = 16LL << 30; /* less than the model states alone */
    cpb_model_estimate *e = NULL;
    char err[1024] = "";
    cr_assert_eq(cpb_model_estimate_new(&p, m, &o, &e, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(e->status, CPB_ERR_OOM, "%s", e->reason);
    cr_expect(strstr(e->reason, "GiB usable") != NULL, "%s", e->reason);
    cpb_model_estimate_free(e);
    o.mem_cap = 0;
    o.host_mem_cap = 1LL << 30; /* 30 checkpoints of 1 GiB do not fit in 1 GiB */
    cr_assert_eq(cpb_model_estimate_new(&p, m, &o, &e, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(e->status, CPB_ERR_NOMEM_HOST, "%s", e->reason);
    cpb_model_estimate_free(e);
}

Test(sim_model, largest_context_is_found)
{
    const cpb_method *m = first_method();
    cpb_problem p = llama(1 << 20);
    cpb_sim_opts o = {0};
    o.mem_cap = 40LL << 30;
    int64_t best = 0;
    int evals = 0;
    char err[1024] = "";
    cr_assert_eq(cpb_model_max_context(&p, m, &o, 128 << 10, 16 << 20, 256 << 10, &best, &evals, err, sizeof err),
                 CPB_OK, "%s", err);
    cr_expect_gt(best, 0);
    cr_expect_lt(best, 16 << 20);
    cr_expect_gt(evals, 2);
    /* it fits, and one bisection step more does not */
    cpb_model_estimate *e = NULL;
    p.S = best;
    cr_assert_eq(cpb_model_estimate_new(&p, m, &o, &e, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(e->status, CPB_OK, "%s", e->reason);
    cpb_model_estimate_free(e);
    p.S = best + (512 << 10);
    cr_assert_eq(cpb_model_estimate_new(&p, m, &o, &e, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(e->status, CPB_ERR_OOM, "%lld tokens: %s", (long long)p.S, e->reason);
    cpb_model_estimate_free(e);
}

Test(sim_model, custom_shapes_are_refused)
{
    const cpb_method *m = first_method();
    cpb_problem p = llama(1 << 20);
    snprintf(p.model, sizeof p.model, "custom");
    cpb_model_estimate *e = NULL;
    char err[1024] = "";
    cr_expect_eq(cpb_model_estimate_new(&p, m, NULL, &e, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "llama3-8b") != NULL, "%s", err);
    cr_expect_null(e);
}

/* The two training setups, term by term (model_scope_framework.c): the same sharded
 * states (16 bytes per parameter both), FSDP2's reduce-scatter buffer of one layer in
 * fp32 against ZeRO-3's 5e8-element fp16 bucket, the first and last layer's input on the
 * device against none, and the host holding L-2 checkpoints against all L plus the loss's
 * copy of the final hidden state. */
Test(sim_model, frameworks_term_by_term)
{
    const cpb_method *m = first_method();
    cpb_problem p = llama(1 << 20), pd = p;
    cpb_knobs_set_str(&pd.knobs, "framework", "deepspeed");
    cpb_model_estimate *a = NULL, *b = NULL;
    char err[1024] = "";
    cr_assert_eq(cpb_model_estimate_new(&p, m, NULL, &a, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(cpb_model_estimate_new(&pd, m, NULL, &b, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_str_eq(a->fw->name, "torchtitan");
    cr_expect_str_eq(b->fw->name, "deepspeed");
    const int64_t sD = (1 << 20) / 8 * 4096LL;
    const double D = 4096, F = 14336, H = 32, G = 8, d = 128;
    const double p_layer = D * (H + 2 * G) * d + H * d * D + 3 * D * F + 2 * D;
    const cpb_model_mem *ma = &a->moment[CPB_MOMENT_ATTN_BWD], *mb = &b->moment[CPB_MOMENT_ATTN_BWD];
    cr_expect_eq(ma->states, mb->states);
    cr_expect_eq(ma->comm, (int64_t)(p_layer * 4), "FSDP2: one layer's fp32 reduce-scatter input");
    cr_expect_eq(mb->comm, (int64_t)(5e8 * 2), "ZeRO-3: the fp16 gradient bucket");
    cr_expect_eq(ma->ckpt, 2 * sD * 2);
    cr_expect_eq(mb->ckpt, 0);
    cr_expect_eq(a->host_bytes, 30 * sD * 2 + a->attn.host_peak_bytes);
    cr_expect_eq(b->host_bytes, 32 * sD * 2 + sD * 2 + b->attn.host_peak_bytes);
    /* the attention layer is the same trace in both */
    cr_expect_eq(ma->attn_act, mb->attn_act);
    /* time: five MLP forward-equivalents against FPDT_FFN's 14/3; checkpoint copies on the
     * compute stream, pinned up to 4M tokens (TorchTitan) or always pageable (DeepSpeed) */
    /* (both tiles are 4096 tokens here: D, and FPDT's 65536 / 8 / 2) */
    cr_expect_float_eq((a->mlp_layer_s - a->mlp_acc_s) / (b->mlp_layer_s - b->mlp_acc_s), 5.0 / (14.0 / 3.0), 1e-9);
    /* each tile adds its weight gradient: bf16 .grad (8 bytes per element) against
     * FPDT_FFN's fp32 accumulators (12), 32 tiles of 4096 tokens either way */
    cr_expect_float_eq(a->mlp_acc_s / b->mlp_acc_s, 8.0 / 12.0, 1e-9);
    cr_expect_gt(a->mlp_acc_s, 0);
    cr_expect_eq(a->ckpt_pageable, 0);
    cr_expect_eq(b->ckpt_pageable, 1);
    cr_expect_gt(b->ckpt_layer_s, a->ckpt_layer_s);
    cpb_model_estimate_free(a);
    cpb_model_estimate_free(b);
    /* above 4M tokens TorchTitan's copies are pageable too: malloc'd at their size */
    p = llama(5 << 20);
    cr_assert_eq(cpb_model_estimate_new(&p, m, NULL, &a, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(a->ckpt_pageable, 1);
    cr_expect_eq(a->host_bytes, 30 * ((5LL << 20) / 8 * 4096 * 2) + a->attn.host_peak_bytes);
    cpb_model_estimate_free(a);
    /* a pinned copy is a block of PyTorch's caching host allocator: rounded up to a power of
     * two, so 3M tokens' 3 GiB layer inputs hold 4 GiB each; 4M's 4 GiB are exact */
    p = llama(3 << 20);
    cr_assert_eq(cpb_model_estimate_new(&p, m, NULL, &a, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(a->ckpt_pageable, 0);
    cr_expect_eq(a->ckpt_host_block, 4LL << 30);
    cr_expect_eq(a->host_bytes, 30 * (4LL << 30) + a->attn.host_peak_bytes);
    cpb_model_estimate_free(a);
    p = llama(4 << 20);
    cr_assert_eq(cpb_model_estimate_new(&p, m, NULL, &a, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(a->ckpt_host_block, 4LL << 30);
    cpb_model_estimate_free(a);
    /* DeepSpeed's checkpoint_in_cpu copies are pageable at every length: no rounding */
    pd = llama(3 << 20);
    cpb_knobs_set_str(&pd.knobs, "framework", "deepspeed");
    cr_assert_eq(cpb_model_estimate_new(&pd, m, NULL, &b, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(b->ckpt_host_block, (3LL << 20) / 8 * 4096 * 2);
    cpb_model_estimate_free(b);
    /* an unknown setup is bad input */
    cpb_knobs_set_str(&p.knobs, "framework", "nosuch");
    cr_expect_eq(cpb_model_estimate_new(&p, m, NULL, &a, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "torchtitan, deepspeed") != NULL, "%s", err);
}

/* --host-ram sets the node's host memory; the reason says which memory bounds the run */
Test(sim_model, host_ram_bounds_and_the_reason_says_so)
{
    const cpb_method *m = first_method();
    cpb_problem p = llama(1 << 20);
    cpb_sim_opts o = {0};
    cpb_knobs_set_int(&p.knobs, "host_ram_bytes", 64LL << 30); /* 8 GiB per GPU: 30 checkpoints of 1 GiB do not fit */
    cpb_model_estimate *e = NULL;
    char err[1024] = "";
    cr_assert_eq(cpb_model_estimate_new(&p, m, &o, &e, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(e->host_capacity, 8LL << 30);
    cr_expect_eq(e->status, CPB_ERR_NOMEM_HOST, "%s", e->reason);
    cr_expect(strncmp(e->reason, "host memory:", 12) == 0, "%s", e->reason);
    static cpb_row row;
    cpb_model_estimate_row(e, &row);
    cr_expect_str_eq(row.status, "oom");
    cr_expect_eq(cpb_row_knob_int(&row, "host_ram_bytes"), 64LL << 30);
    cpb_model_estimate_free(e);
    cpb_knobs_set_int(&p.knobs, "host_ram_bytes", 0);
    o.mem_cap = 16LL << 30;
    cr_assert_eq(cpb_model_estimate_new(&p, m, &o, &e, err, sizeof err), CPB_OK, "%s", err);
    cr_expect(strncmp(e->reason, "device memory:", 14) == 0, "%s", e->reason);
    cpb_model_estimate_free(e);
}

/* The fixed per-GPU memory item by item (model_scope_fixed.c): the CUDA context measured
 * under lazy loading, NCCL's 4 MiB buffers per channel of each connection, PyTorch's cuBLAS
 * and cuBLASLt workspaces, one 20 MiB allocator segment per stream; the bucket adds up to
 * the peak, and the capacity is the device's memory (no reserve subtracted). */
Test(sim_model, fixed_memory_items)
{
    cpb_gpu_profile prof;
    char err[512] = "";
    cr_assert_eq(cpb_gpu_profile_get("h100-sxm", &prof, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(prof.cuda_ctx_bytes, 287047680, "pytorch/pytorch#86509's lazy-loading figure");
    cr_expect_eq(prof.cublaslt_ws_bytes, 32LL << 20, "32 MiB on Hopper");
    cr_expect_eq(CPB_CUBLAS_WS_BYTES, 8519680, ":4096:2:16:8");
    cpb_problem p = llama(1 << 20);
    cpb_fixed_mem f;
    /* Ulysses on 8 GPUs, states over the 8: 7 all-to-all peers x 2 channels + one ring
     * communicator (FSDP's gathers) x 16 channels, 4 MiB each = 120 MiB */
    cpb_fixed_mem_of(&prof, &p, "ulysses", 8, 8, 1, 1, &f);
    cr_expect_eq(f.p2p_peers, 7);
    cr_expect_eq(f.ring_comms, 1);
    cr_expect_eq(f.nccl, (7 * 2 + 16) * (4LL << 20));
    cr_expect_eq(f.cuda_ctx, 287047680);
    cr_expect_eq(f.cublas, 8519680 + (32LL << 20));
    cr_expect_eq(f.attn_ws, 0, "the layer trial traces the attention workspace");
    cr_expect_eq(f.frag, 20LL << 20);
    cr_expect_eq(f.total, f.cuda_ctx + f.nccl + f.cublas + f.attn_ws + f.frag);
    /* ring attention: two neighbours; three streams: three segments */
    cpb_fixed_mem_of(&prof, &p, "ring", 8, 8, 1, 3, &f);
    cr_expect_eq(f.p2p_peers, 2);
    cr_expect_eq(f.nccl, (2 * 2 + 16) * (4LL << 20));
    cr_expect_eq(f.frag, 60LL << 20);
    /* tp: a ring communicator of its own beside the states' */
    cpb_fixed_mem_of(&prof, &p, "tp", 8, 8, 1, 1, &f);
    cr_expect_eq(f.p2p_peers, 0);
    cr_expect_eq(f.ring_comms, 2);
    /* HSDP over 2 replicas of 8: the states' group and the cross-replica all-reduce */
    cpb_fixed_mem_of(&prof, &p, "ulysses", 16, 8, 2, 1, &f);
    cr_expect_eq(f.ring_comms, 2);
    /* one GPU: no NCCL buffers */
    cpb_problem q = p;
    q.C = 1;
    cpb_fixed_mem_of(&prof, &q, "ulysses", 1, 1, 1, 1, &f);
    cr_expect_eq(f.nccl, 0);
    /* the A100's cuBLASLt workspace is 4 MiB */
    cpb_gpu_profile a100;
    cr_assert_eq(cpb_gpu_profile_get("a100-80g", &a100, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(a100.cublaslt_ws_bytes, 4LL << 20);

    /* in the estimate: the bucket adds up to the peak, the capacity is the device's memory */
    cpb_model_estimate *e = NULL;
    cr_assert_eq(cpb_model_estimate_new(&p, first_method(), NULL, &e, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(e->status, CPB_OK, "%s", e->reason);
    cr_expect_eq(e->capacity, prof.mem_bytes, "no reserve subtracted");
    cpb_fixed_mem_of(&prof, &p, "ulysses", 8, 8, 1, e->attn.nstreams, &f);
    cr_expect_eq(e->fixed.total, f.total);
    const cpb_model_mem *pk = &e->moment[e->peak_moment];
    cpb_model_buckets b = cpb_model_mem_buckets(pk);
    cr_expect_eq(b.model + b.attn_act + b.other + b.fixed, pk->total);
    cpb_row *row = calloc(1, sizeof *row);
    cr_assert(row);
    cpb_model_estimate_row(e, row);
    cr_expect_eq(row->fixed_bytes, f.total);
    cr_expect_eq(row->model_state_bytes + row->attn_act_bytes + row->other_bytes + row->fixed_bytes, row->peak_bytes);
    /* the printed report: the fixed column, the four buckets and the itemized line */
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    cr_assert(out);
    cpb_model_estimate_print(out, e);
    fclose(out);
    cr_expect(strstr(buf, "fixed per GPU 0.44 GiB") != NULL, "%s", buf);
    cr_expect(strstr(buf, "fixed per GPU: CUDA context 274 MiB (measured, lazy loading), NCCL buffers 120 MiB "
                          "(estimate: 4 MiB x (1 ring communicator x 16 channels + 7 point-to-point peers x 2 channels))") != NULL,
              "%s", buf);
    cr_expect(strstr(buf, "allocator reserve 20 MiB (estimate") != NULL, "%s", buf);
    cr_expect(strstr(buf, "the fixed memory is in the peak, not subtracted") != NULL, "%s", buf);
    free(buf);
    free(row);
    cpb_model_estimate_free(e);
}
