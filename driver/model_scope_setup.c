/* model_scope_setup.c — the training setup as parts (model_scope.h: cpb_setup).  Each part
 * is a knob of every model-scope point (declared once, in cpb_setup_knobs: an option, a
 * results column and a field of the point key); a `--framework` preset
 * (model_scope_framework.c) is a named bundle of parts, and a part given on the command line
 * overrides the preset's.  A choice part's default is "preset" (and an integer part's 0):
 * the row records the value as asked, the framework column names the preset, so the point
 * is known without the inputs; the assumptions block says what each resolved to and why.
 *
 * Bytes per parameter of the model states are derived here from the parts (ZeRO paper,
 * arXiv 1910.02054, section 5: stage 1 partitions the optimizer states, 2 also the
 * gradients, 3 also the parameters; Megatron Core's distributed optimizer guide [MCDO]
 * gives the same sums for its dtypes). */
#include <stdio.h>
#include <string.h>

#include "knobs.h"
#include "model_scope.h"

static int check_parts(const cpb_problem *p, char *why, size_t why_len);

#define PART(nm, ch, ar, hl)                                                                                    \
    {.name = nm, .type = CPB_KNOB_CHOICE, .def = "preset", .choices = "preset|" ch, .arg = ar, .help = hl,       \
     .points = CPB_KNOB_MODEL_SCOPE_POINTS, .setup = 1, .check = check_parts}

/* The parts, in the order the assumptions block prints them.  plan keeps every part fixed
 * (setup = 1): the preset's, or the command line's; it searches the methods' knobs only. */
const cpb_knob cpb_setup_knobs[] = {
    PART("zero", "0|1|2|3", "0|1|2|3",
         "model-state sharding: ZeRO stage (1 optimizer states, 2 + gradients, 3 + parameters = FSDP full "
         "shard; default: the --framework preset's)"),
    PART("optimizer", "gpu|cpu", "gpu|cpu",
         "optimizer states (fp32 master, Adam m, v) and step on the GPU or offloaded to the CPU"),
    PART("param_offload", "off|on", "off|on", "the sharded 16-bit parameters kept in host memory"),
    PART("master_dtype", "fp32|bf16|fp16", "fp32|bf16|fp16", "dtype of the weights the optimizer updates"),
    PART("grad_dtype", "fp32|bf16|fp16", "fp32|bf16|fp16", "dtype of the stored gradients"),
    {.name = "lora_rank", .type = CPB_KNOB_INT, .def = "0", .arg = "R",
     .help = "a frozen base with LoRA adapters of rank R on q, k, v, o and the MLP matrices (PEFT's \"all-linear\"); "
             "0: every parameter trainable (default)",
     .points = CPB_KNOB_MODEL_SCOPE_POINTS, .setup = 1, .check = check_parts},
    PART("ckpt", "none|full|selective", "none|full|selective",
         "activation checkpointing (selective: Megatron's, the attention core recomputed)"),
    PART("ckpt_offload", "off|on", "off|on", "checkpointed layer inputs offloaded to host memory"),
    PART("tiled_mlp", "off|on", "off|on", "the MLP in tiles of the sequence (TiledMLP / FPDT_FFN)"),
    PART("fused_loss", "off|on", "off|on", "a loss that never holds the whole [s, V] logits (fused linear cross-entropy)"),
    PART("linear_dtype", "bf16|fp8", "bf16|fp8", "GEMM precision of the MLP (attention stays bf16)"),
    {.name = "micro_batch", .type = CPB_KNOB_INT, .def = "0", .arg = "B",
     .help = "sequences per micro-batch (default 1)", .points = CPB_KNOB_MODEL_SCOPE_POINTS, .setup = 1},
    {.name = "grad_accum", .type = CPB_KNOB_INT, .def = "0", .arg = "K",
     .help = "micro-batches per optimizer step (default 1)", .points = CPB_KNOB_MODEL_SCOPE_POINTS, .setup = 1},
    /* the layout (model_scope_layout.c): --gpus GPUs = cp x dp.  cp is searched by plan
     * (its candidates), so it is not a setup knob; dp is derived from it */
    {.name = "cp", .type = CPB_KNOB_INT, .def = "0", .arg = "N",
     .help = "context-parallel degree: the attention layer runs on N ranks, the --gpus GPUs form GPUs / N "
             "data-parallel replicas (default: every GPU; plan searches the divisors of --gpus)",
     .points = CPB_KNOB_MODEL_SCOPE_POINTS, .candidates = cpb_layout_cp_candidates},
    {.name = "dp", .type = CPB_KNOB_INT, .def = "0", .arg = "R",
     .help = "data-parallel replicas: derived as --gpus / --cp; given alone it sets --cp to --gpus / R, given with "
             "--cp it must agree (default 1)",
     .points = CPB_KNOB_MODEL_SCOPE_POINTS, .setup = 1},
    PART("shard_group", "world|replica", "world|replica",
         "the GPUs the model states are sharded over: every GPU, or each replica's (HSDP)"),
    {NULL}};

/* the knob of each part, in part order */
static const char *const knob_of_part[CPB_PART_COUNT] = {
    "zero", "optimizer", "param_offload", "master_dtype", "grad_dtype", "lora_rank", "ckpt",
    "ckpt_offload", "tiled_mlp", "fused_loss", "linear_dtype", "micro_batch", "grad_accum", "cp", "dp", "shard_group",
    "pp"};

static const char *const part_names[CPB_PART_COUNT] = {
    "sharding", "optimizer", "parameters", "master weights", "gradients", "LoRA rank", "checkpointing",
    "checkpoint offload", "tiled MLP", "fused loss", "linear layers", "micro-batch", "grad accumulation",
    "context parallel", "replicas", "shard group", "pipeline"};

const char *cpb_setup_part_name(int part)
{
    return part >= 0 && part < CPB_PART_COUNT ? part_names[part] : "?";
}

/* the given choice, or NULL when the part is the preset's */
static const char *given(const cpb_problem *p, const char *knob)
{
    const char *v = cpb_knob_str(p, knob);
    return v && v[0] && strcmp(v, "preset") != 0 ? v : NULL;
}

static void derive_bytes(cpb_setup *s)
{
    /* The components, each replicated or sharded over the GPUs by the stage, on the device
     * or in host memory:
     * - a 16-bit compute copy of the parameters (with an fp32 master beside it): sharded at
     *   stage 3; in host memory with parameter offload;
     * - the master weights: with a 16-bit copy an optimizer state (sharded from stage 1, on
     *   the host with the optimizer); without one they are the parameters (sharded at
     *   stage 3, on the host with parameter offload);
     * - the gradients: sharded from stage 2; with the optimizer on the CPU its partition of
     *   them is an fp32 host buffer the CPU Adam reads [ZO] (the GPU's are in the reduce
     *   bucket: model_scope.c);
     * - Adam's m and v, fp32: sharded from stage 1, on the host with the optimizer. */
    const int sep = s->copy16_eff;
    s->p16 = sep ? 2 : 0;
    s->master = s->master_bytes;
    s->grad = s->opt_cpu ? 4 : s->grad_bytes;
    s->moments = 8;
    s->dev_rep = s->dev_sh = s->host_rep = s->host_sh = 0;
#define ADD(bytes, sharded, host)                                                                                     \
    do {                                                                                                              \
        double *t = (host) ? ((sharded) ? &s->host_sh : &s->host_rep) : ((sharded) ? &s->dev_sh : &s->dev_rep);      \
        *t += (bytes);                                                                                                \
    } while (0)
    if (sep) {
        ADD(s->p16, s->zero >= 3, s->param_offload);
        ADD(s->master, s->zero >= 1, s->opt_cpu);
    } else {
        ADD(s->master, s->zero >= 3, s->param_offload || s->opt_cpu);
    }
    ADD(s->grad, s->zero >= 2, s->opt_cpu);
    ADD(s->moments, s->zero >= 1, s->opt_cpu);
#undef ADD
    /* LoRA (Hu et al., arXiv 2106.09685, section 4.2: no gradients or optimizer states for
     * the frozen weights): the parts above are those of the trainable adapters; the frozen
     * base holds its weights only, in the 16-bit dtype (PEFT loads the base in the training
     * dtype and never updates it, so it needs no master), sharded at stage 3 like any
     * parameter, in host memory with parameter offload */
    s->base_bytes = s->lora_rank > 0 ? 2 : 0;
    s->base_dev_rep = s->base_dev_sh = s->base_host_rep = s->base_host_sh = 0;
    if (s->lora_rank > 0) {
        /* on the host where the parameters are: parameter offload, or FSDP2's CPU offload
         * (the optimizer on the CPU without a 16-bit copy: the stored parameters go with it) */
        const int host = s->param_offload || (s->opt_cpu && !sep);
        double *t = host ? (s->zero >= 3 ? &s->base_host_sh : &s->base_host_rep)
                         : (s->zero >= 3 ? &s->base_dev_sh : &s->base_dev_rep);
        *t = s->base_bytes;
    }
}

void cpb_setup_state_bytes(const cpb_setup *s, double params, double trainable, double N, double *dev, double *host)
{
    double frozen = s->lora_rank > 0 ? params : 0;
    /* Under --tp T each GPU holds 1/T of every weight matrix (Megatron-LM
     * megatron/core/tensor_parallel/layers.py: ColumnParallelLinear and RowParallelLinear
     * partition the weight over the TP group, VocabParallelEmbedding the vocabulary), so a
     * state replicated across the data-parallel ranks is 1/T per GPU; a sharded one is
     * already split over every GPU (its 1/T slice over the GPUs / T of its TP rank).  The
     * norms' few parameters are replicated across the TP group and counted as split too
     * (an estimate, under 0.01% of a Llama's parameters). */
    const double T = s->tp > 1 ? s->tp : 1;
    *dev = (s->dev_sh / N + s->dev_rep / T) * trainable + (s->base_dev_sh / N + s->base_dev_rep / T) * frozen;
    *host = (s->host_sh / N + s->host_rep / T) * trainable + (s->base_host_sh / N + s->base_host_rep / T) * frozen;
}

int cpb_setup_of(const cpb_problem *p, cpb_setup *s, char *err, size_t err_len)
{
    memset(s, 0, sizeof *s);
    const char *fw_name = cpb_knob_str(p, "framework");
    const cpb_framework *f = cpb_framework_find(fw_name);
    if (!f) {
        snprintf(err, err_len, "--framework: unknown training setup '%s' (valid: %s)", fw_name, cpb_framework_names());
        return CPB_ERR_INVALID;
    }
    s->fw = f;
    s->zero = f->zero;
    s->opt_cpu = f->opt_cpu;
    s->param_offload = f->param_offload;
    s->master_bytes = f->master_bytes;
    s->grad_bytes = f->grad_bytes;
    s->ckpt = f->ckpt;
    s->ckpt_offload = f->ckpt_offload;
    s->tiled_mlp = f->tiled_mlp;
    s->fused_loss = f->fused_loss;
    s->fp8 = 0;
    s->micro_batch = 1;
    s->grad_accum = 1;
    const char *v;
    if ((v = given(p, "zero"))) s->zero = v[0] - '0', s->from_cli[CPB_PART_ZERO] = 1;
    if ((v = given(p, "optimizer"))) s->opt_cpu = strcmp(v, "cpu") == 0, s->from_cli[CPB_PART_OPTIMIZER] = 1;
    if ((v = given(p, "param_offload"))) s->param_offload = strcmp(v, "on") == 0, s->from_cli[CPB_PART_PARAM_OFFLOAD] = 1;
    if ((v = given(p, "master_dtype"))) s->master_bytes = strcmp(v, "fp32") == 0 ? 4 : 2, s->from_cli[CPB_PART_MASTER] = 1;
    if ((v = given(p, "grad_dtype"))) s->grad_bytes = strcmp(v, "fp32") == 0 ? 4 : 2, s->from_cli[CPB_PART_GRAD] = 1;
    if ((v = given(p, "ckpt")))
        s->ckpt = strcmp(v, "none") == 0 ? CPB_CKPT_NONE : strcmp(v, "full") == 0 ? CPB_CKPT_FULL : CPB_CKPT_SELECTIVE,
        s->from_cli[CPB_PART_CKPT] = 1;
    if ((v = given(p, "ckpt_offload"))) s->ckpt_offload = strcmp(v, "on") == 0, s->from_cli[CPB_PART_CKPT_OFFLOAD] = 1;
    if ((v = given(p, "tiled_mlp"))) s->tiled_mlp = strcmp(v, "on") == 0, s->from_cli[CPB_PART_TILED_MLP] = 1;
    if ((v = given(p, "fused_loss"))) s->fused_loss = strcmp(v, "on") == 0, s->from_cli[CPB_PART_FUSED_LOSS] = 1;
    if ((v = given(p, "linear_dtype"))) s->fp8 = strcmp(v, "fp8") == 0, s->from_cli[CPB_PART_LINEAR] = 1;
    if (cpb_knob_int(p, "micro_batch") > 0)
        s->micro_batch = (int)cpb_knob_int(p, "micro_batch"), s->from_cli[CPB_PART_MICRO_BATCH] = 1;
    if (cpb_knob_int(p, "grad_accum") > 0)
        s->grad_accum = (int)cpb_knob_int(p, "grad_accum"), s->from_cli[CPB_PART_GRAD_ACCUM] = 1;
    if (cpb_knob_int(p, "lora_rank") > 0)
        s->lora_rank = (int)cpb_knob_int(p, "lora_rank"), s->from_cli[CPB_PART_LORA] = 1;
    /* the layout as resolved (cpb_layout_resolve): p->C the context-parallel ranks, the dp
     * knob the replicas; --cp as asked says where cp came from */
    s->tp = cpb_knob_int(p, "tp") > 1 ? (int)cpb_knob_int(p, "tp") : 1;
    s->cp = p->C / s->tp;
    s->cp_given = (int)cpb_knob_int(p, "cp");
    s->from_cli[CPB_PART_CP] = s->cp_given > 0;
    s->dp = 1;
    if (cpb_knob_int(p, "dp") > 0) s->dp = (int)cpb_knob_int(p, "dp"), s->from_cli[CPB_PART_DP] = 1;
    /* the pipeline (model_scope_pp.h): its stages and their split, as asked */
    s->pp = cpb_knob_int(p, "pp") > 1 ? (int)cpb_knob_int(p, "pp") : 1;
    s->vpp = cpb_knob_int(p, "vpp") > 1 ? (int)cpb_knob_int(p, "vpp") : 1;
    s->pp_first = cpb_knob_int(p, "pp_first_layers") > 0 ? (int)cpb_knob_int(p, "pp_first_layers") : 0;
    s->pp_last = cpb_knob_int(p, "pp_last_layers") > 0 ? (int)cpb_knob_int(p, "pp_last_layers") : 0;
    s->from_cli[CPB_PART_PP] = cpb_knob_int(p, "pp") > 0;
    if ((v = given(p, "shard_group"))) s->hsdp = strcmp(v, "replica") == 0, s->from_cli[CPB_PART_SHARD_GROUP] = 1;
    /* a 16-bit copy exists when the framework keeps one beside an fp32 master */
    s->copy16_eff = f->copy16 && s->master_bytes == 4;
    derive_bytes(s);
    return CPB_OK;
}

/* refusals of combinations that mean nothing */
static int check_parts(const cpb_problem *p, char *why, size_t why_len)
{
    cpb_setup s;
    char err[256];
    if (cpb_setup_of(p, &s, err, sizeof err) != CPB_OK) return CPB_OK; /* the estimate names the bad preset */
    if (s.ckpt_offload && s.ckpt != CPB_CKPT_FULL) {
        snprintf(why, why_len, "--ckpt-offload on offloads the checkpointed layer inputs: it needs --ckpt full "
                 "(the setup has --ckpt %s)", s.ckpt == CPB_CKPT_NONE ? "none" : "selective");
        return CPB_ERR_REFUSED;
    }
    /* a rank above an adapted matrix's smaller side adds parameters but no rank (B A has
     * rank at most min(in, out)); the smallest sides are k and v's G d, q's H d, D */
    int64_t side = p->D;
    if ((int64_t)p->G * p->d < side) side = (int64_t)p->G * p->d;
    if ((int64_t)p->H * p->d < side) side = (int64_t)p->H * p->d;
    if (s.lora_rank > 0 && side > 0 && s.lora_rank > side) {
        snprintf(why, why_len, "--lora-rank %d is above the smallest side of an adapted matrix (%lld, of D = %lld, "
                 "H x d = %d x %d and G x d = %d x %d): an adapter's rank is at most min(in, out); give at most %lld",
                 s.lora_rank, (long long)side, (long long)p->D, p->H, p->d, p->G, p->d, (long long)side);
        return CPB_ERR_REFUSED;
    }
    if (s.param_offload && s.zero < 3) {
        snprintf(why, why_len, "--param-offload on keeps the sharded parameters in host memory: it needs --zero 3 "
                 "(the setup has --zero %d)", s.zero);
        return CPB_ERR_REFUSED;
    }
    return CPB_OK;
}

static const char *dt_of(const cpb_setup *s, int bytes)
{
    return bytes == 4 ? "fp32" : s->fw->half ? s->fw->half : "bf16";
}
#define dt(bytes) dt_of(s, bytes)

void cpb_setup_part_value(const cpb_setup *s, int part, char *buf, size_t len)
{
    switch (part) {
    case CPB_PART_ZERO:
        snprintf(buf, len, "%d (%s)", s->zero,
                 s->zero == 3 ? "parameters, gradients and optimizer states sharded"
                 : s->zero == 2 ? "gradients and optimizer states sharded"
                 : s->zero == 1 ? "optimizer states sharded" : "replicated");
        break;
    case CPB_PART_OPTIMIZER: snprintf(buf, len, "%s", s->opt_cpu ? "cpu (offloaded; CPU Adam)" : "gpu"); break;
    case CPB_PART_PARAM_OFFLOAD: snprintf(buf, len, "%s", s->param_offload ? "on (host memory)" : "off"); break;
    case CPB_PART_MASTER:
        snprintf(buf, len, "%s%s", dt(s->master_bytes), s->copy16_eff ? (s->fw->half ? " (beside an fp16 compute copy)" : " (beside a bf16 compute copy)") : " (the stored parameters)");
        break;
    case CPB_PART_GRAD: snprintf(buf, len, "%s", dt(s->grad_bytes)); break;
    case CPB_PART_CKPT:
        snprintf(buf, len, "%s", s->ckpt == CPB_CKPT_FULL ? "full" : s->ckpt == CPB_CKPT_NONE ? "none" : "selective");
        break;
    case CPB_PART_CKPT_OFFLOAD: snprintf(buf, len, "%s", s->ckpt_offload ? "on" : "off"); break;
    case CPB_PART_TILED_MLP: snprintf(buf, len, "%s", s->tiled_mlp ? (s->fw->mlp_tile == CPB_MLP_TILE_FPDT ? "on (FPDT_FFN)" : "on (TiledMLP)") : "off"); break;
    case CPB_PART_FUSED_LOSS:
        snprintf(buf, len, "%s", s->fused_loss ? (s->fw->loss == CPB_LOSS_FPDT_CHUNKED ? "on (FPDT_LogitsLoss)" : "on (fused linear cross-entropy)") : "off (whole fp32 logits)");
        break;
    case CPB_PART_LINEAR: snprintf(buf, len, "%s", s->fp8 ? "fp8 (MLP GEMMs; attention and LM head bf16)" : "bf16"); break;
    case CPB_PART_MICRO_BATCH: snprintf(buf, len, "%d", s->micro_batch); break;
    case CPB_PART_GRAD_ACCUM: snprintf(buf, len, "%d", s->grad_accum); break;
    case CPB_PART_LORA:
        if (s->lora_rank > 0)
            snprintf(buf, len, "%d (LoRA: a frozen base, adapters of rank %d on q, k, v, o and the MLP matrices)",
                     s->lora_rank, s->lora_rank);
        else snprintf(buf, len, "0 (every parameter trainable)");
        break;
    /* a preset alone (cpbench list) has no GPUs: its layout is the default */
    case CPB_PART_CP:
        if (s->cp_searched) snprintf(buf, len, "searched: each divisor of the %d GPUs", s->cp);
        else if (s->cp > 0 && s->tp > 1)
            snprintf(buf, len, "%d (x --tp %d: the attention layer's %d ranks)", s->cp, s->tp, s->cp * s->tp);
        else if (s->cp > 0) snprintf(buf, len, "%d (the attention layer's ranks)", s->cp);
        else snprintf(buf, len, "every GPU");
        break;
    case CPB_PART_DP:
        if (s->cp_searched) snprintf(buf, len, s->pp > 1 ? "GPUs / (cp x pp)" : "GPUs / cp");
        else if (s->cp > 0 && s->pp > 1)
            snprintf(buf, len, "%d (%d GPUs = cp %d x tp %d x pp %d x %d)", s->dp, s->cp * s->tp * s->pp * s->dp, s->cp,
                     s->tp, s->pp, s->dp);
        else if (s->cp > 0 && s->tp > 1)
            snprintf(buf, len, "%d (%d GPUs = cp %d x tp %d x %d)", s->dp, s->cp * s->tp * s->dp, s->cp, s->tp, s->dp);
        else if (s->cp > 0) snprintf(buf, len, "%d (%d GPUs = cp %d x %d)", s->dp, s->cp * s->dp, s->cp, s->dp);
        else snprintf(buf, len, "GPUs / cp");
        break;
    case CPB_PART_SHARD_GROUP:
        snprintf(buf, len, "%s", s->hsdp ? "replica (HSDP: sharded within a replica, gradients all-reduced across)"
                 : s->pp > 1 ? "world (every GPU of a pipeline stage: the stage's data-parallel group)"
                             : "world (every GPU)");
        break;
    case CPB_PART_PP: {
        /* the stages' split and schedule (model_scope_pp.c; the estimate's "pipeline:" line
         * gives the layers per stage and the stage that bounds memory and time) */
        size_t n = (size_t)snprintf(buf, len, "%d", s->pp);
        if (s->pp <= 1) {
            snprintf(buf + n, n < len ? len - n : 0, " (none)");
            break;
        }
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0, " (stages; %s",
                              s->vpp > 1 ? "interleaved 1F1B" : "1F1B, Megatron's schedule");
        if (s->vpp > 1) n += (size_t)snprintf(buf + n, n < len ? len - n : 0, ", %d chunks per rank", s->vpp);
        if (s->pp_first > 0) n += (size_t)snprintf(buf + n, n < len ? len - n : 0, ", first stage %d layers", s->pp_first);
        if (s->pp_last > 0) n += (size_t)snprintf(buf + n, n < len ? len - n : 0, ", last stage %d layers", s->pp_last);
        snprintf(buf + n, n < len ? len - n : 0, ")");
        break;
    }
    default: snprintf(buf, len, "?");
    }
}

void cpb_setup_part_origin(const cpb_setup *s, int part, char *buf, size_t len)
{
    /* the layout: --cp as asked; the replicas are derived from it, or were given (--dp) and
     * cp derived from them (cpb_layout_resolve writes the dp knob only when either was given) */
    if (part == CPB_PART_CP) {
        if (s->cp_searched) snprintf(buf, len, "plan's search");
        else if (s->cp_given > 0) snprintf(buf, len, "command line");
        else if (s->dp > 1) snprintf(buf, len, "derived: GPUs / --dp");
        else snprintf(buf, len, "default: every GPU");
        return;
    }
    if (part == CPB_PART_DP) {
        if (s->cp_searched || s->cp_given > 0)
            snprintf(buf, len, "%s", s->pp > 1 ? "derived: GPUs / (--cp x tp x --pp)" : "derived: GPUs / --cp");
        else if (s->dp > 1) snprintf(buf, len, "command line");
        else snprintf(buf, len, "default");
        return;
    }
    if (part >= 0 && part < CPB_PART_COUNT && s->from_cli[part]) snprintf(buf, len, "command line");
    else if (part == CPB_PART_PP) snprintf(buf, len, "default: none");
    else if (part == CPB_PART_LINEAR || part == CPB_PART_MICRO_BATCH || part == CPB_PART_GRAD_ACCUM ||
             part == CPB_PART_SHARD_GROUP || part == CPB_PART_LORA)
        snprintf(buf, len, "default");
    else snprintf(buf, len, "preset %s", s->fw->name);
}

void cpb_setup_bytes_text(const cpb_setup *s, char *buf, size_t len)
{
    double total = s->dev_rep + s->dev_sh + s->host_rep + s->host_sh;
    size_t n = 0;
    if (s->lora_rank > 0)
        n += (size_t)snprintf(buf, len, "frozen base %g = %s weights only (no gradients, no optimizer states), %s%s; "
                              "LoRA adapters (trainable) ", s->base_bytes, dt(2), s->zero >= 3 ? "sharded" : "replicated",
                              s->base_host_sh + s->base_host_rep > 0 ? " in host memory" : " on the GPU");
    n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%g =", total);
    if (s->p16 > 0) n += (size_t)snprintf(buf + n, n < len ? len - n : 0, " %s params %g +", dt(2), s->p16);
    n += (size_t)snprintf(buf + n, n < len ? len - n : 0, " %s master %g + %s grads %g + Adam m, v %g", dt(s->master_bytes),
                          s->master, s->opt_cpu ? "fp32" : dt(s->grad_bytes), s->grad, s->moments);
    const char *per_tp = s->tp > 1 ? " / tp" : "";
    n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "; on the GPU %g replicated%s + %g / GPUs", s->dev_rep, per_tp,
                          s->dev_sh);
    if (s->host_rep + s->host_sh > 0)
        snprintf(buf + n, n < len ? len - n : 0, "; in host memory %g replicated%s + %g / GPUs", s->host_rep, per_tp,
                 s->host_sh);
}

void cpb_setup_print_assumptions(FILE *f, const cpb_setup *s, const char *prefix)
{
    fprintf(f, "%sassumptions: training setup --framework %s (%s); each part: value [where it came from]\n", prefix,
            s->fw->name, s->fw->parts_source ? s->fw->parts_source : "");
    for (int i = 0; i < CPB_PART_COUNT; i++) {
        char v[128], o[64];
        cpb_setup_part_value(s, i, v, sizeof v);
        cpb_setup_part_origin(s, i, o, sizeof o);
        fprintf(f, "%s  %-19s %s [%s]\n", prefix, part_names[i], v, o);
    }
    char b[512];
    cpb_setup_bytes_text(s, b, sizeof b);
    fprintf(f, "%s  %-19s %s [derived from the parts above]\n", prefix, "bytes per parameter", b);
}

void cpb_setup_fixes(const cpb_setup *s, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
#define FIX(cond, text)                                                                                             \
    if (cond) n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", n ? ", " : "", text)
    FIX(!s->opt_cpu, "the optimizer offloaded to the CPU (--optimizer cpu)");
    FIX(s->zero < 3, "full sharding of the model states (--zero 3)");
    FIX(s->ckpt != CPB_CKPT_FULL, "full activation checkpointing (--ckpt full)");
    FIX(!s->ckpt_offload, "checkpoint offload (--ckpt full --ckpt-offload on)");
    FIX(!s->tiled_mlp, "a tiled MLP (--tiled-mlp on)");
    FIX(!s->fused_loss, "a fused loss (--fused-loss on)");
    FIX(s->micro_batch > 1, "a micro-batch of 1 (--micro-batch 1)");
#undef FIX
}

const char *cpb_setup_part_knob(int part)
{
    return part >= 0 && part < CPB_PART_COUNT ? knob_of_part[part] : NULL;
}

void cpb_setup_part_short(const cpb_setup *s, int part, char *buf, size_t len)
{
    cpb_setup_part_value(s, part, buf, len);
    char *paren = strstr(buf, " (");
    if (paren) *paren = 0;
}

int cpb_setup_of_preset(const cpb_framework *fw, cpb_setup *out)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cpb_knobs_set_str(&p.knobs, "framework", fw->name);
    char err[256];
    return cpb_setup_of(&p, out, err, sizeof err);
}

void cpb_framework_list_print(FILE *f)
{
    fprintf(f, "Training setups (--framework PRESET, sim --scope model; any part given on the command line overrides "
               "the preset's):\n");
    for (int i = 0; i < cpb_framework_count(); i++) {
        const cpb_framework *fw = cpb_framework_at(i);
        cpb_problem p;
        memset(&p, 0, sizeof p);
        cpb_knobs_set_str(&p.knobs, "framework", fw->name);
        cpb_setup s;
        char err[256];
        if (cpb_setup_of(&p, &s, err, sizeof err) != CPB_OK) continue;
        fprintf(f, "  %-13s %s\n", fw->name, fw->summary);
        fprintf(f, "  %-13s parts:", "");
        for (int k = 0; k < CPB_PART_COUNT; k++) {
            char v[128];
            cpb_setup_part_short(&s, k, v, sizeof v);
            char opt[64];
            const cpb_knob *kn = cpb_knob_of(NULL, knob_of_part[k]);
            if (kn) cpb_knob_option(kn, opt, sizeof opt);
            else snprintf(opt, sizeof opt, "%s", knob_of_part[k]);
            fprintf(f, " %s %s", opt, v);
        }
        char b[512];
        cpb_setup_bytes_text(&s, b, sizeof b);
        fprintf(f, "\n  %-13s bytes per parameter %s\n", "", b);
        fprintf(f, "  %-13s source: %s\n", "", fw->source);
    }
}

int cpb_setup_print_given(FILE *f, const cpb_knobs *given, int gpus, int cp_search, const char *prefix)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    if (given) p.knobs = *given;
    /* the layout of the GPUs (a bad one is the points' error to report) */
    p.C = gpus;
    char err[256];
    if (gpus > 0 && cpb_layout_resolve(&p.knobs, gpus, &p.C, err, sizeof err) != CPB_OK) p.C = gpus;
    cpb_setup s;
    if (cpb_setup_of(&p, &s, err, sizeof err) != CPB_OK) return CPB_ERR_INVALID;
    s.cp_searched = cp_search && s.cp_given <= 0 && !(cpb_knob_int(&p, "dp") > 0);
    cpb_setup_print_assumptions(f, &s, prefix);
    return CPB_OK;
}

int cpb_setup_fixes_given(const cpb_knobs *given, char *buf, size_t len)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    if (given) p.knobs = *given;
    cpb_setup s;
    char err[256];
    buf[0] = 0;
    if (cpb_setup_of(&p, &s, err, sizeof err) != CPB_OK) return CPB_ERR_INVALID;
    cpb_setup_fixes(&s, buf, len);
    return CPB_OK;
}
