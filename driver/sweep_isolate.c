/* sweep_isolate.c — one trial per child process (see sweep_isolate.h). */
#include "sweep_isolate.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* sweep options the child must not get (it is given its own --method, --seq and --out) */
static const char *const dropped_with_value[] = {"--method", "--seq", "--seq-start", "--seq-stop",
                                                 "--factor", "--bisect", "--seq-list", "--out",
                                                 NULL};
/* ... nor these flags */
static const char *const dropped_flags[] = {"--isolate", "--force", NULL};

/* 1: drop this option; *takes_value: it is the "--opt value" form */
static int dropped(const char *arg, int *takes_value)
{
    *takes_value = 0;
    for (const char *const *d = dropped_flags; *d; d++)
        if (strcmp(arg, *d) == 0) return 1;
    for (const char *const *d = dropped_with_value; *d; d++) {
        size_t n = strlen(*d);
        if (strncmp(arg, *d, n) == 0 && (arg[n] == 0 || arg[n] == '=')) {
            *takes_value = arg[n] == 0;
            return 1;
        }
    }
    return 0;
}

static void push(char ***v, int *n, int *cap, const char *s)
{
    if (*n + 2 > *cap) {
        *cap = *cap ? *cap * 2 : 32;
        *v = realloc(*v, (size_t)*cap * sizeof **v);
    }
    (*v)[(*n)++] = strdup(s);
    (*v)[*n] = NULL;
}

char **cpb_isolate_argv(const char *exe, int nopts, char **opts, const char *method,
                        int64_t S, const char *out, int mpi_np)
{
    char **v = NULL, num[32];
    int n = 0, cap = 0;
    if (mpi_np > 0) {
        const char *launcher = getenv("CPB_MPIRUN");
        push(&v, &n, &cap, launcher && *launcher ? launcher : "mpirun");
        push(&v, &n, &cap, "-np");
        snprintf(num, sizeof num, "%d", mpi_np);
        push(&v, &n, &cap, num);
        const char *flags = getenv("CPB_MPIRUN_FLAGS");
        if (flags) { /* split on blanks */
            char *copy = strdup(flags), *save = NULL;
            for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
                push(&v, &n, &cap, t);
            free(copy);
        }
    }
    push(&v, &n, &cap, exe);
    push(&v, &n, &cap, "run");
    for (int i = 0; i < nopts; i++) {
        int takes_value;
        if (dropped(opts[i], &takes_value)) {
            i += takes_value;
            continue;
        }
        push(&v, &n, &cap, opts[i]);
    }
    push(&v, &n, &cap, "--method");
    push(&v, &n, &cap, method);
    push(&v, &n, &cap, "--seq");
    snprintf(num, sizeof num, "%lld", (long long)S);
    push(&v, &n, &cap, num);
    push(&v, &n, &cap, "--out");
    push(&v, &n, &cap, out);
    return v;
}

void cpb_isolate_free_argv(char **argv)
{
    if (!argv) return;
    for (char **a = argv; *a; a++) free(*a);
    free(argv);
}

/* the last non-empty line of a log file, for the reason of a failed child */
static void last_line(const char *path, char *out, size_t len)
{
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (line[0]) snprintf(out, len, "%s", line);
    }
    fclose(f);
}

/* every file of the flat folder dir, then dir */
static void remove_folder(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[4200];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                unlink(path);
            }
        closedir(d);
    }
    rmdir(dir);
}

/* the keeper's wait for its trial: SIGCHLD (the trial ended: its status) or SIGTERM (the
 * sweep died: the trial is ended, the folder removed).  Never returns on SIGTERM. */
static int keep(pid_t trial, const sigset_t *set, const char *dir)
{
    for (;;) {
        int sig = 0, st = 0;
        sigwait(set, &sig);
        if (sig == SIGCHLD) {
            if (waitpid(trial, &st, WNOHANG) == trial) return st;
            continue;
        }
        /* the sweep is gone: end the trial (mpirun passes SIGTERM to its ranks), give it a
         * few seconds, then SIGKILL, and leave nothing behind */
        kill(trial, SIGTERM);
        struct timespec wait = {1, 0};
        for (int i = 0; i < 10 && waitpid(trial, &st, WNOHANG) != trial; i++) sigtimedwait(set, NULL, &wait);
        if (waitpid(trial, &st, WNOHANG) != trial) {
            kill(trial, SIGKILL);
            while (waitpid(trial, &st, 0) < 0 && errno == EINTR) {
            }
        }
        remove_folder(dir);
        _exit(1);
    }
}

/* The child of the sweep: a keeper that dies with the sweep (PR_SET_PDEATHSIG) and then
 * ends the trial and removes the folder (the trial's results file, its lock, its log); it
 * starts the trial, which dies with the keeper, and passes the trial's status on. */
static void keeper(pid_t sweep, char **argv, const char *log, const char *dir)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != sweep) { /* the sweep died before the request took effect */
        remove_folder(dir);
        _exit(1);
    }
    /* the sweep's open files (its results file and that file's lock among them) are the
     * sweep's: neither the keeper nor the trial keeps them open */
    long maxfd = sysconf(_SC_OPEN_MAX);
    for (long fd = 3; fd < (maxfd > 0 && maxfd < 65536 ? maxfd : 65536); fd++) close((int)fd);
    const pid_t me = getpid();
    pid_t trial = fork();
    if (trial < 0) _exit(126);
    if (trial == 0) {
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != me) _exit(1);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execvp(argv[0], argv);
        fprintf(stderr, "cannot start %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st = keep(trial, &set, dir);
    if (WIFSIGNALED(st)) { /* the same death, for the sweep's reason */
        signal(WTERMSIG(st), SIG_DFL);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, WTERMSIG(st));
        sigprocmask(SIG_UNBLOCK, &one, NULL);
        raise(WTERMSIG(st));
    }
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}

int cpb_isolate_trial(const char *exe, int nopts, char **opts, const char *method, int64_t S,
                      int mpi_np, const cpb_row *tmpl, cpb_row *row, char *err,
                      size_t err_len)
{
    const char *tmpdir = getenv("TMPDIR");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/cpbench-isolate-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(dir)) {
        snprintf(err, err_len, "--isolate: cannot create a temporary directory in %s: %s",
                 tmpdir && *tmpdir ? tmpdir : "/tmp", strerror(errno));
        return CPB_ERR_IO;
    }
    char out[1100], log[1100];
    snprintf(out, sizeof out, "%s/row.h5", dir);
    snprintf(log, sizeof log, "%s/child.log", dir);
    char **argv = cpb_isolate_argv(exe, nopts, opts, method, S, out, mpi_np);

    fflush(stdout);
    fflush(stderr);
    const pid_t sweep = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, err_len, "--isolate: fork failed: %s", strerror(errno));
        cpb_isolate_free_argv(argv);
        rmdir(dir);
        return CPB_ERR_IO;
    }
    if (pid == 0) keeper(sweep, argv, log, dir);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    cpb_isolate_free_argv(argv);

    cpb_row *rows = NULL;
    int64_t n = 0;
    char rerr[512];
    int have = access(out, F_OK) == 0 && cpb_results_read(out, &rows, &n, rerr, sizeof rerr) == CPB_OK && n > 0;
    if (have) {
        *row = rows[n - 1];
        row->session = 0;
    } else {
        char tail[600];
        last_line(log, tail, sizeof tail);
        *row = *tmpl;
        cpb_row_set_status(row, CPB_ERR_BACKEND, "");
        if (WIFSIGNALED(st))
            snprintf(row->reason, sizeof row->reason,
                     "isolated trial killed by signal %d (%s)%s; last output: %s", WTERMSIG(st),
                     strsignal(WTERMSIG(st)),
                     WTERMSIG(st) == SIGKILL ? ", perhaps the kernel's OOM killer (host memory)" : "",
                     tail[0] ? tail : "none");
        else
            snprintf(row->reason, sizeof row->reason,
                     "isolated trial exited with status %d without writing its row; last output: %s",
                     WIFEXITED(st) ? WEXITSTATUS(st) : -1, tail[0] ? tail : "none");
    }
    free(rows);
    remove_folder(dir);
    return CPB_OK;
}
