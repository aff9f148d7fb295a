/* elf_needed.c — DT_NEEDED and DT_RUNPATH of an ELF file (elf_needed.h).  The file is
 * mapped read-only (cuBLASLt is over 500 MB, of which only the headers and the dynamic
 * string table are touched) and every offset is bounds-checked. */
#include "elf_needed.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__)
#define CPB_ELF_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define CPB_ELF_MACHINE EM_AARCH64
#elif defined(__powerpc64__)
#define CPB_ELF_MACHINE EM_PPC64
#endif

/* file offset of virtual address `va` through the PT_LOAD segments; -1 if unmapped */
static int64_t va_to_off(const Elf64_Phdr *ph, int nph, uint64_t va)
{
    for (int i = 0; i < nph; i++)
        if (ph[i].p_type == PT_LOAD && va >= ph[i].p_vaddr && va < ph[i].p_vaddr + ph[i].p_filesz)
            return (int64_t)(ph[i].p_offset + (va - ph[i].p_vaddr));
    return -1;
}

static int parse(const unsigned char *m, size_t size, const char *path, cpb_elf_needed *out, char *err,
                 size_t err_len)
{
    if (size < sizeof(Elf64_Ehdr) || memcmp(m, ELFMAG, SELFMAG) != 0) {
        snprintf(err, err_len, "%s is not an ELF file", path);
        return -1;
    }
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)m;
    if (m[EI_CLASS] != ELFCLASS64) {
        snprintf(err, err_len, "%s is not a 64-bit ELF object", path);
        return -1;
    }
#ifdef CPB_ELF_MACHINE
    if (eh->e_machine != CPB_ELF_MACHINE) {
        snprintf(err, err_len, "%s is built for another processor (ELF machine %d)", path, (int)eh->e_machine);
        return -1;
    }
#endif
    if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > size ||
        (size - eh->e_phoff) / sizeof(Elf64_Phdr) < eh->e_phnum) {
        snprintf(err, err_len, "%s: truncated or malformed program headers", path);
        return -1;
    }
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(m + eh->e_phoff);
    const int nph = eh->e_phnum;
    const Elf64_Dyn *dyn = NULL;
    size_t ndyn = 0;
    for (int i = 0; i < nph; i++)
        if (ph[i].p_type == PT_DYNAMIC) {
            if (ph[i].p_offset > size || ph[i].p_filesz > size - ph[i].p_offset) {
                snprintf(err, err_len, "%s: truncated dynamic section", path);
                return -1;
            }
            dyn = (const Elf64_Dyn *)(m + ph[i].p_offset);
            ndyn = ph[i].p_filesz / sizeof(Elf64_Dyn);
        }
    if (!dyn) {
        snprintf(err, err_len, "%s has no dynamic section (not a shared object)", path);
        return -1;
    }
    uint64_t strtab_va = 0, strsz = 0;
    for (size_t i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
        if (dyn[i].d_tag == DT_STRTAB) strtab_va = dyn[i].d_un.d_ptr;
        if (dyn[i].d_tag == DT_STRSZ) strsz = dyn[i].d_un.d_val;
    }
    int64_t stroff = va_to_off(ph, nph, strtab_va);
    if (!strtab_va || stroff < 0 || (uint64_t)stroff > size || strsz > size - (uint64_t)stroff) {
        snprintf(err, err_len, "%s: dynamic string table missing or outside the file", path);
        return -1;
    }
    const char *str = (const char *)(m + stroff);
    uint64_t rpath = UINT64_MAX, runpath = UINT64_MAX;
    out->n = 0;
    out->runpath[0] = '\0';
    for (size_t i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
        uint64_t v = dyn[i].d_un.d_val;
        if (dyn[i].d_tag != DT_NEEDED && dyn[i].d_tag != DT_RUNPATH && dyn[i].d_tag != DT_RPATH) continue;
        if (v >= strsz || !memchr(str + v, '\0', strsz - v)) {
            snprintf(err, err_len, "%s: a dynamic entry points outside its string table", path);
            return -1;
        }
        if (dyn[i].d_tag == DT_RUNPATH) runpath = v;
        else if (dyn[i].d_tag == DT_RPATH) rpath = v;
        else if (out->n < CPB_ELF_MAX_NEEDED)
            snprintf(out->name[out->n++], sizeof out->name[0], "%s", str + v);
    }
    /* the dynamic linker ignores DT_RPATH when DT_RUNPATH is present */
    uint64_t rp = runpath != UINT64_MAX ? runpath : rpath;
    if (rp != UINT64_MAX) snprintf(out->runpath, sizeof out->runpath, "%s", str + rp);
    return 0;
}

int cpb_elf_needed_read(const char *path, cpb_elf_needed *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, err_len, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || sb.st_size <= 0) {
        snprintf(err, err_len, "%s is empty or unreadable", path);
        close(fd);
        return -1;
    }
    void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        snprintf(err, err_len, "cannot map %s: %s", path, strerror(errno));
        return -1;
    }
    int rc = parse(m, (size_t)sb.st_size, path, out, err, err_len);
    munmap(m, (size_t)sb.st_size);
    return rc;
}
