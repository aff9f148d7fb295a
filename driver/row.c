/* row.c — the row of a trial (row.h): naming the point, the status, the throughput. */
#include "row.h"

#include <stdio.h>
#include <string.h>

#include "knobs.h"
#include "model_scope.h"

void cpb_row_set_str(char *dst, size_t len, const char *s)
{
    if (len == 0) return;
    snprintf(dst, len, "%s", s ? s : "");
}

void cpb_row_init(cpb_row *r)
{
    memset(r, 0, sizeof *r);
    CPB_ROW_SET(r, status, "ok");
    CPB_ROW_SET(r, scope, "layer");
}

void cpb_row_point(cpb_row *r, const cpb_method *m, const cpb_problem *p, const cpb_backend *be, const char *gpu,
                   const char *scope)
{
    cpb_row_init(r);
    CPB_ROW_SET(r, method, m ? m->name : "?");
    CPB_ROW_SET(r, model, p->model[0] ? p->model : "custom");
    CPB_ROW_SET(r, backend, be->name);
    CPB_ROW_SET(r, gpu, gpu);
    CPB_ROW_SET(r, scope, scope && *scope ? scope : "layer");
    CPB_ROW_SET(r, dtype, cpb_dtype_name(p->dtype));
    r->world_size = p->C;
    r->seq_len = p->S;
    r->hidden = p->D;
    r->heads = p->H;
    r->kv_heads = p->G;
    r->head_dim = p->d;
    cpb_model_spec_row(p, r); /* the model's columns (zeros for a shape without a model) */
    /* the method's knobs as asked (0 = the method's default), so that a sweep finds the
     * point again in the file whatever default the method resolves it to, and the driver's
     * knobs that belong to this kind of point */
    for (int i = 0; i < cpb_knob_count(); i++) {
        const cpb_knob *k = cpb_knob_of(m, cpb_knob_at(i)->name);
        const cpb_knob_value *v = k && cpb_knob_belongs(k, be, r->scope) ? cpb_knobs_find(&p->knobs, k->name) : NULL;
        if (!v) continue;
        if (k->type == CPB_KNOB_CHOICE) CPB_ROW_SET(r, knobs.s[i], v->s);
        else r->knobs.i[i] = v->i;
    }
}

int64_t cpb_row_knob_int(const cpb_row *r, const char *name)
{
    int i = cpb_knob_index(name);
    return i < 0 ? 0 : r->knobs.i[i];
}

const char *cpb_row_knob_str(const cpb_row *r, const char *name)
{
    int i = cpb_knob_index(name);
    return i < 0 ? "" : r->knobs.s[i];
}

const char *cpb_row_status_name(int code)
{
    switch (code) {
    case CPB_OK: return "ok";
    case CPB_ERR_OOM: return "oom";
    case CPB_ERR_REFUSED: return "refused";
    default: return "error";
    }
}

int cpb_row_code_of_status(const char *status)
{
    /* "skipped": what files before schema 4 called a refusal */
    static const struct { const char *name; int code; } known[] = {
        {"ok", CPB_OK}, {"oom", CPB_ERR_OOM}, {"refused", CPB_ERR_REFUSED}, {"skipped", CPB_ERR_REFUSED}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(status, known[i].name) == 0) return known[i].code;
    return CPB_ERR_BACKEND;
}

void cpb_row_set_status(cpb_row *r, int code, const char *reason)
{
    r->code = code;
    CPB_ROW_SET(r, status, cpb_row_status_name(code));
    CPB_ROW_SET(r, reason, code == CPB_OK ? "" : reason);
}

void cpb_layer_model_flops(const cpb_problem *p, double *fwd, double *bwd)
{
    double S = (double)p->S, D = (double)p->D, H = p->H, G = p->G, d = p->d;
    double attn_f = 2.0 * S * S * H * d; /* 4*S*S*H*d over the lower triangle */
    double proj_f = 2.0 * S * D * (H + 2.0 * G) * d + 2.0 * S * H * d * D;
    *fwd = attn_f + proj_f;
    *bwd = 2.5 * attn_f + 2.0 * proj_f;
}

double cpb_layer_megatron_flops(const cpb_problem *p)
{
    double S = (double)p->S, D = (double)p->D, H = p->H, G = p->G, d = p->d;
    /* Megatron-LM's standard_self_attn_term per token: 3 passes x 2 x (the q, k, v and o
     * projections' parameters + S/2 keys x H d for each of Q K^T and P V) */
    return 6.0 * S * (D * (H + 2.0 * G) * d + H * d * D) + 6.0 * S * S * H * d;
}

void cpb_row_rates(cpb_row *r, double flops, double flops_megatron, double flops_nemo)
{
    r->tokens_per_s = r->tokens_per_s_per_gpu = r->tflops_per_gpu = r->tflops_per_gpu_megatron = 0;
    r->tflops_per_gpu_nemo = r->mfu_causal = r->mfu_megatron = r->mfu_nemo = 0;
    if (!(r->step_s > 0) || r->world_size <= 0) return;
    r->tokens_per_s = (double)r->seq_len / r->step_s;
    r->tokens_per_s_per_gpu = r->tokens_per_s / r->world_size;
    /* per GPU: the step's model FLOPs over the GPUs and the step time, as Megatron-LM's
     * training_log divides by elapsed time x world size */
    r->tflops_per_gpu = flops / r->world_size / r->step_s / 1e12;
    r->tflops_per_gpu_megatron = flops_megatron / r->world_size / r->step_s / 1e12;
    r->tflops_per_gpu_nemo = flops_nemo / r->world_size / r->step_s / 1e12;
    if (r->peak_tflops > 0) {
        r->mfu_causal = r->tflops_per_gpu / r->peak_tflops;
        r->mfu_megatron = r->tflops_per_gpu_megatron / r->peak_tflops;
        r->mfu_nemo = r->tflops_per_gpu_nemo / r->peak_tflops;
    }
}

static int same_choices(const cpb_row *a, const cpb_row *b)
{
    for (int i = 0; i < CPB_MAX_KNOBS; i++)
        if (strcmp(a->knobs.s[i], b->knobs.s[i]) != 0) return 0;
    return 1;
}

int cpb_row_same_point(const cpb_row *a, const cpb_row *b)
{
#define SAME_S(f) (strcmp(a->f, b->f) == 0)
#define SAME(f) (a->f == b->f)
    return SAME_S(method) && SAME_S(model) && SAME_S(backend) && SAME_S(scope) && SAME_S(dtype) &&
           (!a->gpu[0] || !b->gpu[0] || SAME_S(gpu)) && SAME(world_size) && SAME(seq_len) &&
           SAME(hidden) && SAME(heads) && SAME(kv_heads) && SAME(head_dim) && SAME(seed) && SAME(warmup) &&
           SAME(iters) && SAME_S(options) &&
           memcmp(a->knobs.i, b->knobs.i, sizeof a->knobs.i) == 0 && same_choices(a, b);
#undef SAME_S
#undef SAME
}
