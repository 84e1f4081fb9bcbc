/* tests/unit/test_serve_disagg.c -- prefill/decode disaggregation
 * (serving/serve_disagg.h) with a step price by hand, as tests/unit/test_serve.c:
 * 1 ms plus 1 us per new token, 2 ms of host overhead a step (a prefill of 100
 * tokens 3.1 ms, a decode of one sequence 3.001 ms), and a KV transfer by hand:
 * 1000 B a token at 1e8 B/s after 0.5 ms (100 tokens: 1.5 ms). */
#include "test_util.h"

#include "serving/serve.h"
#include "serving/serve_disagg.h"

static double price_by_hand(void *ctx, const struct serve_batch *b)
{
    (void)ctx;
    return 1e-3 + 1e-6 * (double)b->tokens;
}

static struct serve_cfg cfg(void)
{
    return (struct serve_cfg){.max_num_seqs = 8, .max_num_batched_tokens = 512, .page_size = 16,
                              .max_model_len = 4096, .hbm_fraction = 0.9,
                              .chunked_prefill = true, .step_overhead_s = 2e-3,
                              .buckets_per_octave = 4, .count = 1, .concurrency = 1,
                              .input_len = 100, .output_len = 4, .seed = 1, .kv_pages = 1000,
                              .replicas = 2, .prefill_engines = 1, .decode_engines = 1,
                              .kv_bytes_per_token = 1000, .kv_transfer_Bps = 1e8,
                              .kv_transfer_lat_s = 0.5e-3};
}

static void test_kv_transfer_s(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    assert_float_equal(serve_kv_transfer_s(&c, 100), 1.5e-3, 1e-15);
    assert_float_equal(serve_kv_transfer_s(&c, 1000), 10.5e-3, 1e-15);
}

/* One request of 100 + 4: its prefill on engine 0 ends at 3.1 ms, its KV
 * arrives 1.5 ms later, 4.6 ms (its first token: TTFT), then engine 1's three
 * decodes of 3.001 ms: done at 13.603 ms; ITLs 3.001 ms each. */
static void test_one_request(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    struct serve_result r;
    assert_int_equal(serve_disagg_simulate(&c, price_by_hand, NULL, &r), 0);
    assert_int_equal(r.completed, 1);
    assert_int_equal(r.replicas, 2);
    assert_int_equal(r.prefill_engines, 1);
    assert_float_equal(r.req[0].kv_transfer_s, 1.5e-3, 1e-12);
    assert_float_equal(r.req[0].first_s, 4.6e-3, 1e-12);
    assert_float_equal(r.req[0].finish_s, 13.603e-3, 1e-12);
    assert_int_equal(r.req[0].replica, 1);
    assert_int_equal(r.steps, 4);
    assert_int_equal(r.step[0].replica, 0);
    assert_int_equal(r.step[0].tokens, 100);
    for (int s = 1; s < 4; s++) {
        assert_int_equal(r.step[s].replica, 1);
        assert_int_equal(r.step[s].tokens, 1);
        assert_float_equal(r.step[s].start_s, 4.6e-3 + (s - 1) * 3.001e-3, 1e-12);
    }
    assert_int_equal(r.itl_n, 3);
    assert_float_equal(r.itl_sum, 3 * 3.001e-3, 1e-12);
    assert_int_equal(r.per_replica[0].requests, 1);
    assert_int_equal(r.per_replica[1].requests, 1);
    serve_result_fini(&r);
}

/* Two requests at 0 share one prefill step (200 tokens: 3.2 ms); their KV
 * caches leave one after the other on engine 0's link: 3.2-4.7 ms, 4.7-6.2 ms
 * (1.5 and 3 ms after the prefill). The decode engine's first step (request 0,
 * 4.7-7.701 ms) is in flight when request 1's KV arrives: it joins the next. */
static void test_link_one_at_a_time(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.count = 2, c.concurrency = 2, c.output_len = 3;
    struct serve_result r;
    assert_int_equal(serve_disagg_simulate(&c, price_by_hand, NULL, &r), 0);
    assert_float_equal(r.req[0].kv_transfer_s, 1.5e-3, 1e-12);
    assert_float_equal(r.req[1].kv_transfer_s, 3.0e-3, 1e-12);
    assert_float_equal(r.req[0].first_s, 4.7e-3, 1e-12);
    assert_float_equal(r.req[1].first_s, 6.2e-3, 1e-12);
    assert_float_equal(r.step[1].start_s, 4.7e-3, 1e-12);
    assert_int_equal(r.step[1].seqs, 1);
    assert_float_equal(r.step[2].start_s, 7.701e-3, 1e-12);
    assert_int_equal(r.step[2].seqs, 2);
    serve_result_fini(&r);
}

/* One output token: done at its prefill (3.1 ms), nothing sent; a closed loop
 * at concurrency 1 releases the next request then. */
static void test_one_token_no_transfer(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.count = 2, c.output_len = 1;
    struct serve_result r;
    assert_int_equal(serve_disagg_simulate(&c, price_by_hand, NULL, &r), 0);
    assert_int_equal(r.completed, 2);
    assert_float_equal(r.req[0].first_s, 3.1e-3, 1e-12);
    assert_float_equal(r.req[0].finish_s, 3.1e-3, 1e-12);
    assert_float_equal(r.req[0].kv_transfer_s, 0, 0);
    assert_float_equal(r.req[1].arrival_s, 3.1e-3, 1e-12);
    assert_float_equal(r.req[1].finish_s, 6.2e-3, 1e-12);
    assert_int_equal(r.steps, 2);
    serve_result_fini(&r);
}

/* A stream of long prompts on 2 prefill and 2 decode engines in a closed loop:
 * the decode engines' steps are decodes only (every sequence one token), the
 * prefill engines' none; a closed loop's next request arrives as one finishes. */
static void test_roles(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.replicas = 4, c.prefill_engines = 2, c.decode_engines = 2;
    c.count = 40, c.concurrency = 6, c.input_len = 700, c.output_len = 20;
    struct serve_result r;
    assert_int_equal(serve_disagg_simulate(&c, price_by_hand, NULL, &r), 0);
    assert_int_equal(r.completed, 40);
    for (int64_t s = 0; s < r.steps; s++) {
        const struct serve_step *st = &r.step[s];
        if (st->replica >= 2)
            assert_true(st->decodes == st->seqs && st->tokens == st->seqs);
        else
            assert_int_equal(st->decodes, 0);
        assert_true(s == 0 || st->start_s >= r.step[s - 1].start_s);
    }
    int64_t on[4] = {0};
    for (int64_t i = 0; i < r.count; i++) {
        assert_true(r.req[i].replica >= 2 && r.req[i].replica < 4);
        on[r.req[i].replica]++;
        assert_true(r.req[i].first_s >= r.req[i].arrival_s + 1.5e-3 + 7e-3); /* 2 chunks + KV */
    }
    assert_int_equal(on[2] + on[3], 40);
    assert_int_equal(r.per_replica[0].requests + r.per_replica[1].requests, 40);
    assert_int_equal(r.itl_n, 40 * 19);
    serve_result_fini(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kv_transfer_s),
        cmocka_unit_test(test_one_request),
        cmocka_unit_test(test_link_one_at_a_time),
        cmocka_unit_test(test_one_token_no_transfer),
        cmocka_unit_test(test_roles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
