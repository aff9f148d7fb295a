/* race.h — stream-race check (runtime-internal).
 *
 * Vector clocks: every stream keeps, for every stream, how many of that stream's ops are
 * known to be ordered before its next op (program order on the same stream, events across
 * streams, cpb_sync for all).  Each access to a buffer range is recorded with its stream
 * and tick; a conflicting access (overlapping, at least one write) from another stream
 * whose clock does not cover the recorded tick is a race. */
#ifndef CPB_RACE_H
#define CPB_RACE_H

#include "cpb_backend.h"

int cpb_race_init(cpb_ctx *ctx);
void cpb_race_destroy(cpb_ctx *ctx);
void cpb_race_reset(cpb_ctx *ctx);          /* forget all accesses and events */
void cpb_race_stream_added(cpb_ctx *ctx, int stream);
/* start an op on stream: advances its tick */
void cpb_race_op_begin(cpb_ctx *ctx, int stream);
/* record an access of the current op; returns CPB_ERR_RACE (with message) on a race */
int cpb_race_access(cpb_ctx *ctx, int stream, const cpb_view *v, int write);
int cpb_race_event_record(cpb_ctx *ctx, int stream, int ev);
int cpb_race_stream_wait(cpb_ctx *ctx, int stream, int ev);
void cpb_race_sync(cpb_ctx *ctx);
/* drop the buffer's records (kept in the context's pool for the next buffer) */
void cpb_race_buf_free(cpb_ctx *ctx, cpb_buf *b);

#endif
