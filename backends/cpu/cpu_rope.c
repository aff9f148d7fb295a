/* cpu_rope.c — rotary position embedding, Meta Llama convention (interleaved pairs):
 * pair i of a head vector, (x[2i], x[2i+1]), is rotated by pos * theta_i with
 * theta_i = base^(-2i/d).  Positions are int64 global token positions, and the angle, sin
 * and cos are fp64: in fp32, pos * theta near 2^23 is off by up to half a radian. */
#include <math.h>
#include <stdlib.h>

#include "cpu_internal.h"
#include "cpu_load_store.h"

int cpu_rope(cpb_ctx *ctx, const cpb_op *op)
{
    const cpb_view *x = &op->u.rope.x;
    const cpb_segs *pos = op->u.rope.pos;
    int64_t d = x->dim, half = d / 2;
    double sign = op->u.rope.inverse ? -1.0 : 1.0;
    if (half == 0 || x->rows == 0 || x->heads == 0) return CPB_OK;
    /* theta (fp64), then per row: cos, sin (fp64) and one head vector (fp32) */
    double *theta = malloc(sizeof(double) * (size_t)(3 * half));
    float *vec = cpu_scratch(ctx, d, "rope row");
    if (!theta || !vec) {
        free(theta);
        free(vec);
        return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "%s: out of host memory for rope tables", op->name);
    }
    double *cs = theta + half, *sn = theta + 2 * half;
    for (int64_t i = 0; i < half; i++) theta[i] = pow(op->u.rope.base, -2.0 * (double)i / (double)d);
    int64_t r = 0;
    for (int s = 0; s < pos->n; s++) {
        for (int64_t t = 0; t < pos->len[s]; t++, r++) {
            double p = (double)(pos->pos0[s] + t);
            for (int64_t i = 0; i < half; i++) {
                double ang = p * theta[i];
                cs[i] = cos(ang);
                sn[i] = sign * sin(ang);
            }
            for (int64_t h = 0; h < x->heads; h++) {
                cpu_ld_vec(x, r, h, vec);
                for (int64_t i = 0; i < half; i++) {
                    double a = vec[2 * i], b = vec[2 * i + 1];
                    vec[2 * i] = (float)(a * cs[i] - b * sn[i]);
                    vec[2 * i + 1] = (float)(a * sn[i] + b * cs[i]);
                }
                cpu_st_vec(x, r, h, vec, 0);
            }
        }
    }
    free(theta);
    free(vec);
    return CPB_OK;
}
