/* plan_layout.c — the layout part of `cpbench plan`'s search (plan.h): which
 * context-parallel degrees a candidate is tried at.  The cp knob's candidates are the
 * divisors of the GPUs (model_scope_layout.c); a layout given on the command line (--cp, or
 * --dp alone: cp = GPUs / R) stays fixed.  Layouts that cannot be the answer are left out
 * rather than simulated:
 * A given --pp (plan never searches it) makes each stage GPUs / pp GPUs: the layouts are
 * those of one stage.
 *   - with --max-context, every GPU in the context-parallel group: the activations per GPU
 *     shrink as cp grows while the model states per GPU do not grow (they are sharded over
 *     the world, or within a replica, which grows with cp too), so the longest context is
 *     at cp = GPUs;
 *   - at a given length, a cp whose layer inputs alone would not fit the device: the
 *     attention trial holds x, dy and dx, [S / cp, D] each, at its backward (trial.c), a
 *     lower bound of any method's memory at that moment. */
#include <stdio.h>
#include <string.h>

#include "gpu_profiles.h"
#include "knobs.h"
#include "model_scope.h"
#include "plan.h"

int cpb_plan_layout_given(cpb_knobs *given, int gpus, char *err, size_t err_len)
{
    cpb_knobs g = *given;
    int cp;
    CPB_TRY(cpb_layout_resolve(&g, gpus, &cp, err, err_len));
    const cpb_knob_value *vc = cpb_knobs_find(given, "cp"), *vd = cpb_knobs_find(given, "dp");
    /* --dp alone fixes cp = GPUs / R: then cp is given, not searched */
    if ((!vc || vc->i <= 0) && vd && vd->i > 0) return cpb_knobs_set_int(given, "cp", cp);
    return CPB_OK;
}

int cpb_plan_layout(const cpb_plan_opts *o, const cpb_knobs *given, cpb_knobs *combo, cpb_problem *p, char *why,
                    size_t why_len)
{
    const int gpus = o->base.C;
    const cpb_knob_value *g = cpb_knobs_find(given, "cp");
    const int searched = !g || g->i <= 0;
    if (cpb_layout_resolve(combo, gpus, &p->C, why, why_len) != CPB_OK) return CPB_PLAN_LAYOUT_REFUSED;
    /* every GPU of a pipeline stage (--pp, given, never searched: model_scope_pp.h) */
    const cpb_knob_value *vp = cpb_knobs_find(combo, "pp");
    const int stage_gpus = vp && vp->i > 1 ? gpus / (int)vp->i : gpus;
    if (!searched || p->C == stage_gpus) return CPB_PLAN_LAYOUT_USE;
    if (o->max_context) return CPB_PLAN_LAYOUT_SKIP;
    cpb_gpu_profile prof;
    char err[256];
    if (cpb_sim_profile(&o->sim, p, &prof, err, sizeof err) != CPB_OK) return CPB_PLAN_LAYOUT_USE; /* the point says */
    int64_t cap = o->sim.mem_cap > 0 ? o->sim.mem_cap : prof.mem_bytes;
    double inputs = 3.0 * (double)(p->S / p->C) * (double)p->D * (double)cpb_dtype_size(p->dtype);
    return inputs > (double)cap ? CPB_PLAN_LAYOUT_SKIP : CPB_PLAN_LAYOUT_USE;
}
