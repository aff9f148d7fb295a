/* fake_cudnn_sublib.c — cuDNN's sub-libraries (libcudnn_graph.so.9, the engines, the
 * heuristics) as the fake-cuDNN tests need them: cpbench's loader pre-loads them from
 * CPB_CUDA_LIB_PATH before the toolkit's, so these keep the real ones (hundreds of MiB) out
 * of the test.  Built with FAKE_SUBLIB_BROKEN, the library needs a symbol nothing defines, so
 * that its pre-load fails with the dynamic linker's reason, which `cpbench list` and cuDNN
 * attention's errors must report. */
#define EXPORT __attribute__((visibility("default")))

#ifdef FAKE_SUBLIB_BROKEN
int cpb_fake_cudnn_symbol_nobody_defines(void);

EXPORT int cpb_fake_cudnn_sublib(void)
{
    return cpb_fake_cudnn_symbol_nobody_defines();
}
#else
EXPORT int cpb_fake_cudnn_sublib(void)
{
    return 0;
}
#endif
