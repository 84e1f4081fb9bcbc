/* tests/fuzz/fuzz_serve.c -- libFuzzer harness: arbitrary bytes as a serving
 * scenario whose engine loop then runs (serving/serve.h: one engine, replicas
 * behind a router, prefill/decode disaggregation, speculative decoding) with a
 * step price by hand instead of SimGrid, so that every scheduler path --
 * chunked prefill, preemption and recompute, drafts, KV transfers -- meets
 * arbitrary engine limits, traffic and KV cache sizes. The loop must end with
 * every request served, each with its output tokens, in time order, and the
 * KV cache never overdrawn -- never a crash, a hang or a leak. Runs bounded to
 * 2,000 requests of at most 2,048 output tokens (a run's steps stay below a
 * few million). */
#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"
#include "config/cfg.h"
#include "config/cfg_serve.h"
#include "serving/serve.h"
#include "serving/serve_disagg.h"
#include "serving/serve_fleet.h"
#include "serving/serve_spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* 0.5 ms + 1 us per token + 1 ns per cached token of each sequence */
static double price(void *ctx, const struct serve_batch *b)
{
    (void)ctx;
    assert(b->n >= 1 && b->tokens >= 1);
    double t = 5e-4 + 1e-6 * (double)b->tokens;
    for (int i = 0; i < b->n; i++) {
        assert(b->q[i] >= 1 && b->kv[i] >= b->q[i] && b->draft[i] >= 0 && b->draft[i] < b->q[i]);
        t += 1e-9 * (double)b->kv[i];
    }
    return t;
}

static void check(const struct serve_cfg *c, const struct serve_result *r)
{
    assert(r->completed == r->count);
    for (int64_t i = 0; i < r->count; i++) {
        const struct serve_req *q = &r->req[i];
        assert(q->generated == q->out && q->pages == 0);
        assert(q->first_s >= q->arrival_s && q->finish_s >= q->first_s);
    }
    assert(r->kv_peak_pages <= r->kv_pages);
    assert(r->spec_accepted <= r->spec_drafts && r->spec_drafts <= r->spec_verifies * c->spec_tokens);
    assert(isfinite(r->duration_s) && r->duration_s >= 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    if (cfg_load_scenario_text((const char *)data, size, "fuzz.yaml", NULL, 0, &sc, d) == 0) {
        const struct serve_cfg *c = sc.serve;
        if (c && c->count <= 2000 && c->output_len <= 2048) {
            struct serve_spec_pricer sp;
            serve_spec_pricer_init(&sp, price, NULL, price, NULL, c->max_num_seqs);
            serve_price_fn fn = c->spec_tokens ? serve_spec_price : price;
            void *ctx = c->spec_tokens ? (void *)&sp : NULL;
            struct serve_result r;
            int rc = c->prefill_engines ? serve_disagg_simulate(c, fn, ctx, &r)
                     : c->replicas > 1  ? serve_fleet_simulate(c, fn, ctx, &r)
                                        : serve_simulate(c, fn, ctx, &r);
            assert(rc == 0);
            check(c, &r);
            serve_result_fini(&r);
            serve_spec_pricer_fini(&sp);
        }
        cfg_scenario_fini(&sc);
    }
    diag_free(d);
    return 0;
}
