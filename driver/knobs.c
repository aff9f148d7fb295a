/* knobs.c — the list of every knob, and a point's knob values (knobs.h). */
#include "knobs.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_choice.h"
#include "model_scope.h"
#include "model_scope_pp.h"
#include "sim_layer.h"
#include "tp_compose.h"

/* Knobs every point carries, whatever its method (each belongs to the points its `points`
 * says): the simulator's and the model scope's.  A table added here (or by
 * cpb_knobs_register) gets its options, columns and point-key fields like a method's.
 * attn (--attn) comes first: it is an accounting input on every backend. */
static const cpb_knob *const driver_tables[] = {cpb_attn_knobs, cpb_sim_knobs, cpb_model_scope_knobs, cpb_setup_knobs,
                                                   cpb_tp_knobs, cpb_pp_knobs, NULL};

#define MAX_EXTRA 8
static const cpb_knob *extra_tables[MAX_EXTRA];
static int n_extra;

static const cpb_knob *list[CPB_MAX_KNOBS];
static int n_list = -1; /* -1: not built yet */

/* the tables every point has: the driver's, then the registered ones */
static const cpb_knob *general_table(int i)
{
    int nd = (int)(sizeof driver_tables / sizeof driver_tables[0]) - 1;
    if (i < nd) return driver_tables[i];
    i -= nd;
    return i < n_extra ? extra_tables[i] : NULL;
}

static int add_table(const cpb_knob *t)
{
    for (const cpb_knob *k = t; k && k->name; k++) {
        int seen = 0;
        for (int j = 0; j < n_list; j++) seen |= strcmp(list[j]->name, k->name) == 0;
        if (seen) continue;
        if (n_list >= CPB_MAX_KNOBS) return CPB_ERR_INVALID;
        list[n_list++] = k;
    }
    return CPB_OK;
}

static int build(void)
{
    if (n_list >= 0) return CPB_OK;
    n_list = 0;
    int rc = CPB_OK;
    for (int i = 0; i < cpb_method_count() && rc == CPB_OK; i++) rc = add_table(cpb_method_at(i)->knobs);
    for (int i = 0; general_table(i) && rc == CPB_OK; i++) rc = add_table(general_table(i));
    return rc;
}

int cpb_knob_count(void)
{
    build();
    return n_list;
}

const cpb_knob *cpb_knob_at(int i)
{
    build();
    return i >= 0 && i < n_list ? list[i] : NULL;
}

int cpb_knob_index(const char *name)
{
    build();
    for (int i = 0; i < n_list; i++)
        if (strcmp(list[i]->name, name) == 0) return i;
    return -1;
}

static const cpb_knob *in_table(const cpb_knob *t, const char *name)
{
    for (const cpb_knob *k = t; k && k->name; k++)
        if (strcmp(k->name, name) == 0) return k;
    return NULL;
}

const cpb_knob *cpb_knob_of(const cpb_method *m, const char *name)
{
    const cpb_knob *k = m ? in_table(m->knobs, name) : NULL;
    for (int i = 0; !k && general_table(i); i++) k = in_table(general_table(i), name);
    return k;
}

int cpb_knobs_register(const cpb_knob *table)
{
    if (n_extra >= MAX_EXTRA) return CPB_ERR_INVALID;
    extra_tables[n_extra++] = table;
    n_list = -1;
    if (build() != CPB_OK) {
        n_extra--;
        n_list = -1;
        build();
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

static int same_text(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

int cpb_knob_tables_agree(char *err, size_t err_len)
{
    if (build() != CPB_OK) {
        snprintf(err, err_len, "more than %d distinct knobs: raise CPB_MAX_KNOBS", CPB_MAX_KNOBS);
        return CPB_ERR_INVALID;
    }
    for (int i = 0; i < cpb_method_count(); i++) {
        const cpb_method *m = cpb_method_at(i);
        for (const cpb_knob *k = m->knobs; k && k->name; k++) {
            const cpb_knob *first = list[cpb_knob_index(k->name)];
            if (k->type != first->type || !same_text(k->def, first->def) || !same_text(k->choices, first->choices)) {
                snprintf(err, err_len, "knob %s: %s declares it as type %d, default '%s', choices '%s'; an earlier table "
                         "as type %d, default '%s', choices '%s': declare it alike (methods/common/knobs.h)", k->name,
                         m->name, (int)k->type, k->def ? k->def : "", k->choices ? k->choices : "", (int)first->type,
                         first->def ? first->def : "", first->choices ? first->choices : "");
                return CPB_ERR_INVALID;
            }
        }
    }
    return CPB_OK;
}

int cpb_parse_size(const char *s, int64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+') return -1;
    size_t n = strlen(s);
    int64_t mult = 1;
    switch (s[n - 1]) {
    case 'K': case 'k': mult = 1024; n--; break;
    case 'M': case 'm': mult = 1024 * 1024; n--; break;
    case 'G': case 'g': mult = 1024 * 1024 * 1024; n--; break;
    case 'T': case 't': mult = (int64_t)1 << 40; n--; break;
    default: break;
    }
    if (n == 0 || n > 40) return -1;
    char num[48];
    memcpy(num, s, n);
    num[n] = 0;
    if (strspn(num, "0123456789") == n) {
        /* plain integer: exact, no floating point */
        errno = 0;
        char *end;
        unsigned long long v = strtoull(num, &end, 10);
        if (errno || *end || v > (unsigned long long)(INT64_MAX / mult)) return -1;
        *out = (int64_t)v * mult;
        return 0;
    }
    if (strspn(num, "0123456789.") != n || strchr(num, '.') != strrchr(num, '.')) return -1;
    char *end;
    double v = strtod(num, &end) * (double)mult;
    if (*end || !(v >= 0) || v > 9.0e18 || v != floor(v)) return -1;
    *out = (int64_t)v;
    return 0;
}

void cpb_knob_option(const cpb_knob *k, char *out, size_t len)
{
    if (k->option) {
        snprintf(out, len, "%s", k->option);
        return;
    }
    snprintf(out, len, "--%s", k->name);
    for (char *c = out + 2; *c; c++)
        if (*c == '_') *c = '-';
}

int cpb_in_choices(const char *v, const char *choices)
{
    size_t n = strlen(v);
    for (const char *c = choices ? choices : ""; *c;) {
        const char *bar = strchr(c, '|');
        size_t len = bar ? (size_t)(bar - c) : strlen(c);
        if (len == n && strncmp(c, v, n) == 0) return 1;
        if (!bar) break;
        c = bar + 1;
    }
    return 0;
}

int cpb_knob_parse(const cpb_knob *k, const char *v, cpb_knobs *out, char *err, size_t err_len)
{
    char opt[64];
    cpb_knob_option(k, opt, sizeof opt);
    if (k->type == CPB_KNOB_CHOICE) {
        if (!cpb_in_choices(v, k->choices) || cpb_knobs_set_str(out, k->name, v) != CPB_OK) {
            snprintf(err, err_len, "%s '%s': expected one of %s", opt, v, k->choices ? k->choices : "(none)");
            return CPB_ERR_INVALID;
        }
        return CPB_OK;
    }
    int64_t x;
    const int64_t max = k->type == CPB_KNOB_INT ? 0x7fffffff : INT64_MAX;
    if (cpb_parse_size(v, &x) != 0 || x > max || (x == 0 && strcmp(v, "0") != 0) ||
        cpb_knobs_set_int(out, k->name, x) != CPB_OK) {
        const char *what = k->type == CPB_KNOB_TOKENS ? "positive number of tokens (K/M/G suffixes allowed)"
                           : k->type == CPB_KNOB_BYTES ? "positive size in bytes such as 64G or 2T (K/M/G/T suffixes)"
                                                       : "positive integer (K/M/G suffixes allowed)";
        snprintf(err, err_len, "%s '%s': expected a %s%s", opt, v, what,
                 strcmp(k->def ? k->def : "", "0") == 0 ? ", or 0 for the default" : "");
        return CPB_ERR_INVALID;
    }
    return CPB_OK;
}

/* knob k of the point: the given value, else the default */
static int apply_one(const cpb_knob *k, const cpb_knobs *given, cpb_knobs *out, char *err, size_t err_len)
{
    const cpb_knob_value *g = given ? cpb_knobs_find(given, k->name) : NULL;
    if (g) {
        cpb_knob_value v = *g;
        if (k->type == CPB_KNOB_CHOICE) return cpb_knobs_set_str(out, k->name, v.s);
        return cpb_knobs_set_int(out, k->name, v.i);
    }
    return cpb_knob_parse(k, k->def ? k->def : "", out, err, err_len);
}

int cpb_knob_belongs(const cpb_knob *k, const cpb_backend *be, const char *scope)
{
    switch (k->points) {
    case CPB_KNOB_TIMING_MODEL_POINTS: return be && be->models_time;
    case CPB_KNOB_MODEL_SCOPE_POINTS: return scope && strcmp(scope, "model") == 0;
    default: return 1;
    }
}

const char *cpb_knob_points_name(const cpb_knob *k)
{
    switch (k->points) {
    case CPB_KNOB_TIMING_MODEL_POINTS: return "sim";
    case CPB_KNOB_MODEL_SCOPE_POINTS: return "sim model scope";
    default: return "every point";
    }
}

int cpb_knobs_apply(const cpb_method *m, const cpb_knobs *given, cpb_problem *p, char *err, size_t err_len)
{
    memset(&p->knobs, 0, sizeof p->knobs);
    CPB_TRY(build());
    for (int i = 0; i < n_list; i++) {
        const cpb_knob *k = cpb_knob_of(m, list[i]->name);
        if (k) CPB_TRY(apply_one(k, given, &p->knobs, err, err_len));
    }
    for (int i = 0; i < n_list; i++) {
        const cpb_knob *k = cpb_knob_of(m, list[i]->name);
        char why[512] = "";
        if (k && k->check && k->check(p, why, sizeof why) != CPB_OK) {
            snprintf(err, err_len, "%s", why[0] ? why : k->name);
            return CPB_ERR_REFUSED; /* the method refuses this option at this shape */
        }
    }
    return CPB_OK;
}
