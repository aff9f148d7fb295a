/* host_memory.c — see host_memory.h. */
#include "host_memory.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int64_t cpb_host_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    long long size = 0, rss = 0;
    int n = fscanf(f, "%lld %lld", &size, &rss);
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return n == 2 && page > 0 ? (int64_t)rss * page : -1;
}

/* a number from the first line of a file ("max" or missing: -1) */
static int64_t read_number(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long long v = -1;
    if (fscanf(f, "%lld", &v) != 1) v = -1;
    fclose(f);
    return v;
}

int64_t cpb_host_available_bytes(void)
{
    int64_t avail = -1;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) avail = (int64_t)kb * 1024;
        fclose(f);
    }
    /* a container's limit (cgroup v2) */
    int64_t max = read_number("/sys/fs/cgroup/memory.max"), cur = read_number("/sys/fs/cgroup/memory.current");
    if (max > 0 && cur >= 0 && (avail < 0 || max - cur < avail)) avail = max > cur ? max - cur : 0;
    return avail;
}
