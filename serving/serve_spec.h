/* serving/serve_spec.h -- speculative decoding with a draft model (vLLM's
 * --speculative-config {model, num_speculative_tokens}): each decode of a
 * step carries up to num_speculative_tokens draft tokens that the target
 * model verifies in the same forward pass (a chunk of 1 + k queries over the
 * sequence's cache); each draft token is accepted with the probability
 * acceptance_rate until the first rejection, and the step emits the accepted
 * ones and the target's own token (Leviathan et al., "Fast Inference from
 * Transformers via Speculative Decoding", ICML 2023, arxiv.org/abs/2211.17192:
 * (1 - a^(k+1)) / (1 - a) tokens per step on average). The draft proposes its
 * k tokens first, one forward pass each, on the same chips: pass 1 also runs
 * the step's prefill chunks and plain decodes (the draft keeps its own KV
 * cache of every sequence), passes 2..k the drafting sequences alone
 * (docs/reference.md, "Speculative decoding"). Uses serving/serve.h. */
#ifndef TPUSIM_SERVING_SERVE_SPEC_H
#define TPUSIM_SERVING_SERVE_SPEC_H

#include "serving/serve.h"

/* A step's price with its draft passes: the target's forward over the batch
 * plus the draft's passes, each priced by 'draft'. */
struct serve_spec_pricer {
    serve_price_fn target_fn, draft_fn;
    void *target, *draft;
    int64_t max_seqs;        /* the batches' capacity: engine.max_num_seqs */
    struct serve_batch pass; /* scratch: one draft pass */
    double draft_s;          /* the draft passes' device time, summed */
    int64_t draft_passes;
};
void serve_spec_pricer_init(struct serve_spec_pricer *sp, serve_price_fn target_fn, void *target,
                            serve_price_fn draft_fn, void *draft, int64_t max_seqs);
void serve_spec_pricer_fini(struct serve_spec_pricer *sp);
/* A serve_price_fn: 'ctx' is a struct serve_spec_pricer. */
double serve_spec_price(void *ctx, const struct serve_batch *b);

#endif
