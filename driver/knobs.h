/* knobs.h — the method options ("knobs") of every method in one list: what the command line
 * accepts, what the results file has columns for and what the point key compares.  Each is
 * declared once in its method's table (cpb_method.h); a knob of something other than a
 * method that every point carries (the model scope's, say) goes in a table of the driver's
 * (knobs.c) or is registered with cpb_knobs_register. */
#ifndef CPB_KNOBS_H
#define CPB_KNOBS_H

#include <stddef.h>
#include <stdint.h>

#include "cpb_backend.h"
#include "cpb_method.h"

#ifdef __cplusplus
extern "C" {
#endif

/* the knobs, each name once: every method's in registry order, then the driver's */
int cpb_knob_count(void);
const cpb_knob *cpb_knob_at(int i);
/* index of knob `name` in that list, -1 when there is none */
int cpb_knob_index(const char *name);
/* the declaration of knob `name` that applies to method m (its own, or one every point
 * has); NULL when m has no such knob */
const cpb_knob *cpb_knob_of(const cpb_method *m, const char *name);
/* add a table (ended by {NULL}) of knobs every point carries; CPB_ERR_INVALID when the
 * list would hold more than CPB_MAX_KNOBS */
int cpb_knobs_register(const cpb_knob *table);
/* 0 when every knob declared by more than one table is declared alike (type, default,
 * choices); else CPB_ERR_INVALID naming the knob and the tables' differences */
int cpb_knob_tables_agree(char *err, size_t err_len);

/* A size: a non-negative integer with an optional binary suffix K, M, G, T (or k, m, g, t):
 * "131072", "128K", "1.5M", "2T" (must come out integral).  Returns 0, or -1 if malformed. */
int cpb_parse_size(const char *s, int64_t *out);

/* 1 when v is one of the '|'-separated choices ("cpu|sim|cuda") */
int cpb_in_choices(const char *v, const char *choices);

/* "--head-chunk" for head_chunk */
void cpb_knob_option(const cpb_knob *k, char *out, size_t len);
/* Parse v as a value of k into out (by name).  CPB_ERR_INVALID with a message that names the
 * option and what it accepts. */
int cpb_knob_parse(const cpb_knob *k, const char *v, cpb_knobs *out, char *err, size_t err_len);

/* 1 when knob k belongs to the points of backend be at `scope` ("layer" or "model"): its
 * value is then the point's column and part of its key (cpb_knob_points) */
int cpb_knob_belongs(const cpb_knob *k, const cpb_backend *be, const char *scope);
/* the points a driver's knob belongs to, for --help: "every point", "sim", "sim model scope" */
const char *cpb_knob_points_name(const cpb_knob *k);

/* The knobs of the point (m, p): p->knobs becomes m's knobs (and those every point has),
 * each with its value in `given` or its default; then each knob's check.  p's shape, S and
 * C must be set.  CPB_ERR_REFUSED with the check's message when a check says no. */
int cpb_knobs_apply(const cpb_method *m, const cpb_knobs *given, cpb_problem *p, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif
#endif
