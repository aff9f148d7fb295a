/* sim_vs_cpu.c — the simulator's allocator agrees with the CPU backend, byte for byte.
 *
 * Under mpirun -np C: every registered method (those that accept the shapes) runs a small
 * layer trial on the cpu backend (real math over MPI ranks) and, on rank 0, on the
 * simulator (no data, C ranks replayed in one process).  Same schedule, same calls: the
 * device peak, the intermediate peak, the forward and backward peaks, the host peak and
 * the number of allocations must be equal (the largest over the ranks on cpu, the worst
 * rank on sim).  Each comparison runs twice: --attn own in fp32 and --attn cudnn in bf16
 * (the attention implementation is an accounting input: cuDNN's workspace bound and the
 * temporaries of its adapted calls are tracked on every backend), and the implementation
 * the calls used must agree too.  Exit 0 when all agree, 1 otherwise (also when no
 * comparison routed a call to cuDNN).  --quick: the first shape only.  On an odd number of
 * ranks it takes its own shapes (odd_shapes).  The methods are the registry's, each in
 * every combination of its choice knobs (its schedules), so a new method or schedule is
 * compared with no line here (rule 1 of runtime/cpb_method.h's checklist).  --tp N: every
 * method under `--tp N` (driver/tp_compose.h: the TP wrapper's gathers and partial sums are
 * traced alike too). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_backend.h"
#include "registry.h"
#include "cpb_method.h"
#include "cpb_presets.h"
#include "knobs.h"
#include "ranks.h"
#include "sim_layer.h"
#include "tp_compose.h"
#include "trial.h"

typedef struct shape {
    int H, G;
    int64_t S_per_rank;
} shape;

/* GQA with G < C, G = C and G > C where C allows; S a multiple of what layouts need.  The
 * tiny preset's H*d (8 x 16) is not its D (64), so the projections are not square. */
static const shape shapes[] = {{8, 2, 64}, {8, 4, 128}, {8, 8, 64}};
/* an odd world (3 ranks) takes none of the heads above for the head-sharded methods: these
 * give it GQA ratios 2, 3 and 3 with G > C, G = C and G < C, and per-rank lengths that are
 * not powers of two */
static const shape odd_shapes[] = {{12, 6, 40}, {9, 3, 24}, {3, 1, 56}};
_Static_assert(sizeof odd_shapes == sizeof shapes, "--quick and the loop count shapes[] for both lists");

/* the combinations of m's choice knobs (the product of their choice counts) */
static int n_variants(const cpb_method *m)
{
    int n = 1;
    for (const cpb_knob *k = m->knobs; k && k->name; k++)
        if (k->type == CPB_KNOB_CHOICE) {
            int c = 1;
            for (const char *q = k->choices; *q; q++) c += *q == '|';
            n *= c;
        }
    return n;
}

/* p's knobs for variant vi of m: its choice knobs set by the digits of vi (one per knob, in
 * table order), token counts (a chunk length) to a quarter of the sequence, every other
 * knob its default; the choices named in `name` (" fpdt_impl=pipelined ...").  Not CPB_OK
 * when a knob's check refuses the combination at p's shape. */
static int variant_problem(const cpb_method *m, int vi, cpb_problem *p, char *name, size_t len)
{
    cpb_knobs given = {0};
    name[0] = 0;
    for (const cpb_knob *k = m->knobs; k && k->name; k++) {
        if (k->type == CPB_KNOB_TOKENS) cpb_knobs_set_int(&given, k->name, p->S / 4);
        if (k->type != CPB_KNOB_CHOICE) continue;
        int c = 1;
        for (const char *q = k->choices; *q; q++) c += *q == '|';
        int pick = vi % c;
        vi /= c;
        const char *q = k->choices;
        for (int j = 0; j < pick; j++) q = strchr(q, '|') + 1;
        char v[64];
        snprintf(v, sizeof v, "%.*s", (int)strcspn(q, "|"), q);
        cpb_knobs_set_str(&given, k->name, v);
        size_t n = strlen(name);
        snprintf(name + n, len - n, " %s=%s", k->name, v);
    }
    char err[512];
    return cpb_knobs_apply(m, &given, p, err, sizeof err);
}

enum { N_STATS = 7 };

static void stats_of(const cpb_row *r, int64_t v[N_STATS])
{
    v[0] = r->peak_bytes;
    v[1] = r->intermediate_bytes;
    v[2] = r->fwd_peak_bytes;
    v[3] = r->bwd_peak_bytes;
    v[4] = r->host_peak_bytes;
    v[5] = r->n_allocs;
    v[6] = r->code;
}

static const char *const stat_names[N_STATS] = {"peak", "intermediate", "fwd peak", "bwd peak", "host peak",
                                                "allocations", "status"};

int main(int argc, char **argv)
{
    /* `--quick`: the first shape only (keeps the sanitizer pass of the suite short) */
    size_t nshapes = sizeof shapes / sizeof shapes[0];
    int tp = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) nshapes = 1;
        else if (strcmp(argv[i], "--tp") == 0 && i + 1 < argc) tp = atoi(argv[++i]);
    }
    /* this test's own main owns MPI, as cpbench's main does */
    int provided = 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "sim_vs_cpu: MPI_Init_thread failed\n");
        return 1;
    }
    cpb_ranks_begin(1);
    cpb_ctx_opts co = {0};
        co.use_mpi = 1;
    co.race_check = 1;
    cpb_ctx *ctx = NULL;
    char err[1024];
    if (cpb_ctx_create(&cpb_backend_cpu, &co, &ctx, err, sizeof err) != CPB_OK) {
        fprintf(stderr, "sim_vs_cpu: %s\n", err);
        return 1;
    }
    const int C = cpb_world_size(ctx), rank = cpb_rank(ctx);
    const shape *shp = (C / tp) % 2 ? odd_shapes : shapes; /* an odd CP group takes the odd shapes */
    int failures = 0, compared = 0, with_cudnn = 0;
    for (size_t si = 0; si < nshapes; si++)
        for (int ai = 0; ai < 2; ai++) {
        const char *attn = ai ? "cudnn" : "own";
        for (int mi = 0; mi < cpb_method_count(); mi++)
        /* every combination of the method's choice knobs (fpdt's two schedules and the
         * pipelined one's two backwards, upipe's o|delta backward, ...): each is a schedule
         * of its own */
        for (int vi = 0; vi < n_variants(cpb_method_at(mi)); vi++) {
            const cpb_method *m = cpb_method_at(mi);
            cpb_problem p;
            memset(&p, 0, sizeof p);
            cpb_preset_find("tiny", &p);
            p.H = shp[si].H;
            p.G = shp[si].G;
            p.C = C;
            p.S = shp[si].S_per_rank * C;
            p.dtype = ai ? CPB_BF16 : CPB_FP32; /* cuDNN serves bf16 only */
            char variant[256] = "", why[512];
            if (variant_problem(m, vi, &p, variant, sizeof variant) != CPB_OK) continue; /* a knob refuses it */
            cpb_knobs_set_str(&p.knobs, "attn", attn);
            cpb_knobs_set_int(&p.knobs, "tp", tp);
            if (cpb_tp_check(m, &p, why, sizeof why) != CPB_OK) continue; /* m's check, under --tp */
            /* cpu: the real trial, largest values over the ranks */
            cpb_layer L;
            static cpb_row tr, sr;
            cpb_row_init(&tr);
            int rc = cpb_trial_setup(ctx, m, &p, NULL, 7, &L);
            if (rc == CPB_OK) {
                cpb_reset_stats(ctx);
                rc = cpb_trial_step(ctx, m, &L, &tr);
            } else {
                cpb_row_set_status(&tr, rc, cpb_errmsg(ctx));
            }
            cpb_free_all(ctx);
            cpb_clear_error(ctx);
            int64_t cpu[N_STATS], cpu_max[N_STATS];
            stats_of(&tr, cpu);
            MPI_Allreduce(cpu, cpu_max, N_STATS, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
            if (rank != 0) continue;
            /* sim: the same problem, every rank replayed here */
            cpb_sim_opts so = {0};
            if (cpb_sim_layer(&p, m, &so, &sr) != CPB_OK) {
                printf("FAIL %-8s H %d G %d C %d: simulator refused: %s\n", m->name, p.H, p.G, C, sr.reason);
                failures++;
                continue;
            }
            int64_t sim[N_STATS];
            stats_of(&sr, sim);
            int ok = 1;
            for (int k = 0; k < N_STATS; k++)
                if (sim[k] != cpu_max[k]) ok = 0;
            if (strcmp(tr.attn_impl, sr.attn_impl) != 0) {
                ok = 0;
                printf("     attention: cpu ran %s (%s), sim %s (%s)\n", tr.attn_impl, tr.attn_calls, sr.attn_impl,
                       sr.attn_calls);
            }
            with_cudnn += strcmp(sr.attn_impl, "cudnn") == 0 || strcmp(sr.attn_impl, "mixed") == 0;
            compared++;
            printf("%s %-8s%s --attn %s (%s) H %d G %d C %d S %lld: peak cpu %lld sim %lld, intermediate %lld/%lld, host %lld/%lld\n",
                   ok ? "ok  " : "FAIL", m->name, variant, attn, sr.attn_impl, p.H, p.G, C, (long long)p.S, (long long)cpu_max[0], (long long)sim[0],
                   (long long)cpu_max[1], (long long)sim[1], (long long)cpu_max[4], (long long)sim[4]);
            if (!ok) {
                failures++;
                for (int k = 0; k < N_STATS; k++)
                    if (sim[k] != cpu_max[k])
                        printf("     %s differs: cpu %lld, sim %lld\n", stat_names[k], (long long)cpu_max[k],
                               (long long)sim[k]);
                if (tr.code) printf("     cpu: %s\n", tr.reason);
                if (sr.code) printf("     sim: %s\n", sr.reason);
            }
        }
    }
    if (rank == 0) {
        printf("sim_vs_cpu: %d comparisons on %d ranks (%d with calls on cuDNN), %d failed\n", compared, C, with_cudnn,
               failures);
        if (!with_cudnn) {
            printf("sim_vs_cpu: no comparison routed an attention call to cuDNN\n");
            failures++;
        }
    }
    MPI_Bcast(&failures, 1, MPI_INT, 0, MPI_COMM_WORLD);
    cpb_ctx_destroy(ctx);
    int rc = failures || (rank == 0 && compared == 0) ? 1 : 0;
    MPI_Finalize();
    return rc;
}
