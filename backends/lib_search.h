/* lib_search.h — loading a plugin whose shared libraries are not on the dynamic linker's
 * path (the CUDA toolkit's folder, the nvidia/<pkg>/lib folders of Python wheels): each
 * library the plugin needs (its ELF DT_NEEDED entries, and theirs) is looked for in a list of
 * places and pre-loaded by full path with RTLD_GLOBAL, so that the plugin's own load then
 * finds it by its soname.  A library found nowhere is named together with every place that
 * was searched. */
#ifndef CPB_LIB_SEARCH_H
#define CPB_LIB_SEARCH_H

#include <stddef.h>

#define CPB_LIB_PATH_LEN 4096
#define CPB_LIB_MAX_PLACES 96
#define CPB_LIB_MAX_LOADED 48

/* Folders to search, in order, each with the rule that put it there ("CPB_CUDA_LIB_PATH",
 * "LD_LIBRARY_PATH", "CUDA toolkit", "python3 site-packages"); existing folders only,
 * each once.  The rules that found nothing are kept in `empty` for the message. */
typedef struct cpb_lib_places {
    int n;
    char dir[CPB_LIB_MAX_PLACES][CPB_LIB_PATH_LEN];
    const char *rule[CPB_LIB_MAX_PLACES];
    char empty[512];
} cpb_lib_places;

/* The places for NVIDIA's libraries: $CPB_CUDA_LIB_PATH (colon-separated), LD_LIBRARY_PATH,
 * the CUDA toolkit ($CUDA_HOME, $CUDA_PATH, the nvcc on PATH, /usr/local/cuda: lib64, lib,
 * targets/<arch>/lib), then the nvidia/<pkg>/lib folders of the site-packages of every
 * python3 on PATH, of $VIRTUAL_ENV and $CONDA_PREFIX, of /usr and /usr/local, and of the
 * user's ~/.local. */
void cpb_lib_places_cuda(cpb_lib_places *pl);

typedef struct cpb_lib_loaded {
    char soname[128];
    char path[CPB_LIB_PATH_LEN]; /* the file the dynamic linker has for it */
} cpb_lib_loaded;

typedef struct cpb_lib_report {
    int n;
    cpb_lib_loaded lib[CPB_LIB_MAX_LOADED];
} cpb_lib_report;

/* Make every library that `object` needs loadable: those already loaded are noted, the
 * others are looked for beside the object, in its RUNPATH, then in `pl`, then on the
 * dynamic linker's own path, and loaded (their own needs first).  On failure returns -1
 * and writes to err which library, needed by what, and where it was looked for. */
int cpb_lib_preload_needs(const char *object, const cpb_lib_places *pl, cpb_lib_report *rep, char *err,
                          size_t err_len);

/* The first file named `soname` in `pl`, else NULL (a library located but not loaded). */
const char *cpb_lib_locate(const char *soname, const cpb_lib_places *pl, char *path, size_t len);

/* "rule: dir, dir; rule: dir; ..." — where a search looked (for messages) */
void cpb_lib_places_describe(const cpb_lib_places *pl, char *out, size_t len);

#endif
