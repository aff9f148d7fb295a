/* flops_nemo.c — convention nemo: NeMo's flops_formulas.py count (flops_nemo.h). */
#include "flops_nemo.h"

#include "model_scope.h"

double cpb_layer_nemo_flops(const cpb_problem *p)
{
    const double S = (double)p->S, D = (double)p->D, H = p->H, G = p->G;
    /* the attention part of one layer's S D^2 (12 + 12 G/H + 12 S/D): q and o (12), k and
     * v (12 G/H), the core over the whole score matrix (12 S/D) */
    return S * D * D * (12.0 + 12.0 * G / H) + 12.0 * S * S * D;
}

double cpb_model_nemo_flops(const cpb_problem *p, const cpb_model_spec *sp)
{
    const double S = (double)p->S, D = (double)p->D, F = (double)sp->ffn, V = (double)sp->vocab, L = sp->layers,
                 m = cpb_model_mlp_matrices(sp);
    /* gbs S L D^2 (12 + 12 G/H + 6 m F/D + 12 S/D + 6 V/(L D)) at gbs = 1 */
    return L * (cpb_layer_nemo_flops(p) + 6.0 * m * S * D * F) + 6.0 * S * D * V;
}
