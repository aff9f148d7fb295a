/* main.c — cpbench: parse and check the options, start MPI when the command needs it
 * (commands.def) or a launcher started this process, make every rank agree on the start
 * (rank 0 decides: a parse failure, other arguments on one rank, a backend missing on one
 * node), start the watchdog on a world of several ranks, dispatch to the subcommand,
 * finalise MPI.  This is the only place that initialises or finalises MPI
 * (MPI_Init_thread, MPI_THREAD_MULTIPLE: the watchdog's thread may call MPI_Abort).  A
 * subcommand returns the exit code (0 ok, 1 failed check, 2 bad arguments or refused
 * shape). */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "cli.h"
#include "ranks.h"
#include "registry.h"
#include "watchdog.h"

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
    fprintf(f, "\nScope: run and sweep measure one attention layer by default, plan the whole model;\n"
               "--scope layer|model changes it.  Times are in seconds.  `cpbench COMMAND --help`\n"
               "lists that command's options only.\n");
    fprintf(f, "\nExamples:\n"
               "  cpbench list\n"
               "  mpirun --oversubscribe -np 4 cpbench verify --method all --model tiny --seq 256 --dtype fp32\n"
               "  (--oversubscribe: more ranks than cores; as root add --allow-run-as-root)\n");
}

/* `cpbench CMD --help`: the command's summary, its default scope where it has one, and
 * only the options it takes */
static void command_usage(FILE *f, const command *cmd)
{
    char n[32];
    cli_name(cmd->name, n, sizeof n);
    const cpb_cmd_id id = (cpb_cmd_id)(cmd - commands);
    fprintf(f, "cpbench %s — %s\n\nUsage: %scpbench %s [options]\n", n, summary(cmd->name),
            cmd->mpi == CPB_MPI_NEVER ? "" : "[mpirun -np C] ", n);
    if (id == CPB_CMD_plan)
        fprintf(f, "Scope: the whole model by default (--scope model: every layer, the LM head, the optimizer);\n"
                   "       --scope layer plans one attention layer.\n");
    else if (id == CPB_CMD_run || id == CPB_CMD_sweep)
        fprintf(f, "Scope: one attention layer by default (its forward and backward, not the model's step);\n"
                   "       --scope model (with --backend sim) estimates the whole model's training step.\n");
    if (id == CPB_CMD_plan || id == CPB_CMD_run || id == CPB_CMD_sweep) fprintf(f, "Times are in seconds.\n");
    fprintf(f, "\n");
    cpb_args_command_usage(f, id);
    fprintf(f, "\n`cpbench --help` lists every command.\n");
}

/* before MPI starts: what the launcher (mpirun, srun, hydra) told this process; -1 when no
 * launcher started it */
static int launcher_var(int size)
{
    const char *rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"};
    const char *size_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"};
    const char *const *vars = size ? size_vars : rank_vars;
    for (size_t i = 0; i < 4; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return atoi(v);
    }
    return -1;
}

static int launcher_rank(void)
{
    int r = launcher_var(0);
    return r < 0 ? 0 : r;
}

static int needs_mpi(const command *cmd, const cpb_cli *c)
{
    switch (cmd->mpi) {
    case CPB_MPI_ALWAYS: return 1;
    case CPB_MPI_BACKEND: return c->be && c->be->mpi_world && !c->a.isolate;
    default: return 0;
    }
}

/* what each rank reports of its start-up, gathered on every rank */
typedef struct startup {
    int parse_rc;        /* CPB_OK or the parse / check failure */
    int have_backend;    /* --backend is usable here */
    uint64_t args_hash;  /* of the command and its canonical options */
} startup;

/* the first line where two canonical option texts differ, as "X" vs "Y" */
static void first_difference(const char *a, const char *b, char *out, size_t len)
{
    while (*a || *b) {
        size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
        if (la != lb || strncmp(a, b, la) != 0) {
            snprintf(out, len, "'%.*s' on rank 0, '%.*s' there", (int)la, la ? a : "(nothing more)", (int)lb,
                     lb ? b : "(nothing more)");
            return;
        }
        a += la + (a[la] == '\n');
        b += lb + (b[lb] == '\n');
    }
    snprintf(out, len, "the same options in another order or spelling of the command");
}

/* Every rank agrees on how the command starts, at once: rank 0 decides.  Each rank's parse
 * outcome, backend and a hash of its options are gathered; rank 0 reports its own failure,
 * or the first rank that failed or was given other arguments, and every rank leaves with
 * exit 2.  Returns 0 to go on. */
static int agree_startup(const char *n, const command *cmd, cpb_cli *c, int parse_rc, const char *perr, int mpi_needed)
{
    const int rank = cpb_ranks_rank(), world = cpb_ranks_size();
    static char canon[CPB_ARGS_CANONICAL_MAX], theirs[CPB_ARGS_CANONICAL_MAX];
    cpb_args_canonical(&c->a, canon, sizeof canon);
    startup me = {parse_rc, c->be != NULL, cpb_args_agreement_hash(&c->a, n)};
    startup *all = calloc((size_t)world, sizeof *all);
    if (!all) {
        fprintf(stderr, "cpbench %s: out of host memory for %d ranks\n", n, world);
        return 1; /* the others block, the watchdog ends them */
    }
    cpb_agree_allgather(&me, all, sizeof me);
    int bad = -1;
    for (int r = 0; r < world && bad < 0; r++)
        if (all[r].parse_rc != CPB_OK || all[r].args_hash != all[0].args_hash ||
            all[r].have_backend != all[0].have_backend)
            bad = r;
    int rc = 0;
    if (bad == 0) {
        if (rank == 0) fprintf(stderr, "cpbench %s: %s\n", n, perr);
        rc = 2;
    } else if (bad > 0) {
        /* rank `bad`'s error and options, to name what differs */
        static char why[1024];
        snprintf(why, sizeof why, "%s", rank == bad ? (parse_rc != CPB_OK ? perr : c->be_why) : "");
        snprintf(theirs, sizeof theirs, "%s", rank == bad ? canon : "");
        cpb_agree_bcast(why, sizeof why, bad);
        cpb_agree_bcast(theirs, sizeof theirs, bad);
        if (rank == 0) {
            char diff[600];
            if (all[bad].parse_rc != CPB_OK)
                fprintf(stderr, "cpbench %s: rank %d cannot use its arguments: %s\n", n, bad, why);
            else if (all[bad].args_hash != all[0].args_hash) {
                first_difference(canon, theirs, diff, sizeof diff);
                fprintf(stderr, "cpbench %s: rank %d was given other arguments than rank 0 (%s): every rank must get "
                        "the same command line\n", n, bad, diff);
            } else {
                fprintf(stderr, "cpbench %s: --backend %s is usable on rank %s but not on rank %d (%s)\n", n,
                        c->a.backend, all[0].have_backend ? "0" : "others", bad,
                        all[0].have_backend ? why : c->be_why);
            }
        }
        rc = 2;
    } else if (!c->be && cmd->mpi == CPB_MPI_BACKEND) {
        if (rank == 0) fprintf(stderr, "cpbench %s: --backend: %s\n", n, c->be_why);
        rc = 2;
    } else if (!mpi_needed && world > 1) {
        if (rank == 0)
            fprintf(stderr, "cpbench %s: this command%s runs in one process, and %d were started: run it without mpirun "
                    "(or with -np 1)%s\n", n, c->a.isolate ? " with --isolate" : c->be && !c->be->mpi_world ? " on this backend" : "",
                    world, c->a.isolate ? "; --isolate starts `mpirun -np C` itself for each trial" : "");
        rc = 2;
    }
    free(all);
    return rc;
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
    /* `cpbench CMD --help`: that command's help, whatever else is given */
    for (int a = 1; a < argc; a++)
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            if (launcher_rank() <= 0) command_usage(stdout, cmd);
            free(c);
            return 0;
        }
    static char err[1024];
    cpb_args_defaults(&c->a);
    int prc = cpb_args_parse(argc - 1, argv + 1, &c->a, err, sizeof err);
    if (prc == CPB_OK) prc = cpb_args_check_command(&c->a, (cpb_cmd_id)(cmd - commands), err, sizeof err);
    if (prc == CPB_OK) c->be = cpb_backend_find(c->a.backend, c->be_why, sizeof c->be_why);
    /* under a launcher MPI starts whatever the command, so that every rank hears of a
     * failure of any one of them (rank 0 decides) and none waits for another forever */
    const int launched = launcher_var(1) > 0;
    const int mpi_needed = prc == CPB_OK && needs_mpi(cmd, c);
    const int mpi = launched || mpi_needed;
    if (!mpi && prc != CPB_OK) {
        fprintf(stderr, "cpbench %s: %s\n", n, err);
        free(c);
        return 2;
    }
    int provided = 0, rc;
    if (mpi) {
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
            fprintf(stderr, "cpbench %s: MPI_Init_thread failed (start it with mpirun -np C)\n", n);
            free(c);
            return 1;
        }
        cpb_ranks_begin(1);
        if (provided < MPI_THREAD_MULTIPLE && cpb_ranks_rank() == 0 && mpi_needed)
            fprintf(stderr, "cpbench %s: note: this MPI gives thread level %d, not MPI_THREAD_MULTIPLE; the "
                    "cpu backend does not need more, the cuda backend's MPI staging may; the watchdog exits instead "
                    "of calling MPI_Abort\n", n, provided);
        /* a stopped or dead peer ends every rank instead of hanging them (watchdog.h) */
        if (cpb_ranks_size() > 1 && prc == CPB_OK) cpb_watchdog_start(c->a.timeout, provided >= MPI_THREAD_MULTIPLE);
        rc = agree_startup(n, cmd, c, prc, err, mpi_needed);
        if (rc == 0) rc = cmd->fn(c);
    } else {
        rc = cmd->fn(c);
    }
    fflush(stdout);
    fflush(stderr);
    if (mpi) {
        cpb_watchdog_finalizing();
        MPI_Finalize();
        cpb_watchdog_stop();
    }
    free(c);
    return rc;
}

int main(int argc, char **argv)
{
    /* A file-size limit (ulimit -f) must not kill the process with SIGXFSZ mid-append: with
     * the signal ignored, the write or the reservation fails with EFBIG, which the results
     * writer treats like a full disk (exit 1 with the reason, the file as it was:
     * results/README.md, "Guarantees").  Children (--isolate) inherit it. */
    signal(SIGXFSZ, SIG_IGN);
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
