/* test_args.c — option parsing (sizes, every option kind, errors naming the option) and
 * the problem built from the options. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "input_file.h"

static int parse(cpb_args *a, char *err, int argc, char **argv)
{
    cpb_args_defaults(a);
    err[0] = 0;
    return cpb_args_parse(argc, argv, a, err, 1024);
}
#define PARSE(a, err, ...)                                                                        \
    ({                                                                                           \
        char *argv_[] = {__VA_ARGS__};                                                           \
        parse(a, err, (int)(sizeof argv_ / sizeof argv_[0]), argv_);                             \
    })

Test(args, sizes_with_binary_suffixes)
{
    int64_t v;
    cr_assert_eq(cpb_parse_size("131072", &v), 0);
    cr_assert_eq(v, 131072);
    cr_assert_eq(cpb_parse_size("128K", &v), 0);
    cr_assert_eq(v, 131072);
    cr_assert_eq(cpb_parse_size("128k", &v), 0);
    cr_assert_eq(v, 131072);
    cr_assert_eq(cpb_parse_size("5M", &v), 0);
    cr_assert_eq(v, 5 * 1048576);
    cr_assert_eq(cpb_parse_size("1.5M", &v), 0);
    cr_assert_eq(v, 1572864);
    cr_assert_eq(cpb_parse_size("80G", &v), 0);
    cr_assert_eq(v, 80LL << 30);
    cr_assert_eq(cpb_parse_size("0", &v), 0);
    cr_assert_eq(v, 0);
    const char *bad[] = {"", "K", "-5", "+5", "1.3K", "12x", "1..5M", "abc", "1e3", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(cpb_parse_size(bad[i], &v), -1, "'%s' must be refused", bad[i]);
}

/* the one strict decimal parser of every number kind (input_file.h): no hex, no hex-float,
 * no sign, no blank, no inf or nan (issue 26 §8: "0x10" and "0x1p1" were taken) */
Test(args, strict_decimal_numbers)
{
    double v;
    const char *good[] = {"2", "0.5", ".5", "5.", "1e6", "1E-3", "500000.0", "010"};
    const double want[] = {2, 0.5, 0.5, 5, 1e6, 1e-3, 5e5, 10};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        cr_assert_eq(cpb_parse_decimal(good[i], &v), 0, "'%s' must be taken", good[i]);
        cr_expect_float_eq(v, want[i], 1e-12, "'%s'", good[i]);
    }
    const char *bad[] = {"", ".", "0x10", "0x1p1", "0X1P-2", "inf", "nan", "-1", "+1", " 1", "1 ", "1e", "1e+",
                         "1..2", "1.2.3", "1k", "1e999", "infinity"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(cpb_parse_decimal(bad[i], &v), -1, "'%s' must be refused", bad[i]);
    uint64_t u;
    cr_expect_eq(cpb_parse_decimal_u64("0x10", 100, &u), -1);
    cr_expect_eq(cpb_parse_decimal_u64("010", 100, &u), 0);
    cr_expect_eq(u, 10u);
}

Test(args, defaults)
{
    cpb_args a;
    cpb_args_defaults(&a);
    cr_assert_eq(a.dtype, CPB_BF16);
    cr_assert_str_eq(a.backend, "cpu");
    cr_assert_str_eq(a.scope, "layer");
    cr_assert_str_eq(a.comm, "nccl");
    cr_assert_eq(a.factor, 2.0);
    cr_assert_eq(a.profile_iter, -1);
    cr_assert_eq(a.seed, 1);
}

Test(args, every_kind_of_option)
{
    cpb_args a;
    char err[1024];
    int rc;
    rc = PARSE(&a, err, "--model", "tiny", "--hidden", "96", "--heads", "12", "--kv-heads", "4", "--head-dim", "8",
               "--rope-base", "5e5", "--seq", "1.5K", "--dtype", "fp32", "--seed", "42", "--dump", "out.h5",
               "--backend", "sim", "--gpus", "8", "--gpus-per-node", "4", "--gpu", "h200", "--scope", "model",
               "--head-chunk", "8", "--seq-chunk", "64K", "--offload-group", "2", "--ulysses-degree", "4",
               "--mem-cap", "80G", "--host-mem-cap", "512G", "--warmup", "0", "--iters", "7", "--out", "r.h5",
               "--seq-start", "128K", "--seq-stop", "8M", "--factor", "1.5", "--bisect", "64K", "--seq-list",
               "128K,3M,5M", "--isolate", "--profile-iter", "2", "--comm", "mpi", "--calibration", "cal.txt",
               "--expect-refuse", "--no-race-check", "--cases", "a.txt", "b.txt");
    cr_assert_eq(rc, CPB_OK, "%s", err);
    cr_assert_str_eq(a.model, "tiny");
    cr_assert_eq(a.hidden, 96);
    cr_assert_eq(a.heads, 12);
    cr_assert_eq(a.kv_heads, 4);
    cr_assert_eq(a.head_dim, 8);
    cr_assert_eq(a.rope_base, 5e5);
    cr_assert_eq(a.seq, 1536);
    cr_assert_eq(a.dtype, CPB_FP32);
    cr_assert_eq(a.seed, 42);
    cr_assert_str_eq(a.dump, "out.h5");
    cr_assert_str_eq(a.backend, "sim");
    cr_assert_eq(a.gpus, 8);
    cr_assert_eq(a.gpus_per_node, 4);
    cr_assert_str_eq(a.gpu, "h200");
    cr_assert_str_eq(a.scope, "model");
    cr_assert_eq(cpb_knobs_find(&a.knobs, "head_chunk")->i, 8);
    cr_assert_eq(cpb_knobs_find(&a.knobs, "seq_chunk")->i, 65536);
    cr_assert_eq(cpb_knobs_find(&a.knobs, "offload_group")->i, 2);
    cr_assert_eq(cpb_knobs_find(&a.knobs, "ulysses_degree")->i, 4);
    cr_assert_eq(a.mem_cap, 80LL << 30);
    cr_assert_eq(a.host_mem_cap, 512LL << 30);
    cr_assert_eq(a.warmup, 0);
    cr_assert_eq(a.iters, 7);
    cr_assert_str_eq(a.out, "r.h5");
    cr_assert_eq(a.seq_start, 131072);
    cr_assert_eq(a.seq_stop, 8 << 20);
    cr_assert_eq(a.factor, 1.5);
    cr_assert_eq(a.bisect, 65536);
    cr_assert_eq(a.n_seq_list, 3);
    cr_assert_eq(a.seq_list[0], 131072);
    cr_assert_eq(a.seq_list[1], 3 << 20);
    cr_assert_eq(a.seq_list[2], 5 << 20);
    cr_assert_eq(a.isolate, 1);
    cr_assert_eq(a.profile_iter, 2);
    cr_assert_str_eq(a.comm, "mpi");
    cr_assert_str_eq(a.calibration, "cal.txt");
    cr_assert_eq(a.expect_refuse, 1);
    cr_assert_eq(a.no_race_check, 1);
    cr_assert_eq(a.n_cases, 2);
    cr_assert_str_eq(a.cases[0], "a.txt");
    cr_assert_str_eq(a.cases[1], "b.txt");
}

Test(args, framework_fpdt_impl_and_host_ram)
{
    cpb_args a;
    char err[1024];
    cr_assert_eq(PARSE(&a, err, "--framework", "deepspeed", "--fpdt-impl", "pipelined", "--host-ram", "2T"), CPB_OK,
                 "%s", err);
    cr_expect_str_eq(cpb_knobs_find(&a.knobs, "framework")->s, "deepspeed");
    cr_expect_str_eq(cpb_knobs_find(&a.knobs, "fpdt_impl")->s, "pipelined");
    cr_expect_eq(cpb_knobs_find(&a.knobs, "host_ram_bytes")->i, 2LL << 40);
    const cpb_method *fpdt = cpb_method_find("fpdt"), *ring = cpb_method_find("ring");
    cr_assert(fpdt && ring);
    cpb_problem p;
    snprintf(a.model, sizeof a.model, "tiny");
    a.seq = 64;
    cr_assert_eq(cpb_args_problem(&a, fpdt, 2, &p, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_str_eq(cpb_knob_str(&p, "fpdt_impl"), "pipelined");
    cr_expect_str_eq(cpb_knob_str(&p, "framework"), "deepspeed");
    cr_expect_eq(cpb_knob_int(&p, "host_ram_bytes"), 2LL << 40);
    /* the simulator's knobs come with every method, fpdt's only with fpdt */
    cr_assert_eq(cpb_args_problem(&a, ring, 2, &p, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_str_eq(cpb_knob_str(&p, "fpdt_impl"), "");
    cr_expect_eq(cpb_knob_int(&p, "host_ram_bytes"), 2LL << 40);
    cpb_args_defaults(&a);
    snprintf(a.model, sizeof a.model, "tiny");
    a.seq = 64;
    cr_assert_eq(cpb_args_problem(&a, fpdt, 2, &p, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_str_eq(cpb_knob_str(&p, "fpdt_impl"), "deepspeed", "deepspeed is fpdt's default");
    cr_expect_str_eq(cpb_knob_str(&p, "framework"), "torchtitan", "torchtitan is the model scope's default");
    cr_expect_eq(cpb_knob_int(&p, "host_ram_bytes"), 0, "0: the GPU profile's");
}

Test(args, equals_form_and_cases_stop_at_next_option)
{
    cpb_args a;
    char err[1024];
    cr_assert_eq(PARSE(&a, err, "--seq=4K", "--cases", "x.txt", "y.txt", "--dtype=fp32", "--help"), CPB_OK, "%s", err);
    cr_assert_eq(a.seq, 4096);
    cr_assert_eq(a.n_cases, 2);
    cr_assert_eq(a.dtype, CPB_FP32);
    cr_assert_eq(a.help, 1);
}

/* each error: code 2 and a message naming the option (and what it accepts) */
static void expect_error(int rc, const char *err, const char *must_contain, const char *also)
{
    cr_assert_eq(rc, CPB_ERR_INVALID, "expected an error mentioning %s", must_contain);
    cr_assert_eq(CPB_ERR_INVALID, 2, "the exit code of a bad argument is 2");
    cr_assert_not_null(strstr(err, must_contain), "'%s' does not name %s", err, must_contain);
    if (also) cr_assert_not_null(strstr(err, also), "'%s' does not say %s", err, also);
}

Test(args, errors_name_the_option)
{
    cpb_args a;
    char err[1024];
    expect_error(PARSE(&a, err, "--bogus", "1"), err, "--bogus", "unknown option");
    expect_error(PARSE(&a, err, "--seq"), err, "--seq", "missing value");
    expect_error(PARSE(&a, err, "--seq", "--dtype", "fp32"), err, "--seq", "missing value");
    expect_error(PARSE(&a, err, "--seq", "12q"), err, "--seq", "128K");
    expect_error(PARSE(&a, err, "--seq", "0"), err, "--seq", "positive");
    expect_error(PARSE(&a, err, "--heads", "-3"), err, "--heads", "positive");
    expect_error(PARSE(&a, err, "--dtype", "fp16"), err, "--dtype", "fp32 or bf16");
    expect_error(PARSE(&a, err, "--model", "gpt5"), err, "gpt5", "llama3-8b");
    expect_error(PARSE(&a, err, "--method", "no-such-method"), err, "no-such-method", "all");
    expect_error(PARSE(&a, err, "--method", "all,"), err, "--method", NULL);
    expect_error(PARSE(&a, err, "--backend", "tpu"), err, "--backend", "cpu, sim, cuda");
    expect_error(PARSE(&a, err, "--scope", "world"), err, "--scope", "layer|model");
    expect_error(PARSE(&a, err, "--factor", "-2"), err, "--factor", "positive");
    expect_error(PARSE(&a, err, "--seq-list", "1K,,2K"), err, "--seq-list", NULL);
    expect_error(PARSE(&a, err, "--cases"), err, "--cases", "missing value");
    expect_error(PARSE(&a, err, "--isolate=1"), err, "--isolate", "no value");
    expect_error(PARSE(&a, err, "stray"), err, "stray", "unexpected argument");
    expect_error(PARSE(&a, err, "--host-mem-cap", "1P"), err, "--host-mem-cap", "2G");
    expect_error(PARSE(&a, err, "--framework", "nosuch"), err, "--framework", "torchtitan|deepspeed");
    expect_error(PARSE(&a, err, "--fpdt-impl", "fast"), err, "--fpdt-impl", "deepspeed|pipelined");
    expect_error(PARSE(&a, err, "--host-ram", "-1"), err, "--host-ram", "2T");
    expect_error(PARSE(&a, err, "--host-ram", "1P"), err, "--host-ram", "bytes");
}

Test(args, methods_all_and_lists)
{
    cpb_args a;
    char err[1024];
    const cpb_method *m[64];
    cpb_args_defaults(&a);
    cr_assert_eq(cpb_args_methods(&a, m, 64, err, sizeof err), -1, "--method is required");
    cr_assert_not_null(strstr(err, "--method"));
    cr_assert_eq(PARSE(&a, err, "--method", "all"), CPB_OK, "%s", err);
    int n = cpb_args_methods(&a, m, 64, err, sizeof err);
    if (cpb_method_count() == 0) {
        cr_assert_eq(n, -1);
        return;
    }
    cr_assert_eq(n, cpb_method_count());
    for (int i = 0; i < n; i++) cr_assert_eq(m[i], cpb_method_at(i));
    /* a list in the given order, repeated names kept */
    char list[256];
    const char *first = cpb_method_at(0)->name, *last = cpb_method_at(cpb_method_count() - 1)->name;
    snprintf(list, sizeof list, "%s,%s", last, first);
    cr_assert_eq(PARSE(&a, err, "--method", list), CPB_OK, "%s", err);
    cr_assert_eq(cpb_args_methods(&a, m, 64, err, sizeof err), 2);
    cr_assert_str_eq(m[0]->name, last);
    cr_assert_str_eq(m[1]->name, first);
}

static int problem(cpb_problem *p, char *err, const char *method, int C, int argc, char **argv)
{
    cpb_args a;
    cpb_args_defaults(&a);
    cr_assert_eq(cpb_args_parse(argc, argv, &a, err, 1024), CPB_OK, "%s", err);
    const cpb_method *m = method ? cpb_method_find(method) : NULL;
    cr_assert(!method || m, "method %s", method);
    return cpb_args_problem(&a, m, C, p, err, 1024);
}
/* the problem of method M (a name, or NULL for none) on C ranks */
#define PROBLEM(p, err, M, C, ...)                                                                \
    ({                                                                                           \
        char *argv_[] = {__VA_ARGS__};                                                           \
        problem(p, err, M, C, (int)(sizeof argv_ / sizeof argv_[0]), argv_);                     \
    })

Test(args, problem_from_preset_and_overrides)
{
    cpb_problem p;
    char err[1024];
    cr_assert_eq(PROBLEM(&p, err, "upipe", 8, "--model", "llama3-8b", "--seq", "1M", "--head-chunk", "8", "--seq-chunk",
                         "64K"),
                 CPB_OK, "%s", err);
    cr_assert_eq(p.D, 4096);
    cr_assert_eq(p.H, 32);
    cr_assert_eq(p.G, 8);
    cr_assert_eq(p.d, 128);
    cr_assert_eq(p.rope_base, 500000);
    cr_assert_eq(p.S, 1 << 20);
    cr_assert_eq(p.C, 8);
    cr_assert_eq(p.dtype, CPB_BF16);
    cr_assert_str_eq(p.model, "llama3-8b");
    /* each method takes its own knobs, the others' are not in its problem */
    cr_assert_eq(cpb_knob_int(&p, "head_chunk"), 8);
    cr_assert_null(cpb_knobs_find(&p.knobs, "seq_chunk"), "upipe has no seq_chunk");
    cr_assert_eq(PROBLEM(&p, err, "fpdt", 8, "--model", "llama3-8b", "--seq", "1M", "--head-chunk", "8", "--seq-chunk",
                         "64K"),
                 CPB_OK, "%s", err);
    cr_assert_eq(cpb_knob_int(&p, "seq_chunk"), 65536);
    cr_assert_null(cpb_knobs_find(&p.knobs, "head_chunk"), "fpdt has no head_chunk");
    /* a knob not given takes its default ("0": the method decides) */
    cr_assert_eq(PROBLEM(&p, err, "usp", 8, "--model", "llama3-8b", "--seq", "1M"), CPB_OK, "%s", err);
    cr_assert_not_null(cpb_knobs_find(&p.knobs, "ulysses_degree"));
    cr_assert_eq(cpb_knob_int(&p, "ulysses_degree"), 0);
    cr_assert_eq(PROBLEM(&p, err, NULL, 3, "--model", "tiny", "--hidden", "48", "--heads", "6", "--kv-heads", "3",
                         "--head-dim", "10", "--rope-base", "1e6", "--seq", "96", "--dtype", "fp32"),
                 CPB_OK, "%s", err);
    cr_assert_eq(p.D, 48);
    cr_assert_eq(p.H, 6);
    cr_assert_eq(p.G, 3);
    cr_assert_eq(p.d, 10);
    cr_assert_eq(p.rope_base, 1e6);
    cr_assert_eq(p.S, 96);
    cr_assert_eq(p.dtype, CPB_FP32);
}

static void expect_refused(int rc, const char *err, const char *must_contain)
{
    cr_assert_eq(rc, CPB_ERR_REFUSED, "expected a refusal mentioning %s (%s)", must_contain, err);
    cr_assert_not_null(strstr(err, must_contain), "'%s' does not name %s", err, must_contain);
}

Test(args, problem_validation_messages)
{
    cpb_problem p;
    char err[1024];
    expect_error(PROBLEM(&p, err, NULL, 4, "--model", "tiny", "--seq", "250"), err, "--seq 250", "multiple of 4");
    expect_error(PROBLEM(&p, err, NULL, 4, "--model", "tiny", "--seq", "256", "--heads", "6", "--kv-heads", "4"), err,
                 "--heads 6", "--kv-heads 4");
    expect_error(PROBLEM(&p, err, NULL, 2, "--model", "tiny", "--seq", "256", "--head-dim", "7"), err, "--head-dim 7",
                 "even");
    expect_error(PROBLEM(&p, err, NULL, 2, "--model", "tiny"), err, "--seq", "required");
    expect_error(PROBLEM(&p, err, NULL, 2, "--seq", "256"), err, "--model", "tiny");
    expect_error(PROBLEM(&p, err, NULL, 2, "--model", "tiny", "--seq", "256", "--rope-base", "0.5"), err, "--rope-base",
                 "greater than 1");
    /* the knobs' checks, from the methods' tables: the method refuses the option at this
     * shape (a sweep records the point refused) */
    expect_refused(PROBLEM(&p, err, "fpdt", 4, "--model", "tiny", "--seq", "256", "--seq-chunk", "96"), err,
                   "--seq-chunk");
    expect_refused(PROBLEM(&p, err, "upipe", 4, "--model", "tiny", "--seq", "256", "--head-chunk", "3"), err,
                   "--head-chunk 3");
    expect_refused(PROBLEM(&p, err, "usp", 6, "--model", "tiny", "--seq", "240", "--ulysses-degree", "4"), err,
                   "--ulysses-degree 4");
    expect_refused(PROBLEM(&p, err, "offload", 2, "--model", "tiny", "--seq", "256", "--offload-group", "99"), err,
                   "--offload-group 99");
    /* another method ignores them */
    cr_expect_eq(PROBLEM(&p, err, "ulysses", 4, "--model", "tiny", "--seq", "256", "--head-chunk", "3"), CPB_OK, "%s",
                 err);
}

/* the command's check: an option given twice, an option the command or its backend does not
 * use, a method option no method given takes: each refused with the option's name */
static int check(cpb_args *a, char *err, cpb_cmd_id cmd, int argc, char **argv)
{
    int rc = parse(a, err, argc, argv);
    return rc != CPB_OK ? rc : cpb_args_check_command(a, cmd, err, 1024);
}
#define CHECK(a, err, cmd, ...)                                                                   \
    ({                                                                                           \
        char *argv_[] = {__VA_ARGS__};                                                           \
        check(a, err, cmd, (int)(sizeof argv_ / sizeof argv_[0]), argv_);                         \
    })

Test(args, repeated_and_ignored_options_are_refused)
{
    cpb_args a;
    char err[1024];
    expect_error(PARSE(&a, err, "--seq", "256", "--seq", "512"), err, "--seq is given twice", NULL);
    expect_error(PARSE(&a, err, "--isolate", "--isolate"), err, "--isolate is given twice", NULL);
    expect_error(PARSE(&a, err, "--head-chunk", "4", "--head-chunk=8"), err, "--head-chunk is given twice", NULL);
    expect_error(CHECK(&a, err, CPB_CMD_list, "--seq", "5"), err, "--seq", "`cpbench list` does not use");
    expect_error(PARSE(&a, err, "--format", "json", "--format=flat"), err, "--format is given twice", NULL);
    expect_error(PARSE(&a, err, "--format", "xml"), err, "--format 'xml'", "text|json|flat");
    expect_error(CHECK(&a, err, CPB_CMD_run, "--format", "json"), err, "--format", "(it is for: list)");
    cr_expect_eq(CHECK(&a, err, CPB_CMD_list, "--format", "flat"), CPB_OK, "%s", err);
    expect_error(CHECK(&a, err, CPB_CMD_sweep, "--seq", "5"), err, "--seq", "verify, run");
    expect_error(CHECK(&a, err, CPB_CMD_run, "--backend", "sim", "--seed", "3"), err, "--seed", "sim backend does not");
    expect_error(CHECK(&a, err, CPB_CMD_run, "--backend", "cpu", "--gpu", "h200"), err, "--gpu", "cpu backend");
    expect_error(CHECK(&a, err, CPB_CMD_run, "--backend", "cpu", "--comm", "mpi"), err, "--comm", "cuda backend");
    /* --timeout bounds a simulated point too (issue 26 §7); a command without trials refuses it */
    cr_assert_eq(CHECK(&a, err, CPB_CMD_run, "--backend", "sim", "--timeout", "60"), CPB_OK, "%s", err);
    expect_error(CHECK(&a, err, CPB_CMD_list, "--timeout", "60"), err, "--timeout", "`cpbench list` does not use");
    expect_error(CHECK(&a, err, CPB_CMD_run, "--backend", "sim", "--seq-stop", "1M"), err, "--scope model", NULL);
    expect_error(CHECK(&a, err, CPB_CMD_run, "--force"), err, "--force", "--out or --dump");
    expect_error(CHECK(&a, err, CPB_CMD_fingerprints, "--backend", "sim", "--results", "x.h5"), err, "--backend", NULL);
    expect_error(CHECK(&a, err, CPB_CMD_run, "--method", "ring", "--head-chunk", "4"), err, "--head-chunk",
                 "none of the methods given (--method ring)");
    expect_error(CHECK(&a, err, CPB_CMD_run, "--backend", "cpu", "--host-ram", "1T"), err, "--host-ram", "sim");
    expect_error(CHECK(&a, err, CPB_CMD_run, "--backend", "sim", "--framework", "deepspeed"), err, "--framework",
                 "--scope model");
    expect_error(CHECK(&a, err, CPB_CMD_run, "--warmup", "1", "--iters", "2", "--profile-iter", "3"), err,
                 "--profile-iter 3", "0 to 2");
    /* what each takes */
    cr_expect_eq(CHECK(&a, err, CPB_CMD_sweep, "--method", "ring,upipe", "--head-chunk", "4", "--backend", "sim"), CPB_OK,
                 "%s", err);
    cr_expect_eq(CHECK(&a, err, CPB_CMD_run, "--backend", "sim", "--scope", "model", "--seq-stop", "1M", "--framework",
                       "deepspeed"), CPB_OK, "%s", err);
    cr_expect_eq(CHECK(&a, err, CPB_CMD_selftest, "--comm", "mpi"), CPB_OK, "the tools default to cuda: %s", err);
    cr_expect_eq(CHECK(&a, err, CPB_CMD_verify, "--dump", "d.h5", "--force"), CPB_OK, "%s", err);
}

Test(args, numbers_are_plain_decimal_and_bounded)
{
    cpb_args a;
    char err[1024];
    expect_error(PARSE(&a, err, "--seed", " -1"), err, "--seed ' -1'", "digits only");
    expect_error(PARSE(&a, err, "--seed", "-1"), err, "--seed", NULL);
    expect_error(PARSE(&a, err, "--seed", "0x10"), err, "--seed", NULL);
    expect_error(PARSE(&a, err, "--seed", "9223372036854775808"), err, "--seed", "9223372036854775807");
    cr_assert_eq(PARSE(&a, err, "--seed", "010"), CPB_OK, "%s", err);
    cr_expect_eq(a.seed, 10, "010 is ten, not octal");
    expect_error(PARSE(&a, err, "--gpus", "2147483647"), err, "--gpus", "at most 65536");
    cr_assert_eq(PARSE(&a, err, "--gpus", "64K"), CPB_OK, "%s", err);
    cr_expect_eq(a.gpus, CPB_MAX_GPUS);
    expect_error(PARSE(&a, err, "--gpus", "65537"), err, "--gpus", NULL);
    expect_error(PARSE(&a, err, "--iters", "2147483647"), err, "--iters", "at most 1000000");
    expect_error(PARSE(&a, err, "--factor", " 2"), err, "--factor", NULL);
    expect_error(PARSE(&a, err, "--factor", "inf"), err, "--factor", NULL);
    expect_error(PARSE(&a, err, "--timeout", "nan"), err, "--timeout", NULL);
    expect_error(PARSE(&a, err, "--method", "ring,ring"), err, "ring is listed twice", NULL);
}

/* every product of sizes within int64: refused with the sizes named, never negative */
Test(args, sizes_that_would_overflow_are_refused)
{
    cpb_problem p;
    char err[1024];
    expect_error(PROBLEM(&p, err, NULL, 8, "--model", "llama3-8b", "--seq", "8388608G"), err, "--seq 9007199254740992",
                 "--seq at most");
    for (const char *c = err; *c; c++)
        cr_expect(!(c[0] == '-' && c[1] >= '0' && c[1] <= '9'), "no negative number in '%s'", err);
    expect_error(PROBLEM(&p, err, NULL, 8, "--model", "llama3-8b", "--seq", "1M", "--hidden", "64T"), err, "--hidden",
                 "2^56");
    expect_error(PROBLEM(&p, err, NULL, 8, "--model", "llama3-8b", "--seq", "1M", "--head-dim", "200000000"), err,
                 "--head-dim", NULL);
    cr_expect_eq(PROBLEM(&p, err, NULL, 8, "--model", "llama3-8b", "--seq", "16G"), CPB_OK, "a long but sound length: %s",
                 err);
}

/* what the ranks compare: the same options whatever their spelling and order */
Test(args, canonical_text_is_the_same_for_the_same_options)
{
    cpb_args a, b;
    char err[1024], ta[4096], tb[4096];
    cr_assert_eq(PARSE(&a, err, "--seq", "128K", "--mem-cap", "40G", "--method", "ring"), CPB_OK, "%s", err);
    cr_assert_eq(PARSE(&b, err, "--method=ring", "--mem-cap", "42949672960", "--seq", "131072"), CPB_OK, "%s", err);
    cpb_args_canonical(&a, ta, sizeof ta);
    cpb_args_canonical(&b, tb, sizeof tb);
    cr_expect_str_eq(ta, tb);
    cr_assert_eq(PARSE(&b, err, "--method=ring", "--mem-cap", "40G", "--seq", "256K"), CPB_OK, "%s", err);
    cpb_args_canonical(&b, tb, sizeof tb);
    cr_expect_str_neq(ta, tb);
}

/* a calibration file is in the point key by its contents; a FIFO or device is refused
 * rather than read forever */
Test(args, calibration_by_contents_and_never_a_fifo, .timeout = 20)
{
    cpb_args a;
    char err[1024], opts[256];
    cr_assert_eq(PARSE(&a, err, "--calibration", "/dev/zero"), CPB_OK, "%s", err);
    cr_expect_eq(cpb_args_point_options(&a, "sim", opts, sizeof opts, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "not a regular file") != NULL, "%s", err);
    cr_assert_eq(PARSE(&a, err, "--calibration", "/etc/hostname"), CPB_OK, "%s", err);
    cr_assert_eq(cpb_args_point_options(&a, "sim", opts, sizeof opts, err, sizeof err), CPB_OK, "%s", err);
    cr_expect(strncmp(opts, "calibration=fnv1a64:", 20) == 0, "%s", opts);
    cr_assert_eq(cpb_args_point_options(&a, "cpu", opts, sizeof opts, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_str_eq(opts, "", "the simulator's option is not a cpu point's");
}

/* `cpbench CMD --help`: the option table says which command takes which option, and a
 * command's help lists those only (issue 25) */
Test(args, command_help_lists_the_command_options_only)
{
    cr_expect_eq(cpb_args_command_takes(CPB_CMD_plan, "--max-context"), 1);
    cr_expect_eq(cpb_args_command_takes(CPB_CMD_plan, "--cases"), 0);
    cr_expect_eq(cpb_args_command_takes(CPB_CMD_sweep, "--seq-list"), 1);
    cr_expect_eq(cpb_args_command_takes(CPB_CMD_run, "--seq-list"), 0);
    cr_expect_eq(cpb_args_command_takes(CPB_CMD_list, "--format"), 1);
    cr_expect_eq(cpb_args_command_takes(CPB_CMD_run, "--no-such-option"), -1);
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    cpb_args_command_usage(f, CPB_CMD_plan);
    fclose(f);
    cr_expect(strstr(buf, "`cpbench plan`") && strstr(buf, "  --max-context") && strstr(buf, "  --seq "), "%s", buf);
    cr_expect(!strstr(buf, "  --cases") && !strstr(buf, "  --seq-list") && !strstr(buf, "  --format"), "%s", buf);
    free(buf);
    f = open_memstream(&buf, &n);
    cpb_args_command_usage(f, CPB_CMD_list);
    fclose(f);
    cr_expect(strstr(buf, "  --format") && !strstr(buf, "  --method") && !strstr(buf, "Method options"), "%s", buf);
    free(buf);
    f = open_memstream(&buf, &n);
    cpb_args_usage(f);
    fclose(f);
    cr_expect(strstr(buf, "  --cases") && strstr(buf, "  --max-context") && strstr(buf, "  --format"), "%s", buf);
    free(buf);
}
