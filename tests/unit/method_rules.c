/* method_rules.c — the checklist's checks for one method at one shape (method_rules.h). */
#include "method_rules.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sim_layer.h"

/* why = "<method>: <what>"; returns 1 (a broken rule) */
static int broke(const cpb_method *m, char *why, size_t len, const char *fmt, ...)
{
    int n = snprintf(why, len, "%s: ", m->name);
    if (n < 0 || (size_t)n >= len) return 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why + n, len - (size_t)n, fmt, ap);
    va_end(ap);
    return 1;
}

/* a shape in messages */
static void shape_of(const cpb_problem *p, char *out, size_t len)
{
    snprintf(out, len, "S %lld C %d D %lld H %d G %d d %d %s", (long long)p->S, p->C, (long long)p->D, p->H, p->G, p->d,
             cpb_dtype_name(p->dtype));
}

int cpb_rules_memory(const cpb_method *m, const cpb_problem *p, int *accepted, char *why, size_t why_len)
{
    char shape[160], r1[512] = "", r2[512] = "";
    shape_of(p, shape, sizeof shape);
    *accepted = 0;
    /* rule 4: a pure function of p, and a refusal says why */
    const int c1 = m->check ? m->check(p, r1, sizeof r1) : CPB_OK;
    const int c2 = m->check ? m->check(p, r2, sizeof r2) : CPB_OK;
    if ((c1 == CPB_OK) != (c2 == CPB_OK) || strcmp(r1, r2) != 0)
        return broke(m, why, why_len, "check() answered %d (\"%s\") then %d (\"%s\") at %s: it must be a pure function "
                     "of the problem (rule 4)", c1, r1, c2, r2, shape);
    if (c1 != CPB_OK && !r1[0])
        return broke(m, why, why_len, "check() refused %s without a reason (rule 4: name the constraint and values)",
                     shape);
    static cpb_row ex;
    cpb_sim_opts o = {0};
    o.ranks = CPB_SIM_RANKS_EXACT;
    if (cpb_sim_layer(p, m, &o, &ex) != CPB_OK)
        return broke(m, why, why_len, "the simulator could not run %s: %s", shape, ex.reason);
    if (c1 != CPB_OK) {
        if (strcmp(ex.status, "refused") != 0)
            return broke(m, why, why_len, "check() refused %s but the trial's status is %s (rule 4)", shape, ex.status);
        return 0;
    }
    *accepted = 1;
    /* rules 1 and 4: the exact replay compares every rank's allocations; an accepted shape
     * that fails while running is a bug, whatever it calls itself */
    if (strcmp(ex.status, "ok") != 0)
        return broke(m, why, why_len, "check() accepted %s but the trial ended %s: %s (rules 1 and 4: every rank "
                     "allocates alike; accept only what runs)", shape, ex.status, ex.reason);
    /* rule 2: nothing of the method is live when backward returns */
    for (int t = 0; t < CPB_TAG_COUNT; t++) {
        if (cpb_tag_is_fixed((cpb_tag)t) || t == CPB_TAG_WORKSPACE) continue;
        if (ex.bwd.tag_live_end[t] != 0)
            return broke(m, why, why_len, "%lld bytes of tag %s are still live when backward returns at %s (rule 2: "
                         "temporaries are freed by the call that made them, saved tensors by backward)",
                         (long long)ex.bwd.tag_live_end[t], cpb_tag_name((cpb_tag)t), shape);
    }
    if (ex.bwd.host_live_end != 0)
        return broke(m, why, why_len, "%lld pinned host bytes are still live when backward returns at %s (rule 2)",
                     (long long)ex.bwd.host_live_end, shape);
    return 0;
}

int cpb_rules_symmetric(const cpb_method *m, const cpb_problem *p, int gpus_per_node, int max_replayed, cpb_row *ex,
                        cpb_row *sy, char *why, size_t why_len)
{
    char shape[200];
    shape_of(p, shape, sizeof shape);
    size_t n = strlen(shape);
    snprintf(shape + n, sizeof shape - n, ", %d GPUs per node", gpus_per_node);
    cpb_sim_opts o = {0};
    o.gpus_per_node = gpus_per_node;
    /* the rule is about op order, not capacity: room for any method's whole schedule */
    o.mem_cap = (int64_t)1 << 50;
    o.ranks = CPB_SIM_RANKS_EXACT;
    if (cpb_sim_layer(p, m, &o, ex) != CPB_OK) return broke(m, why, why_len, "exact replay of %s: %s", shape, ex->reason);
    o.ranks = CPB_SIM_RANKS_SYMMETRIC;
    if (cpb_sim_layer(p, m, &o, sy) != CPB_OK)
        return broke(m, why, why_len, "symmetric replay of %s: %s", shape, sy->reason);
    if (strcmp(ex->status, "ok") != 0) return broke(m, why, why_len, "%s ended %s: %s", shape, ex->status, ex->reason);
    if (strcmp(sy->status, ex->status) != 0)
        return broke(m, why, why_len, "%s: the symmetric replay ended %s, the exact %s", shape, sy->status, ex->status);
    if (ex->replayed_ranks != p->C)
        return broke(m, why, why_len, "%s: the exact replay simulated %d ranks of %d", shape, ex->replayed_ranks, p->C);
    if (sy->replayed_ranks > max_replayed)
        return broke(m, why, why_len, "breaks symmetric replay at %s: the ranks' op sequences are not each other's "
                     "moved, so the simulator replayed %d ranks (at most %d expected); every rank must issue the same "
                     "ops in the same order (runtime/cpb_method.h, rule 3)", shape, sy->replayed_ranks, max_replayed);
    /* memory: exactly */
#define SAME(f)                                                                                                       \
    if (sy->f != ex->f)                                                                                               \
        return broke(m, why, why_len, "%s: symmetric replay's " #f " %.17g, the exact replay's %.17g (rule 3)", shape,  \
                     (double)sy->f, (double)ex->f);
    SAME(peak_bytes) SAME(host_peak_bytes) SAME(intermediate_bytes) SAME(fwd_peak_bytes) SAME(bwd_peak_bytes)
    SAME(comm_bytes) SAME(pcie_bytes)
    if (memcmp(sy->at_peak_bytes, ex->at_peak_bytes, sizeof ex->at_peak_bytes) != 0)
        return broke(m, why, why_len, "%s: the bytes by tag at the peak differ between the replays (rule 3)", shape);
    /* times: bit for bit (test_sim_symmetry.c says why) */
    SAME(step_s) SAME(fwd_s)
#undef SAME
    const double cs = sy->crit_compute_s + sy->crit_comm_s + sy->crit_host_s,
                 ce = ex->crit_compute_s + ex->crit_comm_s + ex->crit_host_s;
    if (cs != ce)
        return broke(m, why, why_len, "%s: critical path %.17g vs exact %.17g (rule 3)", shape, cs, ce);
    return 0;
}
