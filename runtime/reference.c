/* reference.c — the layer in plain fp64 (the verification oracle; see cpb_reference.h).
 * GEMMs use the BLAS in double precision (cblas_dgemm: a path no method uses); RoPE and
 * attention are written out here. */
#include "cpb_reference.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* C[m][n] = op(A) op(B) (+ C if acc), row-major; op(A) m x k, op(B) k x n */
static void mm(int ta, int tb, int64_t m, int64_t n, int64_t k, const double *a, const double *b,
               double *c, int acc)
{
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)k, 1.0, a, ta ? (int)m : (int)k, b, tb ? (int)k : (int)n,
                acc ? 1.0 : 0.0, c, (int)n);
}

void cpb_reference_rope(double *v, int64_t rows, int heads, int d, int64_t pos0, double base,
                        int inverse)
{
    for (int64_t r = 0; r < rows; r++) {
        double pos = (double)(pos0 + r);
        for (int i = 0; i < d / 2; i++) {
            double theta = pow(base, -2.0 * i / d);
            double ang = pos * theta * (inverse ? -1.0 : 1.0);
            double c = cos(ang), s = sin(ang);
            for (int h = 0; h < heads; h++) {
                double *e = v + (r * heads + h) * d + 2 * i;
                double a = e[0], b = e[1];
                e[0] = a * c - b * s;
                e[1] = a * s + b * c;
            }
        }
    }
}

static double *to_double(const float *src, int64_t n)
{
    double *d = malloc(sizeof(double) * (size_t)n);
    if (d)
        for (int64_t i = 0; i < n; i++) d[i] = src[i];
    return d;
}

/* One query head's causal attention, forward and backward together.  dO does not depend
 * on the forward (dO = dy Wo^T) and query rows are independent, so each row's probabilities
 * are computed once and used for o, dq, dk and dv at once (scratch: two rows of S).
 * q, o, dO, dq: column blocks of [S][H*d] (row stride ldq); k, v, dk, dv: column blocks of
 * [S][G*d] (row stride ldk). */
static void head_attention(int64_t S, int d, double scale, const double *q, const double *k,
                           const double *v, const double *dO, int64_t ldq, int64_t ldk, double *o,
                           double *dq, double *dk, double *dv, double *p, double *dp)
{
    for (int64_t i = 0; i < S; i++) {
        const double *qi = q + i * ldq, *doi = dO + i * ldq;
        /* P[i][j] = softmax_j(scale * q_i . k_j), j <= i (causal) */
        double mx = -INFINITY;
        for (int64_t j = 0; j <= i; j++) {
            double s = 0;
            for (int t = 0; t < d; t++) s += qi[t] * k[j * ldk + t];
            p[j] = s * scale;
            if (p[j] > mx) mx = p[j];
        }
        double sum = 0;
        for (int64_t j = 0; j <= i; j++) {
            p[j] = exp(p[j] - mx);
            sum += p[j];
        }
        for (int64_t j = 0; j <= i; j++) p[j] /= sum;
        /* o_i = sum_j P_ij v_j;  dP_ij = dO_i . v_j;  delta_i = sum_j P_ij dP_ij */
        double *oi = o + i * ldq;
        for (int t = 0; t < d; t++) oi[t] = 0;
        double delta = 0;
        for (int64_t j = 0; j <= i; j++) {
            const double *vj = v + j * ldk;
            double g = 0;
            for (int t = 0; t < d; t++) {
                oi[t] += p[j] * vj[t];
                g += doi[t] * vj[t];
            }
            dp[j] = g;
            delta += p[j] * g;
        }
        /* dS = P (dP - delta); dq_i = scale sum_j dS_ij k_j; dk_j += scale dS_ij q_i;
         * dv_j += P_ij dO_i */
        double *dqi = dq + i * ldq;
        for (int64_t j = 0; j <= i; j++) {
            double ds = p[j] * (dp[j] - delta) * scale;
            const double *kj = k + j * ldk;
            double *dkj = dk + j * ldk, *dvj = dv + j * ldk;
            for (int t = 0; t < d; t++) {
                dqi[t] += ds * kj[t];
                dkj[t] += ds * qi[t];
                dvj[t] += p[j] * doi[t];
            }
        }
    }
}

int cpb_reference_layer(const cpb_problem *p, const cpb_ref_in *in, cpb_ref_out *out, char *err,
                        size_t err_len)
{
    const int64_t S = p->S, D = p->D;
    const int H = p->H, G = p->G, d = p->d;
    if (S <= 0 || D <= 0 || H <= 0 || G <= 0 || d <= 0 || H % G || d % 2 || !(p->rope_base > 1.0)) {
        snprintf(err, err_len, "reference: bad shape S %lld D %lld H %d G %d d %d base %g "
                 "(need positive sizes, H %% G == 0, even d, base > 1)",
                 (long long)S, (long long)D, H, G, d, p->rope_base);
        return CPB_ERR_INVALID;
    }
    if (S > CPB_REF_MAX_SEQ || D * (int64_t)H * d > ((int64_t)1 << 31)) {
        snprintf(err, err_len, "reference: S %lld (max %d) or D*H*d too large for the fp64 "
                 "reference; verify with a smaller --seq or shape", (long long)S, CPB_REF_MAX_SEQ);
        return CPB_ERR_INVALID;
    }
    const int64_t HD = (int64_t)H * d, GD = (int64_t)G * d, g = H / G;
    double *x = to_double(in->x, S * D), *dy = to_double(in->dy, S * D);
    double *wq = to_double(in->wq, D * HD), *wk = to_double(in->wk, D * GD);
    double *wv = to_double(in->wv, D * GD), *wo = to_double(in->wo, HD * D);
    double *q = malloc(sizeof(double) * (size_t)(S * HD)), *o = malloc(sizeof(double) * (size_t)(S * HD));
    double *dO = malloc(sizeof(double) * (size_t)(S * HD));
    double *k = malloc(sizeof(double) * (size_t)(S * GD)), *v = malloc(sizeof(double) * (size_t)(S * GD));
    double *dq = calloc((size_t)(S * HD), sizeof(double));
    double *dk = calloc((size_t)(S * GD), sizeof(double)), *dv = calloc((size_t)(S * GD), sizeof(double));
    double *row = malloc(sizeof(double) * (size_t)(2 * S));
    int rc = CPB_OK;
    if (!x || !dy || !wq || !wk || !wv || !wo || !q || !o || !dO || !k || !v || !dq || !dk || !dv || !row) {
        snprintf(err, err_len, "reference: out of host memory for S %lld, D %lld", (long long)S, (long long)D);
        rc = CPB_ERR_NOMEM_HOST;
        goto done;
    }
    /* projections and RoPE at positions 0..S-1 */
    mm(0, 0, S, HD, D, x, wq, q, 0);
    mm(0, 0, S, GD, D, x, wk, k, 0);
    mm(0, 0, S, GD, D, x, wv, v, 0);
    cpb_reference_rope(q, S, H, d, 0, p->rope_base, 0);
    cpb_reference_rope(k, S, G, d, 0, p->rope_base, 0);
    mm(0, 1, S, HD, D, dy, wo, dO, 0); /* dO = dy Wo^T */
    const double scale = 1.0 / sqrt((double)d);
    for (int h = 0; h < H; h++) {
        int64_t kv = h / g;
        head_attention(S, d, scale, q + h * d, k + kv * d, v + kv * d, dO + h * d, HD, GD, o + h * d,
                       dq + h * d, dk + kv * d, dv + kv * d, row, row + S);
    }
    mm(0, 0, S, D, HD, o, wo, out->y, 0);   /* y = o Wo */
    mm(1, 0, HD, D, S, o, dy, out->dwo, 0); /* dWo = o^T dy */
    /* back through RoPE: rotation by -angle is the transpose */
    cpb_reference_rope(dq, S, H, d, 0, p->rope_base, 1);
    cpb_reference_rope(dk, S, G, d, 0, p->rope_base, 1);
    mm(1, 0, D, HD, S, x, dq, out->dwq, 0);
    mm(1, 0, D, GD, S, x, dk, out->dwk, 0);
    mm(1, 0, D, GD, S, x, dv, out->dwv, 0);
    mm(0, 1, S, D, HD, dq, wq, out->dx, 0); /* dx = dq Wq^T + dk Wk^T + dv Wv^T */
    mm(0, 1, S, D, GD, dk, wk, out->dx, 1);
    mm(0, 1, S, D, GD, dv, wv, out->dx, 1);
done:
    free(x); free(dy); free(wq); free(wk); free(wv); free(wo);
    free(q); free(o); free(dO); free(k); free(v); free(dq); free(dk); free(dv); free(row);
    return rc;
}
