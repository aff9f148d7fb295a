/* emu_core.cpp — the kernel emulator's scheduler (emu.h): the CUDA threads of a block run
 * on fibers of the calling OS thread, switching only at synchronisation points.
 *
 * A fiber runs CUDA threads one after another: when its thread finishes it claims the next
 * unstarted one (and, when the block is done, the next block), so a kernel without
 * synchronisation runs as one loop on one fiber.  When a thread reaches a barrier its fiber
 * is suspended and the scheduler starts the next thread on another fiber (an idle one or a
 * new one); when every live thread has arrived the waiters resume in thread order.  Fibers
 * and their stacks are kept per OS thread for the next launch.
 *
 * The context switch is a few instructions of x86-64 assembly (callee-saved registers, MXCSR
 * and the x87 control word, as the SysV ABI requires); other architectures use ucontext.
 * AddressSanitizer is told about every stack switch. */
#include "emu/emu.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif
#ifdef EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
/* a stack unmapped with frames still on it (a parked or abandoned fiber) leaves poisoned
 * shadow behind for whatever is mapped there next: clear it both ways */
#define EMU_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define EMU_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#if defined(__x86_64__) && defined(__ELF__)
#define EMU_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

#ifdef EMU_ASM_SWITCH
/* swap(save, to): push the callee-saved state, store the stack pointer in *save, load `to`,
 * pop its state and return into it.  A new fiber's stack holds a frame whose return address
 * is the trampoline, which calls r13(r12). */
extern "C" void cpb_emu_swap(void **save_sp, void *to_sp);
extern "C" void cpb_emu_trampoline();
asm(R"(
    .text
    .globl cpb_emu_swap
    .hidden cpb_emu_swap
    .type cpb_emu_swap,@function
cpb_emu_swap:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size cpb_emu_swap,.-cpb_emu_swap

    .globl cpb_emu_trampoline
    .hidden cpb_emu_trampoline
    .type cpb_emu_trampoline,@function
cpb_emu_trampoline:
    movq %r12, %rdi
    callq *%r13
    ud2
    .size cpb_emu_trampoline,.-cpb_emu_trampoline
)");
#endif

namespace {

struct Fiber {
    void *sp = nullptr;
#ifndef EMU_ASM_SWITCH
    ucontext_t uc;
#endif
    char *map = nullptr; /* guard page + stack */
    size_t map_len = 0;
    char *lo = nullptr; /* usable stack */
    size_t len = 0;
    int tid = -1; /* CUDA thread (index in the block) it runs; -1 when idle */
    void *fake = nullptr;
};

enum { W_NONE, W_SYNC, W_SHFL, W_MMA };

struct Warp {
    int lanes = 0, exited = 0, kind = W_NONE;
    std::vector<Fiber *> waiters;
    float vin[32], vout[32];
    int src[32];
    uint32_t a[32][4], b[32][2];
    float c[32][4], cout[32][4];
};

struct Sched {
    void *main_sp = nullptr;
#ifndef EMU_ASM_SWITCH
    ucontext_t main_uc;
#endif
    const void *main_lo = nullptr;
    size_t main_len = 0;
    void *main_fake = nullptr;
    std::vector<Fiber *> pool, idle;
    Fiber *cur = nullptr;
    /* the launch */
    bool active = false, failed = false;
    char err[512] = "";
    void (*body)(void *) = nullptr;
    void *ctx = nullptr;
    dim3 grid, block;
    uint64_t nblocks = 0, blk = 0;
    int nthreads = 0, next = 0, exited = 0;
    std::vector<Fiber *> bar, runnable;
    size_t run_head = 0;
    std::vector<Warp> warps;
    std::vector<unsigned char> smem;
    size_t smem_bytes = 0;
    size_t stack_len = 0;

    ~Sched()
    {
        for (Fiber *f : pool) {
            EMU_UNPOISON(f->lo, f->len);
            munmap(f->map, f->map_len);
            delete f;
        }
    }
};

thread_local std::unique_ptr<Sched> t_sched;

Sched *sched()
{
    if (!t_sched) {
        t_sched.reset(new Sched);
        size_t kb = 0;
        if (const char *e = getenv("CPB_EMU_STACK_KB")) kb = strtoul(e, nullptr, 10);
#ifdef EMU_ASAN
        if (kb == 0) kb = 1024; /* instrumented frames are larger */
#else
        if (kb == 0) kb = 256;
#endif
        t_sched->stack_len = kb << 10;
    }
    return t_sched.get();
}

void set_tid(Sched *s, int tid)
{
    unsigned bx = s->block.x, by = s->block.y;
    threadIdx = make_uint3((unsigned)tid % bx, ((unsigned)tid / bx) % by, (unsigned)tid / (bx * by));
}

/* ---------------------------------------------------------------- switching */

void resume(Sched *s, Fiber *f)
{
    s->cur = f;
    if (f->tid >= 0) set_tid(s, f->tid);
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(&s->main_fake, f->lo, f->len);
#endif
#ifdef EMU_ASM_SWITCH
    cpb_emu_swap(&s->main_sp, f->sp);
#else
    swapcontext(&s->main_uc, &f->uc);
#endif
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(s->main_fake, nullptr, nullptr);
#endif
    s->cur = nullptr;
}

/* from the running fiber back to the scheduler; returns when the scheduler resumes it */
void yield(Sched *s, Fiber *f)
{
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(&f->fake, s->main_lo, s->main_len);
#endif
#ifdef EMU_ASM_SWITCH
    cpb_emu_swap(&f->sp, s->main_sp);
#else
    swapcontext(&f->uc, &s->main_uc);
#endif
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(f->fake, &s->main_lo, &s->main_len);
#endif
}

/* ---------------------------------------------------------------- blocks and barriers */

void start_block(Sched *s)
{
    uint64_t b = s->blk, gx = s->grid.x, gy = s->grid.y;
    blockIdx = make_uint3((unsigned)(b % gx), (unsigned)((b / gx) % gy), (unsigned)(b / (gx * gy)));
    s->next = 0;
    s->exited = 0;
    s->bar.clear();
    for (size_t w = 0; w < s->warps.size(); w++) {
        Warp &wp = s->warps[w];
        int rest = s->nthreads - (int)w * 32;
        wp.lanes = rest < 32 ? rest : 32;
        wp.exited = 0;
        wp.kind = W_NONE;
        wp.waiters.clear();
    }
    /* shared memory is undefined at block start: NaN bytes make a read before a write show */
    if (s->smem_bytes) memset(s->smem.data(), 0xff, s->smem.size());
}

void fail(Sched *s, const char *fmt, ...)
{
    if (s->failed) return;
    s->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
}

/* the running thread cannot go on (a broken rule): park its fiber for good */
[[noreturn]] void abandon(Sched *s)
{
    Fiber *f = s->cur;
    for (;;) yield(s, f);
}

void release(Sched *s, std::vector<Fiber *> &waiters)
{
    for (Fiber *f : waiters) s->runnable.push_back(f);
    waiters.clear();
}

void check_block_barrier(Sched *s)
{
    if (!s->bar.empty() && (int)s->bar.size() + s->exited == s->nthreads) release(s, s->bar);
}

void complete_warp(Warp &w)
{
    if (w.kind == W_SHFL) {
        for (Fiber *f : w.waiters) {
            int l = f->tid % 32, src = w.src[l] & 31;
            w.vout[l] = src < w.lanes ? w.vin[src] : w.vin[l];
        }
    } else if (w.kind == W_MMA) {
        float A[16][16], B[16][8];
        for (int L = 0; L < 32; L++) {
            const uint32_t *x = w.a[L];
            int g = L >> 2, t = L & 3;
            A[g][2 * t] = cpb_bf16_to_f32((uint16_t)(x[0] & 0xffffu)), A[g][2 * t + 1] = cpb_bf16_to_f32((uint16_t)(x[0] >> 16));
            A[g + 8][2 * t] = cpb_bf16_to_f32((uint16_t)(x[1] & 0xffffu)), A[g + 8][2 * t + 1] = cpb_bf16_to_f32((uint16_t)(x[1] >> 16));
            A[g][2 * t + 8] = cpb_bf16_to_f32((uint16_t)(x[2] & 0xffffu)), A[g][2 * t + 9] = cpb_bf16_to_f32((uint16_t)(x[2] >> 16));
            A[g + 8][2 * t + 8] = cpb_bf16_to_f32((uint16_t)(x[3] & 0xffffu)), A[g + 8][2 * t + 9] = cpb_bf16_to_f32((uint16_t)(x[3] >> 16));
            const uint32_t *y = w.b[L];
            B[2 * t][g] = cpb_bf16_to_f32((uint16_t)(y[0] & 0xffffu)), B[2 * t + 1][g] = cpb_bf16_to_f32((uint16_t)(y[0] >> 16));
            B[2 * t + 8][g] = cpb_bf16_to_f32((uint16_t)(y[1] & 0xffffu)), B[2 * t + 9][g] = cpb_bf16_to_f32((uint16_t)(y[1] >> 16));
        }
        for (int L = 0; L < 32; L++) {
            int g = L >> 2, t = L & 3;
            const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
            for (int e = 0; e < 4; e++) {
                float acc = w.c[L][e];
                for (int k = 0; k < 16; k++) acc += A[rows[e]][k] * B[k][cols[e]];
                w.cout[L][e] = acc;
            }
        }
    }
    w.kind = W_NONE;
}

void check_warp(Sched *s, Warp &w)
{
    if (!w.waiters.empty() && (int)w.waiters.size() + w.exited == w.lanes) {
        if (w.kind == W_MMA && w.exited)
            fail(s, "block (%u,%u,%u): mma.sync on warp %d with %d of its lanes already exited (undefined on the GPU)",
                 blockIdx.x, blockIdx.y, blockIdx.z, (int)(&w - s->warps.data()), w.exited);
        complete_warp(w);
        release(s, w.waiters);
    }
}

const char *kind_name(int k)
{
    return k == W_SYNC ? "__syncwarp" : k == W_SHFL ? "__shfl_*_sync" : k == W_MMA ? "mma.sync" : "none";
}

Sched *running(const char *what)
{
    Sched *s = t_sched.get();
    if (!s || !s->active || !s->cur) {
        fprintf(stderr, "cuda emulator: %s called outside an emulated kernel launch\n", what);
        abort();
    }
    return s;
}

/* the calling lane arrives at a warp-synchronous call of `kind`; returns its warp once every
 * live lane has arrived and the call's result is there */
Warp &warp_arrive(Sched *s, int kind)
{
    Fiber *f = s->cur;
    Warp &w = s->warps[(size_t)f->tid / 32];
    if (w.kind != W_NONE && w.kind != kind) {
        fail(s, "block (%u,%u,%u): lanes of warp %d reached different warp-synchronous calls (%s and %s): divergent "
                "warp synchronisation",
             blockIdx.x, blockIdx.y, blockIdx.z, f->tid / 32, kind_name(w.kind), kind_name(kind));
        abandon(s);
    }
    w.kind = kind;
    w.waiters.push_back(f);
    check_warp(s, w);
    yield(s, f);
    return w;
}

void thread_exit(Sched *s, Fiber *f)
{
    s->exited++;
    Warp &w = s->warps[(size_t)f->tid / 32];
    w.exited++;
    check_block_barrier(s);
    check_warp(s, w);
}

int claim(Sched *s)
{
    if (s->failed) return -1;
    if (s->next < s->nthreads) return s->next++;
    if (s->exited == s->nthreads && s->blk + 1 < s->nblocks) {
        s->blk++;
        start_block(s);
        return s->next++;
    }
    return -1;
}

void fiber_main(Fiber *f)
{
    Sched *s = t_sched.get();
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &s->main_lo, &s->main_len);
#endif
    for (;;) {
        int tid = claim(s);
        if (tid < 0) {
            f->tid = -1;
            s->idle.push_back(f);
            yield(s, f);
            continue;
        }
        f->tid = tid;
        set_tid(s, tid);
        s->body(s->ctx);
        thread_exit(s, f);
    }
}

#ifndef EMU_ASM_SWITCH
void fiber_start_uc(unsigned lo, unsigned hi)
{
    fiber_main(reinterpret_cast<Fiber *>(((uintptr_t)hi << 32) | (uintptr_t)lo));
}
#endif

Fiber *new_fiber(Sched *s)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t len = (s->stack_len + (size_t)page - 1) & ~((size_t)page - 1);
    size_t map_len = len + (size_t)page;
    void *m = mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    mprotect(m, (size_t)page, PROT_NONE); /* overflow faults instead of corrupting */
    Fiber *f = new Fiber;
    f->map = (char *)m;
    f->map_len = map_len;
    f->lo = f->map + page;
    f->len = len;
    EMU_UNPOISON(f->lo, f->len);
#ifdef EMU_ASM_SWITCH
    uintptr_t top = ((uintptr_t)(f->lo + len)) & ~(uintptr_t)15;
    void **sp = (void **)(top - 8 * sizeof(void *));
    /* MXCSR (bytes 0-3) and the x87 control word (bytes 4-5): their default values */
    sp[0] = (void *)(uintptr_t)(0x1f80ull | (0x037full << 32));
    sp[1] = nullptr;                                           /* r15 */
    sp[2] = nullptr;                                           /* r14 */
    sp[3] = reinterpret_cast<void *>(&fiber_main);             /* r13 */
    sp[4] = f;                                                 /* r12 */
    sp[5] = nullptr;                                           /* rbx */
    sp[6] = nullptr;                                           /* rbp */
    sp[7] = reinterpret_cast<void *>(&cpb_emu_trampoline);     /* return address */
    f->sp = sp;
#else
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->lo;
    f->uc.uc_stack.ss_size = len;
    f->uc.uc_link = nullptr;
    uintptr_t p = (uintptr_t)f;
    makecontext(&f->uc, (void (*)())fiber_start_uc, 2, (unsigned)(p & 0xffffffffu), (unsigned)(p >> 32));
#endif
    s->pool.push_back(f);
    return f;
}

void drop_fiber(Sched *s, Fiber *f)
{
    for (size_t i = 0; i < s->pool.size(); i++)
        if (s->pool[i] == f) {
            s->pool[i] = s->pool.back();
            s->pool.pop_back();
            break;
        }
    EMU_UNPOISON(f->lo, f->len);
    munmap(f->map, f->map_len);
    delete f;
}

void describe_deadlock(Sched *s)
{
    char w[256] = "";
    size_t n = 0;
    for (size_t i = 0; i < s->warps.size() && n < sizeof w - 64; i++)
        if (!s->warps[i].waiters.empty())
            n += (size_t)snprintf(w + n, sizeof w - n, "; warp %zu: %zu of %d lanes at %s", i, s->warps[i].waiters.size(),
                                  s->warps[i].lanes, kind_name(s->warps[i].kind));
    fail(s,
         "block (%u,%u,%u): divergent synchronisation: %zu of %d threads wait at __syncthreads, %d exited%s (a hang "
         "or undefined behaviour on the GPU)",
         blockIdx.x, blockIdx.y, blockIdx.z, s->bar.size(), s->nthreads, s->exited, w);
}

} // namespace

/* ---------------------------------------------------------------- services */

void *cpb_emu_smem()
{
    Sched *s = running("dynamic shared memory");
    uintptr_t p = (uintptr_t)s->smem.data();
    return (void *)((p + 15) & ~(uintptr_t)15);
}

void cpb_emu_block_barrier()
{
    Sched *s = running("__syncthreads");
    Fiber *f = s->cur;
    s->bar.push_back(f);
    check_block_barrier(s);
    yield(s, f);
}

void cpb_emu_warp_barrier()
{
    warp_arrive(running("__syncwarp"), W_SYNC);
}

float cpb_emu_shfl(float v, int src_lane)
{
    Sched *s = running("__shfl_sync");
    int l = s->cur->tid % 32;
    Warp &w = s->warps[(size_t)s->cur->tid / 32];
    w.vin[l] = v;
    w.src[l] = src_lane;
    warp_arrive(s, W_SHFL);
    return w.vout[l];
}

void cpb_emu_mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    Sched *s = running("mma.sync");
    int l = s->cur->tid % 32;
    Warp &w = s->warps[(size_t)s->cur->tid / 32];
    if (w.lanes != 32) {
        fail(s, "mma.sync on a warp of %d lanes: the block size must be a multiple of 32", w.lanes);
        abandon(s);
    }
    for (int e = 0; e < 4; e++) w.a[l][e] = a[e], w.c[l][e] = c[e];
    w.b[l][0] = b0, w.b[l][1] = b1;
    warp_arrive(s, W_MMA);
    for (int e = 0; e < 4; e++) c[e] = w.cout[l][e];
}

void cpb_emu_check_mask(unsigned mask, const char *what)
{
    if (mask == 0xffffffffu) return;
    Sched *s = running(what);
    fail(s, "%s with mask 0x%08x: only the full warp mask is emulated", what, mask);
    abandon(s);
}

int cpb_emu_run(dim3 grid, dim3 block, size_t smem, void (*body)(void *), void *ctx, char *err, size_t err_len)
{
    uint64_t nthreads = (uint64_t)block.x * block.y * block.z, nblocks = (uint64_t)grid.x * grid.y * grid.z;
    if (err && err_len) err[0] = 0;
    if (nthreads == 0 || nblocks == 0 || nthreads > 1024) {
        if (err) snprintf(err, err_len, "launch of %llu blocks of %llu threads: not a valid configuration",
                          (unsigned long long)nblocks, (unsigned long long)nthreads);
        return -1;
    }
    Sched *s = sched();
    if (s->active) {
        if (err) snprintf(err, err_len, "a kernel launched a kernel (dynamic parallelism is not emulated)");
        return -1;
    }
    s->active = true;
    s->failed = false;
    s->err[0] = 0;
    s->body = body;
    s->ctx = ctx;
    s->grid = grid;
    s->block = block;
    s->nblocks = nblocks;
    s->blk = 0;
    s->nthreads = (int)nthreads;
    s->warps.assign((size_t)(nthreads + 31) / 32, Warp());
    s->smem_bytes = smem;
    s->smem.resize(smem + 16);
    s->runnable.clear();
    s->run_head = 0;
    blockDim = block;
    gridDim = grid;
    start_block(s);
    for (;;) {
        if (s->failed) break;
        Fiber *f;
        if (s->run_head < s->runnable.size()) {
            f = s->runnable[s->run_head++];
        } else {
            s->runnable.clear();
            s->run_head = 0;
            bool more = s->next < s->nthreads || (s->exited == s->nthreads && s->blk + 1 < s->nblocks);
            if (!more) break;
            if (!s->idle.empty()) {
                f = s->idle.back();
                s->idle.pop_back();
            } else if (!(f = new_fiber(s))) {
                fail(s, "cannot map a %zu KiB fiber stack for CUDA thread %d of the block", s->stack_len >> 10, s->next);
                break;
            }
        }
        resume(s, f);
    }
    if (!s->failed && !(s->exited == s->nthreads && s->blk + 1 == s->nblocks)) describe_deadlock(s);
    if (s->failed) {
        /* fibers suspended inside the kernel cannot go on: drop them (idle ones stay) */
        std::vector<Fiber *> stuck;
        for (Fiber *f : s->pool) {
            bool idle = false;
            for (Fiber *i : s->idle) idle |= i == f;
            if (!idle) stuck.push_back(f);
        }
        for (Fiber *f : stuck) drop_fiber(s, f);
        s->bar.clear();
        s->runnable.clear();
        s->run_head = 0;
        if (err) snprintf(err, err_len, "%s", s->err);
    }
    s->active = false;
    return s->failed ? -1 : 0;
}
