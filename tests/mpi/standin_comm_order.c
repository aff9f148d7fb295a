/* standin_comm_order.c — collectives on two streams, issued in a different order on each
 * rank, on the cuda backend (run under mpirun on the CPU stand-in).
 *
 * Rank 0 issues all-reduce X on stream "a", then Y on stream "b"; the other ranks issue Y on
 * "b" first, then make "a" wait for it and issue X.  On GPUs both streams progress, so this
 * completes with the right sums.  It fails if communicators are paired by the order of
 * first use (rank 0's "a" with rank 1's "b": X meets Y), and it hangs if a collective
 * waiting for its peer on one stream stops the other stream.  Exit 0 when both sums are
 * right on every rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpb_backend.h"
#include "mpi_test_ctx.h"
#include "registry.h"

#define N_X 1003
#define N_Y 517

int main(void)
{
    char why[1024] = "";
    const cpb_backend *be = cpb_backend_find("cuda", why, sizeof why);
    cpb_ctx *ctx = cpb_test_mpi_ctx("standin_comm_order", be, why);
    int rank = cpb_rank(ctx), world = cpb_world_size(ctx), a = 0, b = 0;
    cpb_buf *x = NULL, *y = NULL;
    float *hx = malloc(sizeof(float) * N_X), *hy = malloc(sizeof(float) * N_Y);
    int rc = cpb_stream(ctx, "a", &a);
    if (!rc) rc = cpb_stream(ctx, "b", &b);
    if (!rc) rc = cpb_alloc(ctx, &x, N_X, CPB_FP32, CPB_TAG_TEMP, "x");
    if (!rc) rc = cpb_alloc(ctx, &y, N_Y, CPB_FP32, CPB_TAG_TEMP, "y");
    for (int i = 0; i < N_X; i++) hx[i] = (float)(rank + 1) * (float)(i % 7);
    for (int i = 0; i < N_Y; i++) hy[i] = (float)(rank + 1) * 0.5f;
    if (!rc) rc = cpb_upload(ctx, cpb_whole(x), hx);
    if (!rc) rc = cpb_upload(ctx, cpb_whole(y), hy);
    if (!rc) rc = cpb_stream_join(ctx, a, CPB_STREAM_COMPUTE);
    if (!rc) rc = cpb_stream_join(ctx, b, CPB_STREAM_COMPUTE);
    if (rank == 0) {
        if (!rc) rc = cpb_all_reduce(ctx, a, NULL, cpb_whole(x));
        if (!rc) rc = cpb_all_reduce(ctx, b, NULL, cpb_whole(y));
    } else {
        if (!rc) rc = cpb_all_reduce(ctx, b, NULL, cpb_whole(y));
        if (!rc) rc = cpb_stream_join(ctx, a, b);
        if (!rc) rc = cpb_all_reduce(ctx, a, NULL, cpb_whole(x));
    }
    if (!rc) rc = cpb_stream_join(ctx, CPB_STREAM_COMPUTE, a);
    if (!rc) rc = cpb_stream_join(ctx, CPB_STREAM_COMPUTE, b);
    if (!rc) rc = cpb_download(ctx, cpb_whole(x), hx);
    if (!rc) rc = cpb_download(ctx, cpb_whole(y), hy);
    int bad = rc != CPB_OK;
    if (rc) fprintf(stderr, "[%d] standin_comm_order: %s\n", rank, cpb_errmsg(ctx));
    double tri = world * (world + 1) / 2.0; /* sum of rank + 1 */
    for (int i = 0; !rc && i < N_X; i++) bad |= hx[i] != (float)(tri * (i % 7));
    for (int i = 0; !rc && i < N_Y; i++) bad |= hy[i] != (float)(tri * 0.5);
    printf("[%d] %s: x[6] %g (want %g), y[0] %g (want %g)\n", rank, bad ? "WRONG" : "ok", rc ? 0.0 : hx[6], tri * 6,
           rc ? 0.0 : hy[0], tri * 0.5);
    int any = bad;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    cpb_free_all(ctx);
    cpb_ctx_destroy(ctx);
    free(hx);
    free(hy);
    MPI_Finalize();
    return any ? 1 : 0;
}
