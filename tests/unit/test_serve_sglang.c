/* tests/unit/test_serve_sglang.c -- scheduler: sglang (serving/serve.c): SGLang's
 * prefill-first scheduler, with a step price by hand: 1 ms plus 1 us per new
 * token, a host overhead of 2 ms not overlapped, so that every figure below is
 * derived on paper. Four requests of 100 tokens and 3 outputs arrive together;
 * pages of 16 tokens (a prompt counts 112 page-rounded tokens). */
#include "test_util.h"

#include "serving/serve.h"

static double price_by_hand(void *ctx, const struct serve_batch *b)
{
    (void)ctx;
    return 1e-3 + 1e-6 * (double)b->tokens;
}

static struct serve_cfg cfg(void)
{
    return (struct serve_cfg){.max_num_seqs = 8, .max_num_batched_tokens = 256, .page_size = 16,
                              .max_model_len = 4096, .hbm_fraction = 0.9,
                              .chunked_prefill = true, .step_overhead_s = 2e-3,
                              .sglang = true, .chunked_prefill_size = 256,
                              .max_prefill_tokens = 16384, .buckets_per_octave = 4,
                              .count = 4, .concurrency = 4, .input_len = 100, .output_len = 3,
                              .seed = 1, .kv_pages = 1000};
}

static void run(const struct serve_cfg *c, struct serve_result *r, int64_t steps)
{
    assert_int_equal(serve_simulate(c, price_by_hand, NULL, r), 0);
    assert_int_equal(r->steps, steps);
    assert_int_equal(r->completed, 4);
}

/* chunked_prefill_size 256: step 1 a prefill batch of r0 (112 of the budget),
 * r1 (112: 32 left) and r2's first 32 tokens (its 112 exceed the 32 left: cut
 * at whole pages, nothing after it): 232 tokens, 3.232 ms; step 2 r2's last 68
 * tokens (80 paged: 176 left) and r3 whole: 168 tokens, 6.400 ms; no request
 * waits: decode steps over all 4 (3.004 ms each: 9.404, 12.408, all done).
 * TTFT 3.232, 3.232, 6.400, 6.400 ms; r0 waited for the prefills before its
 * first decode (ITL 6.172 ms). vLLM's fcfs with a 512-token budget would
 * prefill all four in one step (3.4 ms each). */
static void test_sglang_prefill_first(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    struct serve_result r;
    run(&c, &r, 4);
    static const int64_t tokens[4] = {232, 168, 4, 4};
    static const int32_t decodes[4] = {0, 0, 4, 4};
    for (int k = 0; k < 4; k++) {
        assert_int_equal(r.step[k].tokens, tokens[k]);
        assert_int_equal(r.step[k].decodes, decodes[k]);
    }
    static const double ttft[4] = {3.232e-3, 3.232e-3, 6.4e-3, 6.4e-3};
    for (int i = 0; i < 4; i++) {
        assert_float_equal(r.req[i].first_s - r.req[i].arrival_s, ttft[i], 1e-12);
        assert_float_equal(r.req[i].finish_s, 12.408e-3, 1e-12);
    }
    serve_result_fini(&r);
}

/* enable_mixed_chunk: step 1 as above (no decodes yet); step 2's budgets lose
 * the 2 running decodes (254 left): r2's 68 (80 paged: 174 left), r3 whole,
 * plus the decodes of r0 and r1: 170 tokens, 3.170 ms (6.402); a decode step
 * over all 4 (9.406: r0, r1 done); one over r2, r3 (3.002: 12.408). */
static void test_sglang_mixed_chunk(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.mixed_chunk = true;
    struct serve_result r;
    run(&c, &r, 4);
    static const int64_t tokens[4] = {232, 170, 4, 2};
    static const int32_t decodes[4] = {0, 2, 4, 2};
    for (int k = 0; k < 4; k++) {
        assert_int_equal(r.step[k].tokens, tokens[k]);
        assert_int_equal(r.step[k].decodes, decodes[k]);
    }
    assert_float_equal(r.req[0].first_s, 3.232e-3, 1e-12);
    assert_float_equal(r.req[2].first_s, 6.402e-3, 1e-12);
    assert_float_equal(r.req[0].finish_s, 9.406e-3, 1e-12);
    assert_float_equal(r.req[3].finish_s, 12.408e-3, 1e-12);
    serve_result_fini(&r);
}

/* Without chunking, max_prefill_tokens 200: r0 joins the empty batch (112 of
 * 200: 88 left); r1's 112 reach the 88 left: it waits. Each prompt alone, 3.1
 * ms a step (TTFT 3.1, 6.2, 9.3, 12.4 ms), then two decode steps over all 4
 * (15.404, 18.408). */
static void test_sglang_max_prefill_tokens(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.chunked_prefill = false, c.max_prefill_tokens = 200;
    struct serve_result r;
    run(&c, &r, 6);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(r.step[i].tokens, 100);
        assert_float_equal(r.req[i].first_s, 3.1e-3 * (i + 1), 1e-12);
        assert_float_equal(r.req[i].finish_s, 18.408e-3, 1e-12);
    }
    serve_result_fini(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sglang_prefill_first),
        cmocka_unit_test(test_sglang_mixed_chunk),
        cmocka_unit_test(test_sglang_max_prefill_tokens),
    };
    return cmocka_run_group_tests_name("serve_sglang", tests, NULL, NULL);
}
