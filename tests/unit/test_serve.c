/* tests/unit/test_serve.c -- the serving engine loop (serving/serve.h) with
 * a step price by hand: 1 ms plus 1 us per new token, so that every figure
 * below is derived on paper. */
#include "test_util.h"

#include "serving/serve.h"
#include "serving/serve_traffic.h"

#include <math.h>

static double price_by_hand(void *ctx, const struct serve_batch *b)
{
    int *calls = ctx;
    ++*calls;
    return 1e-3 + 1e-6 * (double)b->tokens;
}

static struct serve_cfg cfg(void)
{
    return (struct serve_cfg){.max_num_seqs = 8, .max_num_batched_tokens = 512, .page_size = 16,
                              .max_model_len = 4096, .hbm_fraction = 0.9,
                              .chunked_prefill = true, .step_overhead_s = 2e-3,
                              .buckets_per_octave = 4, .count = 1, .concurrency = 1,
                              .input_len = 100, .output_len = 1, .seed = 1, .kv_pages = 1000};
}

/* One request of 100 tokens, one output token: one step of 100 tokens, TTFT =
 * 2 ms overhead + 1 ms + 100 us = 3.1 ms. */
static void test_serve_single_request_ttft(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    struct serve_result r;
    int calls = 0;
    assert_int_equal(serve_simulate(&c, price_by_hand, &calls, &r), 0);
    assert_int_equal(r.steps, 1);
    assert_int_equal(r.completed, 1);
    assert_float_equal(r.req[0].first_s - r.req[0].arrival_s, 3.1e-3, 1e-12);
    assert_float_equal(r.duration_s, 3.1e-3, 1e-12);
    serve_result_fini(&r);
}

/* Closed loop at concurrency 1, 5 output tokens: a prefill step (3.1 ms) then
 * 4 decode steps of one token (2 ms + 1.001 ms): TPOT 3.001 ms; the second
 * request arrives when the first finishes and sees the same. 10 steps. */
static void test_serve_closed_loop_tpot(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.count = 2, c.output_len = 5;
    struct serve_result r;
    int calls = 0;
    assert_int_equal(serve_simulate(&c, price_by_hand, &calls, &r), 0);
    assert_int_equal(r.steps, 10);
    for (int i = 0; i < 2; i++) {
        const struct serve_req *q = &r.req[i];
        assert_float_equal(q->first_s - q->arrival_s, 3.1e-3, 1e-12);
        assert_float_equal((q->finish_s - q->first_s) / 4, 3.001e-3, 1e-12);
    }
    assert_float_equal(r.req[1].arrival_s, r.req[0].finish_s, 0);
    assert_float_equal(r.itl_sum / (double)r.itl_n, 3.001e-3, 1e-12);
    serve_result_fini(&r);
}

/* A 1000-token prompt within a 512-token budget: chunks of 512 and 488, TTFT
 * = (2 + 1.512) + (2 + 1.488) = 7 ms. Without chunking it is refused by the
 * loader (input_len above the budget), so only the chunked case runs here. */
static void test_serve_chunked_prefill(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.input_len = 1000;
    struct serve_result r;
    int calls = 0;
    assert_int_equal(serve_simulate(&c, price_by_hand, &calls, &r), 0);
    assert_int_equal(r.steps, 2);
    assert_int_equal(r.step[0].tokens, 512);
    assert_int_equal(r.step[1].tokens, 488);
    assert_float_equal(r.req[0].first_s, 7e-3, 1e-12);
    serve_result_fini(&r);
}

/* Decodes and a prefill chunk share a step: two requests of 100 + 3 tokens at
 * concurrency 2 both prefill in step 0 (200 tokens), then decode together. */
static void test_serve_continuous_batching(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.count = 3, c.concurrency = 2, c.output_len = 3;
    struct serve_result r;
    int calls = 0;
    assert_int_equal(serve_simulate(&c, price_by_hand, &calls, &r), 0);
    assert_int_equal(r.step[0].seqs, 2);
    assert_int_equal(r.step[0].tokens, 200);
    assert_int_equal(r.step[1].decodes, 2);
    /* request 2 arrives when 0 and 1 finish (step 2's end) and runs alone */
    assert_float_equal(r.req[2].arrival_s, r.req[0].finish_s, 0);
    assert_int_equal(r.completed, 3);
    assert_int_equal(r.steps, 6);
    serve_result_fini(&r);
}

/* A KV cache of 10 pages of 16 tokens: two requests of 64 + 64 tokens need 8
 * pages each at their end, so the later one is preempted and recomputed, and
 * both finish. */
static void test_serve_preemption(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.count = 2, c.concurrency = 2, c.input_len = 64, c.output_len = 64, c.kv_pages = 10;
    struct serve_result r;
    int calls = 0;
    assert_int_equal(serve_simulate(&c, price_by_hand, &calls, &r), 0);
    assert_int_equal(r.completed, 2);
    assert_true(r.preemptions >= 1);
    assert_true(r.req[1].preemptions >= 1);
    assert_int_equal(r.req[0].preemptions, 0);
    assert_true(r.kv_peak_pages <= 10);
    serve_result_fini(&r);
}

/* Open loop: 8 sequences of 10 output tokens at about 3 ms a step serve
 * about 8 / 30 ms = 267 requests/s. 1000/s overloads it (TTFT grows), 20/s
 * does not. */
/* Without chunked prefill a prompt is admitted whole -- but a preempted
 * request recomputes its prompt and the tokens it generated, which can be more
 * than the budget: it is then chunked (else it would never run again). 500 +
 * 40 tokens, a budget of 512, 66 pages of 16: request 1 is admitted in step 1
 * (511 tokens left), request 0 needs its 34th page at 529 cached tokens, so
 * request 1 (the latest) is preempted with 28 tokens generated: 528 to
 * recompute, above 512. Its first chunk (511 tokens beside request 0's
 * decode) takes pages request 0 needs two steps later, so it is preempted
 * again until request 0 finishes (vLLM admits by the chunk's pages alike). */
static void test_serve_recompute_above_budget(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.count = 2, c.concurrency = 2, c.input_len = 500, c.output_len = 40, c.kv_pages = 66;
    c.chunked_prefill = false;
    struct serve_result r;
    int calls = 0;
    assert_int_equal(serve_simulate(&c, price_by_hand, &calls, &r), 0);
    assert_int_equal(r.completed, 2);
    assert_int_equal(r.req[0].preemptions, 0);
    assert_true(r.req[1].preemptions >= 1);
    assert_true(r.req[1].finish_s > r.req[0].finish_s);
    serve_result_fini(&r);
}

/* scheduler: jetstream (JetStream's orchestrator): each prefill one request
 * alone, before any generate step while a request waits and a slot is free;
 * a generate step over the running slots. 2 slots, 3 requests of 100 tokens
 * and 3 outputs at once: prefill r0 (2 + 1.1 = 3.1 ms), prefill r1 (6.2 ms),
 * r2 waits for a slot: two generate steps of 2 tokens (3.002 ms each: 9.202,
 * 12.204, r0 and r1 done), prefill r2 (15.304), two generate steps of 1 token
 * (18.305, 21.306). The default scheduler would prefill r0 and r1 in one step. */
static void test_serve_jetstream_prefill_alone(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.jetstream = true, c.chunked_prefill = false;
    c.max_num_seqs = 2, c.count = 3, c.concurrency = 3, c.output_len = 3;
    struct serve_result r;
    int calls = 0;
    assert_int_equal(serve_simulate(&c, price_by_hand, &calls, &r), 0);
    assert_int_equal(r.steps, 7);
    static const int32_t decodes[7] = {0, 0, 2, 2, 0, 1, 1};
    for (int k = 0; k < 7; k++) {
        assert_int_equal(r.step[k].decodes, decodes[k]);
        assert_int_equal(r.step[k].seqs, decodes[k] ? decodes[k] : 1);
    }
    assert_float_equal(r.req[0].first_s, 3.1e-3, 1e-12);
    assert_float_equal(r.req[1].first_s, 6.2e-3, 1e-12);
    assert_float_equal(r.req[1].finish_s, 12.204e-3, 1e-12);
    assert_float_equal(r.req[2].first_s, 15.304e-3, 1e-12);
    assert_float_equal(r.duration_s, 21.306e-3, 1e-12);
    serve_result_fini(&r);
}

/* async_scheduling (JetStream's generate thread dispatches the next step while
 * the device runs the last): the same 7 steps at a host overhead of 0.5 ms.
 * The first step pays it and its device time (0.5 + 1.1 = 1.6 ms); every
 * later step follows the last without a pause and takes the longer of the
 * two: prefill r1 1.1 ms (2.7), generate steps of 2 tokens 1.002 ms (3.702,
 * 4.704: r0 and r1 done), prefill r2 1.1 (5.804), generate steps of 1 token
 * 1.001 (6.805, 7.806). Without it: 1.6 + 1.6 + 2 x 1.502 + 1.6 + 2 x 1.501
 * = 10.806 ms. */
static void test_serve_async_scheduling(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.jetstream = true, c.chunked_prefill = false, c.step_overhead_s = 0.5e-3;
    c.max_num_seqs = 2, c.count = 3, c.concurrency = 3, c.output_len = 3;
    struct serve_result r;
    int calls = 0;
    assert_int_equal(serve_simulate(&c, price_by_hand, &calls, &r), 0);
    assert_float_equal(r.duration_s, 10.806e-3, 1e-12);
    serve_result_fini(&r);
    c.async_scheduling = true;
    assert_int_equal(serve_simulate(&c, price_by_hand, &calls, &r), 0);
    assert_int_equal(r.steps, 7);
    assert_float_equal(r.req[0].first_s, 1.6e-3, 1e-12);
    assert_float_equal(r.req[1].first_s, 2.7e-3, 1e-12);
    assert_float_equal(r.req[1].finish_s, 4.704e-3, 1e-12);
    assert_float_equal(r.req[2].first_s, 5.804e-3, 1e-12);
    assert_float_equal(r.duration_s, 7.806e-3, 1e-12);
    serve_result_fini(&r);
}

static void test_serve_overload(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.concurrency = 0, c.count = 400, c.output_len = 10, c.rate_per_s = 1000;
    struct serve_result r;
    int calls = 0;
    assert_int_equal(serve_simulate(&c, price_by_hand, &calls, &r), 0);
    assert_true(r.overloaded);
    double first = r.req[0].first_s - r.req[0].arrival_s;
    double last = r.req[399].first_s - r.req[399].arrival_s;
    assert_true(last > 10 * first);
    serve_result_fini(&r);
    c.rate_per_s = 20;
    assert_int_equal(serve_simulate(&c, price_by_hand, &calls, &r), 0);
    assert_false(r.overloaded);
    serve_result_fini(&r);
}

static void test_serve_dist(void **state)
{
    (void)state;
    double v[] = {4, 1, 3, 2, 5};
    struct serve_dist d;
    serve_dist_of(v, 5, &d);
    assert_float_equal(d.mean, 3, 1e-12);
    assert_float_equal(d.p50, 3, 1e-12);
    assert_float_equal(d.p90, 4.6, 1e-12); /* rank 3.6: 4 + 0.6 x (5 - 4) */
}

/* The mean and the coefficient of variation of 'n' draws of 'f'. */
static void moments(double (*f)(uint64_t *, const void *), const void *arg, int n, double *mean,
                    double *cv)
{
    uint64_t s = 42;
    double a = 0, b = 0;
    for (int i = 0; i < n; i++) {
        double x = f(&s, arg);
        a += x, b += x * x;
    }
    *mean = a / n;
    *cv = sqrt(b / n - *mean * *mean) / *mean;
}

static double gamma_draw(uint64_t *s, const void *k)
{
    return serve_gamma(s, *(const double *)k);
}

static double len_draw(uint64_t *s, const void *l)
{
    return (double)serve_len_draw(l, s);
}

/* Gamma gaps of shape k have mean k and cv 1/sqrt(k) (k = 0.25: cv 2, the
 * k < 1 branch; k = 4: cv 0.5); 200,000 draws: within 1 % and 2 %. Lengths:
 * uniform in [100, 300] has mean 200 and stays in range; a lognormal of mean
 * 500, sigma 0.5, kept in [1, 100000] (the clip is 10 sigma away) has mean
 * 500 and cv sqrt(exp(0.25) - 1) = 0.5329. */
static void test_serve_traffic_draws(void **state)
{
    (void)state;
    double m, cv;
    for (int i = 0; i < 2; i++) {
        double k = i ? 4 : 0.25;
        moments(gamma_draw, &k, 200000, &m, &cv);
        assert_float_equal(m, k, 0.01 * k);
        assert_float_equal(cv, 1 / sqrt(k), 0.02 / sqrt(k));
    }
    struct serve_len u = {SERVE_LEN_UNIFORM, 100, 300, 0, 0};
    moments(len_draw, &u, 200000, &m, &cv);
    assert_float_equal(m, 200, 1);
    uint64_t s = 7;
    for (int i = 0; i < 10000; i++) {
        int64_t v = serve_len_draw(&u, &s);
        assert_true(v >= 100 && v <= 300);
    }
    struct serve_len ln = {SERVE_LEN_LOGNORMAL, 1, 100000, 500, 0.5};
    moments(len_draw, &ln, 200000, &m, &cv);
    assert_float_equal(m, 500, 5);
    assert_float_equal(cv, sqrt(exp(0.25) - 1), 0.01);
}

/* Gamma arrivals at 50/s with cv 3 through the engine: the gaps' mean is
 * 20 ms and their cv 3 (2,000 requests: within 10 %); Poisson (cv 0) keeps
 * the arrivals it had (the same stream). */
static void test_serve_gamma_arrivals(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.concurrency = 0, c.count = 2000, c.rate_per_s = 50, c.arrival_cv = 3;
    struct serve_traffic g;
    serve_traffic_start(&g, &c);
    double prev = 0, a = 0, b = 0;
    for (int i = 0; i < 2000; i++) {
        double t;
        int64_t in, out;
        serve_traffic_next(&g, &t, &in, &out);
        assert_int_equal(in, 100);
        assert_int_equal(out, 1);
        if (i)
            a += t - prev, b += (t - prev) * (t - prev);
        prev = t;
    }
    double mean = a / 1999, cv = sqrt(b / 1999 - mean * mean) / mean;
    assert_float_equal(mean, 0.02, 0.002);
    assert_float_equal(cv, 3, 0.3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serve_single_request_ttft),
        cmocka_unit_test(test_serve_closed_loop_tpot),
        cmocka_unit_test(test_serve_chunked_prefill),
        cmocka_unit_test(test_serve_continuous_batching),
        cmocka_unit_test(test_serve_preemption),
        cmocka_unit_test(test_serve_recompute_above_budget),
        cmocka_unit_test(test_serve_overload),
        cmocka_unit_test(test_serve_jetstream_prefill_alone),
        cmocka_unit_test(test_serve_async_scheduling),
        cmocka_unit_test(test_serve_dist),
        cmocka_unit_test(test_serve_traffic_draws),
        cmocka_unit_test(test_serve_gamma_arrivals),
    };
    return cmocka_run_group_tests_name("serve", tests, NULL, NULL);
}
