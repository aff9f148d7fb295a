/* main.c — cpbench: parse the options, start MPI when the command needs it (commands.def),
 * dispatch to the subcommand, finalise MPI.  This is the only place that initialises or
 * finalises MPI.  A subcommand returns the exit code (0 ok, 1 failed check, 2 bad
 * arguments or refused shape). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ranks.h"
#include "registry.h"

typedef struct command {
    const char *name; /* as typed: underscores of the X() name become dashes */
    int (*fn)(const cpb_cli *);
    cpb_mpi_rule mpi;
} command;

static const command commands[] = {
#define X(name, mpi) {#name, cpb_cmd_##name, mpi},
#include "commands.def"
#undef X
};
#define NCOMMANDS ((int)(sizeof commands / sizeof commands[0]))

/* one-line summaries of the commands */
static const char *summary(const char *name)
{
    static const char *const known[][2] = {
        {"list", "methods, model presets and backends compiled in"},
        {"verify", "run methods on seeded inputs and compare with the fp64 reference (mpirun -np C)"},
        {"run", "one trial: peak memory and time (cpu/cuda under mpirun, or --backend sim)"},
        {"sweep", "lengths until the first OOM, bisected; rows appended to --out"},
        {"plan", "the fastest method and knobs that fit a model on C GPUs (simulator search)"},
        {"selftest", "every op of a backend against the cpu backend (--backend cuda)"},
        {"bench_kernels", "kernel and link micro-benchmarks -> a calibration file for the simulator"},
        {"fingerprints", "do the methods' numeric fingerprints agree at every point of results files?"},
        {"device_props", "every property of each CUDA device (cudaDeviceProp), as key = value lines"},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(known[i][0], name) == 0) return known[i][1];
    return "";
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

/* before MPI starts: the rank the launcher gave this process, so a message about the
 * command line is printed once */
static int launcher_rank(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v) return atoi(v);
    }
    return 0;
}

static int needs_mpi(const command *cmd, const cpb_cli *c)
{
    switch (cmd->mpi) {
    case CPB_MPI_ALWAYS: return 1;
    case CPB_MPI_BACKEND: return c->be && c->be->mpi_world && !c->a.isolate;
    default: return 0;
    }
}

static int run_command(const command *cmd, int argc, char **argv)
{
    char n[32];
    cli_name(cmd->name, n, sizeof n);
    cpb_cli *c = calloc(1, sizeof *c);
    if (!c) {
        fprintf(stderr, "cpbench %s: out of host memory\n", n);
        return 1;
    }
    c->argc = argc;
    c->argv = argv;
    /* `cpbench CMD --help`: the same help for every command, whatever else is given */
    for (int a = 1; a < argc; a++)
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            usage(stdout);
            free(c);
            return 0;
        }
    char err[1024];
    cpb_args_defaults(&c->a);
    if (cpb_args_parse(argc - 1, argv + 1, &c->a, err, sizeof err) != CPB_OK) {
        if (launcher_rank() == 0) fprintf(stderr, "cpbench %s: %s\n", n, err);
        free(c);
        return 2;
    }
    c->be = cpb_backend_find(c->a.backend, c->be_why, sizeof c->be_why);
    int mpi = needs_mpi(cmd, c), rc;
    if (mpi) {
        int provided = 0;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
            fprintf(stderr, "cpbench %s: MPI_Init_thread failed (start it with mpirun -np C)\n", n);
            free(c);
            return 1;
        }
        if (provided < MPI_THREAD_MULTIPLE && launcher_rank() == 0)
            fprintf(stderr, "cpbench %s: note: this MPI gives thread level %d, not MPI_THREAD_MULTIPLE; the "
                    "cpu backend does not need more, the cuda backend's MPI staging may\n", n, provided);
        cpb_ranks_begin(1);
    }
    rc = cmd->fn(c);
    fflush(stdout);
    if (mpi) MPI_Finalize();
    free(c);
    return rc;
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
        if (strcmp(n, argv[1]) == 0 || strcmp(commands[i].name, argv[1]) == 0)
            return run_command(&commands[i], argc - 1, argv + 1);
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
