/* lib_search.c — the places where NVIDIA's libraries live, and pre-loading what a plugin
 * needs from them (lib_search.h). */
#include "lib_search.h"

#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_needed.h"

static int is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int is_file(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* add an existing folder once (compared after resolving links) */
static void add_dir(cpb_lib_places *pl, const char *dir, const char *rule)
{
    char real[PATH_MAX];
    if (!dir || !dir[0] || pl->n >= CPB_LIB_MAX_PLACES || !is_dir(dir) || !realpath(dir, real)) return;
    for (int i = 0; i < pl->n; i++)
        if (strcmp(pl->dir[i], real) == 0) return;
    snprintf(pl->dir[pl->n], sizeof pl->dir[0], "%s", real);
    pl->rule[pl->n++] = rule;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void add_glob(cpb_lib_places *pl, const char *pattern, const char *rule)
{
    glob_t g;
    if (glob(pattern, GLOB_NOSORT | GLOB_ONLYDIR, NULL, &g) != 0) return;
    /* sorted, so that the choice between two copies does not depend on the file system */
    qsort(g.gl_pathv, g.gl_pathc, sizeof(char *), cmp_str);
    for (size_t i = 0; i < g.gl_pathc; i++) add_dir(pl, g.gl_pathv[i], rule);
    globfree(&g);
}

static void add_list(cpb_lib_places *pl, const char *var, const char *rule)
{
    const char *v = getenv(var);
    int before = pl->n;
    if (v) {
        char buf[8192];
        snprintf(buf, sizeof buf, "%s", v);
        for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save))
            add_dir(pl, d, rule);
    }
    if (pl->n == before) {
        size_t l = strlen(pl->empty);
        snprintf(pl->empty + l, sizeof pl->empty - l, "%s%s (%s)", l ? ", " : "", rule,
                 v ? "no folder of it exists" : "unset");
    }
}

static void add_toolkit(cpb_lib_places *pl, const char *root)
{
    char p[PATH_MAX];
    if (!root || !root[0]) return;
    snprintf(p, sizeof p, "%s/lib64", root);
    add_dir(pl, p, "CUDA toolkit");
    snprintf(p, sizeof p, "%s/lib", root);
    add_dir(pl, p, "CUDA toolkit");
    snprintf(p, sizeof p, "%s/targets/*/lib", root);
    add_glob(pl, p, "CUDA toolkit");
}

/* the site-packages of an interpreter installed under prefix (bin/python3 -> lib/...) */
static void add_python_prefix(cpb_lib_places *pl, const char *prefix)
{
    static const char *const under[] = {
        "lib/python3*/site-packages", "lib/python3*/dist-packages", "lib/python3/dist-packages",
        "lib64/python3*/site-packages", "local/lib/python3*/dist-packages",
    };
    char p[PATH_MAX];
    for (size_t i = 0; i < sizeof under / sizeof under[0]; i++) {
        snprintf(p, sizeof p, "%s/%s/nvidia/*/lib", prefix, under[i]);
        add_glob(pl, p, "python3 site-packages");
    }
}

/* a folder of PATH that holds a python3 names an installation prefix one level up */
static void add_python_bindir(cpb_lib_places *pl, const char *bindir)
{
    char p[PATH_MAX];
    glob_t g;
    snprintf(p, sizeof p, "%s/python3*", bindir);
    if (glob(p, GLOB_NOSORT, NULL, &g) != 0) return;
    int found = g.gl_pathc > 0;
    globfree(&g);
    if (!found) return;
    snprintf(p, sizeof p, "%s/..", bindir);
    add_python_prefix(pl, p);
}

void cpb_lib_places_cuda(cpb_lib_places *pl)
{
    pl->n = 0;
    pl->empty[0] = '\0';
    add_list(pl, "CPB_CUDA_LIB_PATH", "CPB_CUDA_LIB_PATH");
    add_list(pl, "LD_LIBRARY_PATH", "LD_LIBRARY_PATH");

    int before = pl->n;
    add_toolkit(pl, getenv("CUDA_HOME"));
    add_toolkit(pl, getenv("CUDA_PATH"));
    const char *path = getenv("PATH");
    char buf[8192];
    snprintf(buf, sizeof buf, "%s", path ? path : "");
    for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char nvcc[PATH_MAX];
        snprintf(nvcc, sizeof nvcc, "%s/nvcc", d);
        if (is_file(nvcc)) {
            snprintf(nvcc, sizeof nvcc, "%s/..", d);
            add_toolkit(pl, nvcc);
        }
    }
    add_toolkit(pl, "/usr/local/cuda");
    if (pl->n == before) {
        size_t l = strlen(pl->empty);
        snprintf(pl->empty + l, sizeof pl->empty - l, "%sCUDA toolkit (none in $CUDA_HOME, $CUDA_PATH, PATH's nvcc, "
                 "/usr/local/cuda)", l ? ", " : "");
    }

    before = pl->n;
    snprintf(buf, sizeof buf, "%s", path ? path : "");
    for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save))
        add_python_bindir(pl, d);
    if (getenv("VIRTUAL_ENV")) add_python_prefix(pl, getenv("VIRTUAL_ENV"));
    if (getenv("CONDA_PREFIX")) add_python_prefix(pl, getenv("CONDA_PREFIX"));
    add_python_prefix(pl, "/usr");
    add_python_prefix(pl, "/usr/local");
    if (getenv("HOME")) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/.local", getenv("HOME"));
        add_python_prefix(pl, p);
    }
    if (pl->n == before) {
        size_t l = strlen(pl->empty);
        snprintf(pl->empty + l, sizeof pl->empty - l, "%spython3 site-packages (no nvidia/*/lib folder)",
                 l ? ", " : "");
    }
}

void cpb_lib_places_describe(const cpb_lib_places *pl, char *out, size_t len)
{
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < pl->n && o < len; i++) {
        int first = i == 0 || pl->rule[i] != pl->rule[i - 1];
        o += (size_t)snprintf(out + o, len - o, "%s%s%s", i == 0 ? "" : first ? "; " : ", ",
                              first ? pl->rule[i] : "", first ? ": " : "");
        if (o < len) o += (size_t)snprintf(out + o, len - o, "%s", pl->dir[i]);
    }
    if (pl->empty[0] && o < len) o += (size_t)snprintf(out + o, len - o, "%s%s", o ? "; " : "", pl->empty);
    if (o < len) snprintf(out + o, len - o, "%sthe dynamic linker's own path (ld.so.cache, /lib, /usr/lib)",
                          o ? "; and " : "");
}

const char *cpb_lib_locate(const char *soname, const cpb_lib_places *pl, char *path, size_t len)
{
    for (int i = 0; i < pl->n; i++) {
        snprintf(path, len, "%s/%s", pl->dir[i], soname);
        if (is_file(path)) return path;
    }
    return NULL;
}

/* ---------------------------------------------------------------- pre-loading */

static void note(cpb_lib_report *rep, const char *soname, void *h)
{
    struct link_map *lm = NULL;
    if (!rep || rep->n >= CPB_LIB_MAX_LOADED) return;
    for (int i = 0; i < rep->n; i++)
        if (strcmp(rep->lib[i].soname, soname) == 0) return;
    cpb_lib_loaded *l = &rep->lib[rep->n++];
    snprintf(l->soname, sizeof l->soname, "%s", soname);
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
        snprintf(l->path, sizeof l->path, "%s", lm->l_name);
    else
        snprintf(l->path, sizeof l->path, "%s", soname);
}

/* the folders of a RUNPATH, with $ORIGIN replaced by the object's folder */
static int runpath_dirs(const char *runpath, const char *origin, char dirs[][CPB_LIB_PATH_LEN], int max)
{
    char buf[4096];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", runpath);
    for (char *save = NULL, *d = strtok_r(buf, ":", &save); d && n < max; d = strtok_r(NULL, ":", &save)) {
        const char *rest = NULL;
        if (strncmp(d, "$ORIGIN", 7) == 0) rest = d + 7;
        else if (strncmp(d, "${ORIGIN}", 9) == 0) rest = d + 9;
        if (rest) snprintf(dirs[n++], CPB_LIB_PATH_LEN, "%s%s", origin, rest);
        else if (!strchr(d, '$')) snprintf(dirs[n++], CPB_LIB_PATH_LEN, "%s", d);
    }
    return n;
}

static int preload(const char *object, const cpb_lib_places *pl, cpb_lib_report *rep, int depth, char *err,
                   size_t err_len)
{
    cpb_elf_needed *nd = malloc(sizeof *nd);
    char (*own)[CPB_LIB_PATH_LEN] = malloc(sizeof(char[17][CPB_LIB_PATH_LEN]));
    char *path = malloc(CPB_LIB_PATH_LEN), *tried = malloc(4096);
    int rc = 0;
    if (!nd || !own || !path || !tried) {
        snprintf(err, err_len, "out of host memory resolving the libraries of %s", object);
        rc = -1;
        goto out;
    }
    if (cpb_elf_needed_read(object, nd, err, err_len) != 0) {
        rc = -1;
        goto out;
    }
    /* a library's own folder and RUNPATH come first, so that a library and the ones it
     * was shipped with are taken together (cuBLAS with its cuBLASLt) */
    char origin[CPB_LIB_PATH_LEN];
    snprintf(origin, sizeof origin, "%s", object);
    char *slash = strrchr(origin, '/');
    if (slash) *slash = '\0';
    else snprintf(origin, sizeof origin, ".");
    snprintf(own[0], CPB_LIB_PATH_LEN, "%s", origin);
    int nown = 1 + runpath_dirs(nd->runpath, origin, own + 1, 16);

    for (int i = 0; i < nd->n && rc == 0; i++) {
        const char *so = nd->name[i];
        void *h = dlopen(so, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
        if (h) {
            note(rep, so, h);
            dlclose(h);
            continue;
        }
        tried[0] = '\0';
        for (int k = 0; k < nown + pl->n && !h; k++) {
            snprintf(path, CPB_LIB_PATH_LEN, "%s/%s", k < nown ? own[k] : pl->dir[k - nown], so);
            if (!is_file(path)) continue;
            if (depth < 8 && preload(path, pl, rep, depth + 1, err, err_len) != 0) {
                /* this copy's own needs are missing: remember why, try the next copy */
                size_t l = strlen(tried);
                snprintf(tried + l, 4096 - l, "%s%s", l ? "; " : "", err);
                continue;
            }
            h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
            if (!h) {
                size_t l = strlen(tried);
                snprintf(tried + l, 4096 - l, "%s%s", l ? "; " : "", dlerror());
            }
        }
        if (!h) h = dlopen(so, RTLD_NOW | RTLD_GLOBAL); /* the dynamic linker's own search */
        if (h) {
            note(rep, so, h);
            continue;
        }
        char where[3072];
        cpb_lib_places_describe(pl, where, sizeof where);
        snprintf(err, err_len, "%s (needed by %s) was not found%s%s; looked beside it, in its RUNPATH, in %s", so,
                 object, tried[0] ? " or did not load: " : "", tried, where);
        rc = -1;
    }
out:
    free(nd);
    free(own);
    free(path);
    free(tried);
    return rc;
}

int cpb_lib_preload_needs(const char *object, const cpb_lib_places *pl, cpb_lib_report *rep, char *err,
                          size_t err_len)
{
    if (rep) rep->n = 0;
    return preload(object, pl, rep, 0, err, err_len);
}
