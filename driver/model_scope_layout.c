/* model_scope_layout.c — the layout of the whole-model estimate (model_scope.h): the GPUs
 * as a context-parallel group of cp ranks (the attention layer's world, p->C, which under
 * --tp T is T x cp ranks) times data-parallel replicas.  One source of truth: --gpus (every GPU) and the CP degree; the
 * replicas are GPUs / cp.  --dp stays accepted: alone it chooses cp = GPUs / R, with --cp it
 * must agree.  The point carries cp as asked (its knob) and the replicas resolved (the dp
 * knob), so p->C x dp is the world and the assumptions block can say where each came
 * from.  With --pp P (model_scope_pp.h) the pipeline is outermost: each of the P stages is
 * such a layout of GPUs / P GPUs. */
#include <stdio.h>

#include "knobs.h"
#include "model_scope.h"

/* "1, 2, 4, 8": the divisors of n */
static void divisors_text(int n, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = 0;
    for (int d = 1; d <= n && k < len; d++)
        if (n % d == 0) k += (size_t)snprintf(buf + k, len - k, "%s%d", k ? ", " : "", d);
}

/* the layout of one pipeline stage's GPUs (all of them without --pp) */
static int resolve_stage(cpb_knobs *given, int gpus, int *cp, char *err, size_t err_len);

int cpb_layout_resolve(cpb_knobs *given, int gpus, int *cp, char *err, size_t err_len)
{
    /* --pp N: the pipeline is the outermost dimension (Megatron's rank order tp-cp-ep-dp-pp,
     * megatron/core/parallel_state.py), so each of the N stages is GPUs / N GPUs laid out as
     * without PP: tp x cp x dp (model_scope_pp.h) */
    const cpb_knob_value *vp = given ? cpb_knobs_find(given, "pp") : NULL;
    const int64_t pp = vp && vp->i > 1 ? vp->i : 1;
    if (pp > 1 && (pp > gpus || gpus % pp)) {
        char divs[256];
        divisors_text(gpus, divs, sizeof divs);
        snprintf(err, err_len, "--pp %lld does not divide the %d GPUs (--gpus): the pipeline stages are one of %s "
                 "(--gpus = tp x cp x pp x dp)", (long long)pp, gpus, divs);
        return CPB_ERR_INVALID;
    }
    int rc = resolve_stage(given, (int)(gpus / pp), cp, err, err_len);
    if (rc != CPB_OK && pp > 1) {
        /* say that the GPUs in the message are one stage's */
        char m[512];
        snprintf(m, sizeof m, "%s (with --pp %lld: the %d GPUs of one pipeline stage, --gpus %d / --pp %lld)", err,
                 (long long)pp, (int)(gpus / pp), gpus, (long long)pp);
        snprintf(err, err_len, "%s", m);
    }
    return rc;
}

static int resolve_stage(cpb_knobs *given, int gpus, int *cp, char *err, size_t err_len)
{
    const cpb_knob_value *vc = given ? cpb_knobs_find(given, "cp") : NULL;
    const cpb_knob_value *vd = given ? cpb_knobs_find(given, "dp") : NULL;
    const cpb_knob_value *vt = given ? cpb_knobs_find(given, "tp") : NULL;
    int64_t c = vc ? vc->i : 0, r = vd ? vd->i : 0;
    /* under --tp T a replica is T x cp GPUs (driver/tp_compose.h: the layer's world is
     * tp x cp, TP inner), so the layer's ranks are cp x T: --cp counts the context-parallel
     * degree alone, as Megatron's --context-parallel-size does */
    const int64_t t = vt && vt->i > 1 ? vt->i : 1;
    char divs[256];
    *cp = gpus;
    if (c <= 0 && r <= 0) return CPB_OK; /* every GPU in the group, one replica */
    divisors_text(gpus, divs, sizeof divs);
    if (c > 0 && (c * t > gpus || gpus % (c * t))) {
        if (t > 1)
            snprintf(err, err_len, "--cp %lld x --tp %lld does not divide the %d GPUs (--gpus): a replica is tp x cp "
                     "GPUs, one of %s", (long long)c, (long long)t, gpus, divs);
        else
            snprintf(err, err_len, "--cp %lld does not divide the %d GPUs (--gpus): the context-parallel degree is one of "
                     "%s (the replicas are GPUs / cp)", (long long)c, gpus, divs);
        return CPB_ERR_INVALID;
    }
    if (r > 0 && (r > gpus || gpus % r)) {
        snprintf(err, err_len, "--dp %lld does not divide the %d GPUs (--gpus): the replicas are one of %s "
                 "(or give the context-parallel degree, --cp)", (long long)r, gpus, divs);
        return CPB_ERR_INVALID;
    }
    if (c > 0 && r > 0 && c * t * r != gpus) {
        if (t > 1)
            snprintf(err, err_len, "--cp %lld, --tp %lld and --dp %lld disagree with --gpus %d (cp x tp x dp must be "
                     "the GPUs): give --cp alone (the replicas are derived: %d / %lld = %lld)", (long long)c,
                     (long long)t, (long long)r, gpus, gpus, (long long)(c * t), (long long)(gpus / (c * t)));
        else
            snprintf(err, err_len, "--cp %lld and --dp %lld disagree with --gpus %d (cp x dp must be the GPUs): give --cp "
                     "alone (the replicas are derived: %d / %lld = %lld)", (long long)c, (long long)r, gpus, gpus,
                     (long long)c, (long long)(gpus / c));
        return CPB_ERR_INVALID;
    }
    if (c <= 0 && (gpus / r) % t) {
        snprintf(err, err_len, "--dp %lld leaves %lld GPUs per replica, not a multiple of --tp %lld: a replica is "
                 "tp x cp GPUs", (long long)r, (long long)(gpus / r), (long long)t);
        return CPB_ERR_INVALID;
    }
    *cp = c > 0 ? (int)(c * t) : (int)(gpus / r);
    return cpb_knobs_set_int(given, "dp", gpus / *cp);
}

int cpb_layout_gpus(const cpb_problem *p)
{
    int64_t r = cpb_knob_int(p, "dp"), pp = cpb_knob_int(p, "pp");
    return p->C * (r > 0 ? (int)r : 1) * (pp > 1 ? (int)pp : 1);
}

int cpb_layout_cp_candidates(const cpb_problem *p, int64_t *out, int max)
{
    /* with --pp the stage's GPUs (plan never searches pp: only a given one is here) */
    int64_t pp = cpb_knob_int(p, "pp");
    const int g = pp > 1 && p->C % pp == 0 ? (int)(p->C / pp) : p->C;
    int n = 0;
    for (int d = 1; d <= g && n < max; d++)
        if (g % d == 0) out[n++] = d;
    return n;
}
