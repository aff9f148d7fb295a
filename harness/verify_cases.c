/* verify_cases.c — `verify --cases FILE...`: one MPI job runs many cases.  Each
 * non-comment line of a file is `np=N <verify options>`; the lines whose N equals the
 * world size run, on top of the command line's other options (so `--backend cuda` or
 * `--dtype` given once apply to every line that does not set them).  Format:
 * tests/mpi/cases/README. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "cli.h"
#include "input_file.h"
#include "ranks.h"

#define MAX_TOKENS 128

/* split a line in place on whitespace; returns the token count or -1 if too many */
static int tokenize(char *line, char **tok)
{
    int n = 0;
    for (char *c = line; *c;) {
        while (*c && isspace((unsigned char)*c)) c++;
        if (!*c) break;
        if (n >= MAX_TOKENS) return -1;
        tok[n++] = c;
        while (*c && !isspace((unsigned char)*c)) c++;
        if (*c) *c++ = 0;
    }
    return n;
}

typedef struct tally {
    int run, failed;
} tally;

/* one line: skipped unless its np is the world size; counts runs and failures */
static void run_line(const cpb_args *base, const char *file, int lineno, char *line, int world, tally *t)
{
    const int rank = cpb_ranks_rank();
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    char *tok[MAX_TOKENS];
    int n = tokenize(line, tok);
    if (n == 0) return;
    char label[256];
    const char *slash = strrchr(file, '/');
    snprintf(label, sizeof label, "%s:%d", slash ? slash + 1 : file, lineno);
    int np = 0;
    char *end = NULL;
    if (n > 0 && strncmp(tok[0], "np=", 3) == 0) np = (int)strtol(tok[0] + 3, &end, 10);
    if (n < 0 || np <= 0 || !end || *end) {
        if (rank == 0)
            printf("%-28s ERROR: a case line is `np=N <verify options>` with N a positive integer "
                   "(and at most %d words)\n", label, MAX_TOKENS);
        t->failed++;
        return;
    }
    if (np != world) return;
    cpb_args a = *base;
    a.n_cases = 0;
    char err[1024];
    t->run++;
    if (cpb_args_parse(n - 1, tok + 1, &a, err, sizeof err) != CPB_OK) {
        if (rank == 0) printf("%-28s ERROR: %s\n", label, err);
        t->failed++;
        return;
    }
    if (a.n_cases) {
        if (rank == 0) printf("%-28s ERROR: --cases inside a case file\n", label);
        t->failed++;
        return;
    }
    if (cpb_cli_verify(&a, label) != 0) t->failed++;
}

int cpb_cli_verify_cases(const cpb_args *base)
{
    const int rank = cpb_ranks_rank(), world = cpb_ranks_size();
    tally t = {0, 0};
    for (int f = 0; f < base->n_cases; f++) {
        const char *path = base->cases[f];
        /* every rank reads the file (all see the same shared file system), through the
         * checked opener: a FIFO or a device is refused before any read */
        char why[1024] = "";
        int fd = -1, orc = cpb_input_open(path, "--cases", &fd, why, sizeof why);
        FILE *fp = orc == CPB_OK ? fdopen(fd, "r") : NULL;
        if (orc == CPB_OK && !fp) {
            close(fd);
            snprintf(why, sizeof why, "--cases %s: cannot read it", path);
            orc = CPB_ERR_IO;
        }
        orc = cpb_agree_status(orc, why, sizeof why);
        if (orc != CPB_OK) {
            if (rank == 0) fprintf(stderr, "cpbench verify: %s\n", why);
            if (fp) fclose(fp);
            /* a file that is not one is bad input: exit 2 (the caller's), nothing run */
            if (orc == CPB_ERR_INVALID) return 2;
            t.failed++;
            continue;
        }
        char line[4096];
        int lineno = 0;
        while (fgets(line, sizeof line, fp)) {
            lineno++;
            run_line(base, path, lineno, line, world, &t);
        }
        fclose(fp);
    }
    if (rank == 0) {
        printf("verify --cases: %d case%s for np=%d, %d failed\n", t.run, t.run == 1 ? "" : "s", world, t.failed);
        fflush(stdout);
    }
    return t.failed ? 1 : 0;
}
