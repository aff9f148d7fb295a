/* sd_nccl.cpp — the NCCL calls the cuda backend makes, over MPI (NCCL User Guide, "API":
 * Communicator Creation and Management, Collective Communication Functions, Group Calls,
 * Point To Point Communication Functions; nccl.h 2.28).
 *
 * Communicators: ncclGetUniqueId names its caller; ncclCommInitRank is a rendezvous over
 * MPI_COMM_WORLD with that rank (each member sends its rank, the creator answers with the
 * member list), then the members make the communicator's own MPI communicator with
 * MPI_Comm_create_group, one per NCCL communicator, so collectives of different
 * communicators never match each other.  Two ranks of one communicator on one GPU (same
 * host, same PCI bus id) are refused as NCCL refuses them.
 *
 * Operations are enqueued on their stream and run on its executor thread (MPI must be
 * initialized with MPI_THREAD_MULTIPLE).  Inside ncclGroupStart/ncclGroupEnd nothing is
 * enqueued until the outermost ncclGroupEnd; a group over several streams orders them all
 * around the group's work, as the guide's "Mixing Multiple Streams within the same group"
 * says.  Every collective first compares its call (kind, count, type, operation, root)
 * across the ranks and fails loudly on a mismatch; a ncclRecv must meet a ncclSend of the
 * same count and type.  Sums of bf16 are rounded to bf16 after every addition, as NCCL's
 * reduction kernels add bf16 values (in rank order here; NCCL's order depends on its
 * algorithm).  A collective that waits on its peers for CPB_STANDIN_STALL_MS (1000 ms)
 * releases this process's other pending stream work, as a GPU would run it; with
 * CPB_STANDIN_NCCL_STALL_RANK=r, rank r's collectives never complete (a hung peer) until
 * ncclCommAbort; with CPB_STANDIN_FAIL=ncclSend (or another operation's name) every such
 * call fails.  Device memory for NCCL's own buffers is counted at init and at the first
 * use of each connection (NCCL_RUNTIME_CONNECT=0 connects the collectives at init); the
 * amounts are the stand-in's choice. */
#include <mpi.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <set>

#include "cpb_bf16.h"
#include "sd_internal.h"

struct ncclComm {
    int nranks = 1, rank = 0, device = 0;
    MPI_Comm mpi = MPI_COMM_NULL;
    bool aborted = false, live = true;
    ncclResult_t async_err = ncclSuccess;
    uint64_t ncalls = 0;
    bool coll_connected = false;
    std::set<int> peers_connected;
    std::map<sd::Stream *, uint64_t> last; /* last enqueued work per stream */
};

using namespace sd;

namespace {

const char *kComm = "NCCL User Guide, Communicator Creation and Management";
const char *kColl = "NCCL User Guide, Collective Operations";
const char *kGroup = "NCCL User Guide, Group Calls";
const char *kP2p = "NCCL User Guide, Point-to-point communication";

enum OpKind { O_SEND, O_RECV, O_BCAST, O_REDUCE, O_ALLREDUCE, O_ALLGATHER, O_REDSCAT };
const char *op_name(int k)
{
    static const char *n[] = {"ncclSend", "ncclRecv", "ncclBroadcast", "ncclReduce", "ncclAllReduce", "ncclAllGather",
                              "ncclReduceScatter"};
    return k >= 0 && k <= O_REDSCAT ? n[k] : "?";
}

struct Op {
    int kind;
    ncclComm *comm;
    Stream *s;
    const void *send;
    void *recv;
    size_t count; /* elements: per rank for allgather (send) and reduce-scatter (recv) */
    ncclDataType_t dt;
    ncclRedOp_t red;
    int root; /* or peer */
    uint64_t call;
};

thread_local int t_depth = 0;
thread_local std::vector<Op> t_ops;
thread_local ncclResult_t t_group_err = ncclSuccess;
thread_local char t_last_err[1024] = "";

std::atomic<uint64_t> g_serial{1};

ncclResult_t fail(ncclResult_t r, const char *rule, const char *doc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
ncclResult_t fail(ncclResult_t r, const char *rule, const char *doc, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(t_last_err, sizeof t_last_err, "%s", msg);
    violation(rule, doc, "%s", msg);
    return r;
}

size_t dt_size(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}

const char *dt_name(int t)
{
    return t == ncclBfloat16 ? "bf16" : t == ncclFloat32 ? "fp32" : t == ncclFloat16 ? "fp16" : "other";
}

struct Id {
    char magic[8];
    int32_t creator;
    uint64_t serial;
};

const int kTagJoin = 30000, kTagList = 30512, kTagCreate = 31024; /* + serial % 512, on MPI_COMM_WORLD */
const int kTagHdr = 1, kTagData = 2;          /* on a communicator's own MPI communicator */

int64_t stall_ms()
{
    static int64_t v = getenv("CPB_STANDIN_STALL_MS") ? atoll(getenv("CPB_STANDIN_STALL_MS")) : 1000;
    return v;
}

bool this_rank_stalls()
{
    static int r = getenv("CPB_STANDIN_NCCL_STALL_RANK") ? atoi(getenv("CPB_STANDIN_NCCL_STALL_RANK")) : -2;
    return r >= 0 && r == world_rank();
}

/* wait for MPI requests, watching for an abort and for peers that do not come */
ncclResult_t wait_reqs(ncclComm *c, std::vector<MPI_Request> &reqs)
{
    auto t0 = std::chrono::steady_clock::now();
    bool released = false;
    int sleep_us = 20;
    for (;;) {
        int flag = 0;
        if (!this_rank_stalls() && !reqs.empty()) MPI_Testall((int)reqs.size(), reqs.data(), &flag, MPI_STATUSES_IGNORE);
        if (!this_rank_stalls() && reqs.empty()) flag = 1;
        if (flag) return ncclSuccess;
        if (c->aborted) {
            for (MPI_Request &r : reqs)
                if (r != MPI_REQUEST_NULL) MPI_Cancel(&r);
            return ncclRemoteError;
        }
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
        if (!released && ms > stall_ms()) {
            release_all();
            released = true;
            count("collective waited on its peers: pending work released");
        }
        std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
        if (sleep_us < 2000) sleep_us *= 2;
    }
}

void add_internal(int device, int64_t bytes)
{
    std::lock_guard<std::recursive_mutex> lk(lock());
    if (Device *d = sd::device(device)) d->internal += bytes;
}

bool runtime_connect()
{
    const char *e = getenv("NCCL_RUNTIME_CONNECT");
    return !(e && strcmp(e, "0") == 0);
}

float as_f32(const void *p, ncclDataType_t t, size_t i)
{
    return t == ncclBfloat16 ? cpb_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

/* one reduction step, rounded to the type as NCCL's kernels round it */
void reduce_into(void *acc, const void *x, ncclDataType_t t, ncclRedOp_t op, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float a = as_f32(acc, t, i), b = as_f32(x, t, i), r;
        switch (op) {
        case ncclProd: r = a * b; break;
        case ncclMax: r = a > b ? a : b; break;
        case ncclMin: r = a < b ? a : b; break;
        default: r = a + b; break;
        }
        if (t == ncclBfloat16) ((uint16_t *)acc)[i] = cpb_f32_to_bf16(r);
        else ((float *)acc)[i] = r;
    }
}

struct Desc {
    int32_t kind, dt, red, root;
    uint64_t count, call;
};

/* every rank must make the same collective call, in the same order */
ncclResult_t match(ncclComm *c, const Op &o)
{
    Desc me = {o.kind, (int)o.dt, (int)o.red, o.root, o.count, o.call};
    std::vector<Desc> all((size_t)c->nranks);
    MPI_Request rq;
    MPI_Iallgather(&me, (int)sizeof me, MPI_BYTE, all.data(), (int)sizeof me, MPI_BYTE, c->mpi, &rq);
    std::vector<MPI_Request> reqs{rq};
    ncclResult_t r = wait_reqs(c, reqs);
    if (r != ncclSuccess) return r;
    for (int i = 0; i < c->nranks; i++) {
        const Desc &d = all[(size_t)i];
        bool same = d.kind == me.kind && d.dt == me.dt && d.count == me.count &&
                    (me.kind == O_ALLGATHER || me.kind == O_BCAST || d.red == me.red) &&
                    ((me.kind != O_BCAST && me.kind != O_REDUCE) || d.root == me.root);
        if (!same)
            return fail(ncclInvalidUsage, "matching calls across ranks", kColl,
                        "call %llu of a communicator: rank %d calls %s(%llu x %s, root %d) while rank %d calls "
                        "%s(%llu x %s, root %d)",
                        (unsigned long long)me.call, c->rank, op_name(me.kind), (unsigned long long)me.count,
                        dt_name(me.dt), me.root, i, op_name(d.kind), (unsigned long long)d.count, dt_name(d.dt), d.root);
    }
    return ncclSuccess;
}

ncclResult_t run_collective(ncclComm *c, const Op &o)
{
    size_t es = dt_size(o.dt), W = (size_t)c->nranks;
    if (runtime_connect() && !c->coll_connected) add_internal(c->device, 16ll << 20);
    c->coll_connected = true;
    if (W > 1) {
        ncclResult_t r = match(c, o);
        if (r != ncclSuccess) return r;
    }
    size_t per = o.count * es; /* bytes each rank contributes */
    if (o.kind == O_REDSCAT) per = o.count * W * es;
    if (per > (size_t)INT_MAX)
        return fail(ncclInvalidArgument, "stand-in limit", kColl, "%s of %zu bytes: the stand-in moves at most 2 GiB per "
                    "rank and call", op_name(o.kind), per);
    /* a broadcast's non-root ranks give no data (their send buffer may be anything) */
    std::vector<char> mine(per), all;
    if (o.kind != O_BCAST || c->rank == o.root) memcpy(mine.data(), o.send, per);
    std::vector<MPI_Request> reqs(1);
    if (o.kind == O_BCAST) {
        MPI_Ibcast(mine.data(), (int)per, MPI_BYTE, o.root, c->mpi, &reqs[0]);
        ncclResult_t r = W > 1 ? wait_reqs(c, reqs) : ncclSuccess;
        if (r != ncclSuccess) return r;
        memcpy(o.recv, mine.data(), per);
        return ncclSuccess;
    }
    all.resize(per * W);
    if (W > 1) {
        MPI_Iallgather(mine.data(), (int)per, MPI_BYTE, all.data(), (int)per, MPI_BYTE, c->mpi, &reqs[0]);
        ncclResult_t r = wait_reqs(c, reqs);
        if (r != ncclSuccess) return r;
    } else {
        memcpy(all.data(), mine.data(), per);
    }
    if (o.kind == O_ALLGATHER) {
        memcpy(o.recv, all.data(), per * W);
        return ncclSuccess;
    }
    /* reductions in rank order, rounded at every step */
    size_t n = o.kind == O_REDSCAT ? o.count : o.count, off = o.kind == O_REDSCAT ? (size_t)c->rank * o.count * es : 0;
    std::vector<char> acc(all.begin() + (long)off, all.begin() + (long)(off + n * es));
    for (size_t r = 1; r < W; r++) reduce_into(acc.data(), all.data() + r * per + off, o.dt, o.red, n);
    if (o.red == ncclAvg)
        for (size_t i = 0; i < n; i++) {
            float v = as_f32(acc.data(), o.dt, i) / (float)W;
            if (o.dt == ncclBfloat16) ((uint16_t *)acc.data())[i] = cpb_f32_to_bf16(v);
            else ((float *)acc.data())[i] = v;
        }
    if (o.kind == O_REDUCE && c->rank != o.root) return ncclSuccess; /* recv matters at the root only */
    memcpy(o.recv, acc.data(), n * es);
    return ncclSuccess;
}

struct Hdr {
    uint64_t count;
    int32_t dt, pad;
};

/* a group's sends and receives on one communicator, all in flight at once */
ncclResult_t run_p2p(ncclComm *c, const std::vector<const Op *> &ops)
{
    std::vector<Hdr> out, in(ops.size());
    out.reserve(ops.size());
    std::vector<MPI_Request> reqs, data;
    for (const Op *o : ops) {
        if (runtime_connect() && !c->peers_connected.count(o->root)) add_internal(c->device, 4ll << 20);
        c->peers_connected.insert(o->root);
    }
    for (size_t i = 0; i < ops.size(); i++) {
        const Op *o = ops[i];
        MPI_Request r;
        if (o->kind == O_SEND) {
            out.push_back(Hdr{o->count, (int)o->dt, 0});
            MPI_Isend(&out.back(), (int)sizeof(Hdr), MPI_BYTE, o->root, kTagHdr, c->mpi, &r);
            reqs.push_back(r);
            /* completes only once the peer posts its receive, after the headers: waited last */
            MPI_Isend(o->send, (int)(o->count * dt_size(o->dt)), MPI_BYTE, o->root, kTagData, c->mpi, &r);
            data.push_back(r);
        } else {
            MPI_Irecv(&in[i], (int)sizeof(Hdr), MPI_BYTE, o->root, kTagHdr, c->mpi, &r);
            reqs.push_back(r);
        }
    }
    ncclResult_t res = wait_reqs(c, reqs);
    if (res != ncclSuccess) return res;
    reqs.clear();
    std::vector<std::vector<char>> spill(ops.size());
    ncclResult_t bad = ncclSuccess;
    for (size_t i = 0; i < ops.size(); i++) {
        const Op *o = ops[i];
        if (o->kind != O_RECV) continue;
        size_t bytes = in[i].count * dt_size((ncclDataType_t)in[i].dt);
        void *dst = o->recv;
        if (in[i].count != o->count || in[i].dt != (int)o->dt) {
            bad = fail(ncclInvalidUsage, "send/recv matching", kP2p,
                       "rank %d's ncclRecv of %zu x %s from rank %d meets that rank's ncclSend of %llu x %s (count and type "
                       "must be the same)",
                       c->rank, o->count, dt_name(o->dt), o->root, (unsigned long long)in[i].count, dt_name(in[i].dt));
            spill[i].resize(bytes ? bytes : 1);
            dst = spill[i].data();
        }
        MPI_Request r;
        MPI_Irecv(dst, (int)bytes, MPI_BYTE, o->root, kTagData, c->mpi, &r);
        reqs.push_back(r);
    }
    reqs.insert(reqs.end(), data.begin(), data.end());
    res = wait_reqs(c, reqs);
    return bad != ncclSuccess ? bad : res;
}

ncclResult_t run_batch(ncclComm *c, const std::vector<Op> &ops)
{
    if (c->aborted) return ncclRemoteError;
    std::vector<const Op *> p2p;
    for (const Op &o : ops) {
        if (o.kind == O_SEND || o.kind == O_RECV) {
            p2p.push_back(&o);
            continue;
        }
        ncclResult_t r = run_collective(c, o);
        if (r != ncclSuccess) return r;
    }
    if (!p2p.empty()) {
        if (c->nranks == 1) { /* to and from oneself */
            for (const Op *o : p2p)
                if (o->kind == O_RECV)
                    for (const Op *x : p2p)
                        if (x->kind == O_SEND) {
                            memcpy(o->recv, x->send, o->count * dt_size(o->dt));
                            break;
                        }
            return ncclSuccess;
        }
        return run_p2p(c, p2p);
    }
    return ncclSuccess;
}

/* enqueue the operations of a finished group */
ncclResult_t launch(std::vector<Op> ops)
{
    if (ops.empty()) return ncclSuccess;
    std::lock_guard<std::recursive_mutex> lk(lock());
    std::vector<Stream *> sts;
    for (const Op &o : ops) {
        bool have = false;
        for (Stream *s : sts) have |= s == o.s;
        if (!have) sts.push_back(o.s);
    }
    Stream *s0 = sts[0];
    for (size_t i = 1; i < sts.size(); i++) enqueue_wait(s0, sts[i], sts[i]->enq, sts[i]->clock);
    uint64_t seq = next_seq(s0);
    for (const Op &o : ops) {
        size_t es = dt_size(o.dt), W = (size_t)o.comm->nranks;
        size_t sbytes = o.count * es, rbytes = o.count * es;
        if (o.kind == O_ALLGATHER) rbytes *= W;
        if (o.kind == O_REDSCAT) sbytes *= W;
        const char *what = op_name(o.kind);
        bool sends = o.kind != O_RECV, recvs = o.kind != O_SEND;
        if (o.kind == O_REDUCE && o.comm->rank != o.root) recvs = o.recv != nullptr;
        if ((sends && touch(s0, seq, o.send, sbytes, what, true)) || (recvs && touch(s0, seq, o.recv, rbytes, what, true)))
            return ncclInvalidArgument;
    }
    /* the group's work, per communicator in the order of the calls */
    auto shared = std::make_shared<std::vector<Op>>(std::move(ops));
    enqueue(s0, "NCCL group", [shared] {
        std::vector<ncclComm *> comms;
        for (const Op &o : *shared) {
            bool have = false;
            for (ncclComm *c : comms) have |= c == o.comm;
            if (!have) comms.push_back(o.comm);
        }
        for (ncclComm *c : comms) {
            std::vector<Op> mine;
            for (const Op &o : *shared)
                if (o.comm == c) mine.push_back(o);
            ncclResult_t r = run_batch(c, mine);
            if (r != ncclSuccess) {
                c->async_err = r;
                return cudaErrorLaunchFailure;
            }
        }
        return cudaSuccess;
    });
    for (const Op &o : *shared) o.comm->last[s0] = seq;
    for (size_t i = 1; i < sts.size(); i++) {
        enqueue_wait(sts[i], s0, seq, s0->clock);
        for (const Op &o : *shared) o.comm->last[sts[i]] = sts[i]->enq;
    }
    return ncclSuccess;
}

ncclResult_t add_op(Op o)
{
    ncclComm *c = o.comm;
    if (!c || !c->live) return fail(ncclInvalidArgument, "communicator", kComm, "%s on a communicator that is not live",
                                    op_name(o.kind));
    if (c->aborted) return fail(ncclInvalidUsage, "communicator", kComm, "%s on an aborted communicator", op_name(o.kind));
    if (!dt_size(o.dt)) return fail(ncclInvalidArgument, "data type", kColl, "%s with data type %d", op_name(o.kind), (int)o.dt);
    if ((int)o.red < 0 || (int)o.red >= (int)ncclNumOps)
        return fail(ncclInvalidArgument, "reduction operation", kColl, "%s with operation %d", op_name(o.kind), (int)o.red);
    if (o.root < 0 || o.root >= c->nranks)
        return fail(ncclInvalidArgument, o.kind <= O_RECV ? "peer" : "root", o.kind <= O_RECV ? kP2p : kColl,
                    "%s with %s %d on a communicator of %d ranks", op_name(o.kind), o.kind <= O_RECV ? "peer" : "root",
                    o.root, c->nranks);
    if (!o.s || o.s->device != c->device)
        return fail(ncclInvalidArgument, "stream", "NCCL User Guide, CUDA Stream Semantics",
                    "%s on a stream that is not a live stream of the communicator's device %d", op_name(o.kind), c->device);
    if (o.count) {
        bool needs_send = o.kind != O_RECV && !(o.kind == O_BCAST && c->rank != o.root);
        bool needs_recv = o.kind != O_SEND && !(o.kind == O_REDUCE && c->rank != o.root);
        if ((needs_send && !o.send) || (needs_recv && !o.recv))
            return fail(ncclInvalidArgument, "buffers", kColl, "%s with a NULL buffer", op_name(o.kind));
    }
    /* in place only in the documented forms (NCCL User Guide, "In-place Operations") */
    size_t es = dt_size(o.dt), W = (size_t)c->nranks;
    if (o.send && o.recv && o.count && o.kind != O_SEND && o.kind != O_RECV) {
        size_t sb = o.count * es * (o.kind == O_REDSCAT ? W : 1), rb = o.count * es * (o.kind == O_ALLGATHER ? W : 1);
        uintptr_t s = (uintptr_t)o.send, r = (uintptr_t)o.recv;
        bool overl = s < r + rb && r < s + sb;
        bool documented = s == r || (o.kind == O_ALLGATHER && s == r + (size_t)c->rank * o.count * es) ||
                          (o.kind == O_REDSCAT && r == s + (size_t)c->rank * o.count * es);
        if (overl && (!documented || (s == r && (o.kind == O_ALLGATHER || o.kind == O_REDSCAT))))
            return fail(ncclInvalidArgument, "in-place operation", "NCCL User Guide, In-place Operations",
                        "%s with send and receive buffers that overlap but not in the in-place form", op_name(o.kind));
    }
    if (o.kind != O_SEND && o.kind != O_RECV) o.call = c->ncalls++;
    if (t_depth > 0) {
        t_ops.push_back(o);
        return ncclSuccess;
    }
    return launch(std::vector<Op>{o});
}

Stream *nccl_stream(cudaStream_t s, ncclComm *c)
{
    return stream_of(s, c ? c->device : current_device());
}

uint64_t host_hash()
{
    char h[256] = "";
    gethostname(h, sizeof h - 1);
    uint64_t x = 1469598103934665603ull;
    for (char *p = h; *p; p++) x = (x ^ (unsigned char)*p) * 1099511628211ull;
    return x;
}

struct Join {
    uint64_t serial, host;
    int32_t rank, nranks, world;
    char bus[16];
};

struct Answer {
    int32_t status; /* ncclResult_t */
    char why[256];
};

void atexit_check()
{
    if (t_depth > 0)
        violation("ncclGroupStart without ncclGroupEnd", kGroup, "the program ends inside a group: %zu operation(s) were "
                  "never launched", t_ops.size());
}

struct AtExit {
    AtExit() { atexit(atexit_check); }
} at_exit_;

}  // namespace

namespace sd {
/* a stream is synchronized while this thread has an NCCL group open */
void nccl_check_open_group(const char *api)
{
    if (t_depth > 0 && !t_ops.empty())
        violation("ncclGroupStart without ncclGroupEnd", kGroup,
                  "%s while a group is open with %zu operation(s) not yet launched: they run only at ncclGroupEnd "
                  "(never return between ncclGroupStart and ncclGroupEnd)",
                  api, t_ops.size());
}
}  // namespace sd

extern "C" {

ncclResult_t ncclGetVersion(int *version)
{
    if (!version) return ncclInvalidArgument;
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result)
{
    switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

const char *ncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return t_last_err;
}

/* ncclGetUniqueId: names the caller; the id must reach the other ranks (here the backend
 * broadcasts it over MPI) */
ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
    count("ncclGetUniqueId");
    if (!uniqueId) return ncclInvalidArgument;
    memset(uniqueId, 0, sizeof *uniqueId);
    Id id;
    memcpy(id.magic, "cpbSDid1", 8);
    id.creator = world_rank() < 0 ? 0 : world_rank();
    id.serial = g_serial++;
    memcpy(uniqueId->internal, &id, sizeof id);
    return ncclSuccess;
}

/* ncclCommInitRank: blocking; rank in [0, nranks); one rank per GPU */
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    count("ncclCommInitRank");
    if (!comm || nranks < 1 || rank < 0 || rank >= nranks)
        return fail(ncclInvalidArgument, "communicator arguments", kComm, "ncclCommInitRank(nranks %d, rank %d)", nranks, rank);
    Id id;
    memcpy(&id, commId.internal, sizeof id);
    if (memcmp(id.magic, "cpbSDid1", 8) != 0)
        return fail(ncclInvalidArgument, "unique id", kComm, "ncclCommInitRank with an id ncclGetUniqueId did not make");
    Device *d = current();
    if (!d) return ncclUnhandledCudaError;
    ncclComm *c = new ncclComm;
    c->nranks = nranks;
    c->rank = rank;
    c->device = current_device();
    if (nranks > 1) {
        int init = 0, provided = 0;
        MPI_Initialized(&init);
        if (!init) {
            delete c;
            return fail(ncclSystemError, "MPI", kComm, "the NCCL stand-in bootstraps over MPI: MPI is not initialized");
        }
        MPI_Query_thread(&provided);
        if (provided < MPI_THREAD_MULTIPLE) {
            delete c;
            return fail(ncclSystemError, "MPI_THREAD_MULTIPLE", kComm,
                        "collectives run on stream threads: initialize MPI with MPI_Init_thread(MPI_THREAD_MULTIPLE)");
        }
        int me = world_rank(), tag = (int)(id.serial % 512);
        Join j;
        memset(&j, 0, sizeof j);
        j.serial = id.serial;
        j.host = host_hash();
        j.rank = rank;
        j.nranks = nranks;
        j.world = me;
        cudaDeviceGetPCIBusId(j.bus, sizeof j.bus, c->device);
        std::vector<int> world((size_t)nranks, -1);
        Answer ans;
        memset(&ans, 0, sizeof ans);
        if (me == id.creator) {
            std::vector<Join> js{j};
            for (int i = 1; i < nranks; i++) {
                Join x;
                MPI_Recv(&x, (int)sizeof x, MPI_BYTE, MPI_ANY_SOURCE, kTagJoin + tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                js.push_back(x);
            }
            for (const Join &x : js) {
                if (x.serial != id.serial || x.nranks != nranks || x.rank < 0 || x.rank >= nranks || world[(size_t)x.rank] >= 0) {
                    ans.status = ncclInvalidArgument;
                    snprintf(ans.why, sizeof ans.why, "ranks disagree on the communicator (rank %d of %d from world rank %d)",
                             x.rank, x.nranks, x.world);
                    break;
                }
                world[(size_t)x.rank] = x.world;
            }
            for (size_t a = 0; a < js.size() && !ans.status; a++)
                for (size_t b = a + 1; b < js.size(); b++)
                    if (js[a].host == js[b].host && strcmp(js[a].bus, js[b].bus) == 0) {
                        ans.status = ncclInvalidUsage;
                        snprintf(ans.why, sizeof ans.why, "Duplicate GPU detected: rank %d and rank %d both on CUDA device %s",
                                 js[a].rank, js[b].rank, js[a].bus);
                        break;
                    }
            for (const Join &x : js)
                if (x.world != me) {
                    MPI_Send(&ans, (int)sizeof ans, MPI_BYTE, x.world, kTagList + tag, MPI_COMM_WORLD);
                    if (!ans.status) MPI_Send(world.data(), nranks, MPI_INT, x.world, kTagList + tag, MPI_COMM_WORLD);
                }
        } else {
            MPI_Send(&j, (int)sizeof j, MPI_BYTE, id.creator, kTagJoin + tag, MPI_COMM_WORLD);
            MPI_Recv(&ans, (int)sizeof ans, MPI_BYTE, id.creator, kTagList + tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (!ans.status)
                MPI_Recv(world.data(), nranks, MPI_INT, id.creator, kTagList + tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        if (ans.status) {
            delete c;
            return fail((ncclResult_t)ans.status, "communicator creation", kComm, "%s", ans.why);
        }
        MPI_Group wg, g;
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        MPI_Group_incl(wg, nranks, world.data(), &g);
        MPI_Comm_create_group(MPI_COMM_WORLD, g, kTagCreate + tag, &c->mpi);
        MPI_Group_free(&g);
        MPI_Group_free(&wg);
    }
    add_internal(c->device, 64ll << 20);
    if (!runtime_connect()) {
        add_internal(c->device, 16ll << 20);
        c->coll_connected = true;
    }
    *comm = c;
    return ncclSuccess;
}

/* ncclCommDestroy: flushes the communicator's operations, then frees it */
ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    count("ncclCommDestroy");
    if (!comm || !comm->live) return fail(ncclInvalidArgument, "communicator", kComm, "ncclCommDestroy of a dead communicator");
    nccl_check_open_group("ncclCommDestroy");
    if (!comm->aborted)
        for (auto &kv : comm->last) wait_done(kv.first, kv.second);
    comm->live = false;
    int fin = 0;
    MPI_Finalized(&fin);
    if (comm->mpi != MPI_COMM_NULL && !fin && !comm->aborted) MPI_Comm_free(&comm->mpi);
    add_internal(comm->device, -(64ll << 20) - (comm->coll_connected ? 16ll << 20 : 0) -
                                   (int64_t)comm->peers_connected.size() * (4ll << 20));
    delete comm;
    return ncclSuccess;
}

/* ncclCommAbort: stops the communicator's operations, in flight ones included */
ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    count("ncclCommAbort");
    if (!comm) return ncclInvalidArgument;
    comm->aborted = true;
    if (comm->async_err == ncclSuccess) comm->async_err = ncclRemoteError;
    /* stream work may still hold it until it sees the abort: kept, never freed */
    static std::vector<ncclComm *> *aborted = new std::vector<ncclComm *>;
    std::lock_guard<std::recursive_mutex> lk(lock());
    aborted->push_back(comm);
    return ncclSuccess;
}

/* ncclCommGetAsyncError: the error an operation met after it was enqueued */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    count("ncclCommGetAsyncError");
    if (!comm || !asyncError) return ncclInvalidArgument;
    *asyncError = comm->async_err;
    return ncclSuccess;
}

ncclResult_t ncclGroupStart()
{
    count("ncclGroupStart");
    if (t_depth++ == 0) {
        t_ops.clear();
        t_group_err = ncclSuccess;
    }
    return ncclSuccess;
}

/* ncclGroupEnd: the outermost one launches the group's operations */
ncclResult_t ncclGroupEnd()
{
    count("ncclGroupEnd");
    if (t_depth <= 0) return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart", kGroup, "ncclGroupEnd");
    if (--t_depth > 0) return ncclSuccess;
    std::vector<Op> ops;
    ops.swap(t_ops);
    if (t_group_err != ncclSuccess) return t_group_err;
    return launch(std::move(ops));
}

/* CPB_STANDIN_FAIL=NAME: every call of NAME fails with ncclInvalidArgument (a test of the
 * caller's error path, not a broken rule) */
static bool injected(const char *name)
{
    static const char *f = getenv("CPB_STANDIN_FAIL");
    if (!f || strcmp(f, name) != 0) return false;
    snprintf(t_last_err, sizeof t_last_err, "%s failed: injected by CPB_STANDIN_FAIL", name);
    return true;
}

#define SD_OP(kind_, comm_, stream_, ...)                                                  \
    do {                                                                                   \
        sd::count(op_name(kind_));                                                           \
        if (injected(op_name(kind_))) {                                                    \
            if (t_depth > 0 && t_group_err == ncclSuccess) t_group_err = ncclInvalidArgument; \
            return ncclInvalidArgument;                                                    \
        }                                                                                  \
        Op o = {kind_, comm_, nccl_stream(stream_, comm_), __VA_ARGS__, 0};                \
        ncclResult_t r_ = add_op(o);                                                       \
        if (r_ != ncclSuccess && t_depth > 0 && t_group_err == ncclSuccess) t_group_err = r_; \
        return r_;                                                                         \
    } while (0)

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    SD_OP(O_SEND, comm, stream, sendbuff, nullptr, count, datatype, ncclSum, peer);
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    SD_OP(O_RECV, comm, stream, nullptr, recvbuff, count, datatype, ncclSum, peer);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream)
{
    SD_OP(O_BCAST, comm, stream, sendbuff, recvbuff, count, datatype, ncclSum, root);
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream)
{
    SD_OP(O_REDUCE, comm, stream, sendbuff, recvbuff, count, datatype, op, root);
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream)
{
    SD_OP(O_ALLREDUCE, comm, stream, sendbuff, recvbuff, count, datatype, op, 0);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream)
{
    SD_OP(O_ALLGATHER, comm, stream, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0);
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    SD_OP(O_REDSCAT, comm, stream, sendbuff, recvbuff, recvcount, datatype, op, 0);
}

}  // extern "C"
