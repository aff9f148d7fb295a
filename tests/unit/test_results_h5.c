/* test_results_h5.c — the HDF5 results file: schema, append, refusal of foreign files, and a
 * writer killed with SIGKILL mid-sweep leaving a readable file with its finished rows. */
#include <criterion/criterion.h>
#include <hdf5.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cpb_presets.h"
#include "flops_nemo.h"
#include "knobs.h"
#include "model_config.h"
#include "point.h"
#include "registry.h"
#include "results_h5.h"

static char dir[256];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/cpb_results_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void path_in_dir(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

static void prov(cpb_provenance *p, const char *tag)
{
    char *argv[] = {"cpbench", "sweep", "--method", (char *)tag, "--out", "it's a file.h5"};
    cpb_provenance_collect(p, 6, argv, &cpb_backend_sim, "h100-sxm", 8);
}

static void fill_row(cpb_row *r, int i)
{
    cpb_row_init(r);
    CPB_ROW_SET(r, method, i % 2 ? "ring" : "upipe");
    CPB_ROW_SET(r, model, "llama3-8b");
    CPB_ROW_SET(r, backend, "sim");
    CPB_ROW_SET(r, gpu, "h100-sxm");
    CPB_ROW_SET(r, status, i % 3 == 2 ? "oom" : "ok");
    CPB_ROW_SET(r, reason, i % 3 == 2 ? "device capacity exceeded" : "");
    r->world_size = 8;
    r->seq_len = 1000 + i;
    r->peak_bytes = ((int64_t)1 << 36) + i; /* > 2^32: 64-bit columns */
    r->at_peak_bytes[CPB_TAG_COUNT - 1] = 7 * i;
    r->step_s = 0.5 * i;
    r->tokens_per_s_per_gpu = 123.25 + i;
}

static void check_row(const cpb_row *r, int i)
{
    cpb_row want;
    fill_row(&want, i);
    cr_expect_str_eq(r->method, want.method, "row %d method", i);
    cr_expect_str_eq(r->status, want.status, "row %d status", i);
    cr_expect_str_eq(r->reason, want.reason, "row %d reason", i);
    cr_expect_eq(r->seq_len, want.seq_len, "row %d seq_len", i);
    cr_expect_eq(r->peak_bytes, want.peak_bytes, "row %d peak", i);
    cr_expect_eq(r->at_peak_bytes[CPB_TAG_COUNT - 1], want.at_peak_bytes[CPB_TAG_COUNT - 1]);
    cr_expect_float_eq(r->step_s, want.step_s, 1e-12);
    cr_expect_float_eq(r->tokens_per_s_per_gpu, want.tokens_per_s_per_gpu, 1e-12);
    cr_expect_neq(r->timestamp[0], 0, "row %d has a timestamp", i);
}

static void write_rows(const char *path, int from, int to)
{
    cpb_provenance p;
    prov(&p, "all");
    cpb_results *f = NULL;
    char err[1024];
    cr_assert_eq(cpb_results_open(path, &p, 0, &f, err, sizeof err), CPB_OK, "%s", err);
    for (int i = from; i < to; i++) {
        cpb_row r;
        fill_row(&r, i);
        cr_assert_eq(cpb_results_append(f, &r, err, sizeof err), CPB_OK, "%s", err);
    }
    cr_expect_eq(cpb_results_rows(f), to);
    cpb_results_close(f);
}

/* whole file contents, to prove a refused file is untouched */
static char *slurp(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)*len + 1);
    cr_assert_eq(fread(b, 1, (size_t)*len, f), (size_t)*len);
    fclose(f);
    return b;
}

static void expect_refused_untouched(const char *path, const char *needle)
{
    long n0, n1;
    char *before = slurp(path, &n0);
    cpb_provenance p;
    prov(&p, "ring");
    cpb_results *f = NULL;
    char err[1024] = "";
    int rc = cpb_results_open(path, &p, 0, &f, err, sizeof err);
    cr_expect_eq(rc, CPB_ERR_INVALID, "a foreign file must be refused");
    cr_expect_null(f);
    cr_expect(strstr(err, needle) != NULL, "message '%s' should say '%s'", err, needle);
    cr_expect(strstr(err, "untouched") != NULL, "message '%s' should say untouched", err);
    char *after = slurp(path, &n1);
    cr_expect_eq(n0, n1, "refused file changed size");
    cr_expect(memcmp(before, after, (size_t)n0) == 0, "refused file changed");
    free(before);
    free(after);
}

Test(results_h5, create_write_read_schema)
{
    make_dir();
    char path[512];
    path_in_dir(path, sizeof path, "a.h5");
    write_rows(path, 0, 3);
    cpb_row *rows;
    int64_t n;
    char err[1024];
    cr_assert_eq(cpb_results_read(path, &rows, &n, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(n, 3);
    for (int i = 0; i < 3; i++) check_row(&rows[i], i);
    free(rows);

    /* provenance attributes on the file, read with the plain HDF5 API as any reader would */
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    cr_assert_geq(f, 0);
    const char *attrs[] = {"cpbench_schema", "cpbench_schema_version", "command_line", "git_commit",
                           "date", "host", "backend", "gpu", "gpu_count", "hdf5_version"};
    for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++)
        cr_expect_gt(H5Aexists(f, attrs[i]), 0, "attribute %s", attrs[i]);
    hid_t d = H5Dopen2(f, "/runs", H5P_DEFAULT);
    hid_t t = H5Dget_type(d);
    for (const char *const *c = cpb_results_column_names(); *c; c++)
        cr_expect_geq(H5Tget_member_index(t, *c), 0, "column %s", *c);
    /* the required columns of the issue are all there */
    const char *need[] = {"method", "model", "backend", "gpu", "world_size", "seq_len", "head_chunk",
                          "seq_chunk", "scope", "status", "reason", "peak_bytes", "reserved_bytes",
                          "device_used_bytes", "intermediate_bytes", "host_peak_bytes", "step_s",
                          "fwd_s", "bwd_s", "tokens_per_s", "tokens_per_s_per_gpu",
                          "tflops_per_gpu", "comm_bytes", "timestamp"};
    for (size_t i = 0; i < sizeof need / sizeof *need; i++)
        cr_expect_geq(H5Tget_member_index(t, need[i]), 0, "required column %s", need[i]);
    H5Tclose(t);
    H5Dclose(d);
    H5Fclose(f);
}

Test(results_h5, append_keeps_earlier_rows_and_records_sessions)
{
    make_dir();
    char path[512];
    path_in_dir(path, sizeof path, "b.h5");
    write_rows(path, 0, 4);
    write_rows(path, 4, 6);
    write_rows(path, 6, 7);
    cpb_row *rows;
    int64_t n;
    char err[1024];
    cr_assert_eq(cpb_results_read(path, &rows, &n, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(n, 7);
    for (int i = 0; i < 7; i++) check_row(&rows[i], i);
    cr_expect_eq(rows[0].session, 0);
    cr_expect_eq(rows[3].session, 0);
    cr_expect_eq(rows[4].session, 1);
    cr_expect_eq(rows[6].session, 2);
    free(rows);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "/sessions", H5P_DEFAULT);
    hid_t sp = H5Dget_space(d);
    hsize_t ns = 0;
    H5Sget_simple_extent_dims(sp, &ns, NULL);
    cr_expect_eq(ns, 3, "one /sessions row per writer");
    H5Sclose(sp);
    H5Dclose(d);
    H5Fclose(f);
}

Test(results_h5, refuses_text_file_untouched)
{
    make_dir();
    char path[512];
    path_in_dir(path, sizeof path, "notes.h5");
    FILE *f = fopen(path, "w");
    fputs("my precious notes\n", f);
    fclose(f);
    expect_refused_untouched(path, "not an HDF5 file");
}

Test(results_h5, refuses_foreign_hdf5_untouched)
{
    make_dir();
    char path[512];
    path_in_dir(path, sizeof path, "foreign.h5");
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t n = 4;
    hid_t sp = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, "/runs", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int v[4] = {1, 2, 3, 4};
    H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    H5Dclose(d);
    H5Sclose(sp);
    H5Fclose(f);
    expect_refused_untouched(path, "not a cpbench results file");
}

Test(results_h5, refuses_other_schema_version_untouched)
{
    make_dir();
    char path[512];
    path_in_dir(path, sizeof path, "v99.h5");
    write_rows(path, 0, 2);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t a = H5Aopen(f, "cpbench_schema_version", H5P_DEFAULT);
    int v = 99;
    H5Awrite(a, H5T_NATIVE_INT, &v);
    H5Aclose(a);
    H5Fclose(f);
    expect_refused_untouched(path, "schema version 99");
}

Test(results_h5, refuses_missing_directory)
{
    cpb_provenance p;
    prov(&p, "ring");
    cpb_results *f = NULL;
    char err[1024] = "";
    cr_expect_eq(cpb_results_open("/nonexistent-dir-cpb/x.h5", &p, 0, &f, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "cannot create /nonexistent-dir-cpb/x.h5") != NULL, "%s", err);
}

/* A writer killed with SIGKILL between rows (as a sweep killed mid-way) leaves a file that
 * reopens, for reading and for appending, with every row it finished. */
Test(results_h5, sigkill_mid_sweep_leaves_finished_rows)
{
    make_dir();
    char path[512];
    path_in_dir(path, sizeof path, "killed.h5");
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        cpb_provenance p;
        prov(&p, "all");
        cpb_results *f = NULL;
        char err[1024];
        if (cpb_results_open(path, &p, 0, &f, err, sizeof err) != CPB_OK) _exit(3);
        for (int i = 0;; i++) { /* runs until killed */
            cpb_row r;
            fill_row(&r, i);
            if (cpb_results_append(f, &r, err, sizeof err) != CPB_OK) _exit(4);
            int done = i + 1;
            if (write(fds[1], &done, sizeof done) != sizeof done) _exit(5);
            usleep(2000); /* "the next trial" */
        }
    }
    close(fds[1]);
    int done = 0, got;
    while (done < 20 && read(fds[0], &got, sizeof got) == sizeof got) done = got;
    cr_assert_eq(done, 20, "the writer should report 20 rows before it is killed");
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child should die of SIGKILL");
    while (read(fds[0], &got, sizeof got) == sizeof got) done = got; /* rows it finished after */
    close(fds[0]);

    cpb_row *rows;
    int64_t n;
    char err[1024];
    cr_assert_eq(cpb_results_read(path, &rows, &n, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_geq(n, done, "file has %lld rows, the writer finished %d", (long long)n, done);
    for (int i = 0; i < n; i++) check_row(&rows[i], i);
    free(rows);

    /* an interrupted sweep resumes into the same file */
    write_rows(path, (int)n, (int)n + 1);
    cr_assert_eq(cpb_results_read(path, &rows, &n, err, sizeof err), CPB_OK, "%s", err);
    for (int i = 0; i < n; i++) check_row(&rows[i], i);
    free(rows);
}

Test(results_h5, argv_is_quoted_for_the_shell)
{
    char out[256];
    char *argv[] = {"cpbench", "run", "--out", "my file.h5", "it's"};
    cpb_provenance_join_argv(out, sizeof out, 5, argv);
    cr_expect_str_eq(out, "cpbench run --out 'my file.h5' 'it'\\''s'");
    char small[8];
    cpb_provenance_join_argv(small, sizeof small, 5, argv);
    cr_expect_eq(strlen(small), 7u);
}

/* ---- the row of a point, its throughput, and the point key */

Test(results_h5, point_row_names_the_point_and_rates_come_from_the_step)
{
    cpb_problem p;
    memset(&p, 0, sizeof p);
    p.S = 1 << 20;
    p.D = 4096;
    p.H = 32;
    p.G = 8;
    p.d = 128;
    p.C = 8;
    p.dtype = CPB_BF16;
    cpb_knobs_set_int(&p.knobs, "offload_group", 2); /* not upipe's: no column value */
    cpb_knobs_set_int(&p.knobs, "head_chunk", 0);
    snprintf(p.model, sizeof p.model, "llama3-8b");
    const cpb_method *m = cpb_method_find("upipe");
    cr_assert_not_null(m);
    static cpb_row o;
    cpb_row_point(&o, m, &p, &cpb_backend_sim, "h100-sxm", "model");
    cr_expect_str_eq(o.method, "upipe");
    cr_expect_str_eq(o.model, "llama3-8b");
    cr_expect_str_eq(o.scope, "model");
    cr_expect_str_eq(o.status, "ok");
    cr_expect_str_eq(o.dtype, "bf16");
    cr_expect_eq(o.hidden, 4096);
    cr_expect_eq(o.heads, 32);
    cr_expect_eq(o.kv_heads, 8);
    cr_expect_eq(o.head_dim, 128);
    cr_expect_eq(cpb_row_knob_int(&o, "head_chunk"), 0, "the option as asked (0 = default), not the resolved 8");
    cr_expect_eq(cpb_row_knob_int(&o, "offload_group"), 0, "a knob of another method is not the row's");
    /* throughput: S / step, per GPU, the layer's model FLOPs per GPU per second */
    o.step_s = 2.0;
    double f, b;
    cpb_layer_model_flops(&p, &f, &b);
    cr_expect_eq(o.mfu_causal, 0.0);
    o.peak_tflops = 989;
    cpb_row_rates(&o, f + b, cpb_layer_megatron_flops(&p), cpb_layer_nemo_flops(&p));
    cr_expect_float_eq(o.tokens_per_s, (double)p.S / 2.0, 1e-9);
    cr_expect_float_eq(o.tokens_per_s_per_gpu, (double)p.S / 16.0, 1e-9);
    cr_expect_float_eq(o.tflops_per_gpu, (f + b) / 8 / 2.0 / 1e12, 1e-12);
    cr_expect_float_eq(o.tflops_per_gpu_megatron, cpb_layer_megatron_flops(&p) / 8 / 2.0 / 1e12, 1e-12);
    cr_expect_float_eq(o.mfu_causal, o.tflops_per_gpu / 989, 1e-12);
    cr_expect_float_eq(o.mfu_megatron, o.tflops_per_gpu_megatron / 989, 1e-12);
    /* the model's columns come with the point */
    cr_expect_eq(o.model_layers, 32);
    cr_expect_eq(o.model_ffn, 14336);
    cr_expect_eq(o.model_vocab, 128256);
    cr_expect_eq(o.model_params, 8030261248.0);
    cr_expect_eq(o.model_mlp_matrices, 3);
    cr_expect_str_eq(o.model_act, "silu");
    cr_expect_str_eq(o.model_bias, "");
    cr_expect_str_eq(o.model_norm, "rmsnorm x2");
    o.step_s = 0;
    cpb_row_rates(&o, f + b, cpb_layer_megatron_flops(&p), cpb_layer_nemo_flops(&p));
    cr_expect_eq(o.tokens_per_s, 0.0, "no step time, no rates");
    cr_expect_eq(o.mfu_megatron, 0.0, "no step time, no MFU");
    cpb_row_set_status(&o, CPB_ERR_OOM, "needs 96 GiB");
    cr_expect_str_eq(o.status, "oom");
    cr_expect_str_eq(o.reason, "needs 96 GiB");
    cr_expect_eq(cpb_row_code_of_status(o.status), CPB_ERR_OOM);

    /* the same point is found again; another length is not; a row without a gpu matches */
    static cpb_row q;
    cpb_row_point(&q, m, &p, &cpb_backend_sim, "", "model");
    cr_expect(cpb_row_same_point(&o, &q));
    q.seq_len *= 2;
    cr_expect(!cpb_row_same_point(&o, &q));
    /* a knob is part of the point */
    cpb_knobs_set_int(&p.knobs, "head_chunk", 16);
    cpb_row_point(&q, m, &p, &cpb_backend_sim, "h100-sxm", "model");
    cr_expect_eq(cpb_row_knob_int(&q, "head_chunk"), 16);
    cr_expect(!cpb_row_same_point(&o, &q), "another head_chunk is another point");
    cr_expect_str_eq(cpb_row_knob_str(&o, "fpdt_impl"), "", "fpdt's knob is not upipe's");
}

/* The driver's knobs belong to their kind of point: --framework to model-scope rows,
 * --host-ram to the simulator's; both are columns and part of the point, so a resumed sweep
 * never takes a row made with other ones. */
Test(results_h5, framework_and_host_ram_are_columns_of_their_points)
{
    cpb_problem p;
    cr_assert_eq(cpb_preset_find("llama3-8b", &p), CPB_OK);
    p.S = 131072;
    p.C = 8;
    const cpb_method *m = cpb_method_find("fpdt");
    cr_assert_not_null(m);
    cpb_knobs given = {0};
    cpb_knobs_set_str(&given, "framework", "deepspeed");
    cpb_knobs_set_int(&given, "host_ram_bytes", 1LL << 40);
    char err[512] = "";
    cr_assert_eq(cpb_knobs_apply(m, &given, &p, err, sizeof err), CPB_OK, "%s", err);
    static cpb_row model, layer, cpu, q;
    cpb_row_point(&model, m, &p, &cpb_backend_sim, "h100-sxm", "model");
    cr_expect_str_eq(cpb_row_knob_str(&model, "framework"), "deepspeed");
    cr_expect_eq(cpb_row_knob_int(&model, "host_ram_bytes"), 1LL << 40);
    cr_expect_str_eq(cpb_row_knob_str(&model, "fpdt_impl"), "deepspeed", "fpdt's default schedule, by name");
    cpb_row_point(&layer, m, &p, &cpb_backend_sim, "h100-sxm", "layer");
    cr_expect_str_eq(cpb_row_knob_str(&layer, "framework"), "", "layer rows have no framework");
    cr_expect_eq(cpb_row_knob_int(&layer, "host_ram_bytes"), 1LL << 40, "a sim layer row has the host memory");
    cpb_row_point(&cpu, m, &p, &cpb_backend_cpu, "cpu", "layer");
    cr_expect_eq(cpb_row_knob_int(&cpu, "host_ram_bytes"), 0, "a measured row has no simulated host memory");
    /* no --framework is the default, by name; another framework, host memory or schedule is
     * another point */
    cpb_problem d = p;
    cr_assert_eq(cpb_knobs_apply(m, NULL, &d, err, sizeof err), CPB_OK, "%s", err);
    cpb_row_point(&q, m, &d, &cpb_backend_sim, "h100-sxm", "model");
    cr_expect_str_eq(cpb_row_knob_str(&q, "framework"), "torchtitan");
    cr_expect(!cpb_row_same_point(&model, &q));
    const char *knob[] = {"framework", "host_ram_bytes", "fpdt_impl"};
    for (int k = 0; k < 3; k++) {
        cpb_knobs g2 = given;
        if (k == 1) cpb_knobs_set_int(&g2, "host_ram_bytes", 0);
        else cpb_knobs_set_str(&g2, knob[k], k == 0 ? "torchtitan" : "pipelined");
        cr_assert_eq(cpb_knobs_apply(m, &g2, &d, err, sizeof err), CPB_OK, "%s", err);
        cpb_row_point(&q, m, &d, &cpb_backend_sim, "h100-sxm", "model");
        cr_expect(!cpb_row_same_point(&model, &q), "another %s is another point", knob[k]);
    }
    cpb_row_point(&q, m, &p, &cpb_backend_sim, "h100-sxm", "model");
    cr_expect(cpb_row_same_point(&model, &q));
}

/* a file of schema version 1 (written by the cpbench before the version 2 columns) still
 * reads: by column name, the columns it lacks zero; and it is refused for appending */
/* the rows of an older file of tests/data (cpb_results_read: by column name), n of them */
static cpb_row *read_old(const char *name, int64_t want)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", CPB_TEST_DATA, name);
    cpb_row *rows = NULL;
    int64_t n = 0;
    char err[1024] = "";
    cr_assert_eq(cpb_results_read(path, &rows, &n, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(n, want, "%s: %lld rows", name, (long long)n);
    return rows;
}

/* a copy of that file is refused for appending, the message naming its version */
static void old_refused(const char *name, const char *version)
{
    make_dir();
    char copy[512], cmd[1400];
    path_in_dir(copy, sizeof copy, name);
    snprintf(cmd, sizeof cmd, "cp '%s/%s' '%s'", CPB_TEST_DATA, name, copy);
    cr_assert_eq(system(cmd), 0);
    expect_refused_untouched(copy, version);
}

Test(results_h5, schema_1_files_read_and_are_not_appended_to)
{
    const int64_t n = 4;
    cpb_row *rows = read_old("results-schema1.h5", n);
    for (int64_t i = 0; i < n; i++) {
        cr_expect(strcmp(rows[i].method, "ulysses") == 0 || strcmp(rows[i].method, "upipe") == 0, "%s",
                  rows[i].method);
        cr_expect_str_eq(rows[i].status, "ok");
        cr_expect_eq(rows[i].world_size, 8);
        cr_expect_gt(rows[i].peak_bytes, 0);
        cr_expect_gt(rows[i].step_s, 0);
        if (strcmp(rows[i].method, "upipe") == 0 || strcmp(rows[i].method, "ulysses") == 0)
            cr_expect_eq(cpb_row_knob_int(&rows[i], "head_chunk"), 16, "the option column of version 1");
        cr_expect_eq(rows[i].seed, 0, "a column version 1 did not have");
    }
    free(rows);
    old_refused("results-schema1.h5", "schema version 1");
}

/* a file of schema version 2 (the model scope's columns and options, written by cpbench
 * before version 3: fpdt_impl a string[12] among the fixed columns, on every row) reads by
 * column name into the version 3 row, option columns included, and is refused for
 * appending */
Test(results_h5, schema_2_files_read_and_are_not_appended_to)
{
    const int64_t n = 3;
    cpb_row *rows = read_old("results-schema2.h5", n);
    /* fpdt at model scope in the deepspeed setup with --host-ram 1T; upipe --head-chunk 16;
     * fpdt --fpdt-impl pipelined (both layer rows) */
    cr_expect_str_eq(rows[0].method, "fpdt");
    cr_expect_str_eq(rows[0].scope, "model");
    cr_expect_str_eq(cpb_row_knob_str(&rows[0], "framework"), "deepspeed");
    cr_expect_eq(cpb_row_knob_int(&rows[0], "host_ram_bytes"), 1LL << 40);
    cr_expect_gt(rows[0].model_state_bytes, 0);
    cr_expect_eq(rows[0].model_state_bytes + rows[0].attn_act_bytes + rows[0].other_bytes, rows[0].peak_bytes);
    cr_expect_str_eq(cpb_row_knob_str(&rows[0], "fpdt_impl"), "deepspeed");
    cr_expect_str_eq(rows[1].method, "upipe");
    cr_expect_eq(cpb_row_knob_int(&rows[1], "head_chunk"), 16);
    cr_expect_str_eq(cpb_row_knob_str(&rows[1], "framework"), "");
    cr_expect_str_eq(cpb_row_knob_str(&rows[2], "fpdt_impl"), "pipelined");
    for (int64_t i = 0; i < n; i++) {
        cr_expect_str_eq(rows[i].status, "ok");
        cr_expect_eq(rows[i].y_norm, 0.0, "a column version 2 did not have");
    }
    free(rows);
    old_refused("results-schema2.h5", "schema version 2");
}

/* a file of schema version 3 (the cpbench before the refused status and the options
 * column): its "skipped" rows read as refused, the options column is empty, and the file
 * is refused for appending */
Test(results_h5, schema_3_files_read_skipped_as_refused_and_are_not_appended_to)
{
    const int64_t n = 2;
    cpb_row *rows = read_old("results-schema3.h5", n);
    cr_expect_str_eq(rows[0].method, "upipe");
    cr_expect_str_eq(rows[0].status, "refused", "'skipped' is what version 3 called a refusal");
    cr_expect_eq(rows[0].code, CPB_ERR_REFUSED);
    cr_expect_neq(rows[0].reason[0], 0, "the refusal's reason");
    cr_expect_str_eq(rows[1].status, "ok");
    cr_expect_eq(rows[1].code, CPB_OK);
    cr_expect_str_eq(rows[1].options, "", "a column version 3 did not have");
    free(rows);
    old_refused("results-schema3.h5", "schema version 3");
}

/* a file of schema version 5 (the cpbench before the model's columns, /models and the MFU
 * columns; written by `cpbench run --backend sim --method ulysses --model llama3-8b --gpus 8`
 * at 64K, then at 256K with --scope model): reads, the columns it lacks zero, and is
 * refused for appending */
Test(results_h5, schema_5_files_read_and_are_not_appended_to)
{
    const int64_t n = 2;
    cpb_row *rows = read_old("results-schema5.h5", n);
    cr_expect_str_eq(rows[0].scope, "layer");
    cr_expect_str_eq(rows[1].scope, "model");
    for (int64_t i = 0; i < n; i++) {
        cr_expect_str_eq(rows[i].status, "ok");
        cr_expect_gt(rows[i].tflops_per_gpu, 0);
        cr_expect_eq(rows[i].mfu_causal, 0.0, "a column version 5 did not have");
        cr_expect_eq(rows[i].model_params, 0.0, "a column version 5 did not have");
        cr_expect_str_eq(rows[i].model_norm, "");
    }
    free(rows);
    old_refused("results-schema5.h5", "schema version 5");
}

/* the text of a file (a config.json), NUL-terminated */
static char *text_of(const char *path)
{
    long n;
    char *b = slurp(path, &n);
    b[n] = 0;
    return b;
}

/* /models: one row per model the runs name, written before the first run row naming it and
 * never twice (a later session too): a preset's source, a --model-config file's whole text
 * and the numbers derived from it; a shape without a model has none.  The runs carry the
 * model's columns. */
Test(results_h5, models_table_describes_each_model)
{
    make_dir();
    char path[512], name[32], err[1024] = "";
    path_in_dir(path, sizeof path, "models.h5");
    const char *phi = CPB_TEST_DATA "/hf/Phi-2.json";
    cr_assert_eq(cpb_model_config_register(phi, name, sizeof name, err, sizeof err), CPB_OK, "%s", err);
    const cpb_method *m = cpb_method_find("ulysses");
    cr_assert(m);
    const char *models[] = {"llama3-8b", name, name, "custom"};
    for (int session = 0; session < 2; session++) {
        cpb_provenance pv;
        prov(&pv, "ulysses");
        cpb_results *f = NULL;
        cr_assert_eq(cpb_results_open(path, &pv, 0, &f, err, sizeof err), CPB_OK, "%s", err);
        for (int i = 0; i < 4; i++) {
            cpb_problem p;
            memset(&p, 0, sizeof p);
            if (strcmp(models[i], "custom") == 0) p.D = 64, p.H = 4, p.G = 4, p.d = 16;
            else cr_assert_eq(cpb_model_shape(models[i], &p), CPB_OK);
            p.S = 4096 * (i + 1);
            p.C = 8;
            static cpb_row r;
            cpb_row_point(&r, m, &p, &cpb_backend_sim, "h100-sxm", "layer");
            cr_assert_eq(cpb_results_append(f, &r, err, sizeof err), CPB_OK, "%s", err);
        }
        cpb_results_close(f);
    }
    cpb_row *rows;
    int64_t n;
    cr_assert_eq(cpb_results_read(path, &rows, &n, err, sizeof err), CPB_OK, "%s", err);
    cr_assert_eq(n, 8);
    cr_expect_eq(rows[0].model_params, 8030261248.0);
    cr_expect_str_eq(rows[0].model_norm, "rmsnorm x2");
    cr_expect_eq(rows[1].model_params, 2779683840.0);
    cr_expect_eq(rows[1].model_mlp_matrices, 2);
    cr_expect_str_eq(rows[1].model_act, "gelu_new");
    cr_expect_str_eq(rows[1].model_bias, "q,k,v,o,mlp,head");
    cr_expect_str_eq(rows[1].model_norm, "layernorm x1");
    cr_expect_eq(rows[1].model_layers, 32);
    cr_expect_eq(rows[3].model_layers, 0, "a shape without a model");
    free(rows);

    /* /models read with the plain HDF5 API, as any reader would */
    typedef struct {
        char name[32];
        char source[256];
        int64_t vocab;
        double params;
        char *config;
    } rec;
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(rec));
    hid_t s32 = H5Tcopy(H5T_C_S1), s256 = H5Tcopy(H5T_C_S1), vs = H5Tcopy(H5T_C_S1);
    H5Tset_size(s32, 32);
    H5Tset_size(s256, 256);
    H5Tset_size(vs, H5T_VARIABLE);
    H5Tinsert(t, "name", HOFFSET(rec, name), s32);
    H5Tinsert(t, "source", HOFFSET(rec, source), s256);
    H5Tinsert(t, "vocab", HOFFSET(rec, vocab), H5T_NATIVE_INT64);
    H5Tinsert(t, "params", HOFFSET(rec, params), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "config", HOFFSET(rec, config), vs);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "/models", H5P_DEFAULT);
    cr_assert_geq(d, 0, "a /models table");
    hid_t sp = H5Dget_space(d);
    hsize_t count = 0;
    H5Sget_simple_extent_dims(sp, &count, NULL);
    cr_assert_eq(count, 2, "llama3-8b and the Phi-2 file, once each (a shape without a model has none)");
    rec got[2];
    cr_assert_geq(H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, got), 0);
    cr_expect_str_eq(got[0].name, "llama3-8b");
    cr_expect_str_eq(got[0].source, "meta-llama/Meta-Llama-3-8B config.json");
    cr_expect_str_eq(got[0].config, "", "a preset: its fields are the runs' columns");
    cr_expect_eq(got[0].params, 8030261248.0);
    cr_expect_str_eq(got[1].name, name);
    cr_expect_str_eq(got[1].source, phi);
    cr_expect_eq(got[1].vocab, 51200);
    cr_expect_eq(got[1].params, 2779683840.0);
    char *want = text_of(phi);
    cr_expect_str_eq(got[1].config, want, "the config.json's whole text");
    free(want);
    H5Dvlen_reclaim(t, sp, H5P_DEFAULT, got);
    H5Sclose(sp);
    H5Dclose(d);
    H5Fclose(f);
    H5Tclose(t);
    H5Tclose(s32);
    H5Tclose(s256);
    H5Tclose(vs);
}
