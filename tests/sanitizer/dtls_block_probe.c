/* Guards the sanitizer pass against GCC 12 LeakSanitizer's dynamic-TLS misreading (see
 * ASAN_OPTIONS in tests/CMakeLists.txt): places a dlopen'd library's thread-local block 16
 * bytes past a 4 KiB boundary, where that LeakSanitizer takes the ASan chunk header in front
 * of it for glibc 2.19's TLS header, and exits, so the leak check runs over it. Under the
 * test environment the process must exit 0: no tracer crash, and nothing reported leaked
 * (the block's malloc is held only by a thread-local). The placement counts on ASan handing
 * out one size class's chunks at a fixed stride; when it cannot be arranged the probe fails
 * and says so rather than passing without having tested anything. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { block_bytes = 24, /* the library's TLS segment: glibc mallocs exactly that */
       page = 4096, most_pads = 1 << 16 };

static void *pads[most_pads]; /* kept reachable: padding is not a leak */

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s LIBRARY.so (the probe's thread-local library)\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "dtls probe: cannot load %s: %s\n", argv[1], dlerror());
        return 2;
    }
    void *(*touch)(void) = (void *(*)(void))dlsym(lib, "dtls_block_touch");
    if (!touch) {
        fprintf(stderr, "dtls probe: %s has no dtls_block_touch: %s\n", argv[1], dlerror());
        return 2;
    }
    /* glibc allocates the block at the first touch; pad the size class until ASan's next
     * chunk of it starts 16 bytes past a page boundary */
    int n = 0;
    pads[n++] = malloc(block_bytes);
    pads[n++] = malloc(block_bytes);
    intptr_t stride = (intptr_t)pads[1] - (intptr_t)pads[0];
    while (n < most_pads && ((uintptr_t)pads[n - 1] + (uintptr_t)stride) % page != 16) {
        pads[n] = malloc(block_bytes);
        if ((intptr_t)pads[n] - (intptr_t)pads[n - 1] != stride) /* a new batch: re-measure */
            stride = (intptr_t)pads[n] - (intptr_t)pads[n - 1];
        n++;
    }
    uintptr_t block = (uintptr_t)touch();
    if (block % page != 16) {
        fprintf(stderr, "dtls probe: could not place the thread-local block 16 bytes past a "
                        "page (it is at %#lx after %d pads of stride %ld); the allocator's "
                        "layout changed, so this probe needs a new way to place it\n",
                (unsigned long)block, n, (long)stride);
        return 1;
    }
    printf("dtls probe: thread-local block at %#lx (16 past a page) after %d pads; "
           "the leak check at exit runs over it\n", (unsigned long)block, n);
    return 0;
}
