/* input_file.h — the one checked way cpbench looks at a file named on its command line,
 * whatever the option (--model-config, --calibration, --results, --cases, the file --out or
 * --dump would append to or replace), and the one strict parser of decimal numbers.
 *
 * Every file read goes through cpb_input_open (or cpb_input_read): anything but a regular
 * file (a FIFO, a device, a directory) is refused before a byte is read, so that no option
 * can block forever on a FIFO or read /dev/zero without end; a path that cannot name a file
 * at all (too long, a loop of symbolic links, a part that is not a directory, a dangling
 * symbolic link) is bad input.  Refusals are CPB_ERR_INVALID (exit 2) with a message naming
 * the option, the path and what to do; a file that exists but cannot be read for another
 * reason (an I/O error) is CPB_ERR_IO. */
#ifndef CPB_INPUT_FILE_H
#define CPB_INPUT_FILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What `path` names, checked without opening it.  `what` names it in messages ("--out",
 * "--model-config").  *exists: 1 for a regular file, 0 when there is nothing there.
 * for_output 1: nothing there is fine (the file will be created), unless the name is a
 * symbolic link whose target does not exist (writing through it would create a file
 * elsewhere, or fail after the work); for_output 0: nothing there is bad input.
 * CPB_OK, CPB_ERR_INVALID (bad input) or CPB_ERR_IO, with a message in err. */
int cpb_path_check(const char *path, const char *what, int for_output, int *exists, char *err, size_t len);

/* Open an input file for reading: cpb_path_check, then open without blocking (a FIFO whose
 * writer never comes would block a plain open) and check again on the open descriptor that
 * it is a regular file.  *fd is a blocking descriptor to close().  Codes as above. */
int cpb_input_open(const char *path, const char *what, int *fd, char *err, size_t len);

/* The whole of an input file, at most max bytes (larger: CPB_ERR_INVALID naming the size),
 * NUL-terminated in *buf (free() it), its length in *n.  Codes as above. */
int cpb_input_read(const char *path, const char *what, size_t max, char **buf, size_t *n, char *err, size_t len);

/* The one parser of decimal numbers: optional digits, an optional '.' and digits (at least
 * one digit in all), an optional exponent (e or E, an optional sign, digits); nothing
 * before or after.  No sign, no blank, no hex or hex-float ("0x10", "0x1p1"), no "inf" or
 * "nan".  0 with *out finite, or -1. */
int cpb_parse_decimal(const char *s, double *out);
/* A decimal integer: digits only (no sign, blank, 0x; "010" is ten), at most max.  0 or -1. */
int cpb_parse_decimal_u64(const char *s, uint64_t max, uint64_t *out);

#ifdef __cplusplus
}
#endif
#endif
