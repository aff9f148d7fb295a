/* cmd_fingerprints.c — `cpbench fingerprints --results FILE...`: compare the numeric
 * fingerprints (y_norm, dx_norm, dw_norm) of the methods at every point of results files
 * (driver/fingerprint.h), e.g. the GPU runs of `make reproduce`, which run one method per
 * sweep.  Exit 0 when every method agrees, 1 when one disagrees, 2 for a bad file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fingerprint.h"
#include "results_h5.h"

int cpb_cmd_fingerprints(const cpb_cli *c)
{
    const cpb_args *a = &c->a;
    if (a->n_results == 0) {
        fprintf(stderr, "cpbench fingerprints: give --results FILE.h5 [FILE.h5 ...]\n");
        return 2;
    }
    cpb_row *all = NULL;
    int64_t n = 0;
    for (int f = 0; f < a->n_results; f++) {
        cpb_row *rows = NULL;
        int64_t k = 0;
        char err[1024];
        if (cpb_results_read(a->results[f], &rows, &k, err, sizeof err) != CPB_OK) {
            fprintf(stderr, "cpbench fingerprints: %s\n", err);
            free(all);
            return 2;
        }
        cpb_row *grown = realloc(all, sizeof *all * (size_t)(n + k > 0 ? n + k : 1));
        if (!grown) {
            fprintf(stderr, "cpbench fingerprints: out of host memory for %lld rows\n", (long long)(n + k));
            free(rows);
            free(all);
            return 1;
        }
        all = grown;
        if (k) memcpy(all + n, rows, sizeof *rows * (size_t)k);
        n += k;
        free(rows);
    }
    int compared = 0, bad = cpb_fingerprint_compare(all, n, stdout, &compared);
    printf("fingerprints: %lld rows, %d point%s with several methods, %d where a method disagrees\n", (long long)n,
           compared, compared == 1 ? "" : "s", bad);
    free(all);
    return bad ? 1 : 0;
}
