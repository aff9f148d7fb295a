/* main.c — cpbench: dispatch to the subcommands of commands.def.
 * A subcommand gets argv[0] = its name and its options after it; it returns the exit code
 * (0 ok, 1 failed check, 2 bad arguments or refused shape). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

#define X(name) int cpb_cmd_##name(int argc, char **argv);
#include "commands.def"
#undef X

typedef struct command {
    const char *name; /* as typed: underscores of the X() name become dashes */
    int (*fn)(int, char **);
} command;

static const command commands[] = {
#define X(name) {#name, cpb_cmd_##name},
#include "commands.def"
#undef X
};
#define NCOMMANDS ((int)(sizeof commands / sizeof commands[0]))

/* one-line summaries of the commands this build may have (others print without one) */
static const char *summary(const char *name)
{
    static const char *const known[][2] = {
        {"list", "methods, model presets and backends compiled in"},
        {"verify", "run methods on seeded inputs and compare with the fp64 reference (mpirun -np C)"},
        {"run", "one trial: peak memory and time (cpu/cuda under mpirun, or --backend sim)"},
        {"sweep", "lengths until the first OOM, bisected; rows appended to --out"},
        {"selftest", "quick checks of the backend and its kernels"},
        {"bench_kernels", "kernel micro-benchmarks"},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(known[i][0], name) == 0) return known[i][1];
    return "";
}

/* Under an MPI launcher, MPI is initialized here, once, with MPI_THREAD_MULTIPLE: the cuda
 * backend's stream threads call MPI too (its NCCL stand-in).  Commands that find MPI
 * initialized leave it to main. */
static int under_mpi_launcher(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK") || getenv("PMI_SIZE");
}

static int run_command(int (*fn)(int, char **), int argc, char **argv)
{
    int provided = 0, mine = 0, inited = 0;
    MPI_Initialized(&inited);
    if (!inited && under_mpi_launcher()) {
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
            fprintf(stderr, "cpbench: MPI_Init_thread failed\n");
            return 1;
        }
        mine = 1;
    }
    int rc = fn(argc, argv);
    int fin = 0;
    MPI_Finalized(&fin);
    if (mine && !fin) MPI_Finalize();
    return rc;
}

static void cli_name(const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s", name);
    for (char *c = out; *c; c++)
        if (*c == '_') *c = '-';
}

static void usage(FILE *f)
{
    fprintf(f, "cpbench — memory-efficient context-parallel attention benchmark\n\n"
               "Usage: cpbench COMMAND [options]      (mpirun -np C cpbench ... on cpu/cuda)\n\n"
               "Commands:\n");
    for (int i = 0; i < NCOMMANDS; i++) {
        char n[32];
        cli_name(commands[i].name, n, sizeof n);
        fprintf(f, "  %-16s %s\n", n, summary(commands[i].name));
    }
    fprintf(f, "\n");
    cpb_args_usage(f);
    fprintf(f, "\nExamples:\n"
               "  cpbench list\n"
               "  mpirun -np 4 cpbench verify --method all --model tiny --seq 256 --dtype fp32\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return argc < 2 ? 2 : 0;
    }
    for (int i = 0; i < NCOMMANDS; i++) {
        char n[32];
        cli_name(commands[i].name, n, sizeof n);
        if (strcmp(n, argv[1]) == 0 || strcmp(commands[i].name, argv[1]) == 0) {
            /* `cpbench CMD --help`: the same help for every command */
            for (int a = 2; a < argc; a++)
                if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
                    usage(stdout);
                    return 0;
                }
            return run_command(commands[i].fn, argc - 1, argv + 1);
        }
    }
    fprintf(stderr, "cpbench: unknown command '%s'; commands:", argv[1]);
    for (int i = 0; i < NCOMMANDS; i++) {
        char n[32];
        cli_name(commands[i].name, n, sizeof n);
        fprintf(stderr, " %s", n);
    }
    fprintf(stderr, " (cpbench --help)\n");
    return 2;
}
