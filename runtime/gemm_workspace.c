/* gemm_workspace.c — the GEMM workspace size, one function for every backend (DESIGN
 * section 3: op workspaces are tracked allocations whose sizes all backends agree on).
 * The cuda backend allocates one per stream that runs GEMMs, through cpb_alloc with tag
 * CPB_TAG_WORKSPACE, at that stream's first GEMM of a trial. */
#include "cpb.h"

int64_t cpb_gemm_workspace_bytes(void)
{
    return (int64_t)32 << 20; /* cuBLAS's recommendation for Hopper */
}
