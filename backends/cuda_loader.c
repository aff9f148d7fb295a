/* cuda_loader.c — opens the cuda backend plugin on first use (cuda_loader.h) and forwards
 * the functions of cpb_cuda.h to it, so that cpbench links no CUDA library: `cpbench list`
 * and the cpu and sim backends work where CUDA is absent, and --backend cuda says exactly
 * which library is missing and where it was looked for. */
#include "cuda_loader.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpb_backend.h"
#include "cuda/cpb_cuda.h"
#include "cuda/cpb_cuda_plugin.h"
#include "lib_search.h"

#ifdef CPB_HAVE_CUDA
#define COMPILED_IN 1
#else
#define COMPILED_IN 0
#endif

/* NVIDIA's libraries by the names users know them by */
static const struct {
    const char *prefix, *name;
} known[] = {
    {"libcublasLt.so", "cuBLASLt"}, {"libcublas.so", "cuBLAS"}, {"libnccl.so", "NCCL"},
    {"libcudnn.so", "cuDNN"},       {"libcudart.so", "the CUDA runtime"},
};

/* Libraries the plugin does not link but opens itself.  cuDNN: cudnn-frontend's dynamic
 * loading (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING) dlopen()s "libcudnn.so.<major>" by its
 * soname, and a copy pre-loaded here by full path with RTLD_GLOBAL is what that call
 * returns, wherever it was found.  preload stays 0 until the plugin has cuDNN attention:
 * until then cuDNN is only located and reported. */
static const struct {
    const char *name, *soname;
    int preload;
} opened_by_plugin[] = {
    {"cuDNN", "libcudnn.so.9", 0},
};

/* the functions of cpb_cuda.h, as the plugin defines them */
#define CPB_CUDA_FORWARDED(X)                                                                   \
    X(device_count) X(device_info) X(ctx_device) X(set_attn_generic) X(mem_highwater) X(mem_reset_highwater)

static struct {
    int tried, found, asked; /* asked: CPB_CUDA_PLUGIN names one */
    char path[PATH_MAX];
    char msg[8192];  /* why the backend is unavailable */
    char libs[3072]; /* which NVIDIA libraries it uses, from where */
    void *handle;
    const cpb_backend *be;
#define X(f) __typeof__(cpb_cuda_##f) *f;
    CPB_CUDA_FORWARDED(X)
#undef X
} st;

static cpb_lib_places places;
static cpb_lib_report report;

static const char *known_name(const char *soname)
{
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strncmp(soname, known[i].prefix, strlen(known[i].prefix)) == 0) return known[i].name;
    return NULL;
}

static int find_plugin(void)
{
    const char *env = getenv("CPB_CUDA_PLUGIN");
    if (env && env[0]) {
        st.asked = 1;
        snprintf(st.path, sizeof st.path, "%s", env);
        if (access(st.path, R_OK) == 0) return 0;
        snprintf(st.msg, sizeof st.msg, "CPB_CUDA_PLUGIN=%s: no such file (unset it to use the plugin beside cpbench)",
                 env);
        return -1;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(st.msg, sizeof st.msg, "cannot tell where the cpbench executable is (/proc/self/exe); "
                                        "set CPB_CUDA_PLUGIN to the path of " CPB_CUDA_PLUGIN_FILE);
        return -1;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    static const char *const rel[] = {"", "/../lib"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char p[PATH_MAX + 32];
        snprintf(p, sizeof p, "%s%s/" CPB_CUDA_PLUGIN_FILE, exe, rel[i]);
        if (access(p, R_OK) == 0) {
            if (!realpath(p, st.path)) snprintf(st.path, sizeof st.path, "%s", p);
            return 0;
        }
    }
    snprintf(st.msg, sizeof st.msg,
             "the plugin " CPB_CUDA_PLUGIN_FILE " is neither beside the cpbench executable (%s) nor in %s/../lib, "
             "and CPB_CUDA_PLUGIN is unset%s",
             exe, exe,
             COMPILED_IN ? "; it is built with cpbench (cmake --build BUILD): build it, or copy it beside cpbench"
                         : "");
    return -1;
}

/* "cuBLAS from /path, ..." for the libraries users know; cuDNN located or pre-loaded */
static void describe_libs(void)
{
    size_t o = 0;
    st.libs[0] = '\0';
    for (int i = 0; i < report.n && o < sizeof st.libs; i++) {
        const char *name = known_name(report.lib[i].soname);
        if (name)
            o += (size_t)snprintf(st.libs + o, sizeof st.libs - o, "%s%s from %s", o ? ", " : "", name,
                                  report.lib[i].path);
    }
    for (size_t i = 0; i < sizeof opened_by_plugin / sizeof opened_by_plugin[0] && o < sizeof st.libs; i++) {
        char p[CPB_LIB_PATH_LEN];
        const char *at = cpb_lib_locate(opened_by_plugin[i].soname, &places, p, sizeof p);
        void *h = NULL;
        if (at && opened_by_plugin[i].preload) h = dlopen(at, RTLD_NOW | RTLD_GLOBAL);
        o += (size_t)snprintf(st.libs + o, sizeof st.libs - o, "%s%s %s %s", o ? "; " : "", opened_by_plugin[i].name,
                              h ? "from" : at ? "found at" : "not found",
                              at ? at : "(nothing uses it yet)");
        if (at && !h && o < sizeof st.libs)
            o += (size_t)snprintf(st.libs + o, sizeof st.libs - o, " (not loaded: nothing uses it yet)");
    }
}

static void load(void)
{
    if (st.tried) return;
    st.tried = 1;
    if (find_plugin() != 0) return;
    st.found = 1;
    cpb_lib_places_cuda(&places);
    char err[7000];
    if (cpb_lib_preload_needs(st.path, &places, &report, err, sizeof err) != 0) {
        const char *name = known_name(err);
        snprintf(st.msg, sizeof st.msg,
                 "cannot load the plugin %s: %s%s%s. Install it (the CUDA toolkit, or pip's nvidia-* wheels), or "
                 "set CPB_CUDA_LIB_PATH to the folder that holds it (docs/cuda.md)",
                 st.path, name ? name : "", name ? ": " : "", err);
        return;
    }
    st.handle = dlopen(st.path, RTLD_NOW | RTLD_LOCAL);
    if (!st.handle) {
        snprintf(st.msg, sizeof st.msg, "cannot load the plugin %s: %s", st.path, dlerror());
        return;
    }
    const cpb_backend *(*entry)(int) = (const cpb_backend *(*)(int))dlsym(st.handle, CPB_CUDA_PLUGIN_ENTRY);
    const int *abi = (const int *)dlsym(st.handle, CPB_CUDA_PLUGIN_ABI_SYMBOL);
    if (!entry) {
        snprintf(st.msg, sizeof st.msg, "%s is not a cpbench cuda plugin (it has no %s)", st.path,
                 CPB_CUDA_PLUGIN_ENTRY);
        return;
    }
    const cpb_backend *be = entry(CPB_CUDA_PLUGIN_ABI);
    if (!be) {
        snprintf(st.msg, sizeof st.msg,
                 "the plugin %s was built for plugin interface %d and this cpbench has %d: use the plugin built "
                 "with this cpbench",
                 st.path, abi ? *abi : -1, CPB_CUDA_PLUGIN_ABI);
        return;
    }
#define X(f)                                                                                           \
    st.f = (__typeof__(cpb_cuda_##f) *)dlsym(st.handle, "cpb_cuda_" #f);                               \
    if (!st.f) {                                                                                       \
        snprintf(st.msg, sizeof st.msg, "the plugin %s lacks cpb_cuda_" #f ": use the plugin built with " \
                 "this cpbench", st.path);                                                             \
        return;                                                                                        \
    }
    CPB_CUDA_FORWARDED(X)
#undef X
    describe_libs();
    st.be = be;
}

/* ---------------------------------------------------------------- the backend */

static int unavailable_init(cpb_ctx *ctx)
{
    return cpb_fail(ctx, CPB_ERR_UNSUPPORTED, "cuda backend: %s", st.msg);
}

static void unavailable_finalize(cpb_ctx *ctx)
{
    (void)ctx;
}

/* what --backend cuda gets when the plugin does not load: a backend whose start-up fails
 * with the reason, so that every command reports it the way it reports a missing GPU */
static const cpb_backend unavailable = {.name = "cuda", .init = unavailable_init, .finalize = unavailable_finalize};

const cpb_backend *cpb_backend_cuda_get(void)
{
    load();
    if (st.be) return st.be;
    return COMPILED_IN || st.found || st.asked ? &unavailable : NULL;
}

int cpb_cuda_plugin_describe(char *out, size_t len)
{
    load();
    const char *built = COMPILED_IN ? "compiled in" : "not compiled into this build";
    if (st.be)
        snprintf(out, len, "%s; plugin %s loaded; %s", built, st.path, st.libs);
    else if (st.found || st.asked || COMPILED_IN)
        snprintf(out, len, "%s; %s", built, st.msg);
    else
        snprintf(out, len, "not compiled in (no CUDA toolkit at build time)");
    return st.be != NULL;
}

/* ---------------------------------------------------------------- cpb_cuda.h, forwarded */

/* cudart found no device: say so plainly when the reason is that there is no driver */
static void driver_hint(char *why, size_t len)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h) h = dlopen("libcuda.so.1", RTLD_LAZY);
    if (h) {
        dlclose(h);
        return;
    }
    size_t l = strlen(why);
    snprintf(why + l, len - l, "%sno NVIDIA driver on this machine (libcuda.so.1 not found)", l ? "; " : "");
}

int cpb_cuda_device_count(char *why, size_t why_len)
{
    load();
    if (!st.be) {
        if (why && why_len) snprintf(why, why_len, "%s", st.msg);
        return 0;
    }
    int n = st.device_count(why, why_len);
    if (n <= 0 && why && why_len) driver_hint(why, why_len);
    return n;
}

int cpb_cuda_device_info(int dev, char *name, size_t name_len, int64_t *total_bytes, int *num_sms)
{
    load();
    if (st.be) return st.device_info(dev, name, name_len, total_bytes, num_sms);
    if (name && name_len) snprintf(name, name_len, "unknown");
    if (total_bytes) *total_bytes = 0;
    if (num_sms) *num_sms = 0;
    return CPB_ERR_UNSUPPORTED;
}

int cpb_cuda_ctx_device(const cpb_ctx *ctx)
{
    return st.be ? st.ctx_device(ctx) : -1;
}

int cpb_cuda_set_attn_generic(cpb_ctx *ctx, int generic)
{
    return st.be ? st.set_attn_generic(ctx, generic) : CPB_ERR_INVALID;
}

int cpb_cuda_mem_highwater(cpb_ctx *ctx, int64_t *reserved, int64_t *device_used)
{
    return st.be ? st.mem_highwater(ctx, reserved, device_used) : CPB_ERR_INVALID;
}

int cpb_cuda_mem_reset_highwater(cpb_ctx *ctx)
{
    return st.be ? st.mem_reset_highwater(ctx) : CPB_ERR_INVALID;
}
