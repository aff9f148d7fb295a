/* test_sim_model.c — the whole-model estimate (--scope model): its memory parts add up,
 * the attention part is the traced layer's, capacity and host memory are checked, the
 * largest context is found, and presets without a model description are refused. */
#include <criterion/criterion.h>
#include <string.h>

#include "cpb_method.h"
#include "cpb_presets.h"
#include "model_scope.h"

static cpb_problem llama(int64_t S)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("llama3-8b", &p), CPB_OK);
    p.C = 8;
    p.S = S;
    p.dtype = CPB_BF16;
    return p;
}

static const cpb_method *first_method(void)
{
    /* ulysses when present: it accepts llama3-8b on 8 GPUs */
    const cpb_method *m = cpb_method_find("ulysses");
    return m ? m : cpb_method_at(0);
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
        cr_expect_eq(x->total, x->states + x->gathered + x->attn_fixed + x->attn_act + x->ckpt + x->residual + x->work);
        /* 14 bytes per parameter over 8 GPUs */
        cr_expect(x->states > (int64_t)(14 * 8.0e9 / 8) && x->states < (int64_t)(14 * 8.1e9 / 8));
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
