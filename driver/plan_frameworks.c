/* plan_frameworks.c — the frameworks that have each method, and the settings that realise
 * a candidate there (plan_frameworks.h).  One table; each line cites where the framework
 * defines the setting (paths in the frameworks' repositories, read in December 2026).
 *
 * Placeholders in a setting: {C} the context-parallel group (every GPU, or GPUs / tp under
 * --tp: of the four only Megatron-LM combines its CP with TP and sequence parallelism, so
 * only its settings are given then, with the TP ones in front), {U} the candidate's Ulysses degree, {R} = C / U its ring degree, {CHUNK} the
 * FPDT chunk in global tokens (--seq-chunk; DeepSpeed's chunk_size is global too).
 *
 * Sources:
 *   [YC]  feifeibear/long-context-attention (yunchang): yunchang/globals.py
 *         set_seq_parallel_pg(sp_ulysses_degree, sp_ring_degree, rank, world_size);
 *         LongContextAttention (USP), UlyssesAttention, zigzag ring (ring_flash_attn)
 *   [DS]  microsoft/DeepSpeed: docs/_tutorials/ds-sequence.md (DeepSpeed-Ulysses,
 *         DistributedAttention over the sequence-parallel group, sequence_parallel_size;
 *         Megatron-DeepSpeed's --ds-sequence-parallel-size);
 *         deepspeed/sequence/fpdt_layer.py FPDT_Attention(..., chunk_size=65536)
 *   [MG]  NVIDIA/Megatron-LM: megatron/training/arguments.py --context-parallel-size,
 *         --cp-comm-type p2p|a2a|allgather|a2a+p2p, --hierarchical-context-parallel-sizes
 *         (for a2a+p2p), --tensor-model-parallel-size with --sequence-parallel;
 *         docs/source/api-guide/context_parallel.rst (CP: ring of KV exchanges, load-balanced)
 *   [TT]  pytorch/torchtitan: torchtitan/config/job_config.py Parallelism
 *         context_parallel_degree, context_parallel_rotate_method allgather|alltoall
 *         (ring attention via torch.distributed.tensor.experimental.context_parallel)
 *
 * Not in any of the four: upipe (its reference is togethercomputer/Untied-Ulysses, a
 * research code), hupipe (this suite's hybrid of UPipe and a ring), offload (Ulysses with
 * offloaded activations and grouped backward; no framework ships this schedule), metp (the
 * METP paper's method). */
#include "plan_frameworks.h"

#include <stdio.h>
#include <string.h>

#include "knobs.h"
#include "model_scope_pp.h"
#include "tp_compose.h"

typedef struct fw_setting {
    const char *method;
    const char *family;   /* deepspeed | megatron | yunchang | torchtitan */
    const char *settings; /* with the placeholders above */
    const char *source;
} fw_setting;

static const fw_setting table[] = {
    {"ulysses", "deepspeed", "sequence_parallel_size={C} (DistributedAttention; Megatron-DeepSpeed --ds-sequence-parallel-size {C})", "DS"},
    {"ulysses", "megatron", "--context-parallel-size {C} --cp-comm-type a2a", "MG"},
    {"ulysses", "yunchang", "ulysses_degree={C} ring_degree=1 (UlyssesAttention)", "YC"},
    {"fpdt", "deepspeed", "sequence_parallel_size={C}, FPDT_Attention chunk_size={CHUNK}", "DS"},
    {"ring", "megatron", "--context-parallel-size {C} --cp-comm-type p2p", "MG"},
    {"ring", "yunchang", "ulysses_degree=1 ring_degree={C} (zigzag ring)", "YC"},
    {"ring", "torchtitan", "context_parallel_degree={C} (context_parallel_rotate_method allgather, the default, or alltoall)", "TT"},
    {"usp", "yunchang", "ulysses_degree={U} ring_degree={R} (LongContextAttention)", "YC"},
    {"usp", "megatron", "--context-parallel-size {C} --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes {U} {R}", "MG"},
    {"tp", "megatron", "--tensor-model-parallel-size {C} --sequence-parallel", "MG"},
};
#define NTABLE ((int)(sizeof table / sizeof table[0]))

static const char *families[] = {"deepspeed", "megatron", "yunchang", "torchtitan"};
#define NFAM ((int)(sizeof families / sizeof families[0]))

static const char *source_name(const char *s)
{
    return !strcmp(s, "DS")   ? "microsoft/DeepSpeed deepspeed/sequence/, docs/_tutorials/ds-sequence.md"
           : !strcmp(s, "MG") ? "NVIDIA/Megatron-LM megatron/training/arguments.py"
           : !strcmp(s, "YC") ? "feifeibear/long-context-attention yunchang/globals.py set_seq_parallel_pg"
                              : "pytorch/torchtitan torchtitan/config/job_config.py";
}

const char *cpb_plan_stacks(void)
{
    return "deepspeed|megatron|yunchang|torchtitan";
}

int cpb_plan_stack_methods(const char *family, char *out, size_t len)
{
    size_t n = 0;
    int found = 0;
    out[0] = 0;
    for (int f = 0; f < NFAM; f++) found |= !strcmp(family, families[f]);
    if (!found) return 0;
    for (int i = 0; i < NTABLE; i++) {
        if (strcmp(table[i].family, family)) continue;
        if (n < len) n += (size_t)snprintf(out + n, len - n, "%s%s", n ? "," : "", table[i].method);
    }
    return 1;
}

/* settings with the placeholders filled */
static void fill(const char *t, const cpb_problem *p, char *out, size_t len)
{
    int64_t U = cpb_knob_int(p, "ulysses_degree"), chunk = cpb_knob_int(p, "seq_chunk");
    if (chunk <= 0) chunk = p->S < 65536 ? p->S : 65536; /* FPDT's default (fpdt_method.c) */
    size_t n = 0;
    out[0] = 0;
    while (*t && n + 1 < len) {
        char v[32] = "";
        size_t skip = 0;
        const int cp = p->C / cpb_tp_degree(p);
        if (!strncmp(t, "{C}", 3)) snprintf(v, sizeof v, "%d", cp), skip = 3;
        else if (!strncmp(t, "{U}", 3)) snprintf(v, sizeof v, "%lld", (long long)U), skip = 3;
        else if (!strncmp(t, "{R}", 3)) snprintf(v, sizeof v, "%lld", (long long)(U > 0 ? cp / U : 0)), skip = 3;
        else if (!strncmp(t, "{CHUNK}", 7)) snprintf(v, sizeof v, "%lld", (long long)chunk), skip = 7;
        if (skip) {
            n += (size_t)snprintf(out + n, len - n, "%s", v);
            t += skip;
        } else {
            out[n++] = *t++;
            out[n] = 0;
        }
    }
}

int cpb_plan_framework_settings(const cpb_method *m, const cpb_problem *p, const char *family, char *out,
                                size_t len)
{
    size_t n = 0;
    int k = 0;
    const int tp = cpb_tp_degree(p);
    out[0] = 0;
    for (int i = 0; i < NTABLE && n < len; i++) {
        if (strcmp(table[i].method, m->name) || (family && family[0] && strcmp(table[i].family, family))) continue;
        if (tp > 1 && strcmp(table[i].family, "megatron")) continue; /* no TP x CP there */
        /* --pp (model_scope_pp.h models Megatron's schedules): its settings in Megatron-LM
         * only [MG: --pipeline-model-parallel-size, --num-virtual-stages-per-pipeline-rank,
         * --decoder-first-pipeline-num-layers, --decoder-last-pipeline-num-layers] */
        const int pp = cpb_pp_degree(p);
        if (pp > 1 && strcmp(table[i].family, "megatron")) continue;
        char s[256], tps[96] = "", pps[256] = "";
        fill(table[i].settings, p, s, sizeof s);
        if (tp > 1) snprintf(tps, sizeof tps, "--tensor-model-parallel-size %d --sequence-parallel ", tp);
        if (pp > 1) {
            size_t q = (size_t)snprintf(pps, sizeof pps, "--pipeline-model-parallel-size %d ", pp);
            if (cpb_knob_int(p, "vpp") > 1)
                q += (size_t)snprintf(pps + q, sizeof pps - q, "--num-virtual-stages-per-pipeline-rank %lld ",
                                      (long long)cpb_knob_int(p, "vpp"));
            if (cpb_knob_int(p, "pp_first_layers") > 0)
                q += (size_t)snprintf(pps + q, sizeof pps - q, "--decoder-first-pipeline-num-layers %lld ",
                                      (long long)cpb_knob_int(p, "pp_first_layers"));
            if (cpb_knob_int(p, "pp_last_layers") > 0)
                snprintf(pps + q, sizeof pps - q, "--decoder-last-pipeline-num-layers %lld ",
                         (long long)cpb_knob_int(p, "pp_last_layers"));
        }
        /* DeepSpeed ships FPDT's own schedule; the pipelined one is this suite's (docs/methods.md) */
        const char *sched = !strcmp(m->name, "fpdt") && !strcmp(cpb_knob_str(p, "fpdt_impl"), "pipelined")
                                ? " (DeepSpeed runs its own schedule, --fpdt-impl deepspeed; the pipelined one is "
                                  "this suite's idealised schedule, docs/methods.md)"
                                : "";
        n += (size_t)snprintf(out + n, len - n, "    %s: %s%s%s%s  [%s]\n", table[i].family, tps, pps, s, sched,
                              source_name(table[i].source));
        k++;
    }
    if (!k)
        snprintf(out, len, "    no framework of %s has %s%s: run it with this suite's implementation "
                 "(docs/methods.md names its reference)\n", family && family[0] ? family : cpb_plan_stacks(), m->name,
                 tp > 1 ? " under tensor parallelism" : cpb_pp_degree(p) > 1 ? " under pipeline parallelism" : "");
    return k;
}

int cpb_plan_in_framework(const cpb_method *m, const cpb_problem *p, const char *family)
{
    if (!strcmp(m->name, "fpdt") && !strcmp(cpb_knob_str(p, "fpdt_impl"), "pipelined")) return 0;
    char buf[2048];
    return cpb_plan_framework_settings(m, p, family, buf, sizeof buf) > 0;
}
