/* model_spec.c — what the whole-model estimate needs beyond a preset's attention shape:
 * layers, MLP size, vocabulary, tied embeddings, and the layer's make-up (model_scope.h).
 * Values from each model's published configuration (Hugging Face config.json of the
 * release).  Then the parameter count and the model FLOPs under the two conventions of
 * results/README.md, from those values alone. */
#include <stdio.h>
#include <string.h>

#include "knobs.h"
#include "model_config.h"
#include "model_scope.h"

/* name, layers, MLP size, vocabulary, tied, source; the rest of a Llama-style layer is zero */
#define SPEC(n, l, f, v, t, src) .name = n, .layers = l, .ffn = f, .vocab = v, .tied = t, .source = src
static const cpb_model_spec specs[] = {
    {SPEC("llama3-8b", 32, 14336, 128256, 0, "meta-llama/Meta-Llama-3-8B config.json")},
    /* Qwen3's attention normalises q and k per head (Qwen3Attention.q_norm, k_norm:
     * RMSNorm(head_dim)): 2 x 128 weights per layer */
    {SPEC("qwen3-32b", 64, 25600, 151936, 0, "Qwen/Qwen3-32B config.json"), .qk_norm = 1, .model_type = "qwen3"},
    {SPEC("llama3-70b", 80, 28672, 128256, 0, "meta-llama/Meta-Llama-3-70B config.json")},
    {SPEC("llama2-7b", 32, 11008, 32000, 0, "meta-llama/Llama-2-7b-hf config.json")},
    /* a made-up small model so tests can exercise the estimate quickly */
    {SPEC("tiny", 4, 256, 1024, 0, "test model (not a real network)")},
};

const cpb_model_spec *cpb_model_spec_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof specs / sizeof specs[0]; i++)
        if (strcmp(specs[i].name, name) == 0) return &specs[i];
    return cpb_model_config_spec(name);
}

int cpb_model_mlp_matrices(const cpb_model_spec *sp)
{
    return sp->two_matrix ? 2 : 3;
}

void cpb_model_params(const cpb_problem *p, const cpb_model_spec *sp, cpb_model_param_count *c)
{
    const double D = (double)p->D, H = p->H, G = p->G, d = p->d, F = (double)sp->ffn, V = (double)sp->vocab;
    const double m = cpb_model_mlp_matrices(sp);
    const double per_norm = sp->norm_bias ? 2 * D : D; /* LayerNorm: weight and bias */
    /* q [D, H d], k and v [D, G d], o [H d, D]; biases of q, k, v (H d + 2 G d) and o (D) */
    c->attn = D * (H + 2 * G) * d + H * d * D + (sp->qkv_bias ? (H + 2 * G) * d : 0) + (sp->o_bias ? D : 0);
    /* gated: gate and up [D, F], down [F, D]; two-matrix: up [D, F], down [F, D]; biases
     * of the F-wide outputs and of down's D */
    c->mlp = m * D * F + (sp->mlp_bias ? (m - 1) * F + D : 0);
    c->norm = (sp->norms > 0 ? sp->norms : 2) * per_norm + (sp->qk_norm ? 2 * d * (sp->norm_bias ? 2 : 1) : 0);
    c->layer = c->attn + c->mlp + c->norm;
    c->embed = V * D;
    c->head = (sp->tied ? 0 : V * D) + (sp->head_bias ? V : 0);
    c->final_norm = per_norm;
    c->total = sp->layers * c->layer + c->embed + c->head + c->final_norm;
    /* LoRA adapters (Hu et al., arXiv 2106.09685, section 4.1: W0 + B A with B [out, r],
     * A [r, in]: r (in + out) parameters per adapted matrix) on PEFT's "all-linear" target
     * modules (peft LoraConfig.target_modules: every linear layer but the output layer; for
     * Llama q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, the set QLoRA,
     * arXiv 2305.14314, adapts): q [D -> H d], k and v [D -> G d], o [H d -> D]; each MLP
     * matrix [D -> F] or [F -> D].  Biases, norms, embeddings and the LM head stay frozen. */
    const double r = (double)cpb_knob_int(p, "lora_rank");
    c->lora_rank = r > 0 ? (int)r : 0;
    c->lora_attn = r > 0 ? r * ((D + H * d) + 2 * (D + G * d) + (H * d + D)) : 0;
    c->lora_mlp = r > 0 ? r * m * (D + F) : 0;
    c->lora_layer = c->lora_attn + c->lora_mlp;
    c->lora_total = sp->layers * c->lora_layer;
}

void cpb_model_flops(const cpb_problem *p, const cpb_model_spec *sp, double *causal, double *megatron)
{
    const double S = (double)p->S, D = (double)p->D, H = p->H, G = p->G, d = p->d, F = (double)sp->ffn,
                 V = (double)sp->vocab, L = sp->layers, m = cpb_model_mlp_matrices(sp);
    /* causal: per layer the attention layer's FLOPs (DESIGN section 6: the causal core's
     * lower triangle, backward 2.5x forward; the projections, backward 2x), the MLP's m
     * GEMMs of 2 S D F forward and twice that backward, and the LM head's 2 S D V forward
     * and twice backward */
    double af, ab;
    cpb_layer_model_flops(p, &af, &ab);
    *causal = L * (af + ab + 3 * m * 2 * S * D * F) + 3 * 2 * S * D * V;
    cpb_model_param_count c;
    cpb_model_params(p, sp, &c);
    if (c.lora_rank > 0) {
        /* LoRA: a frozen linear layer's backward computes dX only, so each frozen matrix
         * (projections, MLP, LM head) loses the weight-gradient GEMM, one forward's worth;
         * each adapter [in -> r -> out] computes 2 S r (in + out) forward and twice that
         * backward (dX and dA, dB) */
        const double proj = 2 * S * D * (H + 2 * G) * d + 2 * S * H * d * D;
        *causal -= L * (proj + m * 2 * S * D * F) + 2 * S * D * V;
        *causal += 3 * 2 * S * c.lora_total;
    }
    /* megatron: 6 x (the layers' matrices + the logit layer) x tokens, + per layer the
     * causal attention core 3 passes x 2 x (Q K^T and P V) x S/2 keys x H d per token */
    const double weights = L * (D * (H + 2 * G) * d + H * d * D + m * D * F) + D * V;
    *megatron = 6 * weights * S + L * 6 * S * S * H * d;
}

static const char *act_of(const cpb_model_spec *sp)
{
    return sp->act && sp->act[0] ? sp->act : "silu";
}

/* "q,k,v,o,mlp,head": the linear layers with biases ("" none) */
static const char *bias_list(const cpb_model_spec *sp, char *buf, size_t len)
{
    const struct { int on; const char *name; } b[] = {
        {sp->qkv_bias, "q,k,v"}, {sp->o_bias, "o"}, {sp->mlp_bias, "mlp"}, {sp->head_bias, "head"}};
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        if (b[i].on && n < len) n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "", b[i].name);
    return buf;
}

void cpb_model_spec_describe(const cpb_model_spec *sp, char *buf, size_t len)
{
    char bias[64];
    bias_list(sp, bias, sizeof bias);
    snprintf(buf, len, "%s MLP (%s; %s), embeddings %s, biases: %s, %s x%d per layer%s%s%s",
             sp->two_matrix ? "two-matrix" : "gated", sp->two_matrix ? "up, down" : "gate, up, down", act_of(sp),
             sp->tied ? "tied to the LM head" : "untied", bias[0] ? bias : "none",
             sp->norm_bias ? "LayerNorm" : "RMSNorm", sp->norms > 0 ? sp->norms : 2, sp->qk_norm ? " + q/k norms" : "",
             sp->model_type && sp->model_type[0] ? ", model_type " : "", sp->model_type ? sp->model_type : "");
}

void cpb_model_spec_row(const cpb_problem *p, cpb_row *r)
{
    const cpb_model_spec *sp = cpb_model_spec_find(p->model);
    if (!sp) return;
    cpb_model_param_count c;
    cpb_model_params(p, sp, &c);
    r->model_layers = sp->layers;
    r->model_ffn = sp->ffn;
    r->model_vocab = sp->vocab;
    r->model_params = c.total;
    r->model_tied = sp->tied;
    r->model_mlp_matrices = cpb_model_mlp_matrices(sp);
    CPB_ROW_SET(r, model_act, act_of(sp));
    char bias[32];
    CPB_ROW_SET(r, model_bias, bias_list(sp, bias, sizeof bias));
    char norm[32];
    snprintf(norm, sizeof norm, "%s x%d%s", sp->norm_bias ? "layernorm" : "rmsnorm", sp->norms > 0 ? sp->norms : 2,
             sp->qk_norm ? " +qk" : "");
    CPB_ROW_SET(r, model_norm, norm);
}
