/* view.c — strided views and token-segment lists. */
#include <string.h>

#include "cpb.h"

cpb_view cpb_span(cpb_buf *b, int64_t off, int64_t count)
{
    cpb_view v = {b, off, 1, 1, count, count, count};
    return v;
}

cpb_view cpb_whole(cpb_buf *b)
{
    return cpb_span(b, 0, b ? b->nelem : 0);
}

cpb_view cpb_mat(cpb_buf *b, int64_t off, int64_t rows, int64_t cols, int64_t ld)
{
    cpb_view v = {b, off, rows, 1, cols, ld, 0};
    return v;
}

cpb_view cpb_heads(cpb_buf *b, int64_t off, int64_t rows, int64_t heads, int64_t dim,
                   int64_t row_stride, int64_t head_stride)
{
    cpb_view v = {b, off, rows, heads, dim, row_stride, head_stride};
    return v;
}

cpb_view cpb_lse_view(cpb_buf *b, int64_t ld, int64_t h0, int64_t heads, int64_t t0,
                      int64_t tokens)
{
    cpb_view v = {b, h0 * ld + t0, tokens, heads, 1, 1, ld};
    return v;
}

int cpb_view_is_contiguous(const cpb_view *v)
{
    if (v->heads > 1 && v->head_stride != v->dim) return 0;
    if (v->rows > 1 && v->row_stride != v->heads * v->dim) return 0;
    return 1;
}

void cpb_segs_clear(cpb_segs *s)
{
    s->n = 0;
}

int cpb_segs_add(cpb_segs *s, int64_t pos0, int64_t len)
{
    if (len <= 0) return 0;
    if (s->n > 0 && s->pos0[s->n - 1] + s->len[s->n - 1] == pos0) {
        s->len[s->n - 1] += len;
        return 0;
    }
    if (s->n >= CPB_MAX_SEGS) return -1;
    s->pos0[s->n] = pos0;
    s->len[s->n] = len;
    s->n++;
    return 0;
}

int64_t cpb_segs_total(const cpb_segs *s)
{
    int64_t t = 0;
    for (int i = 0; i < s->n; i++) t += s->len[i];
    return t;
}

int cpb_segs_slice(const cpb_segs *s, int64_t r0, int64_t n, cpb_segs *out)
{
    cpb_segs_clear(out);
    int64_t row = 0;
    for (int i = 0; i < s->n && n > 0; i++) {
        int64_t a = row, b = row + s->len[i];
        row = b;
        if (r0 >= b) continue;
        int64_t start = r0 > a ? r0 : a;
        int64_t take = b - start < n ? b - start : n;
        if (cpb_segs_add(out, s->pos0[i] + (start - a), take)) return -1;
        r0 = start + take;
        n -= take;
    }
    return n == 0 ? 0 : -1;
}

int64_t cpb_segs_pos(const cpb_segs *s, int64_t r)
{
    for (int i = 0; i < s->n; i++) {
        if (r < s->len[i]) return s->pos0[i] + r;
        r -= s->len[i];
    }
    return -1;
}
