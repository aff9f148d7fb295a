/* attn_cudnn.cpp — cuDNN's fused attention through cudnn-frontend (attn_cudnn.h): the one
 * C++ file of the cuda backend.
 *
 * - libcudnn is not linked: cudnn-frontend's dynamic loading calls cuDNN through
 *   `cudnn_frontend::cudnn_dlhandle`, which we open here by soname.  cpbench's plugin
 *   loader has already loaded the copy it found (toolkit, pip wheel, CPB_CUDA_LIB_PATH) by
 *   full path with RTLD_GLOBAL, so this dlopen returns that copy (backends/cuda_loader.c).
 * - A plan is built once per (direction, shape, strides, mask, scale), on its first call,
 *   which the measured runner makes in its warm-up step; the seconds spent building are
 *   counted apart (cpb_cudnn_attn_plan_stats) and reported beside the timed steps.
 * - One cuDNN handle per CUDA stream, made at the stream's first call.
 * - The workspace is the caller's (tracked, of the front-end's declared bound); a plan
 *   that needs more fails the call with both sizes, as does any refusal by cuDNN: never a
 *   silent fallback to another implementation.
 * - Every call into cudnn-frontend (and so into cuDNN and the CUDA runtime it opens) runs
 *   inside `guarded`: an error status and an exception alike become this file's error value
 *   naming the call, so nothing thrown crosses the extern "C" interface (which would
 *   terminate every rank).  The frontend's dynamic loading throws std::runtime_error when
 *   libcudart or a symbol is missing (cudnn_frontend_shim.h: get_symbol's callers,
 *   load_cudart_so, get_cuda_symbol) and its descriptor builders throw cudnnException
 *   (cudnn_frontend_utils.h: set_error_and_throw_exception), which only some of its own
 *   callers turn into an error_t.  The exception that cannot be caught is one thrown by a
 *   destructor (~OpaqueBackendPointer calls cudnnBackendDestroyDescriptor): load() refuses a
 *   library without the symbols destructors call, before any descriptor exists.
 * Tensors are [rows][heads][d] in our views; cuDNN's SDPA takes [batch][heads][seq][d] by
 * dims and strides, so the same memory is described with batch 1 and the views' strides. */
#include "attn_cudnn.h"

#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include <cudnn_frontend.h>

namespace fe = cudnn_frontend;

namespace cudnn_frontend {
/* the frontend's dynamic loading calls cuDNN through this handle */
void *cudnn_dlhandle = nullptr;
}  // namespace cudnn_frontend

namespace {

constexpr const char *kSoname = "libcudnn.so.9";

/* uids of the graphs' tensors */
enum : int64_t { Q = 1, K, V, O, LSE, DO, DQ, DK, DV };

struct State {
    std::mutex mu;
    int tried = 0, loaded = 0;
    std::string why;   /* why cuDNN cannot be used (tried && !loaded) */
    std::string where; /* the library's path */
    size_t version = 0; /* cudnnGetVersion's */
    /* cuDNN's libraries cpbench's loader could not pre-load (cpb_cuda_plugin_preload_report):
     * the sonames, and each with where it was looked for and why it did not load */
    std::string preload_sonames, preload_detail;
    std::map<void *, cudnnHandle_t> handles; /* per stream */
    /* a plan per call class */
    std::map<std::vector<int64_t>, std::shared_ptr<fe::graph::Graph>> plans;
    int64_t nplans = 0;
    double build_s = 0;
};

State &state()
{
    static State *s = new State; /* lives until exit: handles outlive static destruction order */
    return *s;
}

/* Runs f, a call into cudnn-frontend: true when it succeeded.  Else err is "step: why",
 * from the error_t it returned or the exception it threw, whatever its type. */
template <class F>
bool guarded(const char *step, std::string &err, F &&f)
{
    try {
        fe::error_t e = f();
        if (e.is_good()) return true;
        std::string m = e.get_message();
        err = std::string(step) + ": " +
              (m.empty() ? "failed with cudnn-frontend error code " + std::to_string(static_cast<int>(e.get_code()))
                         : m);
    } catch (const std::exception &x) {
        err = std::string(step) + " threw: " + x.what();
    } catch (...) {
        err = std::string(step) + " threw an exception that is not a std::exception";
    }
    return false;
}

/* a cuDNN status as an error_t with cuDNN's name for it (its own lookup can throw: guarded) */
fe::error_t status_of(cudnnStatus_t st, const char *what)
{
    if (st == CUDNN_STATUS_SUCCESS) return {};
    const char *name = fe::detail::get_error_string(st);
    return {fe::error_code_t::CUDNN_BACKEND_API_FAILED,
            std::string(name ? name : "unknown status") + " (" + std::to_string(static_cast<int>(st)) + ")" + what};
}

/* symbols cudnn-frontend calls from destructors, where the exception a missing one throws
 * cannot be caught (std::terminate): their absence is checked before any call */
constexpr const char *kCalledFromDestructors[] = {"cudnnBackendDestroyDescriptor", "cudnnDestroy"};

/* open libcudnn (the copy the loader pre-loaded, else the dynamic linker's) */
bool load(State &s)
{
    if (s.tried) return s.loaded;
    s.tried = 1;
    void *h = dlopen(kSoname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    if (!h) h = dlopen(kSoname, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        const char *e = dlerror();
        s.why = std::string(kSoname) + " not found (" + (e ? e : "dlopen failed") +
                "): install cuDNN 9 (the CUDA toolkit's or pip's nvidia-cudnn-cu13) or set CPB_CUDA_LIB_PATH";
        return false;
    }
    void *sym = dlsym(h, "cudnnGetVersion");
    Dl_info info;
    if (sym && dladdr(sym, &info) && info.dli_fname) s.where = info.dli_fname;
    const std::string lib = std::string(kSoname) + (s.where.empty() ? "" : " (" + s.where + ")");
    std::string missing;
    for (const char *name : kCalledFromDestructors)
        if (!dlsym(h, name)) missing += std::string(missing.empty() ? "" : ", ") + name;
    if (!missing.empty()) {
        s.why = lib + " lacks " + missing +
                " (cudnn-frontend calls it from destructors, where a missing symbol aborts): not a usable cuDNN 9";
        return false;
    }
    fe::cudnn_dlhandle = h;
    std::string err;
    if (!guarded("cudnnGetVersion", err, [&] {
            s.version = fe::detail::get_backend_version();
            return fe::error_t{};
        })) {
        fe::cudnn_dlhandle = nullptr;
        s.why = lib + ": " + err;
        return false;
    }
    if (s.version < 90000) {
        fe::cudnn_dlhandle = nullptr;
        s.why = lib + " reports version " + std::to_string(s.version) + "; cudnn-frontend's SDPA needs 9.0 or newer";
        return false;
    }
    s.loaded = 1;
    return true;
}

std::string version_of(size_t v)
{
    /* cuDNN 9: major*10000 + minor*100 + patch */
    return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

cudnnHandle_t handle_of(State &s, void *stream, std::string &err)
{
    auto it = s.handles.find(stream);
    if (it != s.handles.end()) return it->second;
    cudnnHandle_t h = nullptr;
    if (!guarded("cudnnCreate", err, [&] {
            return status_of(fe::detail::create_handle(&h),
                             ": no usable GPU, or a cuDNN that does not match the driver or the CUDA runtime");
        }))
        return nullptr;
    if (!guarded("cudnnSetStream", err,
                 [&] { return status_of(fe::detail::set_stream(h, static_cast<cudaStream_t>(stream)), ""); })) {
        std::string ignored; /* the first failure is the one to report */
        guarded("cudnnDestroy", ignored, [&] { return status_of(fe::detail::destroy_handle(h), ""); });
        return nullptr;
    }
    s.handles.emplace(stream, h);
    return h;
}

/* [rows][heads][d] as cuDNN's [1][heads][rows][d] */
std::shared_ptr<fe::graph::Tensor_attributes> tensor(fe::graph::Graph &g, const char *name, int64_t uid,
                                                     int64_t rows, int64_t heads, int64_t d, const cudnn_tensor &t)
{
    return g.tensor(fe::graph::Tensor_attributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim({1, heads, rows, d})
                        .set_stride({heads * t.hs + rows * t.rs, t.hs, t.rs, 1}));
}

void as_output(const std::shared_ptr<fe::graph::Tensor_attributes> &x, const char *name, int64_t uid, int64_t rows,
               int64_t heads, int64_t d, const cudnn_tensor &t)
{
    x->set_output(true)
        .set_name(name)
        .set_uid(uid)
        .set_dim({1, heads, rows, d})
        .set_stride({heads * t.hs + rows * t.rs, t.hs, t.rs, 1});
}

void lse_output(const std::shared_ptr<fe::graph::Tensor_attributes> &x, int64_t rows, int64_t heads, int64_t hs)
{
    x->set_output(true)
        .set_name("lse")
        .set_uid(LSE)
        .set_data_type(fe::DataType_t::FLOAT)
        .set_dim({1, heads, rows, 1})
        .set_stride({heads * hs, hs, 1, 1});
}

std::shared_ptr<fe::graph::Graph> new_graph()
{
    auto g = std::make_shared<fe::graph::Graph>();
    g->set_io_data_type(fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    return g;
}

/* the q, k, v every graph starts from */
struct Qkv {
    std::shared_ptr<fe::graph::Tensor_attributes> q, k, v;
};

Qkv qkv(fe::graph::Graph &g, const cudnn_attn_call &c)
{
    return {tensor(g, "q", Q, c.sq, c.hq, c.d, c.q), tensor(g, "k", K, c.sk, c.hk, c.d, c.k),
            tensor(g, "v", V, c.sk, c.hk, c.d, c.v)};
}

/* the call's mask on the SDPA attributes (forward or backward): the diagonal aligned
 * top-left (query i sees keys 0..i) or bottom-right (query i sees keys 0..i + sk - sq;
 * graph_properties.h: set_causal_mask_bottom_right sets DiagonalAlignment_t::BOTTOM_RIGHT
 * and a right bound of 0) */
const char *mask_name(int causal)
{
    return causal == 2 ? "causal bottom-right" : causal ? "causal" : "unmasked";
}

template <class Attributes> void set_mask(Attributes &opts, const cudnn_attn_call &c)
{
    if (c.causal == 1) opts.set_causal_mask(true);
    if (c.causal == 2) opts.set_causal_mask_bottom_right(true);
}

std::shared_ptr<fe::graph::Graph> forward_graph(const cudnn_attn_call &c)
{
    auto g = new_graph();
    auto [q, k, v] = qkv(*g, c);
    auto opts = fe::graph::SDPA_attributes().set_name("attn_fwd").set_generate_stats(true).set_attn_scale(c.scale);
    set_mask(opts, c);
    auto [o, lse] = g->sdpa(q, k, v, opts);
    as_output(o, "o", O, c.sq, c.hq, c.d, c.o);
    lse_output(lse, c.sq, c.hq, c.lse.hs);
    return g;
}

std::shared_ptr<fe::graph::Graph> backward_graph(const cudnn_attn_call &c)
{
    auto g = new_graph();
    auto [q, k, v] = qkv(*g, c);
    auto o = tensor(*g, "o", O, c.sq, c.hq, c.d, c.o);
    auto d_o = tensor(*g, "dO", DO, c.sq, c.hq, c.d, c.d_o);
    auto lse = g->tensor(fe::graph::Tensor_attributes()
                             .set_name("lse")
                             .set_uid(LSE)
                             .set_data_type(fe::DataType_t::FLOAT)
                             .set_dim({1, c.hq, c.sq, 1})
                             .set_stride({c.hq * c.lse.hs, c.lse.hs, 1, 1}));
    auto opts = fe::graph::SDPA_backward_attributes().set_name("attn_bwd").set_attn_scale(c.scale);
    set_mask(opts, c);
    auto [dq, dk, dv] = g->sdpa_backward(q, k, v, o, d_o, lse, opts);
    as_output(dq, "dq", DQ, c.sq, c.hq, c.d, c.dq);
    as_output(dk, "dk", DK, c.sk, c.hk, c.d, c.dk);
    as_output(dv, "dv", DV, c.sk, c.hk, c.d, c.dv);
    return g;
}

/* what makes two calls share a plan: direction, shape, every stride, mask, scale (the
 * element type is bf16 for every call the front-end sends) */
std::vector<int64_t> plan_key(const cudnn_attn_call &c)
{
    int32_t scale_bits;
    std::memcpy(&scale_bits, &c.scale, sizeof scale_bits);
    std::vector<int64_t> k = {c.bwd, c.sq, c.sk, c.hq, c.hk, c.d, c.causal, scale_bits, c.lse.hs};
    const cudnn_tensor *ts[] = {&c.q, &c.k, &c.v, &c.o, &c.d_o, &c.dq, &c.dk, &c.dv};
    int n = c.bwd ? 8 : 4;
    for (int i = 0; i < n; i++) {
        k.push_back(ts[i]->rs);
        k.push_back(ts[i]->hs);
    }
    return k;
}

std::shared_ptr<fe::graph::Graph> plan_of(State &s, const cudnn_attn_call &c, cudnnHandle_t h, std::string &err)
{
    auto key = plan_key(c);
    auto it = s.plans.find(key);
    if (it != s.plans.end()) return it->second;
    auto t0 = std::chrono::steady_clock::now();
    std::shared_ptr<fe::graph::Graph> g;
    /* each step only after the one before it succeeded: err names the first that failed */
    bool ok = guarded("describing the graph", err, [&] {
        g = c.bwd ? backward_graph(c) : forward_graph(c);
        return fe::error_t{};
    });
    ok = ok && guarded("validate", err, [&] { return g->validate(); });
    ok = ok && guarded("build_operation_graph", err, [&] { return g->build_operation_graph(h); });
    ok = ok && guarded("create_execution_plans", err,
                       [&] { return g->create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}); });
    ok = ok && guarded("check_support", err, [&] { return g->check_support(h); });
    ok = ok && guarded("build_plans", err, [&] { return g->build_plans(fe::BuildPlanPolicy_t::HEURISTICS_CHOICE); });
    s.build_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!ok) return nullptr;
    s.nplans++;
    s.plans.emplace(key, g);
    return g;
}

/* at most n bytes of m: a frontend message (cuDNN's last-error text can run to 64 KiB) must
 * leave room in the caller's buffer for what follows it */
std::string clipped(const std::string &m, size_t n)
{
    return m.size() <= n ? m : m.substr(0, n) + " [...]";
}

}  // namespace

extern "C" int cpb_cudnn_attn_status(char *why, size_t why_len)
{
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    /* short: the context keeps 256 bytes of it; the loader's line says why a library did not load */
    const std::string not_preloaded =
        s.preload_sonames.empty() ? "" : "; not pre-loaded: " + s.preload_sonames + " (cpbench list: cuda line)";
    if (!load(s)) {
        std::snprintf(why, why_len, "compiled in; not usable here: %s%s", s.why.c_str(), not_preloaded.c_str());
        return 1;
    }
    std::snprintf(why, why_len, "compiled in; cuDNN %s from %s, cudnn-frontend %d.%d.%d%s", version_of(s.version).c_str(),
                  s.where.c_str(), CUDNN_FRONTEND_MAJOR_VERSION, CUDNN_FRONTEND_MINOR_VERSION,
                  CUDNN_FRONTEND_PATCH_VERSION, not_preloaded.c_str());
    return 2;
}

extern "C" void cpb_cudnn_attn_version(char *out, size_t len)
{
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    std::snprintf(out, len, "%s", load(s) ? version_of(s.version).c_str() : "");
}

extern "C" void cpb_cuda_plugin_preload_report(const char *sonames, const char *detail)
{
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    s.preload_sonames = sonames ? sonames : "";
    s.preload_detail = detail ? detail : "";
}

extern "C" int cpb_cudnn_attn_run(const cudnn_attn_call *c, char *err, size_t err_len)
{
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    std::string e;
    /* a library cpbench could not pre-load is the likely cause of a failure that follows */
    const std::string libs =
        s.preload_detail.empty() ? "" : "; cuDNN's libraries cpbench could not pre-load: " + clipped(s.preload_detail, 320);
    if (!load(s)) {
        std::snprintf(err, err_len, "cuDNN attention: %s%s", s.why.c_str(), libs.c_str());
        return -1;
    }
    cudnnHandle_t h = handle_of(s, c->stream, e);
    const int64_t plans_before = s.nplans;
    std::shared_ptr<fe::graph::Graph> g = h ? plan_of(s, *c, h, e) : nullptr;
    int64_t need = 0;
    if (g && guarded("get_workspace_size", e, [&] { return g->get_workspace_size(need); })) {
        if (need > c->ws_bytes)
            e = "the plan needs " + std::to_string(need) + " bytes of workspace, above the declared bound of " +
                std::to_string(c->ws_bytes) + " (cpb_attn_cudnn_workspace_bytes): raise the bound";
        /* CPB_CUDNN_WS_LOG=1 (gpu-check sets it): what each new plan really needs against
         * the bound the simulator and the cpu backend track, so the bound can be measured */
        const char *log = std::getenv("CPB_CUDNN_WS_LOG");
        if (s.nplans != plans_before && log && log[0] == '1')
            std::fprintf(stderr,
                         "cudnn workspace: %s q %lld x %lld heads, kv %lld x %lld heads, d %lld, %s: plan needs %lld "
                         "bytes, declared bound %lld (%.1f%%)\n",
                         c->bwd ? "backward" : "forward", (long long)c->sq, (long long)c->hq, (long long)c->sk,
                         (long long)c->hk, (long long)c->d, mask_name(c->causal), (long long)need,
                         (long long)c->ws_bytes, c->ws_bytes > 0 ? 100.0 * (double)need / (double)c->ws_bytes : 0.0);
    }
    if (g && e.empty()) {
        std::unordered_map<int64_t, void *> pack = {{Q, c->q.p}, {K, c->k.p}, {V, c->v.p}, {O, c->o.p}, {LSE, c->lse.p}};
        if (c->bwd) {
            pack[DO] = c->d_o.p;
            pack[DQ] = c->dq.p;
            pack[DK] = c->dk.p;
            pack[DV] = c->dv.p;
        }
        guarded("execute", e, [&] { return g->execute(h, pack, c->ws); });
    }
    if (e.empty()) return 0;
    std::snprintf(err, err_len, "cuDNN attention %s (q %lld x %lld heads, kv %lld x %lld heads, d %lld, %s): %s%s",
                  c->bwd ? "backward" : "forward", (long long)c->sq, (long long)c->hq, (long long)c->sk,
                  (long long)c->hk, (long long)c->d, mask_name(c->causal), clipped(e, 480).c_str(),
                  libs.c_str());
    return -1;
}

extern "C" void cpb_cudnn_attn_plan_stats(int64_t *plans, double *build_s)
{
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    *plans = s.nplans;
    *build_s = s.build_s;
}

extern "C" void cpb_cudnn_attn_shutdown(void)
{
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    /* the plans' destructors call cudnnBackendDestroyDescriptor, which load() made sure exists */
    s.plans.clear();
    std::string ignored; /* at shutdown there is no one left to report a failed destroy to */
    for (auto &kv : s.handles)
        guarded("cudnnDestroy", ignored, [&] { return status_of(fe::detail::destroy_handle(kv.second), ""); });
    s.handles.clear();
}
