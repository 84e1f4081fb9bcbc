/* config/cfg_serve.c -- the serve: section's engine, requests and slo (its
 * model and mesh are read by config/cfg.c as a scenario's model: and mesh:).
 * Keys as vLLM, JetStream and SGLang name them: max_num_seqs,
 * max_num_batched_tokens, max_model_len, page_size, the KV cache's share of
 * the HBM (gpu_memory_utilization), a closed loop at a concurrency
 * (--max-concurrency) or Poisson arrivals at a rate (--request-rate), input
 * and output lengths (ISL/OSL). Uses base/ and the config stages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg_int.h"
#include "config/cfg_serve.h"
#include "config/cfg_tree.h"

static void read_engine(struct walk *w, const struct cfg_node *e, struct serve_cfg *c)
{
    const char *p = "serve.engine";
    static const char *const keys[] = {"max_num_seqs",    "max_num_batched_tokens", "page_size",
                                       "max_model_len",   "kv_cache",  "chunked_prefill",
                                       "scheduler",       "step_overhead", "step_memo", NULL};
    walk_check_keys(w, e, p, keys);
    walk_int(w, e, p, "max_num_seqs", false, 1, SERVE_MAX_SEQS, &c->max_num_seqs);
    walk_int(w, e, p, "max_num_batched_tokens", false, 1, 1 << 20, &c->max_num_batched_tokens);
    walk_int(w, e, p, "page_size", false, 1, 1 << 12, &c->page_size);
    walk_int(w, e, p, "max_model_len", false, 1, 1 << 24, &c->max_model_len);
    walk_bool(w, e, p, "chunked_prefill", &c->chunked_prefill);
    static const char *const sched[] = {"fcfs", NULL};
    int v = 0;
    walk_enum(w, e, p, "scheduler", sched, &v);
    walk_qty(w, e, p, "step_overhead", false, UNITS_TIME, true, &c->step_overhead_s);
    const struct cfg_node *kv = cfg_get(e, "kv_cache");
    if (kv && walk_is_map(w, kv, "serve.engine.kv_cache")) {
        static const char *const kk[] = {"hbm_fraction", NULL};
        walk_check_keys(w, kv, "serve.engine.kv_cache", kk);
        walk_real(w, kv, "serve.engine.kv_cache", "hbm_fraction", false, 0.01, 1.0,
                  "a fraction in [0.01, 1]", &c->hbm_fraction);
    }
    const struct cfg_node *sm = cfg_get(e, "step_memo");
    if (sm && walk_is_map(w, sm, "serve.engine.step_memo")) {
        static const char *const mk[] = {"buckets_per_octave", "verify_every", NULL};
        walk_check_keys(w, sm, "serve.engine.step_memo", mk);
        int64_t b = c->buckets_per_octave;
        walk_int(w, sm, "serve.engine.step_memo", "buckets_per_octave", false, 0, 64, &b);
        c->buckets_per_octave = (int)b;
        walk_int(w, sm, "serve.engine.step_memo", "verify_every", false, 0, 1 << 30,
                 &c->memo_verify_every);
    }
}

/* rate: 12/s, or 12 (requests per second), in (0, SERVE_MAX_RATE_PER_S]. */
static void read_rate(struct walk *w, const struct cfg_node *a, struct serve_cfg *c)
{
    const struct cfg_node *r = walk_field(w, a, "serve.requests.arrival", "rate", true);
    if (!r)
        return;
    char *end = NULL;
    double v = r->type == CFG_SCALAR ? strtod(r->value, &end) : 0;
    bool ok = end && end != r->value && (!*end || strcmp(end, "/s") == 0);
    char want[96];
    snprintf(want, sizeof want, "a rate like 12/s, above 0 and at most %g requests/s",
             SERVE_MAX_RATE_PER_S);
    if (!ok || !(v > 0 && v <= SERVE_MAX_RATE_PER_S))
        walk_type_error(w, r, "serve.requests.arrival.rate", want);
    else
        c->rate_per_s = v;
}

static void read_requests(struct walk *w, const struct cfg_node *q, struct serve_cfg *c)
{
    const char *p = "serve.requests";
    static const char *const keys[] = {"count",     "concurrency", "arrival", "input_len",
                                       "output_len", "seed",       NULL};
    walk_check_keys(w, q, p, keys);
    walk_int(w, q, p, "count", true, 1, SERVE_MAX_REQUESTS, &c->count);
    walk_int(w, q, p, "input_len", true, 1, 1 << 24, &c->input_len);
    walk_int(w, q, p, "output_len", true, 1, 1 << 24, &c->output_len);
    int64_t seed = 1;
    walk_int(w, q, p, "seed", false, 0, INT64_MAX, &seed);
    c->seed = (uint64_t)seed;
    const struct cfg_node *cc = cfg_get(q, "concurrency"), *a = cfg_get(q, "arrival");
    if (!!cc == !!a) {
        walk_type_error(w, q, p, "exactly one of concurrency (a closed loop) or arrival "
                                 "(open-loop arrivals at a rate)");
        return;
    }
    walk_int(w, q, p, "concurrency", false, 1, SERVE_MAX_REQUESTS, &c->concurrency);
    if (a && walk_is_map(w, a, "serve.requests.arrival")) {
        static const char *const ak[] = {"rate", "process", NULL};
        static const char *const proc[] = {"poisson", NULL};
        walk_check_keys(w, a, "serve.requests.arrival", ak);
        int v = 0;
        walk_enum(w, a, "serve.requests.arrival", "process", proc, &v);
        read_rate(w, a, c);
    }
}

static void read_slo(struct walk *w, const struct cfg_node *s, struct serve_cfg *c)
{
    static const char *const keys[] = {"ttft", "tpot", NULL};
    walk_check_keys(w, s, "serve.slo", keys);
    walk_qty(w, s, "serve.slo", "ttft", false, UNITS_TIME, false, &c->slo_ttft_s);
    walk_qty(w, s, "serve.slo", "tpot", false, UNITS_TIME, false, &c->slo_tpot_s);
}

/* Rules across keys: a request fits max_model_len; one prompt chunk fits the
 * token budget unless prompts are chunked. */
static void check_serve(struct walk *w, const struct cfg_node *node, struct serve_cfg *c)
{
    const struct cfg_node *q = cfg_get(node, "requests");
    char want[160];
    if (c->input_len + c->output_len > c->max_model_len) {
        snprintf(want, sizeof want, "input_len + output_len at most engine.max_model_len = %lld",
                 (long long)c->max_model_len);
        walk_type_error(w, cfg_get(q, "output_len"), "serve.requests.output_len", want);
    }
    if (!c->chunked_prefill && c->input_len > c->max_num_batched_tokens) {
        snprintf(want, sizeof want,
                 "input_len at most engine.max_num_batched_tokens = %lld without chunked_prefill",
                 (long long)c->max_num_batched_tokens);
        walk_type_error(w, cfg_get(q, "input_len"), "serve.requests.input_len", want);
    }
}

int cfg_load_serve(struct walk *w, const struct cfg_node *node, struct serve_cfg *c)
{
    int before = diag_count(w->d);
    *c = (struct serve_cfg){.max_num_seqs = 256, .max_num_batched_tokens = 2048,
                            .page_size = 128, .max_model_len = 8192, .hbm_fraction = 0.9,
                            .chunked_prefill = true,
                            .step_overhead_s = SERVE_DEFAULT_STEP_OVERHEAD_S,
                            .buckets_per_octave = 4, .seed = 1};
    if (!walk_is_map(w, node, "serve"))
        return -1;
    static const char *const keys[] = {"model", "mesh", "engine", "requests", "slo", NULL};
    walk_check_keys(w, node, "serve", keys);
    walk_field(w, node, "serve", "model", true);
    const struct cfg_node *e = cfg_get(node, "engine"), *q, *s = cfg_get(node, "slo");
    if (e && walk_is_map(w, e, "serve.engine"))
        read_engine(w, e, c);
    q = walk_field(w, node, "serve", "requests", true);
    if (q && walk_is_map(w, q, "serve.requests"))
        read_requests(w, q, c);
    if (s && walk_is_map(w, s, "serve.slo"))
        read_slo(w, s, c);
    if (diag_count(w->d) == before)
        check_serve(w, node, c);
    return diag_count(w->d) > before ? -1 : 0;
}
