/* args_agree.c — the rank-agreement hash of every option of the table (issue 26 §1), under
 * mpirun.  For each option of harness/args.c's table, with its example value (a file made
 * here for a file option, nothing for a flag), every rank parses the same arguments and
 * computes cpb_args_agreement_hash, the hash cpbench's ranks compare at start-up: all ranks
 * must get the same hash.  Within each rank the same option parsed from two copies of the
 * arguments at other addresses must give the same canonical text (a value hashed by its
 * address, as --model-config once was, differs here even without a second rank), and an
 * input file with other contents at the same path must give another hash (ranks that read
 * different files disagree loudly).  Exit 0 when all hold; else 1 with a line per failure.
 * Usage: mpirun -np 2 args_agree WORKDIR DATADIR */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "ranks.h"

static char work[1024], data[1024];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "args_agree: cannot write %s\n", path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    static char buf[65536];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    return buf;
}

/* the value option i is tried with: its example, or a file of the right kind, or NULL for
 * a flag (*flag 1) */
static const char *value_of(int i, int *flag)
{
    static char path[1200];
    const char *name = cpb_args_option_name(i), *arg = cpb_args_option_arg(i), *ex = cpb_args_option_example(i);
    *flag = arg == NULL;
    if (*flag) return NULL;
    if (ex) return ex;
    if (strcmp(name, "--model-config") == 0) snprintf(path, sizeof path, "%s/config.json", work);
    else if (strcmp(name, "--calibration") == 0) snprintf(path, sizeof path, "%s/calibration.txt", work);
    else if (strcmp(name, "--cases") == 0) snprintf(path, sizeof path, "%s/cases.txt", work);
    else if (strcmp(name, "--results") == 0) snprintf(path, sizeof path, "%s/results.h5", work);
    else snprintf(path, sizeof path, "%s/out%s.h5", work, name); /* a file written: --out, --dump */
    return path;
}

/* the copies of the arguments parsed last (string options point into them): freed by the
 * next parse_one or at the end */
static char *copies[4];
static int ncopies;

static void free_copies(void)
{
    while (ncopies > 0) free(copies[--ncopies]);
}

/* parse {name, value} from fresh copies at new addresses; CPB_OK or the parser's code (err
 * says).  keep: leave the previous parse's copies allocated (two parses compared) */
static int parse_one(const char *name, const char *value, cpb_args *a, int keep, char *err, size_t len)
{
    if (!keep) free_copies();
    char *n = strdup(name), *v = value ? strdup(value) : NULL;
    copies[ncopies++] = n;
    if (v) copies[ncopies++] = v;
    char *argv[2] = {n, v};
    cpb_args_defaults(a);
    return cpb_args_parse(v ? 2 : 1, argv, a, err, len);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: mpirun -np 2 args_agree WORKDIR DATADIR\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    cpb_ranks_begin(1);
    const int rank = cpb_ranks_rank(), world = cpb_ranks_size();
    snprintf(work, sizeof work, "%s", argv[1]);
    snprintf(data, sizeof data, "%s", argv[2]);
    char cfg[1200], cfg_text[65536];
    snprintf(cfg, sizeof cfg, "%s/hf/tiny-test.json", data);
    snprintf(cfg_text, sizeof cfg_text, "%s", slurp(cfg));
    if (rank == 0) { /* the input files every rank reads, at one path */
        mkdir(work, 0777);
        char p[1200];
        snprintf(p, sizeof p, "%s/config.json", work);
        write_file(p, cfg_text);
        snprintf(p, sizeof p, "%s/calibration.txt", work);
        write_file(p, "attn_fwd_tflops = 300\n");
        snprintf(p, sizeof p, "%s/cases.txt", work);
        write_file(p, "np=2 --method ring --model tiny --seq 64\n");
        snprintf(p, sizeof p, "%s/results.h5", work);
        write_file(p, "not read here: only its path and bytes are hashed\n");
    }
    MPI_Barrier(MPI_COMM_WORLD);

    int failed = 0, tried = 0;
    static char t1[CPB_ARGS_CANONICAL_MAX], t2[CPB_ARGS_CANONICAL_MAX];
    for (int i = 0; i < cpb_args_option_count(); i++) {
        const char *name = cpb_args_option_name(i);
        int flag;
        const char *value = value_of(i, &flag);
        cpb_args a1, a2;
        char err[1024];
        int rc = parse_one(name, value, &a1, 0, err, sizeof err);
        if (rc == CPB_OK) rc = parse_one(name, value, &a2, 1, err, sizeof err);
        if (rc != CPB_OK) {
            if (rank == 0) printf("FAIL %s %s: the example does not parse: %s\n", name, value ? value : "", err);
            failed++;
            continue;
        }
        tried++;
        cpb_args_canonical(&a1, t1, sizeof t1);
        cpb_args_canonical(&a2, t2, sizeof t2);
        int mine = strcmp(t1, t2) != 0 || !strstr(t1, name);
        uint64_t h = cpb_args_agreement_hash(&a1, "verify");
        uint64_t *all = calloc((size_t)world, sizeof *all);
        MPI_Allgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
        int ranks_differ = 0;
        for (int r = 1; r < world; r++) ranks_differ |= all[r] != all[0];
        free(all);
        int any_mine = 0;
        MPI_Allreduce(&mine, &any_mine, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (rank == 0 && (ranks_differ || any_mine)) {
            printf("FAIL %s %s: %s (canonical text '%.*s' vs '%.*s')\n", name, value ? value : "",
                   ranks_differ ? "the ranks' hashes differ" : "two parses of the same arguments differ",
                   (int)strcspn(t1, "\n"), t1, (int)strcspn(t2, "\n"), t2);
        }
        failed += ranks_differ || any_mine;
    }

    /* an input file's contents are in its text: the same path with other contents differs */
    if (rank == 0) {
        char p[1200], other[1200], err[1024];
        snprintf(p, sizeof p, "%s/config-contents.json", work);
        snprintf(other, sizeof other, "%s", cfg_text);
        char *ffn = strstr(other, "\"intermediate_size\": 128");
        write_file(p, cfg_text);
        cpb_args a;
        uint64_t h1 = parse_one("--model-config", p, &a, 0, err, sizeof err) == CPB_OK ? cpb_args_agreement_hash(&a, "run") : 0;
        if (ffn) memcpy(ffn, "\"intermediate_size\": 256", 24);
        write_file(p, other);
        uint64_t h2 = parse_one("--model-config", p, &a, 0, err, sizeof err) == CPB_OK ? cpb_args_agreement_hash(&a, "run") : 0;
        snprintf(p, sizeof p, "%s/calibration.txt", work);
        uint64_t c1 = parse_one("--calibration", p, &a, 0, err, sizeof err) == CPB_OK ? cpb_args_agreement_hash(&a, "run") : 0;
        write_file(p, "attn_fwd_tflops = 301\n");
        uint64_t c2 = parse_one("--calibration", p, &a, 0, err, sizeof err) == CPB_OK ? cpb_args_agreement_hash(&a, "run") : 0;
        if (!ffn || !h1 || !h2 || h1 == h2) {
            printf("FAIL --model-config: a file with other contents at the same path gives the same hash\n");
            failed++;
        }
        if (!c1 || !c2 || c1 == c2) {
            printf("FAIL --calibration: a file with other contents at the same path gives the same hash\n");
            failed++;
        }
    }
    free_copies();
    int total = 0;
    MPI_Allreduce(&failed, &total, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("args_agree: %d options of %d tried on %d ranks, %d failed\n", tried, cpb_args_option_count(), world,
               total);
    MPI_Finalize();
    return total || tried < 1 ? 1 : 0;
}
