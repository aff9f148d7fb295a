/* cuda_loader.h — cpbench's side of the cuda plugin (backends/cuda/cpb_cuda_plugin.h): finds
 * libcpb_cuda.so, makes NVIDIA's libraries it needs loadable (lib_search.h), opens it, and
 * hands out its backend (cpb_backend_cuda_get) and the functions of cpb_cuda.h.  Nothing
 * is loaded until one of those is first called. */
#ifndef CPB_CUDA_LOADER_H
#define CPB_CUDA_LOADER_H

#include <stddef.h>

/* One line for `cpbench list`: whether the plugin was built with this cpbench, where it was
 * found and whether it loaded, which cuBLAS, cuBLASLt and NCCL it uses, where cuDNN is, or
 * why it did not load.  Returns 1 when the plugin is loaded. */
int cpb_cuda_plugin_describe(char *out, size_t len);

#endif
