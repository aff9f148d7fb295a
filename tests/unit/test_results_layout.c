/* test_results_layout.c — the results layout and its schema version move together
 * (results_h5.h: CPB_RESULTS_LAYOUTS).  The fingerprint is recomputed from the HDF5 types
 * this build writes; when it is not the one recorded for CPB_RESULTS_SCHEMA_VERSION, a
 * column changed (CPB_ROW_COLUMNS, a method's knob, a string's width, a tag) without the
 * version bump that keeps an older build from appending to the new files, and the failure
 * says which line to add. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "results_h5.h"

typedef struct layout_line {
    int version;
    unsigned long long fingerprint;
} layout_line;

static const layout_line lines[] = {
#define L_(v, f) {v, f},
    CPB_RESULTS_LAYOUTS(L_)
#undef L_
};
enum { N_LINES = sizeof lines / sizeof lines[0] };

Test(results_layout, the_layout_changes_only_with_the_version)
{
    static char text[1 << 16];
    const unsigned long long fp = cpb_results_layout(text, sizeof text);
    const layout_line *last = &lines[N_LINES - 1];
    cr_assert_eq(last->version, CPB_RESULTS_SCHEMA_VERSION,
                 "the last line of CPB_RESULTS_LAYOUTS is version %d, but CPB_RESULTS_SCHEMA_VERSION is %d: append "
                 "X(%d, 0x%016llxull) to CPB_RESULTS_LAYOUTS in driver/results_h5.h",
                 last->version, CPB_RESULTS_SCHEMA_VERSION, CPB_RESULTS_SCHEMA_VERSION, fp);
    if (last->fingerprint != fp) fprintf(stderr, "this build's results layout:\n%s", text);
    cr_assert_eq(last->fingerprint, fp,
                 "the results layout changed: bump CPB_RESULTS_SCHEMA_VERSION to %d and append X(%d, 0x%016llxull) "
                 "to CPB_RESULTS_LAYOUTS in driver/results_h5.h, and say what changed under \"Schema changes\" in "
                 "results/README.md.  (Merging branches that each bumped to version %d: no file of it was kept, so "
                 "replace its line with X(%d, 0x%016llxull) instead.)  The layout is printed above.",
                 CPB_RESULTS_SCHEMA_VERSION + 1, CPB_RESULTS_SCHEMA_VERSION + 1, fp, CPB_RESULTS_SCHEMA_VERSION,
                 CPB_RESULTS_SCHEMA_VERSION, fp);
}

/* versions only grow, and a layout is never recorded under two versions: an earlier line
 * was edited, or a bump was made without a change */
Test(results_layout, the_history_is_ordered_and_distinct)
{
    for (int i = 1; i < N_LINES; i++) {
        cr_expect_gt(lines[i].version, lines[i - 1].version, "CPB_RESULTS_LAYOUTS: version %d after %d",
                     lines[i].version, lines[i - 1].version);
        for (int j = 0; j < i; j++)
            cr_expect_neq(lines[i].fingerprint, lines[j].fingerprint,
                          "CPB_RESULTS_LAYOUTS: versions %d and %d record the same layout", lines[j].version,
                          lines[i].version);
    }
}

/* the description is the stored types: it names every column, and a knob column by its
 * knob (so a knob added to a method's table changes the fingerprint) */
Test(results_layout, describes_every_column_and_tag)
{
    static char text[1 << 16];
    static char text2[1 << 16];
    unsigned long long fp = cpb_results_layout(text, sizeof text);
    cr_expect_eq(cpb_results_layout(text2, sizeof text2), fp, "a pure function of the build");
    cr_expect_str_eq(text, text2);
    for (const char *const *c = cpb_results_column_names(); *c; c++) {
        char want[80];
        snprintf(want, sizeof want, "%s:", *c);
        cr_expect(strstr(text, want), "column %s is in the layout", *c);
    }
    cr_expect(strstr(text, "reason:s1024"), "a string's width is part of the layout:\n%s", text);
    cr_expect(strstr(text, "at_peak_bytes:a"), "arrays are part of the layout");
    cr_expect(strstr(text, "at_peak_tags{"), "the tags at_peak_bytes is indexed by");
    /* truncated text still gives the same fingerprint */
    char small[16];
    cr_expect_eq(cpb_results_layout(small, sizeof small), fp);
    cr_expect_eq(strlen(small), sizeof small - 1);
    cr_expect_eq(cpb_results_layout(NULL, 0), fp);
}
