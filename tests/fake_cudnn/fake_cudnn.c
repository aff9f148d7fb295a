/* fake_cudnn.c — a libcudnn.so.9 of our own, for the tests that run the real cuDNN attention
 * (backends/cuda/attn_cudnn.cpp, on cudnn-frontend's dynamic loading) in the CPU stand-in
 * plugin: it exports the functions the frontend dlsym's on the paths attn_cudnn.cpp takes
 * (declared by cuDNN's own header, cudnn_graph.h, so the signatures are cuDNN's), and fails
 * where a test asks, so that each failure path of the frontend runs (tests/fake_cudnn/
 * fake_cudnn.cmake; docs/cuda.md, "cuDNN failures on the stand-in").
 *
 *   CPB_FAKE_CUDNN_FAIL=<function>  that function returns CUDNN_STATUS_NOT_SUPPORTED (and
 *                                   cudnnGetLastErrorString says so); all others succeed
 *   built with FAKE_CUDNN_NO_CREATE_DESCRIPTOR
 *                                   cudnnBackendCreateDescriptor is not exported at all: the
 *                                   frontend's dlsym finds nothing and it throws
 *   built with FAKE_CUDNN_NO_DESTROY_DESCRIPTOR
 *                                   cudnnBackendDestroyDescriptor is not exported: the
 *                                   frontend would throw from a destructor (std::terminate),
 *                                   so attn_cudnn.cpp must refuse the library up front
 *
 * Nothing here computes anything: a descriptor is an empty allocation, a handle a static
 * object, and attribute queries find no elements. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudnn_graph.h>

#define EXPORT __attribute__((visibility("default")))

static char last_error[256];

/* the status of `fn` as the test asks: CUDNN_STATUS_NOT_SUPPORTED when CPB_FAKE_CUDNN_FAIL
 * names it */
static cudnnStatus_t outcome(const char *fn)
{
    const char *fail = getenv("CPB_FAKE_CUDNN_FAIL");
    if (!fail || strcmp(fail, fn) != 0) return CUDNN_STATUS_SUCCESS;
    snprintf(last_error, sizeof last_error, "fake cuDNN (tests/fake_cudnn): %s fails as CPB_FAKE_CUDNN_FAIL asks",
             fn);
    return CUDNN_STATUS_NOT_SUPPORTED;
}

EXPORT size_t cudnnGetVersion(void)
{
    /* the version of the headers the frontend is compiled against here, so that none of its
     * version checks takes the test off the path a real cuDNN of that version takes */
    return CUDNN_VERSION;
}

EXPORT const char *cudnnGetErrorString(cudnnStatus_t status)
{
    switch (status) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    default: return "CUDNN_STATUS_UNKNOWN (fake cuDNN)";
    }
}

EXPORT void cudnnGetLastErrorString(char *message, size_t max_size)
{
    if (!message || !max_size) return;
    snprintf(message, max_size, "%s", last_error);
    last_error[0] = '\0'; /* read once, as cuDNN's */
}

static int the_handle; /* what a handle points at: only its address is used */

EXPORT cudnnStatus_t cudnnCreate(cudnnHandle_t *handle)
{
    cudnnStatus_t st = outcome("cudnnCreate");
    *handle = st == CUDNN_STATUS_SUCCESS ? (cudnnHandle_t)&the_handle : NULL;
    return st;
}

EXPORT cudnnStatus_t cudnnDestroy(cudnnHandle_t handle)
{
    (void)handle;
    return outcome("cudnnDestroy");
}

EXPORT cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream)
{
    (void)handle;
    (void)stream;
    return outcome("cudnnSetStream");
}

EXPORT cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t *stream)
{
    (void)handle;
    *stream = NULL;
    return outcome("cudnnGetStream");
}

#ifndef FAKE_CUDNN_NO_CREATE_DESCRIPTOR
EXPORT cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t *desc)
{
    (void)type;
    cudnnStatus_t st = outcome("cudnnBackendCreateDescriptor");
    /* a real allocation, so that the sanitizers see a leak or a double destroy */
    *desc = st == CUDNN_STATUS_SUCCESS ? (cudnnBackendDescriptor_t)malloc(16) : NULL;
    return st;
}
#endif

#ifndef FAKE_CUDNN_NO_DESTROY_DESCRIPTOR
EXPORT cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t desc)
{
    free(desc); /* the frontend destroys a descriptor whose creation failed too: NULL */
    return CUDNN_STATUS_SUCCESS;
}
#endif

EXPORT cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t desc)
{
    (void)desc;
    return outcome("cudnnBackendFinalize");
}

EXPORT cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t desc, cudnnBackendAttributeName_t name,
                                              cudnnBackendAttributeType_t type, int64_t count, const void *elements)
{
    (void)desc;
    (void)name;
    (void)type;
    (void)count;
    (void)elements;
    return outcome("cudnnBackendSetAttribute");
}

EXPORT cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const desc, cudnnBackendAttributeName_t name,
                                              cudnnBackendAttributeType_t type, int64_t requested, int64_t *count,
                                              void *elements)
{
    (void)desc;
    (void)name;
    (void)type;
    (void)requested;
    (void)elements;
    if (count) *count = 0; /* no engines, no knobs, no notes */
    return outcome("cudnnBackendGetAttribute");
}

EXPORT cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                         cudnnBackendDescriptor_t pack)
{
    (void)handle;
    (void)plan;
    (void)pack;
    return outcome("cudnnBackendExecute");
}
