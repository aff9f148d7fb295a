/* print_row.h — human-readable report of one trial's row (`cpbench run`). */
#ifndef CPB_PRINT_ROW_H
#define CPB_PRINT_ROW_H

#include <stdio.h>

#include "cpb_backend.h"
#include "row.h"

/* the row of a trial on backend be: its times are predicted when be models time, and its
 * driver-level device memory is shown when be reports one (mem_highwater) */
void cpb_print_row(FILE *f, const cpb_row *row, const cpb_backend *be);

#endif
