/* tests/unit/test_serve_fleet.c -- replicas behind a router
 * (serving/serve_fleet.h) with a step price by hand, as tests/unit/test_serve.c:
 * 1 ms plus 1 us per new token, 2 ms of host overhead a step. A prefill of
 * 100 tokens is then 3.1 ms, a decode of one sequence 3.001 ms. */
#include "test_util.h"

#include "serving/serve.h"
#include "serving/serve_fleet.h"

#include <math.h>

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
                              .input_len = 100, .output_len = 1, .seed = 1, .kv_pages = 1000,
                              .replicas = 2};
}

/* round_robin: 0, 1, 2, 0, ... whatever the loads. */
static void test_route_round_robin(void **state)
{
    (void)state;
    int64_t out[3] = {0, 500, 7}, next = 0;
    int want[] = {0, 1, 2, 0, 1};
    for (int i = 0; i < 5; i++)
        assert_int_equal(serve_route(SERVE_ROUTER_ROUND_ROBIN, out, 3, &next), want[i]);
}

/* least_outstanding_tokens: the fewest tokens left; a tie goes to the lowest index. */
static void test_route_least_outstanding(void **state)
{
    (void)state;
    int64_t next = 0;
    int64_t a[3] = {5, 3, 3}, b[2] = {0, 0}, c[4] = {9, 8, 7, 6};
    assert_int_equal(serve_route(SERVE_ROUTER_LEAST_OUTSTANDING_TOKENS, a, 3, &next), 1);
    assert_int_equal(serve_route(SERVE_ROUTER_LEAST_OUTSTANDING_TOKENS, b, 2, &next), 0);
    assert_int_equal(serve_route(SERVE_ROUTER_LEAST_OUTSTANDING_TOKENS, c, 4, &next), 3);
    assert_int_equal(next, 0); /* untouched */
}

/* One replica driven by the fleet's events is the engine itself: an open loop
 * with queueing and preemption (a KV cache of 40 pages of 16 tokens: two
 * requests of 300 + 40 tokens fill it), and a closed loop at concurrency 3;
 * every request and step the same. */
static void one_replica_is_the_engine(int64_t concurrency)
{
    struct serve_cfg c = cfg();
    c.replicas = 1, c.count = 40, c.concurrency = concurrency, c.rate_per_s = 400;
    c.input_len = 300, c.output_len = 40, c.kv_pages = 40;
    struct serve_result a, b;
    assert_int_equal(serve_simulate(&c, price_by_hand, NULL, &a), 0);
    assert_int_equal(serve_fleet_simulate(&c, price_by_hand, NULL, &b), 0);
    assert_true(a.preemptions > 0);
    assert_int_equal(a.steps, b.steps);
    assert_int_equal(a.preemptions, b.preemptions);
    for (int64_t i = 0; i < a.count; i++) {
        assert_float_equal(a.req[i].first_s, b.req[i].first_s, 0);
        assert_float_equal(a.req[i].finish_s, b.req[i].finish_s, 0);
    }
    for (int64_t i = 0; i < a.steps; i++) {
        assert_float_equal(a.step[i].start_s, b.step[i].start_s, 0);
        assert_int_equal(a.step[i].tokens, b.step[i].tokens);
    }
    assert_int_equal(a.max_waiting, b.max_waiting);
    serve_result_fini(&a);
    serve_result_fini(&b);
}

static void test_fleet_one_replica_is_the_engine(void **state)
{
    (void)state;
    one_replica_is_the_engine(0);
    one_replica_is_the_engine(3);
}

/* Two replicas, a closed loop at concurrency 2 of 4 requests of 5 output tokens:
 * each replica serves one request at a time as one engine at concurrency 1 does
 * (TTFT 3.1 ms, TPOT 3.001 ms, 5 steps a request); round robin gives requests
 * 0 and 1 to replicas 0 and 1, and the follow-ups released as 0 and 1 finish
 * (both at 3.1 + 4 x 3.001 = 15.104 ms) go to 0 and 1 again. The run: 30.208 ms. */
static void test_fleet_closed_loop(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.count = 4, c.concurrency = 2, c.output_len = 5;
    struct serve_result r;
    assert_int_equal(serve_fleet_simulate(&c, price_by_hand, NULL, &r), 0);
    assert_int_equal(r.steps, 20);
    assert_int_equal(r.completed, 4);
    for (int i = 0; i < 4; i++) {
        const struct serve_req *q = &r.req[i];
        assert_int_equal(q->replica, i % 2);
        assert_float_equal(q->first_s - q->arrival_s, 3.1e-3, 1e-12);
        assert_float_equal((q->finish_s - q->first_s) / 4, 3.001e-3, 1e-12);
    }
    assert_float_equal(r.req[2].arrival_s, 15.104e-3, 1e-12);
    assert_float_equal(r.duration_s, 30.208e-3, 1e-12);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(r.per_replica[k].requests, 2);
        assert_int_equal(r.per_replica[k].steps, 10);
    }
    /* the steps in time order: the two replicas' steps start together */
    for (int64_t i = 0; i < r.steps; i++) {
        assert_int_equal(r.step[i].replica, i % 2);
        assert_float_equal(r.step[i].start_s, r.step[i - i % 2].start_s, 0);
    }
    serve_result_fini(&r);
}

/* A trace: a long request (100 in, 50 out) and a short one (100 in, 1 out) at 0, a
 * short one at 10 ms. Both policies send the first two to replicas 0 and 1 (at
 * 0 the long one's 150 tokens are on replica 0). The third: round robin sends it
 * to replica 0, busy with the long request's decodes (steps end at 3.1, 6.101,
 * 9.102, 12.103 ms): it joins at 12.103 ms in a step of 1 + 100 tokens
 * (3.101 ms), first token at 15.204 ms, TTFT 5.204 ms; least outstanding tokens
 * sends it to replica 1 (idle since 3.1 ms: 0 tokens left against the long
 * request's 47), TTFT one prefill, 3.1 ms. */
static void test_fleet_policies_differ(void **state)
{
    (void)state;
    double at[] = {0, 0, 10e-3};
    int64_t in[] = {100, 100, 100}, out[] = {50, 1, 1};
    int want_rr[] = {0, 1, 0}, want_lot[] = {0, 1, 1};
    double ttft_rr = 5.204e-3, ttft_lot = 3.1e-3;
    for (int p = 0; p < 2; p++) {
        struct serve_cfg c = cfg();
        c.count = 3, c.concurrency = 0;
        c.trace = (struct serve_trace){.n = 3, .arrival_s = at, .in = in, .out = out};
        c.router = p ? SERVE_ROUTER_LEAST_OUTSTANDING_TOKENS : SERVE_ROUTER_ROUND_ROBIN;
        struct serve_result r;
        assert_int_equal(serve_fleet_simulate(&c, price_by_hand, NULL, &r), 0);
        for (int i = 0; i < 3; i++)
            assert_int_equal(r.req[i].replica, (p ? want_lot : want_rr)[i]);
        assert_float_equal(r.req[2].first_s - r.req[2].arrival_s, p ? ttft_lot : ttft_rr, 1e-12);
        assert_float_equal(r.req[1].first_s, 3.1e-3, 1e-12);
        serve_result_fini(&r);
    }
}

/* The router's view of one engine driven step by step: two requests of 100 + 3
 * tokens pushed (206 left); the first step prefills both (the view is as of the
 * last step's end: still 206 until it ends), then each has 2 tokens to come (4),
 * a decode each (2), the last decodes finish both (0). Time: 3 steps of 1 ms +
 * 1 us per token + 2 ms: 3.2, 3.002, 3.002 ms. */
static void test_eng_outstanding_tokens(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.count = 2, c.concurrency = 0, c.rate_per_s = 1, c.output_len = 3, c.replicas = 1;
    struct serve_result r = {.count = 2, .kv_pages = c.kv_pages};
    r.req = calloc(2, sizeof *r.req);
    serve_init_requests(&c, &r);
    int64_t released = 0;
    struct serve_eng e;
    serve_eng_init(&e, &c, &r, &released);
    serve_eng_push(&e, 0);
    serve_eng_push(&e, 1);
    assert_int_equal(e.outstanding, 206);
    int64_t after[] = {4, 2, 0};
    for (int s = 0; s < 3; s++) {
        assert_true(serve_eng_busy(&e));
        assert_int_equal(serve_eng_begin(&e, price_by_hand, NULL), 0);
        assert_int_equal(e.outstanding, s ? after[s - 1] : 206);
        serve_eng_end(&e);
        assert_int_equal(e.outstanding, after[s]);
    }
    assert_false(serve_eng_busy(&e));
    assert_int_equal(r.completed, 2);
    assert_float_equal(e.now, 3.2e-3 + 2 * 3.002e-3, 1e-12);
    serve_eng_fini(&e);
    serve_result_fini(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_route_round_robin),
        cmocka_unit_test(test_route_least_outstanding),
        cmocka_unit_test(test_fleet_one_replica_is_the_engine),
        cmocka_unit_test(test_fleet_closed_loop),
        cmocka_unit_test(test_fleet_policies_differ),
        cmocka_unit_test(test_eng_outstanding_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
