/* measured.h — a measured trial on a backend with data and a clock (cpu, cuda): collective
 * over the context's ranks. */
#ifndef CPB_MEASURED_H
#define CPB_MEASURED_H

#include "cpb_backend.h"
#include "cpb_method.h"
#include "row.h"

#ifdef __cplusplus
extern "C" {
#endif

/* the gpu column of a context: its device's name (device_info hook), else the backend's */
void cpb_ctx_gpu_name(cpb_ctx *ctx, char *out, size_t len);

/* The dense bf16 peak (TFLOP/s) of the simulator's GPU profile that describes the device
 * the cuda backend names `gpu` ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB"): the MFU
 * columns' peak of a measured row.  0 when none does (the cpu backend; an H100 PCIe or
 * NVL, whose peaks differ from the SXM part's; other GPUs). */
double cpb_device_peak_tflops(const char *gpu);

/* Run method m on p on ctx: set-up with device fill from `seed`, `warmup` + `iters`
 * forward+backward steps.  *row becomes the point's row (cpb_row_point, gpu column `gpu`):
 * step time = median over the iterations of the slowest rank; memory = the rank with the
 * largest peak (its breakdown), with the backend's reserved / device-used high-waters when
 * it has them; throughput.  Every rank gets the same row.  Returns CPB_OK when a row was
 * made (the trial itself may have failed: row->code). */
int cpb_run_measured(cpb_ctx *ctx, const cpb_problem *p, const cpb_method *m, int warmup, int iters,
                     uint64_t seed, const char *gpu, cpb_row *row);

#ifdef __cplusplus
}
#endif
#endif
