/* test_alloc.c — the tracked allocator through the cpu backend: live and peak bytes,
 * per-tag high-water marks, the breakdown at the peak, intermediate vs fixed tags, the
 * capacity and its OOM error, no leak after an OOM, host buffers tracked apart, and the
 * allocation-sequence hash. */
#include <string.h>

#include "registry.h"
#include "test_cpu_util.h"

static cpb_buf *al(cpb_ctx *ctx, int64_t n, cpb_dtype dt, cpb_tag tag, const char *name)
{
    cpb_buf *b = NULL;
    cr_assert_eq(cpb_alloc(ctx, &b, n, dt, tag, name), CPB_OK, "%s", cpb_errmsg(ctx));
    cr_assert_not_null(b->ptr);
    cr_assert_eq((uintptr_t)b->ptr % 64, 0, "buffers are 64-byte aligned");
    return b;
}

Test(alloc, peak_tags_and_breakdown)
{
    cpb_ctx *ctx = t_ctx();
    const cpb_mem_stats *m = cpb_device_mem(ctx);
    cpb_buf *x = al(ctx, 100, CPB_BF16, CPB_TAG_X, "x");          /* 200 B, fixed */
    cpb_buf *q = al(ctx, 50, CPB_FP32, CPB_TAG_QKV, "q");         /* 200 B */
    cpb_buf *a = al(ctx, 300, CPB_FP32, CPB_TAG_A2A, "a2a");      /* 1200 B */
    cr_assert_eq(m->live, 1600);
    cr_assert_eq(m->peak, 1600);
    cr_assert_eq(m->intermediate_live, 1400);
    cr_assert_eq(cpb_free(ctx, 0, &a), CPB_OK);
    cr_assert_null(a, "cpb_free clears the pointer");
    cpb_buf *s = al(ctx, 25, CPB_FP32, CPB_TAG_SAVED, "saved");   /* 100 B */
    cpb_buf *a2 = al(ctx, 100, CPB_FP32, CPB_TAG_A2A, "a2a");     /* 400 B */
    cr_assert_eq(m->live, 900);
    cr_assert_eq(m->peak, 1600, "the high-water mark stays");
    cr_assert_eq(m->tag_peak[CPB_TAG_A2A], 1200);
    cr_assert_eq(m->tag_live[CPB_TAG_A2A], 400);
    cr_assert_eq(m->tag_peak[CPB_TAG_SAVED], 100);
    /* breakdown at the moment of the peak: x, q, the first a2a; no saved yet */
    cr_assert_eq(m->at_peak[CPB_TAG_X], 200);
    cr_assert_eq(m->at_peak[CPB_TAG_QKV], 200);
    cr_assert_eq(m->at_peak[CPB_TAG_A2A], 1200);
    cr_assert_eq(m->at_peak[CPB_TAG_SAVED], 0);
    cr_assert_eq(m->intermediate_peak, 1400);
    cr_assert_eq(m->n_allocs, 5);
    /* a new peak moves the breakdown */
    cpb_buf *big = al(ctx, 1000, CPB_FP32, CPB_TAG_GRADS, "dw");  /* 4000 B fixed */
    cr_assert_eq(m->peak, 4900);
    cr_assert_eq(m->at_peak[CPB_TAG_A2A], 400);
    cr_assert_eq(m->at_peak[CPB_TAG_GRADS], 4000);
    cr_assert_eq(m->intermediate_peak, 1400, "fixed tags are not intermediate");
    cr_assert_eq(cpb_free(ctx, 0, &big), CPB_OK);
    cr_assert_eq(cpb_free(ctx, 0, &s), CPB_OK);
    cr_assert_eq(cpb_free(ctx, 0, &a2), CPB_OK);
    cr_assert_eq(cpb_free(ctx, 0, &q), CPB_OK);
    cr_assert_eq(cpb_free(ctx, 0, &x), CPB_OK);
    cr_assert_eq(m->live, 0);
    for (int t = 0; t < CPB_TAG_COUNT; t++) cr_assert_eq(m->tag_live[t], 0);
    /* a reset starts a new trial from the live state */
    cpb_reset_stats(ctx);
    cr_assert_eq(m->peak, 0);
    cr_assert_eq(m->tag_peak[CPB_TAG_A2A], 0);
    cpb_ctx_destroy(ctx);
}

Test(alloc, capacity_oom_and_no_leak)
{
    cpb_ctx *ctx = t_ctx_cap(10000, 0);
    const cpb_mem_stats *m = cpb_device_mem(ctx);
    cpb_buf *a = al(ctx, 1000, CPB_FP32, CPB_TAG_X, "x"), *b = al(ctx, 1000, CPB_BF16, CPB_TAG_KV_RING, "kv");
    cr_assert_eq(m->live, 6000);
    cpb_buf *c = (cpb_buf *)0x1;
    int rc = cpb_alloc(ctx, &c, 1001, CPB_FP32, CPB_TAG_KV_RING, "kv_next");
    cr_assert_eq(rc, CPB_ERR_OOM);
    cr_assert_null(c, "a failed allocation returns no buffer");
    const char *msg = cpb_errmsg(ctx);
    cr_assert(strstr(msg, "kv_next") && strstr(msg, "capacity"), "the OOM message names the buffer and the "
                                                                   "capacity: %s", msg);
    cr_assert_eq(m->live, 6000, "an OOM leaves live bytes where they were");
    cr_assert_eq(m->peak, 6000);
    cr_assert_eq(m->tag_live[CPB_TAG_KV_RING], 2000);
    cpb_clear_error(ctx);
    /* exactly up to the capacity is fine */
    cpb_buf *d = al(ctx, 1000, CPB_FP32, CPB_TAG_TEMP, "fits");
    cr_assert_eq(m->live, 10000);
    (void)a, (void)b, (void)d;
    cpb_free_all(ctx);
    cr_assert_eq(m->live, 0);
    cr_assert_eq(m->intermediate_live, 0);
    cr_assert_null(ctx->live, "no live buffer after cpb_free_all");
    cpb_ctx_destroy(ctx);
}

Test(alloc, host_buffers_tracked_apart)
{
    cpb_ctx *ctx = t_ctx_cap(0, 4096);
    cpb_buf *d = al(ctx, 100, CPB_FP32, CPB_TAG_SAVED, "dev");
    cpb_buf *h = NULL;
    cr_assert_eq(cpb_alloc_host(ctx, &h, 512, CPB_FP32, CPB_TAG_SAVED, "host"), CPB_OK);
    cr_assert(h->host);
    cr_assert_eq(cpb_device_mem(ctx)->live, 400);
    cr_assert_eq(cpb_host_mem(ctx)->live, 2048);
    cr_assert_eq(cpb_host_mem(ctx)->tag_peak[CPB_TAG_SAVED], 2048);
    cpb_buf *h2 = NULL;
    cr_assert_eq(cpb_alloc_host(ctx, &h2, 600, CPB_FP32, CPB_TAG_SAVED, "host2"), CPB_ERR_OOM,
                 "the host capacity is separate from the device's, and running out of it is an oom result");
    cr_assert(strstr(cpb_errmsg(ctx), "pinned host"), "%s", cpb_errmsg(ctx));
    cr_assert_eq(cpb_host_mem(ctx)->live, 2048);
    cpb_clear_error(ctx);
    cr_assert_eq(cpb_free(ctx, 0, &h), CPB_OK);
    cr_assert_eq(cpb_host_mem(ctx)->live, 0);
    cr_assert_eq(cpb_host_mem(ctx)->peak, 2048);
    cr_assert_eq(cpb_device_mem(ctx)->live, 400);
    (void)d;
    cpb_ctx_destroy(ctx);
}

Test(alloc, invalid_sizes_are_refused)
{
    cpb_ctx *ctx = t_ctx();
    cpb_buf *b = NULL;
    cr_assert_eq(cpb_alloc(ctx, &b, 0, CPB_FP32, CPB_TAG_TEMP, "empty"), CPB_ERR_INVALID);
    cr_assert(strstr(cpb_errmsg(ctx), "empty") != NULL);
    cpb_clear_error(ctx);
    cr_assert_eq(cpb_alloc(ctx, &b, 4, CPB_FP32, (cpb_tag)CPB_TAG_COUNT, "badtag"), CPB_ERR_INVALID);
    cr_assert_eq(cpb_device_mem(ctx)->live, 0);
    cpb_ctx_destroy(ctx);
}

static uint64_t sequence_hash(const int64_t *sizes, const cpb_tag *tags, int n, int free_first)
{
    cpb_ctx *ctx = t_ctx();
    cpb_buf *b[8] = {0};
    for (int i = 0; i < n; i++) b[i] = al(ctx, sizes[i], CPB_FP32, tags[i], "b");
    if (free_first) cr_assert_eq(cpb_free(ctx, 0, &b[0]), CPB_OK);
    uint64_t h = cpb_device_mem(ctx)->trace_hash;
    cpb_ctx_destroy(ctx);
    return h;
}

Test(alloc, trace_hash_compares_sequences)
{
    int64_t s1[] = {10, 20, 30}, s2[] = {10, 30, 20};
    cpb_tag t1[] = {CPB_TAG_X, CPB_TAG_QKV, CPB_TAG_A2A}, t2[] = {CPB_TAG_X, CPB_TAG_QKV, CPB_TAG_SAVED};
    uint64_t h = sequence_hash(s1, t1, 3, 0);
    cr_assert_neq(h, 0);
    cr_assert_eq(h, sequence_hash(s1, t1, 3, 0), "equal sequences hash equal");
    cr_assert_neq(h, sequence_hash(s2, t1, 3, 0), "order of sizes matters");
    cr_assert_neq(h, sequence_hash(s1, t2, 3, 0), "tags matter");
    cr_assert_neq(h, sequence_hash(s1, t1, 2, 0), "length matters");
    cr_assert_neq(h, sequence_hash(s1, t1, 3, 1), "frees are part of the sequence");
}

/* the definition (alloc.c): a polynomial hash mod 2^64 over each (event, bytes, tag), every
 * value mixed by SplitMix64's finalizer first, M = the FNV prime; written out plainly here */
static uint64_t poly_hash(uint64_t h, int64_t ev, int64_t bytes, int64_t tag)
{
    int64_t vals[3] = {ev, bytes, tag};
    for (int v = 0; v < 3; v++) {
        uint64_t z = (uint64_t)vals[v];
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        h = h * 1099511628211ull + z;
    }
    return h;
}

Test(alloc, trace_hash_is_the_mixed_polynomial)
{
    int64_t sizes[] = {1, 255, 65536, 0x0100000001ll, 0x00ff00ff00ffll, 0x7f00000000000001ll / 4 / 1024};
    cpb_tag tags[] = {CPB_TAG_X, CPB_TAG_QKV, CPB_TAG_A2A, CPB_TAG_SAVED, CPB_TAG_WORKSPACE, CPB_TAG_X};
    /* on the simulator: the same allocator, no memory behind the sizes */
    cpb_ctx_opts o = {0};
    o.race_check = 1;
    cpb_ctx *ctx = NULL;
    char err[512] = "";
    cr_assert_eq(cpb_ctx_create(&cpb_backend_sim, &o, &ctx, err, sizeof err), CPB_OK, "%s", err);
    cpb_buf *b[6] = {0};
    uint64_t want = 0;
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(cpb_alloc(ctx, &b[i], sizes[i], CPB_FP32, tags[i], "b"), CPB_OK, "%s", cpb_errmsg(ctx));
        want = poly_hash(want, 1, sizes[i] * 4, tags[i]);
        cr_assert_eq(cpb_device_mem(ctx)->trace_hash, want, "allocation %d: hash %016llx, the definition's %016llx", i,
                     (unsigned long long)cpb_device_mem(ctx)->trace_hash, (unsigned long long)want);
    }
    cr_assert_eq(cpb_free(ctx, 0, &b[3]), CPB_OK);
    want = poly_hash(want, 2, sizes[3] * 4, tags[3]);
    cr_assert_eq(cpb_device_mem(ctx)->trace_hash, want, "a free hashes as event 2");
    cpb_ctx_destroy(ctx);
}

Test(alloc, attention_backward_workspace_is_tracked)
{
    /* the op's fp32 workspace goes through the allocator: the peak sees it */
    cpb_ctx *ctx = t_ctx();
    int64_t s = 9, h = 2, d = 4;
    cpb_buf *q = al(ctx, s * h * d, CPB_FP32, CPB_TAG_QKV, "qkv");
    cpb_buf *l = al(ctx, h * s, CPB_FP32, CPB_TAG_ATTN, "lse");
    cpb_buf *g = al(ctx, 4 * s * h * d, CPB_FP32, CPB_TAG_GRAD_ACT, "grads");
    cpb_attn_args a = {0};
    a.q = a.k = a.v = a.o = a.d_o = cpb_heads(q, 0, s, h, d, h * d, d);
    a.lse = cpb_lse_view(l, s, 0, h, 0, s);
    a.dq = cpb_heads(g, 0, s, h, d, h * d, d);
    a.dk = cpb_heads(g, s * h * d, s, h, d, h * d, d);
    a.dv = cpb_heads(g, 2 * s * h * d, s, h, d, h * d, d);
    a.o = cpb_heads(g, 3 * s * h * d, s, h, d, h * d, d);
    a.causal = 1;
    cr_assert_eq(cpb_fill_random(ctx, 0, cpb_whole(q), 1, 0, 1.0f), CPB_OK);
    cr_assert_eq(cpb_attn_fwd(ctx, 0, &a), CPB_OK, "%s", cpb_errmsg(ctx));
    cpb_reset_stats(ctx);
    int64_t live = cpb_device_mem(ctx)->live;
    cr_assert_eq(cpb_attn_bwd(ctx, 0, &a), CPB_OK, "%s", cpb_errmsg(ctx));
    cr_assert_eq(cpb_device_mem(ctx)->live, live);
    cr_assert_eq(cpb_device_mem(ctx)->tag_peak[CPB_TAG_WORKSPACE], cpb_attn_bwd_workspace_elems(&a) * 4);
    cr_assert_eq(cpb_attn_bwd_workspace_elems(&a), s * h * d + s * h, "dq accumulator plus delta");
    cpb_ctx_destroy(ctx);
}
