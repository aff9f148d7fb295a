/* test_presets.c — the model presets match DESIGN.md section 1 and are found by name. */
#include <criterion/criterion.h>
#include <string.h>

#include "cpb_presets.h"

Test(presets, table_of_design_section_1)
{
    struct { const char *name; int64_t D; int H, G, d; double base; } want[] = {
        {"llama3-8b", 4096, 32, 8, 128, 500000},  {"qwen3-32b", 5120, 64, 8, 128, 1000000},
        {"llama3-70b", 8192, 64, 8, 128, 500000}, {"llama2-7b", 4096, 32, 32, 128, 10000},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        cpb_problem p;
        memset(&p, 0, sizeof p);
        p.S = 77; /* untouched by the preset */
        cr_assert_eq(cpb_preset_find(want[i].name, &p), CPB_OK, "%s", want[i].name);
        cr_assert_eq(p.D, want[i].D, "%s D", want[i].name);
        cr_assert_eq(p.H, want[i].H, "%s H", want[i].name);
        cr_assert_eq(p.G, want[i].G, "%s G", want[i].name);
        cr_assert_eq(p.d, want[i].d, "%s d", want[i].name);
        cr_assert_eq(p.rope_base, want[i].base, "%s rope base", want[i].name);
        cr_assert_str_eq(p.model, want[i].name);
        cr_assert_eq(p.S, 77, "cpb_preset_find sets only the shape fields");
    }
}

Test(presets, qwen_has_hd_not_equal_d)
{
    cpb_problem p;
    cr_assert_eq(cpb_preset_find("qwen3-32b", &p), CPB_OK);
    cr_assert_neq((int64_t)p.H * p.d, p.D, "the seed's 32B model has H*d != D, a shape tests need");
}

Test(presets, tiny_is_small_and_consistent)
{
    cpb_problem p;
    cr_assert_eq(cpb_preset_find("tiny", &p), CPB_OK);
    cr_assert(p.D <= 128 && p.H <= 16 && p.d <= 32, "tiny is small enough for the fp64 reference");
    cr_assert_eq(p.H % p.G, 0);
    cr_assert_eq(p.d % 2, 0);
    cr_assert(p.G < p.H, "tiny exercises GQA");
}

Test(presets, unknown_name_is_refused_and_writes_nothing)
{
    cpb_problem p;
    memset(&p, 0x5a, sizeof p);
    cpb_problem before = p;
    cr_assert_eq(cpb_preset_find("llama4-9000b", &p), CPB_ERR_INVALID);
    cr_assert_eq(cpb_preset_find(NULL, &p), CPB_ERR_INVALID);
    cr_assert(memcmp(&p, &before, sizeof p) == 0);
}

Test(presets, every_preset_is_listed_and_named_in_messages)
{
    cr_assert_eq(cpb_preset_count(), 5);
    const char *names = cpb_preset_names();
    for (int i = 0; i < cpb_preset_count(); i++) {
        const cpb_preset *p = cpb_preset_at(i);
        cr_assert_not_null(p);
        cr_assert_not_null(strstr(names, p->name), "%s missing from '%s'", p->name, names);
        cpb_problem q;
        cr_assert_eq(cpb_preset_find(p->name, &q), CPB_OK);
    }
    cr_assert_null(cpb_preset_at(cpb_preset_count()));
    cr_assert_null(cpb_preset_at(-1));
}
