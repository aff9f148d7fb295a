/* attn_cudnn_absent.c — the cuDNN attention interface (attn_cudnn.h) in a build without
 * cuDNN or cudnn-frontend (and in the CPU stand-in build): every function says why, so
 * `--attn auto` runs our kernels and `--attn cudnn` fails naming the reason. */
#ifndef CPB_HAVE_CUDNN
#include <stdio.h>

#include "attn_cudnn.h"

#ifndef CPB_CUDNN_ABSENT_WHY
#define CPB_CUDNN_ABSENT_WHY "this build of the plugin has no cuDNN"
#endif

int cpb_cudnn_attn_status(char *why, size_t why_len)
{
    if (why && why_len) snprintf(why, why_len, "not compiled in: %s", CPB_CUDNN_ABSENT_WHY);
    return 0;
}

void cpb_cudnn_attn_version(char *out, size_t len)
{
    if (out && len) out[0] = '\0';
}

int cpb_cudnn_attn_run(const cudnn_attn_call *c, char *err, size_t err_len)
{
    (void)c;
    snprintf(err, err_len, "cuDNN attention is not compiled in: %s", CPB_CUDNN_ABSENT_WHY);
    return -1;
}

void cpb_cudnn_attn_plan_stats(int64_t *plans, double *build_s)
{
    *plans = 0;
    *build_s = 0;
}

void cpb_cudnn_attn_shutdown(void) {}

/* the loader pre-loads cuDNN's libraries only for a plugin with cuDNN attention
 * (cpb_cuda_plugin_cudnn), so there is nothing to report here */
void cpb_cuda_plugin_preload_report(const char *sonames, const char *detail)
{
    (void)sonames;
    (void)detail;
}
#else
/* cuDNN is compiled in: attn_cudnn.cpp defines the interface */
typedef int cpb_attn_cudnn_absent_unused;
#endif
