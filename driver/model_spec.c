/* model_spec.c — what the whole-model estimate needs beyond a preset's attention shape:
 * layers, MLP size, vocabulary, tied embeddings.  Values from each model's published
 * configuration (Hugging Face config.json of the release). */
#include <string.h>

#include "model_config.h"
#include "model_scope.h"

static const cpb_model_spec specs[] = {
    {"llama3-8b", 32, 14336, 128256, 0, "meta-llama/Meta-Llama-3-8B config.json"},
    {"qwen3-32b", 64, 25600, 151936, 0, "Qwen/Qwen3-32B config.json"},
    {"llama3-70b", 80, 28672, 128256, 0, "meta-llama/Meta-Llama-3-70B config.json"},
    {"llama2-7b", 32, 11008, 32000, 0, "meta-llama/Llama-2-7b-hf config.json"},
    /* a made-up small model so tests can exercise the estimate quickly */
    {"tiny", 4, 256, 1024, 0, "test model (not a real network)"},
};

const cpb_model_spec *cpb_model_spec_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof specs / sizeof specs[0]; i++)
        if (strcmp(specs[i].name, name) == 0) return &specs[i];
    return cpb_model_config_spec(name);
}
