/* cuda_plugin.c — the plugin's entry point (cpb_cuda_plugin.h): cpbench opens
 * libcpb_cuda.so at run time and asks it for the backend table here. */
#include "cpb_cuda_plugin.h"
#include "cuda_internal.h"

const int cpb_cuda_plugin_abi_version = CPB_CUDA_PLUGIN_ABI;
#ifdef CPB_HAVE_CUDNN
const int cpb_cuda_plugin_cudnn = 1;
#else
const int cpb_cuda_plugin_cudnn = 0;
#endif

const cpb_backend *cpb_cuda_plugin_backend(int abi_version)
{
    return abi_version == CPB_CUDA_PLUGIN_ABI ? cpb_backend_cuda_get() : NULL;
}
