/* cpb_presets.h — model presets: the attention shapes of DESIGN.md section 1. */
#ifndef CPB_PRESETS_H
#define CPB_PRESETS_H

#include "cpb.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cpb_preset {
    const char *name;
    int64_t D;          /* hidden */
    int H, G, d;        /* query heads, kv heads, head dim */
    double rope_base;
    const char *notes;
} cpb_preset;

int cpb_preset_count(void);
const cpb_preset *cpb_preset_at(int i);
/* Fill out's D, H, G, d, rope_base and model from preset `name`; other fields untouched.
 * Returns CPB_OK, or CPB_ERR_INVALID for an unknown name (nothing is written then). */
int cpb_preset_find(const char *name, cpb_problem *out);
/* "llama3-8b, qwen3-32b, ..." for error messages */
const char *cpb_preset_names(void);

#ifdef __cplusplus
}
#endif
#endif
