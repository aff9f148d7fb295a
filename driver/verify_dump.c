/* verify_dump.c — `verify --dump FILE`: inputs as the method used them and its gathered
 * results, as float32 HDF5 datasets with the shape as attributes.  Written to a temporary
 * file beside FILE and renamed, so an interrupted or failed write never leaves a truncated
 * FILE; FILE is replaced only when it is an earlier dump (its `cpbench_dump` attribute) or
 * --force says so. */
#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input_file.h"
#include "verify.h"

static int write_f32(hid_t f, const char *name, int64_t rows, int64_t cols, const float *data)
{
    hsize_t dims[2] = {(hsize_t)rows, (hsize_t)cols};
    hid_t sp = H5Screate_simple(2, dims, NULL);
    if (sp < 0) return -1;
    hid_t ds = H5Dcreate2(f, name, H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = ds < 0 ? -1 : (H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0 ? -1 : 0);
    if (ds >= 0) H5Dclose(ds);
    H5Sclose(sp);
    return rc;
}

static int write_f64_as_f32(hid_t f, const char *name, int64_t rows, int64_t cols, const double *data)
{
    float *tmp = malloc(sizeof(float) * (size_t)(rows * cols));
    if (!tmp) return -1;
    for (int64_t i = 0; i < rows * cols; i++) tmp[i] = (float)data[i];
    int rc = write_f32(f, name, rows, cols, tmp);
    free(tmp);
    return rc;
}

/* a scalar attribute: stored as file_type, given in memory as mem_type */
static int attr_scalar(hid_t f, const char *name, hid_t file_type, hid_t mem_type, const void *v)
{
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, name, file_type, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a < 0 ? -1 : (H5Awrite(a, mem_type, v) < 0 ? -1 : 0);
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    return rc;
}

static int attr_i64(hid_t f, const char *name, int64_t v)
{
    return attr_scalar(f, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}

static int attr_f64(hid_t f, const char *name, double v)
{
    return attr_scalar(f, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}

static int attr_str(hid_t f, const char *name, const char *v)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(v) + 1);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a < 0 ? -1 : (H5Awrite(a, t, v) < 0 ? -1 : 0);
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
    return rc;
}

#define DUMP_ATTR "cpbench_dump"
#define DUMP_KIND "cpbench-verify-dump"

/* 1 when path is an HDF5 file whose DUMP_ATTR says it is a dump */
static int is_dump(const char *path)
{
    if (H5Fis_hdf5(path) <= 0) return 0;
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return 0;
    int yes = 0;
    if (H5Aexists(f, DUMP_ATTR) > 0) {
        hid_t a = H5Aopen(f, DUMP_ATTR, H5P_DEFAULT), t = a >= 0 ? H5Aget_type(a) : -1, sp = a >= 0 ? H5Aget_space(a) : -1;
        char buf[64] = "";
        if (t >= 0 && sp >= 0 && H5Tget_class(t) == H5T_STRING && !H5Tis_variable_str(t) && H5Tget_size(t) < sizeof buf &&
            H5Sget_simple_extent_npoints(sp) == 1) {
            hid_t mt = H5Tcopy(H5T_C_S1);
            H5Tset_size(mt, sizeof buf);
            yes = H5Aread(a, mt, buf) >= 0 && strcmp(buf, DUMP_KIND) == 0;
            H5Tclose(mt);
        }
        if (sp >= 0) H5Sclose(sp);
        if (t >= 0) H5Tclose(t);
        if (a >= 0) H5Aclose(a);
    }
    H5Fclose(f);
    return yes;
}

int cpb_verify_dump_check(const char *path, int force, char *err, size_t err_len)
{
    H5E_auto2_t fn;
    void *data;
    H5Eget_auto2(H5E_DEFAULT, &fn, &data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    /* the checked look of every file named on the command line (input_file.h): a FIFO, a
     * directory, a device, a dangling symbolic link, a path through a file, a name too long
     * or a loop of links is bad input */
    int exists = 0;
    int rc = cpb_path_check(path, "--dump", 1, &exists, err, err_len);
    if (rc != CPB_OK) {
        rc = CPB_ERR_INVALID;
    } else if (!exists) {
        char dir[4096];
        const char *slash = strrchr(path, '/');
        if (!slash) snprintf(dir, sizeof dir, ".");
        else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path) > 0 ? (int)(slash - path) : 1, path);
        if (access(dir, W_OK | X_OK) != 0) {
            snprintf(err, err_len, "--dump: cannot create '%s' (does the directory %s exist and is it writable?)", path, dir);
            rc = CPB_ERR_INVALID;
        }
    } else if (!force && !is_dump(path)) {
        snprintf(err, err_len, "--dump: '%s' exists and is not a cpbench verify dump; it was left untouched. Give "
                 "another file name, or --force to replace it", path);
        rc = CPB_ERR_INVALID;
    }
    H5Eclear2(H5E_DEFAULT);
    H5Eset_auto2(H5E_DEFAULT, fn, data);
    return rc;
}

int cpb_verify_dump(const char *path, const cpb_dump_info *info, char *err, size_t err_len)
{
    const cpb_problem *p = info->p;
    const int64_t S = p->S, D = p->D, HD = (int64_t)p->H * p->d, GD = (int64_t)p->G * p->d;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(tmp); /* a name of its own: never a file someone else has there */
    if (fd < 0) {
        snprintf(err, err_len, "--dump: cannot create a temporary file beside '%s': %s", path, strerror(errno));
        return CPB_ERR_IO;
    }
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask);
    close(fd);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* our message names the file; HDF5's stack is noise */
    hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) {
        remove(tmp);
        snprintf(err, err_len, "--dump: cannot create '%s' (does the directory exist and is it writable?)", tmp);
        return CPB_ERR_IO;
    }
    /* inputs (global, rounded to the storage dtype) then results */
    static const char *const in_names[6] = {"x", "wq", "wk", "wv", "wo", "dy"};
    const int64_t in_rows[6] = {S, D, D, D, HD, S}, in_cols[6] = {D, HD, GD, GD, D, D};
    const int64_t out_rows[CPB_VT_COUNT] = {S, S, D, D, D, HD}, out_cols[CPB_VT_COUNT] = {D, D, HD, GD, GD, D};
    int bad = 0;
    for (int i = 0; i < 6 && !bad; i++) bad = write_f32(f, in_names[i], in_rows[i], in_cols[i], info->in[i]);
    for (int t = 0; t < CPB_VT_COUNT && !bad; t++)
        bad = write_f64_as_f32(f, cpb_vt_names[t], out_rows[t], out_cols[t], info->res->t[t]);
    bad = bad || attr_i64(f, "hidden", D) || attr_i64(f, "heads", p->H) || attr_i64(f, "kv_heads", p->G) ||
          attr_i64(f, "head_dim", p->d) || attr_f64(f, "rope_base", p->rope_base) || attr_i64(f, "seq", S) ||
          attr_i64(f, "world_size", p->C) || attr_str(f, "method", info->method) ||
          attr_str(f, "dtype", cpb_dtype_name(p->dtype)) || attr_i64(f, "peak_bytes", info->res->peak) ||
          attr_i64(f, "intermediate_bytes", info->res->intermediate) || attr_str(f, DUMP_ATTR, DUMP_KIND);
    if (H5Fclose(f) < 0) bad = 1;
    if (bad) {
        remove(tmp);
        snprintf(err, err_len, "--dump: writing '%s' failed (disk full?); no file was left behind", tmp);
        return CPB_ERR_IO;
    }
    if (rename(tmp, path) != 0) {
        remove(tmp);
        snprintf(err, err_len, "--dump: cannot rename '%s' to '%s'", tmp, path);
        return CPB_ERR_IO;
    }
    return CPB_OK;
}
