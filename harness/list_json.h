/* list_json.h — what `cpbench list` knows, as a JSON tree (`cpbench list --format json`)
 * and as its leaves one a line (`--format flat`), for scripts: they read these forms,
 * never the text meant for people.
 *
 * The tree (schema version CPB_LIST_SCHEMA; a field is added, never renamed or retyped,
 * within a version):
 *   schema          CPB_LIST_SCHEMA
 *   methods         [{name, summary, options: [OPTION...]}]     in registry order
 *   point_options   [OPTION... + points]  the knobs every point has (--attn, the sim's, ...)
 *   models          [{name, hidden, heads, kv_heads, head_dim, rope_base, notes}]
 *   backends        {NAME: {present, description, summary, devices, devices_why}}
 *                   present: there to run (the cuda plugin loaded); description: how this
 *                   build has it or why not (the loader's text); devices: what its probe
 *                   counts (null without a probe or when absent), devices_why: why none
 *   attention       {implementations: ["cudnn", "own"],
 *                    cudnn: {compiled_in, usable, why}}   why: the backend's whole text
 *   gpu_profiles    [{name, description, memory_bytes, default}]  the simulator's --gpu
 *   frameworks      [{name, summary, source, default}]           the model scope's --framework
 * OPTION = {option, name, arg, type (int|tokens|choice|bytes), default, choices (array or
 * null), help}. */
#ifndef CPB_LIST_JSON_H
#define CPB_LIST_JSON_H

#include <jansson.h>
#include <stdio.h>

#define CPB_LIST_SCHEMA 1

/* a new tree (the caller json_decref's it); NULL when out of memory */
json_t *cpb_list_json(void);

/* v's leaves, one `PATH<TAB>VALUE` line each, in the tree's order.  PATH: object keys and
 * array indices joined by '.' ("methods.0.name", "backends.cuda.present"); VALUE: a string
 * as it is with '\\', tab and newline written \\, \t, \n; true, false, null; a number.  An
 * empty array or object is a leaf written [] or {}.  Returns 0, or -1 on a write error. */
int cpb_json_print_flat(const json_t *v, FILE *out);

#endif
