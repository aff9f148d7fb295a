/* A dlopen'd library with one thread-local block, like the CUDA plugin's: its first use on
 * a thread goes through __tls_get_addr, which glibc answers with a malloc'd block. */
#include <stdlib.h>

/* the library's whole TLS segment, 24 bytes: a small block such as CI's crash involved */
static __thread struct {
    void *held; /* only this thread-local points at its malloc */
    char bytes[16];
} dtls;

void *dtls_block_touch(void)
{
    dtls.bytes[0] = 1;
    if (!dtls.held) dtls.held = malloc(48);
    return &dtls;
}
