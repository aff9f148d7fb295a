/* test_host_share.c — the node's host memory over the job's processes on it
 * (driver/model_scope_host_share.c): a job on fewer GPUs than the node has keeps the rest,
 * a job that fills nodes gets a node's share per GPU, and odd counts and node sizes work. */
#include <criterion/criterion.h>
#include <string.h>

#include "cpb_method.h"
#include "cpb_presets.h"
#include "knobs.h"

#include "gpu_profiles.h"
#include "model_scope.h"

static cpb_gpu_profile profile(int gpus_per_node, int64_t node_bytes)
{
    cpb_gpu_profile p;
    char err[256];
    cr_assert_eq(cpb_gpu_profile_get("h100-sxm", &p, err, sizeof err), CPB_OK, "%s", err);
    p.hw.gpus_per_node = gpus_per_node;
    p.host_node_bytes = node_bytes;
    return p;
}

Test(host_share, one_gpu_has_the_whole_node)
{
    cpb_gpu_profile p = profile(8, 2048LL << 30);
    cr_expect_eq(cpb_host_per_used_gpu(&p, 1), 2048LL << 30);
}

Test(host_share, a_partly_used_node_is_shared_by_the_jobs_gpus)
{
    cpb_gpu_profile p = profile(8, 2048LL << 30);
    cr_expect_eq(cpb_host_per_used_gpu(&p, 3), (2048LL << 30) / 3);
    cr_expect_eq(cpb_host_per_used_gpu(&p, 7), (2048LL << 30) / 7);
}

Test(host_share, full_nodes_give_each_gpu_its_share)
{
    cpb_gpu_profile p = profile(8, 2048LL << 30);
    cr_expect_eq(cpb_host_per_used_gpu(&p, 8), 256LL << 30);
    cr_expect_eq(cpb_host_per_used_gpu(&p, 24), 256LL << 30);
    cr_expect_eq(cpb_host_per_used_gpu(&p, 4096), 256LL << 30);
}

Test(host_share, odd_node_sizes)
{
    cpb_gpu_profile p = profile(6, 1200LL << 30);
    cr_expect_eq(cpb_host_per_used_gpu(&p, 5), (1200LL << 30) / 5);
    cr_expect_eq(cpb_host_per_used_gpu(&p, 18), 200LL << 30);
}

/* the whole-model estimate takes it: one GPU's capacity is the node's, eight GPUs' an eighth */
Test(host_share, model_scope_capacity_follows_the_gpus_on_the_node)
{
    const cpb_method *m = cpb_method_find("ulysses");
    cr_assert(m != NULL);
    int64_t cap[2];
    int counts[2] = {1, 8};
    for (int i = 0; i < 2; i++) {
        cpb_problem p;
        memset(&p, 0, sizeof p);
        cr_assert_eq(cpb_preset_find("llama3-8b", &p), CPB_OK);
        p.C = counts[i];
        p.S = 65536;
        p.dtype = CPB_BF16;
        char err[1024] = "";
        cr_assert_eq(cpb_knobs_apply(m, NULL, &p, err, sizeof err), CPB_OK, "%s", err);
        cpb_knobs_set_int(&p.knobs, "host_ram_bytes", 1024LL << 30);
        cpb_sim_opts o = {0};
        cpb_model_estimate *e = NULL;
        cr_assert_eq(cpb_model_estimate_new(&p, m, &o, &e, err, sizeof err), CPB_OK, "%s", err);
        cap[i] = e->host_capacity;
        cpb_model_estimate_free(e);
    }
    cr_expect_eq(cap[0], 1024LL << 30, "one GPU: %lld", (long long)cap[0]);
    cr_expect_eq(cap[1], 128LL << 30, "eight GPUs: %lld", (long long)cap[1]);
}
