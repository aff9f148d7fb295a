/* sim_world.h — what the simulator backend records: one trace per simulated rank, and the
 * state the contexts of one simulated world share (group table, trace per rank).
 *
 * The backend does no arithmetic.  Each op, collective, event record, stream wait and sync
 * a method issues becomes one trace entry (ops per rank, not per element: a Llama3-8B trial
 * at 5M tokens is a few thousand entries per rank).  After every rank has run, the timing
 * model (timeline.h) replays the traces of all ranks together, or of one rank per class of
 * ranks that are alike by symmetry (sim_symmetry.h). */
#ifndef CPB_SIM_WORLD_H
#define CPB_SIM_WORLD_H

#include "cpb_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sim_entry_type {
    SIM_OP = 0,  /* compute op or copy */
    SIM_COLL,    /* collective */
    SIM_RECORD,  /* event record on a stream */
    SIM_WAIT,    /* stream waits for an event */
    SIM_SYNC,    /* host waits for every stream */
} sim_entry_type;

/* Which part of the trial an entry belongs to, from the range it was issued in (trial.h:
 * forward runs inside "trial/fwd", backward inside "trial/bwd").  Set-up entries take no
 * modelled time: a measured step starts from idle, synchronized ranks. */
typedef enum sim_phase { SIM_PHASE_SETUP = 0, SIM_PHASE_FWD, SIM_PHASE_BWD } sim_phase;

/* host<->device copies by direction; SIM_HOST_FILL: the host filling pinned memory (no
 * PCIe traffic: timed at the host's memset bandwidth) */
typedef enum sim_pcie { SIM_PCIE_NONE = 0, SIM_PCIE_H2D, SIM_PCIE_D2H, SIM_HOST_FILL } sim_pcie;

/* 72 bytes: an op's work and a collective's peers never meet in one entry, so they share
 * their room (a large trial keeps a million entries per recorded rank, and every replay
 * pass reads them all: the replay is bound by memory traffic).  Only an entry's own
 * type's fields are meaningful; sim_trace_push sets each type's defaults. */
typedef struct sim_entry {
    uint8_t type;    /* sim_entry_type */
    uint8_t phase;   /* sim_phase */
    uint8_t kind;    /* cpb_op_kind or cpb_coll_kind */
    uint8_t pcie;    /* sim_pcie */
    uint8_t impl;    /* attention: cpb_attn_impl (which curve times it) */
    int16_t stream;
    int32_t ev;      /* SIM_RECORD / SIM_WAIT: event id */
    int32_t name;    /* SIM_COLL: index into the world's name table; -1 otherwise */
    double bytes;    /* SIM_OP: bytes read + written; SIM_COLL: bytes this rank sends */
    union {
        struct {     /* SIM_OP */
            double flops; /* model FLOPs */
            /* what sets the efficiency of one call (timeline.c):
             * gemm: m, n, k, batch; attention: sq (query rows), hq (heads), pairs; unused: 0 */
            int64_t w0, w1, w2, w3;
            double share; /* with pcie: PCIe sharing factor of the timing model's pass */
        };
        struct {     /* SIM_COLL */
            int32_t group;          /* index into the world's group table */
            int32_t dst, src, root; /* peers / root as world ranks (-1: none) */
            int64_t seq;            /* the group's sequence number */
            /* a collective replicated by cpb_repeat (sim_repeat.c): its name is the
             * template's (name) with the iteration's range renumbered to rn_iter by rename
             * rule rn_rule of the world (-1: the name as it is); cpb_sim_entry_name */
            int32_t rn_rule, rn_iter;
        };
    };
} sim_entry;

/* A run of iterations cpb_repeat replicated (sim_repeat.c): `copies` copies of the
 * template, the stored entries [a, a + len), that belong before stored entry `at`.  Copy c
 * is the template with its events renumbered (its own: from ev_base + c * nrec; a wait on
 * the template's previous iteration's, from ev_prev: the copy before's), its collectives'
 * sequence numbers moved on by c + 1 times their group's count per iteration, and its
 * collectives named after iteration tmpl + 1 + c (rename rule `rule` of the world). */
typedef struct sim_rep {
    int64_t at, a, len;
    int copies;
    int ev_prev, ev_own, nrec, ev_base;
    int tmpl, rule;
    int ngroups;
    int32_t group[16];
    int64_t per_group[16];
} sim_rep;

/* A rank's trace: the entries stored (e[0 .. n-1]) and the runs replicated but not stored
 * (reps, in trace order; `extra` entries in all), so that a rank whose trace is only
 * compared or bounded never holds the copies.  sim_trace_expand stores them (the replay
 * needs every entry in place); sim_iter reads a trace either way. */
typedef struct sim_trace {
    int rank;
    sim_entry *e;
    int64_t n, cap;
    int nevents;                           /* event ids used (0 .. nevents-1) */
    int nstreams;
    char stream_names[CPB_MAX_STREAMS][24];
    sim_rep *reps;
    int nreps, repcap;
    int64_t extra;
} sim_trace;

/* entries of t, the replicated included */
static inline int64_t sim_trace_len(const sim_trace *t)
{
    return t->n + t->extra;
}
/* store t's replicated runs in place (t->reps empty after); CPB_OK or CPB_ERR_NOMEM_HOST */
int sim_trace_expand(sim_trace *t);

/* reading a trace in order, its replicated runs included, without storing them */
typedef struct sim_iter {
    const sim_trace *t;
    int64_t s;     /* the next stored entry */
    int k;         /* the next run (t->reps[k]) */
    int c;         /* inside run k: copy c (-1: not inside) ... */
    int64_t off;   /* ... at this entry of it */
    int64_t v;     /* the index, replicated entries counted, of the entry returned last */
    sim_entry tmp; /* a replicated entry */
} sim_iter;
void sim_iter_start(sim_iter *it, const sim_trace *t);
/* the next entry, NULL at the end (valid until the next call) */
const sim_entry *sim_iter_next(sim_iter *it);

/* A communicator of the simulated world, identified by its member list (world ranks in
 * group order).  Groups are created per rank with rank-local ids, so the world table
 * matches them by members, not by id. */
typedef struct sim_group {
    int size;
    int *ranks;
    int occurrence;          /* how many groups with these members came before it */
} sim_group;

typedef struct cpb_sim_world {
    int world;
    sim_trace *traces;       /* [world] */
    sim_group *groups;
    int ngroups, gcap;
    /* interned op names (range path + op), shared by all ranks; each a pointer into
     * name_chunks (sim_record.c: names laid out in the order of first sight, so the
     * other ranks, which look them up in that order, read them as a stream) */
    char **names;
    int nnames, namecap;
    int *name_hash;          /* open addressing table of name indices (-1 empty) */
    int name_hash_cap;
    struct sim_name_chunk *name_chunks; /* the newest first */
    char err[512];           /* first error of the shared state (out of memory) */
    /* Ranks r and r + period are alike by symmetry (sim_symmetry.h): the timing model
     * replays only ranks 0 .. period-1, and only their traces need be recorded.  The world
     * size (the default) replays every rank. */
    int period;
    /* --timeout during the replay: cpb_sim_timeline stops (CPB_ERR_UNSUPPORTED, timed_out
     * set) once CLOCK_MONOTONIC passes this many seconds (0: no bound).  With alike
     * iterations replicated (cpb_repeat) the replay, not the recording, can be a point's
     * longest part. */
    double deadline;
    int timed_out;
    /* the entries of a trace dropped after its comparison (sim_symmetry.h), kept for the
     * next rank recorded: the sampled ranks' traces are as long as the representatives', and
     * fresh memory for each costs its page faults again (a fifth of a large point's time) */
    sim_entry *spare;
    int64_t spare_cap;
    /* how replicated collectives are named (sim_repeat.c): the range "<label><tmpl>" after
     * range_len characters of the template's name becomes "<label><i>".  Built only when a
     * name is asked for (an error message): interning every copy's name was a tenth of a
     * plan's time. */
    struct sim_rename { char label[32]; int range_len, tmpl; } *rn;
    int nrn, rncap;
} cpb_sim_world;

/* create / destroy the shared state of a world of `world` ranks */
int cpb_sim_world_create(int world, cpb_sim_world **out);
void cpb_sim_world_destroy(cpb_sim_world *w);
/* forget every rank's trace (groups and names stay) */
void cpb_sim_world_clear_traces(cpb_sim_world *w);
const char *cpb_sim_world_name(const cpb_sim_world *w, int idx);
/* the name of collective entry e (in buf when it is built: a replicated one's) */
const char *cpb_sim_entry_name(const cpb_sim_world *w, const sim_entry *e, char *buf, size_t n);
/* the world of a sim context (its own private one when opts.backend_shared was NULL) */
cpb_sim_world *cpb_sim_world_of(const cpb_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
