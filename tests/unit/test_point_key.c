/* test_point_key.c — the point key covers every option that changes a result.
 *
 * Each option of the table says what it is to a result (args.h: COLUMN, KEY, NONE); the
 * key is made from that table, so a new option cannot be forgotten: this test fails when an
 * option says nothing, when a COLUMN or KEY option (or any knob) given with another value
 * leaves the point key unchanged, and when a NONE option changes the outcome of a trial. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "knobs.h"
#include "point.h"
#include "registry.h"

/* a backend named cuda with the cuda backend's capabilities: only its name and flags are
 * read when a point's row is named (no context is made) */
static const cpb_backend fake_cuda = {.name = "cuda", .has_data = 1, .mpi_world = 1};

static const cpb_backend *backend_named(const char *name)
{
    if (strcmp(name, "sim") == 0) return &cpb_backend_sim;
    if (strcmp(name, "cpu") == 0) return &cpb_backend_cpu;
    return &fake_cuda;
}

static char calibration[256];

/* the row that names the point of argv (no trial is run) */
static void key_row(int argc, char **argv, cpb_row *row)
{
    static cpb_args a;
    char err[1024] = "";
    cpb_args_defaults(&a);
    cr_assert_eq(cpb_args_parse(argc, argv, &a, err, sizeof err), CPB_OK, "%s", err);
    const cpb_backend *be = backend_named(a.backend);
    static cpb_runner r;
    cpb_runner_opts o;
    cr_assert_eq(cpb_args_runner_opts(&a, be, NULL, 0, NULL, &o, err, sizeof err), CPB_OK, "%s", err);
    memset(&r, 0, sizeof r);
    if (be->models_time) {
        cr_assert_eq(cpb_runner_open(&r, &o, err, sizeof err), CPB_OK, "%s", err);
    } else {
        r.o = o;
        r.C = a.gpus > 0 ? a.gpus : 4;
        snprintf(r.gpu, sizeof r.gpu, "%s", be->name);
    }
    const cpb_method *m[1];
    cr_assert_eq(cpb_args_methods(&a, m, 1, err, sizeof err), 1, "%s", err);
    cpb_problem p;
    cr_assert_eq(cpb_args_problem(&a, m[0], r.C, &p, err, sizeof err), CPB_OK, "%s", err);
    cpb_runner_point_row(&r, m[0], &p, a.scope, row);
    cpb_runner_close(&r);
}

#define BASE "--method", "ulysses", "--model", "tiny", "--seq", "1024", "--gpus", "4", "--backend"

static void init(void)
{
    snprintf(calibration, sizeof calibration, "/tmp/cpb_key_calib_XXXXXX");
    int fd = mkstemp(calibration);
    cr_assert_geq(fd, 0);
    const char text[] = "# a calibration file\nattn_fwd_tflops = 300\n";
    cr_assert_eq(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
}

static void fini(void)
{
    unlink(calibration);
}

Test(point_key, every_option_says_what_it_is_to_a_result)
{
    cr_assert_leq(cpb_args_option_count(), CPB_ARGS_MAX_OPTS);
    for (int i = 0; i < cpb_args_option_count(); i++) {
        const char *name = cpb_args_option_name(i);
        cpb_opt_role role = cpb_args_option_role(i);
        cr_expect(role == CPB_OPT_COLUMN || role == CPB_OPT_KEY || role == CPB_OPT_NONE,
                  "%s does not say whether it changes a result (args.c: COL, KEY or NONE)", name);
        cr_expect_neq(cpb_args_option_commands(i), 0u, "%s is used by no command", name);
        if (role != CPB_OPT_NONE && strcmp(name, "--calibration") != 0 && strcmp(name, "--no-race-check") != 0)
            cr_expect_not_null(cpb_args_option_example(i), "%s needs an example value for this test", name);
    }
}

/* every COLUMN and KEY option, given with another value, makes another point */
Test(point_key, a_result_changing_option_changes_the_key, .init = init, .fini = fini)
{
    int checked = 0;
    for (int i = 0; i < cpb_args_option_count(); i++) {
        const char *name = cpb_args_option_name(i);
        cpb_opt_role role = cpb_args_option_role(i);
        if (role != CPB_OPT_COLUMN && role != CPB_OPT_KEY) continue;
        const char *be = cpb_args_option_on_backend(i, "sim") ? "sim" : cpb_args_option_on_backend(i, "cpu") ? "cpu" : "cuda";
        const char *value = strcmp(name, "--calibration") == 0 ? calibration : cpb_args_option_example(i);
        static cpb_row base, other;
        char *argv_base[] = {BASE, (char *)be};
        key_row(sizeof argv_base / sizeof *argv_base, argv_base, &base);
        cr_assert(cpb_row_same_point(&base, &base));
        int argc = 0;
        char *argv[16];
        const char *const b[] = {BASE};
        for (size_t k = 0; k < sizeof b / sizeof *b; k++) {
            /* the option replaces the base's value of it (--method, --seq, --gpus, --backend) */
            if (strcmp(b[k], name) == 0) {
                k++;
                continue;
            }
            argv[argc++] = (char *)b[k];
        }
        if (strcmp(name, "--backend") != 0) argv[argc++] = (char *)be; /* the value of BASE's last option */
        argv[argc++] = (char *)name;
        if (value) argv[argc++] = (char *)value;
        key_row(argc, argv, &other);
        cr_expect(!cpb_row_same_point(&base, &other),
                  "%s %s on %s leaves the point key unchanged: a resumed sweep would reuse rows taken without it "
                  "(give it a column, or role KEY in harness/args.c)", name, value ? value : "", be);
        checked++;
    }
    cr_expect_geq(checked, 20, "the table's result-changing options");
}

/* every knob, with a value other than its default, makes another point of a method that has it */
Test(point_key, every_knob_is_in_the_key)
{
    for (int i = 0; i < cpb_knob_count(); i++) {
        const cpb_knob *k = cpb_knob_at(i);
        const cpb_method *m = NULL;
        for (int j = 0; j < cpb_method_count() && !m; j++)
            if (cpb_knob_of(cpb_method_at(j), k->name) && (!cpb_knob_of(NULL, k->name) || j == 0)) m = cpb_method_at(j);
        cr_assert_not_null(m, "knob %s", k->name);
        cpb_problem p;
        memset(&p, 0, sizeof p);
        p.S = 1 << 20, p.D = 4096, p.H = 32, p.G = 8, p.d = 128, p.C = 8;
        snprintf(p.model, sizeof p.model, "llama3-8b");
        char err[512];
        cr_assert_eq(cpb_knobs_apply(m, NULL, &p, err, sizeof err) == CPB_ERR_INVALID, 0, "%s", err);
        const char *scope = k->points == CPB_KNOB_MODEL_SCOPE_POINTS ? "model" : "layer";
        static cpb_row a, b;
        cpb_row_point(&a, m, &p, &cpb_backend_sim, "h100-sxm", scope);
        if (k->type == CPB_KNOB_CHOICE) {
            const char *bar = strchr(k->choices, '|');
            char other[64];
            snprintf(other, sizeof other, "%s", bar && strncmp(k->choices, k->def, (size_t)(bar - k->choices)) == 0
                                                    ? bar + 1 : k->choices);
            other[strcspn(other, "|")] = 0;
            cpb_knobs_set_str(&p.knobs, k->name, other);
        } else {
            cpb_knobs_set_int(&p.knobs, k->name, cpb_knob_int(&p, k->name) + 2);
        }
        cpb_row_point(&b, m, &p, &cpb_backend_sim, "h100-sxm", scope);
        cr_expect(!cpb_row_same_point(&a, &b), "knob %s of %s is not in the point key", k->name, m->name);
    }
}

/* the options column is canonical: the same value however it is spelled */
Test(point_key, options_are_canonical)
{
    static cpb_row a, b;
    char *x[] = {BASE, "sim", "--mem-cap", "40G", "--gpus-per-node", "4"};
    char *y[] = {BASE, "sim", "--gpus-per-node=4", "--mem-cap", "42949672960"};
    key_row(sizeof x / sizeof *x, x, &a);
    key_row(sizeof y / sizeof *y, y, &b);
    cr_expect_str_eq(a.options, "gpus-per-node=4;mem-cap=42949672960");
    cr_expect(cpb_row_same_point(&a, &b));
}

/* a NONE option changes no outcome: the same trial with and without it gives the same row
 * (run in this process: on the simulator, and on the cpu backend with one rank) */
Test(point_key, an_option_outside_the_key_changes_no_outcome)
{
    int checked = 0;
    for (int i = 0; i < cpb_args_option_count(); i++) {
        const char *name = cpb_args_option_name(i), *value = cpb_args_option_example(i);
        if (cpb_args_option_role(i) != CPB_OPT_NONE || !(cpb_args_option_commands(i) & (1u << CPB_CMD_run)) || !value)
            continue;
        const char *be = cpb_args_option_on_backend(i, "sim") ? "sim" : "cpu";
        const int model = strncmp(name, "--seq-", 6) == 0 || strcmp(name, "--bisect") == 0; /* run --scope model's */
        static cpb_row rows[2];
        for (int with = 0; with < 2; with++) {
            char *argv[20] = {"--method", "ulysses", "--model", model ? "llama3-8b" : "tiny", "--seq", model ? "256K" : "64",
                              "--backend", (char *)be};
            int argc = 8;
            if (strcmp(be, "sim") == 0) argv[argc++] = "--gpus", argv[argc++] = model ? "8" : "2";
            if (model) argv[argc++] = "--scope", argv[argc++] = "model";
            if (with) argv[argc++] = (char *)name, argv[argc++] = (char *)value;
            static cpb_args a;
            char err[1024] = "";
            cpb_args_defaults(&a);
            cr_assert_eq(cpb_args_parse(argc, argv, &a, err, sizeof err), CPB_OK, "%s", err);
            cr_assert_eq(cpb_args_check_command(&a, CPB_CMD_run, err, sizeof err), CPB_OK, "%s", err);
            const cpb_backend *b = backend_named(a.backend);
            cpb_runner_opts o;
            static cpb_runner r;
            cr_assert_eq(cpb_args_runner_opts(&a, b, NULL, 0, NULL, &o, err, sizeof err), CPB_OK, "%s", err);
            cr_assert_eq(cpb_runner_open(&r, &o, err, sizeof err), CPB_OK, "%s", err);
            const cpb_method *m = cpb_method_find("ulysses");
            cpb_problem p;
            cr_assert_eq(cpb_args_problem(&a, m, r.C, &p, err, sizeof err), CPB_OK, "%s", err);
            cr_assert_eq(cpb_run_point(&r, m, &p, a.scope, &rows[with], NULL), CPB_OK, "%s", rows[with].reason);
            cpb_runner_close(&r);
        }
        cr_expect_str_eq(rows[1].status, rows[0].status, "%s", name);
        cr_expect_eq(rows[1].peak_bytes, rows[0].peak_bytes, "%s %s changed the peak", name, value);
        cr_expect_eq(rows[1].capacity_bytes, rows[0].capacity_bytes, "%s %s changed the capacity", name, value);
        cr_expect_eq(rows[1].host_peak_bytes, rows[0].host_peak_bytes, "%s %s changed the host peak", name, value);
        cr_expect_eq(rows[1].comm_bytes, rows[0].comm_bytes, "%s %s changed the traffic", name, value);
        cr_expect_eq(rows[1].y_norm, rows[0].y_norm, "%s %s changed the outputs", name, value);
        cr_expect_eq(rows[1].dw_norm, rows[0].dw_norm, "%s %s changed the outputs", name, value);
        if (strcmp(be, "sim") == 0) cr_expect_eq(rows[1].step_s, rows[0].step_s, "%s %s changed the time", name, value);
        cr_expect(cpb_row_same_point(&rows[0], &rows[1]), "%s is outside the key", name);
        checked++;
    }
    cr_expect_geq(checked, 4, "--profile-iter, --timeout, --seq-start, --seq-stop, --bisect");
}
