/* elf_needed.h — the shared libraries an ELF object names as its dependencies (DT_NEEDED)
 * and where it asks for them to be found (DT_RUNPATH, or the older DT_RPATH), read from the
 * file without loading it.  glibc offers no call for this short of loading the object, which
 * fails on the first missing library without naming the rest. */
#ifndef CPB_ELF_NEEDED_H
#define CPB_ELF_NEEDED_H

#include <stddef.h>

#define CPB_ELF_MAX_NEEDED 64

typedef struct cpb_elf_needed {
    int n;
    char name[CPB_ELF_MAX_NEEDED][128]; /* sonames, in the object's order */
    char runpath[4096];                 /* colon-separated, $ORIGIN not yet expanded; "" if none */
} cpb_elf_needed;

/* 0 on success; -1 with a message in err (not readable, not a 64-bit ELF object of this
 * machine, no dynamic section, truncated). */
int cpb_elf_needed_read(const char *path, cpb_elf_needed *out, char *err, size_t err_len);

#endif
