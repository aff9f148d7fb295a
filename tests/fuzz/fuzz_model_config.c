/* fuzz_model_config.c — libFuzzer target: the reader of --model-config files (a Hugging
 * Face config.json; driver/model_config.c), on the bytes of the file as read.
 *
 * The reader must never crash, overflow or read out of bounds, whatever the bytes (not
 * JSON, deep nesting, numbers beyond int64, strings where numbers go, text_config of another
 * type).  A file it accepts must describe a model cpbench can build: every size positive and
 * within its bound, H a multiple of G, an even head dim, a finite RoPE base above 1, a name;
 * and the problem built from it must pass the size checks or be refused with a message. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "model_config.h"

#define MAX_BYTES (64 << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_BYTES) return 0;
    cpb_model_def m;
    char err[1024];
    /* not NUL-terminated: the reader takes a length */
    char *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    int rc = cpb_model_config_parse(copy, size, "fuzz/config.json", &m, err, sizeof err);
    free(copy);
    if (rc != CPB_OK) {
        /* a refusal is bad input with a message that names the file */
        if (rc != CPB_ERR_INVALID || !strstr(err, "fuzz/config.json")) abort();
        return 0;
    }
    if (m.D <= 0 || m.H <= 0 || m.G <= 0 || m.d <= 0 || m.H > CPB_MAX_HEADS || m.G > CPB_MAX_HEADS || m.H % m.G ||
        m.d % 2 || !(m.rope_base > 1.0) || !isfinite(m.rope_base) || m.layers <= 0 || m.ffn <= 0 || m.vocab <= 0 ||
        !m.name[0] || memchr(m.name, 0, sizeof m.name) == NULL)
        abort();
    cpb_problem p;
    memset(&p, 0, sizeof p);
    p.D = m.D;
    p.H = m.H;
    p.G = m.G;
    p.d = m.d;
    p.rope_base = m.rope_base;
    p.S = 4096;
    p.C = 8;
    p.dtype = CPB_BF16;
    rc = cpb_problem_check_sizes(&p, err, sizeof err);
    if (rc != CPB_OK && rc != CPB_ERR_INVALID) abort();
    return 0;
}
