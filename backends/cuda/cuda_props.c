/* cuda_props.c — the print_device_props hook (`cpbench device-props`): every field of cudaDeviceProp and the versions, as
 * `key = value` lines.  What a GPU really allows (memPitch, grid and block limits, shared
 * memory per block) is what the CPU stand-in of the CUDA runtime must enforce, and what a
 * report of a run on that GPU should carry. */
#include <stdio.h>

#include "cuda_internal.h"

/* the scalar fields of cudaDeviceProp (CUDA 13), by type */
#define PROP_SIZES(X)                                                                               \
    X(totalGlobalMem) X(sharedMemPerBlock) X(memPitch) X(totalConstMem) X(textureAlignment)         \
    X(texturePitchAlignment) X(surfaceAlignment) X(sharedMemPerMultiprocessor)                      \
    X(sharedMemPerBlockOptin) X(reservedSharedMemPerBlock)
#define PROP_INTS(X)                                                                                \
    X(regsPerBlock) X(warpSize) X(maxThreadsPerBlock) X(major) X(minor) X(multiProcessorCount)      \
    X(integrated) X(canMapHostMemory) X(concurrentKernels) X(ECCEnabled) X(pciBusID) X(pciDeviceID) \
    X(pciDomainID) X(tccDriver) X(asyncEngineCount) X(unifiedAddressing) X(memoryBusWidth)          \
    X(l2CacheSize) X(persistingL2CacheMaxSize) X(maxThreadsPerMultiProcessor)                       \
    X(streamPrioritiesSupported) X(globalL1CacheSupported) X(localL1CacheSupported)                 \
    X(regsPerMultiprocessor) X(managedMemory) X(isMultiGpuBoard) X(multiGpuBoardGroupID)            \
    X(hostNativeAtomicSupported) X(pageableMemoryAccess) X(concurrentManagedAccess)                 \
    X(computePreemptionSupported) X(canUseHostPointerForRegisteredMem) X(cooperativeLaunch)         \
    X(pageableMemoryAccessUsesHostPageTables) X(directManagedMemAccessFromHost)                     \
    X(maxBlocksPerMultiProcessor) X(accessPolicyMaxWindowSize) X(hostRegisterSupported)             \
    X(sparseCudaArraySupported) X(hostRegisterReadOnlySupported) X(timelineSemaphoreInteropSupported) \
    X(memoryPoolsSupported) X(gpuDirectRDMASupported) X(gpuDirectRDMAWritesOrdering)                \
    X(deferredMappingCudaArraySupported) X(ipcEventSupported) X(clusterLaunch)                      \
    X(unifiedFunctionPointers) X(deviceNumaConfig) X(deviceNumaId) X(mpsEnabled) X(hostNumaId)      \
    X(maxTexture1D) X(maxTexture1DMipmap) X(maxTextureCubemap) X(maxSurface1D) X(maxSurfaceCubemap) \
    X(hostNumaMultinodeIpcSupported)
#define PROP_UINTS(X)                                                                               \
    X(luidDeviceNodeMask) X(gpuDirectRDMAFlushWritesOptions) X(memoryPoolSupportedHandleTypes)      \
    X(gpuPciDeviceID) X(gpuPciSubsystemID)
#define PROP_ARRAYS(X)                                                                              \
    X(maxThreadsDim, 3) X(maxGridSize, 3) X(maxTexture2D, 2) X(maxTexture2DMipmap, 2)               \
    X(maxTexture2DLinear, 3) X(maxTexture2DGather, 2) X(maxTexture3D, 3) X(maxTexture3DAlt, 3)      \
    X(maxTexture1DLayered, 2) X(maxTexture2DLayered, 3) X(maxTextureCubemapLayered, 2)              \
    X(maxSurface2D, 2) X(maxSurface3D, 3) X(maxSurface1DLayered, 2) X(maxSurface2DLayered, 3)       \
    X(maxSurfaceCubemapLayered, 2)

int cuda_print_device_props(int dev, FILE *out)
{
    struct cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, dev);
    if (e != cudaSuccess) {
        fprintf(out, "# device %d: cudaGetDeviceProperties failed: %s (%s)\n", dev, cudaGetErrorString(e),
                cudaGetErrorName(e));
        (void)cudaGetLastError();
        return CPB_ERR_BACKEND;
    }
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    fprintf(out, "# device %d\ndevice = %d\nname = %s\n", dev, dev, p.name);
    fprintf(out, "driver_version = %d\nruntime_version = %d\n", drv, rt);
    fprintf(out, "uuid = ");
    for (int i = 0; i < 16; i++) fprintf(out, "%02x%s", (unsigned char)p.uuid.bytes[i], i == 3 || i == 5 || i == 7 || i == 9 ? "-" : "");
    fprintf(out, "\n");
#define X(f) fprintf(out, #f " = %zu\n", (size_t)p.f);
    PROP_SIZES(X)
#undef X
#define X(f) fprintf(out, #f " = %d\n", p.f);
    PROP_INTS(X)
#undef X
#define X(f) fprintf(out, #f " = %u\n", p.f);
    PROP_UINTS(X)
#undef X
#define X(f, n)                                                                                    \
    fprintf(out, #f " =");                                                                         \
    for (int i = 0; i < (n); i++) fprintf(out, " %d", p.f[i]);                                     \
    fprintf(out, "\n");
    PROP_ARRAYS(X)
#undef X
    /* what CUDA 13 moved out of cudaDeviceProp into attributes */
    static const struct {
        const char *name;
        enum cudaDeviceAttr a;
    } attrs[] = {
        {"clockRate_khz", cudaDevAttrClockRate},
        {"memoryClockRate_khz", cudaDevAttrMemoryClockRate},
        {"computeMode", cudaDevAttrComputeMode},
        {"kernelExecTimeout", cudaDevAttrKernelExecTimeout},
        {"singleToDoublePrecisionPerfRatio", cudaDevAttrSingleToDoublePrecisionPerfRatio},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        int v = 0;
        if (cudaDeviceGetAttribute(&v, attrs[i].a, dev) == cudaSuccess) fprintf(out, "%s = %d\n", attrs[i].name, v);
        else (void)cudaGetLastError();
    }
    size_t free_b = 0, total_b = 0;
    if (cudaSetDevice(dev) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
        fprintf(out, "mem_free_bytes = %zu\nmem_total_bytes = %zu\n", free_b, total_b);
    else
        (void)cudaGetLastError();
    return CPB_OK;
}
