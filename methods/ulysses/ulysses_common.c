/* ulysses_common.c — the Ulysses family's constraint check and per-rank shape, shared by
 * ulysses, upipe, offload, usp and hupipe. */
#include <stdio.h>

#include "ulysses/ulysses.h"

int cpb_uly_check(const char *name, const cpb_problem *p, char *why, size_t why_len)
{
    if (p->C <= 0 || p->S % p->C) {
        snprintf(why, why_len, "%s needs S %% C == 0: S = %lld tokens, C = %d ranks", name, (long long)p->S, p->C);
        return CPB_ERR_INVALID;
    }
    if (p->H % p->C) {
        snprintf(why, why_len, "%s needs H %% C == 0: H = %d query heads, C = %d ranks", name, p->H, p->C);
        return CPB_ERR_INVALID;
    }
    if (p->G % p->C && p->C % p->G) {
        snprintf(why, why_len, "%s needs G %% C == 0 or C %% G == 0: G = %d kv heads, C = %d ranks", name, p->G,
                 p->C);
        return CPB_ERR_INVALID;
    }
    if (p->G <= 0 || p->H % p->G) {
        snprintf(why, why_len, "%s needs H %% G == 0: H = %d query heads, G = %d kv heads", name, p->H, p->G);
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

int cpb_uly_shape_of(const cpb_layer *L, cpb_uly_shape *u)
{
    const cpb_problem *p = &L->p;
    u->S = p->S;
    u->s = L->s;
    u->D = p->D;
    u->H = p->H;
    u->G = p->G;
    u->d = p->d;
    u->C = p->C;
    u->hc = p->H / p->C;
    u->hk = p->G >= p->C ? p->G / p->C : 1;
    CPB_TRY(cpb_a2a_map_q(&u->qmap, p->C, p->H));
    CPB_TRY(cpb_a2a_map_kv(&u->kvmap, p->C, p->G));
    u->seq = (cpb_a2a_seq){L->s, p->D, p->d, L->x, &L->tokens, p->rope_base};
    return CPB_OK;
}
