/* cmd_verify.c — `cpbench verify`: the options of a command line (or of one line of a case
 * file) turned into a verify invocation of the driver (verify.h).  main has started MPI:
 * every rank runs this. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ranks.h"
#include "registry.h"
#include "verify.h"

/* rank 0: an error that stops the whole invocation */
static void report_error(const char *label, const char *msg)
{
    if (cpb_ranks_rank() != 0) return;
    if (label) printf("%-28s ERROR: %s\n", label, msg);
    else printf("verify: %s\n", msg);
    fflush(stdout);
}

int cpb_cli_verify(const cpb_args *a, const char *label)
{
    static cpb_verify_opts o; /* large (the problem); one invocation at a time */
    memset(&o, 0, sizeof o);
    char msg[8192] = ""; /* room for a plugin loader's list of the places it searched */
    int rc = CPB_OK, n = 0;
    o.be = cpb_backend_find(a->backend, msg, sizeof msg);
    if (!o.be) {
        rc = CPB_ERR_INVALID;
    } else if (!o.be->has_data) {
        snprintf(msg, sizeof msg, "--backend %s has no data to compare; verify runs on a backend with data (cpu, "
                 "cuda)", o.be->name);
        rc = CPB_ERR_INVALID;
    } else if (o.be->probe && o.be->probe(msg, sizeof msg) <= 0) {
        /* a backend that cannot start here (no GPU, a library missing) refuses before any work */
        char why[sizeof msg];
        snprintf(why, sizeof why, "%s", msg);
        snprintf(msg, sizeof msg, "the %s backend cannot run here: %s", o.be->name, why);
        report_error(label, msg);
        return 2;
    }
    if (rc == CPB_OK) rc = cpb_args_problem(a, NULL, cpb_ranks_size(), &o.p, msg, sizeof msg);
    if (rc == CPB_OK && (n = cpb_args_methods(a, o.methods, CPB_VERIFY_MAX_METHODS, msg, sizeof msg)) < 0)
        rc = CPB_ERR_INVALID;
    if (rc != CPB_OK) {
        /* a shape the problem itself cannot have (S % C, H % G, ...) is a refusal too */
        int refused_ok = a->expect_refuse && n >= 0 && o.be && o.be->has_data && a->method[0] && a->model[0] &&
                         a->seq > 0;
        if (cpb_ranks_rank() == 0 && refused_ok) {
            if (label) printf("%-28s %-10s %s: %s\n", label, a->method, cpb_verdict_name(CPB_VERDICT_REFUSED_OK), msg);
            else printf("%s: refused as expected: %s\n", a->method, msg);
        } else if (!refused_ok) {
            report_error(label, msg);
        }
        return refused_ok ? 0 : 2;
    }
    o.n_methods = n;
    o.all = strcmp(a->method, "all") == 0;
    cpb_args_ctx_opts(a, &o.ctx);
    o.knobs = a->knobs;
    o.seed = a->seed;
    o.dump = a->dump;
    o.force = a->force;
    o.expect_refuse = a->expect_refuse;
    return cpb_verify_invocation(&o, label);
}

int cpb_cmd_verify(const cpb_cli *c)
{
    int rc = c->a.n_cases ? cpb_cli_verify_cases(&c->a) : cpb_cli_verify(&c->a, NULL);
    fflush(stdout);
    return rc;
}
