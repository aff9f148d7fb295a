/* verify.h — `cpbench verify`: run methods on seeded global inputs over MPI ranks, gather
 * their results to rank 0 and compare them with the fp64 reference layer.  The driver may
 * use MPI directly (methods never do): the functions here are collective over
 * MPI_COMM_WORLD, which main has initialised (ranks.h). */
#ifndef CPB_VERIFY_H
#define CPB_VERIFY_H

#include "cpb_backend.h"
#include "cpb_method.h"
#include "row.h"
#include "trial.h"

/* outcome of one (case, method) */
typedef enum cpb_verdict {
    CPB_VERDICT_PASS = 0,
    CPB_VERDICT_FAIL,          /* ran, error above the bar (or accepted under --expect-refuse) */
    CPB_VERDICT_REFUSED_OK,    /* refused under --expect-refuse: a pass */
    CPB_VERDICT_REFUSED,       /* refused without --expect-refuse */
    CPB_VERDICT_ERROR,         /* could not run: bad options, backend or trial error */
} cpb_verdict;
const char *cpb_verdict_name(cpb_verdict v);

/* The six compared tensors, in report and dump order. */
enum { CPB_VT_Y, CPB_VT_DX, CPB_VT_DWQ, CPB_VT_DWK, CPB_VT_DWV, CPB_VT_DWO, CPB_VT_COUNT };
extern const char *const cpb_vt_names[CPB_VT_COUNT];

/* A method's results on rank 0, in global order (fp64): y, dx [S][D]; dW assembled. */
typedef struct cpb_verify_results {
    double *t[CPB_VT_COUNT];
    int64_t n[CPB_VT_COUNT];      /* element counts */
    /* memory, the largest over ranks */
    int64_t peak, intermediate, host_peak;
    int peak_rank, host_rank;
    int64_t dev_at_peak[CPB_TAG_COUNT], host_at_peak[CPB_TAG_COUNT];
    int64_t dev_tag_peak[CPB_TAG_COUNT]; /* per-tag high-water, largest over ranks */
} cpb_verify_results;

/* element counts of the six tensors for p */
void cpb_verify_counts(const cpb_problem *p, int64_t n[CPB_VT_COUNT]);
int cpb_verify_results_alloc(const cpb_problem *p, cpb_verify_results *r);
void cpb_verify_results_free(cpb_verify_results *r);

/* Collective: download this rank's y, dx and dW pieces from L, put them in their global
 * places and sum them on rank 0 (tokens: each exactly once; dW: partial sums add, shards
 * land in their columns/rows).  Memory from this rank's row of the trial, the largest over
 * ranks.  Returns CPB_OK or an error with a message in err (the same on every rank). */
int cpb_verify_gather(cpb_ctx *ctx, const cpb_layer *L, const cpb_row *tr, cpb_verify_results *out,
                      char *err, size_t err_len);

/* Rank 0: write the inputs (as used) and the results to an HDF5 file, via a temporary file
 * beside it and a rename, so a failure leaves no partial file.  The file is marked as a dump
 * (attribute cpbench_dump = "cpbench-verify-dump"). */
typedef struct cpb_dump_info {
    const cpb_problem *p;
    const char *method;
    const float *in[6];            /* x, wq, wk, wv, wo, dy: global, rounded */
    const cpb_verify_results *res;
} cpb_dump_info;
int cpb_verify_dump(const char *path, const cpb_dump_info *info, char *err, size_t err_len);
/* Before any work: CPB_OK when path may take a dump (absent in a writable directory, an
 * earlier dump, or any regular file with force); CPB_ERR_INVALID with a message otherwise
 * (a file that is not a dump, a FIFO, a directory, a missing directory). */
int cpb_verify_dump_check(const char *path, int force, char *err, size_t err_len);

#define CPB_VERIFY_MAX_METHODS 64

/* One verify invocation: the options of a command line or of one case line. */
typedef struct cpb_verify_opts {
    const cpb_backend *be;         /* a backend with data */
    cpb_ctx_opts ctx;              /* capacities, --comm, race check (use_mpi is set here) */
    const cpb_method *methods[CPB_VERIFY_MAX_METHODS];
    int n_methods;
    int all;                       /* --method all: a refusal skips the method */
    cpb_problem p;                 /* the problem on the world's ranks, without knobs */
    cpb_knobs knobs;               /* the method options given: each method takes its own */
    uint64_t seed;
    const char *dump;              /* --dump FILE.h5 (per method FILE.<method>.h5 when several) */
    int force;                     /* --force: the dump may replace a file that is not a dump */
    int expect_refuse;             /* a refusal passes, an acceptance fails */
} cpb_verify_opts;

/* Collective: run o's methods.  label != NULL selects the one-line-per-method summary of
 * case files.  Returns the exit code: 0 all passed, 1 a failure, 2 a refused shape (the
 * same on every rank). */
int cpb_verify_invocation(const cpb_verify_opts *o, const char *label);

#endif
