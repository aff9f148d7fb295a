/* fuzz_results.c — libFuzzer target: cpbench's own checks of a results file's schema and
 * attributes, and its reading of the rows, on files libhdf5 writes itself.
 *
 * The input describes a file, which is built in memory (HDF5's core driver, nothing on
 * disk) with the plain HDF5 API, so that it is always valid HDF5: what is fuzzed is what
 * cpbench does with it (results_h5_check.h), not libhdf5's parsing of corrupt bytes.  The
 * description (every field read from the input in turn, zeros past its end):
 *   flags byte: 1 schema attribute, 2 it is variable-length, 4 version attribute, 8 /runs,
 *     16 /sessions and /models of this build's layout, 32 at_peak_tags on /runs, 64 /runs is 2-D,
 *     128 /runs has this build's exact layout (else the members below)
 *   schema text: a length byte (< 64) and the bytes
 *   version: 4 bytes, little-endian int32; a byte: 1 = stored as a 2-element array
 *   at_peak_tags: a length byte (255 = this build's tags) and the bytes
 *   members: a count byte (mod 24), then each: a name byte (< 128: a column of this build
 *     by index, else a length byte and that many bytes) and a type byte (int32, int64,
 *     double, fixed string of a length byte, int64[16], int8, uint64, float)
 *   rows: a count byte (mod 16), then the rows' bytes.
 * The rows read are then used as cpbench uses rows of a file: the point key, the printed
 * line of a sweep, the comparison of fingerprints. */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fingerprint.h"
#include "progress.h"
#include "results_h5.h"
#include "results_h5_check.h"
#include "sweep.h"

typedef struct input {
    const uint8_t *p;
    size_t n, at;
} input;

static unsigned byte(input *in)
{
    return in->at < in->n ? in->p[in->at++] : 0;
}

static void bytes(input *in, void *out, size_t len)
{
    memset(out, 0, len);
    size_t k = in->n - in->at < len ? in->n - in->at : len;
    memcpy(out, in->p + in->at, k);
    in->at += k;
}

static void str_attr(hid_t obj, const char *name, const char *v, int vlen)
{
    hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
    H5Tset_size(t, vlen ? H5T_VARIABLE : strlen(v) + 1);
    hid_t a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) {
        if (vlen) H5Awrite(a, t, &v);
        else H5Awrite(a, t, v);
        H5Aclose(a);
    }
    H5Sclose(sp);
    H5Tclose(t);
}

/* the fuzzed compound type of /runs */
static hid_t member_type(input *in)
{
    const char *const *cols = cpb_results_column_names();
    int ncols = 0;
    while (cols[ncols]) ncols++;
    int m = (int)(byte(in) % 24);
    size_t off = 0;
    hid_t types[24];
    char names[24][24];
    int k = 0;
    for (int i = 0; i < m; i++) {
        unsigned sel = byte(in);
        if (sel < 128) {
            snprintf(names[k], sizeof names[k], "%s", cols[sel % (unsigned)ncols]);
        } else {
            unsigned len = byte(in) % 16;
            bytes(in, names[k], len);
            names[k][len] = 0;
            if (!names[k][0]) snprintf(names[k], sizeof names[k], "x%d", i);
        }
        hid_t t;
        switch (byte(in) % 8) {
        case 0: t = H5Tcopy(H5T_STD_I32LE); break;
        case 1: t = H5Tcopy(H5T_STD_I64LE); break;
        case 2: t = H5Tcopy(H5T_IEEE_F64LE); break;
        case 3: t = H5Tcopy(H5T_C_S1); H5Tset_size(t, 1 + byte(in) % 64); H5Tset_strpad(t, byte(in) % 3); break;
        case 4: { hsize_t d = 16; t = H5Tarray_create2(H5T_STD_I64LE, 1, &d); break; }
        case 5: t = H5Tcopy(H5T_STD_I8LE); break;
        case 6: t = H5Tcopy(H5T_STD_U64LE); break;
        default: t = H5Tcopy(H5T_IEEE_F32LE); break;
        }
        int dup = 0;
        for (int j = 0; j < k; j++) dup |= strcmp(names[j], names[k]) == 0;
        if (dup) {
            H5Tclose(t);
            continue;
        }
        types[k++] = t;
        off += H5Tget_size(t);
    }
    hid_t ct = H5Tcreate(H5T_COMPOUND, off ? off : 1);
    off = 0;
    for (int i = 0; i < k; i++) {
        H5Tinsert(ct, names[i], off, types[i]);
        off += H5Tget_size(types[i]);
        H5Tclose(types[i]);
    }
    return ct;
}

static void build(hid_t f, input *in)
{
    const unsigned flags = byte(in);
    char schema[64];
    unsigned len = byte(in) % 64;
    bytes(in, schema, len);
    schema[len < sizeof schema ? len : sizeof schema - 1] = 0;
    if (flags & 1) str_attr(f, "cpbench_schema", schema, flags & 2);
    int32_t version;
    bytes(in, &version, sizeof version);
    const int as_array = byte(in) & 1;
    if (flags & 4) {
        hsize_t two = 2;
        hid_t sp = as_array ? H5Screate_simple(1, &two, NULL) : H5Screate(H5S_SCALAR);
        hid_t a = H5Acreate2(f, "cpbench_schema_version", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
        int32_t v[2] = {version, version};
        if (a >= 0) {
            H5Awrite(a, H5T_NATIVE_INT32, v);
            H5Aclose(a);
        }
        H5Sclose(sp);
    }
    char tags[256];
    len = byte(in);
    if (len == 255) {
        tags[0] = 0;
        for (int t = 0; t < CPB_TAG_COUNT; t++) {
            size_t n = strlen(tags);
            snprintf(tags + n, sizeof tags - n, "%s%s", t ? "," : "", cpb_tag_name((cpb_tag)t));
        }
    } else {
        bytes(in, tags, len);
        tags[len] = 0;
    }
    for (int table = 0; (flags & 16) && table < 2; table++) { /* /sessions, /models */
        hid_t t = cpb_results_file_type(table ? 2 : 0);
        hsize_t z = 0, mx = H5S_UNLIMITED, chunk = 8;
        hid_t sp = H5Screate_simple(1, &z, &mx), dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, &chunk);
        hid_t d = H5Dcreate2(f, table ? "/models" : "/sessions", t, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        if (d >= 0) H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(sp);
        H5Tclose(t);
    }
    hid_t t = (flags & 128) ? cpb_results_file_type(1) : member_type(in);
    size_t rows = byte(in) % 16, row_bytes = H5Tget_size(t);
    if (flags & 8) {
        hsize_t dims[2] = {rows, 2};
        hid_t sp = H5Screate_simple((flags & 64) ? 2 : 1, dims, NULL);
        hid_t d = H5Dcreate2(f, "/runs", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (d >= 0) {
            size_t total = rows * row_bytes * ((flags & 64) ? 2 : 1);
            void *buf = calloc(1, total ? total : 1);
            if (buf) {
                bytes(in, buf, total);
                if (total) H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
                free(buf);
            }
            if (flags & 32) str_attr(d, "at_peak_tags", tags, 0);
            H5Dclose(d);
        }
        H5Sclose(sp);
    } else if (flags & 32) {
        hid_t g = H5Gcreate2(f, "/runs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT); /* a group, not a table */
        if (g >= 0) H5Gclose(g);
    }
    H5Tclose(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) {
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
        quiet = 1;
    }
    if (size > 1 << 16) return 0;
    input in = {data, size, 0};
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_core(fapl, 1 << 16, 0); /* in memory, never written to disk */
    hid_t f = H5Fcreate("fuzz-results.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (f < 0) return 0;
    build(f, &in);
    char err[1024];
    cpb_results_check_hid(f, "fuzz", 1, err, sizeof err);
    if (cpb_results_check_hid(f, "fuzz", 0, err, sizeof err) == CPB_OK) {
        cpb_row *rows = NULL;
        int64_t n = 0;
        if (cpb_results_read_hid(f, "fuzz", &rows, &n, err, sizeof err) == CPB_OK) {
            char line[512];
            for (int64_t i = 0; i < n; i++) {
                if (!rows[i].status[0]) abort(); /* an incomplete row is never handed out */
                cpb_row_same_point(&rows[i], &rows[0]);
                cpb_progress_format_row(line, sizeof line, &rows[i], "");
                cpb_point_status_parse(rows[i].status);
            }
            FILE *null = fopen("/dev/null", "w");
            int compared = 0;
            if (null) {
                cpb_fingerprint_compare(rows, n, null, &compared);
                fclose(null);
            }
        }
        free(rows);
    }
    H5Fclose(f);
    H5Eclear2(H5E_DEFAULT);
    return 0;
}
