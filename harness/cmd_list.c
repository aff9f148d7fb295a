/* cmd_list.c — `cpbench list`: methods, model presets, backends compiled in; as text for
 * people, or (--format json|flat) for scripts (list_json.h). */
#include <stdio.h>
#include <string.h>

#include "attn_choice.h"
#include "cli.h"
#include "cpb_method.h"
#include "cpb_presets.h"
#include "knobs.h"
#include "list_json.h"
#include "model_scope.h"
#include "registry.h"
#include "gpu_profiles.h"

/* how the build has the backend (the cuda plugin: where it was found, whether it loaded and
 * with which libraries), what it is, and the devices it sees */
static void backend_line(int i)
{
    char why[8192] = "", how[8192] = "";
    const char *name = cpb_backend_name_at(i);
    const cpb_backend *be = cpb_backend_at(i, why, sizeof why);
    if (!be) {
        printf("  %-6s %s\n", name, why);
        return;
    }
    int loaded = cpb_backend_describe_at(i, how, sizeof how);
    printf("  %-6s %s", name, how);
    if (!loaded) {
        printf("\n");
        return;
    }
    if (be->summary) printf(": %s", be->summary);
    if (be->probe) {
        int n = be->probe(why, sizeof why);
        if (n > 0) printf("; %d device%s present", n, n == 1 ? "" : "s");
        else printf("; no usable device (%s)", why[0] ? why : "none found");
    }
    printf("\n");
}

/* the machine forms: JSON, or its leaves one a line */
static int list_for_scripts(const char *format)
{
    json_t *tree = cpb_list_json();
    if (!tree) {
        fprintf(stderr, "cpbench list: out of memory building the %s listing\n", format);
        return 1;
    }
    int rc = strcmp(format, "json") == 0 ? json_dumpf(tree, stdout, JSON_INDENT(2))
                                         : cpb_json_print_flat(tree, stdout);
    if (rc == 0 && strcmp(format, "json") == 0 && putchar('\n') == EOF) rc = -1;
    json_decref(tree);
    if (rc != 0 || fflush(stdout) != 0) {
        fprintf(stderr, "cpbench list: cannot write the %s listing to standard output\n", format);
        return 1;
    }
    return 0;
}

/* the simulator's GPU profiles (--gpu): memory, dense bf16 peak, architecture, and the
 * figures that are estimates (by calibration key; docs/simulator.md has the sources) */
static void gpu_profiles_print(void)
{
    printf("\nGPU profiles (sim --gpu; sources and estimates: docs/simulator.md \"GPU profiles\"):\n");
    for (int i = 0; i < cpb_gpu_profile_count(); i++) {
        cpb_gpu_profile p;
        char err[256];
        if (cpb_gpu_profile_get(cpb_gpu_profile_name_at(i), &p, err, sizeof err) != CPB_OK) continue;
        char names[64];
        int n = snprintf(names, sizeof names, "%s", p.name);
        const char *target = NULL;
        for (int k = 0; cpb_gpu_profile_alias_at(k, &target) && n < (int)sizeof names; k++)
            if (strcmp(target, p.name) == 0) n += snprintf(names + n, sizeof names - n, " = %s", cpb_gpu_profile_alias_at(k, NULL));
        printf("  %-18s %7.2f GiB  %6.1f TFLOP/s bf16  sm%-3d %s\n", names, p.mem_bytes / 1073741824.0,
               p.hw.peak_flops / 1e12, p.hw.sm_arch, p.description);
        if (cpb_gpu_profile_estimates(&p)[0]) printf("  %-18s estimates: %s\n", "", cpb_gpu_profile_estimates(&p));
    }
}

int cpb_cmd_list(const cpb_cli *c)
{
    if (c->a.format[0] && strcmp(c->a.format, "text") != 0) return list_for_scripts(c->a.format);
    printf("Methods:\n");
    for (int i = 0; i < cpb_method_count(); i++) {
        const cpb_method *m = cpb_method_at(i);
        printf("  %-10s %s\n", m->name, m->summary);
        if (m->knobs && m->knobs[0].name) {
            printf("  %-10s options:", "");
            for (const cpb_knob *k = m->knobs; k->name; k++) {
                char opt[64];
                cpb_knob_option(k, opt, sizeof opt);
                printf(" %s %s", opt, k->arg ? k->arg : "V");
            }
            printf("\n");
        }
    }
    if (!cpb_method_count()) printf("  (none compiled in)\n");
    printf("\nModels (attention shapes; override with --hidden --heads --kv-heads --head-dim --rope-base):\n");
    printf("  %-11s %6s %4s %4s %4s %10s  %s\n", "preset", "D", "H", "G", "d", "rope base", "notes");
    for (int i = 0; i < cpb_preset_count(); i++) {
        const cpb_preset *p = cpb_preset_at(i);
        printf("  %-11s %6lld %4d %4d %4d %10.0f  %s\n", p->name, (long long)p->D, p->H, p->G, p->d,
               p->rope_base, p->notes);
    }
    printf("\n");
    cpb_framework_list_print(stdout);
    printf("\nBackends:\n");
    const cpb_backend *cuda = NULL;
    for (int i = 0; i < cpb_backend_count(); i++) {
        backend_line(i);
        char why[64];
        if (!strcmp(cpb_backend_name_at(i), "cuda")) cuda = cpb_backend_at(i, why, sizeof why);
    }
    /* the implementations --attn chooses from (the cpu and sim backends model both) */
    char line[1024];
    cpb_attn_impls_line(cuda, line, sizeof line);
    printf("\n%s\n", line);
    printf("  (sim only: --attn fa2|fa3, FlashAttention-2/-3's published curves, estimates; docs/attention.md)\n");
    gpu_profiles_print();
    return 0;
}
