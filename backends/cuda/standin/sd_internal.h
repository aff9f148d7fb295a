/* sd_internal.h — what the files of the CPU stand-in of the CUDA runtime, cuBLAS, NCCL and
 * NVTX share: rules and errors, devices, the allocation registry, lazy streams, statistics.
 *
 * Model (docs/cuda.md, "The CPU stand-in"):
 * - Device memory is host memory with a registry entry per allocation ("generation").
 *   Every piece of stream work says at enqueue which ranges it touches; the registry checks
 *   that they lie inside a live allocation a device can reach, and remembers the last use of
 *   each allocation per stream.  A stream-ordered free must be ordered (same stream, or an
 *   event the freeing stream waited on) after every earlier use on other streams.  Freed
 *   memory is filled with 0xff bytes (NaN as fp32 and bf16).
 * - Happens-before is tracked with vector clocks: a stream's clock knows its own enqueued
 *   items, what it waited on through events, and what the host had synchronized with.
 * - Streams are lazy: enqueued work runs only when something forces it (a synchronize, a
 *   query, an event the host waits on, a stream wait whose event needs it, a synchronous
 *   copy); each stream has an executor thread that runs its released work in order. */
#ifndef CPB_SD_INTERNAL_H
#define CPB_SD_INTERNAL_H

#include <cuda_runtime_api.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

/* the opaque handle types of the headers, defined here */
struct CUstream_st;
struct CUevent_st;
struct CUmemPoolHandle_st;

namespace sd {

/* ---------------------------------------------------------------- rules, errors */

/* A broken documented rule: one line on stderr, "cuda stand-in: rule broken: <rule>
 * [<where NVIDIA documents it>]: <details>", and a count in the statistics.  ctest fails
 * every stand-in test whose output has that line, so a caller that drops the returned
 * error still fails. */
void violation(const char *rule, const char *doc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* the calling host thread's last error (cudaGetLastError); returns e */
cudaError_t ret(cudaError_t e);
/* a fault while stream work ran (a kernel out of bounds, a broken rule at run time): sticky
 * for the process, as a device fault is for a CUDA context */
void set_sticky(cudaError_t e);
cudaError_t sticky();

/* ---------------------------------------------------------------- devices */

struct Device {
    int phys;           /* index in the machine's list */
    cudaDeviceProp prop;
    bool ctx_up = false;
    int64_t internal = 0; /* driver-side bytes: context, cuBLAS default workspaces, NCCL buffers */
    int64_t allocated = 0; /* bytes of live allocations backed by this device (incl. pool reserves) */
    std::map<const void *, int> max_dyn_smem; /* cudaFuncAttributeMaxDynamicSharedMemorySize by kernel */
    CUmemPoolHandle_st *default_pool = nullptr, *cur_pool = nullptr;
};
int device_count();       /* visible devices (CUDA_VISIBLE_DEVICES honoured) */
Device *device(int dev);  /* nullptr when out of range */
int current_device();     /* of the calling host thread */
Device *current();        /* the current device, its context made on first use */
void context_up(Device *d);
size_t mem_pitch(const Device *d); /* memPitch, or CPB_STANDIN_MEMPITCH (a test knob) */
/* one process-wide lock for the host-side state (registry, clocks, streams, pools) */
std::recursive_mutex &lock();

/* ---------------------------------------------------------------- clocks */

using Clock = std::vector<uint64_t>; /* by stream serial: last item of that stream known */
void join(Clock &a, const Clock &b);
inline uint64_t at(const Clock &c, int serial)
{
    return serial < (int)c.size() ? c[(size_t)serial] : 0;
}
Clock &host_clock(); /* what the host has synchronized with (items known complete) */

/* ---------------------------------------------------------------- streams */

struct Item {
    uint64_t seq = 0;
    std::string what;
    std::function<cudaError_t()> run;
    CUstream_st *wait_on = nullptr; /* a wait item: run once wait_on has done wait_seq */
    uint64_t wait_seq = 0;
};

}  // namespace sd

struct CUstream_st {
    int serial = 0;
    int device = 0;
    unsigned flags = 0;
    int priority = 0;
    bool legacy = false;
    bool destroyed = false;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<sd::Item *> q;
    uint64_t enq = 0, released = 0, done = 0;
    cudaError_t err = cudaSuccess;
    sd::Clock clock;
    std::thread exec;
    bool stop = false;
};

struct CUevent_st {
    unsigned flags = 0;
    bool recorded = false;
    CUstream_st *s = nullptr;
    uint64_t seq = 0;
    sd::Clock clock;
    /* a timing event's time (steady clock, ms) when its stream reached the record: written
     * by the stream's executor, read once the record is complete; shared, because a later
     * record or cudaEventDestroy may come before the item runs */
    std::shared_ptr<std::atomic<double>> stamp;
};

namespace sd {

using Stream = CUstream_st;

/* the stream a call names: nullptr / cudaStreamLegacy are the device's legacy stream;
 * nullptr result when the handle is not a live stream */
Stream *stream_of(cudaStream_t s, int device);
bool is_stream(cudaStream_t s);
/* enqueue work (lock() held by the caller or taken here); returns the item's sequence number.
 * The stream's clock then knows the host's clock and this item. */
uint64_t enqueue(Stream *s, std::string what, std::function<cudaError_t()> run);
uint64_t enqueue_wait(Stream *s, Stream *on, uint64_t seq, const Clock &clock);
/* the sequence number the next enqueue on s will get */
uint64_t next_seq(Stream *s);
/* release s's work up to seq (work runs) */
void force(Stream *s, uint64_t seq);
/* release and wait; the host then knows everything up to seq; returns s's first failure */
cudaError_t wait_done(Stream *s, uint64_t seq);
cudaError_t sync_stream(Stream *s);
cudaError_t sync_device(int device);
/* release every stream's pending work (a collective stalled on its peers: a GPU would have
 * run it) */
void release_all();
bool stream_idle(Stream *s);
Stream *stream_by_serial(int serial);

/* ---------------------------------------------------------------- memory */

enum Kind { K_DEVICE, K_PINNED, K_POOL };

struct Pool;
struct Gen {
    uint64_t id = 0;
    char *base = nullptr;
    size_t size = 0;  /* requested */
    size_t cap = 0;   /* backing block (pool blocks may be larger than the request) */
    Kind kind = K_DEVICE;
    int device = -1;  /* -1 for pinned host memory */
    Pool *pool = nullptr;
    bool freed = false;
    int free_serial = -1;
    uint64_t free_seq = 0;
    bool free_done = false; /* the free has run (memory poisoned) */
    Clock free_clock;
    std::vector<std::pair<int, uint64_t>> last_use; /* (stream serial, item) */
    std::vector<std::pair<int, std::string>> last_what;
};

/* a span of memory that stream work touches */
struct Span {
    const void *p;
    size_t bytes;
    const char *what;
};

/* check and record the use of [p, p+bytes) by item `seq` of stream s (at enqueue).
 * device_only: a kernel or a collective (pageable host memory is not reachable).
 * Returns cudaSuccess, or the error the GPU would raise (also made sticky). */
cudaError_t touch(Stream *s, uint64_t seq, const void *p, size_t bytes, const char *what, bool device_only);
/* the live allocation holding p (nullptr: pageable host memory or freed) */
Gen *find(const void *p);
/* p lies in memory already freed (for messages) */
Gen *find_freed(const void *p);
void poison(void *p, size_t n);
/* give pool memory above the release thresholds back (after a synchronization) */
void trim_pools(int device);

/* ---------------------------------------------------------------- statistics */

/* count a call of `api` (also by the NVTX "trial" range it falls in) */
void count(const char *api);
void count_value(const char *what, int64_t v); /* e.g. stream priorities */
void trial_range_push(const char *name);
void trial_range_pop();
/* a violation when the calling thread has an NCCL group open with operations in it */
void nccl_check_open_group(const char *api);
/* process-wide MPI world rank, or -1 without MPI */
int world_rank();

}  // namespace sd

#endif
