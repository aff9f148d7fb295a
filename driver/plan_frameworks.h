/* plan_frameworks.h — which training frameworks have a method, and the settings that
 * realise a plan's recommendation in each (the table and its citations: plan_frameworks.c).
 * `cpbench plan --stack FAMILY` searches the methods of one framework family. */
#ifndef CPB_PLAN_FRAMEWORKS_H
#define CPB_PLAN_FRAMEWORKS_H

#include <stddef.h>

#include "cpb_method.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "deepspeed|megatron|yunchang|torchtitan": the --stack families */
const char *cpb_plan_stacks(void);
/* the comma list of the methods family has ("" when family is not one), into out */
int cpb_plan_stack_methods(const char *family, char *out, size_t len);

/* The settings realising method m with problem p's knobs in every framework that has the
 * method (only family's when family is not NULL or ""): one line per framework,
 * "  yunchang: ...  [source]\n", into out.  Returns how many frameworks have it (0: out
 * says so). */
int cpb_plan_framework_settings(const cpb_method *m, const cpb_problem *p, const char *family, char *out,
                                size_t len);

/* 1 when a framework (of family, when not NULL or "") runs method m with p's knobs as this
 * suite does: it has settings for it, and it is not FPDT's pipelined schedule (DeepSpeed
 * ships its own).  The plan names the roomiest tied candidate so available. */
int cpb_plan_in_framework(const cpb_method *m, const cpb_problem *p, const char *family);

#ifdef __cplusplus
}
#endif
#endif
