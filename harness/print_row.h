/* print_row.h — human-readable report of one trial's row (`cpbench run`). */
#ifndef CPB_PRINT_ROW_H
#define CPB_PRINT_ROW_H

#include <stdio.h>

#include "row.h"

/* predicted: the row comes from a timing model (the backend models time), not a clock */
void cpb_print_row(FILE *f, const cpb_row *row, int predicted);

#endif
