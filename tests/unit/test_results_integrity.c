/* test_results_integrity.c — a row reaches /runs whole or not at all, and no results write
 * replaces a file that is not its own: a write that fails part-way (a file-size limit, as a
 * full disk) leaves the table as it was; an incomplete row is never read back; a file of
 * other at_peak_tags, a FIFO or a foreign file is refused (untouched) unless --force replaces
 * it; two writers creating one file at once both get their rows in. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <hdf5.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry.h"
#include "results_h5.h"

static char dir[256];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/cpb_integrity_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void prov(cpb_provenance *p)
{
    char *argv[] = {"cpbench", "sweep"};
    cpb_provenance_collect(p, 2, argv, &cpb_backend_sim, "h100-sxm", 8);
}

static void fill_row(cpb_row *r, int i)
{
    cpb_row_init(r);
    CPB_ROW_SET(r, method, "ring");
    CPB_ROW_SET(r, model, "llama3-8b");
    CPB_ROW_SET(r, backend, "sim");
    CPB_ROW_SET(r, gpu, "h100-sxm");
    CPB_ROW_SET(r, reason, "a reason long enough to fill the chunks of the table faster than a plain ok row would");
    r->world_size = 8;
    r->seq_len = 1000 + i;
    r->peak_bytes = 12345 + i;
}

/* rows of /runs as any HDF5 reader sees them (the extent, incomplete rows included) */
static int64_t raw_rows(const char *path)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    cr_assert_geq(f, 0);
    hid_t d = H5Dopen2(f, "/runs", H5P_DEFAULT), sp = H5Dget_space(d);
    hsize_t n = 0;
    H5Sget_simple_extent_dims(sp, &n, NULL);
    H5Sclose(sp);
    H5Dclose(d);
    H5Fclose(f);
    return (int64_t)n;
}

static uint64_t checksum(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    uint64_t h = 1469598103934665603ull;
    int c;
    while ((c = fgetc(f)) != EOF) h = (h ^ (unsigned)c) * 1099511628211ull;
    fclose(f);
    return h;
}

/* A file-size limit stands for a full disk: the append that finds no room for a new chunk
 * is refused before it changes anything (its room is reserved on disk first), no blank row
 * is left on disk, and once there is room again the same file takes more rows. */
Test(results_integrity, a_failed_append_leaves_the_table_as_it_was)
{
    make_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/full.h5", dir);
    cpb_provenance p;
    prov(&p);
    cpb_results *f = NULL;
    char err[1024] = "";
    cr_assert_eq(cpb_results_open(path, &p, 0, &f, err, sizeof err), CPB_OK, "%s", err);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    signal(SIGXFSZ, SIG_IGN); /* a write past the limit fails with EFBIG instead of killing */
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = (rlim_t)st.st_size + (700 << 10);
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int appended = 0, failed = 0;
    for (int i = 0; i < 400 && !failed; i++) {
        cpb_row r;
        fill_row(&r, i);
        if (cpb_results_append(f, &r, err, sizeof err) == CPB_OK) appended++;
        else failed = 1;
    }
    setrlimit(RLIMIT_FSIZE, &old);
    cr_assert(failed, "the file size limit should stop an append (%d rows went in)", appended);
    cr_expect(strstr(err, "the table is as it was") != NULL, "%s", err);
    cr_expect_gt(appended, 32, "rows went in, a new chunk among them, before the limit was reached");
    cr_expect_eq(cpb_results_rows(f), appended, "the table in memory");
    cpb_results_close(f);
    cr_expect_eq(raw_rows(path), appended, "the table on disk: no incomplete row");
    cpb_row *rows = NULL;
    int64_t n = 0;
    cr_assert_eq(cpb_results_read(path, &rows, &n, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(n, appended, "%lld rows read, %d appended", (long long)n, appended);
    for (int64_t i = 0; i < n; i++) cr_expect_eq(rows[i].seq_len, 1000 + i, "row %lld whole", (long long)i);
    free(rows);
    /* room again: the next session appends after them */
    cr_assert_eq(cpb_results_open(path, &p, 0, &f, err, sizeof err), CPB_OK, "%s", err);
    cpb_row r;
    fill_row(&r, appended);
    cr_assert_eq(cpb_results_append(f, &r, err, sizeof err), CPB_OK, "%s", err);
    cpb_results_close(f);
    cr_expect_eq(raw_rows(path), appended + 1);
}

/* a row left with an empty status (an append that could not be undone) is not a row */
Test(results_integrity, incomplete_rows_are_never_read)
{
    make_dir();
    char path[512], err[1024] = "";
    snprintf(path, sizeof path, "%s/blank.h5", dir);
    cpb_provenance p;
    prov(&p);
    cpb_results *f = NULL;
    cr_assert_eq(cpb_results_open(path, &p, 0, &f, err, sizeof err), CPB_OK, "%s", err);
    for (int i = 0; i < 3; i++) {
        cpb_row r;
        fill_row(&r, i);
        cr_assert_eq(cpb_results_append(f, &r, err, sizeof err), CPB_OK, "%s", err);
    }
    cpb_results_close(f);
    /* what a writer that died between growing the table and writing its row left */
    hid_t h = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t d = H5Dopen2(h, "/runs", H5P_DEFAULT);
    hsize_t n5 = 5;
    cr_assert_geq(H5Dset_extent(d, &n5), 0);
    H5Dclose(d);
    H5Fclose(h);
    cpb_row *rows = NULL;
    int64_t n = 0;
    cr_assert_eq(cpb_results_read(path, &rows, &n, err, sizeof err), CPB_OK, "%s", err);
    cr_expect_eq(n, 3, "the 2 blank rows are left out");
    free(rows);
}

static void expect_refused(const char *path, int force, const char *needle)
{
    uint64_t before = checksum(path);
    char err[1024] = "";
    cr_expect_eq(cpb_results_check_target(path, force, err, sizeof err), CPB_ERR_INVALID, "%s", err);
    cr_expect(strstr(err, needle) != NULL, "'%s' should say '%s'", err, needle);
    cpb_provenance p;
    prov(&p);
    cpb_results *f = NULL;
    cr_expect_eq(cpb_results_open(path, &p, force, &f, err, sizeof err), CPB_ERR_INVALID, "%s", err);
    cr_expect_null(f);
    cr_expect_eq(checksum(path), before, "a refused file is untouched");
}

/* changed at_peak_tags: the at_peak_bytes columns would mean other tags */
Test(results_integrity, other_at_peak_tags_are_refused_for_appending)
{
    make_dir();
    char path[512], err[1024];
    snprintf(path, sizeof path, "%s/tags.h5", dir);
    cpb_provenance p;
    prov(&p);
    cpb_results *f = NULL;
    cr_assert_eq(cpb_results_open(path, &p, 0, &f, err, sizeof err), CPB_OK, "%s", err);
    cpb_results_close(f);
    hid_t h = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t d = H5Dopen2(h, "/runs", H5P_DEFAULT);
    H5Adelete(d, "at_peak_tags");
    hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
    const char *tags = "weights,x,y";
    H5Tset_size(t, strlen(tags) + 1);
    hid_t a = H5Acreate2(d, "at_peak_tags", t, sp, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, tags);
    H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
    H5Dclose(d);
    H5Fclose(h);
    expect_refused(path, 0, "at_peak_tags");
}

/* a foreign file: refused untouched, named; --force replaces it with a results file */
Test(results_integrity, force_replaces_a_foreign_file)
{
    make_dir();
    char path[512], err[1024] = "";
    snprintf(path, sizeof path, "%s/notes.h5", dir);
    FILE *fp = fopen(path, "w");
    fputs("my notes\n", fp);
    fclose(fp);
    expect_refused(path, 0, "or --force to replace it");
    cpb_provenance p;
    prov(&p);
    cpb_results *f = NULL;
    cr_assert_eq(cpb_results_open(path, &p, 1, &f, err, sizeof err), CPB_OK, "%s", err);
    cpb_row r;
    fill_row(&r, 0);
    cr_assert_eq(cpb_results_append(f, &r, err, sizeof err), CPB_OK, "%s", err);
    cpb_results_close(f);
    cr_expect_eq(raw_rows(path), 1);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_mode & 0044, 0044 & ~(mode_t)0, "readable by others as a file made by fopen would be (umask 022)");
    /* no temporary file is left beside it */
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls %s | grep -q tmp-", dir);
    cr_expect_neq(system(cmd), 0, "a temporary file was left in %s", dir);
}

/* a FIFO (or a directory) is no file to write or read: refused at once, never opened */
Test(results_integrity, a_fifo_is_refused_without_blocking, .timeout = 20)
{
    make_dir();
    char path[512], err[1024] = "";
    snprintf(path, sizeof path, "%s/fifo", dir);
    cr_assert_eq(mkfifo(path, 0644), 0);
    cr_expect_eq(cpb_results_check_target(path, 1, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "not a regular file (a FIFO)") != NULL, "%s", err);
    cpb_row *rows = NULL;
    int64_t n = 0;
    cr_expect_eq(cpb_results_read(path, &rows, &n, err, sizeof err), CPB_ERR_INVALID);
    cr_expect_eq(cpb_results_check_target(dir, 0, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "a directory") != NULL, "%s", err);
    snprintf(path, sizeof path, "%s/no/such/dir.h5", dir);
    cr_expect_eq(cpb_results_check_target(path, 0, err, sizeof err), CPB_ERR_INVALID);
    cr_expect(strstr(err, "does not exist") != NULL, "%s", err);
}

/* Two writers creating the same file at once: the file appears whole (built beside it and
 * linked into place), the second appends to it; neither is told it is not an HDF5 file. */
Test(results_integrity, two_writers_creating_one_file_both_get_their_rows_in, .timeout = 60)
{
    make_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/race.h5", dir);
    const int writers = 4, rounds = 3;
    for (int round = 0; round < rounds; round++) {
        unlink(path);
        int go[2];
        cr_assert_eq(pipe(go), 0);
        pid_t pid[4];
        for (int w = 0; w < writers; w++) {
            pid[w] = fork();
            cr_assert_geq(pid[w], 0);
            if (pid[w] == 0) {
                close(go[1]);
                char c;
                if (read(go[0], &c, 1) != 0) _exit(9); /* every writer starts when the pipe closes */
                cpb_provenance p;
                prov(&p);
                cpb_results *f = NULL;
                char err[1024] = "";
                int rc = cpb_results_open(path, &p, 0, &f, err, sizeof err);
                if (rc != CPB_OK) {
                    fprintf(stderr, "writer %d: %s\n", w, err);
                    _exit(strstr(err, "not an HDF5 file") ? 3 : 4);
                }
                cpb_row r;
                fill_row(&r, w);
                rc = cpb_results_append(f, &r, err, sizeof err);
                cpb_results_close(f);
                _exit(rc == CPB_OK ? 0 : 5);
            }
        }
        close(go[0]);
        close(go[1]);
        for (int w = 0; w < writers; w++) {
            int st = 0;
            waitpid(pid[w], &st, 0);
            cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "round %d writer %d: exit %d", round, w,
                      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        }
        cr_expect_eq(raw_rows(path), writers, "round %d: every writer's row", round);
    }
}
