/* fuzz_args.c — libFuzzer target: the command line, as cpbench parses and checks it.
 *
 * The input is split into arguments at NUL and newline bytes (a corpus file is one command
 * line, one argument per line).  Every parse that succeeds goes through what the program
 * does with options before it runs anything: each command's check of the options it takes,
 * the canonical text the ranks compare, the point's options column, the list of methods,
 * the problem (and its size checks) for a few world sizes, and the child command line of
 * --isolate.  Nothing may crash, overflow or read out of bounds; an accepted problem must
 * pass the size check. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "sweep.h"
#include "sweep_isolate.h"

#define MAX_ARGS 64
#define MAX_BYTES 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_BYTES) return 0;
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    for (size_t i = 0, start = 0; i <= size && argc < MAX_ARGS; i++)
        if (i == size || buf[i] == 0 || buf[i] == '\n') {
            buf[i] = 0;
            if (i > start || i < size) argv[argc++] = buf + start;
            start = i + 1;
        }
    argv[argc] = NULL;

    static cpb_args a;
    char err[1024];
    cpb_args_defaults(&a);
    if (cpb_args_parse(argc, argv, &a, err, sizeof err) == CPB_OK) {
        for (int cmd = 0; cmd < CPB_CMD_COUNT; cmd++) cpb_args_check_command(&a, (cpb_cmd_id)cmd, err, sizeof err);
        static char canon[8192], opts[CPB_ROW_OPTIONS_LEN];
        cpb_args_canonical(&a, canon, sizeof canon);
        const char *backends[] = {"sim", "cpu", "cuda"};
        for (int b = 0; b < 3; b++) cpb_args_point_options(&a, backends[b], opts, sizeof opts, err, sizeof err);
        const cpb_method *ms[64];
        int nm = cpb_args_methods(&a, ms, 64, err, sizeof err);
        const int worlds[] = {1, 3, 8, a.gpus > 0 ? a.gpus : 2};
        for (int w = 0; w < 4; w++) {
            cpb_problem p;
            for (int i = -1; i < (nm > 0 ? nm : 0); i++) {
                int rc = cpb_args_problem(&a, i < 0 ? NULL : ms[i], worlds[w], &p, err, sizeof err);
                if (rc == CPB_OK && cpb_problem_check_sizes(&p, err, sizeof err) != CPB_OK) abort();
                if (rc == CPB_OK && i >= 0) cpb_sweep_granule(ms[i], &p, p.S, 2 * p.S);
            }
        }
        char **child = cpb_isolate_argv("cpbench", argc, argv, nm > 0 ? ms[0]->name : "ring", a.seq, "/tmp/x.h5", a.gpus);
        cpb_isolate_free_argv(child);
        char f[32];
        cpb_sweep_number(a.factor, f, sizeof f);
    }
    free(buf);
    return 0;
}
