/* test_sim_setup.c — the training setup as parts (driver/model_scope_setup.c): each part's
 * bytes and costs, the presets' derived bytes per parameter, overrides from the command
 * line, the assumptions block, refusals of meaningless combinations and the fixes a "does
 * not fit" message names. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_method.h"
#include "cpb_presets.h"
#include "gpu_profiles.h"
#include "knobs.h"
#include "model_scope.h"

static const cpb_method *ulysses(void)
{
    const cpb_method *m = cpb_method_find("ulysses");
    return m ? m : cpb_method_at(0);
}

/* llama3-8b on C GPUs at S with the given knobs ("name=value" pairs, NULL-ended) */
static cpb_problem llama_with(int C, int64_t S, const char *const *kv)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("llama3-8b", &p), CPB_OK);
    p.C = C;
    p.S = S;
    p.dtype = CPB_BF16;
    cpb_knobs given;
    memset(&given, 0, sizeof given);
    for (int i = 0; kv && kv[i]; i++) {
        char name[64];
        const char *eq = strchr(kv[i], '=');
        cr_assert(eq);
        snprintf(name, sizeof name, "%.*s", (int)(eq - kv[i]), kv[i]);
        int idx = cpb_knob_index(name);
        cr_assert_geq(idx, 0, "knob %s", name);
        char err[256];
        cr_assert_eq(cpb_knob_parse(cpb_knob_at(idx), eq + 1, &given, err, sizeof err), CPB_OK, "%s", err);
    }
    char err[512] = "";
    cr_assert_eq(cpb_knobs_apply(ulysses(), &given, &p, err, sizeof err), CPB_OK, "%s", err);
    return p;
}

static cpb_setup setup_of(const char *const *kv)
{
    cpb_problem p = llama_with(8, 1 << 20, kv);
    cpb_setup s;
    char err[256];
    cr_assert_eq(cpb_setup_of(&p, &s, err, sizeof err), CPB_OK, "%s", err);
    return s;
}

static cpb_model_estimate *estimate(int C, int64_t S, const char *const *kv)
{
    cpb_problem p = llama_with(C, S, kv);
    cpb_model_estimate *e = NULL;
    char err[1024] = "";
    cr_assert_eq(cpb_model_estimate_new(&p, ulysses(), NULL, &e, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(e->attn.code, CPB_OK, "%s", e->attn.reason);
    return e;
}

Test(sim_setup, presets_bytes_per_parameter)
{
    /* FSDP2 with fp32 parameters: 4 + 4 + 8, all sharded */
    cpb_setup s = setup_of((const char *[]){"framework=torchtitan", NULL});
    cr_expect_float_eq(s.dev_sh, 16.0, 1e-12);
    cr_expect_float_eq(s.dev_rep + s.host_rep + s.host_sh, 0.0, 1e-12);
    /* ZeRO-3 16-bit with an fp32 master: 2 + 4 + 2 + 8 */
    s = setup_of((const char *[]){"framework=deepspeed", NULL});
    cr_expect_float_eq(s.dev_sh, 16.0, 1e-12);
    cr_expect_float_eq(s.p16, 2.0, 1e-12);
    /* Megatron Core's distributed optimizer with bf16 params and fp32 grads: 6 + 12/d [MCDO] */
    s = setup_of((const char *[]){"framework=megatron", NULL});
    cr_expect_float_eq(s.dev_rep, 6.0, 1e-12);
    cr_expect_float_eq(s.dev_sh, 12.0, 1e-12);
    /* ZeRO-3 with the optimizer offloaded: the 16-bit parameter shard on the GPU; master,
     * fp32 gradient partition, m and v on the host */
    s = setup_of((const char *[]){"framework=alst", NULL});
    cr_expect_float_eq(s.dev_sh, 2.0, 1e-12);
    cr_expect_float_eq(s.host_sh, 16.0, 1e-12);
    cr_expect_float_eq(s.dev_rep + s.host_rep, 0.0, 1e-12);
    /* and parameter offload moves the shard too */
    s = setup_of((const char *[]){"framework=alst", "param_offload=on", NULL});
    cr_expect_float_eq(s.dev_sh + s.dev_rep, 0.0, 1e-12);
    cr_expect_float_eq(s.host_sh, 18.0, 1e-12);
}

Test(sim_setup, zero_stages_shard_what_the_zero_paper_says)
{
    /* Megatron-style states (16-bit copy, fp32 master, fp32 grads) at each stage */
    const double rep[4] = {18, 6, 2, 0}, sh[4] = {0, 12, 16, 18};
    for (int z = 0; z < 4; z++) {
        char zs[16];
        snprintf(zs, sizeof zs, "zero=%d", z);
        cpb_setup s = setup_of((const char *[]){"framework=megatron", zs, NULL});
        cr_expect_eq(s.zero, z);
        cr_expect(s.from_cli[CPB_PART_ZERO]);
        cr_expect_float_eq(s.dev_rep, rep[z], 1e-12, "stage %d: replicated %g", z, s.dev_rep);
        cr_expect_float_eq(s.dev_sh, sh[z], 1e-12, "stage %d: sharded %g", z, s.dev_sh);
    }
    /* bf16 master weights: no separate 16-bit copy */
    cpb_setup s = setup_of((const char *[]){"framework=deepspeed", "master_dtype=bf16", NULL});
    cr_expect_float_eq(s.dev_sh, 2 + 2 + 8, 1e-12);
    cr_expect_eq(s.copy16_eff, 0);
}

Test(sim_setup, states_on_the_device_and_host_follow_the_parts)
{
    cpb_model_estimate *e = estimate(8, 1 << 20, (const char *[]){"framework=alst", NULL});
    double P = e->params;
    cr_expect_eq(e->moment[0].states, (int64_t)(2.0 * P / 8));
    cr_expect_eq(e->host_states, (int64_t)(16.0 * P / 8));
    cr_expect_geq(e->host_bytes, e->host_states, "offloaded states count against host memory");
    /* the CPU step: 30 bytes per parameter of the shard over the node's host memory
     * (8 GPUs share it), and 2 + 2 bytes over PCIe */
    cpb_gpu_profile prof;
    char err[256];
    cr_assert_eq(cpb_gpu_profile_get("h100-sxm", &prof, err, sizeof err), CPB_OK);
    cr_expect(prof.host_mem_bw > 1e11, "the profile has a host memory bandwidth");
    cr_expect_float_eq(e->opt_host_s, 30.0 * (P / 8) * 8 / prof.host_mem_bw, 1e-9);
    cr_expect_gt(e->opt_pcie_s, 0);
    cr_expect_float_eq(e->optimizer_s, e->opt_host_s + e->opt_pcie_s, 1e-12);
    cpb_model_estimate_free(e);
    /* the same setup with the optimizer on the GPU: 16 bytes per parameter on the device,
     * nothing of the states on the host, and an HBM-bound step */
    e = estimate(8, 1 << 20, (const char *[]){"framework=alst", "optimizer=gpu", NULL});
    cr_expect_eq(e->moment[0].states, (int64_t)(16.0 * P / 8));
    cr_expect_eq(e->host_states, 0);
    cr_expect_eq(e->opt_host_s, 0);
    cr_expect_lt(e->optimizer_s, 0.1);
    cpb_model_estimate_free(e);
}

Test(sim_setup, checkpointing_modes)
{
    /* full with offload (the preset), full on the device, and none, at 256K on 8 GPUs */
    cpb_model_estimate *off = estimate(8, 1 << 18, (const char *[]){"framework=torchtitan", NULL});
    cpb_model_estimate *dev = estimate(8, 1 << 18, (const char *[]){"framework=torchtitan", "ckpt_offload=off", NULL});
    cpb_model_estimate *none = estimate(8, 1 << 18, (const char *[]){"framework=torchtitan", "ckpt=none",
                                                                      "ckpt_offload=off", NULL});
    cpb_model_estimate *sel = estimate(8, 1 << 18, (const char *[]){"framework=torchtitan", "ckpt=selective",
                                                                     "ckpt_offload=off", NULL});
    const double sD = (double)(1 << 15) * 4096;
    /* every layer's input on the device */
    cr_expect_eq(dev->moment[CPB_MOMENT_LOSS].ckpt, (int64_t)(32 * sD * 2));
    cr_expect_eq(off->moment[CPB_MOMENT_LOSS].ckpt, (int64_t)(2 * sD * 2));
    cr_expect_lt(dev->host_bytes, off->host_bytes);
    cr_expect_eq(dev->ckpt_layer_s, 0);
    cr_expect_gt(off->ckpt_layer_s, 0);
    /* without checkpointing every layer keeps its saved state: more memory, no recompute */
    cr_expect_gt(none->moment[CPB_MOMENT_LOSS].ckpt, dev->moment[CPB_MOMENT_LOSS].ckpt);
    cr_expect_float_eq(none->attn_layer_s, none->attn.fwd_s + none->attn.bwd_s, 1e-12);
    cr_expect_float_eq(dev->attn_layer_s, 2 * dev->attn.fwd_s + dev->attn.bwd_s, 1e-12);
    cr_expect_float_eq(none->mlp_passes, dev->mlp_passes - 1, 1e-12);
    cr_expect_lt(none->step_s, dev->step_s);
    /* selective: the memory of none (a fused attention keeps no score matrix), the
     * attention core's forward once more */
    cr_expect_eq(sel->moment[CPB_MOMENT_LOSS].total, none->moment[CPB_MOMENT_LOSS].total);
    cr_expect_gt(sel->attn_layer_s, none->attn_layer_s);
    cr_expect_lt(sel->attn_layer_s, dev->attn_layer_s);
    cpb_model_estimate_free(off);
    cpb_model_estimate_free(dev);
    cpb_model_estimate_free(none);
    cpb_model_estimate_free(sel);
}

Test(sim_setup, tiled_mlp_and_fused_loss)
{
    const double s = 1 << 15, F = 14336, V = 128256;
    cpb_model_estimate *t = estimate(8, 1 << 18, (const char *[]){"framework=torchtitan", NULL});
    cpb_model_estimate *u = estimate(8, 1 << 18, (const char *[]){"framework=torchtitan", "tiled_mlp=off",
                                                                   "fused_loss=off", NULL});
    /* TiledMLP: tiles of D tokens; untiled: six [s, F] buffers */
    cr_expect_eq(t->moment[CPB_MOMENT_MLP_BWD].work, (int64_t)(6 * 4096.0 * F * 2));
    cr_expect_eq(u->moment[CPB_MOMENT_MLP_BWD].work, (int64_t)(6 * s * F * 2));
    cr_expect_float_eq(t->mlp_passes, 5.0, 1e-12);
    cr_expect_float_eq(u->mlp_passes, 4.0, 1e-12);
    cr_expect_eq(u->mlp_acc_s, 0);
    /* the whole logits: 12 bytes each at the loss's peak */
    cr_expect_eq(u->moment[CPB_MOMENT_LOSS].work, (int64_t)(12 * s * V));
    cr_expect_lt(t->moment[CPB_MOMENT_LOSS].work, u->moment[CPB_MOMENT_LOSS].work / 10);
    cr_expect_float_eq(u->loss_s, 28 * s * V / 3.0e12, 1e-9);
    cpb_model_estimate_free(t);
    cpb_model_estimate_free(u);
}

Test(sim_setup, fp8_mlp_and_profiles_without_it)
{
    cpb_model_estimate *b = estimate(8, 1 << 18, (const char *[]){"framework=torchtitan", NULL});
    cpb_model_estimate *f = estimate(8, 1 << 18, (const char *[]){"framework=torchtitan", "linear_dtype=fp8", NULL});
    /* the MLP's GEMMs at 1979 instead of 989 TFLOP/s, plus torchao's casts (test_fp8_casts.c);
     * attention unchanged */
    double gemm_b = b->mlp_layer_s - b->mlp_acc_s, gemm_f = f->mlp_layer_s - f->mlp_acc_s - f->fp8_cast_s;
    cr_expect_float_eq(gemm_f, gemm_b * 989.0 / 1979.0, 1e-9);
    cr_expect_eq(b->fp8_cast_s, 0.0);
    cr_expect_gt(f->fp8_cast_s, 0.0);
    cr_expect_float_eq(f->attn_layer_s, b->attn_layer_s, 1e-15);
    cpb_model_estimate_free(b);
    cpb_model_estimate_free(f);
    cpb_problem p = llama_with(8, 1 << 18, (const char *[]){"linear_dtype=fp8", NULL});
    cpb_sim_opts o = {0};
    o.gpu = "a100-80g";
    cpb_model_estimate *e = NULL;
    char err[512] = "";
    cr_expect_eq(cpb_model_estimate_new(&p, ulysses(), &o, &e, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "fp8") != NULL, "%s", err);
}

Test(sim_setup, micro_batch_and_accumulation)
{
    cpb_model_estimate *one = estimate(8, 1 << 18, (const char *[]){"framework=deepspeed", NULL});
    cpb_model_estimate *acc = estimate(8, 1 << 18, (const char *[]){"framework=deepspeed", "grad_accum=4", NULL});
    cpb_model_estimate *mb = estimate(8, 1 << 18, (const char *[]){"framework=deepspeed", "micro_batch=2", NULL});
    /* the optimizer once per step, the micro-batch K times */
    cr_expect_float_eq(acc->step_s, 4 * one->micro_s + one->optimizer_s, 1e-9);
    cr_expect_eq(acc->moment[acc->peak_moment].total, one->moment[one->peak_moment].total,
                 "accumulation adds no memory");
    static cpb_row r1, r4;
    cpb_model_estimate_row(one, &r1);
    cpb_model_estimate_row(acc, &r4);
    cr_expect_float_eq(r4.tokens_per_s_per_gpu, 4.0 * (1 << 18) / (acc->step_s * 8), 1e-9);
    cr_expect_gt(r4.tokens_per_s_per_gpu, r1.tokens_per_s_per_gpu);
    /* two sequences: twice the activations, not twice the states */
    cr_expect_eq(mb->moment[CPB_MOMENT_ATTN_BWD].attn_act, 2 * one->moment[CPB_MOMENT_ATTN_BWD].attn_act);
    cr_expect_eq(mb->moment[CPB_MOMENT_ATTN_BWD].states, one->moment[CPB_MOMENT_ATTN_BWD].states);
    cr_expect_float_eq(mb->attn_layer_s, 2 * one->attn_layer_s, 1e-12);
    cpb_model_estimate_free(one);
    cpb_model_estimate_free(acc);
    cpb_model_estimate_free(mb);
}

Test(sim_setup, zero_below_three_pays_per_step_collectives)
{
    cpb_model_estimate *m = estimate(8, 1 << 18, (const char *[]){"framework=megatron", "ckpt=full", "tiled_mlp=on",
                                                                   "fused_loss=on", NULL});
    /* parameters replicated: nothing gathered per layer; the updated parameters gathered
     * and the gradients reduced once per step */
    cr_expect_gt(m->step_comm_s, 0);
    cr_expect_float_eq(m->step_s, m->micro_s + m->optimizer_s + m->step_comm_s, 1e-9);
    cpb_model_estimate_free(m);
}

Test(sim_setup, assumptions_block_names_every_part_and_its_origin)
{
    cpb_setup s = setup_of((const char *[]){"framework=alst", "ckpt_offload=off", "grad_accum=2", NULL});
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cpb_setup_print_assumptions(f, &s, "# ");
    fclose(f);
    int lines = 0;
    for (char *c = buf; *c; c++) lines += *c == '\n';
    cr_expect_eq(lines, 1 + CPB_PART_COUNT + 1, "a header, one line per part, the bytes per parameter:\n%s", buf);
    for (int i = 0; i < CPB_PART_COUNT; i++)
        cr_expect(strstr(buf, cpb_setup_part_name(i)) != NULL, "part %s in\n%s", cpb_setup_part_name(i), buf);
    cr_expect(strstr(buf, "checkpoint offload  off [command line]") != NULL, "%s", buf);
    cr_expect(strstr(buf, "grad accumulation   2 [command line]") != NULL, "%s", buf);
    cr_expect(strstr(buf, "optimizer           cpu (offloaded; CPU Adam) [preset alst]") != NULL, "%s", buf);
    cr_expect(strstr(buf, "micro-batch         1 [default]") != NULL, "%s", buf);
    cr_expect(strstr(buf, "bytes per parameter 18 =") != NULL, "%s", buf);
    free(buf);
}

Test(sim_setup, meaningless_combinations_are_refused)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("llama3-8b", &p), CPB_OK);
    p.C = 8;
    p.S = 1 << 20;
    p.dtype = CPB_BF16;
    cpb_knobs given;
    memset(&given, 0, sizeof given);
    cpb_knobs_set_str(&given, "ckpt", "none");
    cpb_knobs_set_str(&given, "ckpt_offload", "on");
    char err[512] = "";
    cr_expect_eq(cpb_knobs_apply(ulysses(), &given, &p, err, sizeof err), CPB_ERR_REFUSED);
    cr_expect(strstr(err, "--ckpt full") != NULL, "%s", err);
    memset(&given, 0, sizeof given);
    cpb_knobs_set_str(&given, "framework", "megatron");
    cpb_knobs_set_str(&given, "param_offload", "on");
    cr_expect_eq(cpb_knobs_apply(ulysses(), &given, &p, err, sizeof err), CPB_ERR_REFUSED);
    cr_expect(strstr(err, "--zero 3") != NULL, "%s", err);
}

Test(sim_setup, fixes_name_what_is_not_on)
{
    char fx[512];
    cpb_setup s = setup_of((const char *[]){"framework=torchtitan", NULL});
    cpb_setup_fixes(&s, fx, sizeof fx);
    cr_expect(strstr(fx, "--optimizer cpu") != NULL, "%s", fx);
    cr_expect(strstr(fx, "--tiled-mlp") == NULL, "%s", fx);
    s = setup_of((const char *[]){"framework=alst", NULL});
    cpb_setup_fixes(&s, fx, sizeof fx);
    cr_expect(strstr(fx, "--optimizer cpu") == NULL, "%s", fx);
    s = setup_of((const char *[]){"framework=hf-zero3", NULL});
    cpb_setup_fixes(&s, fx, sizeof fx);
    cr_expect(strstr(fx, "--fused-loss on") != NULL && strstr(fx, "--tiled-mlp on") != NULL, "%s", fx);
}

Test(sim_setup, every_preset_estimates_and_lists)
{
    for (int i = 0; i < cpb_framework_count(); i++) {
        const cpb_framework *fw = cpb_framework_at(i);
        char kv[64];
        snprintf(kv, sizeof kv, "framework=%s", fw->name);
        cpb_model_estimate *e = estimate(8, 1 << 17, (const char *[]){kv, NULL});
        /* Megatron's setup keeps every layer's activations (selective recompute) and its
         * replicated 6 bytes per parameter: Llama3-8B does not fit 8 x 80 GB without tensor
         * parallelism at 128K */
        if (strcmp(fw->name, "megatron") == 0) cr_expect_eq(e->status, CPB_ERR_OOM, "%s", e->reason);
        else cr_expect_eq(e->status, CPB_OK, "%s at 128K: %s", fw->name, e->reason);
        cr_expect_gt(e->step_s, 0);
        cpb_model_estimate_free(e);
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cpb_framework_list_print(f);
    fclose(f);
    for (int i = 0; i < cpb_framework_count(); i++)
        cr_expect(strstr(buf, cpb_framework_at(i)->name) != NULL, "%s listed", cpb_framework_at(i)->name);
    cr_expect(strstr(buf, "--optimizer cpu") != NULL);
    free(buf);
}

Test(sim_setup, replicas_shard_over_the_world_or_within_a_replica)
{
    cpb_model_estimate *one = estimate(8, 1 << 18, (const char *[]){"framework=torchtitan", NULL});
    cpb_model_estimate *w = estimate(8, 1 << 18, (const char *[]){"framework=torchtitan", "dp=4", NULL});
    cpb_model_estimate *h = estimate(8, 1 << 18, (const char *[]){"framework=torchtitan", "dp=4", "shard_group=replica",
                                                                   NULL});
    double P = one->params;
    /* 16 bytes per parameter over 32 GPUs, or over the replica's 8 (HSDP) */
    cr_expect_eq(w->moment[0].states, (int64_t)(16.0 * P / 32));
    cr_expect_eq(h->moment[0].states, (int64_t)(16.0 * P / 8));
    cr_expect_eq(h->moment[0].states, one->moment[0].states);
    /* the replica's layer trial is the same; HSDP pays the all-reduce across replicas, and
     * world sharding gathers over the network (32 GPUs span 4 nodes) */
    cr_expect_float_eq(h->attn_layer_s, one->attn_layer_s, 1e-15);
    cr_expect_gt(h->step_comm_s, 0);
    cr_expect_eq(one->step_comm_s, 0);
    cr_expect_gt(w->fsdp_layer_s, one->fsdp_layer_s);
    /* tokens/s per GPU: each replica trains its own sequences */
    static cpb_row r;
    cpb_model_estimate_row(h, &r);
    cr_expect_float_eq(r.tokens_per_s_per_gpu, (double)(1 << 18) / (h->step_s * 8), 1e-9);
    cpb_model_estimate_free(one);
    cpb_model_estimate_free(w);
    cpb_model_estimate_free(h);
}
