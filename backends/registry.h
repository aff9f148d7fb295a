/* registry.h — the backends compiled into this build, found by the name a user types
 * (--backend NAME).  Everything else asks a backend's capability flags and hooks
 * (cpb_backend.h), never its name. */
#ifndef CPB_REGISTRY_H
#define CPB_REGISTRY_H

#include <stddef.h>

#include "cpb_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const cpb_backend cpb_backend_cpu;
extern const cpb_backend cpb_backend_sim;
/* the cuda plugin's backend (cuda_loader.c); one that refuses to start, saying why, when
 * the plugin does not load; NULL when it was neither built nor found */
const cpb_backend *cpb_backend_cuda_get(void);

/* the backends this build knows of, in `cpbench list` order ("cpu", "sim", "cuda") */
int cpb_backend_count(void);
const char *cpb_backend_name_at(int i);
/* backend i, or NULL with the reason in why when it is not available */
const cpb_backend *cpb_backend_at(int i, char *why, size_t why_len);
/* how this build has backend i, for `cpbench list`: "compiled in", or for the cuda plugin
 * where it was found, whether it loaded and with which libraries, or why not.  Returns 1
 * when the backend is there to run (0: it only says why it cannot start) */
int cpb_backend_describe_at(int i, char *out, size_t len);
/* 1 when `name` is one of the backends this build knows of (it may still be absent) */
int cpb_backend_known(const char *name);
/* the backend called `name`; NULL with a message naming the choices in why */
const cpb_backend *cpb_backend_find(const char *name, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
