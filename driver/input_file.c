/* input_file.c — the checked opener of input files and the strict decimal parser
 * (input_file.h). */
#include "input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpb.h"

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : "a device";
}

/* the message and code for a path the system cannot look up (errno e) */
static int lookup_error(int e, const char *path, const char *what, char *err, size_t len)
{
    switch (e) {
    case ENAMETOOLONG:
        snprintf(err, len, "%s: the file name (%zu characters) is longer than the system takes (a name of at most "
                 "%d, a path of at most %d): give a shorter one", what, strlen(path), NAME_MAX, PATH_MAX - 1);
        return CPB_ERR_INVALID;
    case ELOOP:
        snprintf(err, len, "%s '%.200s': a loop of symbolic links; give the path of a file", what, path);
        return CPB_ERR_INVALID;
    case ENOTDIR:
        snprintf(err, len, "%s '%.200s': a part of the path before the file name is not a directory; give the path "
                 "of a file in a directory", what, path);
        return CPB_ERR_INVALID;
    case EACCES:
        snprintf(err, len, "%s '%.200s': permission denied (a directory of the path cannot be searched, or the file "
                 "cannot be read)", what, path);
        return CPB_ERR_INVALID;
    case ENOENT:
        snprintf(err, len, "%s '%.200s' does not exist: give the path of an existing file", what, path);
        return CPB_ERR_INVALID;
    default:
        snprintf(err, len, "%s '%.200s': cannot look at it (%s)", what, path, strerror(e));
        return CPB_ERR_IO;
    }
}

int cpb_path_check(const char *path, const char *what, int for_output, int *exists, char *err, size_t len)
{
    struct stat st;
    *exists = 0;
    if (!path || !*path) {
        snprintf(err, len, "%s: the file name is empty: give a file name", what);
        return CPB_ERR_INVALID;
    }
    if (stat(path, &st) != 0) {
        const int e = errno;
        if (e == ENOENT && for_output) {
            /* nothing there; but a dangling symbolic link would be written through */
            struct stat ls;
            if (lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode)) {
                char target[512] = "";
                ssize_t n = readlink(path, target, sizeof target - 1);
                if (n > 0) target[n] = 0;
                snprintf(err, len, "%s '%.200s' is a symbolic link to '%.200s', which does not exist (or whose "
                         "directory does not): give the path of the file itself, or create it first", what, path,
                         target);
                return CPB_ERR_INVALID;
            }
            return CPB_OK;
        }
        return lookup_error(e, path, what, err, len);
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, len, "%s %.200s is not a regular file (%s): give the path of a file; it was left untouched",
                 what, path, kind_of(st.st_mode));
        return CPB_ERR_INVALID;
    }
    *exists = 1;
    return CPB_OK;
}

int cpb_input_open(const char *path, const char *what, int *fd, char *err, size_t len)
{
    int exists;
    *fd = -1;
    int rc = cpb_path_check(path, what, 0, &exists, err, len);
    if (rc != CPB_OK) return rc;
    /* O_NONBLOCK: should the path have become a FIFO since the check, the open returns at
     * once instead of waiting for a writer; the fstat below refuses it */
    int f = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (f < 0) return lookup_error(errno, path, what, err, len);
    struct stat st;
    if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, len, "%s '%.200s' is not a regular file (%s): give the path of a file", what, path,
                 fstat(f, &st) == 0 ? kind_of(st.st_mode) : "it cannot be examined");
        close(f);
        return CPB_ERR_INVALID;
    }
    int fl = fcntl(f, F_GETFL);
    if (fl >= 0) (void)fcntl(f, F_SETFL, fl & ~O_NONBLOCK);
    *fd = f;
    return CPB_OK;
}

int cpb_input_read(const char *path, const char *what, size_t max, char **buf, size_t *n, char *err, size_t len)
{
    int fd;
    *buf = NULL;
    *n = 0;
    int rc = cpb_input_open(path, what, &fd, err, len);
    if (rc != CPB_OK) return rc;
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size > (uint64_t)max) {
        snprintf(err, len, "%s '%.200s': %lld bytes, more than the %zu such a file may have: is it the right file?",
                 what, path, (long long)st.st_size, max);
        close(fd);
        return CPB_ERR_INVALID;
    }
    char *b = malloc(max + 1);
    if (!b) {
        close(fd);
        snprintf(err, len, "%s '%.200s': out of host memory reading it", what, path);
        return CPB_ERR_NOMEM_HOST;
    }
    size_t got = 0;
    for (;;) { /* up to max + 1 bytes: a file grown since the fstat is still caught */
        ssize_t k = read(fd, b + got, max + 1 - got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            snprintf(err, len, "%s '%.200s': cannot read it (%s)", what, path, strerror(errno));
            close(fd);
            free(b);
            return errno == EISDIR ? CPB_ERR_INVALID : CPB_ERR_IO;
        }
        if (k == 0) break;
        got += (size_t)k;
        if (got > max) {
            snprintf(err, len, "%s '%.200s': more than the %zu bytes such a file may have: is it the right file?", what,
                     path, max);
            close(fd);
            free(b);
            return CPB_ERR_INVALID;
        }
    }
    close(fd);
    b[got] = 0;
    *buf = b;
    *n = got;
    return CPB_OK;
}

/* ---------------------------------------------------------------- numbers */

int cpb_parse_decimal(const char *s, double *out)
{
    if (!s) return -1;
    const char *p = s;
    size_t int_digits = strspn(p, "0123456789");
    p += int_digits;
    size_t frac_digits = 0;
    if (*p == '.') {
        p++;
        frac_digits = strspn(p, "0123456789");
        p += frac_digits;
    }
    if (int_digits + frac_digits == 0) return -1;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        size_t exp_digits = strspn(p, "0123456789");
        if (!exp_digits) return -1;
        p += exp_digits;
    }
    if (*p) return -1; /* anything else: a suffix, a blank, hex's 'x' or 'p' */
    /* only what strtod reads as decimal is left: it takes the whole string */
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (*end || errno == ERANGE || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

int cpb_parse_decimal_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (!s || !*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 20) return -1;
    errno = 0;
    char *end;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end || x > max) return -1;
    *out = x;
    return 0;
}
