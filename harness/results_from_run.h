/* results_from_run.h — a results-table row (results_h5.h) from the row `cpbench run` makes
 * (run_trial.h), plus the problem's shape, so `run --out` and `sweep` write the same rows. */
#ifndef CPB_RESULTS_FROM_RUN_H
#define CPB_RESULTS_FROM_RUN_H

#include "results_h5.h"
#include "run_trial.h"

#ifdef __cplusplus
extern "C" {
#endif

/* warmup/iters: what the trial ran (0 on sim, which models one step) */
void cpb_results_from_run(const cpb_run_row *in, const cpb_problem *p, int warmup, int iters,
                          cpb_results_row *out);

/* the identifying columns of a trial before it runs (method, model, backend, gpu, scope,
 * shape, options): used to find it among a file's earlier rows */
void cpb_results_point(const cpb_problem *p, const char *method, const char *backend,
                       const char *gpu, const char *scope, cpb_results_row *out);
/* the simulator's identifying options: the framework of a model-scope row (resolved:
 * "" asks for the default) and --host-ram as asked */
#define CPB_FRAMEWORK_DEFAULT "torchtitan"
void cpb_results_sim_point(const char *scope, const char *framework, int64_t host_ram, cpb_results_row *o);

#ifdef __cplusplus
}
#endif
#endif
