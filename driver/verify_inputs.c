/* verify_inputs.c — host generation of the seeded global inputs (see verify_inputs.h). */
#include "verify_inputs.h"

#include <math.h>
#include <stdlib.h>

#include "cpb_bf16.h"
#include "cpb_rand.h"

uint64_t cpb_input_seed(uint64_t seed, cpb_input_id t)
{
    return seed * (uint64_t)CPB_INPUT_COUNT + (uint64_t)t;
}

float cpb_input_scale(const cpb_problem *p, cpb_input_id t)
{
    switch (t) {
    case CPB_INPUT_WQ:
    case CPB_INPUT_WK: return (float)(3.0 / sqrt((double)p->D));
    case CPB_INPUT_WV: return (float)(1.0 / sqrt((double)p->D));
    case CPB_INPUT_WO: return (float)(1.0 / sqrt((double)p->H * p->d));
    default: return 1.0f;
    }
}

static float stored(const cpb_problem *p, float v)
{
    return p->dtype == CPB_BF16 ? cpb_round_bf16(v) : v;
}

/* row-major [rows][cols] with index row * cols + col */
static void fill_rowmajor(const cpb_problem *p, cpb_input_id t, uint64_t seed, float *a, int64_t n)
{
    uint64_t s = cpb_input_seed(seed, t);
    float scale = cpb_input_scale(p, t);
    for (int64_t i = 0; i < n; i++) a[i] = stored(p, scale * cpb_rand_u(s, i));
}

/* [D][heads*d] with head-major indices (head * D + row) * d + col */
static void fill_headmajor(const cpb_problem *p, cpb_input_id t, uint64_t seed, float *a, int heads)
{
    uint64_t s = cpb_input_seed(seed, t);
    float scale = cpb_input_scale(p, t);
    const int64_t D = p->D, d = p->d, ld = (int64_t)heads * d;
    for (int h = 0; h < heads; h++)
        for (int64_t r = 0; r < D; r++)
            for (int64_t c = 0; c < d; c++)
                a[r * ld + h * d + c] = stored(p, scale * cpb_rand_u(s, ((int64_t)h * D + r) * d + c));
}

int cpb_host_inputs_make(const cpb_problem *p, uint64_t seed, cpb_host_inputs *out)
{
    const int64_t SD = p->S * p->D, HD = (int64_t)p->H * p->d, GD = (int64_t)p->G * p->d;
    out->x = malloc(sizeof(float) * (size_t)SD);
    out->dy = malloc(sizeof(float) * (size_t)SD);
    out->wq = malloc(sizeof(float) * (size_t)(p->D * HD));
    out->wk = malloc(sizeof(float) * (size_t)(p->D * GD));
    out->wv = malloc(sizeof(float) * (size_t)(p->D * GD));
    out->wo = malloc(sizeof(float) * (size_t)(HD * p->D));
    if (!out->x || !out->dy || !out->wq || !out->wk || !out->wv || !out->wo) {
        cpb_host_inputs_free(out);
        return CPB_ERR_NOMEM_HOST;
    }
    fill_rowmajor(p, CPB_INPUT_X, seed, out->x, SD);
    fill_rowmajor(p, CPB_INPUT_DY, seed, out->dy, SD);
    fill_headmajor(p, CPB_INPUT_WQ, seed, out->wq, p->H);
    fill_headmajor(p, CPB_INPUT_WK, seed, out->wk, p->G);
    fill_headmajor(p, CPB_INPUT_WV, seed, out->wv, p->G);
    fill_rowmajor(p, CPB_INPUT_WO, seed, out->wo, HD * p->D);
    return CPB_OK;
}

void cpb_host_inputs_free(cpb_host_inputs *in)
{
    free(in->x);
    free(in->dy);
    free(in->wq);
    free(in->wk);
    free(in->wv);
    free(in->wo);
    in->x = in->dy = in->wq = in->wk = in->wv = in->wo = NULL;
}

cpb_global_inputs cpb_host_inputs_view(const cpb_host_inputs *in)
{
    cpb_global_inputs g = {in->x, in->dy, in->wq, in->wk, in->wv, in->wo};
    return g;
}
