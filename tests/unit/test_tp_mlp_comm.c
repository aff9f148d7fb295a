/* test_tp_mlp_comm.c — the MLP's sequence-parallel collectives under --tp
 * (driver/model_scope_tp_mlp.h): their count, one hand-worked time, and their place in a
 * whole-model estimate. */
#include <criterion/criterion.h>
#include <string.h>

#include "cpb_method.h"
#include "cpb_presets.h"
#include "gpu_profiles.h"
#include "knobs.h"
#include "model_scope.h"
#include "model_scope_tp_mlp.h"

Test(tp_mlp_comm, five_collectives_seven_with_a_recompute)
{
    cr_expect_eq(cpb_tp_mlp_collectives(0), 5, "forward AG + RS, backward AG dy + AG x + RS dx");
    cr_expect_eq(cpb_tp_mlp_collectives(1), 7, "a full checkpoint's recompute repeats the forward's two");
}

/* tp 4 on the h100-sxm profile (NVLink: 370 GB/s bus, 10 us), 8192 tokens per GPU, D 4096:
 * the gathered tensor is 4 x 8192 x 4096 x 2 B = 268,435,456 B, 3/4 of it on the bus,
 * 201,326,592 B / 370e9 = 544.126 us, + 10 us = 554.126 us, x 5 = 2.770630 ms */
Test(tp_mlp_comm, hand_worked_h100)
{
    cpb_gpu_profile prof;
    char err[256] = "";
    cr_assert_eq(cpb_gpu_profile_get("h100-sxm", &prof, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(prof.hw.coll_busbw, 370e9, "the test's arithmetic assumes the profile's 370 GB/s");
    cr_assert_eq(prof.hw.coll_lat, 10e-6);
    double want = 5 * (201326592.0 / 370e9 + 10e-6);
    cr_expect_float_eq(cpb_tp_mlp_comm_s(&prof.hw, 4, 8192, 4096, 0), want, 1e-12);
    cr_expect_float_eq(cpb_tp_mlp_comm_s(&prof.hw, 4, 8192, 4096, 1), want / 5 * 7, 1e-12);
    cr_expect_eq(cpb_tp_mlp_comm_s(&prof.hw, 1, 8192, 4096, 0), 0.0, "no TP, no collectives");
    /* a TP group wider than a node crosses the network */
    double inter = 5 * (15.0 / 16 * 16 * 8192 * 4096 * 2 / prof.hw.inter_busbw + prof.hw.inter_lat);
    cr_expect_float_eq(cpb_tp_mlp_comm_s(&prof.hw, 16, 8192, 4096, 0), inter, 1e-12);
}

/* the estimate adds them to each layer under --tp, not without it */
Test(tp_mlp_comm, in_the_model_estimate)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("llama2-7b", &p), CPB_OK);
    p.S = 65536;
    p.C = 8;
    p.dtype = CPB_BF16;
    const cpb_method *m = cpb_method_find("ring");
    cr_assert(m);
    char err[1024] = "";
    cr_assert_eq(cpb_knobs_apply(m, NULL, &p, err, sizeof err), CPB_OK, "%s", err);
    cpb_model_estimate *e0 = NULL, *e4 = NULL;
    cr_assert_eq(cpb_model_estimate_new(&p, m, NULL, &e0, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(e0->tp_mlp_comm_s, 0.0);
    cpb_knobs_set_int(&p.knobs, "tp", 4); /* 2 CP ranks x tp 4 */
    cr_assert_eq(cpb_model_estimate_new(&p, m, NULL, &e4, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(e4->status, CPB_OK, "%s", e4->reason);
    cpb_gpu_profile prof;
    cr_assert_eq(cpb_gpu_profile_get("h100-sxm", &prof, err, sizeof err), CPB_OK, "%s", err);
    /* the default framework (torchtitan) checkpoints every layer: the recompute's two more */
    cr_assert_eq(e4->setup.ckpt, CPB_CKPT_FULL);
    cr_expect_float_eq(e4->tp_mlp_comm_s, cpb_tp_mlp_comm_s(&prof.hw, 4, 65536.0 / 8, 4096, 1), 1e-15, "%g",
                       e4->tp_mlp_comm_s);
    cpb_model_estimate_free(e0);
    cpb_model_estimate_free(e4);
}

/* Megatron's distributed optimizer under --tp: each GPU reduces its 1/tp slice of the
 * gradients (fp32) and gathers its slice of the bf16 parameters over the N/tp GPUs of its
 * data-parallel group, once per step (megatron preset: ZeRO-1, grad_sync_per_step).
 * llama2-7b, ring over 8 GPUs (2 CP x tp 4, one replica): n_dp = 2, inside a node:
 * (2 + 4) x params / 4 x 1/2 / 370 GB/s + 2 x 10 us */
Test(tp_mlp_comm, step_traffic_is_the_tp_slice)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(cpb_preset_find("llama2-7b", &p), CPB_OK);
    p.S = 65536;
    p.C = 8;
    p.dtype = CPB_BF16;
    const cpb_method *m = cpb_method_find("ring");
    cr_assert(m);
    char err[1024] = "";
    cr_assert_eq(cpb_knobs_apply(m, NULL, &p, err, sizeof err), CPB_OK, "%s", err);
    cpb_knobs_set_str(&p.knobs, "framework", "megatron");
    cpb_knobs_set_int(&p.knobs, "tp", 4);
    cpb_model_estimate *e = NULL;
    cr_assert_eq(cpb_model_estimate_new(&p, m, NULL, &e, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(e->status, CPB_OK, "%s", e->reason);
    const double params = (double)e->params;
    const double want = (2.0 + 4.0) * params / 4 * 0.5 / 370e9 + 2 * 10e-6;
    cr_expect_float_eq(e->step_comm_s, want, 1e-9 * want, "%g against %g", e->step_comm_s, want);
    cpb_model_estimate_free(e);
}
