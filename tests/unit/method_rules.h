/* method_rules.h — the checks of the method author's checklist (runtime/cpb_method.h), for one
 * method at one shape, shared by the tests that loop over the registry.  Each returns 0 when
 * the method keeps the rule, else non-zero with a message in why that starts with the
 * method's name, so a failing registry loop says which method broke which rule. */
#ifndef CPB_TEST_METHOD_RULES_H
#define CPB_TEST_METHOD_RULES_H

#include <stddef.h>

#include "cpb_method.h"
#include "row.h"

/* Rules 1, 2 and 4 on the simulator, replaying every rank: check() is pure and a refusal has
 * a reason (and is what the trial reports); an accepted shape runs to "ok" (so every rank
 * made the same allocations, and no failure while running passed for a refusal); when
 * backward returns, only the layer's own tags and the workspace are live on the device and
 * nothing on the host.  *accepted says whether check() took the shape. */
int cpb_rules_memory(const cpb_method *m, const cpb_problem *p, int *accepted, char *why, size_t why_len);

/* Rule 3 on the simulator: the symmetric replay of p (on nodes of gpus_per_node) simulates
 * at most `max_replayed` ranks and gives the exact replay's memory and times, bit for bit.
 * ex and sy receive the two rows. */
int cpb_rules_symmetric(const cpb_method *m, const cpb_problem *p, int gpus_per_node, int max_replayed, cpb_row *ex,
                        cpb_row *sy, char *why, size_t why_len);

#endif
