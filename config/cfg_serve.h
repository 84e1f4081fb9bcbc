/* config/cfg_serve.h -- a scenario's serve: section (serving/serve.h runs it):
 * the model and mesh of an engine (and its replicas behind a router), the
 * engine's limits (named as vLLM names them), the requests (closed loop at a
 * concurrency, or open-loop arrivals at a rate), the SLO. Filled by
 * config/cfg.c; checked against the model's memory there. */
#ifndef TPUSIM_CONFIG_CFG_SERVE_H
#define TPUSIM_CONFIG_CFG_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct model;

#define SERVE_MAX_SEQS 1024            /* engine.max_num_seqs at most */
#define SERVE_MAX_REQUESTS 1000000     /* requests.count at most (the resource guard) */
#define SERVE_MAX_RATE_PER_S 1e6       /* requests.arrival.rate at most */
/* The host's time per engine step (schedule, prepare the inputs, process the
 * outputs), not overlapped with the device: 1-5 ms per iteration in vLLM and
 * less in SGLang (Srivatsa et al., "Can Scheduling Overhead Dominate LLM
 * Inference Performance?", mlsys.wuklab.io/posts/scheduling_overhead, 2024). */
#define SERVE_DEFAULT_STEP_OVERHEAD_S 2e-3

/* engine.speculative_config.num_speculative_tokens at most (vLLM runs 1-8 in practice) */
#define SERVE_MAX_SPEC_TOKENS 16

#define SERVE_TRACE_MAX_BYTES ((size_t)64 << 20) /* requests.trace: a CSV of at most 64 MiB */
#define SERVE_MIN_CV 0.05                /* arrival.cv (gamma arrivals): in [0.05, 10] */
#define SERVE_MAX_CV 10.0

/* A length of requests.input_len / output_len: one number, uniform integers
 * in [min, max], or a lognormal of a mean length and the sigma of its log,
 * rounded and kept in [min, max] (serving/serve_traffic.c draws them). */
enum serve_len_kind { SERVE_LEN_FIXED, SERVE_LEN_UNIFORM, SERVE_LEN_LOGNORMAL };
struct serve_len {
    enum serve_len_kind kind;
    int64_t min, max; /* FIXED: min = max = the length */
    double mean, sigma;
};

/* requests.trace: a request per row, sorted by arrival (owned arrays). */
struct serve_trace {
    int64_t n;
    double *arrival_s;
    int64_t *in, *out;
};

/* serve.router.policy: where a request goes among the replicas (serve.mesh
 * data), as SGLang's router names its policies (round_robin), and the
 * replica with the fewest tokens still to compute (serving/serve_fleet.h). */
enum serve_router { SERVE_ROUTER_ROUND_ROBIN, SERVE_ROUTER_LEAST_OUTSTANDING_TOKENS };

/* serve.disaggregation.kv_transfer: the prefill engines' KV caches go to the
 * decode engines over the slice's ICI, or over the DCN between two slices
 * (serving/serve_disagg.h). */
enum serve_kv_transfer { SERVE_KV_ICI, SERVE_KV_DCN };

struct serve_cfg {
    /* mesh: engines behind the router (the data axis), each over the tensor axis */
    int replicas;
    enum serve_router router;
    /* disaggregation: of the replicas, prefill_engines run prefills only and
     * decode_engines the decodes (0, 0: every engine runs both) */
    int prefill_engines, decode_engines;
    enum serve_kv_transfer kv_transfer;
    double kv_transfer_lat_s;  /* derived by config/cfg.c: a transfer's fixed time */
    double kv_transfer_Bps;    /* each chip's share of the link, one direction */
    /* engine: */
    int64_t max_num_seqs, max_num_batched_tokens, page_size, max_model_len;
    double hbm_fraction;   /* kv_cache.hbm_fraction: of the usable HBM, weights included */
    bool chunked_prefill;
    bool rpa_v3;           /* attention_kernel: rpa_v3 (vLLM TPU's RPA v3) or rpa_v2 */
    bool kv_int8;          /* kv_cache_dtype: int8 (vLLM's --kv-cache-dtype); RPA v2 then */
    /* scheduler: jetstream -- JetStream's orchestrator (serving/serve.h): each prefill
     * one request alone, before the next generate step; a generate step runs every
     * one of max_num_seqs slots (its decode state has fixed shapes); the KV cache
     * is dense, every slot holding max_model_len tokens. Over serve.mesh data D the
     * one engine's slots are sharded on the batch (JetStream's shard_on_batch):
     * a group steps max_num_seqs / D slots and every group runs each prefill. */
    bool jetstream;
    /* scheduler: sglang -- SGLang's scheduler (serving/serve.c): while requests wait,
     * a step is a prefill batch (the unfinished chunked prompt's next chunk, then
     * waiting requests first come first served, within chunked_prefill_size and
     * max_prefill_tokens new tokens, page-rounded); else a decode step over every
     * running request. enable_mixed_chunk: the running decodes join a prefill
     * batch (within its budget). max_num_batched_tokens is derived: the largest
     * batch's tokens. */
    bool sglang, mixed_chunk;
    int64_t chunked_prefill_size, max_prefill_tokens;
    bool dense_kv;         /* attention_kernel: dense (JetStream-PyTorch's XLA attention
                              over the dense cache, its default without ragged_mha) */
    double step_overhead_s;
    /* async_scheduling (vLLM's --async-scheduling): the host prepares a step while
     * the device runs the last one, so back-to-back steps take the longer of
     * step_overhead and the device time, not their sum. Default: true with
     * scheduler: jetstream (its generate thread does not wait for the device). */
    bool async_scheduling;
    /* speculative_config (vLLM's --speculative-config): a draft model proposes
     * spec_tokens tokens a sequence and step, the target verifies them in the
     * same step, each accepted with probability spec_acceptance until the first
     * rejection (serving/serve_spec.h); spec_tokens 0: none */
    int spec_tokens;
    double spec_acceptance;
    struct model *draft;   /* the draft model (owned; config/cfg.c loads it), or NULL */
    int buckets_per_octave; /* step_memo.buckets_per_octave: 0 prices every step exactly */
    int64_t memo_verify_every; /* step_memo.verify_every: every Nth step priced exactly too (0: none) */
    /* requests: */
    int64_t count, concurrency; /* concurrency 0: open loop */
    double rate_per_s;          /* open loop: Poisson arrivals (a trace: its mean rate) */
    double arrival_cv;          /* gamma arrivals' coefficient of variation (0: Poisson) */
    int64_t input_len, output_len; /* the longest request's (a trace's, a distribution's max) */
    struct serve_len in_len, out_len;
    struct serve_trace trace;   /* n 0: requests are generated */
    uint64_t seed;
    /* slo: (0: none) */
    double slo_ttft_s, slo_tpot_s;
    /* derived by config/cfg.c from the model's memory */
    int64_t kv_pages;            /* pages the KV cache holds */
    double kv_bytes_per_token;   /* per chip */
};

/* Reads a requests trace (CSV: a header naming arrival_s, input_len and
 * output_len, then a row per request) from 'text' ('len' bytes) read from
 * 'file' into c->trace, each request within c->max_model_len; errors as
 * file:line:col. Returns 0 or -1. config/cfg_serve_trace.c. */
struct diag;
int cfg_serve_trace_parse(const char *text, size_t len, const char *file, struct serve_cfg *c,
                          struct diag *d);
void cfg_serve_fini(struct serve_cfg *c);
/* "round_robin", ... indexed by enum serve_router; NULL-terminated. */
extern const char *const serve_router_names[];
/* "ici", "dcn" indexed by enum serve_kv_transfer; NULL-terminated. */
extern const char *const serve_kv_transfer_names[];

#endif
