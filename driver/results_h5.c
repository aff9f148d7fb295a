/* results_h5.c — the HDF5 results table (see results_h5.h for the format's rules). */
#include "results_h5.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "knobs.h"
#include "model_config.h"
#include "model_scope.h"
#include "results_h5_check.h"

#define RUNS "/runs"
#define SESSIONS "/sessions"
#define MODELS "/models"
#define ATTR_SCHEMA "cpbench_schema"
#define ATTR_VERSION "cpbench_schema_version"
#define ATTR_TAGS "at_peak_tags"
/* rows per chunk: a row is about 2 KB on disk, so a chunk is ~64 KB */
#define RUNS_CHUNK 32
/* what an append may add to the file besides a new chunk of rows: B-tree nodes, heap and
 * object-header growth (generous: HDF5 does not say in advance) */
#define APPEND_METADATA_BYTES ((int64_t)256 << 10)
/* a file held by another writer (HDF5's file lock) is waited for this long */
#define LOCK_WAIT_S 10
/* the most rows read at once (a row is ~3.5 KB in memory) */
#define MAX_READ_ROWS ((int64_t)1 << 20)
/* the longest string attribute read */
#define MAX_ATTR_BYTES ((size_t)1 << 20)

struct cpb_results {
    hid_t file, runs, sessions, models;
    hid_t runs_mem, sessions_mem, models_mem; /* memory types */
    int32_t session;
    char path[1024];
    char (*model_names)[32];      /* the models /models holds */
    int n_models;
};

/* a row of /models: the model a run row names, described so that the file reads without
 * the inputs that made it (results/README.md) */
typedef struct model_rec {
    char name[32];                /* the runs' model column */
    char source[256];             /* a preset's source, or the config.json's path */
    char model_type[32];          /* the config.json's model_type ("" for a preset or none) */
    int32_t layers;
    int64_t ffn, vocab;
    double params;                /* the parameter count (model_params of the runs) */
    const char *config;           /* the config.json's whole text ("" for a preset) */
} model_rec;

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

/* the innermost HDF5 error of the stack, which is then cleared */
static void h5_detail(char *out)
{
    out[0] = 0;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk_cb, out);
    H5Eclear2(H5E_DEFAULT);
}

static int fail_code(int code, char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail_code(int code, char *err, size_t len, const char *fmt, ...)
{
    char detail[256];
    h5_detail(detail);
    if (err && len) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(err, len, fmt, ap);
        va_end(ap);
        if (detail[0] && n >= 0 && (size_t)n < len) snprintf(err + n, len - (size_t)n, " (HDF5: %s)", detail);
    }
    return code;
}
#define fail(err, len, ...) fail_code(CPB_ERR_IO, err, len, __VA_ARGS__)
#define refuse(err, len, ...) fail_code(CPB_ERR_INVALID, err, len, __VA_ARGS__)

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

static hid_t models_mem_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(model_rec));
    insert_str(t, "name", HOFFSET(model_rec, name), sizeof((model_rec *)0)->name);
    insert_str(t, "source", HOFFSET(model_rec, source), sizeof((model_rec *)0)->source);
    insert_str(t, "model_type", HOFFSET(model_rec, model_type), sizeof((model_rec *)0)->model_type);
    H5Tinsert(t, "layers", HOFFSET(model_rec, layers), H5T_NATIVE_INT32);
    H5Tinsert(t, "ffn", HOFFSET(model_rec, ffn), H5T_NATIVE_INT64);
    H5Tinsert(t, "vocab", HOFFSET(model_rec, vocab), H5T_NATIVE_INT64);
    H5Tinsert(t, "params", HOFFSET(model_rec, params), H5T_NATIVE_DOUBLE);
    hid_t vs = H5Tcopy(H5T_C_S1);
    H5Tset_size(vs, H5T_VARIABLE);
    H5Tinsert(t, "config", HOFFSET(model_rec, config), vs);
    H5Tclose(vs);
    return t;
}

/* the on-disk layout of a table (runs: 1 /runs, 0 /sessions, 2 /models): /runs packed with
 * int32 integer knobs, the others their memory type without padding */
static hid_t file_type(int runs)
{
    if (runs == 1) return runs_type(1);
    hid_t mem = runs == 2 ? models_mem_type() : sessions_mem_type(), t = H5Tcopy(mem);
    H5Tclose(mem);
    H5Tpack(t);
    return t;
}

hid_t cpb_results_file_type(int runs) { return file_type(runs); }

/* ---------------------------------------------------------------- attributes */

static void tags_string(char *out, size_t len)
{
    out[0] = 0;
    for (int t = 0; t < CPB_TAG_COUNT; t++) {
        size_t n = strlen(out);
        snprintf(out + n, len - n, "%s%s", t ? "," : "", cpb_tag_name((cpb_tag)t));
    }
}

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

/* an open attribute holding exactly one value (scalar, or one element); -1 otherwise */
static hid_t open_single_attr(hid_t obj, const char *name)
{
    if (H5Aexists(obj, name) <= 0) return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return -1;
    hid_t sp = H5Aget_space(a);
    hssize_t n = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
    if (sp >= 0) H5Sclose(sp);
    if (n != 1) {
        H5Aclose(a);
        return -1;
    }
    return a;
}

/* Read a string attribute (fixed-length or variable-length, one value) into out; -1 when
 * absent, not a single string or longer than MAX_ATTR_BYTES. */
static int read_str_attr(hid_t obj, const char *name, char *out, size_t len)
{
    hid_t a = open_single_attr(obj, name);
    if (a < 0) return -1;
    hid_t ft = H5Aget_type(a);
    int rc = -1;
    if (ft >= 0 && H5Tget_class(ft) == H5T_STRING) {
        if (H5Tis_variable_str(ft) > 0) {
            hid_t mt = H5Tcopy(H5T_C_S1);
            H5Tset_size(mt, H5T_VARIABLE);
            char *v = NULL;
            if (H5Aread(a, mt, &v) >= 0 && v) {
                snprintf(out, len, "%s", v);
                rc = 0;
            }
            if (v) H5free_memory(v);
            H5Tclose(mt);
        } else {
            size_t n = H5Tget_size(ft);
            char *buf = n > 0 && n <= MAX_ATTR_BYTES ? calloc(1, n + 1) : NULL;
            if (buf) {
                hid_t mt = str_type(n + 1);
                if (H5Aread(a, mt, buf) >= 0) {
                    buf[n] = 0;
                    snprintf(out, len, "%s", buf);
                    rc = 0;
                }
                H5Tclose(mt);
                free(buf);
            }
        }
    }
    if (ft >= 0) H5Tclose(ft);
    H5Aclose(a);
    return rc;
}

static int read_int_attr(hid_t obj, const char *name, int *out)
{
    hid_t a = open_single_attr(obj, name);
    if (a < 0) return -1;
    hid_t ft = H5Aget_type(a);
    long long v = 0;
    int rc = (ft >= 0 && H5Tget_class(ft) == H5T_INTEGER && H5Aread(a, H5T_NATIVE_LLONG, &v) >= 0) ? 0 : -1;
    if (ft >= 0) H5Tclose(ft);
    H5Aclose(a);
    if (rc == 0) *out = v < -1000000 ? -1000000 : v > 1000000 ? 1000000 : (int)v;
    return rc;
}

static int write_file_attrs(hid_t file, hid_t runs, const cpb_provenance *p)
{
    char tags[512];
    tags_string(tags, sizeof tags);
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
    rc |= write_str_attr(runs, ATTR_TAGS, tags);
    return rc;
}

/* ---------------------------------------------------------------- checks of an open file */

/* the dataset `name` of f when it is one (not a group, not a dangling link); -1 otherwise */
static hid_t open_table(hid_t f, const char *name)
{
    if (H5Lexists(f, name, H5P_DEFAULT) <= 0) return -1;
    H5O_info_t info;
    if (H5Oget_info_by_name(f, name, &info, H5P_DEFAULT) < 0 || info.type != H5O_TYPE_DATASET) return -1;
    return H5Dopen2(f, name, H5P_DEFAULT);
}

/* rows of a 1-D table; -1 when d is not one */
static int64_t table_rows(hid_t d)
{
    hid_t sp = H5Dget_space(d);
    if (sp < 0) return -1;
    hsize_t n = 0;
    int64_t rows = H5Sget_simple_extent_ndims(sp) == 1 && H5Sget_simple_extent_dims(sp, &n, NULL) == 1 ? (int64_t)n : -1;
    H5Sclose(sp);
    return rows;
}

/* 0 when the dataset exists, is a table and its stored type is exactly our layout */
static int table_matches(hid_t file, const char *name, int runs)
{
    hid_t d = open_table(file, name);
    if (d < 0) return -1;
    hid_t ft = H5Dget_type(d), want = file_type(runs);
    int ok = ft >= 0 && table_rows(d) >= 0 && H5Tequal(ft, want) > 0;
    H5Tclose(want);
    if (ft >= 0) H5Tclose(ft);
    H5Dclose(d);
    return ok ? 0 : -1;
}

int cpb_results_check_hid(hid_t f, const char *path, int for_append, char *err, size_t len)
{
    quiet_t q = quiet_begin();
    char schema[64] = "", tags[1024] = "", want_tags[512];
    int version = -1, rc = CPB_OK;
    hid_t runs = open_table(f, RUNS);
    if (read_str_attr(f, ATTR_SCHEMA, schema, sizeof schema) != 0 || strcmp(schema, CPB_RESULTS_SCHEMA) != 0 ||
        runs < 0) {
        rc = refuse(err, len, "%s is an HDF5 file but not a cpbench results file (no '%s' attribute equal to '%s', or no "
                    "%s table)", path, ATTR_SCHEMA, CPB_RESULTS_SCHEMA, RUNS);
    } else if (read_int_attr(f, ATTR_VERSION, &version) != 0) {
        rc = refuse(err, len, "%s says it is a cpbench results file but has no integer '%s' attribute", path,
                    ATTR_VERSION);
    } else if (for_append && version != CPB_RESULTS_SCHEMA_VERSION) {
        rc = refuse(err, len, "%s is a cpbench results file of schema version %d, this cpbench writes version %d (cpbench "
                    "and paper/make_figures.py read files of every version together)", path, version,
                    CPB_RESULTS_SCHEMA_VERSION);
    } else if (for_append && (table_matches(f, RUNS, 1) != 0 || table_matches(f, SESSIONS, 0) != 0 ||
                              table_matches(f, MODELS, 2) != 0)) {
        rc = refuse(err, len, "%s says it is cpbench schema %d but its %s, %s or %s table has another layout", path,
                    version, RUNS, SESSIONS, MODELS);
    } else if (for_append) {
        tags_string(want_tags, sizeof want_tags);
        if (read_str_attr(runs, ATTR_TAGS, tags, sizeof tags) != 0 || strcmp(tags, want_tags) != 0)
            rc = refuse(err, len, "%s: its %s attribute ('%s') is not this cpbench's ('%s'): the at_peak_bytes columns "
                        "would mean other tags", path, ATTR_TAGS, tags, want_tags);
    }
    if (runs >= 0) H5Dclose(runs);
    H5Eclear2(H5E_DEFAULT);
    quiet_end(q);
    return rc;
}

/* every string column of a row read from a file ends in NUL, whatever its stored padding */
static void terminate_strings(cpb_row *r)
{
#define Z_S(name, len, doc) r->name[len - 1] = 0;
#define Z_N(name, doc)
#define Z_A(name, n, doc)
    CPB_ROW_COLUMNS(Z_S, Z_N, Z_N, Z_N, Z_A)
#undef Z_S
#undef Z_N
#undef Z_A
    for (int i = 0; i < CPB_MAX_KNOBS; i++) r->knobs.s[i][CPB_KNOB_LEN - 1] = 0;
}

int cpb_results_read_hid(hid_t f, const char *path, cpb_row **rows, int64_t *n, char *err, size_t err_len)
{
    *rows = NULL;
    *n = 0;
    quiet_t q = quiet_begin();
    int rc = CPB_OK;
    hid_t d = open_table(f, RUNS), ft = -1, mem = -1;
    int64_t count = d < 0 ? -1 : table_rows(d);
    cpb_row *buf = NULL;
    if (count < 0) {
        rc = refuse(err, err_len, "%s: %s is not a one-dimensional table", path, RUNS);
        goto out;
    }
    ft = H5Dget_type(d);
    if (ft < 0 || H5Tget_class(ft) != H5T_COMPOUND) {
        rc = refuse(err, err_len, "%s: %s is not a table of rows (its type is not compound)", path, RUNS);
        goto out;
    }
    if (count > MAX_READ_ROWS) {
        rc = refuse(err, err_len, "%s: %s holds %lld rows, more than the %lld cpbench reads at once", path, RUNS,
                    (long long)count, (long long)MAX_READ_ROWS);
        goto out;
    }
    buf = calloc((size_t)(count ? count : 1), sizeof *buf);
    if (!buf) {
        rc = fail_code(CPB_ERR_NOMEM_HOST, err, err_len, "out of host memory reading %lld rows of %s", (long long)count,
                       path);
        goto out;
    }
    mem = runs_type(0);
    if (count > 0 && H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        rc = refuse(err, err_len, "cannot read %s of %s (a column of the same name but another type?)", RUNS, path);
        goto out;
    }
    int64_t kept = 0;
    for (int64_t i = 0; i < count; i++) {
        cpb_row *r = &buf[i];
        terminate_strings(r);
        if (!r->status[0]) continue; /* the trace of an append that failed part-way */
        if (strcmp(r->status, "skipped") == 0) CPB_ROW_SET(r, status, "refused"); /* files before schema 4 */
        r->code = cpb_row_code_of_status(r->status);
        if (kept != i) buf[kept] = *r;
        kept++;
    }
    *rows = buf;
    *n = kept;
    buf = NULL;
out:
    free(buf);
    if (mem >= 0) H5Tclose(mem);
    if (ft >= 0) H5Tclose(ft);
    if (d >= 0) H5Dclose(d);
    H5Eclear2(H5E_DEFAULT);
    quiet_end(q);
    return rc;
}

/* ---------------------------------------------------------------- files by name */

/* 1 when the HDF5 error just seen is its file lock (another writer holds the file) */
static int is_lock_error(void)
{
    char detail[256];
    h5_detail(detail);
    return strstr(detail, "lock") != NULL;
}

/* H5Fopen, waiting up to LOCK_WAIT_S while another process holds the file's lock */
static hid_t open_waiting(const char *path, unsigned flags)
{
    for (int tries = 0;; tries++) {
        hid_t f = H5Fopen(path, flags, H5P_DEFAULT);
        if (f >= 0 || !is_lock_error() || tries >= LOCK_WAIT_S * 10) return f;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* 0 when path is a regular file (*exists 1) or nothing (*exists 0); else CPB_ERR_INVALID
 * (a FIFO would block its reader, a directory or device is no file to write) */
static int path_kind(const char *path, int *exists, char *err, size_t len)
{
    struct stat st;
    *exists = 0;
    if (!path || !*path) {
        snprintf(err, len, "the results file name is empty: give a file name such as results.h5");
        return CPB_ERR_INVALID;
    }
    if (stat(path, &st) != 0) {
        if (errno == ENOENT) return CPB_OK;
        snprintf(err, len, "cannot look at %s: %s", path, strerror(errno));
        return CPB_ERR_IO;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, len, "%s is not a regular file (%s): give a file name; it was left untouched", path,
                 S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : "a device or socket");
        return CPB_ERR_INVALID;
    }
    *exists = 1;
    return CPB_OK;
}

/* the directory of path (".", "/", or the part before the last slash) */
static void dir_of(const char *path, char *out, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(out, len, ".");
    else if (slash == path) snprintf(out, len, "/");
    else snprintf(out, len, "%.*s", (int)(slash - path), path);
}

/* an existing regular file: CPB_OK when rows can be appended, else why not */
static int check_existing(const char *path, char *err, size_t len)
{
    quiet_t q = quiet_begin();
    int rc;
    if (H5Fis_hdf5(path) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        rc = refuse(err, len, "%s exists and is not an HDF5 file", path);
    } else {
        hid_t f = open_waiting(path, H5F_ACC_RDONLY);
        if (f < 0) {
            rc = fail(err, len, "cannot open %s to check it is a cpbench results file (another process has held it "
                      "open for %d s: a sweep or a reader?)", path, LOCK_WAIT_S);
        } else {
            rc = cpb_results_check_hid(f, path, 1, err, len);
            H5Fclose(f);
        }
    }
    quiet_end(q);
    return rc;
}

int cpb_results_check_target(const char *path, int force, char *err, size_t len)
{
    int exists;
    int rc = path_kind(path, &exists, err, len);
    if (rc != CPB_OK) return rc;
    if (!exists) {
        char dir[1024];
        dir_of(path, dir, sizeof dir);
        struct stat st;
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            snprintf(err, len, "cannot create %s: its directory %s does not exist", path, dir);
            return CPB_ERR_INVALID;
        }
        if (access(dir, W_OK | X_OK) != 0) {
            snprintf(err, len, "cannot create %s: its directory %s is not writable", path, dir);
            return CPB_ERR_INVALID;
        }
        return CPB_OK;
    }
    rc = check_existing(path, err, len);
    if (rc == CPB_ERR_INVALID && !force) {
        size_t n = strlen(err);
        snprintf(err + n, len - n, "; it was left untouched. Give another file name, or --force to replace it");
    }
    return rc == CPB_ERR_INVALID && force ? CPB_OK : rc;
}

/* ---------------------------------------------------------------- appending */

static hid_t create_table(hid_t file, const char *name, int runs, hsize_t chunk)
{
    hsize_t dims = 0, maxdims = H5S_UNLIMITED;
    hid_t sp = H5Screate_simple(1, &dims, &maxdims);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    hid_t ft = file_type(runs);
    hid_t d = H5Dcreate2(file, name, ft, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Tclose(ft);
    H5Pclose(dcpl);
    H5Sclose(sp);
    return d;
}

/* room on path's file system for an append of a row of row_bytes to a table of chunks of
 * chunk rows; CPB_OK, or CPB_ERR_IO with a message */
static int space_for_append(const char *path, int64_t row_bytes, int64_t chunk, char *err, size_t len)
{
    struct statvfs vs;
    if (statvfs(path, &vs) != 0) return CPB_OK; /* no answer: the write itself will tell */
    const int64_t free_bytes = (int64_t)vs.f_bavail * (int64_t)vs.f_frsize;
    const int64_t need = row_bytes * chunk + APPEND_METADATA_BYTES;
    if (free_bytes >= need) return CPB_OK;
    snprintf(err, len, "the file system of %s has %lld bytes free, and an append may need %lld (a chunk of %lld rows "
             "and the metadata): free some space", path, (long long)free_bytes, (long long)need, (long long)chunk);
    return CPB_ERR_IO;
}

/* the file's open descriptor (the sec2 driver's), -1 when HDF5 does not give one */
static int file_fd(const cpb_results *r)
{
    int *fd = NULL;
    if (H5Fget_vfd_handle(r->file, H5P_DEFAULT, (void **)&fd) < 0 || !fd) {
        H5Eclear2(H5E_DEFAULT);
        return -1;
    }
    return *fd;
}

/* Reserve the file's next `bytes` past its end of allocation on disk (posix_fallocate),
 * so that the writes of an append cannot fail for want of space (a full disk, a file size
 * limit) once they have begun: the append either finds its room here, before it changes
 * anything, or is refused.  The reserve past what HDF5 uses is cut off when the file is
 * closed. */
static int reserve(const cpb_results *r, int64_t bytes, char *why, size_t len)
{
    haddr_t eoa = 0;
    int fd = file_fd(r);
    if (fd < 0 || H5Fget_eoa(r->file, &eoa) < 0) {
        H5Eclear2(H5E_DEFAULT);
        return 0; /* no descriptor: the free-space check is what there is */
    }
    int e = posix_fallocate(fd, (off_t)eoa, (off_t)bytes);
    if (e == 0 || e == EOPNOTSUPP || e == EINVAL) return 0;
    snprintf(why, len, "cannot reserve %lld bytes for the row on disk (%s); nothing was written, the table is as it "
             "was", (long long)bytes, strerror(e));
    return -1;
}

/* Append one element to the 1-D extendible table d and flush the file; on failure the
 * extent is shrunk back and flushed again so the table is as it was.  -1 with why. */
static int append_one(const cpb_results *r, hid_t d, hid_t mem, int64_t chunk, const void *row, char *why,
                      size_t len)
{
    const int64_t rows = table_rows(d);
    if (rows < 0) {
        snprintf(why, len, "its table has another shape");
        return -1;
    }
    hid_t ft = H5Dget_type(d);
    const int64_t row_bytes = ft >= 0 ? (int64_t)H5Tget_size(ft) : 4096;
    if (ft >= 0) H5Tclose(ft);
    if (space_for_append(r->path, row_bytes, chunk, why, len) != CPB_OK) return -1;
    if (reserve(r, row_bytes * chunk + APPEND_METADATA_BYTES, why, len) != 0) return -1;
    hsize_t n = (hsize_t)rows, one = 1, nn = n + 1;
    char detail[256] = "";
    herr_t rc = H5Dset_extent(d, &nn);
    if (rc >= 0) {
        hid_t fs = H5Dget_space(d);
        hid_t ms = H5Screate_simple(1, &one, NULL);
        rc = H5Sselect_hyperslab(fs, H5S_SELECT_SET, &n, NULL, &one, NULL);
        if (rc >= 0) rc = H5Dwrite(d, mem, ms, fs, H5P_DEFAULT, row);
        H5Sclose(ms);
        H5Sclose(fs);
    }
    /* flush now: a writer killed later leaves this row on disk */
    if (rc >= 0) rc = H5Fflush(r->file, H5F_SCOPE_GLOBAL);
    if (rc >= 0) return 0;
    h5_detail(detail);
    /* undo: the extent back to the rows that are whole, on disk too */
    int restored = H5Dset_extent(d, &n) >= 0 && H5Fflush(r->file, H5F_SCOPE_GLOBAL) >= 0 && table_rows(d) == rows;
    H5Eclear2(H5E_DEFAULT);
    snprintf(why, len, "the write failed (%s: disk full? file removed? a file size limit?); %s", detail[0] ? detail : "no detail",
             restored ? "the table was shrunk back and is as it was" :
                        "shrinking the table back failed too: readers skip the incomplete row (its status is empty)");
    return -1;
}

static void close_handles(cpb_results *r)
{
    /* cut the reserve of reserve() off: the file ends where HDF5's allocation does */
    haddr_t eoa = 0;
    int fd = r->file >= 0 ? file_fd(r) : -1;
    struct stat st;
    int cut = fd >= 0 && H5Fflush(r->file, H5F_SCOPE_GLOBAL) >= 0 && H5Fget_eoa(r->file, &eoa) >= 0 &&
              fstat(fd, &st) == 0 && (off_t)eoa > 0 && st.st_size > (off_t)eoa && ftruncate(fd, (off_t)eoa) == 0;
    (void)cut; /* a file left longer still reads: HDF5 ignores bytes past its end of allocation */
    H5Eclear2(H5E_DEFAULT);
    if (r->runs >= 0) H5Dclose(r->runs);
    if (r->sessions >= 0) H5Dclose(r->sessions);
    if (r->models >= 0) H5Dclose(r->models);
    if (r->runs_mem >= 0) H5Tclose(r->runs_mem);
    if (r->sessions_mem >= 0) H5Tclose(r->sessions_mem);
    if (r->models_mem >= 0) H5Tclose(r->models_mem);
    free(r->model_names);
    if (r->file >= 0) H5Fclose(r->file);
    free(r);
}

/* Create a complete, empty results file under a temporary name beside path and put it in
 * place: link (path must still be absent: *lost_race when another writer created it first)
 * or, with replace, rename over what is there.  The file stays open in r. */
static int create_in_place(cpb_results *r, const char *path, const cpb_provenance *prov, int replace, int *lost_race,
                           char *err, size_t len)
{
    *lost_race = 0;
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) return fail(err, len, "cannot create %s (%s: is its directory writable?)", path, strerror(errno));
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask); /* mkstemp's 0600 would keep others from reading the results */
    close(fd);
    r->file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    int rc = CPB_OK;
    if (r->file < 0) {
        rc = fail(err, len, "cannot create %s", path);
    } else {
        r->runs = create_table(r->file, RUNS, 1, RUNS_CHUNK);
        r->sessions = create_table(r->file, SESSIONS, 0, 8);
        r->models = create_table(r->file, MODELS, 2, 8);
        if (r->runs < 0 || r->sessions < 0 || r->models < 0 || write_file_attrs(r->file, r->runs, prov) != 0 ||
            H5Fflush(r->file, H5F_SCOPE_GLOBAL) < 0)
            rc = fail(err, len, "cannot create the tables of %s (disk full?)", path);
    }
    if (rc == CPB_OK && (replace ? rename(tmp, path) : link(tmp, path)) != 0) {
        if (!replace && errno == EEXIST) *lost_race = 1;
        rc = *lost_race ? CPB_ERR_IO : fail(err, len, "cannot put the new results file in place as %s: %s", path, strerror(errno));
    }
    if (!replace || rc != CPB_OK) unlink(tmp);
    if (rc == CPB_OK) { /* open it again by its own name: HDF5's messages name the file it opened */
        H5Dclose(r->runs);
        H5Dclose(r->sessions);
        H5Dclose(r->models);
        H5Fclose(r->file);
        r->file = open_waiting(path, H5F_ACC_RDWR);
        r->runs = r->file >= 0 ? H5Dopen2(r->file, RUNS, H5P_DEFAULT) : -1;
        r->sessions = r->file >= 0 ? H5Dopen2(r->file, SESSIONS, H5P_DEFAULT) : -1;
        r->models = r->file >= 0 ? H5Dopen2(r->file, MODELS, H5P_DEFAULT) : -1;
        if (r->runs < 0 || r->sessions < 0 || r->models < 0)
            rc = fail(err, len, "cannot open %s again after creating it", path);
    }
    if (*lost_race) { /* the other writer's file is there: append to it instead */
        H5Dclose(r->runs);
        H5Dclose(r->sessions);
        H5Dclose(r->models);
        H5Fclose(r->file);
        r->file = r->runs = r->sessions = r->models = -1;
    }
    return rc;
}

/* the names /models holds, read once when the file is opened */
static int load_model_names(cpb_results *r, char *err, size_t err_len)
{
    int64_t n = table_rows(r->models);
    if (n < 0) return fail(err, err_len, "%s: %s is not a table", r->path, MODELS);
    r->model_names = calloc((size_t)n + 1, sizeof *r->model_names);
    if (!r->model_names) return fail_code(CPB_ERR_NOMEM_HOST, err, err_len, "out of host memory");
    r->n_models = (int)n;
    if (n == 0) return CPB_OK;
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof *r->model_names);
    insert_str(t, "name", 0, sizeof *r->model_names);
    herr_t rc = H5Dread(r->models, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, r->model_names);
    H5Tclose(t);
    for (int64_t i = 0; i < n; i++) r->model_names[i][sizeof *r->model_names - 1] = 0;
    return rc < 0 ? fail(err, err_len, "cannot read the names of %s in %s", MODELS, r->path) : CPB_OK;
}

/* Before the first row naming model `name`: a row of /models describing it (a preset's
 * fields, or a --model-config file's text and derived numbers); nothing for a shape
 * without a model.  -1 with why when it cannot be written. */
static int ensure_model(cpb_results *r, const char *name, char *why, size_t len)
{
    for (int i = 0; i < r->n_models; i++)
        if (strcmp(r->model_names[i], name) == 0) return 0;
    const cpb_model_spec *sp = cpb_model_spec_find(name);
    cpb_problem p;
    memset(&p, 0, sizeof p);
    if (!sp || cpb_model_shape(name, &p) != CPB_OK) return 0;
    model_rec m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "%s", name);
    snprintf(m.source, sizeof m.source, "%s", sp->source ? sp->source : "");
    snprintf(m.model_type, sizeof m.model_type, "%s", sp->model_type ? sp->model_type : "");
    m.layers = sp->layers;
    m.ffn = sp->ffn;
    m.vocab = sp->vocab;
    cpb_model_param_count c;
    cpb_model_params(&p, sp, &c);
    m.params = c.total;
    m.config = sp->config_text ? sp->config_text : "";
    char (*names)[32] = realloc(r->model_names, (size_t)(r->n_models + 1) * sizeof *names);
    if (!names) {
        snprintf(why, len, "out of host memory");
        return -1;
    }
    r->model_names = names;
    if (append_one(r, r->models, r->models_mem, 8, &m, why, len) != 0) return -1;
    snprintf(r->model_names[r->n_models++], sizeof *names, "%s", name);
    return 0;
}

int cpb_results_open(const char *path, const cpb_provenance *prov, int force, cpb_results **out, char *err,
                     size_t err_len)
{
    *out = NULL;
    cpb_results *r = calloc(1, sizeof *r);
    if (!r) return fail_code(CPB_ERR_NOMEM_HOST, err, err_len, "out of host memory opening %s", path ? path : "");
    r->file = r->runs = r->sessions = r->models = -1;
    snprintf(r->path, sizeof r->path, "%s", path ? path : "");
    quiet_t q = quiet_begin();
    r->runs_mem = runs_type(0);
    r->sessions_mem = sessions_mem_type();
    r->models_mem = models_mem_type();
    int rc = CPB_OK;
    /* a second writer creating the same file at once finds it created: then it appends */
    for (int attempt = 0; attempt < 3; attempt++) {
        int exists = 0, lost = 0;
        if ((rc = path_kind(path, &exists, err, err_len)) != CPB_OK) break;
        if (!exists) {
            rc = cpb_results_check_target(path, force, err, err_len); /* its directory */
            if (rc == CPB_OK) rc = create_in_place(r, path, prov, 0, &lost, err, err_len);
            if (!lost) break;
            rc = fail(err, err_len, "%s was created by other writers at the same time, three times over", path);
            continue;
        }
        rc = check_existing(path, err, err_len);
        if (rc == CPB_ERR_INVALID && force) { /* not a results file: replaced */
            rc = create_in_place(r, path, prov, 1, &lost, err, err_len);
        } else if (rc == CPB_ERR_INVALID) {
            size_t n = strlen(err);
            snprintf(err + n, err_len - n, "; it was left untouched. Give another file name, or --force to replace it");
        } else if (rc == CPB_OK) {
            r->file = open_waiting(path, H5F_ACC_RDWR);
            if (r->file < 0) {
                rc = fail(err, err_len, "cannot open %s for appending (permissions? another process has held it open for "
                          "%d s?)", path, LOCK_WAIT_S);
            } else if ((rc = cpb_results_check_hid(r->file, path, 1, err, err_len)) == CPB_OK) {
                r->runs = H5Dopen2(r->file, RUNS, H5P_DEFAULT);
                r->sessions = H5Dopen2(r->file, SESSIONS, H5P_DEFAULT);
                r->models = H5Dopen2(r->file, MODELS, H5P_DEFAULT);
                if (r->runs < 0 || r->sessions < 0 || r->models < 0)
                    rc = fail(err, err_len, "cannot open the tables of %s", path);
            }
        }
        break;
    }
    if (rc == CPB_OK) rc = load_model_names(r, err, err_len);
    if (rc == CPB_OK) {
        r->session = (int32_t)table_rows(r->sessions);
        char why[512];
        if (append_one(r, r->sessions, r->sessions_mem, 8, prov, why, sizeof why) != 0)
            rc = fail(err, err_len, "cannot record this session's provenance in %s: %s", path, why);
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
    char why[640];
    int rc = CPB_OK;
    const int64_t before = table_rows(f->runs);
    if (ensure_model(f, row->model, why, sizeof why) != 0)
        rc = fail(err, err_len, "cannot append a row to %s (%lld rows before it): recording its model %s in %s: %s",
                  f->path, (long long)before, row->model, MODELS, why);
    else if (append_one(f, f->runs, f->runs_mem, RUNS_CHUNK, row, why, sizeof why) != 0)
        rc = fail(err, err_len, "cannot append a row to %s (%lld rows before it): %s", f->path, (long long)before, why);
    quiet_end(q);
    return rc;
}

int64_t cpb_results_rows(const cpb_results *f) { return table_rows(f->runs); }

void cpb_results_close(cpb_results *f)
{
    if (!f) return;
    quiet_t q = quiet_begin();
    close_handles(f);
    H5Eclear2(H5E_DEFAULT);
    quiet_end(q);
}

int cpb_results_write_row(const char *path, int force, int argc, char **argv, const cpb_backend *be, cpb_row *row,
                          char *err, size_t err_len)
{
    cpb_provenance prov;
    cpb_provenance_collect(&prov, argc, argv, be, row->gpu, row->world_size);
    cpb_results *f = NULL;
    int rc = cpb_results_open(path, &prov, force, &f, err, err_len);
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
    int exists;
    int rc = path_kind(path, &exists, err, err_len);
    if (rc != CPB_OK) return rc;
    if (!exists) {
        snprintf(err, err_len, "%s does not exist", path);
        return CPB_ERR_IO;
    }
    quiet_t q = quiet_begin();
    hid_t f = -1;
    if (H5Fis_hdf5(path) <= 0) {
        rc = refuse(err, err_len, "%s is not an HDF5 file", path);
    } else if ((f = open_waiting(path, H5F_ACC_RDONLY)) < 0) {
        rc = fail(err, err_len, "cannot open %s for reading", path);
    } else if ((rc = cpb_results_check_hid(f, path, 0, err, err_len)) == CPB_OK) {
        rc = cpb_results_read_hid(f, path, rows, n, err, err_len);
    }
    if (f >= 0) H5Fclose(f);
    H5Eclear2(H5E_DEFAULT);
    quiet_end(q);
    return rc;
}
