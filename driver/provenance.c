/* provenance.c — collect what a results row needs to be traced back to its origin.
 *
 * Library versions of the backend (CUDA, NCCL, cuDNN) come from its versions hook, so this
 * file includes none of their headers and builds without them. */
#include "provenance.h"

#include "attn_choice.h"
#include "gpu_profiles.h"

#include <hdf5.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ranks.h"

#ifndef CPB_GIT_COMMIT
#define CPB_GIT_COMMIT "unknown"
#endif

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

static void version_strings(cpb_provenance *p, const cpb_backend *be)
{
    unsigned maj = 0, min = 0, rel = 0;
    H5get_libversion(&maj, &min, &rel);
    snprintf(p->hdf5_version, sizeof p->hdf5_version, "%u.%u.%u", maj, min, rel);
    cpb_ranks_mpi_version(p->mpi_version, sizeof p->mpi_version);
    if (be && be->versions) {
        cpb_backend_versions v;
        be->versions(&v);
        snprintf(p->cuda_version, sizeof p->cuda_version, "%s", v.runtime);
        snprintf(p->nccl_version, sizeof p->nccl_version, "%s", v.comm);
        snprintf(p->cudnn_version, sizeof p->cudnn_version, "%s", v.dnn);
    }
}

/* which attention implementations the rows' calls could run, or which the sim models */
static void attention(cpb_provenance *p, const cpb_backend *be, const char *gpu)
{
    cpb_gpu_profile prof;
    char err[256];
    if (be && be->models_time && cpb_gpu_profile_get(gpu, &prof, err, sizeof err) == CPB_OK)
        cpb_gpu_profile_attn_model(&prof, p->attention, sizeof p->attention);
    else if (be && be->attn_cudnn)
        cpb_attn_impls_line(be, p->attention, sizeof p->attention);
    else if (be)
        snprintf(p->attention, sizeof p->attention,
                 "attention: %s computes our math; --attn sets which implementation's workspace is accounted", be->name);
}

void cpb_provenance_collect(cpb_provenance *p, int argc, char **argv, const cpb_backend *be,
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
    snprintf(p->backend, sizeof p->backend, "%s", be ? be->name : "");
    p->gpu_count = gpu_count;
    snprintf(p->gpu, sizeof p->gpu, "%s", gpu ? gpu : "");
    version_strings(p, be);
    attention(p, be, gpu);
}
