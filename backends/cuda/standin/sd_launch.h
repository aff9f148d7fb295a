/* sd_launch.h — kernel launches in the CPU stand-in build (cuda_launch.cuh's CPBK_LAUNCH).
 *
 * A launch converts its arguments to the kernel's parameter types and copies them, as CUDA
 * does at a launch, collects the memory every kview / kattn / pointer argument spans, and
 * hands the kernel to the stand-in (sd_kernel.cpp), which checks the launch as the driver
 * would and enqueues it on the stream; the kernel emulator (emu/) runs it there. */
#ifndef CPB_SD_LAUNCH_H
#define CPB_SD_LAUNCH_H

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cuda_kernels.h"
#include "emu/emu.h"

/* the memory one launch touches, as its arguments say */
struct cpb_sd_span {
    const void *p;
    size_t bytes;
    size_t align; /* the element size the kernel accesses it with */
    const char *what;
};
struct cpb_sd_args {
    cpb_sd_span span[32];
    int n = 0;
    void add(const void *p, size_t bytes, size_t align, const char *what)
    {
        if (p && n < 32) span[n++] = cpb_sd_span{p, bytes, align, what};
    }
};

/* a view's elements lie in [p, p + (last offset + 1) * element size) */
inline void cpb_sd_note_view(cpb_sd_args &a, const kview &v, const char *what)
{
    if (!v.p || v.rows <= 0 || v.heads <= 0 || v.dim <= 0) return;
    size_t es = v.bf16 ? 2 : 4;
    int64_t last = (v.rows - 1) * v.rs + (v.heads - 1) * v.hs + (v.dim - 1);
    a.add(v.p, (size_t)(last + 1) * es, es, what);
}

inline void cpb_sd_note(cpb_sd_args &a, const kview &v)
{
    cpb_sd_note_view(a, v, "a view argument");
}

inline void cpb_sd_note(cpb_sd_args &a, const kattn &k)
{
    cpb_sd_note_view(a, k.q, "attention q");
    cpb_sd_note_view(a, k.k, "attention k");
    cpb_sd_note_view(a, k.v, "attention v");
    cpb_sd_note_view(a, k.o, "attention o");
    cpb_sd_note_view(a, k.lse, "attention lse");
    cpb_sd_note_view(a, k.d_o, "attention dO");
    cpb_sd_note_view(a, k.delta, "attention delta");
    cpb_sd_note_view(a, k.dq, "attention dq");
    cpb_sd_note_view(a, k.dk, "attention dk");
    cpb_sd_note_view(a, k.dv, "attention dv");
    if (k.dq_acc) a.add(k.dq_acc, sizeof(float) * (size_t)(k.q.rows * k.q.heads * k.q.dim), 4, "attention dq workspace");
}

/* a bare pointer: at least its first element must be there */
template <class T>
inline void cpb_sd_note(cpb_sd_args &a, T *p)
{
    a.add(p, sizeof(T), alignof(T), "a pointer argument");
}

template <class T>
inline void cpb_sd_note(cpb_sd_args &, const T &)
{
}

/* bytes of the kernel's parameter list, each parameter at its alignment */
template <class... P>
constexpr size_t cpb_sd_param_bytes()
{
    size_t off = 0;
    ((off = (off + alignof(P) - 1) / alignof(P) * alignof(P) + sizeof(P)), ...);
    return off;
}

cudaError_t cpb_sd_launch(cudaStream_t stream, const char *name, const void *fn, dim3 grid, dim3 block, size_t smem,
                          size_t param_bytes, const cpb_sd_args *args, void (*body)(void *), void *ctx,
                          void (*dtor)(void *));

template <class... P, class... A>
cudaError_t cpb_sd_enqueue_kernel(cudaStream_t stream, const char *name, void (*kernel)(P...), dim3 grid, dim3 block,
                                  size_t smem, A &&...args)
{
    using Tup = std::tuple<std::decay_t<P>...>;
    using Call = std::pair<void (*)(P...), Tup>;
    Call *call = new Call(kernel, Tup(std::forward<A>(args)...));
    cpb_sd_args notes;
    std::apply([&](const auto &...v) { (cpb_sd_note(notes, v), ...); }, call->second);
    return cpb_sd_launch(
        stream, name, reinterpret_cast<const void *>(kernel), grid, block, smem,
        cpb_sd_param_bytes<std::decay_t<P>...>(), &notes,
        [](void *c) {
            Call *x = static_cast<Call *>(c);
            std::apply(x->first, x->second);
        },
        call, [](void *c) { delete static_cast<Call *>(c); });
}

/* the C++ form of cudaFuncSetAttribute (CUDA Runtime API, "C++ API Routines"), which
 * cuda_runtime.h gives nvcc's translation units */
template <class T>
inline cudaError_t cudaFuncSetAttribute(T *entry, enum cudaFuncAttribute attr, int value)
{
    return ::cudaFuncSetAttribute(reinterpret_cast<const void *>(entry), attr, value);
}

#endif
