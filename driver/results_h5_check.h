/* results_h5_check.h — cpbench's own validation of a results file that HDF5 has opened:
 * the schema name and version, the at_peak_tags attribute, the layout of the tables, and
 * the conversion of /runs into rows.  results_h5.c uses these on files it opens by name;
 * the fuzz target tests/fuzz/fuzz_results.c drives them with files it builds in memory
 * (valid HDF5 with arbitrary attributes, tables and rows: it tests cpbench's checks, not
 * libhdf5's parsing of corrupt bytes). */
#ifndef CPB_RESULTS_H5_CHECK_H
#define CPB_RESULTS_H5_CHECK_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "row.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CPB_OK when f (named `name` in messages) is a cpbench results file: a schema attribute,
 * a /runs table; with for_append, also this schema version, /runs, /sessions and /models of
 * exactly this layout and this build's at_peak_tags.  CPB_ERR_INVALID with a message
 * otherwise. */
int cpb_results_check_hid(hid_t f, const char *name, int for_append, char *err, size_t err_len);

/* a new copy of the stored type of /runs (runs 1), /sessions (runs 0) or /models (runs 2)
 * as this build writes it; H5Tclose it */
hid_t cpb_results_file_type(int runs);

/* The rows of f's /runs, converted by column name (cpb_results_read's rules). */
int cpb_results_read_hid(hid_t f, const char *name, cpb_row **rows, int64_t *n, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif
#endif
