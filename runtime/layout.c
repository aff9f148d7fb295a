/* layout.c — token layouts and weight shards shared by methods. */
#include "cpb_method.h"

int cpb_layout_contiguous(const cpb_problem *p, int rank, cpb_segs *out)
{
    cpb_segs_clear(out);
    if (p->C <= 0 || p->S % p->C) return CPB_ERR_INVALID;
    int64_t s = p->S / p->C;
    cpb_segs_add(out, (int64_t)rank * s, s);
    return CPB_OK;
}

int cpb_layout_zigzag(const cpb_problem *p, int rank, cpb_segs *out)
{
    cpb_segs_clear(out);
    if (p->C <= 0 || p->S % (2 * p->C)) return CPB_ERR_INVALID;
    int64_t c = p->S / (2 * p->C);
    cpb_segs_add(out, (int64_t)rank * c, c);
    cpb_segs_add(out, (int64_t)(2 * p->C - 1 - rank) * c, c);
    return CPB_OK;
}

void cpb_shard_all(const cpb_problem *p, cpb_shard *out)
{
    out->nq = p->H;
    out->nkv = p->G;
    for (int h = 0; h < p->H; h++) out->q[h] = h;
    for (int h = 0; h < p->G; h++) out->kv[h] = h;
}

int cpb_shard_head_group(const cpb_problem *p, int rank, cpb_shard *out)
{
    int C = p->C;
    if (C <= 0 || p->H % C) return CPB_ERR_INVALID;
    int hq = p->H / C;
    out->nq = hq;
    for (int i = 0; i < hq; i++) out->q[i] = rank * hq + i;
    if (p->G >= C) {
        if (p->G % C) return CPB_ERR_INVALID;
        int hk = p->G / C;
        out->nkv = hk;
        for (int i = 0; i < hk; i++) out->kv[i] = rank * hk + i;
    } else {
        if (C % p->G) return CPB_ERR_INVALID;
        /* the group's query heads all use one kv head: (rank*hq) / g */
        int g = p->H / p->G;
        out->nkv = 1;
        out->kv[0] = (rank * hq) / g;
    }
    return CPB_OK;
}
