/* alloc.c — the tracked allocator: every device and pinned-host buffer of a method comes
 * from here, so live bytes, high-water marks (total, per tag, intermediate), the breakdown
 * at the peak and the capacity check are the same on every backend (DESIGN.md section 3). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpb_backend.h"
#include "internal.h"
#include "race.h"

static void stats_add(cpb_mem_stats *m, cpb_tag tag, int64_t bytes)
{
    m->live += bytes;
    m->tag_live[tag] += bytes;
    if (m->tag_live[tag] > m->tag_peak[tag]) m->tag_peak[tag] = m->tag_live[tag];
    if (!cpb_tag_is_fixed(tag)) {
        m->intermediate_live += bytes;
        if (m->intermediate_live > m->intermediate_peak)
            m->intermediate_peak = m->intermediate_live;
    }
    if (m->live > m->peak) {
        m->peak = m->live;
        memcpy(m->at_peak, m->tag_live, sizeof m->at_peak);
    }
}

static void stats_sub(cpb_mem_stats *m, cpb_tag tag, int64_t bytes)
{
    m->live -= bytes;
    m->tag_live[tag] -= bytes;
    if (!cpb_tag_is_fixed(tag)) m->intermediate_live -= bytes;
}

/* The allocation sequence's hash (cpb_mem_stats.trace_hash): a polynomial hash mod 2^64
 * over the (event, bytes, tag) of each allocation (event 1) and free (2), each value mixed
 * first by SplitMix64's finalizer (Steele, Lea and Flood, OOPSLA 2014): h = h * M + mix(v),
 * M odd.  Polynomial because a run of alike iterations that cpb_repeat replicates must hash
 * as running them would, and a polynomial hash repeats in closed form (cpb_alloc_repeat): c
 * copies of a block of k values with hash B from 0 take h to h * A^c + B * (1 + A + ... +
 * A^(c-1)), A = M^k.  FNV-1a, used before, has no such form: replaying it per copy was a
 * tenth of a large simulated point. */
#define HASH_M 0x00000100000001b3ull

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t cpb_alloc_hash_put(uint64_t h, int ev, int64_t bytes, int tag)
{
    h = h * HASH_M + mix64((uint64_t)(int64_t)ev);
    h = h * HASH_M + mix64((uint64_t)bytes);
    return h * HASH_M + mix64((uint64_t)(int64_t)tag);
}

static void trace_hash(cpb_mem_stats *m, int ev, int64_t bytes, cpb_tag tag)
{
    m->trace_hash = cpb_alloc_hash_put(m->trace_hash, ev, bytes, (int)tag);
}

/* a^c and 1 + a + ... + a^(c-1), mod 2^64 */
static void pow_sum(uint64_t a, int64_t c, uint64_t *pw, uint64_t *sum)
{
    uint64_t p = 1, s = 0;        /* for the bits of c seen so far */
    uint64_t bp = a, bs = 1;      /* a^(2^j) and 1 + a + ... + a^(2^j - 1) */
    for (; c > 0; c >>= 1) {
        if (c & 1) {
            s = s + p * bs;       /* the next 2^j terms, after the p-th power */
            p = p * bp;
        }
        bs = bs + bp * bs;
        bp = bp * bp;
    }
    *pw = p;
    *sum = s;
}

void cpb_alloc_repeat(cpb_ctx *ctx, int host, uint64_t block, int64_t events, int64_t allocs, int64_t copies)
{
    if (copies <= 0) return;
    cpb_mem_stats *m = host ? &ctx->host : &ctx->dev;
    uint64_t a = 1, pw, sum;
    for (int64_t k = 0; k < 3 * events; k++) a *= HASH_M;
    pow_sum(a, copies, &pw, &sum);
    m->trace_hash = m->trace_hash * pw + block * sum;
    m->n_allocs += allocs * copies;
    ctx->next_buf_id += allocs * copies;
}

/* bytes in the largest binary unit that keeps the number >= 1, so that a tiny capacity
 * does not read "0.000 GiB" */
static const char *human_bytes(int64_t b, char out[32])
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)b;
    int u = 0;
    while (u < 5 && v >= 1024.0) {
        v /= 1024.0;
        u++;
    }
    if (u == 0) snprintf(out, 32, "%lld B", (long long)b);
    else snprintf(out, 32, "%.3f %s", v, unit[u]);
    return out;
}

/* Buffer descriptors freed by cpb_free are kept in the context's pool (ctx->buf_pool, linked
 * by next) and handed out again, zeroed as calloc would: a schedule allocates and frees
 * temporaries around most ops, and malloc and free per descriptor were a tenth of a large
 * simulated trial.  Not under AddressSanitizer, so that a use of a freed buffer stays a
 * reported error there. */
#if defined(__SANITIZE_ADDRESS__)
#define CPB_POOL_BUFS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CPB_POOL_BUFS 0
#endif
#endif
#ifndef CPB_POOL_BUFS
#define CPB_POOL_BUFS 1
#endif

static cpb_buf *buf_new(cpb_ctx *ctx)
{
    cpb_buf *b = ctx->buf_pool;
    if (!b) return calloc(1, sizeof *b);
    ctx->buf_pool = b->next;
    memset(b, 0, sizeof *b);
    return b;
}

static void buf_delete(cpb_ctx *ctx, cpb_buf *b)
{
    if (!CPB_POOL_BUFS) {
        free(b);
        return;
    }
    b->next = ctx->buf_pool;
    ctx->buf_pool = b;
}

void cpb_buf_pool_free(cpb_ctx *ctx)
{
    while (ctx->buf_pool) {
        cpb_buf *b = ctx->buf_pool;
        ctx->buf_pool = b->next;
        free(b);
    }
}

static int do_alloc(cpb_ctx *ctx, cpb_buf **out, int64_t nelem, cpb_dtype dt, cpb_tag tag,
                    const char *name, int host)
{
    *out = NULL;
    if (nelem <= 0)
        return cpb_fail(ctx, CPB_ERR_INVALID, "allocation of '%s' with %lld elements: sizes must be positive",
                        name ? name : "?", (long long)nelem);
    if (tag < 0 || tag >= CPB_TAG_COUNT)
        return cpb_fail(ctx, CPB_ERR_INVALID, "allocation of '%s' with unknown tag %d", name ? name : "?", tag);
    cpb_mem_stats *m = host ? &ctx->host : &ctx->dev;
    int64_t bytes = nelem * (int64_t)cpb_dtype_size(dt);
    trace_hash(m, 1, bytes, tag);
    if (m->capacity > 0 && m->live + bytes > m->capacity) {
        /* the modelled capacity, device or pinned host, is a result of the trial (status
         * oom, the reason naming which memory); a failing malloc of this process is not */
        char b[3][32];
        return cpb_fail(ctx, CPB_ERR_OOM,
                        "out of %s memory allocating '%s' (%s, %s): %s live of a %s capacity",
                        host ? "pinned host" : "device", name ? name : "?", cpb_tag_name(tag), human_bytes(bytes, b[0]),
                        human_bytes(m->live, b[1]), human_bytes(m->capacity, b[2]));
    }
    cpb_buf *b = buf_new(ctx);
    if (!b) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "out of host memory for a buffer descriptor");
    b->nelem = nelem;
    b->bytes = bytes;
    b->dtype = dt;
    b->tag = tag;
    b->host = host;
    b->id = ctx->next_buf_id++;
    b->free_stream = CPB_STREAM_COMPUTE;
    /* copied without printf: some schedules allocate workspaces thousands of times */
    const char *nm = name ? name : "buf";
    size_t n = strlen(nm);
    if (n >= sizeof b->name) n = sizeof b->name - 1;
    memcpy(b->name, nm, n);
    b->name[n] = 0;
    int rc = ctx->be->alloc(ctx, b);
    if (rc != CPB_OK) {
        buf_delete(ctx, b);
        return rc;
    }
    stats_add(m, tag, bytes);
    m->n_allocs++;
    if (ctx->rep_log) cpb_repeat_log_alloc(ctx, 0, host, bytes, tag);
    b->next = ctx->live;
    if (ctx->live) ctx->live->prev = b;
    ctx->live = b;
    *out = b;
    return CPB_OK;
}

int cpb_alloc(cpb_ctx *ctx, cpb_buf **out, int64_t nelem, cpb_dtype dt, cpb_tag tag, const char *name)
{
    return do_alloc(ctx, out, nelem, dt, tag, name, 0);
}

int cpb_alloc_host(cpb_ctx *ctx, cpb_buf **out, int64_t nelem, cpb_dtype dt, cpb_tag tag,
                   const char *name)
{
    return do_alloc(ctx, out, nelem, dt, tag, name, 1);
}

static void unlink_and_release(cpb_ctx *ctx, cpb_buf *b)
{
    cpb_mem_stats *m = b->host ? &ctx->host : &ctx->dev;
    stats_sub(m, b->tag, b->bytes);
    trace_hash(m, 2, b->bytes, b->tag);
    if (ctx->rep_log) cpb_repeat_log_alloc(ctx, 1, b->host, b->bytes, b->tag);
    if (b->prev) b->prev->next = b->next;
    else ctx->live = b->next;
    if (b->next) b->next->prev = b->prev;
    ctx->be->release(ctx, b);
    cpb_race_buf_free(ctx, b);
    buf_delete(ctx, b);
}

int cpb_free(cpb_ctx *ctx, int stream, cpb_buf **bp)
{
    if (!bp || !*bp) return CPB_OK;
    cpb_buf *b = *bp;
    if (stream < 0 || stream >= ctx->nstreams)
        return cpb_fail(ctx, CPB_ERR_INVALID, "free of '%s' on unknown stream %d", b->name, stream);
    /* a free is a write of the whole buffer on its stream: freeing memory that another
     * stream may still use is a race */
    char op[sizeof b->name + 8] = "free(";
    size_t n = strlen(b->name);
    memcpy(op + 5, b->name, n);
    memcpy(op + 5 + n, ")", 2);
    cpb_op_begin(ctx, stream, op);
    cpb_view all = cpb_whole(b);
    int rc = cpb_race_access(ctx, stream, &all, 1);
    if (rc != CPB_OK) return rc;
    b->free_stream = stream;
    unlink_and_release(ctx, b);
    *bp = NULL;
    return CPB_OK;
}

void cpb_free_all(cpb_ctx *ctx)
{
    if (ctx->be->sync) ctx->be->sync(ctx);
    cpb_race_sync(ctx);
    for (int i = 0; i < CPB_MAX_STREAMS; i++) ctx->gemm_ws[i] = NULL;
    while (ctx->live) {
        ctx->live->free_stream = CPB_STREAM_COMPUTE;
        unlink_and_release(ctx, ctx->live);
    }
}

static void reset_one(cpb_mem_stats *m)
{
    m->peak = m->live;
    memcpy(m->tag_peak, m->tag_live, sizeof m->tag_peak);
    memcpy(m->at_peak, m->tag_live, sizeof m->at_peak);
    m->intermediate_peak = m->intermediate_live;
    m->n_allocs = 0;
    m->trace_hash = 0;
}

void cpb_reset_stats(cpb_ctx *ctx)
{
    reset_one(&ctx->dev);
    reset_one(&ctx->host);
    ctx->n_ops = ctx->n_colls = 0;
    memset(&ctx->attn_usage, 0, sizeof ctx->attn_usage);
    ctx->flops = ctx->comm_bytes = ctx->pcie_bytes = 0;
}

const cpb_mem_stats *cpb_device_mem(const cpb_ctx *ctx)
{
    return &ctx->dev;
}

const cpb_mem_stats *cpb_host_mem(const cpb_ctx *ctx)
{
    return &ctx->host;
}
