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
    int64_t *draft;  /* [n] speculative decoding: of q[i], the draft tokens verified (q[i] - 1)
                      * or 0 (a prefill chunk, a plain decode) */
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
    int32_t replica;       /* the engine the router sent it to (serve.mesh data) */
    double kv_transfer_s;  /* disaggregated: its prefill's end to its KV on the decode engine */
};

/* One engine step. */
struct serve_step {
    double start_s, device_s; /* it ends at start + overhead + device */
    int32_t seqs, decodes;    /* sequences, of which decodes (one new token each) */
    int64_t tokens;           /* new tokens (the sum of q) */
    int32_t replica;          /* the engine that ran it */
    int32_t running, waiting; /* once the batch is formed: sequences running and waiting */
    int64_t kv_pages_used;    /* ... and the KV pages they hold */
};

/* A preemption: request 'req' gave its pages back at 't0_s' (a step's start)
 * and was scheduled again at 't1_s'. */
struct serve_preempt {
    int64_t req;
    double t0_s, t1_s;
};

/* One replica's share of a run of several (serving/serve_fleet.h). */
struct serve_replica {
    int64_t requests, steps;
    double batch_seqs_sum;
    int64_t kv_peak_pages;
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
    /* speculative decoding: sequence steps that verified drafts, the draft
     * tokens they verified, of which accepted */
    int64_t spec_verifies, spec_drafts, spec_accepted;
    double spec_draft_s; /* of device_s, the draft model's passes (serving/serve_run.c) */
    int replicas;                      /* engines behind the router: 1, or serve.mesh data */
    int prefill_engines;               /* disaggregated: engines [0, this) run the prefills */
    struct serve_replica *per_replica; /* [replicas] when more than 1, owned */
};

/* Runs the engine 'c' with prices from 'price'. Returns 0, 1 when a step
 * could not be priced or scheduled, 130 when interrupted; '*r' is filled
 * (release with serve_result_fini) either way. */
int serve_simulate(const struct serve_cfg *c, serve_price_fn price, void *ctx,
                   struct serve_result *r);
void serve_result_fini(struct serve_result *r);

/* One engine's state between steps, for a loop that drives several engines
 * (serving/serve_fleet.c): requests are pushed into its waiting queue, a step
 * is begun (scheduled, priced, recorded; the engine's clock moves to the
 * step's end) and ended (its tokens cached, finished requests leave).
 * serve_simulate is one engine driven by its own arrivals. The requests are
 * r->req (shared by engines that share them): an engine's result keeps its
 * own steps and counts. */
struct serve_eng {
    const struct serve_cfg *c;
    struct serve_result *r;   /* counts, steps, ITLs; r->req the requests (maybe shared) */
    int64_t *run, nrun;       /* running requests, in admission order */
    int64_t *wait, w0, nwait, wcap; /* waiting requests: a ring of 'wcap' slots */
    int64_t issued;           /* requests that joined the waiting queue (serve_simulate) */
    int64_t *released;        /* closed loop: requests given their arrival time */
    int64_t free_pages;
    int64_t outstanding;      /* tokens left to compute: prompts not cached, outputs to come */
    double now;
    double last_end_s;        /* the end of the engine's last step; -1 before its first */
    struct serve_batch b;
    int64_t *sched;           /* per batch entry, its request */
};

/* An engine of 'c' over the requests r->req; 'released' is the closed loop's
 * count of requests released (shared by engines that share the requests). */
/* The totals of a run of several engines (serve_fleet.c, serve_disagg.c) from
 * their results 'parts[0..n)', each engine's share in r->per_replica (its
 * 'steps[k]'), and their preemption logs moved into 'r''s in engine order (a
 * request's preemptions are on its engines in time order). Not 'completed'. */
void serve_result_gather(struct serve_result *r, struct serve_result *parts,
                         const int64_t *steps, int n);
void serve_eng_init(struct serve_eng *e, const struct serve_cfg *c, struct serve_result *r,
                    int64_t *released);
void serve_eng_fini(struct serve_eng *e);
/* Request 'i' joins the waiting queue. */
void serve_eng_push(struct serve_eng *e, int64_t i);
/* True while a request runs or waits. */
bool serve_eng_busy(const struct serve_eng *e);
/* Schedules and prices a step at e->now, moving e->now to its end. Returns
 * 0, or 1 when no step could be formed or priced. */
int serve_eng_begin(struct serve_eng *e, serve_price_fn price, void *ctx);
/* The step begun ends (at e->now): tokens emitted, finished requests leave. */
void serve_eng_end(struct serve_eng *e);
/* The requests of 'c' with their arrival times (a closed loop's later ones
 * INFINITY until released) and lengths, into r->req[0 .. r->count). */
void serve_init_requests(const struct serve_cfg *c, struct serve_result *r);
/* r->duration_s and r->overloaded from the requests. */
void serve_result_close(const struct serve_cfg *c, struct serve_result *r);

/* Speculative decoding (serving/serve_spec.h): of 'drafts' draft tokens
 * request 'req' verifies when it has 'generated' tokens, how many are
 * accepted: each with probability c->spec_acceptance until the first
 * rejection, drawn from c->seed, the request and the position (the same in
 * every replica and run). */
int64_t serve_spec_accepted(const struct serve_cfg *c, int64_t req, int64_t generated,
                            int64_t drafts);

/* Summary statistics of 'n' values (sorted in place). */
struct serve_dist {
    double mean, p50, p90, p99;
    int64_t n;
};
void serve_dist_of(double *v, int64_t n, struct serve_dist *d);
/* The ITL distribution from the bins (percentiles within 1.1 %). */
void serve_itl_dist(const struct serve_result *r, struct serve_dist *d);

#endif
