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
        };
    };
} sim_entry;

typedef struct sim_trace {
    int rank;
    sim_entry *e;
    int64_t n, cap;
    int nevents;                           /* event ids used (0 .. nevents-1) */
    int nstreams;
    char stream_names[CPB_MAX_STREAMS][24];
} sim_trace;

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
    /* the entries of a trace dropped after its comparison (sim_symmetry.h), kept for the
     * next rank recorded: the sampled ranks' traces are as long as the representatives', and
     * fresh memory for each costs its page faults again (a fifth of a large point's time) */
    sim_entry *spare;
    int64_t spare_cap;
} cpb_sim_world;

/* create / destroy the shared state of a world of `world` ranks */
int cpb_sim_world_create(int world, cpb_sim_world **out);
void cpb_sim_world_destroy(cpb_sim_world *w);
/* forget every rank's trace (groups and names stay) */
void cpb_sim_world_clear_traces(cpb_sim_world *w);
const char *cpb_sim_world_name(const cpb_sim_world *w, int idx);
/* the world of a sim context (its own private one when opts.backend_shared was NULL) */
cpb_sim_world *cpb_sim_world_of(const cpb_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
