/* sd_copy.cpp — copies and memsets (CUDA Runtime API, "Memory Management": cudaMemcpy,
 * cudaMemcpyAsync, cudaMemcpy2DAsync, cudaMemsetAsync), with the rules of those entries and
 * of "API synchronization behavior":
 * - the kind must match the pointers (cudaMemcpyDefault infers it); the areas may not
 *   overlap;
 * - for the 2-D copy, width must not exceed either pitch, and neither pitch may exceed the
 *   device's maximum (memPitch, 2147483647 bytes on an H100);
 * - from pageable host memory the call returns once the source is staged (the host may
 *   then reuse it); to pageable host memory it returns once the copy is done; cudaMemcpy
 *   (the legacy default stream) returns once the copy is done. */
#include <cstring>
#include <memory>

#include "sd_internal.h"

using namespace sd;

namespace {

const char *kCopy = "CUDA Runtime API, Memory Management";

enum Where { W_PAGEABLE, W_PINNED, W_DEVICE };

Where where(const void *p)
{
    Gen *g = find(p);
    if (!g) return W_PAGEABLE;
    return g->kind == K_PINNED ? W_PINNED : W_DEVICE;
}

const char *where_name(Where w)
{
    return w == W_PAGEABLE ? "pageable host" : w == W_PINNED ? "pinned host" : "device";
}

/* the direction the kind names against where the pointers are */
bool kind_ok(cudaMemcpyKind kind, Where dst, Where src)
{
    auto host_ok = [](Where w) { return w != W_DEVICE; };
    auto dev_ok = [](Where w) { return w != W_PAGEABLE; }; /* pinned memory is device-addressable (UVA) */
    switch (kind) {
    case cudaMemcpyHostToHost: return host_ok(dst) && host_ok(src);
    case cudaMemcpyHostToDevice: return dev_ok(dst) && host_ok(src);
    case cudaMemcpyDeviceToHost: return host_ok(dst) && dev_ok(src);
    case cudaMemcpyDeviceToDevice: return dev_ok(dst) && dev_ok(src);
    case cudaMemcpyDefault: return true;
    default: return false;
    }
}

bool overlap(const void *a, size_t na, const void *b, size_t nb)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + nb && y < x + na;
}

/* one copy of `height` rows of `width` bytes (height 1: a plain copy) */
cudaError_t copy(const char *api, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                 cudaMemcpyKind kind, cudaStream_t stream, bool sync)
{
    count(api);
    if (sticky()) return sticky();
    Device *d = current();
    if (!d) return ret(cudaErrorInvalidDevice);
    Stream *s = stream_of(sync ? nullptr : stream, current_device());
    if (!s) {
        violation("stream handle", kCopy, "%s on %p, which is not a live stream", api, (void *)stream);
        return ret(cudaErrorInvalidResourceHandle);
    }
    if (width == 0 || height == 0) return cudaSuccess;
    size_t dspan = (height - 1) * dpitch + width, sspan = (height - 1) * spitch + width;
    if (!dst || !src) return ret(cudaErrorInvalidValue);
    if (find_freed(dst) && !find(dst)) return touch(s, 0, dst, dspan, api, false);
    if (find_freed(src) && !find(src)) return touch(s, 0, src, sspan, api, false);
    Where wd = where(dst), ws = where(src);
    if (!kind_ok(kind, wd, ws)) {
        violation("copy direction", kCopy, "%s with kind %d from %s to %s memory (the kind must match the pointers; "
                  "cudaMemcpyDefault infers it)", api, (int)kind, where_name(ws), where_name(wd));
        return ret(cudaErrorInvalidMemcpyDirection);
    }
    if (overlap(dst, dspan, src, sspan)) {
        violation("overlapping copy", kCopy, "%s: the destination and source areas overlap", api);
        return ret(cudaErrorInvalidValue);
    }
    std::lock_guard<std::recursive_mutex> lk(lock());
    uint64_t seq = next_seq(s);
    cudaError_t e = touch(s, seq, dst, dspan, api, false);
    if (e == cudaSuccess) e = touch(s, seq, src, sspan, api, false);
    if (e != cudaSuccess) return ret(e);
    const char *from = (const char *)src;
    std::shared_ptr<std::vector<char>> staged;
    if (ws == W_PAGEABLE) {
        /* the host may reuse a pageable source as soon as the call returns */
        staged = std::make_shared<std::vector<char>>((const char *)src, (const char *)src + sspan);
        from = staged->data();
        count("copy from pageable host memory");
    }
    char *to = (char *)dst;
    enqueue(s, api, [=] {
        if (height == 1 || (dpitch == width && spitch == width)) {
            memcpy(to, from, width * height);
        } else {
            for (size_t r = 0; r < height; r++) memcpy(to + r * dpitch, from + r * spitch, width);
        }
        (void)staged;
        return cudaSuccess;
    });
    if (sync || wd == W_PAGEABLE) return ret(sync_stream(s));
    return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return copy("cudaMemcpyAsync", dst, count, src, count, count, 1, kind, stream, false);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    return copy("cudaMemcpy", dst, count, src, count, count, 1, kind, nullptr, true);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind, cudaStream_t stream)
{
    Device *d = current();
    if (!d) return ret(cudaErrorInvalidDevice);
    if (width > dpitch || width > spitch) {
        violation("2-D copy width", "CUDA Runtime API, Memory Management, cudaMemcpy2DAsync",
                  "width %zu bytes exceeds the destination pitch %zu or the source pitch %zu", width, dpitch, spitch);
        return ret(cudaErrorInvalidValue);
    }
    size_t maxp = mem_pitch(d);
    if (dpitch > maxp || spitch > maxp) {
        violation("memPitch", "CUDA Runtime API, Memory Management, cudaMemcpy2DAsync; cudaDeviceProp::memPitch",
                  "pitch %zu bytes (destination %zu, source %zu; %zu rows of %zu bytes) exceeds the device's maximum "
                  "pitch of %zu bytes: copy contiguous data with cudaMemcpyAsync, or split the copy",
                  dpitch > spitch ? dpitch : spitch, dpitch, spitch, height, width, maxp);
        return ret(cudaErrorInvalidPitchValue);
    }
    return copy("cudaMemcpy2DAsync", dst, dpitch, src, spitch, width, height, kind, stream, false);
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    sd::count("cudaMemsetAsync");
    if (sticky()) return sticky();
    Device *d = current();
    if (!d) return ret(cudaErrorInvalidDevice);
    Stream *s = stream_of(stream, current_device());
    if (!s) return ret(cudaErrorInvalidResourceHandle);
    if (count == 0) return cudaSuccess;
    std::lock_guard<std::recursive_mutex> lk(lock());
    uint64_t seq = next_seq(s);
    cudaError_t e = touch(s, seq, devPtr, count, "cudaMemsetAsync", true);
    if (e != cudaSuccess) return ret(e);
    char *p = (char *)devPtr;
    enqueue(s, "cudaMemsetAsync", [=] {
        memset(p, value & 0xff, count);
        return cudaSuccess;
    });
    return cudaSuccess;
}

}  // extern "C"
