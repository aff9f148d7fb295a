/* cpb_cuda_plugin.h — the contract between cpbench and its cuda backend, a plugin
 * (libcpb_cuda.so) that cpbench opens at run time, so that cpbench itself links no CUDA
 * library and starts where none is installed (docs/cuda.md, "How the backend is loaded").
 *
 * cpbench looks for the plugin at $CPB_CUDA_PLUGIN, else next to its own executable, else in
 * <executable's directory>/../lib.  The plugin exports one entry point, below, and the
 * functions of cpb_cuda.h, which cpbench forwards to it.  It resolves the runtime's functions
 * (cpb_fail, cpb_alloc, ...) and MPI's from the executable, which exports them. */
#ifndef CPB_CUDA_PLUGIN_H
#define CPB_CUDA_PLUGIN_H

#include "cpb_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CPB_CUDA_PLUGIN_FILE "libcpb_cuda.so"
#define CPB_CUDA_PLUGIN_ENTRY "cpb_cuda_plugin_backend"
#define CPB_CUDA_PLUGIN_ABI_SYMBOL "cpb_cuda_plugin_abi_version"

/* Bump when a structure or function the plugin shares with cpbench changes meaning without
 * changing size; a change of size is caught by the sizes folded in below. */
#define CPB_CUDA_PLUGIN_ABI_MAJOR 1

/* The interface version both sides were compiled with (a constant expression): a plugin
 * from another build whose shared structures differ is refused instead of corrupting memory.
 * FNV-1a over the sizes of the structures the two sides exchange. */
#define CPB_FNV_(h, s) ((((unsigned)(h)) ^ (unsigned)(s)) * 16777619u)
#define CPB_CUDA_PLUGIN_ABI                                                                          \
    (CPB_CUDA_PLUGIN_ABI_MAJOR * 100000 +                                                           \
     (int)(CPB_FNV_(CPB_FNV_(CPB_FNV_(CPB_FNV_(CPB_FNV_(CPB_FNV_(CPB_FNV_(CPB_FNV_(CPB_FNV_(CPB_FNV_(CPB_FNV_( \
               2166136261u, sizeof(cpb_backend)), sizeof(cpb_ctx)), sizeof(cpb_ctx_opts)), sizeof(cpb_op)), \
               sizeof(cpb_coll)), sizeof(cpb_buf)), sizeof(cpb_view)), sizeof(cpb_group)),                 \
               sizeof(cpb_attn_args)), sizeof(cpb_segs)), sizeof(cpb_mem_stats)) %                        \
           100000u))

/* The cuda backend, or NULL when abi_version (the caller's CPB_CUDA_PLUGIN_ABI) differs
 * from the plugin's own, which it exports as the int CPB_CUDA_PLUGIN_ABI_SYMBOL so that the
 * caller can say which two versions met. */
const cpb_backend *cpb_cuda_plugin_backend(int abi_version);
extern const int cpb_cuda_plugin_abi_version;

#ifdef __cplusplus
}
#endif
#endif
