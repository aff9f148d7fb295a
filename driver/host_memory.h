/* host_memory.h — this process's resident memory and what the machine has available, for
 * the simulator's guard against a world that would not fit (sim_layer.c). */
#ifndef CPB_HOST_MEMORY_H
#define CPB_HOST_MEMORY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* resident bytes of this process (/proc/self/statm); -1 when unknown */
int64_t cpb_host_rss_bytes(void);
/* bytes the machine could still give this process: MemAvailable of /proc/meminfo, lowered
 * to what is left under the cgroup's memory.max when there is one; -1 when unknown */
int64_t cpb_host_available_bytes(void);

#ifdef __cplusplus
}
#endif
#endif
