/* head_stages.c — UPipe's head-stage schedule over a group (see head_stages.h). */
#include <stdio.h>

#include "common/head_stages.h"

int cpb_stages_check(const char *name, int C, int H, int G, int U, char *why, size_t why_len)
{
    if (U == 0) U = C;
    if (C <= 0 || G <= 0 || U <= 0 || U % C || H % U) {
        snprintf(why, why_len, "%s needs U %% u == 0 and H %% U == 0: U = %d heads per stage (--head-chunk), u = %d "
                 "ranks per all-to-all group, H = %d query heads", name, U, C, H);
        return CPB_ERR_INVALID;
    }
    int m = U / C, g = H / G;
    if (G >= C && g % m && m % g) {
        snprintf(why, why_len, "%s with G >= u needs g %% m == 0 or m %% g == 0 so stages align with kv heads: "
                 "g = H/G = %d, m = U/u = %d (U = %d, u = %d)", name, g, m, U, C);
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

int cpb_stages_of(int C, int H, int G, int U, cpb_stages *s)
{
    char why[256];
    if (U == 0) U = C;
    if (cpb_stages_check("stages", C, H, G, U, why, sizeof why) != CPB_OK || H > CPB_MAX_HEADS) return CPB_ERR_INVALID;
    s->C = C;
    s->H = H;
    s->G = G;
    s->U = U;
    s->m = U / C;
    s->g = H / G;
    s->nstage = H / U;
    s->nk = (G >= C && s->m > s->g) ? s->m / s->g : 1;
    return CPB_OK;
}

void cpb_stages_maps(const cpb_stages *s, int t, cpb_a2a_map *q, cpb_a2a_map *kv)
{
    const int C = s->C, m = s->m, g = s->g, hc = s->H / C;
    q->C = kv->C = C;
    q->n = m;
    kv->n = s->nk;
    for (int r = 0; r < C; r++) {
        if (s->G >= C) {
            for (int k = 0; k < m; k++) {
                int e = t * m + k, j = e / g, i = e % g;
                q->head[r * m + k] = (j * C + r) * g + i;
            }
            int j0 = (t * m) / g;
            for (int jj = 0; jj < s->nk; jj++) kv->head[r * s->nk + jj] = (j0 + jj) * C + r;
        } else {
            int rep = C / s->G, kvh = r / rep;
            for (int k = 0; k < m; k++) q->head[r * m + k] = kvh * g + (r % rep) * hc + t * m + k;
            kv->head[r] = kvh;
        }
    }
}

int cpb_stages_kv_changes(const cpb_stages *s, int t)
{
    if (t == 0) return 1;
    if (s->G < s->C) return 0;
    return (t * s->m) / s->g != ((t - 1) * s->m) / s->g;
}

int cpb_stages_kv_last(const cpb_stages *s, int t)
{
    return t == s->nstage - 1 || cpb_stages_kv_changes(s, t + 1);
}

int64_t cpb_stages_gather_elems(const cpb_stages *s, int64_t D, int d)
{
    int64_t need = 0;
    for (int t = 0; t < s->nstage; t++) {
        cpb_a2a_map q, kv;
        cpb_stages_maps(s, t, &q, &kv);
        int64_t nq = cpb_a2a_gather_need(&q, D, d), nkv = cpb_a2a_gather_need(&kv, D, d);
        if (nq > need) need = nq;
        if (nkv > need) need = nkv;
    }
    return need;
}
