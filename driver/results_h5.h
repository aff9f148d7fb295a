/* results_h5.h — the results file: an HDF5 table `/runs`, one row per trial (the columns
 * of cpb_row, row.h).
 *
 * A row reaches /runs whole or not at all.  HDF5 has no atomic append, so an append (1)
 * checks the free space of the file system first (statvfs: room for a new chunk of rows and
 * the metadata), (2) grows the extent, writes the row and flushes the file, and (3) when the
 * write or the flush fails, shrinks the extent back and flushes again, so that the table is
 * as it was; the caller stops (a sweep exits 1 with the reason).  A row whose status is empty
 * is the trace of an append that could not be undone (the disk refused even that): readers
 * skip it.  A sweep killed between rows leaves a valid file holding every finished row.
 * Serial HDF5, written by rank 0 only, default (earliest) format bounds so that a file whose
 * writer died reopens without h5clear, fixed-length strings so that h5py reads it as a plain
 * numpy record array.
 *
 * A new file is built under a temporary name beside it and linked into place complete, so a
 * second writer racing to create the same file finds either nothing or a whole results file.
 * An existing file is appended to only when it is a cpbench results file of this schema
 * version with the same table layout and at_peak_tags; anything else is left untouched and
 * refused (CPB_ERR_INVALID: exit 2), unless `force`, which replaces it.  A path that is not a
 * regular file (a FIFO, a directory, a device) is always refused: it is never opened.
 *
 * Each process that appends is a "session": a row of `/sessions` with its provenance
 * (command line, git commit, date, host, versions, GPU); every run row names its session.
 * Each model a run row names (its model column) has a row of `/models`, written before the
 * first run row that names it: the preset's source or the config.json's path and whole
 * text, and the numbers derived from it (layers, MLP size, vocabulary, parameter count). 
 * The file's own attributes are the schema name and version plus the provenance of the
 * session that created it.  results/README.md documents every column.
 */
#ifndef CPB_RESULTS_H5_H
#define CPB_RESULTS_H5_H

#include <stdint.h>
#include <stddef.h>

#include "cpb.h"
#include "provenance.h"
#include "row.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CPB_RESULTS_SCHEMA "cpbench-results"
/* Bump when a column changes; files of another version are refused for appending (reading
 * converts by column name and works across versions).  Version 7: results/README.md. */
#define CPB_RESULTS_SCHEMA_VERSION 12
/* Each schema version's layout fingerprint (cpb_results_layout), oldest first; the last
 * line is this build's and must name CPB_RESULTS_SCHEMA_VERSION.  The unit test
 * results_layout recomputes the fingerprint from the stored types and fails when the layout
 * changed and this list did not: then bump the version and append the line the test prints
 * (never edit an earlier line: it records what that version's files hold).  Branches that
 * each add a column each append a line; merged, keep one line for the new version, with the
 * fingerprint the test prints for the merged tree. */
#define CPB_RESULTS_LAYOUTS(X)                                                                     \
    X(9, 0xb7905e86ae057264ull)                                                                    \
    X(10, 0xff8525ca3c3095bcull)                                                                   \
    X(11, 0x8e187e48ddb2f7edull)                                                                   \
    X(12, 0xd7d9818ad8124804ull)

typedef struct cpb_results cpb_results; /* an open results file */

/* What `path` is as a place to write results, checked read-only before any trial runs:
 * CPB_OK when it does not exist (and its directory does), or it is a results file rows can
 * be appended to, or (force) a regular file that is not one, to be replaced.
 * CPB_ERR_INVALID (bad input, exit 2) when it is refused: not a regular file, a missing or
 * unwritable directory, or a file that is not its own (not HDF5, not cpbench's, another
 * schema version, another layout or at_peak_tags) without force.  CPB_ERR_IO when it cannot
 * be checked (unreadable, locked by another writer).  Message in err. */
int cpb_results_check_target(const char *path, int force, char *err, size_t err_len);

/* Open `path` for appending (cpb_results_check_target's rules; creating it complete when it
 * is absent, replacing it when force says so), then record `prov` as a new row of /sessions.
 * A file held by another writer is waited for a few seconds.  Call on rank 0 only.
 * CPB_ERR_INVALID when refused, CPB_ERR_IO when it cannot be written. */
int cpb_results_open(const char *path, const cpb_provenance *prov, int force, cpb_results **out,
                     char *err, size_t err_len);
/* Append one row (its `session` is set to this file's session) and flush it to disk.  On
 * failure (CPB_ERR_IO) the table is as it was before the call; the message says why and
 * whether the table could be restored. */
int cpb_results_append(cpb_results *f, cpb_row *row, char *err, size_t err_len);
int64_t cpb_results_rows(const cpb_results *f); /* rows in /runs, earlier sessions included */
/* Every row of /runs of the open file f (cpb_results_read's rules), read under the lock f
 * holds: what a sweep reads to know which points are done, with no writer between its
 * reading and its appending. */
int cpb_results_read_open(cpb_results *f, cpb_row **rows, int64_t *n, char *err, size_t err_len);
void cpb_results_close(cpb_results *f);

/* Open (or create) `path`, append `row` as one new session whose provenance is argv,
 * backend be and the row's gpu and world size, and close: what `cpbench run --out FILE`
 * does.  Rank 0 only. */
int cpb_results_write_row(const char *path, int force, int argc, char **argv, const cpb_backend *be, cpb_row *row,
                          char *err, size_t err_len);

/* Read every row of /runs (malloc'd array in *rows, free() it).  Checks the schema name and
 * the file's attributes; converts by column name, so files of other versions read too
 * (missing columns zero, "skipped" becomes "refused"); rows with an empty status (an append
 * that failed part-way) are left out. */
int cpb_results_read(const char *path, cpb_row **rows, int64_t *n, char *err, size_t err_len);

/* The layout this build writes (the stored types of /runs, /sessions and /models, member by
 * member, and the at_peak_tags), as text into `text` (NULL, or truncated to len) and its
 * fingerprint (FNV-1a 64 of the whole text), the value CPB_RESULTS_LAYOUTS records. */
uint64_t cpb_results_layout(char *text, size_t len);

/* Column names in table order, NULL-terminated (for docs and tests). */
const char *const *cpb_results_column_names(void);

#ifdef __cplusplus
}
#endif
#endif
