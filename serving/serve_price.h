/* serving/serve_price.h -- an engine step's time, simulated: the model's
 * forward over the step's batch (workload/model.h's serving step: the
 * matmuls over the batch's tokens padded as vLLM TPU pads them, ragged paged
 * attention over the sequences' real q and kv lengths, the tensor-parallel
 * all-reduces, the logits of one token per sequence) built from the serve:
 * scenario (config/cfg.h cfg_serve_step), its blocks searched once per shape
 * (study/autotune.h) and run by the engine in a forked child (SimGrid runs
 * once per process), the time piped back.
 * Memo: a step is its dense part (all but attention: per padded token and row
 * count) plus the attention kernel's share of each sequence in order (the
 * first alone, the next ones at what a further copy adds, keyed by the step's
 * padded tokens, the sequence's place, its q and kv pages; prefill chunks
 * bilinear between buckets), each part simulated once from a probe of one to
 * three sequences (attention probes: one layer). buckets_per_octave 0 prices
 * every step's own batch; verify_every N prices every Nth step both ways and
 * keeps the error (docs/reference.md, "The step memo").
 */
#ifndef TPUSIM_SERVING_SERVE_PRICE_H
#define TPUSIM_SERVING_SERVE_PRICE_H

#include "base/diag.h"
#include "config/cfg.h"
#include "serving/serve.h"

struct serve_pricer;

/* A pricer of the steps of 'base' (a scenario with a serve:; borrowed).
 * 'sg_argv' are SimGrid flags for the children. */
struct serve_pricer *serve_pricer_new(const struct cfg_scenario *base, int sg_argc,
                                      char **sg_argv, struct diag *d);
void serve_pricer_free(struct serve_pricer *p);
/* A serve_price_fn: 'ctx' is a struct serve_pricer. */
double serve_price(void *ctx, const struct serve_batch *b);

struct serve_price_stats {
    int64_t lookups, runs; /* steps priced; engine runs (children) */
    int64_t signatures;    /* memo entries */
    double wall_s;         /* in the runs and block searches */
    int64_t verified;      /* steps also priced exactly (step_memo.verify_every) */
    double error_sum, error_max; /* their relative errors */
};
void serve_pricer_stats(const struct serve_pricer *p, struct serve_price_stats *st);
/* The first failure's return code (1, 2 or 130), 0 if none. */
int serve_pricer_rc(const struct serve_pricer *p);

#endif
