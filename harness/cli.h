/* cli.h — what every subcommand gets from main: its argv, the parsed options and the
 * backend --backend names.  main owns MPI (it starts it when commands.def says the
 * command needs it and finalises it at exit); a command never starts or stops it. */
#ifndef CPB_CLI_H
#define CPB_CLI_H

#include "args.h"
#include "cpb_backend.h"

typedef enum cpb_mpi_rule { CPB_MPI_NEVER, CPB_MPI_ALWAYS, CPB_MPI_BACKEND } cpb_mpi_rule;

typedef struct cpb_cli {
    int argc;                /* the command's argv: argv[0] is its name */
    char **argv;
    cpb_args a;              /* its options, parsed */
    const cpb_backend *be;   /* --backend (default cpu); NULL when the build lacks it */
    char be_why[512];        /* why be is NULL */
} cpb_cli;

#define X(name, mpi) int cpb_cmd_##name(const cpb_cli *c);
#include "commands.def"
#undef X

/* the exit code of a trial's status: 0 ok (an OOM is a result), 2 a refused shape, 1
 * anything else (CPB_ERR_INVALID from a trial is a bug of the method: 1) */
int cpb_cli_exit_code(int status);
/* --out checked (cpb_results_check_target) before anything runs, by rank 0, for every
 * rank: 0, or the exit code (2 refused, 1 not checkable) with the message printed */
int cpb_cli_check_out(const cpb_args *a, const char *cmd);
/* the backend of c, or a message on stderr and NULL */
const cpb_backend *cpb_cli_backend(const cpb_cli *c, const char *cmd);

/* one verify invocation of the options a (a command line or a case line; cmd_verify.c) */
int cpb_cli_verify(const cpb_args *a, const char *label);
/* the lines of the case files of base whose np is the world size (verify_cases.c) */
int cpb_cli_verify_cases(const cpb_args *base);

#endif
