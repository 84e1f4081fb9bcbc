/* config/cfg_serve.c -- the serve: section's engine, requests and slo (its
 * model and mesh are read by config/cfg.c as a scenario's model: and mesh:).
 * Keys as vLLM, JetStream and SGLang name them: max_num_seqs,
 * max_num_batched_tokens, max_model_len, page_size, the KV cache's share of
 * the HBM (gpu_memory_utilization), a closed loop at a concurrency
 * (--max-concurrency) or Poisson arrivals at a rate (--request-rate), input
 * and output lengths (ISL/OSL), fixed or drawn from a distribution, gamma
 * arrivals (vLLM's --burstiness), or a trace of requests
 * (config/cfg_serve_trace.c). Uses base/ and the config stages. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/xalloc.h"
#include "config/cfg_int.h"
#include "config/cfg_serve.h"
#include "config/cfg_tree.h"
#include "workload/model.h"

/* speculative_config: {model: {...}, num_speculative_tokens: K, acceptance_rate: A}
 * (vLLM's --speculative-config keys; the draft model itself is read by
 * config/cfg.c, as serve.model is). */
static void read_spec(struct walk *w, const struct cfg_node *n, struct serve_cfg *c)
{
    const char *p = "serve.engine.speculative_config";
    static const char *const keys[] = {"model", "num_speculative_tokens", "acceptance_rate",
                                       NULL};
    walk_check_keys(w, n, p, keys);
    const struct cfg_node *m = walk_field(w, n, p, "model", true);
    if (m && m->type != CFG_MAP)
        walk_type_error(w, m, "serve.engine.speculative_config.model",
                        "a draft model, as serve.model ({preset: NAME} or its keys)");
    int64_t k = 1;
    walk_int(w, n, p, "num_speculative_tokens", true, 1, SERVE_MAX_SPEC_TOKENS, &k);
    c->spec_tokens = (int)k;
    walk_real(w, n, p, "acceptance_rate", true, 0, 1, "a probability from 0 to 1",
              &c->spec_acceptance);
}

/* scheduler: sglang's keys, as SGLang names them (--chunked-prefill-size,
 * --max-prefill-tokens, --enable-mixed-chunk; SGLang-JAX's defaults 4096, 16384,
 * off); a chunk a whole number of pages, as SGLang asserts. The token budget
 * the pricer pads to (max_num_batched_tokens) is derived from them. */
static void read_sglang(struct walk *w, const struct cfg_node *e, struct serve_cfg *c)
{
    const char *p = "serve.engine";
    static const char *const keys[] = {"chunked_prefill_size", "max_prefill_tokens",
                                       "enable_mixed_chunk", NULL};
    for (int k = 0; keys[k] && !c->sglang; k++)
        if (cfg_get(e, keys[k])) {
            char path[64];
            snprintf(path, sizeof path, "serve.engine.%s", keys[k]);
            walk_type_error(w, cfg_get(e, keys[k]), path, "no such key unless scheduler: sglang");
        }
    const struct cfg_node *mb = cfg_get(e, "max_num_batched_tokens");
    if (mb && c->sglang)
        walk_type_error(w, mb, "serve.engine.max_num_batched_tokens",
                        "no such key with scheduler: sglang (chunked_prefill_size and "
                        "max_prefill_tokens bound its batches)");
    walk_int(w, e, p, "chunked_prefill_size", false, 1, 1 << 20, &c->chunked_prefill_size);
    walk_int(w, e, p, "max_prefill_tokens", false, 1, 1 << 20, &c->max_prefill_tokens);
    walk_bool(w, e, p, "enable_mixed_chunk", &c->mixed_chunk);
    const struct cfg_node *cs = cfg_get(e, "chunked_prefill_size");
    if (cs && c->chunked_prefill_size % c->page_size) {
        char want[96];
        snprintf(want, sizeof want, "a multiple of engine.page_size = %lld",
                 (long long)c->page_size);
        walk_type_error(w, cs, "serve.engine.chunked_prefill_size", want);
    }
}

static void read_engine(struct walk *w, const struct cfg_node *e, struct serve_cfg *c)
{
    const char *p = "serve.engine";
    static const char *const keys[] = {"max_num_seqs",    "max_num_batched_tokens", "page_size",
                                       "max_model_len",   "kv_cache",  "chunked_prefill",
                                       "scheduler",       "step_overhead", "step_memo", "async_scheduling",
                                       "attention_kernel", "kv_cache_dtype",
                                       "speculative_config", "chunked_prefill_size",
                                       "max_prefill_tokens", "enable_mixed_chunk", NULL};
    walk_check_keys(w, e, p, keys);
    walk_int(w, e, p, "max_num_seqs", false, 1, SERVE_MAX_SEQS, &c->max_num_seqs);
    walk_int(w, e, p, "max_num_batched_tokens", false, 1, 1 << 20, &c->max_num_batched_tokens);
    walk_int(w, e, p, "page_size", false, 1, 1 << 12, &c->page_size);
    walk_int(w, e, p, "max_model_len", false, 1, 1 << 24, &c->max_model_len);
    walk_bool(w, e, p, "chunked_prefill", &c->chunked_prefill);
    static const char *const sched[] = {"fcfs", "jetstream", "sglang", NULL};
    int v = 0;
    walk_enum(w, e, p, "scheduler", sched, &v);
    c->jetstream = v == 1;
    c->sglang = v == 2;
    read_sglang(w, e, c);
    walk_qty(w, e, p, "step_overhead", false, UNITS_TIME, true, &c->step_overhead_s);
    c->async_scheduling = c->jetstream || c->sglang; /* SGLang: its overlap scheduler */
    walk_bool(w, e, p, "async_scheduling", &c->async_scheduling);
    static const char *const kvd[] = {"auto", "int8", NULL};
    v = 0;
    walk_enum(w, e, p, "kv_cache_dtype", kvd, &v);
    c->kv_int8 = v == 1;
    /* int8 pages: RPA v2 (v3 refuses them) unless chosen; JetStream: its dense cache */
    static const char *const kernels[] = {"rpa_v2", "rpa_v3", "dense", NULL};
    v = c->jetstream ? 2 : c->rpa_v3 && !c->kv_int8;
    walk_enum(w, e, p, "attention_kernel", kernels, &v);
    c->rpa_v3 = v == 1;
    c->dense_kv = v == 2;
    if (c->jetstream && c->chunked_prefill && cfg_get(e, "chunked_prefill"))
        walk_type_error(w, cfg_get(e, "chunked_prefill"), "serve.engine.chunked_prefill",
                        "false with scheduler: jetstream (JetStream prefills each prompt whole, "
                        "max_num_batched_tokens its max_prefill_length)");
    c->chunked_prefill = c->chunked_prefill && !c->jetstream;
    if (c->sglang) /* the largest batch: a prefill batch's budget, plus decodes when mixed */
        c->max_num_batched_tokens = (c->chunked_prefill ? c->chunked_prefill_size
                                                        : c->max_prefill_tokens) +
                                    (c->mixed_chunk ? c->max_num_seqs : 0);
    if (c->dense_kv && !c->jetstream)
        walk_type_error(w, cfg_get(e, "attention_kernel"), "serve.engine.attention_kernel",
                        "rpa_v2 or rpa_v3 (dense is JetStream's cache of max_num_seqs slots: "
                        "with scheduler: jetstream)");
    const struct cfg_node *kv = cfg_get(e, "kv_cache");
    if (kv && walk_is_map(w, kv, "serve.engine.kv_cache")) {
        static const char *const kk[] = {"hbm_fraction", NULL};
        walk_check_keys(w, kv, "serve.engine.kv_cache", kk);
        walk_real(w, kv, "serve.engine.kv_cache", "hbm_fraction", false, 0.01, 1.0,
                  "a fraction in [0.01, 1]", &c->hbm_fraction);
    }
    const struct cfg_node *sp = cfg_get(e, "speculative_config");
    if (sp && walk_is_map(w, sp, "serve.engine.speculative_config"))
        read_spec(w, sp, c);
    if (sp && c->jetstream)
        walk_type_error(w, sp, "serve.engine.speculative_config",
                        "none with scheduler: jetstream (its generate steps decode one token a "
                        "slot)");
    if (sp && c->sglang)
        walk_type_error(w, sp, "serve.engine.speculative_config",
                        "none with scheduler: sglang (not modelled: use scheduler: fcfs)");
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

/* input_len / output_len: N, {min, max} (uniform), or {mean, sigma, max[, min]} with
 * dist: lognormal. Sets the longest length into '*longest'. */
static void read_len(struct walk *w, const struct cfg_node *q, const char *key,
                     struct serve_len *l, int64_t *longest)
{
    const struct cfg_node *n = walk_field(w, q, "serve.requests", key, true);
    if (!n)
        return;
    char *p = walk_join("serve.requests", key);
    if (n->type != CFG_MAP) {
        walk_int(w, q, "serve.requests", key, true, 1, 1 << 24, &l->min);
        l->kind = SERVE_LEN_FIXED, l->max = l->min;
    } else {
        static const char *const keys[] = {"min", "max", "mean", "sigma", "dist", NULL};
        static const char *const dists[] = {"uniform", "lognormal", NULL};
        walk_check_keys(w, n, p, keys);
        int before = diag_count(w->d);
        int dv = cfg_get(n, "mean") ? 1 : 0;
        walk_enum(w, n, p, "dist", dists, &dv);
        l->kind = dv ? SERVE_LEN_LOGNORMAL : SERVE_LEN_UNIFORM;
        l->min = 1;
        walk_int(w, n, p, "min", !dv, 1, 1 << 24, &l->min);
        walk_int(w, n, p, "max", true, 1, 1 << 24, &l->max);
        if (dv) {
            walk_real(w, n, p, "mean", true, 1, 16777216.0, "a mean length from 1 to 16777216",
                      &l->mean);
            l->sigma = 1;
            walk_real(w, n, p, "sigma", false, 0.01, 4, "the sigma of the log, from 0.01 to 4",
                      &l->sigma);
        } else if (cfg_get(n, "mean") || cfg_get(n, "sigma")) {
            walk_type_error(w, n, p, "mean and sigma only with dist: lognormal");
        }
        if (diag_count(w->d) > before)
            ; /* each key said what is wrong with it */
        else if (l->max < l->min)
            walk_type_error(w, cfg_get(n, "max"), p, "max at least min");
        else if (dv && !(l->mean >= (double)l->min && l->mean <= (double)l->max))
            walk_type_error(w, cfg_get(n, "mean"), p, "a mean between min and max");
    }
    *longest = l->max;
    free(p);
}

/* trace: FILE (relative to the scenario's directory), a request per row. */
static void read_trace(struct walk *w, const struct cfg_node *q, const char *file,
                       struct serve_cfg *c)
{
    const struct cfg_node *t = cfg_get(q, "trace");
    static const char *const not[] = {"count", "concurrency", "arrival", "input_len",
                                      "output_len", NULL};
    for (int i = 0; not[i]; i++)
        if (cfg_get(q, not[i]))
            walk_type_error(w, cfg_get(q, not[i]), "serve.requests",
                            "no count, concurrency, arrival or lengths beside trace: (its rows "
                            "give each request's arrival and lengths)");
    if (t->type != CFG_SCALAR || !*t->value) {
        walk_type_error(w, t, "serve.requests.trace", "a CSV file of requests");
        return;
    }
    /* relative to the scenario's directory (as program.hlo), also from a --set */
    const char *slash = file ? strrchr(file, '/') : NULL;
    char *path = t->value[0] == '/' || !slash || !strcmp(file, CFG_STDIN_NAME)
                     ? xstrdup(t->value)
                     : xasprintf("%.*s/%s", (int)(slash - file), file, t->value);
    size_t len;
    char *text = fs_read_all(path, SERVE_TRACE_MAX_BYTES, &len);
    if (!text) {
        char why[128];
        fs_read_error(errno, SERVE_TRACE_MAX_BYTES, why, sizeof why);
        char *want = xasprintf("a CSV file of requests; cannot read '%s': %s", path, why);
        walk_type_error(w, t, "serve.requests.trace", want);
        free(want);
    } else if (cfg_serve_trace_parse(text, len, path, c, w->d) == 0) {
        struct serve_trace *tr = &c->trace;
        c->count = tr->n;
        c->input_len = c->output_len = 1;
        for (int64_t i = 0; i < tr->n; i++) {
            c->input_len = tr->in[i] > c->input_len ? tr->in[i] : c->input_len;
            c->output_len = tr->out[i] > c->output_len ? tr->out[i] : c->output_len;
        }
        double span = tr->arrival_s[tr->n - 1] - tr->arrival_s[0];
        c->rate_per_s = tr->n > 1 && span > 0 ? (double)(tr->n - 1) / span : 0;
    }
    free(text);
    free(path);
}

/* arrival: {rate, process: poisson | gamma, cv | burstiness}. */
static void read_arrival(struct walk *w, const struct cfg_node *a, struct serve_cfg *c)
{
    const char *p = "serve.requests.arrival";
    static const char *const ak[] = {"rate", "process", "cv", "burstiness", NULL};
    static const char *const proc[] = {"poisson", "gamma", NULL};
    walk_check_keys(w, a, p, ak);
    int v = 0;
    walk_enum(w, a, p, "process", proc, &v);
    read_rate(w, a, c);
    const struct cfg_node *cv = cfg_get(a, "cv"), *b = cfg_get(a, "burstiness");
    if (!v) {
        if (cv || b)
            walk_type_error(w, cv ? cv : b, p, "cv or burstiness only with process: gamma");
        return;
    }
    if (!!cv == !!b) {
        walk_type_error(w, a, p, "with process: gamma, exactly one of cv (the gaps' coefficient "
                                 "of variation) or burstiness (vLLM's gamma shape, 1/cv^2)");
        return;
    }
    double x = 1;
    if (cv) {
        walk_real(w, a, p, "cv", true, SERVE_MIN_CV, SERVE_MAX_CV, "a cv from 0.05 to 10", &x);
        c->arrival_cv = x;
    } else {
        walk_real(w, a, p, "burstiness", true, 0.01, 400, "a burstiness from 0.01 to 400", &x);
        c->arrival_cv = 1 / sqrt(x);
    }
}

static void read_requests(struct walk *w, const struct cfg_node *q, const char *file,
                          struct serve_cfg *c)
{
    const char *p = "serve.requests";
    static const char *const keys[] = {"count",      "concurrency", "arrival", "input_len",
                                       "output_len", "seed",        "trace",   NULL};
    walk_check_keys(w, q, p, keys);
    int64_t seed = 1;
    walk_int(w, q, p, "seed", false, 0, INT64_MAX, &seed);
    c->seed = (uint64_t)seed;
    if (cfg_get(q, "trace")) {
        read_trace(w, q, file, c);
        return;
    }
    walk_int(w, q, p, "count", true, 1, SERVE_MAX_REQUESTS, &c->count);
    read_len(w, q, "input_len", &c->in_len, &c->input_len);
    read_len(w, q, "output_len", &c->out_len, &c->output_len);
    const struct cfg_node *cc = cfg_get(q, "concurrency"), *a = cfg_get(q, "arrival");
    if (!!cc == !!a) {
        walk_type_error(w, q, p, "exactly one of concurrency (a closed loop), arrival "
                                 "(open-loop arrivals at a rate) or trace (a CSV of requests)");
        return;
    }
    walk_int(w, q, p, "concurrency", false, 1, SERVE_MAX_REQUESTS, &c->concurrency);
    if (a && walk_is_map(w, a, "serve.requests.arrival"))
        read_arrival(w, a, c);
}

const char *const serve_router_names[] = {"round_robin", "least_outstanding_tokens", NULL};

/* router: {policy: round_robin | least_outstanding_tokens}. */
static void read_router(struct walk *w, const struct cfg_node *r, struct serve_cfg *c)
{
    static const char *const keys[] = {"policy", NULL};
    walk_check_keys(w, r, "serve.router", keys);
    int v = 0;
    walk_enum(w, r, "serve.router", "policy", serve_router_names, &v);
    c->router = (enum serve_router)v;
}

const char *const serve_kv_transfer_names[] = {"ici", "dcn", NULL};

/* disaggregation: {prefill: P, decode: D, kv_transfer: ici | dcn} (SGLang's
 * --disaggregation-mode prefill | decode engines; config/cfg.c holds P + D
 * against serve.mesh's data axis). */
static void read_disagg(struct walk *w, const struct cfg_node *n, struct serve_cfg *c)
{
    const char *p = "serve.disaggregation";
    static const char *const keys[] = {"prefill", "decode", "kv_transfer", NULL};
    walk_check_keys(w, n, p, keys);
    int64_t v = 1;
    walk_int(w, n, p, "prefill", true, 1, SERVE_MAX_SEQS, &v);
    c->prefill_engines = (int)v;
    v = 1;
    walk_int(w, n, p, "decode", true, 1, SERVE_MAX_SEQS, &v);
    c->decode_engines = (int)v;
    int k = 0;
    walk_enum(w, n, p, "kv_transfer", serve_kv_transfer_names, &k);
    c->kv_transfer = (enum serve_kv_transfer)k;
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
    if (c->trace.n && !c->chunked_prefill && !c->sglang && c->input_len > c->max_num_batched_tokens) {
        snprintf(want, sizeof want, "every input_len at most engine.max_num_batched_tokens = "
                 "%lld without chunked_prefill, got one of %lld", (long long)c->max_num_batched_tokens,
                 (long long)c->input_len);
        walk_type_error(w, cfg_get(q, "trace"), "serve.requests.trace", want);
    }
    if (c->trace.n)
        return; /* each row was held against max_model_len as it was read */
    if (c->input_len + c->output_len > c->max_model_len) {
        snprintf(want, sizeof want, "input_len + output_len at most engine.max_model_len = %lld",
                 (long long)c->max_model_len);
        walk_type_error(w, cfg_get(q, "output_len"), "serve.requests.output_len", want);
    }
    if (!c->chunked_prefill && !c->sglang && c->input_len > c->max_num_batched_tokens) {
        snprintf(want, sizeof want,
                 "input_len at most engine.max_num_batched_tokens = %lld without chunked_prefill",
                 (long long)c->max_num_batched_tokens);
        walk_type_error(w, cfg_get(q, "input_len"), "serve.requests.input_len", want);
    }
}

int cfg_load_serve(struct walk *w, const struct cfg_node *node, const char *file,
                   struct serve_cfg *c)
{
    int before = diag_count(w->d);
    *c = (struct serve_cfg){.max_num_seqs = 256, .max_num_batched_tokens = 2048,
                            .page_size = 128, .max_model_len = 8192, .hbm_fraction = 0.9,
                            .chunked_prefill = true, .rpa_v3 = true,
                            .chunked_prefill_size = 4096, .max_prefill_tokens = 16384,
                            .step_overhead_s = SERVE_DEFAULT_STEP_OVERHEAD_S,
                            .buckets_per_octave = 4, .seed = 1, .replicas = 1};
    if (!walk_is_map(w, node, "serve"))
        return -1;
    static const char *const keys[] = {"model", "mesh", "engine", "requests", "slo", "router",
                                       "disaggregation", NULL};
    walk_check_keys(w, node, "serve", keys);
    walk_field(w, node, "serve", "model", true);
    const struct cfg_node *e = cfg_get(node, "engine"), *q, *s = cfg_get(node, "slo");
    if (e && walk_is_map(w, e, "serve.engine"))
        read_engine(w, e, c);
    q = walk_field(w, node, "serve", "requests", true);
    if (q && walk_is_map(w, q, "serve.requests"))
        read_requests(w, q, file, c);
    if (s && walk_is_map(w, s, "serve.slo"))
        read_slo(w, s, c);
    const struct cfg_node *rt = cfg_get(node, "router");
    if (rt && walk_is_map(w, rt, "serve.router"))
        read_router(w, rt, c);
    const struct cfg_node *dg = cfg_get(node, "disaggregation");
    if (dg && walk_is_map(w, dg, "serve.disaggregation"))
        read_disagg(w, dg, c);
    if (c->jetstream && c->prefill_engines)
        walk_type_error(w, dg, "serve.disaggregation",
                        "none with scheduler: jetstream (its engine interleaves prefills and "
                        "generate steps)");
    if (c->sglang && c->prefill_engines)
        walk_type_error(w, dg, "serve.disaggregation",
                        "none with scheduler: sglang (not modelled: use scheduler: fcfs)");
    if (diag_count(w->d) == before)
        check_serve(w, node, c);
    return diag_count(w->d) > before ? -1 : 0;
}
