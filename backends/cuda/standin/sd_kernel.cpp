/* sd_kernel.cpp — kernel launches and function attributes (CUDA Runtime API, "Execution
 * Control": cudaFuncSetAttribute; CUDA C Programming Guide, "Execution Configuration",
 * "Compute Capabilities" (technical specifications) and "Function Parameters").
 *
 * Checked at the launch, as the driver does: the grid (x up to 2^31 - 1, y and z up to
 * 65535) and block limits (x, y up to 1024, z up to 64, at most 1024 threads), dynamic
 * shared memory above 48 KiB only after cudaFuncSetAttribute(...MaxDynamicSharedMemorySize)
 * and never above the opt-in maximum (227 KiB), at most 32764 bytes of parameters, the
 * stream on the current device, and every pointer argument: inside a live allocation a
 * kernel can reach (device or pinned host memory), aligned for its elements.  The kernel
 * itself runs on the emulator when the stream's work is forced. */
#include <cstdio>
#include <cstring>

#include "sd_internal.h"
#include "standin/sd_launch.h"

using namespace sd;

namespace {
const char *kExec = "CUDA C Programming Guide, Execution Configuration; Compute Capabilities, technical specifications";
}

cudaError_t cpb_sd_launch(cudaStream_t hs, const char *name, const void *fn, dim3 grid, dim3 block, size_t smem,
                          size_t param_bytes, const cpb_sd_args *args, void (*body)(void *), void *ctx,
                          void (*dtor)(void *))
{
    count("kernel launch");
    count(name); /* by kernel: which kernels a test ran */
    auto fail = [&](cudaError_t e) {
        dtor(ctx);
        return ret(e);
    };
    if (sticky()) return fail(sticky());
    Device *d = current();
    if (!d) return fail(cudaErrorInvalidDevice);
    Stream *s = stream_of(hs, current_device());
    if (!s) {
        violation("stream handle", kExec, "%s launched on %p, which is not a live stream", name, (void *)hs);
        return fail(cudaErrorInvalidResourceHandle);
    }
    if (s->device != current_device()) {
        violation("stream of another device", kExec, "%s launched on a stream of device %d while device %d is current",
                  name, s->device, current_device());
        return fail(cudaErrorInvalidResourceHandle);
    }
    const cudaDeviceProp &p = d->prop;
    uint64_t threads = (uint64_t)block.x * block.y * block.z;
    if (grid.x < 1 || grid.y < 1 || grid.z < 1 || grid.x > (unsigned)p.maxGridSize[0] || grid.y > (unsigned)p.maxGridSize[1] ||
        grid.z > (unsigned)p.maxGridSize[2]) {
        violation("grid limits", kExec, "%s with a grid of %u x %u x %u blocks (limits %d x %d x %d, each at least 1)", name,
                  grid.x, grid.y, grid.z, p.maxGridSize[0], p.maxGridSize[1], p.maxGridSize[2]);
        return fail(cudaErrorInvalidConfiguration);
    }
    if (block.x < 1 || block.y < 1 || block.z < 1 || block.x > (unsigned)p.maxThreadsDim[0] ||
        block.y > (unsigned)p.maxThreadsDim[1] || block.z > (unsigned)p.maxThreadsDim[2] ||
        threads > (uint64_t)p.maxThreadsPerBlock) {
        violation("block limits", kExec, "%s with blocks of %u x %u x %u threads (limits %d x %d x %d, %d in all)", name,
                  block.x, block.y, block.z, p.maxThreadsDim[0], p.maxThreadsDim[1], p.maxThreadsDim[2],
                  p.maxThreadsPerBlock);
        return fail(cudaErrorInvalidConfiguration);
    }
    size_t limit = p.sharedMemPerBlock;
    {
        std::lock_guard<std::recursive_mutex> lk(lock());
        auto it = d->max_dyn_smem.find(fn);
        if (it != d->max_dyn_smem.end()) limit = (size_t)it->second > limit ? (size_t)it->second : limit;
    }
    if (smem > limit) {
        if (smem <= p.sharedMemPerBlockOptin)
            violation("dynamic shared memory above 48 KiB", "CUDA Runtime API, cudaFuncSetAttribute; CUDA C Programming "
                      "Guide, Shared Memory (compute capability 9.0)",
                      "%s asks for %zu bytes of dynamic shared memory, above the %zu bytes a kernel may use without "
                      "cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)",
                      name, smem, limit);
        else
            violation("shared memory limit", kExec, "%s asks for %zu bytes of dynamic shared memory; an H100 block has at "
                      "most %zu", name, smem, p.sharedMemPerBlockOptin);
        return fail(cudaErrorInvalidValue);
    }
    if (param_bytes > 32764) {
        violation("kernel parameter size", "CUDA C Programming Guide, Function Parameters",
                  "%s takes %zu bytes of parameters; the limit is 32764 bytes", name, param_bytes);
        return fail(cudaErrorInvalidValue);
    }
    std::lock_guard<std::recursive_mutex> lk(lock());
    uint64_t seq = next_seq(s);
    for (int i = 0; i < args->n; i++) {
        const cpb_sd_span &a = args->span[i];
        if ((uintptr_t)a.p % a.align) {
            violation("alignment", "CUDA C Programming Guide, Device Memory Accesses",
                      "%s: %s at %p is not aligned to its %zu-byte elements", name, a.what, a.p, a.align);
            set_sticky(cudaErrorMisalignedAddress);
            return fail(cudaErrorMisalignedAddress);
        }
        cudaError_t e = touch(s, seq, a.p, a.bytes, name, true);
        if (e != cudaSuccess) return fail(e);
    }
    std::string label = name;
    enqueue(s, name, [=] {
        char err[512];
        int rc = cpb_emu_run(grid, block, smem, body, ctx, err, sizeof err);
        dtor(ctx);
        if (rc != 0) {
            violation("kernel execution", "CUDA C Programming Guide, Synchronization Functions; Warp Shuffle Functions",
                      "%s: %s", label.c_str(), err);
            return cudaErrorLaunchFailure;
        }
        return cudaSuccess;
    });
    return cudaSuccess;
}

extern "C" {

/* cudaFuncSetAttribute: cudaFuncAttributeMaxDynamicSharedMemorySize may not exceed the
 * opt-in maximum per block; the carveout is a percentage (or -1) */
cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value)
{
    sd::count("cudaFuncSetAttribute");
    Device *d = current();
    if (!d) return ret(cudaErrorInvalidDevice);
    if (!func) return ret(cudaErrorInvalidDeviceFunction);
    const char *doc = "CUDA Runtime API, Execution Control, cudaFuncSetAttribute";
    switch (attr) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize:
        if (value < 0 || (size_t)value > d->prop.sharedMemPerBlockOptin) {
            violation("shared memory limit", doc, "MaxDynamicSharedMemorySize %d; an H100 allows at most %zu", value,
                      d->prop.sharedMemPerBlockOptin);
            return ret(cudaErrorInvalidValue);
        }
        {
            std::lock_guard<std::recursive_mutex> lk(lock());
            d->max_dyn_smem[func] = value;
        }
        return cudaSuccess;
    case cudaFuncAttributePreferredSharedMemoryCarveout:
        if (value < -1 || value > 100) return ret(cudaErrorInvalidValue);
        return cudaSuccess;
    default:
        violation("function attribute", doc, "attribute %d is not one the stand-in knows", (int)attr);
        return ret(cudaErrorInvalidValue);
    }
}

}  // extern "C"
