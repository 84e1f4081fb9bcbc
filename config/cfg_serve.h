/* config/cfg_serve.h -- a scenario's serve: section (serving/serve.h runs it):
 * the model and mesh of one engine, the engine's limits (named as vLLM names
 * them), the requests (closed loop at a concurrency, or open-loop arrivals at
 * a rate), the SLO. Filled by config/cfg.c; checked against the model's
 * memory there. */
#ifndef TPUSIM_CONFIG_CFG_SERVE_H
#define TPUSIM_CONFIG_CFG_SERVE_H

#include <stdbool.h>
#include <stdint.h>

#define SERVE_MAX_SEQS 1024            /* engine.max_num_seqs at most */
#define SERVE_MAX_REQUESTS 1000000     /* requests.count at most (the resource guard) */
#define SERVE_MAX_RATE_PER_S 1e6       /* requests.arrival.rate at most */
/* The host's time per engine step (schedule, prepare the inputs, process the
 * outputs), not overlapped with the device: 1-5 ms per iteration in vLLM and
 * less in SGLang (Srivatsa et al., "Can Scheduling Overhead Dominate LLM
 * Inference Performance?", mlsys.wuklab.io/posts/scheduling_overhead, 2024). */
#define SERVE_DEFAULT_STEP_OVERHEAD_S 2e-3

struct serve_cfg {
    /* engine: */
    int64_t max_num_seqs, max_num_batched_tokens, page_size, max_model_len;
    double hbm_fraction;   /* kv_cache.hbm_fraction: of the usable HBM, weights included */
    bool chunked_prefill;
    double step_overhead_s;
    int buckets_per_octave; /* step_memo.buckets_per_octave: 0 prices every step exactly */
    int64_t memo_verify_every; /* step_memo.verify_every: every Nth step priced exactly too (0: none) */
    /* requests: */
    int64_t count, concurrency; /* concurrency 0: open loop */
    double rate_per_s;          /* open loop: Poisson arrivals */
    int64_t input_len, output_len;
    uint64_t seed;
    /* slo: (0: none) */
    double slo_ttft_s, slo_tpot_s;
    /* derived by config/cfg.c from the model's memory */
    int64_t kv_pages;            /* pages the KV cache holds */
    double kv_bytes_per_token;   /* per chip */
};

#endif
