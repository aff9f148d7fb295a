/* fingerprint.c — the norms of a trial's outputs and their comparison across methods
 * (fingerprint.h). */
#include "fingerprint.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_backend.h"
#include "ranks.h"

/* this rank's dW piece of tensor t into its heads' places of the zeroed global `full` */
static int place(cpb_ctx *ctx, const cpb_layer *L, int t, cpb_buf *full)
{
    const cpb_problem *p = &L->p;
    const cpb_shard *sh = &L->shard;
    const int64_t D = p->D, d = p->d;
    const int st = CPB_STREAM_COMPUTE;
    if (t == 3) { /* Wo [H*d][D]: the rows of the query heads */
        for (int i = 0; i < sh->nq; i++)
            CPB_TRY(cpb_copy(ctx, st, cpb_span(full, (int64_t)sh->q[i] * d * D, d * D),
                             cpb_span(L->dwo, (int64_t)i * d * D, d * D)));
        return CPB_OK;
    }
    /* Wq [D][H*d], Wk, Wv [D][G*d]: the columns of the query / kv heads */
    cpb_buf *local = t == 0 ? L->dwq : t == 1 ? L->dwk : L->dwv;
    const int n = t == 0 ? sh->nq : sh->nkv, total = t == 0 ? p->H : p->G;
    const int *heads = t == 0 ? sh->q : sh->kv;
    for (int i = 0; i < n; i++)
        CPB_TRY(cpb_copy(ctx, st, cpb_mat(full, (int64_t)heads[i] * d, D, d, (int64_t)total * d),
                         cpb_mat(local, (int64_t)i * d, D, d, (int64_t)n * d)));
    return CPB_OK;
}

static int64_t round_up(int64_t n, int64_t m)
{
    return (n + m - 1) / m * m;
}

/* the three sums of squares into acc[0..2], summed over the ranks */
static int sums(cpb_ctx *ctx, const cpb_layer *L, cpb_buf *acc, cpb_buf *full, cpb_buf *slice)
{
    const cpb_problem *p = &L->p;
    const int st = CPB_STREAM_COMPUTE, C = cpb_world_size(ctx);
    cpb_group *w = cpb_world(ctx);
    CPB_TRY(cpb_fill(ctx, st, cpb_whole(acc), 0.0f));
    CPB_TRY(cpb_sumsq(ctx, st, cpb_whole(L->y), cpb_span(acc, CPB_FP_Y, 1), 0));
    CPB_TRY(cpb_sumsq(ctx, st, cpb_whole(L->dx), cpb_span(acc, CPB_FP_DX, 1), 0));
    for (int t = 0; t < 4; t++) {
        const int64_t n = p->D * (int64_t)(t == 1 || t == 2 ? p->G : p->H) * p->d, np = round_up(n, C);
        CPB_TRY(cpb_fill(ctx, st, cpb_span(full, 0, np), 0.0f));
        CPB_TRY(place(ctx, L, t, full));
        /* the sum over the ranks, each rank getting 1/C of it: partial sums add, shards
         * (zero elsewhere) land whole */
        CPB_TRY(cpb_reduce_scatter(ctx, st, w, cpb_span(full, 0, np), cpb_span(slice, 0, np / C)));
        CPB_TRY(cpb_sumsq(ctx, st, cpb_span(slice, 0, np / C), cpb_span(acc, CPB_FP_DW, 1), 1));
    }
    return cpb_all_reduce(ctx, st, w, cpb_whole(acc));
}

int cpb_fingerprint(cpb_ctx *ctx, const cpb_layer *L, double norms[CPB_FP_COUNT])
{
    for (int k = 0; k < CPB_FP_COUNT; k++) norms[k] = NAN;
    const cpb_problem *p = &L->p;
    const int C = cpb_world_size(ctx);
    const int64_t np = round_up(p->D * (int64_t)(p->H > p->G ? p->H : p->G) * p->d, C);
    cpb_buf *acc = NULL, *full = NULL, *slice = NULL;
    /* every buffer first, then one agreement: no rank enters a collective another left */
    int rc = cpb_alloc(ctx, &acc, CPB_FP_COUNT, CPB_FP32, CPB_TAG_TEMP, "fingerprint");
    if (rc == CPB_OK) rc = cpb_alloc(ctx, &full, np, CPB_FP32, CPB_TAG_TEMP, "fingerprint_dw");
    if (rc == CPB_OK) rc = cpb_alloc(ctx, &slice, np / C, CPB_FP32, CPB_TAG_TEMP, "fingerprint_dw_slice");
    /* the ranks of an MPI context are processes (a simulated world is one process) */
    if (ctx->opts.use_mpi) rc = cpb_agree_status(rc, NULL, 0);
    float v[CPB_FP_COUNT] = {0};
    if (rc == CPB_OK) rc = sums(ctx, L, acc, full, slice);
    if (rc == CPB_OK) rc = cpb_download(ctx, cpb_whole(acc), v);
    cpb_buf **bufs[] = {&slice, &full, &acc};
    for (int i = 0; i < 3; i++)
        if (*bufs[i]) cpb_free(ctx, CPB_STREAM_COMPUTE, bufs[i]);
    if (rc == CPB_OK)
        for (int k = 0; k < CPB_FP_COUNT; k++) norms[k] = sqrt((double)v[k]);
    return rc;
}

double cpb_fingerprint_bar(const char *dtype)
{
    return strcmp(dtype, "fp32") == 0 ? 1e-4 : 3e-2;
}

/* ---------------------------------------------------------------- comparison */

/* the point without the method: where every method's fingerprint must agree */
static int same_inputs(const cpb_row *a, const cpb_row *b)
{
#define SAME_S(f) (strcmp(a->f, b->f) == 0)
#define SAME(f) (a->f == b->f)
    return SAME_S(model) && SAME_S(backend) && SAME_S(gpu) && SAME_S(scope) && SAME_S(dtype) && SAME(world_size) &&
           SAME(seq_len) && SAME(hidden) && SAME(heads) && SAME(kv_heads) && SAME(head_dim) && SAME(seed);
#undef SAME_S
#undef SAME
}

static int usable(const cpb_row *r)
{
    return strcmp(r->status, "ok") == 0 && isfinite(r->y_norm) && isfinite(r->dx_norm) && isfinite(r->dw_norm);
}

static double norm_of(const cpb_row *r, int k)
{
    return k == CPB_FP_Y ? r->y_norm : k == CPB_FP_DX ? r->dx_norm : r->dw_norm;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int cpb_fingerprint_compare(const cpb_row *rows, int64_t n, FILE *out, int *compared)
{
    static const char *const names[CPB_FP_COUNT] = {"y_norm", "dx_norm", "dw_norm"};
    char *done = calloc((size_t)(n > 0 ? n : 1), 1);
    int64_t *members = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    double *vals = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    int bad_points = 0, points = 0;
    for (int64_t i = 0; done && members && vals && i < n; i++) {
        if (done[i] || !usable(&rows[i])) continue;
        int64_t m = 0;
        for (int64_t j = i; j < n; j++)
            if (!done[j] && usable(&rows[j]) && same_inputs(&rows[i], &rows[j])) {
                done[j] = 1;
                members[m++] = j;
            }
        int methods = 0, any_data = 0;
        for (int64_t a = 0; a < m; a++) {
            int first = 1;
            for (int64_t b = 0; b < a; b++) first &= strcmp(rows[members[a]].method, rows[members[b]].method) != 0;
            methods += first;
            for (int k = 0; k < CPB_FP_COUNT; k++) any_data |= norm_of(&rows[members[a]], k) != 0.0;
        }
        if (methods < 2 || !any_data) continue;
        points++;
        const double bar = cpb_fingerprint_bar(rows[i].dtype);
        int bad = 0;
        for (int k = 0; k < CPB_FP_COUNT; k++) {
            for (int64_t a = 0; a < m; a++) vals[a] = norm_of(&rows[members[a]], k);
            qsort(vals, (size_t)m, sizeof *vals, cmp_double);
            double med = m % 2 ? vals[m / 2] : 0.5 * (vals[m / 2 - 1] + vals[m / 2]);
            for (int64_t a = 0; a < m; a++) {
                const cpb_row *r = &rows[members[a]];
                double v = norm_of(r, k), rel = fabs(v - med) / (fabs(med) > 0 ? fabs(med) : 1.0);
                if (rel <= bar) continue;
                bad = 1;
                if (out)
                    fprintf(out, "# fingerprint: %s disagrees at %s S=%lld C=%d %s seed %lld: %s %.6g, the methods' "
                            "median %.6g (relative %.2e > bar %.0e)\n", r->method, r->model, (long long)r->seq_len,
                            r->world_size, r->dtype, (long long)r->seed, names[k], v, med, rel, bar);
            }
        }
        bad_points += bad;
    }
    free(done);
    free(members);
    free(vals);
    if (compared) *compared = points;
    return bad_points;
}
