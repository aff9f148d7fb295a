/* sd_memory.cpp — device and pinned memory, stream-ordered memory pools and copies: the
 * CUDA Runtime API sections "Memory Management" and "Stream Ordered Memory Allocator".
 *
 * Device memory is host memory allocated at the exact size (so AddressSanitizer sees an
 * access past the end), 256-byte aligned as cudaMalloc's is, filled with 0xff bytes when it
 * is allocated and again when it is freed (NaN as fp32 and bf16), and registered: every copy,
 * kernel, GEMM and collective says at enqueue which ranges it touches, and the registry
 * fails loudly on a range outside a live allocation, on memory already freed, on pageable
 * host memory handed to a kernel or collective, and on a stream-ordered free that is not
 * ordered after an earlier use on another stream.
 *
 * Memory pools follow the reuse rules of cudaMemPoolSetAttribute: a block freed on stream A
 * is reused by an allocation on stream B only if B is A, or B waited (through events) on
 * the free (cudaMemPoolReuseFollowEventDependencies), or the free has already run
 * (cudaMemPoolReuseAllowOpportunistic), or by making B wait for the free
 * (cudaMemPoolReuseAllowInternalDependencies); otherwise new memory is reserved.  Memory
 * above the release threshold goes back at the next synchronization, and freed memory
 * whose free the host has observed goes back at cudaMemPoolTrimTo.  The block sizes are
 * the requests' (the driver's 2 MiB granularity is not modelled). */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "sd_internal.h"

struct CUmemPoolHandle_st {
    int device = 0;
    bool is_default = false, destroyed = false;
    uint64_t threshold = 0;
    int follow = 1, opportunistic = 1, internal = 1;
    uint64_t reserved = 0, reserved_high = 0, used = 0, used_high = 0;
    std::vector<sd::Gen *> free_blocks;
};

namespace sd {

struct Pool : CUmemPoolHandle_st {};

namespace {

const char *kMem = "CUDA Runtime API, Memory Management";
const char *kPool = "CUDA Runtime API, Stream Ordered Memory Allocator";

/* never destroyed (stream threads may still look at them while the process exits) */
std::map<uintptr_t, Gen *> &g_live = *new std::map<uintptr_t, Gen *>;
std::map<uintptr_t, Gen *> &g_freed = *new std::map<uintptr_t, Gen *>;
std::deque<Gen *> &g_quarantine = *new std::deque<Gen *>;
size_t g_quarantine_bytes = 0;
uint64_t g_next_id = 1;
int64_t g_backed = 0;

int64_t backing_limit()
{
    static int64_t lim = getenv("CPB_STANDIN_MAX_BYTES") ? atoll(getenv("CPB_STANDIN_MAX_BYTES")) : (6ll << 30);
    return lim;
}

Gen *lookup(std::map<uintptr_t, Gen *> &m, const void *p)
{
    uintptr_t a = (uintptr_t)p;
    auto it = m.upper_bound(a);
    if (it == m.begin()) return nullptr;
    --it;
    Gen *g = it->second;
    size_t span = g->cap ? g->cap : 1;
    return a < (uintptr_t)g->base + span ? g : nullptr;
}

char *backing(size_t bytes, size_t align)
{
    if (g_backed + (int64_t)bytes > backing_limit()) {
        static bool said = false;
        if (!said)
            fprintf(stderr, "cuda stand-in: device and pinned memory of this process would pass %.1f GiB of host "
                            "memory (CPB_STANDIN_MAX_BYTES); the allocation fails as out of memory\n",
                    backing_limit() / 1073741824.0);
        said = true;
        return nullptr;
    }
    void *p = nullptr;
    if (posix_memalign(&p, align, bytes ? bytes : 1) != 0) return nullptr;
    g_backed += (int64_t)bytes;
    poison(p, bytes);
    return (char *)p;
}

void unback(Gen *g)
{
    g_backed -= (int64_t)g->cap;
    free(g->base);
}

Gen *new_gen(char *base, size_t size, size_t cap, Kind kind, int device, Pool *pool)
{
    Gen *g = new Gen;
    g->id = g_next_id++;
    g->base = base;
    g->size = size;
    g->cap = cap;
    g->kind = kind;
    g->device = device;
    g->pool = pool;
    g_live[(uintptr_t)base] = g;
    return g;
}

/* freed (non-pool) memory stays mapped and poisoned for a while, so a late access is named
 * as a use of freed memory instead of reading someone else's data */
void quarantine(Gen *g)
{
    g_freed[(uintptr_t)g->base] = g;
    g_quarantine.push_back(g);
    g_quarantine_bytes += g->cap;
    while (g_quarantine_bytes > (256u << 20) && !g_quarantine.empty()) {
        Gen *o = g_quarantine.front();
        g_quarantine.pop_front();
        g_quarantine_bytes -= o->cap;
        g_freed.erase((uintptr_t)o->base);
        unback(o);
        delete o;
    }
}

const char *kind_name(Kind k)
{
    return k == K_PINNED ? "pinned host" : k == K_POOL ? "pool" : "device";
}

/* the stream ordering rule of cudaFreeAsync: every use on another stream must be ordered
 * before the free (the free's stream waited, through events, on an event recorded after the
 * use); otherwise the memory may be reused while that stream still reads or writes it */
void check_free_order(Gen *g, Stream *s, const Clock &c, const char *api)
{
    for (size_t i = 0; i < g->last_use.size(); i++) {
        int serial = g->last_use[i].first;
        uint64_t u = g->last_use[i].second;
        if (serial == s->serial || at(c, serial) >= u) continue;
        violation("free before its last use on another stream", "CUDA Runtime API, Stream Ordered Memory Allocator, "
                  "cudaFreeAsync",
                  "%s of %zu bytes of %s memory on stream #%d, but '%s' (work %llu of stream #%d) uses it and is not "
                  "ordered before the free: record an event after the use and make the freeing stream wait on it",
                  api, g->size, kind_name(g->kind), s->serial, g->last_what[i].second.c_str(), (unsigned long long)u,
                  serial);
        set_sticky(cudaErrorIllegalAddress);
    }
}

void note_use(Gen *g, int serial, uint64_t seq, const char *what)
{
    for (size_t i = 0; i < g->last_use.size(); i++)
        if (g->last_use[i].first == serial) {
            if (seq > g->last_use[i].second) {
                g->last_use[i].second = seq;
                g->last_what[i].second = what;
            }
            return;
        }
    g->last_use.push_back({serial, seq});
    g->last_what.push_back({serial, what});
}

Pool *default_pool(Device *d, int dev)
{
    if (!d->default_pool) {
        Pool *p = new Pool;
        p->device = dev;
        p->is_default = true;
        d->default_pool = p;
        d->cur_pool = p;
    }
    return (Pool *)(d->cur_pool ? d->cur_pool : d->default_pool);
}

}  // namespace

std::vector<Pool *> &pools()
{
    static auto *v = new std::vector<Pool *>;
    return *v;
}

void poison(void *p, size_t n)
{
    if (p && n) memset(p, 0xff, n);
}

Gen *find(const void *p)
{
    std::lock_guard<std::recursive_mutex> g(lock());
    return lookup(g_live, p);
}

Gen *find_freed(const void *p)
{
    std::lock_guard<std::recursive_mutex> g(lock());
    return lookup(g_freed, p);
}

cudaError_t touch(Stream *s, uint64_t seq, const void *p, size_t bytes, const char *what, bool device_only)
{
    if (!p && !bytes) return cudaSuccess;
    std::lock_guard<std::recursive_mutex> lk(lock());
    Gen *g = lookup(g_live, p);
    if (!g) {
        if (Gen *f = lookup(g_freed, p)) {
            violation("use of freed memory", kMem,
                      "%s on stream #%d touches %p, inside %zu bytes of %s memory already freed%s", what, s->serial, p,
                      f->size, kind_name(f->kind), f->free_serial >= 0 ? " by a stream-ordered free" : "");
            set_sticky(cudaErrorIllegalAddress);
            return cudaErrorIllegalAddress;
        }
        if (device_only) {
            violation("device-accessible memory", "CUDA C Programming Guide, Page-Locked Host Memory",
                      "%s on stream #%d is given %p, which is pageable host memory a kernel or collective cannot reach "
                      "(allocate it with cudaMallocHost or on the device)",
                      what, s->serial, p);
            set_sticky(cudaErrorIllegalAddress);
            return cudaErrorIllegalAddress;
        }
        return cudaSuccess;
    }
    if ((uintptr_t)p + bytes > (uintptr_t)g->base + g->size) {
        violation("out of bounds", kMem,
                  "%s on stream #%d touches %zu bytes at offset %zu of a %zu-byte %s allocation: %zu bytes past its end",
                  what, s->serial, bytes, (size_t)((char *)p - g->base), g->size, kind_name(g->kind),
                  (size_t)((uintptr_t)p + bytes - ((uintptr_t)g->base + g->size)));
        set_sticky(cudaErrorIllegalAddress);
        return cudaErrorIllegalAddress;
    }
    if (g->device >= 0 && g->device != s->device) {
        violation("peer memory", "CUDA Runtime API, Peer Device Memory Access",
                  "%s on a stream of device %d touches memory of device %d without peer access", what, s->device,
                  g->device);
        set_sticky(cudaErrorIllegalAddress);
        return cudaErrorIllegalAddress;
    }
    note_use(g, s->serial, seq, what);
    return cudaSuccess;
}

/* a freed block of pool p goes back to the OS (lock() held) */
static void release_block(Pool *p, size_t i)
{
    Gen *g = p->free_blocks[i];
    p->free_blocks.erase(p->free_blocks.begin() + (long)i);
    g_freed.erase((uintptr_t)g->base);
    p->reserved -= g->cap;
    if (Device *d = sd::device(p->device)) d->allocated -= (int64_t)g->cap;
    unback(g);
    delete g;
}

/* give memory above the pools' release thresholds back (after a synchronization) */
void trim_pools(int device)
{
    std::lock_guard<std::recursive_mutex> lk(lock());
    for (Pool *p : pools()) {
        if (p->device != device || p->reserved <= p->threshold) continue;
        for (size_t i = 0; i < p->free_blocks.size() && p->reserved > p->threshold;) {
            if (!p->free_blocks[i]->free_done) {
                i++;
                continue;
            }
            release_block(p, i);
        }
    }
}

}  // namespace sd

using namespace sd;

extern "C" {

/* ================================================================ Memory Management */

/* cudaMalloc: device memory of the current device, aligned for any kind of variable */
cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    count("cudaMalloc");
    if (!devPtr) return ret(cudaErrorInvalidValue);
    Device *d = current();
    if (!d) return ret(cudaErrorInvalidDevice);
    if (sticky()) return sticky();
    std::lock_guard<std::recursive_mutex> lk(lock());
    if (size == 0) {
        *devPtr = nullptr;
        return cudaSuccess;
    }
    if (d->internal + d->allocated + (int64_t)size > (int64_t)d->prop.totalGlobalMem) return ret(cudaErrorMemoryAllocation);
    char *p = backing(size, 256);
    if (!p) return ret(cudaErrorMemoryAllocation);
    new_gen(p, size, size, K_DEVICE, current_device(), nullptr);
    d->allocated += (int64_t)size;
    *devPtr = p;
    return cudaSuccess;
}

/* cudaFree: cudaFree(0) only makes the context; otherwise the pointer must come from
 * cudaMalloc.  It synchronizes the device first (its documented implicit synchronization),
 * so no work still uses the memory. */
cudaError_t cudaFree(void *devPtr)
{
    count("cudaFree");
    Device *d = current();
    if (!d) return ret(cudaErrorInvalidDevice);
    if (!devPtr) return cudaSuccess;
    cudaError_t e = sync_device(current_device());
    std::lock_guard<std::recursive_mutex> lk(lock());
    auto it = g_live.find((uintptr_t)devPtr);
    if (it == g_live.end() || it->second->kind != K_DEVICE) {
        Gen *f = lookup(g_freed, devPtr);
        violation(f ? "double free" : "free of a pointer cudaMalloc did not return", kMem, "cudaFree(%p)%s", devPtr,
                  f ? ": it was freed already" : "");
        return ret(cudaErrorInvalidValue);
    }
    Gen *g = it->second;
    g_live.erase(it);
    g->freed = true;
    g->free_done = true;
    if (Device *gd = sd::device(g->device)) gd->allocated -= (int64_t)g->cap;
    poison(g->base, g->cap);
    quarantine(g);
    return ret(e);
}

/* cudaMallocHost: page-locked host memory, reachable from kernels through its address */
cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    count("cudaMallocHost");
    if (!ptr) return ret(cudaErrorInvalidValue);
    current();
    std::lock_guard<std::recursive_mutex> lk(lock());
    char *p = backing(size ? size : 1, 4096);
    if (!p) return ret(cudaErrorMemoryAllocation);
    new_gen(p, size, size ? size : 1, K_PINNED, -1, nullptr);
    *ptr = p;
    return cudaSuccess;
}

/* cudaFreeHost: memory from cudaMallocHost; waits for the device first */
cudaError_t cudaFreeHost(void *ptr)
{
    count("cudaFreeHost");
    if (!ptr) return cudaSuccess;
    cudaError_t e = cudaSuccess;
    for (int dev = 0; dev < device_count(); dev++) {
        cudaError_t x = sync_device(dev);
        if (e == cudaSuccess) e = x;
    }
    std::lock_guard<std::recursive_mutex> lk(lock());
    auto it = g_live.find((uintptr_t)ptr);
    if (it == g_live.end() || it->second->kind != K_PINNED) {
        violation("free of a pointer cudaMallocHost did not return", kMem, "cudaFreeHost(%p)", ptr);
        return ret(cudaErrorInvalidValue);
    }
    Gen *g = it->second;
    g_live.erase(it);
    g->freed = true;
    g->free_done = true;
    poison(g->base, g->cap);
    quarantine(g);
    return ret(e);
}

/* cudaMemGetInfo: free and total bytes of the current device: what this process's
 * allocations, pools and the driver (context, library buffers) take */
cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total)
{
    count("cudaMemGetInfo");
    Device *d = current();
    if (!d) return ret(cudaErrorInvalidDevice);
    std::lock_guard<std::recursive_mutex> lk(lock());
    int64_t used = d->internal + d->allocated;
    if (total) *total = d->prop.totalGlobalMem;
    if (free_b) *free_b = (size_t)((int64_t)d->prop.totalGlobalMem - used);
    return cudaSuccess;
}

/* ================================================================ Stream Ordered Memory Allocator */

/* cudaMemPoolCreate: pinned device memory of a valid device; no IPC handle types needed */
cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *props)
{
    count("cudaMemPoolCreate");
    if (!memPool || !props || props->allocType != cudaMemAllocationTypePinned ||
        props->location.type != cudaMemLocationTypeDevice || !sd::device(props->location.id)) {
        violation("memory pool properties", kPool, "cudaMemPoolCreate: allocType must be pinned, location a device");
        return ret(cudaErrorInvalidValue);
    }
    std::lock_guard<std::recursive_mutex> lk(lock());
    Pool *p = new Pool;
    p->device = props->location.id;
    pools().push_back(p);
    *memPool = p;
    return cudaSuccess;
}

static Pool *pool_of(cudaMemPool_t mp)
{
    for (Pool *p : pools())
        if (p == mp && !p->destroyed) return p;
    for (int i = 0; i < device_count(); i++)
        if (sd::device(i)->default_pool == mp) return (Pool *)mp;
    return nullptr;
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
    count("cudaMemPoolDestroy");
    std::lock_guard<std::recursive_mutex> lk(lock());
    Pool *p = pool_of(memPool);
    if (!p || p->is_default) {
        violation("pool handle", kPool, "cudaMemPoolDestroy(%p): not a live pool made by cudaMemPoolCreate", (void *)memPool);
        return ret(cudaErrorInvalidValue);
    }
    /* outstanding allocations keep their memory; completed frees go now */
    uint64_t keep = p->threshold;
    p->threshold = 0;
    trim_pools(p->device);
    p->threshold = keep;
    p->destroyed = true;
    return cudaSuccess;
}

/* cudaMemPoolSetAttribute: the reuse policies (int 0/1), the release threshold (uint64),
 * and the two high-waters, which can only be reset to zero (to the current amount); the
 * "current" amounts are read-only */
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
    count("cudaMemPoolSetAttribute");
    std::lock_guard<std::recursive_mutex> lk(lock());
    Pool *p = pool_of(memPool);
    if (!p || !value) return ret(cudaErrorInvalidValue);
    switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies: p->follow = *(int *)value != 0; return cudaSuccess;
    case cudaMemPoolReuseAllowOpportunistic: p->opportunistic = *(int *)value != 0; return cudaSuccess;
    case cudaMemPoolReuseAllowInternalDependencies: p->internal = *(int *)value != 0; return cudaSuccess;
    case cudaMemPoolAttrReleaseThreshold: p->threshold = *(uint64_t *)value; return cudaSuccess;
    case cudaMemPoolAttrReservedMemHigh:
    case cudaMemPoolAttrUsedMemHigh:
        if (*(uint64_t *)value != 0) {
            violation("pool high-water reset", kPool, "cudaMemPoolSetAttribute(%s, %llu): a high watermark can only be "
                      "reset to zero", attr == cudaMemPoolAttrReservedMemHigh ? "ReservedMemHigh" : "UsedMemHigh",
                      (unsigned long long)*(uint64_t *)value);
            return ret(cudaErrorInvalidValue);
        }
        if (attr == cudaMemPoolAttrReservedMemHigh) p->reserved_high = p->reserved;
        else p->used_high = p->used;
        return cudaSuccess;
    default:
        violation("pool attribute", kPool, "cudaMemPoolSetAttribute(attribute %d): read-only or unknown", (int)attr);
        return ret(cudaErrorInvalidValue);
    }
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
    count("cudaMemPoolGetAttribute");
    std::lock_guard<std::recursive_mutex> lk(lock());
    Pool *p = pool_of(memPool);
    if (!p || !value) return ret(cudaErrorInvalidValue);
    switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies: *(int *)value = p->follow; break;
    case cudaMemPoolReuseAllowOpportunistic: *(int *)value = p->opportunistic; break;
    case cudaMemPoolReuseAllowInternalDependencies: *(int *)value = p->internal; break;
    case cudaMemPoolAttrReleaseThreshold: *(uint64_t *)value = p->threshold; break;
    case cudaMemPoolAttrReservedMemCurrent: *(uint64_t *)value = p->reserved; break;
    case cudaMemPoolAttrReservedMemHigh: *(uint64_t *)value = p->reserved_high; break;
    case cudaMemPoolAttrUsedMemCurrent: *(uint64_t *)value = p->used; break;
    case cudaMemPoolAttrUsedMemHigh: *(uint64_t *)value = p->used_high; break;
    default: return ret(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

/* cudaMemPoolTrimTo: freed blocks go back to the OS as long as the pool keeps at least
 * minBytesToKeep reserved (a pool below it is left alone).  Outstanding allocations stay;
 * so does a block whose free the host has not observed (a synchronize, or a query that saw
 * the free's stream done): the documentation lets the driver count such a block as
 * outstanding, and the stand-in always does, so a trim before the synchronization that
 * should precede it releases nothing. */
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
    count("cudaMemPoolTrimTo");
    std::lock_guard<std::recursive_mutex> lk(lock());
    Pool *p = pool_of(memPool);
    if (!p) {
        violation("pool handle", kPool, "cudaMemPoolTrimTo(%p): not a live pool", (void *)memPool);
        return ret(cudaErrorInvalidValue);
    }
    const Clock &host = host_clock();
    for (size_t i = 0; i < p->free_blocks.size();) {
        Gen *g = p->free_blocks[i];
        bool observed = g->free_done && at(host, g->free_serial) >= g->free_seq;
        if (!observed || p->reserved < minBytesToKeep + g->cap) {
            i++;
            continue;
        }
        release_block(p, i);
    }
    return cudaSuccess;
}

/* cudaMallocFromPoolAsync: memory usable by work on `stream` after this point in stream
 * order (and by other streams once ordered after it) */
cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
    count("cudaMallocFromPoolAsync");
    if (!ptr) return ret(cudaErrorInvalidValue);
    if (sticky()) return sticky();
    std::lock_guard<std::recursive_mutex> lk(lock());
    Pool *p = pool_of(memPool);
    Stream *s = stream_of(stream, current_device());
    if (!p || !s) {
        violation("pool/stream handle", kPool, "cudaMallocFromPoolAsync(pool %p, stream %p)", (void *)memPool, (void *)stream);
        return ret(p ? cudaErrorInvalidResourceHandle : cudaErrorInvalidValue);
    }
    if (s->device != p->device) {
        violation("pool device", kPool, "cudaMallocFromPoolAsync: pool of device %d, stream of device %d", p->device,
                  s->device);
        return ret(cudaErrorInvalidValue);
    }
    Device *d = sd::device(p->device);
    if (size == 0) {
        *ptr = nullptr;
        return cudaSuccess;
    }
    Clock c = s->clock;
    join(c, host_clock());
    /* a freed block this allocation may take, by the pool's reuse rules; best fit */
    Gen *best = nullptr;
    int best_how = 0; /* 1 ordered, 2 opportunistic, 3 with an inserted dependency */
    for (Gen *g : p->free_blocks) {
        if (g->cap < size || g->cap > 2 * size + 4096) continue;
        int how = 0;
        if (g->free_serial == s->serial || (p->follow && at(c, g->free_serial) >= g->free_seq)) how = 1;
        else if (p->opportunistic && g->free_done) how = 2;
        else if (p->internal) how = 3;
        if (!how) continue;
        if (!best || how < best_how || (how == best_how && g->cap < best->cap)) best = g, best_how = how;
    }
    Gen *g;
    if (best) {
        for (size_t i = 0; i < p->free_blocks.size(); i++)
            if (p->free_blocks[i] == best) {
                p->free_blocks.erase(p->free_blocks.begin() + (long)i);
                break;
            }
        g_freed.erase((uintptr_t)best->base);
        if (best_how == 3) enqueue_wait(s, stream_by_serial(best->free_serial), best->free_seq, best->free_clock);
        g = new_gen(best->base, size, best->cap, K_POOL, p->device, p);
        delete best;
    } else {
        if (d->internal + d->allocated + (int64_t)size > (int64_t)d->prop.totalGlobalMem) return ret(cudaErrorMemoryAllocation);
        char *b = backing(size, 256);
        if (!b) return ret(cudaErrorMemoryAllocation);
        g = new_gen(b, size, size, K_POOL, p->device, p);
        p->reserved += size;
        d->allocated += (int64_t)size;
        if (p->reserved > p->reserved_high) p->reserved_high = p->reserved;
    }
    p->used += size;
    if (p->used > p->used_high) p->used_high = p->used;
    /* the allocation is a point in stream order: uses on this stream come after it */
    note_use(g, s->serial, next_seq(s) - 1, "cudaMallocFromPoolAsync");
    *ptr = g->base;
    return cudaSuccess;
}

/* cudaMallocAsync: from the device's current pool (its default pool unless changed) */
cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t stream)
{
    Device *d = current();
    if (!d) return ret(cudaErrorInvalidDevice);
    Pool *p;
    {
        std::lock_guard<std::recursive_mutex> lk(lock());
        p = default_pool(d, current_device());
    }
    return cudaMallocFromPoolAsync(devPtr, size, p, stream);
}

/* cudaFreeAsync: the memory goes back to its pool at this point of `stream`'s order */
cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t stream)
{
    count("cudaFreeAsync");
    if (!devPtr) return cudaSuccess;
    std::lock_guard<std::recursive_mutex> lk(lock());
    Stream *s = stream_of(stream, current_device());
    auto it = g_live.find((uintptr_t)devPtr);
    if (!s || it == g_live.end() || it->second->kind != K_POOL) {
        Gen *f = lookup(g_freed, devPtr);
        violation(f ? "double free" : "free of a pointer the pools did not return",
                  "CUDA Runtime API, Stream Ordered Memory Allocator, cudaFreeAsync", "cudaFreeAsync(%p, stream %p)%s",
                  devPtr, (void *)stream, f ? ": it was freed already" : "");
        return ret(s ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
    }
    Gen *g = it->second;
    Pool *p = g->pool;
    Clock c = s->clock;
    join(c, host_clock());
    check_free_order(g, s, c, "cudaFreeAsync");
    g_live.erase(it);
    g->freed = true;
    g->free_serial = s->serial;
    p->used -= g->size;
    /* the block may be reused (and this record gone) before the free runs: by value */
    char *base = g->base;
    size_t cap = g->cap;
    uint64_t id = g->id;
    uint64_t seq = enqueue(s, "cudaFreeAsync", [base, cap, id] {
        poison(base, cap);
        std::lock_guard<std::recursive_mutex> l2(lock());
        Gen *f = lookup(g_freed, base);
        if (f && f->id == id) f->free_done = true;
        return cudaSuccess;
    });
    g->free_seq = seq;
    g->free_clock = s->clock;
    g->last_use.clear();
    g->last_what.clear();
    g->size = g->cap;
    g_freed[(uintptr_t)g->base] = g;
    p->free_blocks.push_back(g);
    return cudaSuccess;
}

}  // extern "C"
