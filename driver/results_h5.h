/* results_h5.h — the results file: an HDF5 table `/runs`, one row per trial (the columns
 * of cpb_row, row.h).
 *
 * Rows are appended and flushed one at a time (H5Dset_extent + H5Dwrite + H5Fflush), so a
 * sweep killed mid-way leaves a valid file holding every finished row.  Serial HDF5, written
 * by rank 0 only, default (earliest) format bounds so that a file whose writer died reopens
 * without h5clear, fixed-length strings so that h5py reads it as a plain numpy record array.
 *
 * Each process that appends is a "session": a row of `/sessions` with its provenance
 * (command line, git commit, date, host, versions, GPU); every run row names its session.
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
 * converts by column name and works across versions).  Version 3: results/README.md. */
#define CPB_RESULTS_SCHEMA_VERSION 4

typedef struct cpb_results cpb_results; /* an open results file */

/* Open `path` for appending, creating it when absent.  An existing file must be a cpbench
 * results file of this schema version; anything else (not HDF5, no schema attribute, another
 * version, a /runs of another layout) is refused with CPB_ERR_IO and a message, and left
 * untouched (it is validated read-only before it is opened for writing).  Records `prov` as
 * a new row of /sessions.  Call on rank 0 only. */
int cpb_results_open(const char *path, const cpb_provenance *prov, cpb_results **out,
                     char *err, size_t err_len);
/* Append one row (its `session` is set to this file's session) and flush it to disk. */
int cpb_results_append(cpb_results *f, cpb_row *row, char *err, size_t err_len);
int64_t cpb_results_rows(const cpb_results *f); /* rows in /runs, earlier sessions included */
void cpb_results_close(cpb_results *f);

/* Open (or create) `path`, append `row` as one new session whose provenance is argv,
 * backend be and the row's gpu and world size, and close: what `cpbench run --out FILE`
 * does.  Rank 0 only. */
int cpb_results_write_row(const char *path, int argc, char **argv, const cpb_backend *be, cpb_row *row,
                          char *err, size_t err_len);

/* Read every row of /runs (malloc'd array in *rows, free() it).  Checks the schema name;
 * converts by column name, so files of other versions read too (missing columns zero). */
int cpb_results_read(const char *path, cpb_row **rows, int64_t *n, char *err, size_t err_len);

/* Column names in table order, NULL-terminated (for docs and tests). */
const char *const *cpb_results_column_names(void);

#ifdef __cplusplus
}
#endif
#endif
