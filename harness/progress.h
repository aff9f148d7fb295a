/* progress.h — terminal output of runs and sweeps, in the style of nccl-tests: a header,
 * one aligned line per trial, comment lines (starting with '#') for everything else, and a
 * progress line with the trials done and an estimate of the time left.  Lines are formatted
 * into buffers (testable) and printed by the caller. */
#ifndef CPB_PROGRESS_H
#define CPB_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

#include "row.h"

#ifdef __cplusplus
extern "C" {
#endif

/* the two header lines (column names, units) */
void cpb_progress_header(FILE *f);
/* one trial's aligned line; `note` ("" or e.g. "cached") goes in the last column */
void cpb_progress_format_row(char *buf, size_t len, const cpb_row *r, const char *note);
/* seconds as a plain number with four significant digits and no exponent down to 0.1 ms
 * ("4109", "68.48", "0.1234", "0.0001235"): the one way cpbench prints a time */
void cpb_format_seconds(char *buf, size_t len, double seconds);
/* "1h02m", "3m05s", "12.3s" */
void cpb_progress_format_duration(char *buf, size_t len, double seconds);

typedef struct cpb_progress {
    int done;              /* trials finished (cached ones included) */
    int run;               /* trials actually run (they carry the time estimate) */
    double run_seconds;    /* wall seconds spent in trials that ran */
} cpb_progress;

/* Count a finished trial that took `seconds` (cached = taken from the results file). */
void cpb_progress_add(cpb_progress *p, double seconds, int cached);
/* "# [12 done, ~9 to go] ~1m30s left (7.5 s/trial), ring next" style line; `left` is the
 * estimated number of trials still to run; `what` says what comes next (may be ""). */
void cpb_progress_format_line(char *buf, size_t len, const cpb_progress *p, int left,
                              const char *what);

#ifdef __cplusplus
}
#endif
#endif
