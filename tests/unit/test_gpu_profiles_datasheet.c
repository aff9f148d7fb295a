/* test_gpu_profiles_datasheet.c — the GPU profiles of issue 24 (h800, a800-80g, h100-pcie,
 * h100-nvl, b200; h100 as an alias of h100-sxm): each field against the figure its datasheet
 * prints (dense = half the "with sparsity" figure), the estimates each profile declares, and
 * a calibration file overriding any of it (and taking the key off the estimates). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cpb.h"
#include "gpu_profiles.h"

#define MIB (1024.0 * 1024.0)

static cpb_gpu_profile get(const char *name)
{
    cpb_gpu_profile p;
    char err[256] = "";
    cr_assert_eq(cpb_gpu_profile_get(name, &p, err, sizeof err), CPB_OK, "%s: %s", name, err);
    return p;
}

static int has_estimate(const cpb_gpu_profile *p, const char *key)
{
    const char *s = cpb_gpu_profile_estimates(p);
    size_t n = strlen(key);
    for (const char *at = strstr(s, key); at; at = strstr(at + 1, key))
        if ((at == s || at[-1] == ',') && (at[n] == ',' || at[n] == 0)) return 1;
    return 0;
}

/* the datasheet columns the profiles copy: memory as the driver reports it, dense bf16 and
 * fp8, SMs, architecture, GPUs per node, host memory per GPU */
static void expect_part(const char *name, double mem_mib, double bf16_sparse_tflops, double fp8_sparse_tflops, int sms,
                        int arch, double host_tb_per_node)
{
    cpb_gpu_profile p = get(name);
    cr_expect_str_eq(p.name, name);
    cr_expect_eq(p.mem_bytes, (int64_t)(mem_mib * MIB), "%s: memory", name);
    cr_expect_float_eq(p.hw.peak_flops, bf16_sparse_tflops / 2 * 1e12, 1e6, "%s: dense bf16", name);
    cr_expect_float_eq(p.fp8_flops, fp8_sparse_tflops / 2 * 1e12, 1e6, "%s: dense fp8", name);
    cr_expect_eq(p.hw.num_sms, sms, "%s: SMs", name);
    cr_expect_eq(p.hw.sm_arch, arch, "%s: architecture", name);
    cr_expect_eq(p.hw.gpus_per_node, 8, "%s: GPUs per node", name);
    cr_expect_eq(cpb_gpu_profile_host_per_gpu(&p), (int64_t)(host_tb_per_node * (double)(1LL << 40)) / 8, "%s", name);
    cr_expect_lt(cpb_gpu_profile_usable(&p), p.mem_bytes, "%s: a reserve", name);
    cr_expect_gt(p.hw.hbm_bw, 1e12, "%s", name);
    cr_expect_gt(p.hw.a2a_busbw, p.hw.inter_busbw * 0.99, "%s: the node's links are not slower than the network", name);
}

Test(gpu_profiles_datasheet, each_part_has_its_datasheet_figures)
{
    /*          name        MiB      bf16 sparse  fp8 sparse  SMs  arch  host TB/node */
    expect_part("h800", 81559, 1979, 3958, 132, 90, 2);
    expect_part("a800-80g", 81920, 624, 0, 108, 80, 2);
    expect_part("h100-pcie", 81559, 1513, 3026, 114, 90, 2);
    expect_part("h100-nvl", 95830, 1671, 3341, 132, 90, 2);
    expect_part("b200", 183359, 4500, 9000, 148, 100, 2);
}

Test(gpu_profiles_datasheet, links_follow_the_datasheet_ratios)
{
    cpb_gpu_profile h100 = get("h100-sxm"), h800 = get("h800"), a100 = get("a100-80g"), a800 = get("a800-80g");
    cpb_gpu_profile b200 = get("b200"), pcie = get("h100-pcie"), nvl = get("h100-nvl");
    /* NVLink 400 GB/s against 900 (H100) and 600 (A100); NVLink 5's 1.8 TB/s twice the H100's */
    cr_expect_float_eq(h800.hw.a2a_busbw / h100.hw.a2a_busbw, 400.0 / 900.0, 0.01);
    cr_expect_float_eq(a800.hw.a2a_busbw / a100.hw.a2a_busbw, 400.0 / 600.0, 0.01);
    cr_expect_float_eq(b200.hw.a2a_busbw / h100.hw.a2a_busbw, 2.0, 0.01);
    /* PCIe cards: an 8-card server's collectives cross PCIe Gen5 (64 GB/s each way) */
    cr_expect_lt(pcie.hw.a2a_busbw, 64e9);
    cr_expect_lt(nvl.hw.a2a_busbw, 64e9);
    /* HBM: 3.35 (H800), 2.0 (H100 PCIe), 3.9 (H100 NVL), 8 (B200) TB/s peak, achieved below it */
    cr_expect(h800.hw.hbm_bw < 3.35e12 && h800.hw.hbm_bw > 2.5e12);
    cr_expect(pcie.hw.hbm_bw < 2.0e12 && pcie.hw.hbm_bw > 1.5e12);
    cr_expect(nvl.hw.hbm_bw < 3.9e12 && nvl.hw.hbm_bw > 3.0e12);
    cr_expect(b200.hw.hbm_bw < 8e12 && b200.hw.hbm_bw > 6e12);
}

Test(gpu_profiles_datasheet, h100_is_an_alias_of_h100_sxm)
{
    cpb_gpu_profile a = get("h100"), b = get("h100-sxm");
    cr_expect_str_eq(a.name, "h100-sxm", "the alias gives the profile under its own name");
    cr_expect_eq(memcmp(&a, &b, sizeof a), 0);
    cr_expect(strstr(cpb_gpu_profile_names(), "h100 (= h100-sxm)"), "%s", cpb_gpu_profile_names());
    const char *target = NULL;
    cr_expect_str_eq(cpb_gpu_profile_alias_at(0, &target), "h100");
    cr_expect_str_eq(target, "h100-sxm");
    cr_expect_null(cpb_gpu_profile_alias_at(1, NULL));
    /* not a prefix match: "h10" is no profile */
    cpb_gpu_profile p;
    char err[256];
    cr_expect_eq(cpb_gpu_profile_get("h10", &p, err, sizeof err), CPB_ERR_INVALID);
}

Test(gpu_profiles_datasheet, estimates_are_declared)
{
    /* the datasheet parts of the HGX/DGX boards carry no estimate of a datasheet field... */
    cpb_gpu_profile h100 = get("h100-sxm");
    cr_expect_str_eq(cpb_gpu_profile_estimates(&h100), "");
    /* ...the restricted parts' link rates are scaled from a measured H100/A100 figure... */
    cpb_gpu_profile h800 = get("h800"), a800 = get("a800-80g");
    cr_expect(has_estimate(&h800, "a2a_busbw_gbs") && has_estimate(&h800, "mem_gib"), "%s", h800.estimated);
    cr_expect(has_estimate(&a800, "a2a_busbw_gbs") && has_estimate(&a800, "host_mem_gib"), "%s", a800.estimated);
    cr_expect(!has_estimate(&h800, "peak_tflops"), "the bf16 rate is on the H800 datasheet");
    /* ...the PCIe cards' usual server is an assumption... */
    cpb_gpu_profile pcie = get("h100-pcie"), nvl = get("h100-nvl");
    cr_expect(has_estimate(&pcie, "gpus_per_node") && has_estimate(&nvl, "coll_busbw_gbs"), "%s", nvl.estimated);
    /* ...and the B200's GEMM rate and the cuDNN calls its measured curve does not cover
     * (test_attn_cudnn_b200.c) are estimates */
    cpb_gpu_profile b200 = get("b200");
    cr_expect(has_estimate(&b200, "gemm_tflops") && has_estimate(&b200, "attn_cudnn_off_curve") &&
                  !has_estimate(&b200, "mem_gib"),
              "%s", b200.estimated);
}

Test(gpu_profiles_datasheet, calibration_overrides_and_clears_the_estimate)
{
    cpb_gpu_profile p = get("h800");
    char path[64], err[256] = "";
    snprintf(path, sizeof path, "/tmp/cpb_calib_i24_%d.txt", (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("mem_gib = 79.5\na2a_busbw_gbs = 150\npeak_tflops = 900\n", f);
    fclose(f);
    cr_assert_eq(cpb_gpu_profile_calibrate(&p, path, err, sizeof err), CPB_OK, "%s", err);
    unlink(path);
    cr_expect_eq(p.mem_bytes, (int64_t)(79.5 * 1024 * MIB));
    cr_expect_float_eq(p.hw.a2a_busbw, 150e9, 1);
    cr_expect_float_eq(p.hw.peak_flops, 900e12, 1);
    cr_expect(!has_estimate(&p, "mem_gib") && !has_estimate(&p, "a2a_busbw_gbs"), "measured now: %s", p.estimated);
    cr_expect(has_estimate(&p, "sendrecv_busbw_gbs") && has_estimate(&p, "host_mem_gib"), "the rest stays: %s",
              p.estimated);
}
