/* sd_nvtx.cpp — the NVTX calls the cuda backend makes (nvtxDomainCreateA,
 * nvtxDomainRangePushEx, nvtxDomainRangePop, nvtxDomainDestroy).
 *
 * NVTX3 is header-only: its calls go through a table that a tool fills when NVTX first
 * initializes ("NVTX tool injection", nvtxDetail/nvtxInit.h).  The stand-in is such a tool,
 * injected statically: it defines InitializeInjectionNvtx2_fnptr, which the headers' weak
 * symbol binds to.  It checks what NVTX documents for push/pop ranges (a pop matches a push
 * of the same domain on the same thread; a destroyed domain is not used) and tells the
 * statistics which "trial" range the program is in. */
/* this file is the injection: the headers must not define their weak stand-in pointer */
#define NVTX_STATIC_INJECTION_IMPL 1
#include <cstdint>
extern "C" int (*InitializeInjectionNvtx2_fnptr)(const void *(*)(uint32_t));
#include <nvtx3/nvToolsExt.h>

#include <cstring>
#include <map>
#include <set>
#include <string>

#include "sd_internal.h"

struct nvtxDomainRegistration_st {
    std::string name;
};

using namespace sd;

namespace {

const char *kNvtx = "NVTX API, Domains and Push/Pop Ranges";
thread_local std::map<nvtxDomainHandle_t, int> t_depth;

nvtxDomainHandle_t NVTX_API domain_create(const char *name)
{
    count("nvtxDomainCreateA");
    nvtxDomainRegistration_st *d = new nvtxDomainRegistration_st;
    d->name = name ? name : "";
    return d;
}

void NVTX_API domain_destroy(nvtxDomainHandle_t d)
{
    count("nvtxDomainDestroy");
    if (!d) {
        violation("NVTX domain", kNvtx, "nvtxDomainDestroy of a null domain");
        return;
    }
    if (t_depth[d] > 0)
        violation("NVTX ranges", kNvtx, "domain '%s' destroyed with %d range(s) still pushed", d->name.c_str(), t_depth[d]);
    t_depth.erase(d);
    delete d;
}

int NVTX_API range_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *at)
{
    count("nvtxDomainRangePushEx");
    if (!at || at->version != NVTX_VERSION || at->size != NVTX_EVENT_ATTRIB_STRUCT_SIZE)
        violation("NVTX event attributes", kNvtx, "nvtxDomainRangePushEx with attributes of version %d / size %d (set "
                  "version NVTX_VERSION and size NVTX_EVENT_ATTRIB_STRUCT_SIZE)",
                  at ? (int)at->version : -1, at ? (int)at->size : -1);
    const char *msg = at && at->messageType == NVTX_MESSAGE_TYPE_ASCII ? at->message.ascii : nullptr;
    trial_range_push(msg);
    return ++t_depth[d] - 1;
}

int NVTX_API range_pop(nvtxDomainHandle_t d)
{
    count("nvtxDomainRangePop");
    if (t_depth[d] <= 0) {
        violation("NVTX ranges", kNvtx, "nvtxDomainRangePop without a matching push on this thread and domain");
        return -2;
    }
    trial_range_pop();
    return --t_depth[d];
}

}  // namespace

/* the tool's initialization (sd_runtime.cpp points InitializeInjectionNvtx2_fnptr here):
 * fill the core-2 module's table with the domain calls we implement */
extern "C" int NVTX_API cpb_sd_nvtx_init(NvtxGetExportTableFunc_t get)
{
    const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
    NvtxFunctionTable table = nullptr;
    unsigned size = 0;
    if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) || !table) return 0;
    auto set = [&](unsigned id, NvtxFunctionPointer f) {
        if (id < size && table[id]) *table[id] = f;
    };
    set(NVTX_CBID_CORE2_DomainCreateA, (NvtxFunctionPointer)domain_create);
    set(NVTX_CBID_CORE2_DomainDestroy, (NvtxFunctionPointer)domain_destroy);
    set(NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)range_push);
    set(NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)range_pop);
    return 1;
}
