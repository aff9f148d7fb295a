/* test_knobs.c — method options declared once in a table: the command line, the problem,
 * the results columns and the point key all come from it.  A choice-valued knob goes the
 * same way (registered here as a table every point carries), and so do the driver's own
 * knobs (the simulator's --host-ram, the model scope's --framework). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cpb_presets.h"
#include "knobs.h"
#include "model_scope.h"
#include "registry.h"
#include "results_h5.h"

Test(knobs, tables_agree_and_every_knob_has_an_option)
{
    char err[1024] = "";
    cr_assert_eq(cpb_knob_tables_agree(err, sizeof err), CPB_OK, "%s", err);
    cr_assert_geq(cpb_knob_count(), 4);
    const char *want[] = {"head_chunk", "seq_chunk", "offload_group", "ulysses_degree", "fpdt_impl", "framework",
                          "host_ram_bytes"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect_geq(cpb_knob_index(want[i]), 0, "%s is declared by a method or the driver", want[i]);
    /* every knob parses from its option on the command line, and is a results column */
    const char *const *cols = cpb_results_column_names();
    for (int i = 0; i < cpb_knob_count(); i++) {
        const cpb_knob *k = cpb_knob_at(i);
        char opt[64];
        cpb_knob_option(k, opt, sizeof opt);
        cr_expect(strncmp(opt, "--", 2) == 0 && !strchr(opt, '_'), "%s", opt);
        cpb_args a;
        cpb_args_defaults(&a);
        char *argv[] = {opt, k->type == CPB_KNOB_CHOICE ? (char *)k->def : "8"};
        cr_expect(strcmp(k->name, "host_ram_bytes") || strcmp(opt, "--host-ram") == 0, "%s", opt);
        cr_expect_eq(cpb_args_parse(2, argv, &a, err, sizeof err), CPB_OK, "%s: %s", opt, err);
        cr_expect_not_null(cpb_knobs_find(&a.knobs, k->name), "%s", opt);
        int found = 0;
        for (int c = 0; cols[c]; c++) found |= strcmp(cols[c], k->name) == 0;
        cr_expect(found, "knob %s is a results column", k->name);
        cr_expect(k->help && k->help[0], "knob %s has help", k->name);
    }
}

Test(knobs, a_method_gets_its_own_knobs_with_defaults)
{
    const cpb_method *upipe = cpb_method_find("upipe"), *ring = cpb_method_find("ring");
    cr_assert(upipe && ring);
    cpb_problem p;
    cr_assert_eq(cpb_preset_find("tiny", &p), CPB_OK);
    p.S = 256;
    p.C = 4;
    cpb_knobs given = {0};
    cpb_knobs_set_int(&given, "head_chunk", 8);
    cpb_knobs_set_int(&given, "seq_chunk", 64);
    char err[512] = "";
    /* what every point carries besides its method's: the driver's knobs (attn, host_ram_bytes,
     * framework, tp and the training setup's sixteen parts), and the pipeline's four (pp,
     * vpp, pp_first_layers, pp_last_layers: model_scope_pp.h) */
    const int general = 4 + 16 + 4;
    cr_assert_eq(cpb_knobs_apply(upipe, &given, &p, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(p.knobs.n, 2 + general, "upipe's head_chunk and upipe_bwd");
    cr_expect_eq(cpb_knob_int(&p, "head_chunk"), 8);
    cr_expect_str_eq(cpb_knob_str(&p, "upipe_bwd"), "o", "a knob not given: its default");
    cr_expect_null(cpb_knobs_find(&p.knobs, "seq_chunk"), "fpdt's knob is not upipe's");
    cr_expect_str_eq(cpb_knob_str(&p, "framework"), "torchtitan", "the driver's knobs, at their defaults");
    cr_expect_str_eq(cpb_knob_str(&p, "attn"), "auto");
    cr_assert_eq(cpb_knobs_apply(ring, &given, &p, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(p.knobs.n, 1 + general, "ring's one knob: ring_layout");
    cr_expect_str_eq(cpb_knob_str(&p, "ring_layout"), "zigzag", "ring's knob not given: its default");
    cr_expect_null(cpb_knobs_find(&p.knobs, "head_chunk"), "upipe's knob is not ring's");
    /* the check is the knob's own */
    cpb_knobs_set_int(&given, "head_chunk", 3);
    cr_expect_eq(cpb_knobs_apply(upipe, &given, &p, err, sizeof err), CPB_ERR_REFUSED);
    cr_expect(strstr(err, "--head-chunk 3"), "%s", err);
}

/* a choice-valued knob every point carries */
static const cpb_knob recipe_knob[] = {
    {.name = "recipe", .type = CPB_KNOB_CHOICE, .def = "ours", .choices = "ours|theirs|both", .arg = "R",
     .help = "whose recipe every point follows"},
    {NULL}};

Test(knobs, a_choice_knob_from_command_line_to_results_file_and_point_key)
{
    cr_assert_eq(cpb_knobs_register(recipe_knob), CPB_OK);
    char err[1024] = "";
    cr_assert_eq(cpb_knob_tables_agree(err, sizeof err), CPB_OK, "%s", err);
    /* the command line */
    cpb_args a;
    cpb_args_defaults(&a);
    char *bad[] = {"--recipe", "mine"};
    cr_expect_eq(cpb_args_parse(2, bad, &a, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "--recipe 'mine'") && strstr(err, "ours|theirs|both"), "%s", err);
    cpb_args_defaults(&a);
    char *argv[] = {"--model", "tiny", "--seq", "256", "--recipe", "theirs"};
    cr_assert_eq(cpb_args_parse(6, argv, &a, err, sizeof err), CPB_OK, "%s", err);
    /* the problem: the given choice, or the default where not given */
    const cpb_method *m = cpb_method_find("ulysses");
    cpb_problem p, q;
    cr_assert_eq(cpb_args_problem(&a, m, 4, &p, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_str_eq(cpb_knob_str(&p, "recipe"), "theirs");
    cpb_args_defaults(&a);
    cr_assert_eq(cpb_args_parse(4, argv, &a, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(cpb_args_problem(&a, m, 4, &q, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_str_eq(cpb_knob_str(&q, "recipe"), "ours", "the table's default");
    /* the row and the point key */
    static cpb_row r1, r2;
    cpb_row_point(&r1, m, &p, &cpb_backend_sim, "h100-sxm", "layer");
    cpb_row_point(&r2, m, &q, &cpb_backend_sim, "h100-sxm", "layer");
    cr_expect_str_eq(cpb_row_knob_str(&r1, "recipe"), "theirs");
    cr_expect(!cpb_row_same_point(&r1, &r2), "another choice is another point");
    /* the results file: a column of that name, read back */
    char dir[] = "/tmp/cpb_knobs_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/k.h5", dir);
    char *cmd[] = {"cpbench", "run"};
    cr_assert_eq(cpb_results_write_row(path, 0, 2, cmd, &cpb_backend_sim, &r1, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(cpb_results_write_row(path, 0, 2, cmd, &cpb_backend_sim, &r2, err, sizeof err), CPB_OK, "%s", err);
    cpb_row *rows = NULL;
    int64_t n = 0;
    cr_assert_eq(cpb_results_read(path, &rows, &n, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(cpb_row_knob_str(&rows[0], "recipe"), "theirs");
    cr_expect_str_eq(cpb_row_knob_str(&rows[1], "recipe"), "ours");
    cr_expect(cpb_row_same_point(&rows[0], &r1) && !cpb_row_same_point(&rows[0], &r2));
    free(rows);
    unlink(path);
    rmdir(dir);
}

/* the model scope's --framework offers exactly the training setups it has */
Test(knobs, framework_choices_are_the_model_scopes_setups)
{
    const cpb_knob *k = cpb_knob_at(cpb_knob_index("framework"));
    cr_assert_not_null(k);
    char choices[128];
    snprintf(choices, sizeof choices, "%s", k->choices);
    int n = 0;
    for (char *c = strtok(choices, "|"); c; c = strtok(NULL, "|"), n++)
        cr_expect_not_null(cpb_framework_find(c), "--framework %s is no setup of model_scope_framework.c", c);
    char names[128];
    snprintf(names, sizeof names, "%s", cpb_framework_names());
    int m = 0;
    for (char *c = strtok(names, ", "); c; c = strtok(NULL, ", "), m++) cr_expect(cpb_in_choices(c, k->choices), "%s", c);
    cr_expect_eq(n, m);
    cr_expect_str_eq(k->def, cpb_framework_find(NULL)->name, "the default is the model scope's");
}
