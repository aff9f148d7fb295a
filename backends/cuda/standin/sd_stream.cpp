/* sd_stream.cpp — lazy streams and events: the CUDA Runtime API sections "Stream
 * Management", "Event Management" and the copies of "Memory Management" (cudaMemcpy,
 * cudaMemcpyAsync, cudaMemcpy2DAsync, cudaMemsetAsync).
 *
 * Work enqueued on a stream runs only when something forces it; each stream's executor
 * thread runs its released work in order, so a collective blocked on its peers on one
 * stream does not stop another stream of the same process.  What forces work: the host
 * synchronizing or querying a stream or an event, a synchronous copy, a stream wait whose
 * event needs it (the waiting stream's executor forces the recording stream up to the
 * event), and, as a last resort, a collective that waits on its peers for a while (then all
 * of this process's pending work is released, as a GPU would run it anyway).  A missing
 * wait then makes the consumer run before its producer, the same way every run. */
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>

#include "sd_internal.h"

namespace sd {

namespace {

std::vector<Stream *> &streams()
{
    static auto *v = new std::vector<Stream *>;
    return *v;
}

std::set<const void *> &live_handles()
{
    static auto *s = new std::set<const void *>;
    return *s;
}

std::map<int, Stream *> &legacy_streams()
{
    static auto *m = new std::map<int, Stream *>;
    return *m;
}

void run_item(Stream *s, Item *it)
{
    cudaError_t e = cudaSuccess;
    if (it->wait_on) {
        force(it->wait_on, it->wait_seq);
        std::unique_lock<std::mutex> lk(it->wait_on->mu);
        it->wait_on->cv.wait(lk, [&] { return it->wait_on->done >= it->wait_seq; });
    } else if (sticky() == cudaSuccess) {
        e = it->run();
    }
    if (e != cudaSuccess) set_sticky(e); /* a fault in device work ends the context */
    std::lock_guard<std::mutex> g(s->mu);
    if (e != cudaSuccess && s->err == cudaSuccess) s->err = e;
}

void executor(Stream *s)
{
    std::unique_lock<std::mutex> lk(s->mu);
    for (;;) {
        s->cv.wait(lk, [&] { return (!s->q.empty() && s->q.front()->seq <= s->released) || (s->stop && s->q.empty()); });
        if (s->q.empty()) return; /* stopped, drained */
        Item *it = s->q.front();
        lk.unlock();
        run_item(s, it);
        lk.lock();
        s->q.pop_front();
        s->done = it->seq;
        s->cv.notify_all();
        lk.unlock();
        delete it;
        lk.lock();
    }
}

Stream *new_stream(int device, unsigned flags, int priority, bool legacy)
{
    std::lock_guard<std::recursive_mutex> g(lock());
    Stream *s = new Stream;
    s->serial = (int)streams().size();
    s->device = device;
    s->flags = flags;
    s->priority = priority;
    s->legacy = legacy;
    streams().push_back(s);
    live_handles().insert(s);
    s->exec = std::thread(executor, s);
    s->exec.detach();
    return s;
}

Stream *legacy(int device)
{
    std::lock_guard<std::recursive_mutex> g(lock());
    auto &m = legacy_streams();
    auto it = m.find(device);
    if (it != m.end()) return it->second;
    Stream *s = new_stream(device, cudaStreamDefault, 0, true);
    m[device] = s;
    return s;
}

/* the legacy default stream synchronizes with the device's blocking streams (CUDA Runtime
 * API, "Stream synchronization behavior"): work on it waits for theirs, theirs for it */
void legacy_order(Stream *s)
{
    if (s->legacy) {
        for (Stream *o : streams())
            if (o != s && !o->legacy && !o->destroyed && o->device == s->device && o->flags == cudaStreamDefault && o->enq)
                enqueue_wait(s, o, o->enq, o->clock);
    } else if (s->flags == cudaStreamDefault) {
        auto it = legacy_streams().find(s->device);
        if (it != legacy_streams().end() && it->second->enq) enqueue_wait(s, it->second, it->second->enq, it->second->clock);
    }
}

uint64_t push(Stream *s, Item *it)
{
    std::lock_guard<std::recursive_mutex> g(lock());
    join(s->clock, host_clock());
    if ((int)s->clock.size() <= s->serial) s->clock.resize((size_t)s->serial + 1, 0);
    std::lock_guard<std::mutex> q(s->mu);
    it->seq = ++s->enq;
    s->clock[(size_t)s->serial] = it->seq;
    s->q.push_back(it);
    return it->seq;
}

const char *kEvent = "CUDA Runtime API, Event Management";
const char *kStream = "CUDA Runtime API, Stream Management";

}  // namespace

bool is_stream(cudaStream_t h)
{
    std::lock_guard<std::recursive_mutex> g(lock());
    return live_handles().count(h) && !((Stream *)h)->destroyed;
}

Stream *stream_of(cudaStream_t h, int device)
{
    if (h == nullptr || h == cudaStreamLegacy || h == cudaStreamPerThread) return legacy(device);
    if (!is_stream(h)) return nullptr;
    return (Stream *)h;
}

uint64_t next_seq(Stream *s)
{
    std::lock_guard<std::mutex> q(s->mu);
    return s->enq + 1;
}

uint64_t enqueue(Stream *s, std::string what, std::function<cudaError_t()> run)
{
    std::lock_guard<std::recursive_mutex> g(lock());
    legacy_order(s);
    Item *it = new Item;
    it->what = std::move(what);
    it->run = std::move(run);
    return push(s, it);
}

uint64_t enqueue_wait(Stream *s, Stream *on, uint64_t seq, const Clock &clock)
{
    std::lock_guard<std::recursive_mutex> g(lock());
    Item *it = new Item;
    it->what = "wait";
    it->wait_on = on;
    it->wait_seq = seq;
    uint64_t n = push(s, it);
    join(s->clock, clock);
    return n;
}

void force(Stream *s, uint64_t seq)
{
    std::lock_guard<std::mutex> q(s->mu);
    if (seq > s->enq) seq = s->enq;
    if (seq > s->released) {
        s->released = seq;
        s->cv.notify_all();
    }
}

cudaError_t wait_done(Stream *s, uint64_t seq)
{
    force(s, seq);
    {
        std::unique_lock<std::mutex> lk(s->mu);
        s->cv.wait(lk, [&] { return s->done >= seq; });
    }
    return sticky();
}

cudaError_t sync_stream(Stream *s)
{
    uint64_t seq;
    Clock known;
    {
        std::lock_guard<std::recursive_mutex> g(lock());
        std::lock_guard<std::mutex> q(s->mu);
        seq = s->enq;
        known = s->clock;
    }
    cudaError_t e = wait_done(s, seq);
    std::lock_guard<std::recursive_mutex> g(lock());
    join(host_clock(), known);
    trim_pools(s->device);
    return e;
}

cudaError_t sync_device(int device)
{
    std::vector<Stream *> v;
    {
        std::lock_guard<std::recursive_mutex> g(lock());
        for (Stream *s : streams())
            if (s->device == device && !s->destroyed) v.push_back(s);
    }
    cudaError_t e = cudaSuccess;
    for (Stream *s : v) {
        cudaError_t x = sync_stream(s);
        if (e == cudaSuccess) e = x;
    }
    return e;
}

void release_all()
{
    std::vector<Stream *> v;
    {
        std::lock_guard<std::recursive_mutex> g(lock());
        v = streams();
    }
    for (Stream *s : v) force(s, UINT64_MAX);
}

Stream *stream_by_serial(int serial)
{
    std::lock_guard<std::recursive_mutex> g(lock());
    return serial >= 0 && serial < (int)streams().size() ? streams()[(size_t)serial] : nullptr;
}

bool stream_idle(Stream *s)
{
    std::lock_guard<std::mutex> q(s->mu);
    return s->done == s->enq;
}

}  // namespace sd

using namespace sd;

/* ================================================================ Stream Management */

extern "C" {

/* cudaStreamCreateWithPriority: flags cudaStreamDefault or cudaStreamNonBlocking; a
 * priority outside [greatest, least] is clamped (lower numbers are greater priorities) */
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
{
    count("cudaStreamCreate*");
    if (!pStream || (flags & ~(unsigned)cudaStreamNonBlocking)) {
        violation("stream flags", kStream, "cudaStreamCreateWithPriority(flags 0x%x): flags are cudaStreamDefault or "
                  "cudaStreamNonBlocking", flags);
        return ret(cudaErrorInvalidValue);
    }
    Device *d = current();
    if (!d) return ret(cudaErrorInvalidDevice);
    if (priority < -5) priority = -5;
    if (priority > 0) priority = 0;
    count_value("stream priority", priority);
    *pStream = new_stream(current_device(), flags, priority, false);
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    return cudaStreamCreateWithPriority(pStream, flags, 0);
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    return cudaStreamCreateWithPriority(pStream, cudaStreamDefault, 0);
}

cudaError_t cudaStreamGetPriority(cudaStream_t h, int *priority)
{
    Stream *s = stream_of(h, current_device());
    if (!s || !priority) return ret(cudaErrorInvalidResourceHandle);
    *priority = s->priority;
    return cudaSuccess;
}

/* cudaStreamDestroy returns at once; work still queued completes, then the stream goes */
cudaError_t cudaStreamDestroy(cudaStream_t h)
{
    count("cudaStreamDestroy");
    if (h == nullptr || !is_stream(h)) {
        violation("stream handle", kStream, "cudaStreamDestroy of %p, which is not a live stream", (void *)h);
        return ret(cudaErrorInvalidResourceHandle);
    }
    Stream *s = (Stream *)h;
    {
        std::lock_guard<std::recursive_mutex> g(lock());
        s->destroyed = true;
        live_handles().erase(s);
    }
    std::lock_guard<std::mutex> q(s->mu);
    s->released = s->enq;
    s->stop = true;
    s->cv.notify_all();
    return cudaSuccess;
}

/* cudaStreamSynchronize blocks until the stream's work is done */
cudaError_t cudaStreamSynchronize(cudaStream_t h)
{
    count("cudaStreamSynchronize");
    nccl_check_open_group("cudaStreamSynchronize");
    Stream *s = stream_of(h, current_device());
    if (!s) {
        violation("stream handle", kStream, "cudaStreamSynchronize of %p, which is not a live stream", (void *)h);
        return ret(cudaErrorInvalidResourceHandle);
    }
    return ret(sync_stream(s));
}

/* cudaStreamQuery: cudaSuccess when all the stream's work is done, else cudaErrorNotReady.
 * A host that polls wants the work done: the query releases it. */
cudaError_t cudaStreamQuery(cudaStream_t h)
{
    count("cudaStreamQuery");
    Stream *s = stream_of(h, current_device());
    if (!s) return ret(cudaErrorInvalidResourceHandle);
    force(s, UINT64_MAX);
    if (sticky() != cudaSuccess) return sticky();
    if (!stream_idle(s)) return cudaErrorNotReady;
    std::lock_guard<std::recursive_mutex> g(lock());
    join(host_clock(), s->clock);
    return cudaSuccess;
}

/* cudaStreamWaitEvent: later work on the stream waits for the event's most recent record;
 * flags 0 or cudaEventWaitExternal; an event never recorded is complete */
cudaError_t cudaStreamWaitEvent(cudaStream_t h, cudaEvent_t event, unsigned int flags)
{
    count("cudaStreamWaitEvent");
    Stream *s = stream_of(h, current_device());
    std::lock_guard<std::recursive_mutex> g(lock());
    if (!s || !event || !live_handles().count(event)) {
        violation("stream/event handle", kStream, "cudaStreamWaitEvent(stream %p, event %p): not a live stream and event",
                  (void *)h, (void *)event);
        return ret(cudaErrorInvalidResourceHandle);
    }
    if (flags & ~(unsigned)cudaEventWaitExternal) return ret(cudaErrorInvalidValue);
    CUevent_st *e = event;
    if (!e->recorded) return cudaSuccess;
    enqueue_wait(s, e->s, e->seq, e->clock);
    return cudaSuccess;
}

/* ================================================================ Event Management */

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    count("cudaEventCreate*");
    unsigned ok = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
    if (!event || (flags & ~ok) || ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming))) {
        violation("event flags", kEvent, "cudaEventCreateWithFlags(0x%x)", flags);
        return ret(cudaErrorInvalidValue);
    }
    current();
    std::lock_guard<std::recursive_mutex> g(lock());
    CUevent_st *e = new CUevent_st;
    e->flags = flags;
    live_handles().insert(e);
    *event = e;
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    return cudaEventCreateWithFlags(event, cudaEventDefault);
}

/* cudaEventRecord captures the stream's work so far; a later record replaces it for later
 * waits and queries */
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t h)
{
    count("cudaEventRecord");
    Stream *s = stream_of(h, current_device());
    std::lock_guard<std::recursive_mutex> g(lock());
    if (!s || !event || !live_handles().count(event)) {
        violation("stream/event handle", kEvent, "cudaEventRecord(event %p, stream %p): not a live event and stream",
                  (void *)event, (void *)h);
        return ret(cudaErrorInvalidResourceHandle);
    }
    event->recorded = true;
    event->s = s;
    if (!(event->flags & cudaEventDisableTiming)) {
        /* a timing event takes the time when the stream's work reaches it: an item of its own */
        auto stamp = std::make_shared<std::atomic<double>>(-1.0);
        event->stamp = stamp;
        enqueue(s, "cudaEventRecord", [stamp] {
            auto t = std::chrono::steady_clock::now().time_since_epoch();
            stamp->store(std::chrono::duration<double, std::milli>(t).count());
            return cudaSuccess;
        });
    }
    {
        std::lock_guard<std::mutex> q(s->mu);
        event->seq = s->enq;
    }
    event->clock = s->clock;
    join(event->clock, host_clock());
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
    count("cudaEventQuery");
    CUevent_st *e = event;
    {
        std::lock_guard<std::recursive_mutex> g(lock());
        if (!e || !live_handles().count(e)) return ret(cudaErrorInvalidResourceHandle);
        if (!e->recorded) return cudaSuccess;
    }
    force(e->s, e->seq);
    std::lock_guard<std::mutex> q(e->s->mu);
    return e->s->done >= e->seq ? sticky() : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    count("cudaEventSynchronize");
    CUevent_st *e = event;
    Clock known;
    {
        std::lock_guard<std::recursive_mutex> g(lock());
        if (!e || !live_handles().count(e)) return ret(cudaErrorInvalidResourceHandle);
        if (!e->recorded) return cudaSuccess;
        known = e->clock;
    }
    cudaError_t r = wait_done(e->s, e->seq);
    std::lock_guard<std::recursive_mutex> g(lock());
    join(host_clock(), known);
    return ret(r);
}

/* cudaEventElapsedTime: milliseconds between two completed records of timing events.
 * Not a way to wait: an event not yet complete is cudaErrorNotReady (its work is not
 * released here); an event never recorded, or made with cudaEventDisableTiming, is
 * cudaErrorInvalidResourceHandle (the documented returns). */
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    count("cudaEventElapsedTime");
    if (!ms) return ret(cudaErrorInvalidValue);
    std::lock_guard<std::recursive_mutex> g(lock());
    if (!start || !end || !live_handles().count(start) || !live_handles().count(end)) {
        violation("event handle", kEvent, "cudaEventElapsedTime(%p, %p): not live events", (void *)start, (void *)end);
        return ret(cudaErrorInvalidResourceHandle);
    }
    if ((start->flags | end->flags) & cudaEventDisableTiming) {
        violation("event timing", kEvent, "cudaEventElapsedTime of an event made with cudaEventDisableTiming");
        return ret(cudaErrorInvalidResourceHandle);
    }
    if (!start->recorded || !end->recorded) {
        violation("event timing", kEvent, "cudaEventElapsedTime of an event that was never recorded");
        return ret(cudaErrorInvalidResourceHandle);
    }
    for (CUevent_st *e : {start, end}) {
        std::lock_guard<std::mutex> q(e->s->mu);
        if (e->s->done < e->seq) return cudaErrorNotReady;
    }
    *ms = (float)(end->stamp->load() - start->stamp->load());
    return sticky();
}

/* cudaEventDestroy returns at once; waits already enqueued keep what they captured */
cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    count("cudaEventDestroy");
    std::lock_guard<std::recursive_mutex> g(lock());
    if (!event || !live_handles().count(event)) {
        violation("event handle", kEvent, "cudaEventDestroy of %p, which is not a live event", (void *)event);
        return ret(cudaErrorInvalidResourceHandle);
    }
    live_handles().erase(event);
    delete event;
    return cudaSuccess;
}

}  // extern "C"
