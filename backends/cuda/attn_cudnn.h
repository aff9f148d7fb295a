/* attn_cudnn.h — cuDNN's fused attention (SDPA, through cudnn-frontend), the C interface of
 * the one C++ file that uses it (attn_cudnn.cpp), as llm.c isolates its cuDNN attention.
 *
 * The front-end decides which calls come here (runtime/backend/cpb_attn_route.h) and gives
 * each one a tracked workspace of a declared bound; this file builds (once per shape,
 * strides, mask and dtype) and runs cuDNN's plan, and fails with the reason when cuDNN
 * refuses the call or its plan needs more workspace than the bound.  Without cuDNN at build
 * time, attn_cudnn_absent.c provides the same functions, each saying why.
 *
 * No function here throws or aborts: every failure of cuDNN or cudnn-frontend, an error
 * status or an exception (a missing libcudart or symbol), is returned as the reason, naming
 * the frontend call it came from (docs/attention.md, "When cuDNN fails"). */
#ifndef CPB_ATTN_CUDNN_H
#define CPB_ATTN_CUDNN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* a [rows][heads][d] tensor on the device: element (r, h, c) at p + r*rs + h*hs + c */
typedef struct cudnn_tensor {
    void *p;
    int64_t rs, hs;
} cudnn_tensor;

/* one attention call, every tensor bf16 except lse (fp32 [heads][tokens], tokens
 * contiguous: lse.rs is ignored, lse.hs the head stride) */
typedef struct cudnn_attn_call {
    int bwd;
    int64_t sq, sk, hq, hk, d;
    /* the mask (cpb_attn_route.h, CPB_ATTN_MASK_*): 0 none; 1 causal aligned top-left
     * (query i sees keys 0..i); 2 causal aligned bottom-right (query i sees keys
     * 0..i + sk - sq; sq <= sk) */
    int causal;
    float scale;
    cudnn_tensor q, k, v, o, lse;
    cudnn_tensor d_o, dq, dk, dv; /* backward */
    void *ws;
    int64_t ws_bytes;  /* the front-end's bound; a plan needing more is an error */
    void *stream;      /* cudaStream_t */
} cudnn_attn_call;

/* 2: compiled in and libcudnn loaded (version and path in why); 1: compiled in but cuDNN
 * cannot be used here (why); 0: not compiled in (why). */
int cpb_cudnn_attn_status(char *why, size_t why_len);
/* "9.19.0" when loaded, else "" */
void cpb_cudnn_attn_version(char *out, size_t len);
/* run one call: 0, or -1 with the reason in err (cuDNN's refusal, the workspace bound) */
int cpb_cudnn_attn_run(const cudnn_attn_call *c, char *err, size_t err_len);
/* plans built so far and the seconds spent building them */
void cpb_cudnn_attn_plan_stats(int64_t *plans, double *build_s);
/* handles and plans are dropped (before the device is reset or the process ends) */
void cpb_cudnn_attn_shutdown(void);
/* cpbench's loader, after pre-loading cuDNN's libraries (backends/cuda_loader.c), names those
 * it could not load: their sonames ("libcudnn_heuristic.so.9, libcudart.so.13"; "" when all
 * loaded) for cpb_cudnn_attn_status, and each with where and why for the errors of
 * cpb_cudnn_attn_run.  Exported by the plugin (CPB_CUDA_PLUGIN_PRELOAD_SYMBOL). */
void cpb_cuda_plugin_preload_report(const char *sonames, const char *detail);

#ifdef __cplusplus
}
#endif
#endif
