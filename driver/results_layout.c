/* results_layout.c — the results layout this build writes, described from the HDF5 types
 * themselves (results_h5.h: cpb_results_layout).  Derived from the stored types, not from a
 * list kept beside them: a column added to CPB_ROW_COLUMNS, a knob added to any method's
 * table, a string widened or a tag added all change what an older build would refuse to
 * append to, and all change this description. */
#include <hdf5.h>
#include <stdio.h>
#include <string.h>

#include "results_h5.h"
#include "results_h5_check.h"

typedef struct layout_text {
    char *out;
    size_t len, used;   /* used counts every byte, including those past len */
    uint64_t hash;      /* FNV-1a 64 of every byte */
} layout_text;

static void put(layout_text *t, const char *s)
{
    for (const char *c = s; *c; c++) {
        t->hash = (t->hash ^ (unsigned char)*c) * 1099511628211ull;
        if (t->out && t->used + 1 < t->len) t->out[t->used] = *c;
        t->used++;
    }
    if (t->out && t->len) t->out[t->used < t->len ? t->used : t->len - 1] = 0;
}

/* one member type: class letter and byte size; arrays also their dimensions and base */
static void put_type(layout_text *t, hid_t ty)
{
    char b[96];
    const size_t size = H5Tget_size(ty);
    switch (H5Tget_class(ty)) {
    case H5T_INTEGER: snprintf(b, sizeof b, "i%zu", size); break;
    case H5T_FLOAT: snprintf(b, sizeof b, "f%zu", size); break;
    case H5T_STRING:
        snprintf(b, sizeof b, "%s%zu", H5Tis_variable_str(ty) > 0 ? "vs" : "s", H5Tis_variable_str(ty) > 0 ? 0 : size);
        break;
    case H5T_ARRAY: {
        hsize_t dims[4] = {0};
        int nd = H5Tget_array_ndims(ty);
        if (nd < 1 || nd > 4) nd = 0;
        else H5Tget_array_dims2(ty, dims);
        snprintf(b, sizeof b, "a%llu[", nd ? (unsigned long long)dims[0] : 0ull);
        put(t, b);
        hid_t base = H5Tget_super(ty);
        put_type(t, base);
        H5Tclose(base);
        put(t, "]");
        return;
    }
    default: snprintf(b, sizeof b, "c%d.%zu", (int)H5Tget_class(ty), size); break;
    }
    put(t, b);
}

/* a table: "name{member:type,...}" in the stored order */
static void put_table(layout_text *t, const char *name, int which)
{
    hid_t ty = cpb_results_file_type(which);
    put(t, name);
    put(t, "{");
    const int n = H5Tget_nmembers(ty);
    for (int i = 0; i < n; i++) {
        char *mname = H5Tget_member_name(ty, (unsigned)i);
        hid_t mt = H5Tget_member_type(ty, (unsigned)i);
        if (i) put(t, ",");
        put(t, mname ? mname : "?");
        put(t, ":");
        put_type(t, mt);
        H5Tclose(mt);
        H5free_memory(mname);
    }
    put(t, "}\n");
    H5Tclose(ty);
}

uint64_t cpb_results_layout(char *text, size_t len)
{
    layout_text t = {text, len, 0, 1469598103934665603ull};
    if (text && len) text[0] = 0;
    put_table(&t, "runs", 1);
    put_table(&t, "sessions", 0);
    put_table(&t, "models", 2);
    /* the at_peak_bytes array's tag names (the at_peak_tags attribute an append checks) */
    put(&t, "at_peak_tags{");
    for (int g = 0; g < CPB_TAG_COUNT; g++) {
        if (g) put(&t, ",");
        put(&t, cpb_tag_name((cpb_tag)g));
    }
    put(&t, "}\n");
    return t.hash;
}
