/* model_scope_loss_seq.c — the loss phase of a training step as a sequence of the caching
 * allocator's events, replayed (alloc_reserve.h) for the bytes the allocator holds beyond
 * what the tensors request: the reserve that torch.cuda.max_memory_reserved and nvidia-smi
 * show and the model's allocated accounting does not.  It never counts toward whether a
 * point fits: the allocator releases cached whole segments when a cudaMalloc fails
 * (alloc_reserve.h rule 7), so a run does not go out of memory because of it; the replay is
 * given the room the rest of the moment leaves, so the reserve it reports is what that
 * room allows.
 *
 * Each sequence is the framework's loss code, event by event; the pool starts empty (no
 * block cached by the earlier phases of the step can serve these requests: the logits'
 * [s, V] blocks are the largest of the step, V / F ~ 9 times a [s, F] MLP buffer, and
 * those earlier segments are each their own request's size, merged only within a
 * segment) [EST].  All on the compute stream.
 *
 * - Non-fused loss, transformers (huggingface/transformers src/transformers/loss/
 *   loss_utils.py ForCausalLMLoss, 4.51.3; the same at 0114da07): LlamaForCausalLM.forward
 *   makes the bf16 logits [s, V] (L16, returned in the output), ForCausalLMLoss upcasts
 *   them (`logits = logits.float()`, L32), cross_entropy runs log_softmax (LS, saved for its
 *   backward) and nll_loss; L32 is freed when ForCausalLMLoss returns (the upcast's backward
 *   saves nothing), L16 when the output is dropped before the backward
 *   (ArcticTraining @2771b4b arctic_training/trainer/sft_trainer.py SFTTrainer.loss returns
 *   outputs.loss; the HF Trainer's compute_loss likewise).  Backward: nll_loss's gradient
 *   G1 [s, V] fp32, log_softmax's G2 fp32 (the peak: LS + G1 + G2, 12 bytes per logit, the
 *   model's own figure), G1 and LS freed, the cast back to bf16 G16, G2 freed.
 * - Non-fused loss, TorchTitan (pytorch/torchtitan @eaea6f6 train.py: loss_fn returns
 *   cross_entropy(pred.flatten(0, 1).float(), ...); the step runs `del pred` before
 *   loss.backward(); torchtitan/models/llama/model.py returns self.output(h), bf16 under
 *   FSDP2's param_dtype): the same events.
 *   In both, G1 reuses L32's cached block (best fit, the same size) and G2 finds only L16's
 *   block, 2 bytes per logit, too small: a new segment.  At the peak the allocator holds
 *   L16's block cached: 2 bytes per logit beyond the 12 allocated (and each segment's
 *   rounding to 2 MiB).
 * - ArcticTraining (the alst preset without its fused loss): SFTTrainer.loss at sequence
 *   parallel size 1 takes the model's loss (as transformers above); above 1 it runs
 *   DeepSpeed's TiledFusedLogitsLoss, not replayed.
 * - Liger's fused linear cross-entropy (linkedin/Liger-Kernel v0.6.1 = 7705dcc,
 *   src/liger_kernel/ops/fused_linear_cross_entropy.py fused_linear_cross_entropy_forward):
 *   chunks of chunk_size = next_power_of_2(ceil(BT / ceil(V / H))) tokens; per chunk the
 *   logits `_input_chunk @ weight.t()` in the input's dtype (bf16) [c, V], the kernel
 *   writes their gradient in place, `grad_logits_chunk = logits_chunk` drops the previous
 *   chunk's (so two chunks' logits are live as the next is made), and
 *   `grad_input[...] = grad_logits_chunk @ weight` makes a [c, D] product and copies it
 *   (freed); the addmm into grad_weight allocates nothing (same dtype).  Equal chunks reuse
 *   the blocks the previous ones freed; the reserve at the peak is the [c, D] product's
 *   cached block and the segments' rounding.
 * - Not replayed (0, "not modelled"): FPDT_LogitsLoss, Megatron's and Megatron-DeepSpeed's
 *   losses, and any other phase of the step. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "alloc_reserve.h"
#include "model_scope.h"

const char *cpb_loss_code_name(int code)
{
    switch (code) {
    case CPB_LOSS_CODE_HF: return "transformers ForCausalLMLoss (logits.float(), cross_entropy)";
    case CPB_LOSS_CODE_TORCHTITAN: return "TorchTitan loss_fn (pred.float(), cross_entropy) and del pred";
    case CPB_LOSS_CODE_ARCTIC: return "ArcticTraining SFTTrainer.loss (the model's ForCausalLMLoss at SP 1)";
    case CPB_LOSS_CODE_LIGER: return "Liger fused_linear_cross_entropy_forward (bf16 chunks)";
    default: return "not modelled";
    }
}

/* the non-fused loss: logits bf16 -> fp32 upcast -> log_softmax, and its backward */
static void seq_unfused(cpb_alloc_seq *q, int64_t logits)
{
    int l16 = cpb_alloc_seq_alloc(q, 2 * logits, 0);   /* the LM head's bf16 logits */
    int l32 = cpb_alloc_seq_alloc(q, 4 * logits, 0);   /* .float() */
    int ls = cpb_alloc_seq_alloc(q, 4 * logits, 0);    /* log_softmax, saved for its backward */
    cpb_alloc_seq_free(q, l32);                        /* the loss function returns */
    cpb_alloc_seq_free(q, l16);                        /* the output dropped / del pred */
    int g1 = cpb_alloc_seq_alloc(q, 4 * logits, 0);    /* nll_loss backward */
    int g2 = cpb_alloc_seq_alloc(q, 4 * logits, 0);    /* log_softmax backward: the peak */
    cpb_alloc_seq_free(q, g1);
    cpb_alloc_seq_free(q, ls);
    int g16 = cpb_alloc_seq_alloc(q, 2 * logits, 0);   /* the cast back to bf16 */
    cpb_alloc_seq_free(q, g2);
    cpb_alloc_seq_free(q, g16);                        /* consumed by the LM head's backward */
}

/* Liger's chunk loop over BT tokens (V vocabulary, H hidden, bf16) */
static void seq_liger(cpb_alloc_seq *q, int64_t BT, int64_t V, int64_t H)
{
    int64_t inc = (V + H - 1) / H, c0 = (BT + inc - 1) / inc, chunk = 1;
    while (chunk < c0) chunk <<= 1; /* triton.next_power_of_2 */
    int prev = -1;
    for (int64_t start = 0; start < BT; start += chunk) {
        int64_t c = BT - start < chunk ? BT - start : chunk;
        int lg = cpb_alloc_seq_alloc(q, 2 * c * V, 0); /* logits_chunk = _input_chunk @ weight.t() */
        if (prev >= 0) cpb_alloc_seq_free(q, prev);    /* grad_logits_chunk = logits_chunk */
        int gi = cpb_alloc_seq_alloc(q, 2 * c * H, 0); /* grad_logits_chunk @ weight */
        cpb_alloc_seq_free(q, gi);                     /* copied into grad_input's slice */
        prev = lg;
    }
    if (prev >= 0) cpb_alloc_seq_free(q, prev);
}

void cpb_loss_reserve_of(const cpb_setup *su, int cp, double tok, double V, double D, int64_t room,
                         cpb_loss_reserve *out)
{
    memset(out, 0, sizeof *out);
    const cpb_framework *f = su->fw;
    int code = su->fused_loss ? f->fused_loss_code : f->unfused_loss_code;
    if (code == CPB_LOSS_CODE_ARCTIC && cp > 1) code = CPB_LOSS_CODE_NONE; /* TiledFusedLogitsLoss */
    out->code = code;
    if (code == CPB_LOSS_CODE_NONE) return;
    cpb_alloc_seq q = {0};
    const int64_t logits = (int64_t)(tok * V);
    if (code == CPB_LOSS_CODE_LIGER) seq_liger(&q, (int64_t)tok, (int64_t)V, (int64_t)D);
    else seq_unfused(&q, logits);
    if (q.err || room <= 0) {
        /* no room for the loss's own requests (the point does not fit anyway), or no host
         * memory for the sequence: no reserve */
        out->oom = 1;
        cpb_alloc_seq_release(&q);
        return;
    }
    cpb_alloc_replay r;
    char err[256];
    int rc = cpb_alloc_replay_run(q.ev, q.n, room, &r, err, sizeof err);
    cpb_alloc_seq_release(&q);
    out->requested_peak = r.peak_requested;
    out->releases = r.releases;
    if (rc != CPB_OK) {
        out->oom = 1;
        return;
    }
    /* what max_memory_reserved adds over the phase: its largest reservation less the
     * tensors' requested peak; and at that peak */
    out->reserve = r.max_reserved - r.peak_requested;
    out->reserve_at_peak = r.reserved_at_peak - r.peak_requested;
    if (out->reserve < 0) out->reserve = 0;
    if (out->reserve_at_peak < 0) out->reserve_at_peak = 0;
}
