/* serving/serve.h -- a serving engine on a TPU slice: requests arrive (a closed
 * loop at a concurrency, or Poisson arrivals at a rate), an FCFS scheduler
 * forms each step's batch by continuous batching (the running sequences'
 * decodes and prefill chunks within a token budget, then new requests while
 * sequences, budget and KV pages allow; chunked prefill), preempts the
 * latest-admitted sequence when the KV cache is full and recomputes it later
 * (vLLM's recompute preemption), and prices each step with a callback
 * (serving/serve_price.c: the model's forward over the batch, simulated).
 * The loop is plain C: a step's time comes from the callback, nothing else is
 * simulated. Uses base/ and config/cfg_serve.h. */
#ifndef TPUSIM_SERVING_SERVE_H
#define TPUSIM_SERVING_SERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "config/cfg_serve.h"

/* One step's batch: sequence i adds q[i] tokens over kv[i] cached ones
 * (kv[i] counts the new tokens too, as ragged paged attention's kv_lens). */
struct serve_batch {
    int n;
    int64_t *q, *kv; /* [n] */
    int64_t tokens;  /* the sum of q */
};

/* A step's device time in seconds, or < 0 on failure (the callback said why). */
typedef double (*serve_price_fn)(void *ctx, const struct serve_batch *b);

struct serve_req {
    double arrival_s, first_s, finish_s; /* first token, last token; -1 until then */
    double last_tok_s;
    double sched_s;        /* first scheduled (left the waiting queue); -1 until then */
    int64_t preempt_open;  /* the entry of serve_result.preempt it waits in, or -1 */
    int64_t in, out;       /* prompt and output tokens */
    int64_t computed;      /* tokens in the KV cache */
    int64_t generated;     /* output tokens so far */
    int64_t pages;         /* KV pages held */
    int preemptions;
};

/* One engine step. */
struct serve_step {
    double start_s, device_s; /* it ends at start + overhead + device */
    int32_t seqs, decodes;    /* sequences, of which decodes (one new token each) */
    int64_t tokens;           /* new tokens (the sum of q) */
    int32_t running, waiting; /* once the batch is formed: sequences running and waiting */
    int64_t kv_pages_used;    /* ... and the KV pages they hold */
};

/* A preemption: request 'req' gave its pages back at 't0_s' (a step's start)
 * and was scheduled again at 't1_s'. */
struct serve_preempt {
    int64_t req;
    double t0_s, t1_s;
};

#define SERVE_ITL_BINS 2048 /* log-spaced from 1 us, 2^(1/64) apart */

struct serve_result {
    struct serve_req *req; /* [count], owned */
    int64_t count, completed;
    double duration_s;     /* first arrival to last token */
    int64_t steps, preemptions;
    struct serve_step *step; /* [steps], owned */
    struct serve_preempt *preempt; /* [preemptions], owned, in time order */
    double batch_seqs_sum, batch_tokens_sum; /* over steps */
    int64_t kv_pages, kv_peak_pages;
    double device_s;       /* steps' device time; the rest is overhead and idle */
    int64_t max_waiting;
    bool overloaded;
    /* inter-token latencies: exact mean, binned for percentiles */
    double itl_sum;
    int64_t itl_n;
    int64_t itl_bins[SERVE_ITL_BINS];
};

/* Runs the engine 'c' with prices from 'price'. Returns 0, 1 when a step
 * could not be priced or scheduled, 130 when interrupted; '*r' is filled
 * (release with serve_result_fini) either way. */
int serve_simulate(const struct serve_cfg *c, serve_price_fn price, void *ctx,
                   struct serve_result *r);
void serve_result_fini(struct serve_result *r);

/* Summary statistics of 'n' values (sorted in place). */
struct serve_dist {
    double mean, p50, p90, p99;
    int64_t n;
};
void serve_dist_of(double *v, int64_t n, struct serve_dist *d);
/* The ITL distribution from the bins (percentiles within 1.1 %). */
void serve_itl_dist(const struct serve_result *r, struct serve_dist *d);

#endif
