/* cmd_plan.c — `cpbench plan`: which method, with which knobs, and how fast, for a model
 * on C GPUs at a context length (or the longest context each fits), searched on the
 * simulator (driver/plan.h).
 *
 *   cpbench plan --model PRESET | --model-config FILE --gpus C [--gpus-per-node N]
 *                [--gpu PROFILE] [--framework PRESET] [--scope model|layer]
 *                (--seq S | --max-context [--seq-start S --seq-stop S --bisect S]) [--out FILE]
 *                [--min-headroom PCT] [--methods M1,M2 | --stack FAMILY] [--attn cudnn|own] [--top N]
 *
 * Prints the ranked candidates (method, knobs, the attention implementation per call class,
 * predicted peak, headroom, tokens/s per GPU, what bounds the run, the marks of plan.h's
 * rules: under-floor, tie, uncalibrated), the Pareto frontier, and a recommendation with
 * its reason and its settings in the frameworks that have its method (plan_frameworks.c); a
 * progress line goes to stderr while it searches.  Every output says it is a prediction,
 * from which GPU profile and which training setup.  --out appends every candidate's row to
 * a results file (points already there are not written again).  Exit: 0 with a
 * recommendation, 3 when no candidate fits (or none with the headroom floor), 2 for bad input, 1 when a candidate's
 * simulation failed or the results file could not be written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "gpu_profiles.h"
#include "model_scope.h"
#include "plan.h"
#include "plan_frameworks.h"
#include "progress.h"
#include "provenance.h"
#include "registry.h"
#include "results_h5.h"

#define EXIT_NOTHING_FITS 3

static double gib(int64_t b)
{
    return (double)b / 1073741824.0;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* tokens/s per GPU to four significant digits (a 1,024-GPU plan runs at a few) */
static const char *tps_text(double v, char *buf, size_t len)
{
    snprintf(buf, len, v >= 1000 ? "%.0f" : v >= 100 ? "%.1f" : v >= 10 ? "%.2f" : "%.3f", v);
    return buf;
}

static void tokens_label(char *buf, size_t len, int64_t S)
{
    if (S >= (1 << 20) && S % (1 << 18) == 0) snprintf(buf, len, "%gM", (double)S / 1048576.0);
    else if (S >= 1024 && S % 1024 == 0) snprintf(buf, len, "%lldK", (long long)(S >> 10));
    else snprintf(buf, len, "%lld", (long long)S);
}

/* ---------------------------------------------------------------- progress (stderr) */

typedef struct progress {
    double t0, last;
    int tty;
    int printed;
} progress;

static void on_progress(void *ctx, int done, int total, int points, const char *next)
{
    progress *pr = ctx;
    double t = now_s(), el = t - pr->t0;
    if (done < total && t - pr->last < (pr->tty ? 0.25 : 2.0) && pr->printed) return;
    pr->last = t;
    pr->printed = 1;
    char left[32] = "";
    if (done > 0 && done < total) {
        char d[24];
        cpb_progress_format_duration(d, sizeof d, el / done * (total - done));
        snprintf(left, sizeof left, ", ~%s left", d);
    }
    char e[24];
    cpb_progress_format_duration(e, sizeof e, el);
    fprintf(stderr, "%s# plan: %d/%d candidates, %d points simulated, %s%s%s%s%s", pr->tty ? "\r" : "", done, total,
            points, e, left, next && next[0] ? ", now " : "", next ? next : "", pr->tty ? "\033[K" : "\n");
    if (pr->tty && done >= total) fputc('\n', stderr);
    fflush(stderr);
}

/* ---------------------------------------------------------------- printing */

typedef struct ctx {
    const cpb_args *a;
    const cpb_plan_opts *o;
    const cpb_gpu_profile *prof;
    const cpb_framework *fw;
    int model;
} ctx;

static const char *knobs_or_dash(const cpb_plan_cand *c)
{
    return c->knobs[0] ? c->knobs : "-";
}

/* "upipe head_chunk=8", "ulysses (no knobs)" */
static const char *named(const cpb_plan_cand *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s %s", c->m->name, c->knobs[0] ? c->knobs : "(no knobs)");
    return buf;
}

static void bound_text(const cpb_plan_cand *c, char *buf, size_t len)
{
    switch (c->bound) {
    case CPB_BOUND_COMPUTE:
        snprintf(buf, len, "compute %.0f%%", 100 * c->bound_share);
        break;
    case CPB_BOUND_COMM:
        snprintf(buf, len, "communication %.0f%% (%s)", 100 * c->bound_share, c->bound_detail ? c->bound_detail : "");
        break;
    case CPB_BOUND_DEVICE_MEM:
        if (c->need_host > c->cap_host)
            snprintf(buf, len, "device memory +%.2f GiB (host +%.2f)", gib(c->need - c->cap), gib(c->need_host - c->cap_host));
        else snprintf(buf, len, "device memory +%.2f GiB", gib(c->need - c->cap));
        break;
    case CPB_BOUND_HOST_MEM:
        if (c->need > c->cap)
            snprintf(buf, len, "host memory +%.2f GiB (device +%.2f)", gib(c->need_host - c->cap_host), gib(c->need - c->cap));
        else snprintf(buf, len, "host memory +%.2f GiB", gib(c->need_host - c->cap_host));
        break;
    default:
        snprintf(buf, len, "%s", cpb_plan_cand_unsimulated(c) ? "unsupported" : "error");
    }
}

static void headroom_text(const cpb_plan_cand *c, char *buf, size_t len)
{
    if (c->bound == CPB_BOUND_ERROR || c->cap <= 0) snprintf(buf, len, "-");
    else snprintf(buf, len, "%.2f (%.1f%%)", gib(c->cap - c->need), 100.0 * (double)(c->cap - c->need) / (double)c->cap);
}

/* the attention implementation per call class: "cudnn", "own", "mixed(bwd own)" (the row's
 * attn_impl, and from attn_calls which classes ran on our kernels) */
static void attn_text(const cpb_row *r, char *buf, size_t len)
{
    if (!r->attn_impl[0]) {
        snprintf(buf, len, "-");
        return;
    }
    if (strcmp(r->attn_impl, "mixed") != 0) {
        /* a FlashAttention curve is a published estimate (the row's estimates column) */
        snprintf(buf, len, "%s%s", r->attn_impl, strstr(r->estimates, "attn.") ? " (estimate)" : "");
        return;
    }
    int f = strstr(r->attn_calls, "fwd own") != NULL, b = strstr(r->attn_calls, "bwd own") != NULL;
    snprintf(buf, len, "mixed(%s own)", f && b ? "fwd+bwd" : f ? "fwd" : b ? "bwd" : "some");
}

/* the candidate's flags in the table: R recommended, = tied with it, low headroom, uncal */
static void notes_text(const cpb_plan *pl, int i, char *buf, size_t len)
{
    const cpb_plan_cand *c = &pl->c[i];
    size_t n = 0;
    buf[0] = 0;
    if (i == pl->recommended) n += (size_t)snprintf(buf + n, len - n, "RECOMMENDED ");
    else if (c->tie) n += (size_t)snprintf(buf + n, len - n, "tie ");
    if (c->low_headroom && n < len) n += (size_t)snprintf(buf + n, len - n, "under-floor ");
    if (c->uncalibrated && n < len) n += (size_t)snprintf(buf + n, len - n, "uncalibrated ");
    if (c->pruned && n < len) n += (size_t)snprintf(buf + n, len - n, "pruned ");
    if (n && n <= len) buf[n - 1] = 0;
}

static void print_header(const ctx *x, const cpb_plan *pl, double seconds)
{
    const cpb_args *a = x->a;
    const cpb_gpu_profile *g = x->prof;
    printf("# cpbench plan: PREDICTIONS of the simulator, not measurements; scope %s\n",
           x->model ? "model (the whole training step)" : "layer (one attention layer)");
    /* the capacity the candidates are held to: the device's memory in the model scope (its
     * fixed per-GPU memory is a bucket of the peak, model_scope_fixed.c), the device's less
     * the flat reserve in the layer scope */
    int64_t cap = x->o->sim.mem_cap > 0 ? x->o->sim.mem_cap : x->model ? g->mem_bytes : cpb_gpu_profile_usable(g);
    printf("#   GPU profile %s: %d per node, %.2f GiB usable per GPU, %.2f GiB host memory per GPU\n", g->name,
           g->hw.gpus_per_node, gib(cap),
           gib(x->o->sim.host_mem_cap > 0 ? x->o->sim.host_mem_cap : cpb_gpu_profile_host_per_gpu(g)));
    if (cpb_gpu_profile_estimates(g)[0])
        printf("#   estimates in the %s profile (not on its datasheet; calibration keys): %s\n", g->name,
               cpb_gpu_profile_estimates(g));
    if (x->model) {
        printf("#   framework %s: %s\n", x->fw->name, x->fw->summary);
        cpb_setup_print_given(stdout, &x->o->given, x->o->base.C, !x->o->max_context, "#   ");
    }
    else printf("#   framework: none (--scope layer: one attention layer, forward and backward)\n");
    char S[32];
    tokens_label(S, sizeof S, x->o->base.S);
    const cpb_problem *b = &x->o->base;
    printf("#   model %s (D %lld, H %d, G %d, d %d)%s%s on %d GPUs, %s", b->model, (long long)b->D, b->H, b->G, b->d,
           a->model_config ? " from " : "", a->model_config ? a->model_config : "", b->C, x->model ? "whole model" : "layer");
    const cpb_model_spec *sp = x->model ? cpb_model_spec_find(b->model) : NULL;
    char desc[256] = "";
    if (sp) cpb_model_spec_describe(sp, desc, sizeof desc);
    if (x->o->max_context) {
        char s0[32], s1[32], st[32];
        tokens_label(s0, sizeof s0, pl->seq_start);
        tokens_label(s1, sizeof s1, pl->seq_stop);
        tokens_label(st, sizeof st, pl->bisect);
        printf(", longest context searched from %s to %s to within %s\n", s0, s1, st);
    } else {
        printf(", S = %lld (%s) tokens\n", (long long)b->S, S);
    }
    if (sp) printf("#   layer: %s\n", desc);
    printf("#   TFLOP/s c/m: model TFLOP/s per GPU, FLOPs counted as causal / as megatron; MFU c/m: their share of the "
           "profile's %.0f TFLOP/s peak (results/README.md)\n", g->hw.peak_flops / 1e12);
    printf("#   %d candidates of %d methods%s%s (%d knob combinations refused), %d points simulated in %.1f s\n",
           pl->n, pl->methods, x->o->methods && x->o->methods[0] ? ": " : "", x->o->methods ? x->o->methods : "",
           pl->refused, pl->points, seconds);
    printf("#   recommendation rules (docs/simulator.md, \"What plan recommends\"): at least %.0f%% of the usable memory "
           "free (--min-headroom%s);\n#     tokens/s within %.0f%% of the best are a tie (the prediction's uncertainty "
           "when two candidates are compared: an estimate), broken by headroom;\n#     candidates whose attention ran "
           "on our own kernels (attn own or mixed) are uncalibrated: recommended only when nothing calibrated fits\n",
           100 * x->o->min_headroom, x->o->max_context ? ", at each candidate's longest context" : "", 100 * pl->tie);
    if (pl->refusals[0]) printf("#   not applicable: %s\n", pl->refusals);
}

static void print_table(const ctx *x, const cpb_plan *pl)
{
    const int mc = x->o->max_context;
    const int shown = x->a->top > 0 && x->a->top < pl->n ? x->a->top : pl->n;
    int kw = 5;
    for (int k = 0; k < shown; k++) {
        int l = (int)strlen(knobs_or_dash(&pl->c[pl->order[k]]));
        if (l > kw) kw = l;
    }
    printf("\n%4s  %-8s %-*s %-15s %s%9s %15s %9s %13s %9s %13s %11s  %s\n", "rank", "method", kw, "knobs", "attn",
           mc ? "  context " : "", "peak GiB", "headroom GiB", "host GiB", "tokens/s/GPU", "step s", "TFLOP/s c/m",
           "MFU c/m %", mc ? "bound (limit)" : "bound");
    for (int k = 0; k < shown; k++) {
        const cpb_plan_cand *c = &pl->c[pl->order[k]];
        char bound[64], head[32], ctxs[24] = "";
        bound_text(c, bound, sizeof bound);
        headroom_text(c, head, sizeof head);
        if (mc) {
            char t[24];
            if (c->max_seq > 0) tokens_label(t, sizeof t, c->max_seq);
            else snprintf(t, sizeof t, "none");
            snprintf(ctxs, sizeof ctxs, "%9s ", t);
            if (c->max_seq > 0 && c->first_oom > 0) {
                size_t n = strlen(bound);
                snprintf(bound + n, sizeof bound - n, " (%s)", cpb_plan_bound_name(c->limit));
            }
        }
        const int ok = c->bound == CPB_BOUND_COMPUTE || c->bound == CPB_BOUND_COMM;
        char t[24] = "-", st[24] = "-", tf[32] = "-", mfu[32] = "-";
        if (ok && c->pruned) {
            /* not simulated in full: bounds, not predictions (plan.h, cand.pruned) */
            char ub[24];
            snprintf(t, sizeof t, "<=%s", tps_text(c->row.tokens_per_s_per_gpu, ub, sizeof ub));
            snprintf(st, sizeof st, ">=%.3f", c->row.step_s);
            snprintf(bound, sizeof bound, "(pruned)");
        } else if (ok) {
            tps_text(c->row.tokens_per_s_per_gpu, t, sizeof t);
            snprintf(st, sizeof st, "%.3f", c->row.step_s);
            /* model TFLOP/s per GPU and its utilisation of the peak, FLOPs counted as causal /
             * as megatron (results/README.md) */
            snprintf(tf, sizeof tf, "%.0f/%.0f", c->row.tflops_per_gpu, c->row.tflops_per_gpu_megatron);
            snprintf(mfu, sizeof mfu, "%.1f/%.1f", 100 * c->row.mfu_causal, 100 * c->row.mfu_megatron);
        }
        char at[32], notes[64];
        attn_text(&c->row, at, sizeof at);
        notes_text(pl, pl->order[k], notes, sizeof notes);
        printf("%4d  %-8s %-*s %-15s %s%9.2f %15s %9.2f %13s %9s %13s %11s  %s%s%s%s\n", k + 1, c->m->name,
               kw, knobs_or_dash(c), at, ctxs, gib(c->need), head, gib(c->need_host), t, st, tf, mfu, bound,
               c->frontier ? "  *" : "", notes[0] ? "  " : "", notes);
        if (c->bound == CPB_BOUND_ERROR)
            printf("      %s: %s\n", cpb_plan_cand_unsimulated(c) ? "not simulated" : "error", c->row.reason);
    }
    if (shown < pl->n) printf("(%d more candidates not shown: --top %d)\n", pl->n - shown, x->a->top);
    printf("(* on the Pareto frontier; tie: within the uncertainty of the recommendation's group; under-floor: less "
           "headroom than --min-headroom, never recommended;\n uncalibrated: its speed rests on our attention kernels' "
           "estimate, docs/attention.md; knobs' attn= is the --attn choice, the attn column what ran, per call class)\n");
    if (pl->pruned)
        printf("(pruned: %d candidates fit (memory exact) but were not simulated in full: a bound on their speed from one "
               "or two ranks' streams is slower than two candidates simulated in full needing no more memory (one, "
               "for an uncalibrated candidate once a calibrated one is eligible), so they cannot change the "
               "recommendation or the frontier; CPB_PLAN_NO_PRUNE=1 simulates them)\n",
               pl->pruned);
}

static void print_frontier(const ctx *x, const cpb_plan *pl)
{
    const int mc = x->o->max_context;
    if (mc) printf("\nPareto frontier of context length against tokens/s/GPU (no other candidate fits a longer context "
                   "and runs faster there):\n");
    else printf("\nPareto frontier of peak memory against tokens/s/GPU (no other candidate needs less memory and runs "
                "faster):\n");
    printf("  %9s %13s  %s\n", mc ? "context" : "peak GiB", "tokens/s/GPU", "candidate");
    /* by the frontier's own axis: memory ascending, or context descending */
    int idx[4096], n = 0;
    for (int i = 0; i < pl->n && n < 4096; i++)
        if (pl->c[i].frontier) idx[n++] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            const cpb_plan_cand *p = &pl->c[idx[j - 1]], *q = &pl->c[idx[j]];
            int swap = mc ? q->max_seq > p->max_seq : q->need < p->need;
            if (!swap) break;
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    for (int i = 0; i < n; i++) {
        const cpb_plan_cand *c = &pl->c[idx[i]];
        char v[24];
        if (mc) tokens_label(v, sizeof v, c->max_seq);
        else snprintf(v, sizeof v, "%.2f", gib(c->need));
        char n1[200];
        char t[24];
        printf("  %9s %13s  %s%s\n", v, tps_text(c->row.tokens_per_s_per_gpu, t, sizeof t), named(c, n1, sizeof n1),
               idx[i] == pl->recommended ? "  <- recommended" : "");
    }
}

/* the knobs as options of `cpbench run` */
static void run_command(const ctx *x, const cpb_plan_cand *c, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "cpbench run --backend sim --method %s", c->m->name);
    for (int i = 0; i < c->p.knobs.n && n < len; i++) {
        const cpb_knob_value *v = &c->p.knobs.v[i];
        const cpb_knob *k = cpb_knob_of(c->m, v->name);
        if (!k || (k->type != CPB_KNOB_CHOICE && v->i == 0)) continue;
        if (!cpb_knob_belongs(k, &cpb_backend_sim, x->model ? "model" : "layer")) continue;
        /* the setup's knobs: those given (a part of the training setup), not --framework */
        if (k->setup && (!strcmp(k->name, "framework") || !cpb_knobs_find(&x->o->given, k->name))) continue;
        char opt[64];
        cpb_knob_option(k, opt, sizeof opt);
        if (k->type == CPB_KNOB_CHOICE) n += (size_t)snprintf(buf + n, len - n, " %s %s", opt, v->s);
        else n += (size_t)snprintf(buf + n, len - n, " %s %lld", opt, (long long)v->i);
    }
    if (n < len) {
        if (x->a->model_config) n += (size_t)snprintf(buf + n, len - n, " --model-config %s", x->a->model_config);
        else n += (size_t)snprintf(buf + n, len - n, " --model %s", x->o->base.model);
    }
    if (n < len)
        n += (size_t)snprintf(buf + n, len - n, " --gpus %d --seq %lld --gpu %s%s%s", x->model ? cpb_layout_gpus(&c->p) : c->p.C, (long long)c->p.S,
                              x->prof->name, x->model ? " --scope model --framework " : "", x->model ? x->fw->name : "");
    if (n < len && x->a->gpus_per_node) snprintf(buf + n, len - n, " --gpus-per-node %d", x->a->gpus_per_node);
}

static void print_recommendation(const ctx *x, const cpb_plan *pl)
{
    const char *setup = x->model ? x->fw->name : "one layer";
    if (pl->recommended < 0 && pl->roomiest_low >= 0) {
        const cpb_plan_cand *c = &pl->c[pl->roomiest_low];
        char n1[200], t1[24];
        printf("\nNothing to recommend (a prediction: %s, %s): %d candidate%s fit%s, each with less than %.0f%% of the "
               "usable memory free (--min-headroom %.0f), which the caching allocator's fragmentation can take\n",
               x->prof->name, setup, pl->low, pl->low == 1 ? "" : "s", pl->low == 1 ? "s" : "", 100 * x->o->min_headroom,
               100 * x->o->min_headroom);
        printf("The roomiest: %s, %.2f GiB (%.1f%%) free, %s tokens/s/GPU%s; a lower --min-headroom accepts it at that "
               "risk\n", named(c, n1, sizeof n1), gib(c->cap - c->need), 100 * cpb_plan_headroom(c),
               tps_text(c->row.tokens_per_s_per_gpu, t1, sizeof t1), c->uncalibrated ? " (uncalibrated)" : "");
        return;
    }
    if (pl->recommended < 0) {
        char S[32];
        tokens_label(S, sizeof S, x->o->base.S);
        printf("\nNothing fits (a prediction: %s, %s): none of the %d candidates fits %d x %s", x->prof->name, setup,
               pl->n, x->o->base.C, x->prof->name);
        if (x->o->max_context) printf(" at the shortest length searched\n");
        else printf(" at S = %s\n", S);
        if (pl->closest >= 0) {
            const cpb_plan_cand *c = &pl->c[pl->closest];
            const int dev = c->bound == CPB_BOUND_DEVICE_MEM;
            int64_t need = dev ? c->need : c->need_host, cap = dev ? c->cap : c->cap_host;
            char S2[32];
            tokens_label(S2, sizeof S2, c->p.S);
            char n1[200];
            printf("Closest: %s at S = %s needs %.2f GiB of %s memory per GPU, %.2f GiB usable: %.2f GiB (%.1f%%) "
                   "too much\n", named(c, n1, sizeof n1), S2, gib(need), dev ? "device" : "host", gib(cap),
                   gib(need - cap), 100.0 * (double)(need - cap) / (double)cap);
            int64_t need2 = dev ? c->need_host : c->need, cap2 = dev ? c->cap_host : c->cap;
            if (need2 > cap2)
                printf("  and %.2f GiB of %s memory per GPU, %.2f GiB usable: %.2f GiB (%.1f%%) too much\n", gib(need2),
                       dev ? "host" : "device", gib(cap2), gib(need2 - cap2), 100.0 * (double)(need2 - cap2) / (double)cap2);
            printf("  (more GPUs, a larger GPU profile%s, or a shorter context would be the next things to try)\n",
                   dev && need2 <= cap2 ? "" : " or more host memory (--host-ram)");
            char fx[512];
            if (dev && x->model && cpb_setup_fixes_given(&x->o->given, fx, sizeof fx) == CPB_OK && fx[0])
                printf("  the usual fixes this setup does not have yet: %s\n", fx);
        }
        return;
    }
    const cpb_plan_cand *r = &pl->c[pl->recommended];
    int nfit = 0, nel = 0;
    for (int i = 0; i < pl->n; i++) {
        const cpb_plan_cand *c = &pl->c[i];
        const int f = c->bound == CPB_BOUND_COMPUTE || c->bound == CPB_BOUND_COMM;
        nfit += f;
        nel += f && !c->low_headroom && c->uncalibrated == r->uncalibrated;
    }
    char bound[64], S[32], cmd[1024];
    bound_text(r, bound, sizeof bound);
    tokens_label(S, sizeof S, r->p.S);
    char n1[200], n2[200], t1[24], t2[24], at[32];
    const double floor_pct = 100 * x->o->min_headroom, tie_pct = 100 * pl->tie;
    printf("\nRecommendation (a prediction: %s, %s): %s\n", x->prof->name, setup, named(r, n1, sizeof n1));
    printf("  why: of the %d candidates that fit, %d %s at least %.0f%% of the memory free%s;", nfit, nel,
           nel == 1 ? "leaves" : "leave", floor_pct, r->uncalibrated ? " (uncalibrated ones: no calibrated one does)" :
           " and ran on cuDNN (calibrated)");
    if (x->o->max_context)
        printf(" it fits the longest context of those, %s tokens (to within the %s step), at %s tokens/s/GPU", S,
               "bisection", tps_text(r->row.tokens_per_s_per_gpu, t1, sizeof t1));
    else
        printf(" it runs at %s tokens/s/GPU", tps_text(r->row.tokens_per_s_per_gpu, t1, sizeof t1));
    if (pl->ties > 0)
        printf(";\n       %d other%s within %.0f%% of the best of them (a tie: the prediction cannot rank them), and "
               "of the tied it leaves the most memory free", pl->ties, pl->ties == 1 ? " is" : "s are", tie_pct);
    if (pl->ties_unknown > 0)
        /* pruned with a bound within the tie (plan.h): each leaves no more memory free than
         * two faster ones, so none would be chosen */
        printf("%s %d pruned one%s may be %s (a bound on %s tokens/s is within the tie; %s no more memory free "
               "than two faster ones)", pl->ties > 0 ? ";\n       and" : ";\n      ", pl->ties_unknown,
               pl->ties_unknown == 1 ? "" : "s", pl->ties > 0 ? "tied too" : "tied with it",
               pl->ties_unknown == 1 ? "its" : "each one's", pl->ties_unknown == 1 ? "it leaves" : "each leaves");
    if (pl->ties == 0 && pl->runner_up >= 0) {
        const cpb_plan_cand *u = &pl->c[pl->runner_up];
        if (x->o->max_context && u->max_seq < r->max_seq) {
            char S2[32];
            tokens_label(S2, sizeof S2, u->max_seq);
            printf("; next: %s (%s)", named(u, n2, sizeof n2), S2);
        } else {
            double ahead = 100.0 * (r->row.tokens_per_s_per_gpu / u->row.tokens_per_s_per_gpu - 1.0);
            printf(", %.2f%% ahead of %s (%s), more than the %.0f%% uncertainty", ahead, named(u, n2, sizeof n2),
                   tps_text(u->row.tokens_per_s_per_gpu, t2, sizeof t2), tie_pct);
        }
    }
    printf(";\n       peak %.2f GiB of %.2f GiB usable (%.2f GiB, %.0f%% headroom), host %.2f GiB of %.2f GiB; bound by %s "
           "of the critical path\n", gib(r->need), gib(r->cap), gib(r->cap - r->need), 100 * cpb_plan_headroom(r),
           gib(r->need_host), gib(r->cap_host), bound);
    /* the fastest that fits, when it is not the recommendation: why not */
    if (pl->fastest >= 0 && pl->fastest != pl->recommended) {
        const cpb_plan_cand *f = &pl->c[pl->fastest];
        double ahead = 100.0 * (f->row.tokens_per_s_per_gpu / r->row.tokens_per_s_per_gpu - 1.0);
        char ctxt[48] = "";
        if (x->o->max_context) {
            char S3[32];
            tokens_label(S3, sizeof S3, f->max_seq);
            snprintf(ctxt, sizeof ctxt, " at %s", S3);
        }
        printf("  not %s%s (%+.2f%% tokens/s, %.0f%% headroom): %s\n", named(f, n2, sizeof n2), ctxt, ahead,
               100 * cpb_plan_headroom(f),
               f->low_headroom  ? "under the headroom floor (the caching allocator's fragmentation can take that little)"
               : f->uncalibrated ? "its speed rests on our attention kernels' uncalibrated estimate"
               : f->tie          ? "tied within the uncertainty, with less headroom"
                                 : "longer context or more headroom won");
    }
    if (pl->rec_uncalibrated) {
        attn_text(&r->row, at, sizeof at);
        printf("  UNCALIBRATED: no calibrated candidate fits with %.0f%% headroom; this one's speed rests on our own "
               "attention kernels' estimate (attn %s: %s), not on measured cuDNN curves: measure it before relying on "
               "its speed\n", floor_pct, at, r->row.attn_calls);
    }
    char fw[2048];
    int nf = cpb_plan_framework_settings(r->m, &r->p, x->a->stack, fw, sizeof fw);
    printf("  in the frameworks%s:\n%s", nf ? " that have it (driver/plan_frameworks.c cites each setting)" : "", fw);
    if (!nf && pl->ties > 0) {
        /* of the tied, the roomiest that a framework has: as good a choice by the prediction */
        const int best = cpb_plan_tied_in_framework(pl, x->a->stack);
        if (best >= 0) {
            const cpb_plan_cand *c = &pl->c[best];
            cpb_plan_framework_settings(c->m, &c->p, x->a->stack, fw, sizeof fw);
            printf("  tied with it, in a framework: %s (%s tokens/s/GPU, %.0f%% headroom):\n%s", named(c, n2, sizeof n2),
                   tps_text(c->row.tokens_per_s_per_gpu, t2, sizeof t2), 100 * cpb_plan_headroom(c), fw);
        }
    }
    if (pl->exact_check > 0)
        printf("  checked: simulated again rank by rank (--sim-ranks exact), the same peak and step time\n");
    else if (pl->exact_check < 0)
        printf("  CHECK FAILED: simulated again rank by rank, it differs (%s)\n", pl->exact_why);
    run_command(x, r, cmd, sizeof cmd);
    printf("  details: %s\n", cmd);
}

/* ---------------------------------------------------------------- --out */

static int write_rows(const cpb_cli *c, const cpb_plan *pl, const char *gpu, int C)
{
    const char *path = c->a.out;
    char err[1024];
    cpb_row *prev = NULL;
    int64_t nprev = 0;
    cpb_provenance prov;
    cpb_provenance_collect(&prov, c->argc, c->argv, &cpb_backend_sim, gpu, C);
    cpb_results *f = NULL;
    /* the file open first (its write lock), then the rows already there read under the
     * lock: another writer between the reading and the appending would make rows twice
     * (issue 26 §2, the sweep's defect) */
    int orc = cpb_results_open(path, &prov, c->a.force, &f, err, sizeof err);
    if (orc == CPB_OK) orc = cpb_results_read_open(f, &prev, &nprev, err, sizeof err);
    if (orc != CPB_OK) {
        fprintf(stderr, "cpbench plan: %s\n", err);
        cpb_results_close(f);
        return orc == CPB_ERR_INVALID ? 2 : 1;
    }
    int written = 0, there = 0, rc = 0;
    for (int i = 0; i < pl->n && !rc; i++) {
        if (pl->c[i].pruned) continue; /* its times are bounds, not predictions (plan.h) */
        cpb_row row = pl->c[i].row;
        int seen = 0;
        for (int64_t j = 0; j < nprev && !seen; j++)
            seen = cpb_row_same_point(&prev[j], &row) && strcmp(prev[j].status, "error") != 0;
        if (seen) {
            there++;
            continue;
        }
        if (cpb_results_append(f, &row, err, sizeof err) != CPB_OK) {
            fprintf(stderr, "cpbench plan: %s\n", err);
            rc = 1;
        } else {
            written++;
        }
    }
    cpb_results_close(f);
    free(prev);
    printf("\n# results: %s: %d candidate rows written, %d already there (backend sim: predictions)\n", path, written,
           there);
    return rc;
}

/* ---------------------------------------------------------------- the command */

/* The work of a candidate, estimated before the search (cpb_sim_estimate: each method's
 * rank 0 at the plan's world and longest length, times the ranks the simulator records and
 * replays): a world the simulator cannot finish in reasonable time is refused at once,
 * naming the estimate, instead of taking minutes per candidate for hours.  CPB_OK, or
 * CPB_ERR_INVALID with the message. */
static int check_work(const cpb_args *a, const cpb_plan_opts *o, char *err, size_t len)
{
    cpb_args pa = *a;
    pa.seq = a->max_context && a->seq_stop > 0 ? a->seq_stop : a->seq;
    if (pa.seq <= 0) return CPB_OK; /* the search's own checks speak */
    pa.seq -= pa.seq % (a->gpus > 0 ? a->gpus : 1);
    for (int i = 0; i < cpb_method_count(); i++) {
        const cpb_method *m = cpb_method_at(i);
        if (!cpb_plan_method_listed(o->methods, m->name)) continue;
        cpb_problem p;
        char why[1024];
        if (cpb_args_problem(&pa, m, a->gpus, &p, why, sizeof why) != CPB_OK) continue; /* a refusal: no work */
        int64_t entries;
        double seconds;
        if (cpb_sim_estimate(&p, m, &o->sim, &entries, &seconds, why, sizeof why) != CPB_OK) continue;
        if (entries > CPB_SIM_MAX_TRACE_ENTRIES) {
            snprintf(err, len, "a candidate of %s on %d GPUs at %lld tokens would replay about %.3g trace entries, "
                     "more than the simulator's bound of %.3g (about %.0f s a candidate here, for every candidate of "
                     "the search): plan fewer GPUs (--gpus)%s", m->name, a->gpus, (long long)pa.seq,
                     (double)entries, (double)CPB_SIM_MAX_TRACE_ENTRIES, seconds,
                     o->sim.ranks == CPB_SIM_RANKS_SYMMETRIC ? "" : " or give --sim-ranks symmetric");
            return CPB_ERR_INVALID;
        }
    }
    return CPB_OK;
}

int cpb_cmd_plan(const cpb_cli *c)
{
    const cpb_args *a = &c->a;
    char err[1024];
    if (a->backend_given && strcmp(a->backend, "sim") != 0) {
        fprintf(stderr, "cpbench plan: searches on the simulator; --backend %s is not for plan (run its "
                "recommendation with `cpbench run --backend %s`)\n", a->backend, a->backend);
        return 2;
    }
    /* the methods searched: --methods (or --method), or a --stack family's */
    static char methods[512];
    methods[0] = 0;
    if (a->method[0] && a->methods[0]) {
        fprintf(stderr, "cpbench plan: --method and --methods say the same (the methods to search); give one\n");
        return 2;
    }
    if ((a->method[0] || a->methods[0]) && a->stack[0]) {
        fprintf(stderr, "cpbench plan: --stack %s chooses the methods; give it or --methods, not both\n", a->stack);
        return 2;
    }
    const char *ml = a->methods[0] ? a->methods : a->method;
    if (ml[0] && strcmp(ml, "all") != 0) snprintf(methods, sizeof methods, "%s", ml);
    if (a->stack[0] && !cpb_plan_stack_methods(a->stack, methods, sizeof methods)) {
        fprintf(stderr, "cpbench plan: --stack '%s': expected one of %s\n", a->stack, cpb_plan_stacks());
        return 2;
    }
    if (a->min_headroom > 90) {
        fprintf(stderr, "cpbench plan: --min-headroom %d: expected a percentage from 0 to 90\n", a->min_headroom);
        return 2;
    }
    if (!a->gpus) {
        fprintf(stderr, "cpbench plan: --gpus C is required (the number of GPUs to plan for)\n");
        return 2;
    }
    if (!!a->seq == !!a->max_context) {
        fprintf(stderr, "cpbench plan: give --seq S (plan at that context length) or --max-context (the longest "
                "context each candidate fits), one of them\n");
        return 2;
    }
    if (!a->max_context && (a->seq_start || a->seq_stop || a->bisect)) {
        fprintf(stderr, "cpbench plan: --seq-start, --seq-stop and --bisect go with --max-context\n");
        return 2;
    }
    /* a results file that would be refused is refused before the search */
    int orc = cpb_cli_check_out(a, "plan");
    if (orc) return orc;
    const char *scope = a->scope_given ? a->scope : "model";
    const int model = strcmp(scope, "model") == 0;
    static cpb_plan_opts o;
    int rc0;
    memset(&o, 0, sizeof o);
    cpb_args_sim_opts(a, &o.sim);
    if (!a->sim_ranks[0]) o.sim.ranks = CPB_SIM_RANKS_SYMMETRIC; /* the tests prove it equal to exact */
    o.every_row = a->out != NULL; /* the file gets every candidate's row: none pruned by speed */
    o.scope = scope;
    o.given = a->knobs;
    o.max_context = a->max_context;
    o.seq_start = a->seq_start;
    o.seq_stop = a->seq_stop;
    o.bisect = a->bisect;
    o.methods = methods;
    o.stack = a->stack;
    o.min_headroom = a->min_headroom / 100.0;
    o.tie = CPB_PLAN_TIE;
    /* the shape: the problem of no method at this length (the knobs come per candidate) */
    cpb_args pa = *a;
    if (!pa.seq) pa.seq = 2 * (int64_t)a->gpus;
    if (cpb_args_problem(&pa, NULL, a->gpus, &o.base, err, sizeof err) != CPB_OK) {
        fprintf(stderr, "cpbench plan: %s\n", err);
        return 2;
    }
    o.base.S = a->seq;
    /* the profile with --host-ram (a knob of every simulated point) applied */
    cpb_gpu_profile prof;
    cpb_problem setup = o.base;
    setup.S = pa.seq;
    if (cpb_knobs_apply(NULL, &a->knobs, &setup, err, sizeof err) != CPB_OK ||
        cpb_sim_profile(&o.sim, &setup, &prof, err, sizeof err) != CPB_OK) {
        fprintf(stderr, "cpbench plan: %s\n", err);
        return 2;
    }
    const cpb_knob_value *fv = cpb_knobs_find(&a->knobs, "framework");
    const cpb_framework *fw = cpb_framework_find(fv ? fv->s : NULL);
    if (model && !cpb_model_spec_find(o.base.model)) {
        fprintf(stderr, "cpbench plan: --scope model needs a model with its layers, MLP and vocabulary: a preset or "
                "--model-config FILE ('%s' has none); or plan one layer with --scope layer\n", o.base.model);
        return 2;
    }
    if ((rc0 = check_work(a, &o, err, sizeof err)) != CPB_OK) {
        fprintf(stderr, "cpbench plan: %s\n", err);
        return rc0 == CPB_ERR_INVALID ? 2 : 1;
    }
    progress pr = {now_s(), 0, isatty(2), 0};
    o.progress = on_progress;
    o.progress_ctx = &pr;
    fprintf(stderr, "# plan: searching %s and every knob on the simulator (%s, %d GPUs)...\n",
            methods[0] ? methods : "every method", prof.name, a->gpus);
    static cpb_plan pl;
    int rc = cpb_plan_search(&o, &pl, err, sizeof err);
    if (rc != CPB_OK) {
        fprintf(stderr, "cpbench plan: %s\n", err);
        return rc == CPB_ERR_INVALID ? 2 : 1;
    }
    double seconds = now_s() - pr.t0;
    ctx x = {a, &o, &prof, fw, model};
    print_header(&x, &pl, seconds);
    print_table(&x, &pl);
    if (pl.recommended >= 0) print_frontier(&x, &pl);
    print_recommendation(&x, &pl);
    int code = pl.recommended >= 0 ? 0 : EXIT_NOTHING_FITS;
    if (pl.exact_check < 0) {
        fprintf(stderr, "cpbench plan: the recommendation's rank-by-rank simulation differs from the search's (a bug "
                "of the symmetric mode): %s\n", pl.exact_why);
        code = 1;
    }
    if (pl.unsimulated)
        /* a limit of the simulator, not a bug: the plan stands on the rest, and says so */
        fprintf(stderr, "cpbench plan: %d candidate%s not simulated: the simulator declined %s (status unsupported, "
                "e.g. more trace entries than its bound; reasons in the table); the recommendation is among the "
                "others\n", pl.unsimulated, pl.unsimulated == 1 ? " was" : "s were", pl.unsimulated == 1 ? "it" : "them");
    if (pl.errors) {
        fprintf(stderr, "cpbench plan: %d candidate%s failed to simulate (a bug; their reasons are in the table)\n",
                pl.errors, pl.errors == 1 ? "" : "s");
        code = 1;
    }
    if (a->out) {
        int wrc = write_rows(c, &pl, prof.name, a->gpus);
        if (wrc) code = wrc == 2 ? 2 : 1;
    }
    fflush(stdout);
    cpb_plan_free(&pl);
    return code;
}
