/* profile_iter.h — `--profile-iter N`: bracket one iteration of a trial for a profiler's
 * capture range (Nsight Systems: nsys profile --capture-range=cudaProfilerApi).
 *
 * Backend-neutral: the backend's profiler hook (cudaProfilerStart/Stop on cuda) starts and
 * stops the capture; on a backend without one the bracket is a named range only.  The loop
 * that runs a trial's iterations calls begin/end around each iteration; N counts from 0
 * over warm-up and measured iterations alike, so --warmup 1 --profile-iter 1 captures the
 * first measured step. */
#ifndef CPB_PROFILE_ITER_H
#define CPB_PROFILE_ITER_H

#include "cpb.h"

#ifdef __cplusplus
extern "C" {
#endif

/* which iteration to capture (-1 = none, the default); from the parsed --profile-iter */
void cpb_profile_iter_select(int n);
int cpb_profile_iter_selected(void);
/* at the start / end of iteration `it` of a trial: on the selected one, synchronise (so the
 * range holds that iteration's work only), push/pop the range "profile/iterN" and start /
 * stop the backend's profiler.  Only the first trial of a process is captured (a sweep's later
 * trials are not: nsys stops at the first cudaProfilerStop). */
int cpb_profile_iter_begin(cpb_ctx *ctx, int it);
int cpb_profile_iter_end(cpb_ctx *ctx, int it);

#ifdef __cplusplus
}
#endif
#endif
