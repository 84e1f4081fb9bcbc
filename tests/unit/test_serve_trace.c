/* tests/unit/test_serve_trace.c -- a serving run's trace.json
 * (serving/serve_trace.h) from the engine loop with a step price by hand
 * (1 ms plus 1 us per new token, as tests/unit/test_serve.c): the spans,
 * the request tracks' nesting, the preempted spans and the cap. */
#include "test_util.h"

#include "base/diag.h"
#include "config/cfg.h"
#include "serving/serve.h"
#include "serving/serve_trace.h"

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
                              .input_len = 100, .output_len = 1, .seed = 1, .kv_pages = 1000};
}

/* What a trace holds, read back line by line (one event a line). */
#define MAX_IDS 16
#define MAX_DEPTH 8
struct seen {
    int x, b, e, counters, preempted;
    int depth[MAX_IDS];                     /* open spans per request id */
    char open[MAX_IDS][MAX_DEPTH][32];      /* their names, outermost first */
    double open_ts[MAX_IDS][MAX_DEPTH];
    bool bad_nesting;                       /* an end that is not the innermost open span's,
                                               or a child outside its parent */
    bool preempted_outside;                 /* a preempted span not in prefill or decode */
    double prefill_us[MAX_IDS];             /* the first prefill's length */
    char other[512];                        /* otherData */
};

static double num_after(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    return p ? atof(p + strlen(key)) : -1;
}

static void str_after(const char *line, const char *key, char *out, size_t n)
{
    const char *p = strstr(line, key);
    out[0] = '\0';
    if (!p)
        return;
    p += strlen(key);
    size_t k = 0;
    while (p[k] && p[k] != '"' && k + 1 < n)
        out[k] = p[k], k++;
    out[k] = '\0';
}

static void read_async(struct seen *s, const char *line, bool begin)
{
    int id = (int)num_after(line, "\"id\":");
    double ts = num_after(line, "\"ts\":");
    char name[32];
    str_after(line, "\"name\":\"", name, sizeof name);
    assert_true(id >= 0 && id < MAX_IDS);
    int *d = &s->depth[id];
    if (begin) {
        s->b++;
        assert_true(*d < MAX_DEPTH);
        if (*d > 0 && ts < s->open_ts[id][*d - 1])
            s->bad_nesting = true;
        if (!strcmp(name, "preempted") &&
            (*d < 2 || (strcmp(s->open[id][*d - 1], "prefill") &&
                        strcmp(s->open[id][*d - 1], "decode"))))
            s->preempted_outside = true;
        s->preempted += !strcmp(name, "preempted");
        snprintf(s->open[id][*d], sizeof s->open[id][*d], "%s", name);
        s->open_ts[id][(*d)++] = ts;
        return;
    }
    s->e++;
    if (*d == 0 || strcmp(s->open[id][*d - 1], name) || ts < s->open_ts[id][*d - 1]) {
        s->bad_nesting = true;
        return;
    }
    --*d;
    if (!strcmp(name, "prefill") && s->prefill_us[id] == 0)
        s->prefill_us[id] = ts - s->open_ts[id][*d];
}

static void read_trace(const char *path, struct seen *s)
{
    memset(s, 0, sizeof *s);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "\"ph\":\"X\""))
            s->x++;
        else if (strstr(line, "\"ph\":\"C\""))
            s->counters++;
        else if (strstr(line, "\"ph\":\"b\""))
            read_async(s, line, true);
        else if (strstr(line, "\"ph\":\"e\""))
            read_async(s, line, false);
        else if (strstr(line, "otherData"))
            snprintf(s->other, sizeof s->other, "%s", strstr(line, "otherData"));
    }
    fclose(f);
}

/* Runs the engine on 'c' and writes its trace with a cap of 'max' events. */
static void run_and_trace(struct serve_cfg *c, size_t max, struct serve_result *r,
                          struct seen *s, struct trace_stats *st)
{
    assert_int_equal(serve_simulate(c, price_by_hand, NULL, r), 0);
    char dir[64], path[96];
    assert_int_equal(test_tmpdir_make(dir, sizeof dir, "servetrace"), 0);
    snprintf(path, sizeof path, "%s/trace.json", dir);
    struct cfg_scenario sc;
    memset(&sc, 0, sizeof sc);
    char name[] = "demo";
    sc.name = name;
    snprintf(sc.chip.name, sizeof sc.chip.name, "test");
    sc.serve = c;
    struct serve_trace_opts o = {.level = TRACE_UNITS, .level_set = true, .max_events = max};
    struct diag *d = diag_new();
    assert_int_equal(serve_trace_write(path, &sc, r, &o, st, d), 0);
    diag_free(d);
    read_trace(path, s);
    test_tmpdir_remove(dir);
}

/* One request of 100 tokens, one output token: one step of 2 ms + 1.1 ms; the
 * request arrives at 0 into an idle engine (no queued phase) and prefills in
 * that step: its prefill is its TTFT, 3.1 ms = 3100 us. Events: 3 names, the
 * request and its prefill (4), the step (1), the 3 counters at 0 and the
 * running and KV ones falling to 0 at its end (5): 13. */
static void test_serve_trace_single_request(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    struct serve_result r;
    struct seen s;
    struct trace_stats st;
    run_and_trace(&c, 0, &r, &s, &st);
    assert_int_equal(s.x, 1);
    assert_int_equal(s.b, 2);
    assert_int_equal(s.e, 2);
    assert_false(s.bad_nesting);
    assert_float_equal(s.prefill_us[0], 3100, 1e-3);
    assert_int_equal(s.counters, 5);
    assert_int_equal(st.events, 13);
    assert_int_equal(st.dropped, 0);
    assert_null(strstr(s.other, "capped"));
    serve_result_fini(&r);
}

/* Three requests at concurrency 2, 3 output tokens (test_serve.c: requests 0
 * and 1 prefill together in step 0, request 2 arrives as they finish, 6
 * steps): 6 spans; each request's track opens and closes, request 0's with
 * prefill then decode (6 events: no queue). */
static void test_serve_trace_batching(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.count = 3, c.concurrency = 2, c.output_len = 3;
    struct serve_result r;
    struct seen s;
    struct trace_stats st;
    run_and_trace(&c, 0, &r, &s, &st);
    assert_int_equal(s.x, 6);
    assert_int_equal(s.b, 9); /* request, prefill, decode x 3 */
    assert_int_equal(s.e, 9);
    assert_false(s.bad_nesting);
    for (int i = 0; i < 3; i++)
        assert_int_equal(s.depth[i], 0);
    serve_result_fini(&r);
}

/* A KV cache of 10 pages (test_serve.c's preemption case): request 1 is
 * preempted and recomputed; the log holds each preemption, from a step's
 * start after it was first scheduled to a later step's start, and the trace
 * one "preempted" span for each, inside the prefill or the decode. */
static void test_serve_trace_preemption(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.count = 2, c.concurrency = 2, c.input_len = 64, c.output_len = 64, c.kv_pages = 10;
    struct serve_result r;
    struct seen s;
    struct trace_stats st;
    run_and_trace(&c, 0, &r, &s, &st);
    assert_true(r.preemptions >= 1);
    for (int64_t k = 0; k < r.preemptions; k++) {
        const struct serve_preempt *p = &r.preempt[k];
        assert_int_equal(p->req, 1);
        assert_true(p->t0_s >= r.req[1].sched_s && p->t1_s > p->t0_s);
        assert_true(p->t1_s < r.req[1].finish_s);
        assert_true(k == 0 || p->t0_s >= r.preempt[k - 1].t1_s);
    }
    assert_int_equal(s.preempted, r.preemptions);
    assert_false(s.preempted_outside);
    assert_false(s.bad_nesting);
    assert_int_equal(s.x, r.steps);
    assert_int_equal(s.depth[0] + s.depth[1], 0);
    serve_result_fini(&r);
}

/* The cap: 30 events of the batching case's. In time order: 3 names;
 * requests 0 and 1 (6 events each: the request, prefill, decode) 15; step 0
 * and its 3 counters (2 running, 0 waiting, 14 pages of 1000: 7 each for 100
 * tokens) 19; steps 1 and 2 (101, 102 tokens: the same 7 pages each, no
 * counter changes) 21; request 2, arriving at step 2's end = step 3's start
 * (no idle: no counters fall to 0) 27; step 3 and its running (1) and KV
 * (7 pages) counters 30. Step 4 is past the cap, and so is all after it
 * (step 5, running and KV falling to 0 at its end): 4 dropped. A request's
 * track is kept or dropped whole (every begin has its end), and the
 * metadata says the trace is capped. */
static void test_serve_trace_cap(void **state)
{
    (void)state;
    struct serve_cfg c = cfg();
    c.count = 3, c.concurrency = 2, c.output_len = 3;
    struct serve_result r;
    struct seen s;
    struct trace_stats st;
    run_and_trace(&c, 30, &r, &s, &st);
    assert_int_equal(st.events, 30);
    assert_int_equal(st.dropped, 4);
    assert_int_equal(s.x, 4);
    assert_int_equal(s.b, 9);
    assert_int_equal(s.e, 9);
    assert_false(s.bad_nesting);
    assert_float_equal(st.complete_until_s, r.step[4].start_s, 0);
    assert_non_null(strstr(s.other, "\"capped\":\"incomplete: 4 events dropped past "
                                    "--trace-max-events 30"));
    serve_result_fini(&r);
}

/* The default cap keeps a trace below trace_auto_max_bytes(); a level asked
 * for has the other traces' cap; --trace-max-events wins. */
static void test_serve_trace_max_events(void **state)
{
    (void)state;
    struct serve_trace_opts o = {.level = TRACE_UNITS};
    assert_int_equal(serve_trace_max_events(&o), (size_t)(50e6 / SERVE_TRACE_EVENT_BYTES));
    o.level_set = true;
    assert_int_equal(serve_trace_max_events(&o), TRACE_DEFAULT_MAX_EVENTS);
    o.max_events = 7;
    assert_int_equal(serve_trace_max_events(&o), 7);
}

int main(void)
{
    unsetenv("TPUSIM_TRACE_AUTO_MAX_BYTES");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serve_trace_single_request),
        cmocka_unit_test(test_serve_trace_batching),
        cmocka_unit_test(test_serve_trace_preemption),
        cmocka_unit_test(test_serve_trace_cap),
        cmocka_unit_test(test_serve_trace_max_events),
    };
    return cmocka_run_group_tests_name("serve_trace", tests, NULL, NULL);
}
