/* fake_cuda_plugin.c — a plugin with the cuda plugin's entry point that needs a library
 * the tests hide (absent_lib.c) and was built for another plugin interface: the loader must
 * name the missing library and where it looked, then, once the library is found, refuse
 * the interface version; either way --backend cuda exits 2. */
#include <stddef.h>

int cpb_absent_answer(void);

/* an interface version no cpbench has (CPB_BACKEND_ABI_VERSION counts up from 1) */
const int cpb_cuda_plugin_abi_version = 1000;

static const int not_a_backend;

const void *cpb_cuda_plugin_backend(int abi_version)
{
    /* a real plugin returns its backend when abi_version matches its own */
    return abi_version == cpb_cuda_plugin_abi_version + cpb_absent_answer() - 7 ? (const void *)&not_a_backend : NULL;
}
