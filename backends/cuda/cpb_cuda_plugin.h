/* cpb_cuda_plugin.h — the contract between cpbench and its cuda backend, a plugin
 * (libcpb_cuda.so) that cpbench opens at run time, so that cpbench itself links no CUDA
 * library and starts where none is installed (docs/cuda.md, "How the backend is loaded").
 *
 * cpbench looks for the plugin at $CPB_CUDA_PLUGIN, else next to its own executable, else in
 * <executable's directory>/../lib.  The plugin exports one entry point and its interface
 * version, below; everything cpbench asks of the backend beyond running ops goes through the
 * hooks of the table the entry point returns (cpb_backend.h).  It resolves the runtime's
 * functions (cpb_fail, cpb_alloc, ...) and MPI's from the executable, which exports them. */
#ifndef CPB_CUDA_PLUGIN_H
#define CPB_CUDA_PLUGIN_H

#include "cpb_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CPB_CUDA_PLUGIN_FILE "libcpb_cuda.so"
#define CPB_CUDA_PLUGIN_ENTRY "cpb_cuda_plugin_backend"
#define CPB_CUDA_PLUGIN_ABI_SYMBOL "cpb_cuda_plugin_abi_version"
/* an int, 1 when cuDNN attention is compiled into the plugin: cpbench then pre-loads
 * libcudnn (and what the frontend opens) before the plugin asks for it; 0 or absent: no
 * cuDNN library is loaded at all (the stand-in, builds without cuDNN) */
#define CPB_CUDA_PLUGIN_CUDNN_SYMBOL "cpb_cuda_plugin_cudnn"
/* void (const char *sonames, const char *detail), optional: cpbench names the libraries of
 * cuDNN it could not pre-load, so that cuDNN attention's status and errors say so
 * (attn_cudnn.h, cpb_cuda_plugin_preload_report) */
#define CPB_CUDA_PLUGIN_PRELOAD_SYMBOL "cpb_cuda_plugin_preload_report"

/* The interface version both sides were compiled with: the layout of the backend table and
 * of what it exchanges with cpbench, so a plugin from another build is refused instead of
 * corrupting memory. */
#define CPB_CUDA_PLUGIN_ABI CPB_BACKEND_ABI_VERSION

/* The cuda backend, or NULL when abi_version (the caller's CPB_CUDA_PLUGIN_ABI) differs
 * from the plugin's own, which it exports as the int CPB_CUDA_PLUGIN_ABI_SYMBOL so that the
 * caller can say which two versions met. */
const cpb_backend *cpb_cuda_plugin_backend(int abi_version);
extern const int cpb_cuda_plugin_abi_version;
extern const int cpb_cuda_plugin_cudnn;

#ifdef __cplusplus
}
#endif
#endif
