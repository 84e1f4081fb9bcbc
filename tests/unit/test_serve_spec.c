/* tests/unit/test_serve_spec.c -- speculative decoding (serving/serve_spec.h)
 * in the engine loop, with prices by hand: the target's step 1 ms + 1 us per
 * token, the draft's pass 0.1 ms + 0.1 us per token, so that every figure
 * below is derived on paper. */
#include "test_util.h"

#include "serving/serve.h"
#include "serving/serve_spec.h"

#include <math.h>

#define MAX_PASSES 64

struct by_hand {
    int target_calls, draft_calls;
    struct serve_batch seen[MAX_PASSES]; /* the draft's passes: n, tokens */
    int64_t q0[MAX_PASSES], kv0[MAX_PASSES]; /* ... and their first sequence */
    int64_t target_q0, target_kv0, target_draft0; /* the last target batch's first entry */
};

static double target_price(void *ctx, const struct serve_batch *b)
{
    struct by_hand *h = ctx;
    h->target_calls++;
    h->target_q0 = b->q[0], h->target_kv0 = b->kv[0], h->target_draft0 = b->draft[0];
    return 1e-3 + 1e-6 * (double)b->tokens;
}

static double draft_price(void *ctx, const struct serve_batch *b)
{
    struct by_hand *h = ctx;
    if (h->draft_calls < MAX_PASSES) {
        h->seen[h->draft_calls] = (struct serve_batch){.n = b->n, .tokens = b->tokens};
        h->q0[h->draft_calls] = b->q[0], h->kv0[h->draft_calls] = b->kv[0];
    }
    h->draft_calls++;
    return 1e-4 + 1e-7 * (double)b->tokens;
}

static struct serve_cfg cfg(double acceptance)
{
    return (struct serve_cfg){.max_num_seqs = 8, .max_num_batched_tokens = 512, .page_size = 16,
                              .max_model_len = 4096, .hbm_fraction = 0.9,
                              .chunked_prefill = true, .step_overhead_s = 2e-3,
                              .buckets_per_octave = 4, .count = 1, .concurrency = 1,
                              .input_len = 100, .output_len = 32, .seed = 1, .kv_pages = 1000,
                              .spec_tokens = 3, .spec_acceptance = acceptance};
}

static int run(struct serve_cfg *c, struct by_hand *h, struct serve_result *r)
{
    struct serve_spec_pricer sp;
    serve_spec_pricer_init(&sp, target_price, h, draft_price, h, c->max_num_seqs);
    int rc = serve_simulate(c, serve_spec_price, &sp, r);
    r->spec_draft_s = sp.draft_s;
    serve_spec_pricer_fini(&sp);
    return rc;
}

/* Every draft accepted, 100 prompt and 32 output tokens, 3 drafts a step:
 * - the prefill: the target over 100 tokens (1.1 ms) and the draft's pass over
 *   the same chunk (0.11 ms): TTFT 2 + 1.21 = 3.21 ms;
 * - 7 steps verifying 3 drafts (4 tokens a step: 1.004 ms; the draft's 3 passes
 *   of one token, 3 x 0.1001 ms): 3.3043 ms each with the overhead, 28 tokens;
 * - the last step has 3 tokens to go: 2 drafts (1.003 + 2 x 0.1001 ms):
 *   3.2032 ms. 9 steps, e2e 3.21 + 7 x 3.3043 + 3.2032 = 29.5433 ms; one
 *   inter-token latency per decode step (8), the tokens of a step one chunk. */
static void test_spec_all_accepted(void **state)
{
    (void)state;
    struct serve_cfg c = cfg(1.0);
    struct by_hand h = {0};
    struct serve_result r;
    assert_int_equal(run(&c, &h, &r), 0);
    assert_int_equal(r.steps, 9);
    assert_int_equal(r.completed, 1);
    assert_int_equal(r.req[0].generated, 32);
    assert_float_equal(r.req[0].first_s - r.req[0].arrival_s, 3.21e-3, 1e-12);
    assert_float_equal(r.req[0].finish_s - r.req[0].arrival_s, 29.5433e-3, 1e-12);
    assert_int_equal(r.itl_n, 8);
    assert_int_equal(r.spec_verifies, 8);
    assert_int_equal(r.spec_drafts, 7 * 3 + 2);
    assert_int_equal(r.spec_accepted, 7 * 3 + 2);
    assert_int_equal(h.target_calls, 9);
    assert_int_equal(h.draft_calls, 1 + 7 * 3 + 2);
    /* the draft's device time: 0.11 + 23 x 0.1001 ms */
    assert_float_equal(r.spec_draft_s, 0.11e-3 + 23 * 0.1001e-3, 1e-12);
    /* the first verifying step: 1 + 3 tokens over the 100 cached (kv 104); the
     * draft's passes before it: the step's own token at 101, then 102, 103 */
    assert_int_equal(h.seen[0].tokens, 100);
    for (int j = 1; j <= 3; j++) {
        assert_int_equal(h.seen[j].n, 1);
        assert_int_equal(h.q0[j], 1);
        assert_int_equal(h.kv0[j], 100 + j);
    }
    assert_int_equal(h.target_q0, 3); /* the last step: 1 + 2 drafts */
    assert_int_equal(h.target_draft0, 2);
    assert_int_equal(h.target_kv0, 100 + 29 + 2); /* 129 cached before it: 100 + 28 + 1 */
    serve_result_fini(&r);
}

/* No draft accepted: every step emits one token, as without drafts (31 decode
 * steps after the prefill), each verifying min(3, tokens to go - 1) drafts:
 * 28 x 3 + 2 + 1 = 87 drafts over 30 steps (the last token alone is a plain
 * decode); the rejected drafts' KV is dropped, so each step's kv is the 100 +
 * g cached tokens plus its 1 + d. */
static void test_spec_none_accepted(void **state)
{
    (void)state;
    struct serve_cfg c = cfg(0.0);
    struct by_hand h = {0};
    struct serve_result r;
    assert_int_equal(run(&c, &h, &r), 0);
    assert_int_equal(r.steps, 32);
    assert_int_equal(r.req[0].generated, 32);
    assert_int_equal(r.itl_n, 31);
    assert_int_equal(r.spec_verifies, 30);
    assert_int_equal(r.spec_drafts, 87);
    assert_int_equal(r.spec_accepted, 0);
    assert_int_equal(h.target_q0, 1); /* the last step: a plain decode over 131 */
    assert_int_equal(h.target_draft0, 0);
    assert_int_equal(h.target_kv0, 131);
    /* the peak KV: 131 tokens in pages of 16 = 9 pages */
    assert_int_equal(r.kv_peak_pages, 9);
    serve_result_fini(&r);
}

/* The acceptance draws: each draft accepted with probability a until the
 * first rejection, so E[accepted] = a + a^2 + ... + a^k; a = 0.6, k = 4:
 * 0.6 + 0.36 + 0.216 + 0.1296 = 1.3056 (the mean tokens a step,
 * (1 - a^(k+1)) / (1 - a) = 2.3056, one more). Over 100,000 draws the mean's
 * standard error is below 0.004: within 0.02. Fixed by the seed and place. */
static void test_spec_acceptance_draws(void **state)
{
    (void)state;
    struct serve_cfg c = cfg(0.6);
    double sum = 0;
    int64_t none = 0;
    for (int64_t i = 0; i < 100000; i++) {
        int64_t a = serve_spec_accepted(&c, i % 1000, i / 1000, 4);
        assert_true(a >= 0 && a <= 4);
        sum += (double)a;
        none += a == 0;
    }
    assert_float_equal(sum / 100000, 1.3056, 0.02);
    assert_float_equal((double)none / 100000, 0.4, 0.01); /* the first draft rejected */
    assert_int_equal(serve_spec_accepted(&c, 7, 3, 4), serve_spec_accepted(&c, 7, 3, 4));
    c.spec_acceptance = 1;
    assert_int_equal(serve_spec_accepted(&c, 7, 3, 4), 4);
    c.spec_acceptance = 0;
    assert_int_equal(serve_spec_accepted(&c, 7, 3, 4), 0);
}

/* With a = 0.6 and 3 drafts, 64 requests of 300 output tokens at concurrency
 * 8: the tokens a verifying step emits average (1 - 0.6^4) / 0.4 = 2.176
 * (within 3 %: thousands of verifies); every output token is emitted. */
static void test_spec_mean_acceptance_length(void **state)
{
    (void)state;
    struct serve_cfg c = cfg(0.6);
    c.count = 64, c.concurrency = 8, c.output_len = 300;
    struct by_hand h = {0};
    struct serve_result r;
    assert_int_equal(run(&c, &h, &r), 0);
    assert_int_equal(r.completed, 64);
    int64_t out = 0;
    for (int64_t i = 0; i < r.count; i++)
        out += r.req[i].generated;
    assert_int_equal(out, 64 * 300);
    double len = 1 + (double)r.spec_accepted / (double)r.spec_verifies;
    assert_float_equal(len, 2.176, 0.065);
    serve_result_fini(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_all_accepted),
        cmocka_unit_test(test_spec_none_accepted),
        cmocka_unit_test(test_spec_acceptance_draws),
        cmocka_unit_test(test_spec_mean_acceptance_length),
    };
    return cmocka_run_group_tests_name("serve_spec", tests, NULL, NULL);
}
