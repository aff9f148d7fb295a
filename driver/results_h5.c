/* results_h5.c — the HDF5 results table (see results_h5.h for the format's rules). */
#include "results_h5.h"

#include <hdf5.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knobs.h"

#define RUNS "/runs"
#define SESSIONS "/sessions"
#define ATTR_SCHEMA "cpbench_schema"
#define ATTR_VERSION "cpbench_schema_version"
/* rows per chunk: a row is about 1.7 KB on disk, so a chunk is ~55 KB */
#define RUNS_CHUNK 32

struct cpb_results {
    hid_t file, runs, sessions;
    hid_t runs_mem, sessions_mem; /* memory types */
    int32_t session;
    char path[1024];
};

/* the columns: row.h's, then one per knob (knobs.h) */
const char *const *cpb_results_column_names(void)
{
    static const char *names[128];
    if (names[0]) return names;
    int n = 0;
#define CN_S(name, len, doc) names[n++] = #name;
#define CN_1(name, doc) names[n++] = #name;
#define CN_A(name, k, doc) names[n++] = #name;
    CPB_ROW_COLUMNS(CN_S, CN_1, CN_1, CN_1, CN_A)
#undef CN_S
#undef CN_1
#undef CN_A
    for (int i = 0; i < cpb_knob_count() && n < 127; i++) names[n++] = cpb_knob_at(i)->name;
    names[n] = NULL;
    return names;
}

/* ---------------------------------------------------------------- errors */

/* The innermost HDF5 error description (what actually went wrong), for our messages. */
static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    (void)n;
    if (e->desc && *e->desc) snprintf((char *)data, 256, "%s", e->desc);
    return 0;
}

static int fail(char *err, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t len, const char *fmt, ...)
{
    char detail[256] = "";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk_cb, detail);
    H5Eclear2(H5E_DEFAULT);
    if (err && len) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(err, len, fmt, ap);
        va_end(ap);
        if (detail[0] && n >= 0 && (size_t)n < len)
            snprintf(err + n, len - (size_t)n, " (HDF5: %s)", detail);
    }
    return CPB_ERR_IO;
}

/* Silence HDF5's automatic error printing for the duration of a call: we report errors
 * ourselves, with what to do. */
typedef struct { H5E_auto2_t fn; void *data; } quiet_t;
static quiet_t quiet_begin(void)
{
    quiet_t q;
    H5Eget_auto2(H5E_DEFAULT, &q.fn, &q.data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    return q;
}
static void quiet_end(quiet_t q) { H5Eset_auto2(H5E_DEFAULT, q.fn, q.data); }

/* ---------------------------------------------------------------- types */

static hid_t str_type(size_t len)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, len);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    return t;
}

static void insert_str(hid_t ct, const char *name, size_t off, size_t len)
{
    hid_t t = str_type(len);
    H5Tinsert(ct, name, off, t);
    H5Tclose(t);
}

static void insert_arr(hid_t ct, const char *name, size_t off, hsize_t n)
{
    hid_t t = H5Tarray_create2(H5T_NATIVE_INT64, 1, &n);
    H5Tinsert(ct, name, off, t);
    H5Tclose(t);
}

/* The /runs compound type in memory (on_disk 0: cpb_row's layout) or in the file (on_disk
 * 1: packed, integer knobs as int32).  Knob columns are named after their knob, so the
 * file reads back by name whatever the order of the knob list. */
static hid_t runs_type(int on_disk)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(cpb_row));
#define T_S(name, len, doc) insert_str(t, #name, HOFFSET(cpb_row, name), len);
#define T_I(name, doc) H5Tinsert(t, #name, HOFFSET(cpb_row, name), H5T_NATIVE_INT32);
#define T_L(name, doc) H5Tinsert(t, #name, HOFFSET(cpb_row, name), H5T_NATIVE_INT64);
#define T_F(name, doc) H5Tinsert(t, #name, HOFFSET(cpb_row, name), H5T_NATIVE_DOUBLE);
#define T_A(name, n, doc) insert_arr(t, #name, HOFFSET(cpb_row, name), n);
    CPB_ROW_COLUMNS(T_S, T_I, T_L, T_F, T_A)
#undef T_S
#undef T_I
#undef T_L
#undef T_F
#undef T_A
    for (int i = 0; i < cpb_knob_count(); i++) {
        const cpb_knob *k = cpb_knob_at(i);
        if (k->type == CPB_KNOB_CHOICE)
            insert_str(t, k->name, HOFFSET(cpb_row, knobs.s) + (size_t)i * CPB_KNOB_LEN, CPB_KNOB_LEN);
        else
            H5Tinsert(t, k->name, HOFFSET(cpb_row, knobs.i) + (size_t)i * sizeof(int64_t),
                      on_disk && k->type == CPB_KNOB_INT ? H5T_NATIVE_INT32 : H5T_NATIVE_INT64);
    }
    if (on_disk) H5Tpack(t);
    return t;
}

static hid_t runs_mem_type(void)
{
    return runs_type(0);
}

static hid_t sessions_mem_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(cpb_provenance));
#define P_S(name) insert_str(t, #name, HOFFSET(cpb_provenance, name), sizeof((cpb_provenance *)0)->name);
    P_S(command_line) P_S(git_commit) P_S(date) P_S(host) P_S(backend) P_S(gpu)
    H5Tinsert(t, "gpu_count", HOFFSET(cpb_provenance, gpu_count), H5T_NATIVE_INT);
    P_S(hdf5_version) P_S(mpi_version) P_S(cuda_version) P_S(nccl_version) P_S(cudnn_version) P_S(attention)
#undef P_S
    return t;
}

/* the on-disk layout: the memory type without padding */
static hid_t packed(hid_t mem)
{
    hid_t t = H5Tcopy(mem);
    H5Tpack(t);
    return t;
}

/* ---------------------------------------------------------------- attributes */

static int write_str_attr(hid_t obj, const char *name, const char *value)
{
    size_t len = strlen(value) + 1;
    hid_t t = str_type(len), sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = a < 0 ? -1 : H5Awrite(a, t, value);
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
    return rc < 0 ? -1 : 0;
}

static int write_int_attr(hid_t obj, const char *name, int value)
{
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = a < 0 ? -1 : H5Awrite(a, H5T_NATIVE_INT, &value);
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    return rc < 0 ? -1 : 0;
}

/* Read a string attribute into out; -1 when absent or not a string. */
static int read_str_attr(hid_t obj, const char *name, char *out, size_t len)
{
    if (H5Aexists(obj, name) <= 0) return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return -1;
    hid_t ft = H5Aget_type(a);
    int rc = -1;
    if (H5Tget_class(ft) == H5T_STRING && !H5Tis_variable_str(ft)) {
        size_t n = H5Tget_size(ft);
        char *buf = calloc(1, n + 1);
        hid_t mt = str_type(n + 1);
        if (buf && H5Aread(a, mt, buf) >= 0) {
            snprintf(out, len, "%s", buf);
            rc = 0;
        }
        H5Tclose(mt);
        free(buf);
    }
    H5Tclose(ft);
    H5Aclose(a);
    return rc;
}

static int read_int_attr(hid_t obj, const char *name, int *out)
{
    if (H5Aexists(obj, name) <= 0) return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return -1;
    hid_t ft = H5Aget_type(a);
    int rc = (H5Tget_class(ft) == H5T_INTEGER && H5Aread(a, H5T_NATIVE_INT, out) >= 0) ? 0 : -1;
    H5Tclose(ft);
    H5Aclose(a);
    return rc;
}

static int write_file_attrs(hid_t file, hid_t runs, const cpb_provenance *p)
{
    char tags[512] = "";
    for (int t = 0; t < CPB_TAG_COUNT; t++) {
        size_t n = strlen(tags);
        snprintf(tags + n, sizeof tags - n, "%s%s", t ? "," : "", cpb_tag_name((cpb_tag)t));
    }
    int rc = 0;
    rc |= write_str_attr(file, ATTR_SCHEMA, CPB_RESULTS_SCHEMA);
    rc |= write_int_attr(file, ATTR_VERSION, CPB_RESULTS_SCHEMA_VERSION);
    rc |= write_str_attr(file, "command_line", p->command_line);
    rc |= write_str_attr(file, "git_commit", p->git_commit);
    rc |= write_str_attr(file, "date", p->date);
    rc |= write_str_attr(file, "host", p->host);
    rc |= write_str_attr(file, "backend", p->backend);
    rc |= write_str_attr(file, "gpu", p->gpu);
    rc |= write_int_attr(file, "gpu_count", p->gpu_count);
    rc |= write_str_attr(file, "hdf5_version", p->hdf5_version);
    rc |= write_str_attr(file, "mpi_version", p->mpi_version);
    rc |= write_str_attr(file, "attention", p->attention);
    rc |= write_str_attr(file, "cuda_version", p->cuda_version);
    rc |= write_str_attr(file, "nccl_version", p->nccl_version);
    rc |= write_str_attr(file, "cudnn_version", p->cudnn_version);
    rc |= write_str_attr(runs, "at_peak_tags", tags);
    return rc;
}

/* ---------------------------------------------------------------- open / create */

/* the on-disk layout of a table of memory type mem */
static hid_t file_type(hid_t mem, int runs)
{
    return runs ? runs_type(1) : packed(mem);
}

static hid_t create_table(hid_t file, const char *name, hid_t mem, int runs, hsize_t chunk)
{
    hsize_t dims = 0, maxdims = H5S_UNLIMITED;
    hid_t sp = H5Screate_simple(1, &dims, &maxdims);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    hid_t ft = file_type(mem, runs);
    hid_t d = H5Dcreate2(file, name, ft, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Tclose(ft);
    H5Pclose(dcpl);
    H5Sclose(sp);
    return d;
}

/* 0 when the dataset exists and its stored type is exactly our layout */
static int table_matches(hid_t file, const char *name, hid_t mem, int runs)
{
    if (H5Lexists(file, name, H5P_DEFAULT) <= 0) return -1;
    hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
    if (d < 0) return -1;
    hid_t ft = H5Dget_type(d), want = file_type(mem, runs);
    int ok = H5Tequal(ft, want) > 0;
    H5Tclose(want);
    H5Tclose(ft);
    H5Dclose(d);
    return ok ? 0 : -1;
}

/* Validate an existing file read-only: nothing is written to a file that is refused. */
static int validate_existing(const char *path, hid_t runs_mem, hid_t sess_mem, char *err,
                             size_t len)
{
    htri_t is = H5Fis_hdf5(path);
    if (is <= 0)
        return fail(err, len,
                    "%s exists and is not an HDF5 file; it was left untouched. Give --out a new "
                    "file name or an existing cpbench results file",
                    path);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return fail(err, len, "cannot open %s to check it is a cpbench results file (is another "
                              "process writing it?)", path);
    char schema[64] = "";
    int version = -1, rc = 0;
    if (read_str_attr(f, ATTR_SCHEMA, schema, sizeof schema) != 0 ||
        strcmp(schema, CPB_RESULTS_SCHEMA) != 0) {
        rc = fail(err, len,
                  "%s is an HDF5 file but not a cpbench results file (no '%s' attribute equal to "
                  "'%s'); it was left untouched. Give --out another file name",
                  path, ATTR_SCHEMA, CPB_RESULTS_SCHEMA);
    } else if (read_int_attr(f, ATTR_VERSION, &version) != 0 ||
               version != CPB_RESULTS_SCHEMA_VERSION) {
        rc = fail(err, len,
                  "%s is a cpbench results file of schema version %d, this cpbench writes version "
                  "%d; it was left untouched. Give --out a new file (cpbench and paper/make_figures.py "
                  "read files of both versions together)",
                  path, version, CPB_RESULTS_SCHEMA_VERSION);
    } else if (table_matches(f, RUNS, runs_mem, 1) != 0 || table_matches(f, SESSIONS, sess_mem, 0) != 0) {
        rc = fail(err, len,
                  "%s says it is cpbench schema %d but its %s or %s table has another layout; it "
                  "was left untouched. Write to a new file",
                  path, version, RUNS, SESSIONS);
    }
    H5Fclose(f);
    return rc;
}

static int64_t table_rows(hid_t d)
{
    hid_t sp = H5Dget_space(d);
    hsize_t n = 0;
    H5Sget_simple_extent_dims(sp, &n, NULL);
    H5Sclose(sp);
    return (int64_t)n;
}

/* Append one element to a 1-D extendible table and flush the file. */
static int append_one(hid_t file, hid_t d, hid_t mem, const void *row)
{
    hsize_t n = (hsize_t)table_rows(d), one = 1, nn = n + 1;
    if (H5Dset_extent(d, &nn) < 0) return -1;
    hid_t fs = H5Dget_space(d);
    hid_t ms = H5Screate_simple(1, &one, NULL);
    herr_t rc = H5Sselect_hyperslab(fs, H5S_SELECT_SET, &n, NULL, &one, NULL);
    if (rc >= 0) rc = H5Dwrite(d, mem, ms, fs, H5P_DEFAULT, row);
    H5Sclose(ms);
    H5Sclose(fs);
    /* flush now: a writer killed later leaves this row on disk */
    if (rc >= 0) rc = H5Fflush(file, H5F_SCOPE_GLOBAL);
    return rc < 0 ? -1 : 0;
}

static void close_handles(cpb_results *r)
{
    if (r->runs >= 0) H5Dclose(r->runs);
    if (r->sessions >= 0) H5Dclose(r->sessions);
    if (r->runs_mem >= 0) H5Tclose(r->runs_mem);
    if (r->sessions_mem >= 0) H5Tclose(r->sessions_mem);
    if (r->file >= 0) H5Fclose(r->file);
    free(r);
}

int cpb_results_open(const char *path, const cpb_provenance *prov, cpb_results **out,
                     char *err, size_t err_len)
{
    *out = NULL;
    if (!path || !*path) return fail(err, err_len, "results file name is empty: give --out FILE.h5");
    cpb_results *r = calloc(1, sizeof *r);
    if (!r) return fail(err, err_len, "out of host memory opening %s", path);
    r->file = r->runs = r->sessions = -1;
    snprintf(r->path, sizeof r->path, "%s", path);
    quiet_t q = quiet_begin();
    r->runs_mem = runs_mem_type();
    r->sessions_mem = sessions_mem_type();
    int rc = CPB_OK;

    if (access(path, F_OK) == 0) {
        rc = validate_existing(path, r->runs_mem, r->sessions_mem, err, err_len);
        if (rc == CPB_OK) {
            r->file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
            if (r->file < 0)
                rc = fail(err, err_len, "cannot open %s for appending (permissions? another "
                                        "writer?)", path);
        }
        if (rc == CPB_OK) {
            r->runs = H5Dopen2(r->file, RUNS, H5P_DEFAULT);
            r->sessions = H5Dopen2(r->file, SESSIONS, H5P_DEFAULT);
            if (r->runs < 0 || r->sessions < 0)
                rc = fail(err, err_len, "cannot open the tables of %s", path);
        }
    } else {
        r->file = H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
        if (r->file < 0) {
            rc = fail(err, err_len, "cannot create %s (does its directory exist and is it "
                                    "writable?)", path);
        } else {
            r->runs = create_table(r->file, RUNS, r->runs_mem, 1, RUNS_CHUNK);
            r->sessions = create_table(r->file, SESSIONS, r->sessions_mem, 0, 8);
            if (r->runs < 0 || r->sessions < 0 || write_file_attrs(r->file, r->runs, prov) != 0)
                rc = fail(err, err_len, "cannot create the tables of %s", path);
        }
    }
    if (rc == CPB_OK) {
        r->session = (int32_t)table_rows(r->sessions);
        if (append_one(r->file, r->sessions, r->sessions_mem, prov) != 0)
            rc = fail(err, err_len, "cannot record this session's provenance in %s", path);
    }
    quiet_end(q);
    if (rc != CPB_OK) {
        close_handles(r);
        return rc;
    }
    *out = r;
    return CPB_OK;
}

int cpb_results_append(cpb_results *f, cpb_row *row, char *err, size_t err_len)
{
    row->session = f->session;
    if (!row->timestamp[0]) cpb_provenance_utc_now(row->timestamp, sizeof row->timestamp);
    quiet_t q = quiet_begin();
    int rc = append_one(f->file, f->runs, f->runs_mem, row) == 0
                 ? CPB_OK
                 : fail(err, err_len, "cannot append a row to %s (disk full? file removed?)",
                        f->path);
    quiet_end(q);
    return rc;
}

int64_t cpb_results_rows(const cpb_results *f) { return table_rows(f->runs); }

void cpb_results_close(cpb_results *f)
{
    if (!f) return;
    quiet_t q = quiet_begin();
    close_handles(f);
    quiet_end(q);
}

int cpb_results_write_row(const char *path, int argc, char **argv, const cpb_backend *be, cpb_row *row,
                          char *err, size_t err_len)
{
    cpb_provenance prov;
    cpb_provenance_collect(&prov, argc, argv, be, row->gpu, row->world_size);
    cpb_results *f = NULL;
    int rc = cpb_results_open(path, &prov, &f, err, err_len);
    if (rc != CPB_OK) return rc;
    rc = cpb_results_append(f, row, err, err_len);
    cpb_results_close(f);
    return rc;
}

/* ---------------------------------------------------------------- reading */

int cpb_results_read(const char *path, cpb_row **rows, int64_t *n, char *err, size_t err_len)
{
    *rows = NULL;
    *n = 0;
    quiet_t q = quiet_begin();
    int rc = CPB_OK;
    hid_t f = -1, d = -1, mem = -1;
    char schema[64] = "";
    if (H5Fis_hdf5(path) <= 0) {
        rc = fail(err, err_len, "%s is missing or not an HDF5 file", path);
        goto out;
    }
    f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        rc = fail(err, err_len, "cannot open %s for reading", path);
        goto out;
    }
    if (read_str_attr(f, ATTR_SCHEMA, schema, sizeof schema) != 0 ||
        strcmp(schema, CPB_RESULTS_SCHEMA) != 0 || H5Lexists(f, RUNS, H5P_DEFAULT) <= 0) {
        rc = fail(err, err_len, "%s is not a cpbench results file (no '%s' attribute or no %s)",
                  path, ATTR_SCHEMA, RUNS);
        goto out;
    }
    d = H5Dopen2(f, RUNS, H5P_DEFAULT);
    int64_t count = d < 0 ? -1 : table_rows(d);
    if (count < 0) {
        rc = fail(err, err_len, "cannot open %s in %s", RUNS, path);
        goto out;
    }
    cpb_row *buf = calloc((size_t)(count ? count : 1), sizeof *buf);
    if (!buf) {
        rc = fail(err, err_len, "out of host memory reading %lld rows of %s", (long long)count, path);
        goto out;
    }
    mem = runs_mem_type();
    if (count > 0 && H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        free(buf);
        rc = fail(err, err_len, "cannot read %s of %s", RUNS, path);
        goto out;
    }
    for (int64_t i = 0; i < count; i++) buf[i].code = cpb_row_code_of_status(buf[i].status);
    *rows = buf;
    *n = count;
out:
    if (mem >= 0) H5Tclose(mem);
    if (d >= 0) H5Dclose(d);
    if (f >= 0) H5Fclose(f);
    quiet_end(q);
    return rc;
}
