/* fake_cudart.c — a libcudart.so.13 of our own for the fake-cuDNN tests: cudnn-frontend's
 * dynamic loading opens the CUDA runtime by soname for a few calls of its own (the device's
 * SM version in validate and check_support, cudnn_frontend/context.h), apart from the
 * stand-in plugin's CUDA names, which stay inside the plugin.  With this one pre-loaded
 * (cpbench's loader takes it from CPB_CUDA_LIB_PATH), validate sees an SM 9.0 device and
 * the frontend goes on to call cuDNN, which is what the tests make fail.  Declared by the
 * CUDA runtime's own header, so the signatures are NVIDIA's. */
#include <cuda_runtime_api.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT cudaError_t cudaRuntimeGetVersion(int *version)
{
    *version = CUDART_VERSION;
    return cudaSuccess;
}

EXPORT cudaError_t cudaGetDevice(int *device)
{
    *device = 0;
    return cudaSuccess;
}

/* an H100's compute capability, the stand-in's device (docs/cuda.md) */
EXPORT cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    (void)device;
    switch (attr) {
    case cudaDevAttrComputeCapabilityMajor: *value = 9; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; return cudaSuccess;
    default: return cudaErrorInvalidValue;
    }
}

EXPORT const char *cudaGetErrorString(cudaError_t error)
{
    return error == cudaSuccess ? "no error" : "an error of the fake CUDA runtime (tests/fake_cudnn)";
}
