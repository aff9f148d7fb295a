/* provenance.c — collect what a results row needs to be traced back to its origin.
 *
 * Library versions of CUDA, NCCL and cuDNN are asked through weak references: the harness
 * does not include their headers and builds without them; when the cuda backend links the
 * library, the symbol resolves and the version is recorded. */
#include "provenance.h"

#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef CPB_GIT_COMMIT
#define CPB_GIT_COMMIT "unknown"
#endif

/* weak: NULL unless the cuda backend linked the library */
extern int cudaRuntimeGetVersion(int *v) __attribute__((weak));
extern int cudaDriverGetVersion(int *v) __attribute__((weak));
extern int ncclGetVersion(int *v) __attribute__((weak));
extern size_t cudnnGetVersion(void) __attribute__((weak));

void cpb_provenance_utc_now(char *out, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int needs_quotes(const char *a)
{
    if (!*a) return 1;
    for (const char *c = a; *c; c++)
        if (strchr(" \t\n'\"\\$`*?[]{}()<>|&;!#~", *c)) return 1;
    return 0;
}

void cpb_provenance_join_argv(char *out, size_t len, int argc, char **argv)
{
    size_t n = 0;
    if (len == 0) return;
    out[0] = 0;
    for (int i = 0; i < argc && n + 1 < len; i++) {
        const char *a = argv[i] ? argv[i] : "";
        if (i > 0 && n + 1 < len) out[n++] = ' ';
        if (!needs_quotes(a)) {
            n += (size_t)snprintf(out + n, len - n, "%s", a);
        } else { /* single quotes, with ' written as '\'' */
            if (n + 1 < len) out[n++] = '\'';
            for (const char *c = a; *c && n + 5 < len; c++) {
                if (*c == '\'') {
                    memcpy(out + n, "'\\''", 4);
                    n += 4;
                } else {
                    out[n++] = *c;
                }
            }
            if (n + 1 < len) out[n++] = '\'';
        }
        if (n >= len) n = len - 1;
        out[n] = 0;
    }
    out[n < len ? n : len - 1] = 0;
}

/* First line of `cmd`'s output (without newline) and the number of non-empty lines. */
static int popen_lines(const char *cmd, char *first, size_t len)
{
    FILE *f = popen(cmd, "r");
    if (!f) return 0;
    char line[512];
    int count = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0]) continue;
        if (count == 0) snprintf(first, len, "%s", line);
        count++;
    }
    if (pclose(f) != 0) return 0;
    return count;
}

static void version_strings(cpb_provenance *p)
{
    unsigned maj = 0, min = 0, rel = 0;
    H5get_libversion(&maj, &min, &rel);
    snprintf(p->hdf5_version, sizeof p->hdf5_version, "%u.%u.%u", maj, min, rel);

    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin) {
        char v[MPI_MAX_LIBRARY_VERSION_STRING];
        int vl = 0;
        if (MPI_Get_library_version(v, &vl) == MPI_SUCCESS) {
            v[strcspn(v, "\r\n")] = 0; /* Open MPI's string runs over several lines */
            snprintf(p->mpi_version, sizeof p->mpi_version, "%s", v);
        }
    }

    if (cudaRuntimeGetVersion) {
        int rt = 0, drv = 0;
        cudaRuntimeGetVersion(&rt);
        if (cudaDriverGetVersion) cudaDriverGetVersion(&drv);
        if (drv > 0)
            snprintf(p->cuda_version, sizeof p->cuda_version, "runtime %d.%d, driver %d.%d",
                     rt / 1000, (rt % 1000) / 10, drv / 1000, (drv % 1000) / 10);
        else /* cudart linked, no NVIDIA driver on this machine */
            snprintf(p->cuda_version, sizeof p->cuda_version, "runtime %d.%d, no driver",
                     rt / 1000, (rt % 1000) / 10);
    }
    if (ncclGetVersion) {
        int v = 0;
        if (ncclGetVersion(&v) == 0) /* NCCL >= 2.9: v = major*10000 + minor*100 + patch */
            snprintf(p->nccl_version, sizeof p->nccl_version, "%d.%d.%d", v / 10000,
                     (v % 10000) / 100, v % 100);
    }
    if (cudnnGetVersion) {
        size_t v = cudnnGetVersion(); /* cuDNN 9: major*10000 + minor*100 + patch */
        snprintf(p->cudnn_version, sizeof p->cudnn_version, "%zu.%zu.%zu", v / 10000,
                 (v % 10000) / 100, v % 100);
    }
}

void cpb_provenance_collect(cpb_provenance *p, int argc, char **argv, const char *backend,
                            const char *gpu, int gpu_count)
{
    memset(p, 0, sizeof *p);
    /* a subcommand gets argv from its name on ("sweep --model ..."): put the program back so
     * the line can be pasted into a shell */
    size_t off = 0;
    if (argc > 0 && argv[0] && !strstr(argv[0], "cpbench"))
        off = (size_t)snprintf(p->command_line, sizeof p->command_line, "cpbench ");
    cpb_provenance_join_argv(p->command_line + off, sizeof p->command_line - off, argc, argv);
    snprintf(p->git_commit, sizeof p->git_commit, "%s", CPB_GIT_COMMIT);
    cpb_provenance_utc_now(p->date, sizeof p->date);
    if (gethostname(p->host, sizeof p->host - 1) != 0) snprintf(p->host, sizeof p->host, "?");
    snprintf(p->backend, sizeof p->backend, "%s", backend ? backend : "");
    p->gpu_count = gpu_count;
    if (gpu && *gpu) {
        snprintf(p->gpu, sizeof p->gpu, "%s", gpu);
    } else if (backend && strcmp(backend, "cuda") == 0) {
        int n = popen_lines("nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null",
                            p->gpu, sizeof p->gpu);
        if (n > 0 && gpu_count <= 0) p->gpu_count = n;
    } else if (backend && strcmp(backend, "cpu") == 0) {
        snprintf(p->gpu, sizeof p->gpu, "cpu");
    }
    version_strings(p);
}
