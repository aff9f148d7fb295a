/* sim_layer.c — cpb_sim_layer (sim_layer.h): run one layer trial of method m for every rank
 * of a simulated world in this process (or for one rank per class of ranks alike by
 * symmetry, checked against the others), check the symmetric-allocation rule (DESIGN
 * section 3), report the largest peak, and predict the times with the timing model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn_choice.h"
#include "fingerprint.h"
#include "flops_nemo.h"
#include "gpu_profiles.h"
#include "host_memory.h"
#include "knobs.h"
#include "registry.h"
#include "sim/sim_symmetry.h"
#include "sim/sim_world.h"
#include "sim/timeline.h"
#include "sim_layer.h"
#include "tp_compose.h"

const cpb_knob cpb_sim_knobs[] = {
    {.name = "host_ram_bytes", .type = CPB_KNOB_BYTES, .def = "0", .arg = "BYTES",
     .help = "host memory of a node (2T; default: the profile's)", .option = "--host-ram",
     .points = CPB_KNOB_TIMING_MODEL_POINTS, .setup = 1},
    {NULL}};

int cpb_sim_profile(const cpb_sim_opts *o, const cpb_problem *p, cpb_gpu_profile *prof, char *err, size_t n)
{
    CPB_TRY(cpb_gpu_profile_get(o->gpu, prof, err, n));
    if (o->calibration && o->calibration[0]) CPB_TRY(cpb_gpu_profile_calibrate(prof, o->calibration, err, n));
    if (o->gpus_per_node < 0) {
        snprintf(err, n, "gpus per node must be positive, got %d", o->gpus_per_node);
        return CPB_ERR_INVALID;
    }
    const int64_t host_ram = p ? cpb_knob_int(p, "host_ram_bytes") : 0;
    if (host_ram < 0) {
        snprintf(err, n, "--host-ram must be positive, got %lld bytes", (long long)host_ram);
        return CPB_ERR_INVALID;
    }
    if (o->gpus_per_node > 0) prof->hw.gpus_per_node = o->gpus_per_node;
    if (host_ram > 0) prof->host_node_bytes = host_ram;
    return CPB_OK;
}

/* one rank's trial on its own sim context; the trace goes to the shared world */
static int run_rank(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o, cpb_sim_world *w,
                    int rank, int64_t cap, int64_t host_cap, cpb_row *r)
{
    cpb_ctx_opts co = {0};
    co.sim_rank = rank;
    co.sim_world = p->C;
    co.capacity = cap;
    co.host_capacity = host_cap;
    co.race_check = !o->no_race_check;
    co.backend_shared = w;
    co.no_repeat = o->no_repeat;
    cpb_ctx *ctx = NULL;
    char err[1024] = "";
    int rc = cpb_ctx_create(&cpb_backend_sim, &co, &ctx, err, sizeof err);
    if (rc != CPB_OK) {
        cpb_row_set_status(r, rc, err);
        return rc;
    }
    cpb_layer L;
    /* seed: the inputs' values do not matter without data; 1 as the CLI's default */
    rc = cpb_trial_setup(ctx, m, p, NULL, 1, &L);
    if (rc == CPB_OK) {
        cpb_reset_stats(ctx);
        rc = cpb_trial_step(ctx, m, &L, r);
        /* the fingerprint is accounted as on every backend (in the set-up phase, untimed);
         * without data its norms are 0 */
        double norms[CPB_FP_COUNT] = {NAN, NAN, NAN};
        if (rc == CPB_OK) cpb_fingerprint(ctx, &L, norms);
        cpb_clear_error(ctx);
        r->y_norm = norms[CPB_FP_Y];
        r->dx_norm = norms[CPB_FP_DX];
        r->dw_norm = norms[CPB_FP_DW];
    } else {
        cpb_row_set_status(r, rc, cpb_errmsg(ctx));
        cpb_trial_memory(ctx, r);
    }
    cpb_ctx_destroy(ctx);
    return rc;
}

static void fill_times(cpb_row *r, const cpb_problem *p, const cpb_sim_timing *t)
{
    r->fwd_s = t->fwd_s;
    r->bwd_s = t->bwd_s;
    r->step_s = t->step_s;
    r->nstreams = t->nstreams;
    memcpy(r->stream_names, t->stream_names, sizeof r->stream_names);
    memcpy(r->stream_busy_s, t->busy_s, sizeof r->stream_busy_s);
    r->comm_bytes = t->comm_bytes;
    r->pcie_bytes = t->pcie_bytes;
    r->crit_compute_s = t->crit_s[CPB_SIM_CRIT_COMPUTE];
    r->crit_comm_s = t->crit_s[CPB_SIM_CRIT_COMM];
    r->crit_host_s = t->crit_s[CPB_SIM_CRIT_HOST];
    memcpy(r->crit_coll_s, t->crit_coll_s, sizeof r->crit_coll_s);
    r->replayed_ranks = t->replayed_ranks;
    double fwd, bwd;
    cpb_layer_model_flops(p, &fwd, &bwd);
    cpb_row_rates(r, fwd + bwd, cpb_layer_megatron_flops(p), cpb_layer_nemo_flops(p));
}

/* The simulator keeps every rank's trace, so its memory grows with the world (about as C^2
 * for a ring): after `done` of C ranks, 1 (with the message) when the rest would not fit
 * the memory this machine had available at the start. */
static int too_big_for_host(int C, int done, int64_t rss0, int64_t avail0, char *err, size_t len)
{
    if (rss0 < 0 || avail0 < 0 || done >= C) return 0;
    const int64_t used = cpb_host_rss_bytes() - rss0;
    if (used <= 0) return 0;
    const double need = (double)used / done * C;
    if (need <= 0.9 * (double)avail0) return 0;
    snprintf(err, len, "simulator: a world of %d ranks would need about %.1f GiB of host memory here (%.1f MiB per rank "
             "after %d ranks), more than the %.1f GiB available: simulate fewer ranks (--gpus) or one per class of ranks alike (--sim-ranks symmetric)", C, need / 1073741824.0,
             (double)used / done / 1048576.0, done, (double)avail0 / 1073741824.0);
    return 1;
}

const char *cpb_sim_ranks_name(int ranks)
{
    switch (ranks) {
    case CPB_SIM_RANKS_EXACT: return "exact";
    case CPB_SIM_RANKS_SYMMETRIC: return "symmetric";
    default: return "auto";
    }
}

int cpb_sim_ranks_parse(const char *name)
{
    for (int k = CPB_SIM_RANKS_AUTO; k <= CPB_SIM_RANKS_SYMMETRIC; k++)
        if (strcmp(name, cpb_sim_ranks_name(k)) == 0) return k;
    return -1;
}

/* rank k's outcome as the row's (rk started as a copy of row: the point's columns agree) */
static void take_rank(cpb_row *row, const cpb_row *rk, int k)
{
    *row = *rk;
    row->worst_rank = k;
}

/* The ranks of one simulated point: which are recorded, and the outcome so far. */
typedef struct sim_run {
    const cpb_problem *p;
    const cpb_method *m;
    const cpb_sim_opts *o;
    cpb_sim_world *w;
    int64_t cap, host_cap;
    char *recorded;        /* [C] */
    int gpn;               /* GPUs per node of the profile */
    const cpb_sim_hw *hw;
    double op_diff;        /* the largest op-time difference of a sample (sim_symmetry.h) */
    cpb_row *row, *rk;
    int nrec;              /* ranks recorded */
    int64_t first_n;
    uint64_t first_hash;
    int exact;             /* every rank's trace is kept (not one per class of ranks alike) */
    int64_t rss0, avail0;  /* this process's resident bytes and the machine's available at the start */
    double t0;             /* when the point began (--timeout) */
    int64_t est_entries;   /* the work estimated after the first rank (sim_layer.h) */
    double est_seconds;
    int strict;            /* auto up to CPB_SIM_EXACT_MAX_RANKS: ranks are alike only when their
                              traces are moved copies exactly (op work included), and the compared
                              traces are kept, so a fallback to every rank records nothing again */
    char fallback[256];    /* why every rank was replayed where one per class was asked for */
} sim_run;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* the ranks a point records and replays under mode (the symmetric mode: its first period
 * and the samples of try_period; exact: every rank, twice over) */
static int symmetric_mode(int C, int mode)
{
    if (mode == CPB_SIM_RANKS_AUTO) return C >= CPB_SIM_SYMMETRIC_MIN_RANKS;
    return mode == CPB_SIM_RANKS_SYMMETRIC;
}

static int64_t ranks_of_work(int C, int gpn, int mode)
{
    if (!symmetric_mode(C, mode)) return 2 * (int64_t)C;
    int periods[64];
    int np = cpb_sim_periods(C, gpn, periods, 64);
    const int P = np > 0 ? periods[0] : C;
    /* every rank recorded to be compared (auto up to CPB_SIM_EXACT_MAX_RANKS, symmetric up
     * to CPB_SIM_COMPARE_ALL_MAX_RANKS); else the representatives and the samples of the
     * other periods; P replayed */
    const int all = mode == CPB_SIM_RANKS_AUTO ? C <= CPB_SIM_EXACT_MAX_RANKS : C <= CPB_SIM_COMPARE_ALL_MAX_RANKS;
    return all ? (int64_t)C + P : 2 * (int64_t)P + 8;
}

/* after the first rank: the estimated work of the point; 1 (with the message) above the bound */
static int too_much_work(sim_run *s, int k, double rank_s, char *err, size_t len)
{
    const int64_t per_rank = sim_trace_len(&s->w->traces[k]), ranks = ranks_of_work(s->p->C, s->gpn, s->o->ranks);
    s->est_entries = per_rank * ranks;
    s->est_seconds = rank_s * (double)ranks;
    if (s->est_entries <= CPB_SIM_MAX_TRACE_ENTRIES) return 0;
    const int symmetric = symmetric_mode(s->p->C, s->o->ranks);
    snprintf(err, len, "simulator: this point would replay about %.3g trace entries (%lld per rank x %lld ranks "
             "recorded and replayed), more than the bound of %.3g: about %.0f s here. %s", (double)s->est_entries,
             (long long)per_rank, (long long)ranks, (double)CPB_SIM_MAX_TRACE_ENTRIES, s->est_seconds,
             symmetric ? "Simulate fewer ranks (--gpus)"
                       : "Use --sim-ranks symmetric (one rank per class of ranks alike) or simulate fewer ranks (--gpus)");
    return 1;
}

/* run rank k once (no-op when it ran); CPB_OK, or the trial's failure / a broken
 * symmetric-allocation rule with row's status set */
static int record(sim_run *s, int k)
{
    if (s->recorded[k]) return CPB_OK;
    s->recorded[k] = 1;
    cpb_row *row = s->row, *rk = s->rk;
    char err[1024];
    const int first = s->nrec++ == 0;
    *rk = *row;
    const double t_rank = now_s();
    int trc = run_rank(s->p, s->m, s->o, s->w, k, s->cap, s->host_cap, rk);
    if (trc == CPB_OK && first && too_much_work(s, k, now_s() - t_rank, err, sizeof err)) {
        cpb_row_set_status(row, CPB_ERR_UNSUPPORTED, err);
        return CPB_ERR_UNSUPPORTED;
    }
    if (trc == CPB_OK && (s->exact || s->strict) && too_big_for_host(s->p->C, s->nrec, s->rss0, s->avail0, err, sizeof err)) {
        cpb_row_set_status(row, CPB_ERR_NOMEM_HOST, err);
        return CPB_ERR_NOMEM_HOST;
    }
    if (trc == CPB_OK && s->o->timeout_s > 0 && now_s() - s->t0 > s->o->timeout_s) {
        /* the simulator's watchdog: a point that runs past --timeout stops with what it did */
        snprintf(err, sizeof err, "simulator: the point ran past --timeout %g s after %d ranks (estimated %.0f s in "
                 "all): give a larger --timeout, --sim-ranks symmetric or fewer GPUs (--gpus)", s->o->timeout_s,
                 s->nrec, s->est_seconds);
        cpb_row_set_status(row, CPB_ERR_UNSUPPORTED, err);
        return CPB_ERR_UNSUPPORTED;
    }
    if (trc != CPB_OK) {
        /* every rank makes the same allocations (DESIGN section 3): the first failure, an
         * OOM included, is the trial's result */
        take_rank(row, rk, k);
        snprintf(err, sizeof err, "rank %d: %s", k, rk->reason);
        cpb_row_set_status(row, trc, err);
        return trc;
    }
    if (first || rk->peak_bytes > row->peak_bytes) take_rank(row, rk, k);
    if (k == 0) {
        s->first_n = rk->n_allocs;
        s->first_hash = rk->alloc_hash;
    } else if (rk->n_allocs != s->first_n || rk->alloc_hash != s->first_hash) {
        snprintf(err, sizeof err,
                 "%s breaks the symmetric-allocation rule (DESIGN section 3): rank 0 makes %lld device "
                 "allocations (sequence hash %016llx), rank %d makes %lld (hash %016llx); every rank must "
                 "allocate the same sizes with the same tags in the same order",
                 s->m->name, (long long)s->first_n, (unsigned long long)s->first_hash, k, (long long)rk->n_allocs,
                 (unsigned long long)rk->alloc_hash);
        cpb_row_set_status(row, CPB_ERR_INVALID, err);
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

/* Try period P: record ranks 0 .. P-1 and compare the others with them: every one in auto
 * mode up to CPB_SIM_EXACT_MAX_RANKS ranks, in symmetric mode up to
 * CPB_SIM_COMPARE_ALL_MAX_RANKS; beyond, samples: every representative moved by one
 * period (K = C / P periods in the world), and the first and last moved by K/3, K/2,
 * 2K/3 and K-1 periods.  1 when each compared trace is its representative's moved (its op
 * times within CPB_SIM_ALIKE_OP_TOL), 0 when one differs, -1 when a rank's trial failed
 * (row says why). */
static int try_period(sim_run *s, int P)
{
    const int C = s->p->C, K = C / P, all = s->strict || C <= CPB_SIM_COMPARE_ALL_MAX_RANKS;
    for (int r = 0; r < P; r++)
        if (record(s, r) != CPB_OK) return -1;
    const int far[4] = {K / 3, K / 2, 2 * K / 3, K - 1};
    for (int k = 1; k < K; k++) {
        int some = 0;
        for (int j = 0; j < 4; j++) some |= far[j] == k;
        if (!all && k > 1 && !some) continue;
        for (int r = 0; r < P; r++) {
            if (!all && k > 1 && r != 0 && r != P - 1) continue;
            int img = r + k * P;
            /* The compared rank runs with the stream-race check, as every recorded rank does,
             * though its trace is only compared and dropped.  Alike traces do not imply the
             * same verdict: the comparison sees each entry's stream, events and work, the
             * race check each access's buffer and element range, and ranks whose traces are
             * moved copies may still read and write rank-dependent ranges of a buffer (a
             * rank's own slot of a gathered buffer), so one of them can race where its
             * representative does not.  Skipping the check here would check only the P
             * representatives of a symmetric point. */
            if (record(s, img) != CPB_OK) return -1;
            char why[200];
            double diff = 0;
            if (!cpb_sim_traces_alike(s->w, s->hw, r, img, &diff, why, sizeof why)) {
                snprintf(s->fallback, sizeof s->fallback, "with a period of %d ranks, %s", P, why);
                return 0;
            }
            if (diff > CPB_SIM_ALIKE_OP_TOL || (s->strict && diff > 0)) {
                snprintf(s->fallback, sizeof s->fallback, "with a period of %d ranks, rank %d's op times differ from rank "
                         "%d's by %.3g%% of the op time (%s)", P, img, r, 100 * diff, s->strict ? "auto keeps the "
                         "times of every rank exact up to 64 ranks: --sim-ranks symmetric takes such ranks as alike"
                         : "more than the tolerance of 2%");
                return 0;
            }
            if (diff > s->op_diff) s->op_diff = diff;
            if (s->strict) continue; /* kept: a fallback to every rank records nothing again */
            /* the compared trace was only for the comparison (recorded again if a larger
             * period makes its rank a representative) */
            cpb_sim_world_drop_trace(s->w, img);
            s->recorded[img] = 0;
        }
    }
    return 1;
}

/* Record the ranks the timing model needs and set the world's period: every rank, or one
 * per class of ranks alike by symmetry (sim_layer.h: cpb_sim_ranks). */
static void record_ranks(sim_run *s)
{
    const int C = s->p->C;
    s->strict = s->o->ranks == CPB_SIM_RANKS_AUTO && C <= CPB_SIM_EXACT_MAX_RANKS;
    if (symmetric_mode(C, s->o->ranks) && C > 1) {
        int periods[64];
        int np = cpb_sim_periods(C, s->gpn, periods, 64);
        /* under --tp the TP groups are blocks of tp adjacent ranks: only a move by a multiple
         * of tp maps them onto each other, so no shorter period can hold */
        const int tp = cpb_tp_degree(s->p);
        if (np == 0)
            snprintf(s->fallback, sizeof s->fallback, "no move of the world onto itself keeps every node whole (%d "
                     "ranks, %d per node: the last node is partial)", C, s->gpn);
        for (int i = 0; i < np; i++) {
            if (periods[i] % tp) continue;
            int ok = try_period(s, periods[i]);
            if (ok < 0) return;
            if (ok) {
                s->w->period = periods[i];
                s->fallback[0] = 0;
                return;
            }
        }
    }
    s->exact = 1;
    for (int k = 0; k < C; k++)
        if (record(s, k) != CPB_OK) return;
    s->w->period = C;
}

/* ---------------------------------------------------------------- the cache */

struct cpb_sim_cache {
    int n, cap, hits, misses;
    char **keys;
    cpb_row *rows;
};

cpb_sim_cache *cpb_sim_cache_new(void)
{
    return calloc(1, sizeof(cpb_sim_cache));
}

void cpb_sim_cache_free(cpb_sim_cache *c)
{
    if (!c) return;
    for (int i = 0; i < c->n; i++) free(c->keys[i]);
    free(c->keys);
    free(c->rows);
    free(c);
}

void cpb_sim_cache_counts(const cpb_sim_cache *c, int *hits, int *misses)
{
    *hits = c ? c->hits : 0;
    *misses = c ? c->misses : 0;
}

/* what a layer trial depends on: every field of the problem, every knob but those of the
 * whole-model scope only, and the options; NULL when it does not fit the buffer */
static char *cache_key(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o)
{
    char buf[4096];
    size_t n = (size_t)snprintf(buf, sizeof buf, "%s|%s|%lld|%lld|%d|%d|%d|%.17g|%d|%d|%s|%s|%d|%lld|%lld|%d|%d|%.17g|%d|%d",
                                m->name, p->model, (long long)p->S, (long long)p->D, p->H, p->G, p->d, p->rope_base, p->C,
                                (int)p->dtype, o->gpu ? o->gpu : "", o->calibration ? o->calibration : "",
                                o->gpus_per_node, (long long)o->mem_cap, (long long)o->host_mem_cap, o->no_race_check,
                                o->ranks, o->timeout_s, o->memory_only, o->no_repeat);
    for (int i = 0; i < p->knobs.n && n < sizeof buf; i++) {
        const cpb_knob_value *v = &p->knobs.v[i];
        int idx = cpb_knob_index(v->name);
        const cpb_knob *k = idx >= 0 ? cpb_knob_at(idx) : NULL;
        if (k && k->points == CPB_KNOB_MODEL_SCOPE_POINTS) continue; /* a whole-model part: not read here */
        n += (size_t)snprintf(buf + n, sizeof buf - n, "|%s=%lld:%s", v->name, (long long)v->i, v->s);
    }
    return n < sizeof buf ? strdup(buf) : NULL;
}

static int cache_find(const cpb_sim_cache *c, const char *key)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->keys[i], key) == 0) return i;
    return -1;
}

static void cache_put(cpb_sim_cache *c, char *key, const cpb_row *row)
{
    if (c->n == c->cap) {
        int nc = c->cap ? 2 * c->cap : 32;
        char **k = realloc(c->keys, sizeof *k * (size_t)nc);
        if (k) c->keys = k;
        cpb_row *r = realloc(c->rows, sizeof *r * (size_t)nc);
        if (r) c->rows = r;
        if (!k || !r) {
            free(key); /* no room: the trial is simply not shared */
            return;
        }
        c->cap = nc;
    }
    c->keys[c->n] = key;
    c->rows[c->n++] = *row;
}

static int sim_layer_run(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o, cpb_row *row);

int cpb_sim_layer(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o, cpb_row *row)
{
    if (!o || !o->cache || !p || !m) return sim_layer_run(p, m, o, row);
    char *key = cache_key(p, m, o);
    int i = key ? cache_find(o->cache, key) : -1;
    if (i >= 0) {
        free(key);
        o->cache->hits++;
        *row = o->cache->rows[i];
        return CPB_OK;
    }
    int rc = sim_layer_run(p, m, o, row);
    o->cache->misses++;
    if (rc == CPB_OK && key) cache_put(o->cache, key, row);
    else free(key);
    return rc;
}

static int sim_layer_run(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o, cpb_row *row)
{
    cpb_sim_opts defaults = {0};
    if (!o) o = &defaults;
    cpb_gpu_profile prof;
    char err[1024] = "";
    int rc = cpb_sim_profile(o, p, &prof, err, sizeof err);
    if (rc == CPB_OK && (!p || !m || p->C <= 0)) {
        snprintf(err, sizeof err, "simulator: a problem with C >= 1 ranks and a method are required");
        rc = CPB_ERR_INVALID;
    }
    if (!p) {
        cpb_row_init(row);
        cpb_row_set_status(row, rc, err);
        return rc;
    }
    cpb_row_point(row, m, p, &cpb_backend_sim, rc == CPB_OK ? prof.name : (o->gpu ? o->gpu : ""), "layer");
    if (rc != CPB_OK) {
        cpb_row_set_status(row, rc, err);
        return rc;
    }
    row->peak_tflops = prof.hw.peak_flops / 1e12; /* the profile's (calibrated) peak, for the MFUs */
    /* a method's refusal is a result, not bad input */
    if (cpb_method_refusal(m, p, err, sizeof err) != CPB_OK || cpb_attn_gpu_refusal(p, &prof, err, sizeof err) != CPB_OK) {
        cpb_row_set_status(row, CPB_ERR_REFUSED, err);
        return CPB_OK;
    }
    cpb_sim_world *w = NULL;
    if (cpb_sim_world_create(p->C, &w) != CPB_OK) {
        snprintf(err, sizeof err, "simulator: out of host memory for a world of %d ranks", p->C);
        cpb_row_set_status(row, CPB_ERR_NOMEM_HOST, err);
        return CPB_OK;
    }
    int64_t cap = o->mem_cap > 0 ? o->mem_cap : cpb_gpu_profile_usable(&prof);
    int64_t host_cap = o->host_mem_cap > 0 ? o->host_mem_cap : cpb_gpu_profile_host_per_gpu(&prof);
    cpb_row *rk = malloc(sizeof *rk);
    if (!rk) {
        cpb_sim_world_destroy(w);
        cpb_row_set_status(row, CPB_ERR_NOMEM_HOST, "simulator: out of host memory");
        return CPB_OK;
    }
    sim_run s = {p, m, o, w, cap, host_cap, calloc((size_t)p->C, 1), prof.hw.gpus_per_node, &prof.hw, 0, row, rk, 0, 0, 0,
                 0, cpb_host_rss_bytes(), cpb_host_available_bytes(), now_s(), 0, 0, 0, ""};
    if (!s.recorded) {
        free(rk);
        cpb_sim_world_destroy(w);
        cpb_row_set_status(row, CPB_ERR_NOMEM_HOST, "simulator: out of host memory");
        return CPB_OK;
    }
    if (o->memory_only) {
        /* rank 0 alone: its memory is every rank's (sim_layer.h), and no time is modelled;
         * memory_only 2: the last rank too, for a tighter bound */
        const int last = o->memory_only == 2 ? p->C - 1 : 0;
        if (record(&s, 0) == CPB_OK && (last == 0 || record(&s, last) == CPB_OK)) {
            const sim_trace *t0 = &w->traces[0];
            row->nstreams = t0->nstreams;
            memcpy(row->stream_names, t0->stream_names, sizeof row->stream_names);
            /* the times: lower bounds from rank 0's streams (timeline.h), so the rates are
             * upper bounds; what plan prunes by.  Each rank's bound is a bound of the
             * replay's forward and step: the larger of the two ranks' */
            double fwd, step;
            cpb_sim_lower_bound(w, &prof.hw, 0, &fwd, &step);
            if (last > 0) {
                double fl, sl;
                cpb_sim_lower_bound(w, &prof.hw, last, &fl, &sl);
                if (fl > fwd) fwd = fl;
                if (sl > step) step = sl;
            }
            row->fwd_s = fwd;
            row->bwd_s = step - fwd;
            row->step_s = step;
            double ff, fb;
            cpb_layer_model_flops(p, &ff, &fb);
            cpb_row_rates(row, ff + fb, cpb_layer_megatron_flops(p), cpb_layer_nemo_flops(p));
        }
        free(s.recorded);
        free(rk);
        cpb_sim_world_destroy(w);
        return CPB_OK;
    }
    record_ranks(&s);
    row->sym_op_diff = s.op_diff;
    row->peak_tflops = prof.hw.peak_flops / 1e12;
    if (row->code == CPB_OK) {
        cpb_sim_timing t;
        if (o->timeout_s > 0) w->deadline = s.t0 + o->timeout_s; /* the replay is bounded too */
        int trc = cpb_sim_timeline(w, &prof.hw, &t, err, sizeof err);
        if (trc == CPB_ERR_UNSUPPORTED && w->timed_out) {
            snprintf(err, sizeof err, "simulator: the point ran past --timeout %g s in the timing model's replay of %d "
                     "ranks (%d recorded): give a larger --timeout, or fewer GPUs (--gpus)", o->timeout_s, w->period,
                     s.nrec);
            cpb_row_set_status(row, CPB_ERR_UNSUPPORTED, err);
            trc = CPB_OK; /* the row says why */
        } else if (trc == CPB_ERR_UNSUPPORTED && w->period < p->C) {
            /* the replay of one rank per class cannot tell some groups apart: every rank */
            snprintf(s.fallback, sizeof s.fallback, "%s", err);
            s.exact = 1;
            for (int k = 0; k < p->C && row->code == CPB_OK; k++) record(&s, k);
            w->period = p->C;
            row->sym_op_diff = 0;
            if (row->code == CPB_OK) trc = cpb_sim_timeline(w, &prof.hw, &t, err, sizeof err);
        }
        if (row->code != CPB_OK) {
            /* a rank recorded for the fallback failed: row says why */
        } else if (trc != CPB_OK) {
            char msg[1100];
            snprintf(msg, sizeof msg, "%s: %s", m->name, err);
            cpb_row_set_status(row, trc, msg);
        } else {
            fill_times(row, p, &t);
        }
    }
    cpb_attn_row_estimates(row, &prof); /* what the prediction took from estimates */
    snprintf(row->sym_fallback, sizeof row->sym_fallback, "%s", w->period == p->C ? s.fallback : "");
    free(s.recorded);
    free(rk);
    cpb_sim_world_destroy(w);
    return CPB_OK;
}

int cpb_sim_estimate(const cpb_problem *p, const cpb_method *m, const cpb_sim_opts *o, int64_t *entries,
                     double *seconds, char *err, size_t err_len)
{
    cpb_sim_opts defaults = {0};
    if (!o) o = &defaults;
    *entries = 0;
    *seconds = 0;
    cpb_gpu_profile prof;
    int rc = cpb_sim_profile(o, p, &prof, err, err_len);
    if (rc != CPB_OK) return rc;
    if (cpb_method_refusal(m, p, err, err_len) != CPB_OK) return CPB_ERR_REFUSED;
    cpb_sim_world *w = NULL;
    cpb_row *row = malloc(sizeof *row), *rk = malloc(sizeof *rk);
    char *recorded = calloc((size_t)p->C, 1);
    if (!row || !rk || !recorded || cpb_sim_world_create(p->C, &w) != CPB_OK) {
        free(row);
        free(rk);
        free(recorded);
        snprintf(err, err_len, "simulator: out of host memory for a world of %d ranks", p->C);
        return CPB_ERR_NOMEM_HOST;
    }
    cpb_row_point(row, m, p, &cpb_backend_sim, prof.name, "layer");
    cpb_sim_opts probe = *o;
    probe.timeout_s = 0;
    const int64_t cap = o->mem_cap > 0 ? o->mem_cap : cpb_gpu_profile_usable(&prof);
    const int64_t host_cap = o->host_mem_cap > 0 ? o->host_mem_cap : cpb_gpu_profile_host_per_gpu(&prof);
    sim_run s = {p, m, &probe, w, cap, host_cap, recorded, prof.hw.gpus_per_node, &prof.hw, 0, row, rk, 0, 0, 0,
                 0, -1, -1, now_s(), 0, 0, 0, ""};
    rc = record(&s, 0);
    if (rc == CPB_OK || rc == CPB_ERR_UNSUPPORTED) { /* the work is known: the caller weighs it */
        *entries = s.est_entries;
        *seconds = s.est_seconds;
        rc = CPB_OK;
    } else {
        snprintf(err, err_len, "%s", row->reason);
    }
    cpb_sim_world_destroy(w);
    free(recorded);
    free(rk);
    free(row);
    return rc;
}
