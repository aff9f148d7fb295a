/* verify_gather.c — bring every rank's results to rank 0 in global order, and the memory
 * of the worst rank.  Each rank adds its piece into a zeroed global-shaped array and the
 * arrays are summed on rank 0: tokens (held by exactly one rank) land in place, dW partial
 * sums add up, and weight shards land in their heads' columns (Wq, Wk, Wv) or rows (Wo). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ranks.h"
#include "verify.h"

const char *const cpb_vt_names[CPB_VT_COUNT] = {"y", "dx", "dwq", "dwk", "dwv", "dwo"};

void cpb_verify_counts(const cpb_problem *p, int64_t n[CPB_VT_COUNT])
{
    const int64_t HD = (int64_t)p->H * p->d, GD = (int64_t)p->G * p->d;
    n[CPB_VT_Y] = n[CPB_VT_DX] = p->S * p->D;
    n[CPB_VT_DWQ] = p->D * HD;
    n[CPB_VT_DWK] = n[CPB_VT_DWV] = p->D * GD;
    n[CPB_VT_DWO] = HD * p->D;
}

int cpb_verify_results_alloc(const cpb_problem *p, cpb_verify_results *r)
{
    memset(r, 0, sizeof *r);
    cpb_verify_counts(p, r->n);
    for (int t = 0; t < CPB_VT_COUNT; t++) {
        r->t[t] = calloc((size_t)r->n[t], sizeof(double));
        if (!r->t[t]) {
            cpb_verify_results_free(r);
            return CPB_ERR_NOMEM_HOST;
        }
    }
    return CPB_OK;
}

void cpb_verify_results_free(cpb_verify_results *r)
{
    for (int t = 0; t < CPB_VT_COUNT; t++) {
        free(r->t[t]);
        r->t[t] = NULL;
    }
}

/* rows of a local [s][D] array into a global [S][D] at the layer's token positions; counts
 * how often each token is held (the layout must be a partition of the sequence) */
static void place_tokens(const cpb_layer *L, const float *local, double *global, int *held)
{
    const int64_t D = L->p.D;
    int64_t row = 0;
    for (int i = 0; i < L->tokens.n; i++)
        for (int64_t j = 0; j < L->tokens.len[i]; j++, row++) {
            int64_t pos = L->tokens.pos0[i] + j;
            if (held) held[pos]++;
            for (int64_t c = 0; c < D; c++) global[pos * D + c] += local[row * D + c];
        }
}

/* local [D][n*d] columns of heads[] into global [D][total*d] */
static void place_cols(const cpb_layer *L, const float *local, double *global, int total, const int *heads, int n)
{
    const int64_t D = L->p.D, d = L->p.d, gld = (int64_t)total * d, lld = (int64_t)n * d;
    for (int64_t r = 0; r < D; r++)
        for (int i = 0; i < n; i++)
            for (int64_t c = 0; c < d; c++) global[r * gld + heads[i] * d + c] += local[r * lld + i * d + c];
}

/* local [n*d][D] rows of heads[] into global [H*d][D] */
static void place_rows(const cpb_layer *L, const float *local, double *global, const int *heads, int n)
{
    const int64_t D = L->p.D, d = L->p.d;
    for (int i = 0; i < n; i++)
        for (int64_t e = 0; e < d * D; e++) global[heads[i] * d * D + e] += local[i * d * D + e];
}

/* the rank with the largest value, and that value (ties: lowest rank) */
static void worst(int64_t mine, int64_t *value, int *rank)
{
    *value = (int64_t)cpb_agree_maxloc((double)mine, rank);
}

static void gather_memory(const cpb_row *tr, cpb_verify_results *out)
{
    worst(tr->peak_bytes, &out->peak, &out->peak_rank);
    worst(tr->host_peak_bytes, &out->host_peak, &out->host_rank);
    out->intermediate = tr->intermediate_bytes;
    cpb_agree_max_i64(&out->intermediate, 1);
    memcpy(out->dev_tag_peak, tr->tag_peak, sizeof out->dev_tag_peak);
    cpb_agree_max_i64(out->dev_tag_peak, CPB_TAG_COUNT);
    memcpy(out->dev_at_peak, tr->at_peak_bytes, sizeof out->dev_at_peak);
    memcpy(out->host_at_peak, tr->host_at_peak, sizeof out->host_at_peak);
    cpb_agree_bcast(out->dev_at_peak, sizeof out->dev_at_peak, out->peak_rank);
    cpb_agree_bcast(out->host_at_peak, sizeof out->host_at_peak, out->host_rank);
}

/* download tensor t of this rank and add it into `global` (zeroed, global shape) */
static int place(cpb_ctx *ctx, const cpb_layer *L, int t, float *local, double *global, int *held)
{
    const cpb_problem *p = &L->p;
    const cpb_shard *sh = &L->shard;
    cpb_buf *bufs[CPB_VT_COUNT] = {L->y, L->dx, L->dwq, L->dwk, L->dwv, L->dwo};
    CPB_TRY(cpb_download(ctx, cpb_whole(bufs[t]), local));
    switch (t) {
    case CPB_VT_Y: place_tokens(L, local, global, held); break;
    case CPB_VT_DX: place_tokens(L, local, global, NULL); break;
    case CPB_VT_DWQ: place_cols(L, local, global, p->H, sh->q, sh->nq); break;
    case CPB_VT_DWK:
    case CPB_VT_DWV: place_cols(L, local, global, p->G, sh->kv, sh->nkv); break;
    default: place_rows(L, local, global, sh->q, sh->nq); break;
    }
    return CPB_OK;
}

int cpb_verify_gather(cpb_ctx *ctx, const cpb_layer *L, const cpb_row *tr, cpb_verify_results *out,
                      char *err, size_t err_len)
{
    const cpb_problem *p = &L->p;
    const int rank = cpb_ranks_rank();
    int64_t n[CPB_VT_COUNT], biggest = 0, local_n = L->s * p->D;
    cpb_verify_counts(p, n);
    for (int t = 0; t < CPB_VT_COUNT; t++) biggest = n[t] > biggest ? n[t] : biggest;
    const int64_t wsizes[] = {L->dwq->nelem, L->dwk->nelem, L->dwv->nelem, L->dwo->nelem};
    for (int i = 0; i < 4; i++) local_n = wsizes[i] > local_n ? wsizes[i] : local_n;
    /* one tensor at a time, so a rank holds one global-shaped array, not six */
    double *global = malloc(sizeof(double) * (size_t)biggest);
    float *local = malloc(sizeof(float) * (size_t)local_n);
    int *held = calloc((size_t)p->S, sizeof(int));
    int *held_all = rank == 0 ? calloc((size_t)p->S, sizeof(int)) : NULL;
    int rc = global && local && held && (rank != 0 || held_all) ? CPB_OK : CPB_ERR_NOMEM_HOST;
    if (rc != CPB_OK) snprintf(err, err_len, "verify: out of host memory gathering results on rank %d", rank);
    for (int t = 0; t < CPB_VT_COUNT; t++) {
        if (rc == CPB_OK) {
            memset(global, 0, sizeof(double) * (size_t)n[t]);
            rc = place(ctx, L, t, local, global, held);
            if (rc != CPB_OK)
                snprintf(err, err_len, "verify: downloading %s on rank %d: %s", cpb_vt_names[t], rank, cpb_errmsg(ctx));
        }
        /* every rank must take part in the reduction, so agree on failure first */
        int any = cpb_agree_status(rc, NULL, 0);
        if (any != CPB_OK) {
            if (rc == CPB_OK) snprintf(err, err_len, "verify: another rank failed to gather its results");
            rc = any;
            break;
        }
        /* MPI counts are int: reduce in pieces */
        for (int64_t off = 0; off < n[t]; off += 1 << 26) {
            int cnt = (int)(n[t] - off < (1 << 26) ? n[t] - off : (1 << 26));
            MPI_Reduce(global + off, rank == 0 ? out->t[t] + off : NULL, cnt, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        }
    }
    if (rc == CPB_OK) {
        MPI_Reduce(held, held_all, (int)p->S, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        for (int64_t i = 0; rank == 0 && i < p->S; i++)
            if (held_all[i] != 1) {
                snprintf(err, err_len, "the token layout holds global token %lld %d times (each token must be on "
                         "exactly one rank): fix the method's token_layout", (long long)i, held_all[i]);
                rc = CPB_ERR_INVALID;
                break;
            }
        rc = cpb_agree_bcast_int(rc);
        if (rc != CPB_OK && rank != 0) snprintf(err, err_len, "the token layout check failed on rank 0");
    }
    if (rc == CPB_OK) gather_memory(tr, out);
    free(held_all);
    free(held);
    free(local);
    free(global);
    return rc;
}
