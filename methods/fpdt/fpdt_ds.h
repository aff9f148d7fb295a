/* fpdt_ds.h — FPDT as DeepSpeed implements it (`--fpdt-impl deepspeed`, the default):
 * deepspeed/sequence/fpdt_layer.py of DeepSpeed 0.17.4 (the version the UPipe paper ran,
 * github.com/togethercomputer/Untied-Ulysses FPDT/README.md), class
 * _FPDTGPUOffloadingAttentionImpl_, with the output projection and the input-gradient
 * concatenation of FPDT_Attention and the dense layer around it.  The same chunk geometry
 * and token layout as the pipelined schedule (fpdt.h); what differs is what stays on the
 * device, where the schedule waits, and which stream carries which copy:
 *
 * - device-resident: the attention output of every chunk, in sequence layout, kept in a
 *   list and concatenated (`final_output`, torch.cat: two [s][H*d] at the end of the
 *   forward; the cat is the dense layer's saved input until the backward); the full
 *   grad_output [s][H*d] of the dense layer's backward (sliced chunk by chunk, the slices
 *   keep it alive); grad_layernorm_output, one zeroed [c][D] per chunk from the start of
 *   the backward, concatenated at the end (torch.cat, here into the layer's dx);
 * - a synchronisation after every attention block (compute_stream.wait_stream(
 *   offload_stream); compute_stream.synchronize()), a barrier after each chunk's
 *   all-to-alls (dist.barrier(): an all-reduce and a wait for it), a device-wide
 *   synchronize at the start of the backward;
 * - one offload stream carrying the K,V loads, the q/K/V offloads and, in the backward,
 *   each block's fp32 dq write-back and five loads for the next block (dq, q, o, lse, dO);
 *   a second ("general") stream for the layer input's chunks and o, lse;
 * - pinned host memory allocated per chunk (SequenceChunk: torch.empty(pin_memory=True)),
 *   and the fp32 dq accumulators of chunks 1..u-1 zero-filled by the host
 *   (torch.zeros(pin_memory=True)); chunk 0's dq starts on the device and a copy of its
 *   zeros goes to the host;
 * - per block the attention writes dq, dk, dv in the storage dtype (dq_this, dk_this,
 *   dv_this, freshly zeroed) and they are added into the fp32 accumulators after the sync;
 *   o is loaded and the attention backward derives delta from it.
 * Where DeepSpeed relies on Python freeing tensors behind a caching allocator, this
 * schedule frees them at the same point, in stream order. */
#ifndef CPB_FPDT_DS_H
#define CPB_FPDT_DS_H

#include "fpdt.h"

/* chunks the schedule keeps tables for (the state is one fixed block the harness gives
 * forward and frees after backward, also after a failure) */
#define FPDT_DS_MAX_CHUNKS CPB_MAX_SEGS
#define FPDT_DS_TABLE(name) cpb_buf *name[FPDT_DS_MAX_CHUNKS]

typedef struct fpdt_ds {
    cpb_ctx *ctx;
    cpb_layer *L;
    fpdt_dims m;
    int comp, off, gen;        /* compute, offload_stream, general_offload_stream */
    cpb_buf *barrier;          /* the all-reduce of dist.barrier() */
    /* pinned host, one buffer per chunk: layer input [c][D]; q, K, V, o, lse; backward's
     * dO and fp32 dq */
    FPDT_DS_TABLE(xh); FPDT_DS_TABLE(qh); FPDT_DS_TABLE(kh); FPDT_DS_TABLE(vh);
    FPDT_DS_TABLE(oh); FPDT_DS_TABLE(lh); FPDT_DS_TABLE(doh); FPDT_DS_TABLE(dqh);
    /* device copies of the chunks, by chunk index (NULL when not on the device) */
    FPDT_DS_TABLE(q); FPDT_DS_TABLE(k); FPDT_DS_TABLE(v); FPDT_DS_TABLE(o);
    FPDT_DS_TABLE(lse); FPDT_DS_TABLE(d_o); FPDT_DS_TABLE(dq); FPDT_DS_TABLE(x);
    cpb_buf *cat;              /* forward's torch.cat of the outputs [s][H*d] (saved for dWo) */
} fpdt_ds;

/* D (zeroed by the harness: every table entry NULL) set up for layer L */
int fpdt_ds_init(cpb_ctx *ctx, cpb_layer *L, fpdt_ds *D);
/* free every buffer the state still holds, in stream order */
int fpdt_ds_release(fpdt_ds *D);

/* compute_stream.wait_stream(offload_stream); compute_stream.synchronize(): compute waits
 * for the offload stream, and nothing issued afterwards on any stream starts before the
 * compute stream has drained (the host blocked until then) */
int fpdt_ds_sync_compute(fpdt_ds *D);
/* the host waits for `stream` (stream.synchronize()): later work on every stream waits */
int fpdt_ds_host_waits(fpdt_ds *D, int stream);
/* dist.barrier() issued on `stream`: a one-element all-reduce, then a host wait for it */
int fpdt_ds_barrier(fpdt_ds *D, int stream);
/* a device copy of host chunk `h` (load_to_gpu: a new buffer, filled on `stream`) */
int fpdt_ds_load(fpdt_ds *D, int stream, cpb_buf *h, cpb_tag tag, const char *name, cpb_buf **dev);
/* a pinned host copy of device buffer `dev` (SequenceChunk: a new pinned buffer, filled on
 * `stream`) */
int fpdt_ds_store(fpdt_ds *D, int stream, cpb_buf *dev, cpb_tag tag, const char *name, cpb_buf **h);

#endif
