/* upipe_plan.c — UPipe's constraints and GQA head schedule (see upipe.h). */
#include <stdio.h>

#include "upipe/upipe.h"

static int head_chunk(const cpb_problem *p)
{
    int64_t U = cpb_knob_int(p, "head_chunk");
    return U > 0 ? (int)U : p->C;
}

int upipe_check(const cpb_problem *p, char *why, size_t why_len)
{
    CPB_TRY(cpb_uly_check("upipe", p, why, why_len));
    int U = head_chunk(p), C = p->C;
    if (U % C || p->H % U) {
        snprintf(why, why_len, "upipe needs U %% C == 0 and H %% U == 0: U = %d heads per stage (--head-chunk), "
                 "C = %d ranks, H = %d query heads", U, C, p->H);
        return CPB_ERR_INVALID;
    }
    int m = U / C, g = p->H / p->G;
    if (p->G >= C && g % m && m % g) {
        snprintf(why, why_len, "upipe with G >= C needs g %% m == 0 or m %% g == 0 so stages align with kv heads: "
                 "g = H/G = %d, m = U/C = %d (U = %d, C = %d)", g, m, U, C);
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

int upipe_plan_of(const cpb_layer *L, upipe_plan *pl)
{
    CPB_TRY(cpb_uly_shape_of(L, &pl->u));
    pl->U = head_chunk(&L->p);
    pl->m = pl->U / pl->u.C;
    pl->nstage = pl->u.hc / pl->m;
    pl->g = pl->u.H / pl->u.G;
    pl->nk = (pl->u.G >= pl->u.C && pl->m > pl->g) ? pl->m / pl->g : 1;
    return CPB_OK;
}

void upipe_stage_maps(const upipe_plan *pl, int t, cpb_a2a_map *q, cpb_a2a_map *kv)
{
    const int C = pl->u.C, m = pl->m, g = pl->g, hc = pl->u.hc;
    q->C = kv->C = C;
    q->n = m;
    kv->n = pl->nk;
    for (int r = 0; r < C; r++) {
        if (pl->u.G >= C) {
            for (int k = 0; k < m; k++) {
                int e = t * m + k, j = e / g, i = e % g;
                q->head[r * m + k] = (j * C + r) * g + i;
            }
            int j0 = (t * m) / g;
            for (int jj = 0; jj < pl->nk; jj++) kv->head[r * pl->nk + jj] = (j0 + jj) * C + r;
        } else {
            int rep = C / pl->u.G, kvh = r / rep;
            for (int k = 0; k < m; k++) q->head[r * m + k] = kvh * g + (r % rep) * hc + t * m + k;
            kv->head[r] = kvh;
        }
    }
}

int upipe_kv_changes(const upipe_plan *pl, int t)
{
    if (t == 0) return 1;
    if (pl->u.G < pl->u.C) return 0;
    return (t * pl->m) / pl->g != ((t - 1) * pl->m) / pl->g;
}


int64_t upipe_gather_elems(const upipe_plan *pl)
{
    int64_t need = 0;
    for (int t = 0; t < pl->nstage; t++) {
        cpb_a2a_map q, kv;
        upipe_stage_maps(pl, t, &q, &kv);
        int64_t nq = cpb_a2a_gather_need(&q, pl->u.D, pl->u.d), nkv = cpb_a2a_gather_need(&kv, pl->u.D, pl->u.d);
        if (nq > need) need = nq;
        if (nkv > need) need = nkv;
    }
    return need;
}
