/* json_flat.c — a JSON tree's leaves, one `PATH<TAB>VALUE` line each (list_json.h): the
 * form a shell script reads with awk where no JSON parser can be counted on (the GPU
 * check runs on a bare machine: no jq, and python3 is not guaranteed). */
#include <stdio.h>
#include <string.h>

#include "list_json.h"

/* s with '\\', tab and newline escaped, so that a value is one field of one line */
static int put_escaped(const char *s, FILE *out)
{
    for (; *s; s++) {
        int rc = *s == '\\' ? fputs("\\\\", out) : *s == '\t' ? fputs("\\t", out) : *s == '\n' ? fputs("\\n", out)
                                                                                                  : fputc(*s, out);
        if (rc == EOF) return -1;
    }
    return 0;
}

static int leaf(const char *path, const json_t *v, FILE *out)
{
    if (fprintf(out, "%s\t", path) < 0) return -1;
    int rc;
    switch (json_typeof(v)) {
    case JSON_STRING: rc = put_escaped(json_string_value(v), out); break;
    case JSON_INTEGER: rc = fprintf(out, "%lld", (long long)json_integer_value(v)); break;
    case JSON_REAL: rc = fprintf(out, "%.17g", json_real_value(v)); break;
    case JSON_TRUE: rc = fputs("true", out); break;
    case JSON_FALSE: rc = fputs("false", out); break;
    case JSON_NULL: rc = fputs("null", out); break;
    case JSON_ARRAY: rc = fputs("[]", out); break;   /* only an empty one is a leaf */
    case JSON_OBJECT: rc = fputs("{}", out); break;
    default: rc = -1;
    }
    return rc < 0 || fputc('\n', out) == EOF ? -1 : 0;
}

static int walk(char *path, size_t cap, const json_t *v, FILE *out)
{
    size_t len = strlen(path);
    const char *sep = len ? "." : "";
    if (json_is_object(v) && json_object_size(v)) {
        const char *key;
        json_t *child;
        json_object_foreach((json_t *)v, key, child) {
            if ((size_t)snprintf(path + len, cap - len, "%s%s", sep, key) >= cap - len) return -1;
            if (walk(path, cap, child, out) != 0) return -1;
        }
    } else if (json_is_array(v) && json_array_size(v)) {
        size_t i;
        json_t *child;
        json_array_foreach(v, i, child) {
            if ((size_t)snprintf(path + len, cap - len, "%s%zu", sep, i) >= cap - len) return -1;
            if (walk(path, cap, child, out) != 0) return -1;
        }
    } else if (leaf(path, v, out) != 0) {
        return -1;
    }
    path[len] = 0;
    return 0;
}

int cpb_json_print_flat(const json_t *v, FILE *out)
{
    char path[1024] = "";
    return walk(path, sizeof path, v, out);
}
