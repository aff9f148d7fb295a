/* alloc_reserve.h — a model of PyTorch's CUDA caching allocator (the native one, not
 * expandable segments) that replays a sequence of tensor allocations and frees and says
 * what the allocator holds: the bytes requested, the blocks handed out, and the segments it
 * reserved from the device (what torch.cuda.max_memory_reserved reads).  One job: the
 * allocator's rules, for any sequence; the model scope feeds it the phases it models as a
 * sequence (model_scope_loss_seq.c).
 *
 * The rules, read in pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp at commit
 * 001074d25084fdb87a799823e395a50f5ec044d3 (DeviceCachingAllocator::malloc, free,
 * get_free_block, should_split, get_allocation_size, round_size, free_block,
 * try_merge_blocks, release_cached_blocks; the version the code index holds, not checked
 * release by release against 2.4-2.6, whose constants and rules these are as far as known), with
 * the default configuration (PYTORCH_CUDA_ALLOC_CONF unset: max_split_size unlimited,
 * roundup_power2_divisions 0, no garbage_collection_threshold, expandable_segments off):
 *
 *  1. round_size: a request is rounded up to a multiple of 512 bytes (kMinBlockSize), at
 *     least 512.
 *  2. get_pool: a rounded size <= 1 MiB (kSmallSize) comes from the small pool, else from
 *     the large pool; pools are per stream (a block freed on one stream serves only
 *     requests on that stream: the blocks are ordered by (stream, size, address)).
 *  3. get_free_block: best fit: the smallest cached free block of the same pool and
 *     stream whose size is >= the rounded size (lowest address among equal sizes).
 *  4. alloc_block, when none fits: a new segment (cudaMalloc) of get_allocation_size: 2 MiB
 *     (kSmallBuffer) for the small pool, 20 MiB (kLargeBuffer) for requests under 10 MiB
 *     (kMinLargeAlloc), else the size rounded up to 2 MiB (kRoundLarge).
 *  5. should_split: the block found or made is split when the remainder is >= 512 bytes
 *     (small pool) or > 1 MiB (large pool); the remainder stays a cached free block of the
 *     same segment.  Unsplit, the whole block is handed out (allocated_bytes counts it).
 *  6. free_block: a freed block merges with its free neighbours in the same segment and
 *     returns to its pool, cached: the segment stays reserved.
 *  7. When cudaMalloc fails (here: the new segment would take the reserved bytes past the
 *     capacity given), release_cached_blocks frees every cached block that is a whole
 *     segment (unsplit: no neighbours), in every pool and stream, and the cudaMalloc is
 *     retried once; if it fails again the allocator raises out of memory.
 *     (release_available_cached_blocks runs first only with a max_split_size set: not
 *     the default.)
 *
 * Not modelled: cross-stream uses (record_stream: a block freed while another stream uses
 * it returns to the pool only after that stream's event), CUDA-graph private pools,
 * expandable segments, a set max_split_size, and cudaMalloc's real addresses (segments are
 * given increasing addresses in the order they are made; only the tie between equal-size
 * free blocks depends on them). */
#ifndef CPB_ALLOC_RESERVE_H
#define CPB_ALLOC_RESERVE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* the allocator's constants (CUDACachingAllocator.cpp, names as there) */
#define CPB_ALLOC_MIN_BLOCK ((int64_t)512)          /* kMinBlockSize */
#define CPB_ALLOC_SMALL_SIZE ((int64_t)1 << 20)     /* kSmallSize: the largest small request */
#define CPB_ALLOC_SMALL_BUFFER ((int64_t)2 << 20)   /* kSmallBuffer: a small-pool segment */
#define CPB_ALLOC_LARGE_BUFFER ((int64_t)20 << 20)  /* kLargeBuffer */
#define CPB_ALLOC_MIN_LARGE_ALLOC ((int64_t)10 << 20) /* kMinLargeAlloc */
#define CPB_ALLOC_ROUND_LARGE ((int64_t)2 << 20)    /* kRoundLarge */

enum { CPB_ALLOC_EV_ALLOC = 0, CPB_ALLOC_EV_FREE, CPB_ALLOC_EV_EMPTY_CACHE };

/* One event: an allocation of `bytes` on `stream` that names tensor `id` (a new id, 0 <=
 * id < the number of events), a free of tensor `id`, or torch.cuda.empty_cache() (every
 * cached whole segment released, as rule 7 without a failure). */
typedef struct cpb_alloc_event {
    int op;
    int id;
    int64_t bytes;
    int stream;
} cpb_alloc_event;

/* What the replay saw.  "requested": the bytes the tensors asked for (the model's
 * accounting); "allocated": the blocks handed out (torch.cuda.memory_allocated: rounded,
 * unsplit remainders included); "reserved": the segments held (memory_reserved). */
typedef struct cpb_alloc_replay {
    int64_t peak_requested;     /* the largest requested bytes live at once ... */
    int64_t allocated_at_peak;  /* ... and the allocated and reserved bytes at that moment */
    int64_t reserved_at_peak;   /*     (the first moment the peak is reached) */
    int64_t max_allocated;      /* max_memory_allocated over the sequence */
    int64_t max_reserved;       /* max_memory_reserved over the sequence */
    int64_t reserved_end;       /* reserved after the last event */
    int segments;               /* segments held after the last event */
    int segments_made;          /* cudaMalloc calls that succeeded */
    int releases;               /* release_cached_blocks calls after a failed cudaMalloc */
    int failed_event;           /* the event at which the allocator raises out of memory; -1 none */
} cpb_alloc_replay;

/* Replay ev[0..n) from an empty allocator whose segments may reserve at most `capacity`
 * bytes (<= 0: no limit).  CPB_OK with *out filled; CPB_ERR_OOM with *out filled up to the
 * event that failed (out->failed_event) when a request cannot be served even after the
 * cached segments are released; CPB_ERR_INVALID for a malformed sequence (an id out of
 * range, allocated twice, freed unallocated, a negative size), naming the event;
 * CPB_ERR_NOMEM_HOST when the replay's own memory cannot be had. */
int cpb_alloc_replay_run(const cpb_alloc_event *ev, int n, int64_t capacity, cpb_alloc_replay *out, char *err,
                         size_t err_len);

/* the allocator's rules 1 and 4 on one request (exposed for the tests and the docs) */
int64_t cpb_alloc_round_size(int64_t bytes);
int64_t cpb_alloc_segment_size(int64_t rounded);

/* A sequence under construction: push events, then replay seq.ev[0..seq.n).  Tensor ids
 * are handed out in order.  A failed push (host memory) sets seq.err and later pushes do
 * nothing; check it before replaying. */
typedef struct cpb_alloc_seq {
    cpb_alloc_event *ev;
    int n, cap, next_id, err;
} cpb_alloc_seq;
/* an allocation of `bytes` on `stream`: its tensor id (-1 after a failed push) */
int cpb_alloc_seq_alloc(cpb_alloc_seq *s, int64_t bytes, int stream);
void cpb_alloc_seq_free(cpb_alloc_seq *s, int id);
void cpb_alloc_seq_empty_cache(cpb_alloc_seq *s);
void cpb_alloc_seq_release(cpb_alloc_seq *s);

#ifdef __cplusplus
}
#endif
#endif
