/* sd_runtime.cpp — the stand-in's devices, errors, versions and statistics: the CUDA Runtime
 * API calls of the sections "Device Management", "Error Handling", "Version Management" and
 * "Profiler Control" (CUDA Runtime API reference, CUDA 13), for 8 H100 SXM devices.
 *
 * Device properties are what the driver reports for an H100 80GB HBM3 (cuda-samples'
 * deviceQuery on an HGX H100 with driver 13.0: 132 SMs, 85017755648 bytes, 48 KiB shared
 * memory per block and 228 KiB per SM, memPitch 2147483647, 3 copy engines, grid limits
 * 2147483647 x 65535 x 65535, block limits 1024 x 1024 x 64); the opt-in shared memory per
 * block (227 KiB) is the Hopper Tuning Guide's.  The devices differ only in their PCI bus
 * ids (a DGX H100's: 18, 2a, 3a, 5d, 9a, ab, ba, db), which is how a program tells GPUs apart
 * when each rank sees only its own. */
#include <mpi.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "sd_internal.h"

/* the static NVTX injection the NVTX3 headers look for (nvtxInit.h, load sequence version
 * 2), defined here, in a file every program using the stand-in links, so that a static
 * link takes sd_nvtx.cpp's tool in too */
extern "C" int cpb_sd_nvtx_init(const void *(*get_export_table)(uint32_t));
extern "C" {
int (*InitializeInjectionNvtx2_fnptr)(const void *(*)(uint32_t)) = cpb_sd_nvtx_init;
}

namespace sd {

namespace {

const int kPhysDevices = 8;
const int kBusId[kPhysDevices] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};

thread_local cudaError_t t_last = cudaSuccess;
thread_local int t_device = 0;
std::atomic<int> g_sticky{cudaSuccess};
std::atomic<int> g_violations{0};

void fill_h100(cudaDeviceProp &p, int phys)
{
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "NVIDIA H100 80GB HBM3");
    for (int i = 0; i < 16; i++) p.uuid.bytes[i] = (char)(0x5d + 17 * i + 31 * phys);
    p.totalGlobalMem = 85017755648ull;
    p.sharedMemPerBlock = 49152;
    p.regsPerBlock = 65536;
    p.warpSize = 32;
    p.memPitch = 2147483647;
    p.maxThreadsPerBlock = 1024;
    p.maxThreadsDim[0] = 1024, p.maxThreadsDim[1] = 1024, p.maxThreadsDim[2] = 64;
    p.maxGridSize[0] = 2147483647, p.maxGridSize[1] = 65535, p.maxGridSize[2] = 65535;
    p.totalConstMem = 65536;
    p.major = 9, p.minor = 0;
    p.textureAlignment = 512;
    p.texturePitchAlignment = 32;
    p.multiProcessorCount = 132;
    p.integrated = 0;
    p.canMapHostMemory = 1;
    p.maxTexture1D = 131072;
    p.maxTexture2D[0] = 131072, p.maxTexture2D[1] = 65536;
    p.maxTexture3D[0] = p.maxTexture3D[1] = p.maxTexture3D[2] = 16384;
    p.maxTexture1DLayered[0] = 32768, p.maxTexture1DLayered[1] = 2048;
    p.maxTexture2DLayered[0] = p.maxTexture2DLayered[1] = 32768, p.maxTexture2DLayered[2] = 2048;
    p.surfaceAlignment = 512;
    p.concurrentKernels = 1;
    p.ECCEnabled = 1;
    p.pciBusID = kBusId[phys];
    p.pciDeviceID = 0;
    p.pciDomainID = 0;
    p.asyncEngineCount = 3;
    p.unifiedAddressing = 1;
    p.memoryBusWidth = 5120;
    p.l2CacheSize = 52428800;
    p.maxThreadsPerMultiProcessor = 2048;
    p.streamPrioritiesSupported = 1;
    p.globalL1CacheSupported = 1;
    p.localL1CacheSupported = 1;
    p.sharedMemPerMultiprocessor = 233472;
    p.regsPerMultiprocessor = 65536;
    p.managedMemory = 1;
    p.multiGpuBoardGroupID = phys;
    p.concurrentManagedAccess = 1;
    p.computePreemptionSupported = 1;
    p.canUseHostPointerForRegisteredMem = 1;
    p.cooperativeLaunch = 1;
    p.sharedMemPerBlockOptin = 232448;
    p.maxBlocksPerMultiProcessor = 32;
    p.reservedSharedMemPerBlock = 1024;
    p.hostRegisterSupported = 1;
    p.memoryPoolsSupported = 1;
    p.memoryPoolSupportedHandleTypes = 1; /* POSIX file descriptor */
    p.clusterLaunch = 1;
    p.unifiedFunctionPointers = 1;
    p.deviceNumaId = -1;
    p.hostNumaId = -1;
    p.gpuPciDeviceID = 0x233010deu; /* device 2330 (H100 SXM5 80GB), vendor 10de */
}

struct Machine {
    std::vector<std::unique_ptr<Device>> visible;
    Machine()
    {
        int phys = kPhysDevices;
        if (const char *e = getenv("CPB_STANDIN_DEVICES")) phys = atoi(e) < 1 ? 1 : (atoi(e) > kPhysDevices ? kPhysDevices : atoi(e));
        std::vector<int> order;
        const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
        if (cvd) {
            /* CUDA C Programming Guide, "CUDA Environment Variables": a comma-separated list
             * of indices; the list stops at the first invalid one */
            const char *c = cvd;
            while (*c) {
                char *end = nullptr;
                long v = strtol(c, &end, 10);
                if (end == c || v < 0 || v >= phys) break;
                bool dup = false;
                for (int o : order) dup |= o == (int)v;
                if (dup) break;
                order.push_back((int)v);
                c = end;
                while (*c == ' ') c++;
                if (*c != ',') break;
                c++;
            }
        } else {
            for (int i = 0; i < phys; i++) order.push_back(i);
        }
        for (int i : order) {
            auto d = std::make_unique<Device>();
            d->phys = i;
            fill_h100(d->prop, i);
            visible.push_back(std::move(d));
        }
    }
};

Machine &machine()
{
    static Machine m;
    return m;
}

/* ---- statistics (CPB_STANDIN_STATS=PREFIX: PREFIX.<rank or pid> written at exit) */
struct Stats {
    std::mutex mu;
    std::map<std::string, std::vector<int64_t>> calls; /* [0] total, [1 + t] in trial t */
    std::map<std::string, std::map<int64_t, int64_t>> values;
    int trial = -1;      /* index of the NVTX "trial" range we are in, -1 outside */
    int trials = 0;
    int depth = 0, trial_depth = -1;
};

Stats &stats()
{
    static Stats *s = new Stats; /* never destroyed: executors may count during exit */
    return *s;
}

void write_stats()
{
    const char *prefix = getenv("CPB_STANDIN_STATS");
    if (!prefix || !*prefix) return;
    char path[1024];
    int r = world_rank();
    if (r >= 0) snprintf(path, sizeof path, "%s.%d", prefix, r);
    else snprintf(path, sizeof path, "%s.pid%d", prefix, (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f) return;
    Stats &s = stats();
    std::lock_guard<std::mutex> g(s.mu);
    fprintf(f, "# cuda stand-in statistics: call total then per NVTX 'trial' range\n");
    fprintf(f, "trials %d\nviolations %d\n", s.trials, g_violations.load());
    for (auto &kv : s.calls) {
        fprintf(f, "call %s %lld", kv.first.c_str(), (long long)kv.second[0]);
        for (size_t i = 1; i < kv.second.size(); i++) fprintf(f, " %lld", (long long)kv.second[i]);
        fprintf(f, "\n");
    }
    for (auto &kv : s.values)
        for (auto &v : kv.second) fprintf(f, "value %s %lld %lld\n", kv.first.c_str(), (long long)v.first, (long long)v.second);
    fclose(f);
}

struct AtExit {
    AtExit() { atexit(write_stats); }
} at_exit_;

}  // namespace

/* ---------------------------------------------------------------- rules, errors */

void violation(const char *rule, const char *doc, const char *fmt, ...)
{
    char msg[1600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int r = world_rank();
    char who[32] = "";
    if (r >= 0) snprintf(who, sizeof who, "[rank %d] ", r);
    fprintf(stderr, "%scuda stand-in: rule broken: %s [%s]: %s\n", who, rule, doc, msg);
    fflush(stderr);
    g_violations++;
    count("rule broken");
    if (getenv("CPB_STANDIN_ABORT")) abort(); /* a core at the first broken rule, for a debugger */
}

cudaError_t ret(cudaError_t e)
{
    if (e != cudaSuccess) t_last = e;
    return e;
}

void set_sticky(cudaError_t e)
{
    int ok = cudaSuccess;
    g_sticky.compare_exchange_strong(ok, (int)e);
}

cudaError_t sticky()
{
    return (cudaError_t)g_sticky.load();
}

std::recursive_mutex &lock()
{
    static std::recursive_mutex *m = new std::recursive_mutex;
    return *m;
}

void join(Clock &a, const Clock &b)
{
    if (a.size() < b.size()) a.resize(b.size(), 0);
    for (size_t i = 0; i < b.size(); i++)
        if (b[i] > a[i]) a[i] = b[i];
}

Clock &host_clock()
{
    static Clock *c = new Clock;
    return *c;
}

int world_rank()
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin) return -1;
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

/* ---------------------------------------------------------------- devices */

int device_count()
{
    return (int)machine().visible.size();
}

Device *device(int dev)
{
    if (dev < 0 || dev >= device_count()) return nullptr;
    return machine().visible[(size_t)dev].get();
}

int current_device()
{
    return t_device;
}

void context_up(Device *d)
{
    std::lock_guard<std::recursive_mutex> g(lock());
    if (d->ctx_up) return;
    d->ctx_up = true;
    /* a primary context and its kernel modules take device memory (several hundred MiB on
     * an H100; the amount is the stand-in's own choice) */
    d->internal += 512ll << 20;
}

Device *current()
{
    Device *d = device(t_device);
    if (d) context_up(d);
    return d;
}

size_t mem_pitch(const Device *d)
{
    static long long knob = getenv("CPB_STANDIN_MEMPITCH") ? atoll(getenv("CPB_STANDIN_MEMPITCH")) : 0;
    return knob > 0 ? (size_t)knob : d->prop.memPitch;
}

/* ---------------------------------------------------------------- statistics */

void count(const char *api)
{
    Stats &s = stats();
    std::lock_guard<std::mutex> g(s.mu);
    auto &v = s.calls[api];
    if (v.empty()) v.push_back(0);
    v[0]++;
    if (s.trial >= 0) {
        if ((int)v.size() < s.trial + 2) v.resize((size_t)s.trial + 2, 0);
        v[(size_t)s.trial + 1]++;
    }
}

void count_value(const char *what, int64_t v)
{
    Stats &s = stats();
    std::lock_guard<std::mutex> g(s.mu);
    s.values[what][v]++;
}

void trial_range_push(const char *name)
{
    Stats &s = stats();
    std::lock_guard<std::mutex> g(s.mu);
    s.depth++;
    if (s.trial < 0 && name && strcmp(name, "trial") == 0) {
        s.trial = s.trials++;
        s.trial_depth = s.depth;
    }
}

void trial_range_pop()
{
    Stats &s = stats();
    std::lock_guard<std::mutex> g(s.mu);
    if (s.trial >= 0 && s.depth == s.trial_depth) {
        s.trial = -1;
        s.trial_depth = -1;
    }
    if (s.depth > 0) s.depth--;
}

}  // namespace sd

using namespace sd;

/* ================================================================ the CUDA Runtime API */

extern "C" {

/* Error Handling: cudaGetLastError returns and resets the last error of the calling host
 * thread; a sticky error (a fault in device work) is returned every time */
cudaError_t cudaGetLastError(void)
{
    cudaError_t e = t_last;
    t_last = cudaSuccess;
    if (sticky() != cudaSuccess) return sticky();
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    return sticky() != cudaSuccess ? sticky() : t_last;
}

static const struct {
    cudaError_t e;
    const char *name, *text;
} k_errors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidPitchValue, "cudaErrorInvalidPitchValue", "invalid pitch argument"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorIllegalState, "cudaErrorIllegalState", "the operation cannot be performed in the present state"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {cudaErrorMisalignedAddress, "cudaErrorMisalignedAddress", "misaligned address"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const char *cudaGetErrorName(cudaError_t error)
{
    for (auto &x : k_errors)
        if (x.e == error) return x.name;
    return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t error)
{
    for (auto &x : k_errors)
        if (x.e == error) return x.text;
    return "unrecognized error code";
}

/* Version Management: the runtime is the headers' (CUDART_VERSION), the driver a 13.0 one */
cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (!runtimeVersion) return ret(cudaErrorInvalidValue);
    *runtimeVersion = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *driverVersion)
{
    if (!driverVersion) return ret(cudaErrorInvalidValue);
    *driverVersion = 13000;
    return cudaSuccess;
}

/* Device Management: cudaGetDeviceCount counts the devices CUDA_VISIBLE_DEVICES leaves */
cudaError_t cudaGetDeviceCount(int *count)
{
    sd::count("cudaGetDeviceCount");
    if (!count) return ret(cudaErrorInvalidValue);
    *count = device_count();
    return *count ? cudaSuccess : ret(cudaErrorNoDevice);
}

/* cudaSetDevice: the calling host thread's device; its primary context is made now */
cudaError_t cudaSetDevice(int dev)
{
    sd::count("cudaSetDevice");
    Device *d = device(dev);
    if (!d) {
        violation("device ordinal", "CUDA Runtime API, Device Management, cudaSetDevice",
                  "device %d of %d visible devices", dev, device_count());
        return ret(cudaErrorInvalidDevice);
    }
    t_device = dev;
    context_up(d);
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *dev)
{
    if (!dev) return ret(cudaErrorInvalidValue);
    *dev = t_device;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int dev)
{
    sd::count("cudaGetDeviceProperties");
    Device *d = device(dev);
    if (!prop) return ret(cudaErrorInvalidValue);
    if (!d) return ret(cudaErrorInvalidDevice);
    *prop = d->prop;
    return cudaSuccess;
}

/* cudaDeviceGetAttribute: the attributes a program asks for, from the same properties */
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int dev)
{
    sd::count("cudaDeviceGetAttribute");
    Device *d = device(dev);
    if (!value) return ret(cudaErrorInvalidValue);
    if (!d) return ret(cudaErrorInvalidDevice);
    const cudaDeviceProp &p = d->prop;
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *value = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: *value = p.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: *value = p.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: *value = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: *value = p.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: *value = p.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = (int)p.sharedMemPerBlock; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = (int)p.sharedMemPerBlockOptin; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = (int)p.sharedMemPerMultiprocessor; break;
    case cudaDevAttrReservedSharedMemoryPerBlock: *value = (int)p.reservedSharedMemPerBlock; break;
    case cudaDevAttrTotalConstantMemory: *value = (int)p.totalConstMem; break;
    case cudaDevAttrWarpSize: *value = p.warpSize; break;
    case cudaDevAttrMaxPitch: *value = (int)mem_pitch(d); break;
    case cudaDevAttrMaxRegistersPerBlock: *value = p.regsPerBlock; break;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
    case cudaDevAttrPciBusId: *value = p.pciBusID; break;
    case cudaDevAttrPciDeviceId: *value = p.pciDeviceID; break;
    case cudaDevAttrPciDomainId: *value = p.pciDomainID; break;
    case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrGlobalMemoryBusWidth: *value = p.memoryBusWidth; break;
    case cudaDevAttrAsyncEngineCount: *value = p.asyncEngineCount; break;
    case cudaDevAttrUnifiedAddressing: *value = p.unifiedAddressing; break;
    case cudaDevAttrStreamPrioritiesSupported: *value = p.streamPrioritiesSupported; break;
    case cudaDevAttrConcurrentKernels: *value = p.concurrentKernels; break;
    case cudaDevAttrEccEnabled: *value = p.ECCEnabled; break;
    case cudaDevAttrCanMapHostMemory: *value = p.canMapHostMemory; break;
    case cudaDevAttrIntegrated: *value = p.integrated; break;
    case cudaDevAttrMemoryPoolsSupported: *value = p.memoryPoolsSupported; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: *value = p.maxBlocksPerMultiProcessor; break;
    default:
        violation("device attribute", "CUDA Runtime API, Device Management, cudaDeviceGetAttribute",
                  "attribute %d is not one the stand-in knows (add it from the properties)", (int)attr);
        return ret(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

/* cudaDeviceGetPCIBusId: "[domain]:[bus]:[device].[function]", domain 4 hex digits, bus and
 * device 2 each, function 1; len counts the terminating NUL (13 bytes suffice) */
cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int dev)
{
    sd::count("cudaDeviceGetPCIBusId");
    Device *d = device(dev);
    if (!d) return ret(cudaErrorInvalidDevice);
    if (!pciBusId || len <= 0) return ret(cudaErrorInvalidValue);
    snprintf(pciBusId, (size_t)len, "%04x:%02x:%02x.0", d->prop.pciDomainID, d->prop.pciBusID, d->prop.pciDeviceID);
    return cudaSuccess;
}

/* cudaDeviceGetStreamPriorityRange: lower numbers are greater priorities; an H100 reports
 * least 0, greatest -5 */
cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    if (leastPriority) *leastPriority = 0;
    if (greatestPriority) *greatestPriority = -5;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    sd::count("cudaDeviceSynchronize");
    return ret(sync_device(t_device));
}

/* Profiler Control: nothing to start without a profiler; the call itself succeeds */
cudaError_t cudaProfilerStart(void)
{
    sd::count("cudaProfilerStart");
    return cudaSuccess;
}

cudaError_t cudaProfilerStop(void)
{
    sd::count("cudaProfilerStop");
    return cudaSuccess;
}

}  // extern "C"
