/* cuda_loader.c — opens the cuda backend plugin on first use (cuda_loader.h) and hands out
 * the backend table it returns, whose hooks (cpb_backend.h) are all cpbench asks of it, so
 * that cpbench links no CUDA library: `cpbench list` and the cpu and sim backends work
 * where CUDA is absent, and --backend cuda says exactly which library is missing and where
 * it was looked for. */
#include "cuda_loader.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpb_backend.h"
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

/* Libraries the plugin does not link but opens itself, pre-loaded here by full path with
 * RTLD_GLOBAL so that the plugin's dlopen by soname returns the copy found here, wherever
 * it is (the toolkit, a pip wheel, CPB_CUDA_LIB_PATH).  cuDNN: cudnn-frontend's dynamic
 * loading (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING, backends/cuda/attn_cudnn.cpp) opens
 * "libcudnn.so.9", which opens its engine libraries by soname in turn; the frontend also
 * calls a few CUDA runtime functions through "libcudart.so.13" (the device's SM version,
 * CUDA graphs, memset of workspace).  Optional: what is missing only takes cuDNN attention
 * away, or makes it fail when first called.  Each one that does not load is reported: on
 * `cpbench list` and, through the plugin (CPB_CUDA_PLUGIN_PRELOAD_SYMBOL), in cuDNN
 * attention's status and errors; otherwise only libcudnn itself is named.  Only a plugin
 * with cuDNN attention compiled in (CPB_CUDA_PLUGIN_CUDNN_SYMBOL) gets them: the engine
 * libraries are large, and a plugin without it never opens them. */
static const struct {
    const char *name, *soname;
    int report; /* named on `cpbench list` even when it loads */
} opened_by_plugin[] = {
    {"cuDNN graph", "libcudnn_graph.so.9", 0},
    {"cuDNN engines", "libcudnn_engines_precompiled.so.9", 0},
    {"cuDNN runtime-compiled engines", "libcudnn_engines_runtime_compiled.so.9", 0},
    {"cuDNN heuristics", "libcudnn_heuristic.so.9", 0},
    {"cuDNN", "libcudnn.so.9", 1},
    {"the shared CUDA runtime", "libcudart.so.13", 0},
};

static struct {
    int tried, found, asked; /* asked: CPB_CUDA_PLUGIN names one */
    char path[PATH_MAX];
    char msg[8192];  /* why the backend is unavailable */
    char libs[4096]; /* which NVIDIA libraries it uses, from where */
    /* the libraries of opened_by_plugin that did not pre-load: sonames, and each with why */
    char unloaded[512], unloaded_why[3072];
    void *handle;
    const cpb_backend *plugin; /* the plugin's own table */
    cpb_backend be;            /* what cpbench uses: that table, with the probe below */
    int loaded;
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

/* printf to the end of a fixed buffer, which stays terminated (and cut) when full */
static void append(char *buf, size_t cap, const char *fmt, ...)
{
    size_t o = strlen(buf);
    if (o + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + o, cap - o, fmt, ap);
    va_end(ap);
}

/* "cuBLAS from /path, ..." for the libraries users know; cuDNN located or pre-loaded, and
 * each of cuDNN's libraries that did not pre-load, with why */
static void describe_libs(int with_cudnn)
{
    char others[sizeof st.unloaded_why] = ""; /* those not named on their own below */
    st.libs[0] = st.unloaded[0] = st.unloaded_why[0] = '\0';
    for (int i = 0; i < report.n; i++) {
        const char *name = known_name(report.lib[i].soname);
        if (name) append(st.libs, sizeof st.libs, "%s%s from %s", st.libs[0] ? ", " : "", name, report.lib[i].path);
    }
    for (size_t i = 0; i < sizeof opened_by_plugin / sizeof opened_by_plugin[0]; i++) {
        const char *name = opened_by_plugin[i].name, *soname = opened_by_plugin[i].soname;
        char p[CPB_LIB_PATH_LEN], err[1024] = "", why[CPB_LIB_PATH_LEN + 1200];
        const char *at = cpb_lib_locate(soname, &places, p, sizeof p);
        void *h = NULL;
        if (at && with_cudnn) {
            h = dlopen(at, RTLD_NOW | RTLD_GLOBAL);
            if (!h) {
                /* before anything else calls dl*; without dlerror's leading "<path>: ", said just before */
                const char *e = dlerror(), *own = e ? e : "dlopen failed";
                size_t n = strlen(at);
                if (strncmp(own, at, n) == 0 && own[n] == ':' && own[n + 1] == ' ') own += n + 2;
                snprintf(err, sizeof err, "%s", own);
            }
        }
        if (with_cudnn && !h) {
            if (at)
                snprintf(why, sizeof why, "%s: not loaded (%s)", at, err);
            else
                snprintf(why, sizeof why, "%s (%s): not found where cpbench looks (set CPB_CUDA_LIB_PATH to its folder)",
                         soname, name);
            append(st.unloaded, sizeof st.unloaded, "%s%s", st.unloaded[0] ? ", " : "", soname);
            append(st.unloaded_why, sizeof st.unloaded_why, "%s%s", st.unloaded_why[0] ? "; " : "", why);
            if (!opened_by_plugin[i].report) append(others, sizeof others, "%s%s", others[0] ? "; " : "", why);
        }
        if (!opened_by_plugin[i].report) continue;
        append(st.libs, sizeof st.libs, "%s%s %s %s", st.libs[0] ? "; " : "", name,
               h ? "from" : at ? "found at" : "not found",
               at ? at : with_cudnn ? "(cuDNN attention unavailable)" : "(not used: no cuDNN attention in the plugin)");
        if (at && !h)
            append(st.libs, sizeof st.libs, " (not loaded: %s)", with_cudnn ? err : "the plugin has no cuDNN attention");
    }
    if (others[0]) append(st.libs, sizeof st.libs, "; not pre-loaded for cuDNN attention: %s", others);
}

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

/* the plugin's probe, and why there is no device when the driver is missing */
static int probe_with_hint(char *why, size_t why_len)
{
    int n = st.plugin->probe(why, why_len);
    if (n <= 0 && why && why_len) driver_hint(why, why_len);
    return n;
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
    const int *dnn = (const int *)dlsym(st.handle, CPB_CUDA_PLUGIN_CUDNN_SYMBOL);
    describe_libs(dnn && *dnn);
    /* optional in the plugin interface: a plugin without it only cannot say so itself */
    void (*preload_report)(const char *, const char *) =
        (void (*)(const char *, const char *))dlsym(st.handle, CPB_CUDA_PLUGIN_PRELOAD_SYMBOL);
    if (preload_report) preload_report(st.unloaded, st.unloaded_why);
    st.plugin = be;
    st.be = *be;
    if (be->probe) st.be.probe = probe_with_hint;
    st.loaded = 1;
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

static int unavailable_probe(char *why, size_t why_len)
{
    if (why && why_len) snprintf(why, why_len, "%s", st.msg);
    return 0;
}

/* what --backend cuda gets when the plugin does not load: a backend with the cuda
 * backend's capabilities whose probe finds no device and whose start-up fails, both with
 * the reason, so that every command reports it the way it reports a missing GPU */
static const cpb_backend unavailable = {
    .name = "cuda",
    .has_data = 1,
    .mpi_world = 1,
    .init = unavailable_init,
    .finalize = unavailable_finalize,
    .probe = unavailable_probe,
};

const cpb_backend *cpb_backend_cuda_get(void)
{
    load();
    if (st.loaded) return &st.be;
    return COMPILED_IN || st.found || st.asked ? &unavailable : NULL;
}

int cpb_cuda_plugin_describe(char *out, size_t len)
{
    load();
    const char *built = COMPILED_IN ? "compiled in" : "not compiled into this build";
    if (st.loaded)
        snprintf(out, len, "%s; plugin %s loaded; %s", built, st.path, st.libs);
    else if (st.found || st.asked || COMPILED_IN)
        snprintf(out, len, "%s; %s", built, st.msg);
    else
        snprintf(out, len, "not compiled in (no CUDA toolkit at build time)");
    return st.loaded;
}
