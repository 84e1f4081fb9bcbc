/* tests/unit/test_traces.c -- the outputs layer on hand-made inputs: the
 * trace writer (streamed events, valid JSON read back with base/json.h,
 * dropped events, flow arrows, counters, levels, the units merge, chip and
 * window filters), summary.json's keys and the
 * console table (with an SPMD fold and a timeline), sweep.csv and
 * sweep.json of a two-row table byte for byte (and read back), report.md,
 * the SVG plots and `compare`. */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "traces/compare.h"
#include "traces/plots.h"
#include "traces/report_md.h"
#include "traces/summary.h"
#include "traces/table.h"
#include "traces/trace.h"

static char tmpdir[64];

static int setup(void **state)
{
    (void)state;
    return test_tmpdir_make(tmpdir, sizeof tmpdir, "traces");
}

static int teardown(void **state)
{
    (void)state;
    return test_tmpdir_remove(tmpdir);
}

static char *path_in(const char *name)
{
    return xasprintf("%s/%s", tmpdir, name);
}

static char *read_text(const char *path)
{
    size_t n;
    char *s = fs_read_all(path, (size_t)1 << 24, &n);
    if (!s)
        fail_msg("cannot read %s", path);
    return s;
}

static struct json *read_json(const char *path)
{
    char err[256];
    struct json *j = json_read_file(path, JSON_MAX_BYTES, err, sizeof err);
    if (!j)
        fail_msg("%s", err);
    return j;
}

/* ---------------- trace.json ---------------- */

static struct trace *trace_at(enum trace_level l, size_t max)
{
    struct trace_opts o = {.level = l, .max_events = max};
    return trace_new(&o);
}

/* Room for 7 events at level steps: the names (3 events: a process, a
 * thread's name and sort index), spans b then a (out of order: the file is
 * not sorted), a counter (6); a flow (2 more: 8) is dropped, span c (7)
 * kept, span d dropped (3 dropped); a process name past the cap is kept (8). */
static struct trace *small_trace(void)
{
    struct trace *t = trace_at(TRACE_STEPS, 7);
    trace_meta(t, "scenario", "demo");
    trace_process(t, 0, "chip 0");
    trace_thread(t, 0, 1, "core 0", 1);
    trace_span(t, 0, 1, "op", "b", 2e-6, 3e-6, "\"bytes\": 4096");
    trace_span(t, 0, 1, "op", "a", 1e-6, 1.5e-6, NULL);
    trace_counter(t, TRACE_STEPS, 0, "HBM GB/s", 1e-6, 819);
    trace_flow(t, TRACE_STEPS, "dma->compute", 0, 1, 1e-6, 0, 1, 2e-6);
    trace_span(t, 0, 1, "op", "c", 4e-6, 5e-6, NULL);
    trace_span(t, 0, 1, "op", "d", 6e-6, 7e-6, NULL);
    trace_process(t, 1, "chip 1");
    return t;
}

static void test_trace_counts_kept_and_dropped_events(void **state)
{
    (void)state;
    struct trace *t = small_trace();
    struct trace_stats st;
    trace_stats(t, &st);
    assert_int_equal(st.events, 8);
    assert_int_equal(st.dropped, 3);
    assert_int_equal(st.filtered, 0);
    assert_float_equal(st.complete_until_s, 1e-6, 0); /* the flow's start: the first dropped */
    assert_float_equal(st.last_s, 7e-6, 0);
    trace_free(t);
}

/* Events in the order they came (the viewers sort), metadata in otherData
 * with the level and the counts; the file's size is reported. Room for 8:
 * the last span is dropped. */
/* The one JSON string writer escapes '"', '\\' and control characters, both in its
 * fast path (nothing else to escape: x\y) and its slow one (a quote beside it). */
static void test_json_write_string_escapes(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"x\\y", "\"x\\\\y\""},
        {"a\"b\\c", "\"a\\\"b\\\\c\""},
        {"t\tn\n\x01", "\"t\\tn\\n\\u0001\""},
        {"plain", "\"plain\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *text = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&text, &n);
        json_write_string(f, cases[i].in);
        fclose(f);
        assert_string_equal(text, cases[i].out);
        char err[128];
        struct json *j = json_parse(text, n, err, sizeof err); /* and it reads back */
        assert_non_null(j);
        assert_string_equal(j->str, cases[i].in);
        json_free(j);
        free(text);
    }
}

static void test_trace_write_streams_valid_json(void **state)
{
    (void)state;
    struct trace *t = small_trace();
    char *p = path_in("trace.json");
    trace_free(t);
    t = trace_at(TRACE_STEPS, 8);
    assert_int_equal(trace_open(t, p), 0);
    assert_false(fs_exists(p)); /* a temporary until closed */
    trace_meta(t, "scenario", "demo");
    trace_process(t, 0, "chip 0");
    trace_thread(t, 0, 1, "core 0", 1);
    trace_span(t, 0, 1, "op", "b", 2e-6, 3e-6, "\"bytes\": 4096");
    trace_span(t, 0, 1, "op", "a", 1e-6, 1.5e-6, NULL);
    trace_counter(t, TRACE_STEPS, 0, "HBM GB/s", 1e-6, 819);
    trace_flow(t, TRACE_STEPS, "dma->compute", 0, 1, 1e-6, 0, 1, 2e-6);
    trace_span(t, 0, 1, "op", "c", 4e-6, 5e-6, NULL);
    assert_int_equal(trace_close(t), 0);
    struct trace_stats st;
    trace_stats(t, &st);
    trace_free(t);
    size_t len;
    char *text = fs_read_all(p, (size_t)1 << 20, &len);
    assert_int_equal(st.bytes, len);
    free(text);
    struct json *j = read_json(p);
    const struct json *other = json_get(j, "otherData");
    assert_string_equal(json_str(other, "scenario", ""), "demo");
    assert_string_equal(json_str(other, "dropped_events", ""), "1");
    assert_string_equal(json_str(other, "trace_level", ""), "steps");
    const struct json *ev = json_get(j, "traceEvents");
    assert_non_null(ev);
    assert_int_equal(ev->type, JSON_ARR);
    static const char *const ph[] = {"M", "M", "M", "X", "X", "C", "s", "f"};
    static const char *const name[] = {"process_name", "thread_name",  "thread_sort_index",
                                       "b",            "a",            "HBM GB/s",
                                       "dma->compute", "dma->compute"};
    assert_int_equal(ev->n, 8); /* c is past the cap */
    for (int i = 0; i < ev->n; i++) {
        assert_string_equal(json_str(ev->kids[i], "ph", ""), ph[i]);
        assert_string_equal(json_str(ev->kids[i], "name", ""), name[i]);
    }
    const struct json *a = ev->kids[4], *b = ev->kids[3], *s = ev->kids[6], *f = ev->kids[7];
    assert_float_equal(json_num(a, "ts", -1), 1.0, 1e-12); /* microseconds */
    assert_float_equal(json_num(a, "dur", -1), 0.5, 1e-12);
    assert_null(json_get(a, "args"));
    assert_float_equal(json_num(json_get(b, "args"), "bytes", 0), 4096, 0);
    assert_float_equal(json_num(json_get(ev->kids[5], "args"), "value", 0), 819, 0);
    /* the arrow: same id at both ends, the end binds to the enclosing span */
    assert_true(json_num(s, "id", -1) == json_num(f, "id", -2));
    assert_float_equal(json_num(f, "ts", -1), 2.0, 1e-12);
    assert_string_equal(json_str(f, "bp", ""), "e");
    assert_null(json_get(s, "bp"));
    json_free(j);
    free(p);
}

/* Level units: an op's activity on a track becomes one span from its first
 * to its last activity when the op's span ends. MXU [1, 2] and [3, 4] us:
 * one span at 1 us, 3 us long, 2 us active; DMAs [0, 2] (100 B) and [1, 3]
 * (50 B) overlap: active 2 + 1 = 3 us, 150 B. A steps-level arrow is not
 * recorded (nor counted as dropped); a units-level counter is. */
static void test_trace_units_merges_an_ops_activity(void **state)
{
    (void)state;
    struct trace *t = trace_at(TRACE_UNITS, 0);
    char *p = path_in("units.json");
    assert_int_equal(trace_open(t, p), 0);
    trace_unit(t, 0, 1, "mxu", "step", "mm", 1e-6, 2e-6, 0, "\"step\": 0");
    trace_unit(t, 0, 3, "dma", "HBM->VMEM", "mm", 0, 2e-6, 100, NULL);
    trace_unit(t, 0, 1, "mxu", "step", "mm", 3e-6, 4e-6, 0, "\"step\": 1");
    trace_unit(t, 0, 3, "dma", "HBM->VMEM", "mm", 1e-6, 3e-6, 50, NULL);
    trace_flow(t, TRACE_STEPS, "dma->compute", 0, 3, 0, 0, 1, 1e-6);
    trace_counter(t, TRACE_UNITS, 0, "VMEM TC0 (bytes)", 0, 4096);
    trace_span(t, 0, 0, "matmul", "mm", 0, 5e-6, NULL);
    assert_int_equal(trace_close(t), 0);
    struct trace_stats st;
    trace_stats(t, &st);
    assert_int_equal(st.events, 4);
    assert_int_equal(st.dropped, 0);
    trace_free(t);
    struct json *j = read_json(p);
    const struct json *ev = json_get(j, "traceEvents");
    assert_int_equal(ev->n, 4);
    const struct json *mxu = NULL, *dma = NULL;
    for (int i = 0; i < ev->n; i++) {
        if (json_num(ev->kids[i], "tid", -1) == 1)
            mxu = ev->kids[i];
        if (json_num(ev->kids[i], "tid", -1) == 3)
            dma = ev->kids[i];
    }
    assert_non_null(mxu);
    assert_non_null(dma);
    assert_string_equal(json_str(mxu, "name", ""), "mm");
    assert_float_equal(json_num(mxu, "ts", -1), 1.0, 1e-12);
    assert_float_equal(json_num(mxu, "dur", -1), 3.0, 1e-12);
    assert_float_equal(json_num(json_get(mxu, "args"), "active_us", -1), 2.0, 1e-9);
    assert_float_equal(json_num(json_get(mxu, "args"), "spans", -1), 2, 0);
    assert_float_equal(json_num(json_get(dma, "args"), "active_us", -1), 3.0, 1e-9);
    assert_float_equal(json_num(json_get(dma, "args"), "bytes", -1), 150, 0);
    assert_float_equal(json_num(dma, "dur", -1), 3.0, 1e-12);
    json_free(j);
    free(p);
}

/* Filters: chip 1 of 2 and the window [2, 3] us. Chip 0's names and span
 * are left out (the names silently, the span counted), a span before the
 * window too; spans that overlap it are kept whole. Level ops keeps op
 * spans only; level none records nothing. */
static void test_trace_filters_chips_window_and_levels(void **state)
{
    (void)state;
    bool chips[2] = {false, true};
    struct trace_opts o = {.level = TRACE_STEPS, .window = true, .window_t0_s = 2e-6,
                           .window_t1_s = 3e-6, .chips = chips, .nchips = 2};
    struct trace *t = trace_new(&o);
    chips[1] = false; /* copied */
    trace_process(t, 0, "chip 0");
    trace_process(t, 1, "chip 1");
    trace_span(t, 0, 0, "op", "x", 2e-6, 3e-6, NULL);
    trace_span(t, 1, 0, "op", "early", 0, 1e-6, NULL);
    trace_span(t, 1, 0, "op", "kept", 2.5e-6, 4e-6, NULL);
    trace_unit(t, 1, 1, "mxu", "step", "kept", 1e-6, 2e-6, 0, NULL); /* ends at the window */
    struct trace_stats st;
    trace_stats(t, &st);
    assert_int_equal(st.events, 3);
    assert_int_equal(st.filtered, 2);
    assert_int_equal(st.dropped, 0);
    trace_free(t);

    t = trace_at(TRACE_OPS, 0);
    assert_false(trace_wants(t, TRACE_UNITS));
    trace_span(t, 0, 0, "op", "x", 0, 1e-6, NULL);
    trace_unit(t, 0, 1, "mxu", "step", "x", 0, 1e-6, 0, NULL);
    trace_counter(t, TRACE_UNITS, 0, "VMEM", 0, 1);
    trace_flow(t, TRACE_OPS, "after", 0, 0, 0, 0, 0, 1e-6);
    trace_stats(t, &st);
    assert_int_equal(st.events, 3);
    trace_free(t);

    t = trace_at(TRACE_NONE, 0);
    assert_false(trace_wants(t, TRACE_OPS));
    trace_process(t, 0, "chip 0");
    trace_span(t, 0, 0, "op", "x", 0, 1e-6, NULL);
    trace_stats(t, &st);
    assert_int_equal(st.events, 0);
    trace_free(t);
    enum trace_level l;
    assert_int_equal(trace_level_parse("units", &l), 0);
    assert_int_equal(l, TRACE_UNITS);
    assert_int_equal(trace_level_parse("all", &l), -1);
    assert_string_equal(trace_level_name(TRACE_STEPS), "steps");
}

/* An unfinished trace leaves no file and no temporary. */
static void test_trace_freed_open_leaves_nothing(void **state)
{
    (void)state;
    char *p = path_in("aborted.json");
    struct trace *t = trace_at(TRACE_OPS, 0);
    assert_int_equal(trace_open(t, p), 0);
    trace_span(t, 0, 0, "op", "x", 0, 1e-6, NULL);
    trace_free(t);
    assert_false(fs_exists(p));
    assert_int_equal(fs_remove_temps(tmpdir), 0);
    free(p);
}

/* ---------------- summary.json and the console table ---------------- */

static void two_op_summary(struct summary *s)
{
    memset(s, 0, sizeof *s);
    s->scenario = xstrdup("demo");
    s->chip = xstrdup("v5e");
    s->ndims = 2, s->shape[0] = 2, s->shape[1] = 4;
    s->total_time_s = 1.5e-3;
    s->nops = 2;
    s->ops = xcalloc(2, sizeof *s->ops);
    s->ops[0] = (struct summary_op){.name = xstrdup("matmul-4k"),
                                    .kind = "matmul",
                                    .start_s = 0,
                                    .end_s = 1e-3,
                                    .flops = 2e12,
                                    .hbm_bytes = 7e9,
                                    .vmem_peak_bytes = 10485760,
                                    .grid_steps = 2048,
                                    .mxu_s = 7e-4,
                                    .hbm_s = 5e-4,
                                    .peak_frac = 0.865,
                                    .cores = 8,
                                    .category = "matmul",
                                    .instances = 1,
                                    .time_s = 1e-3};
    s->ops[1] = (struct summary_op){.name = xstrdup("a-very-long-all-gather-name"),
                                    .kind = "all_gather",
                                    .start_s = 1e-3,
                                    .end_s = 1.5e-3,
                                    .ici_bytes = 1e8,
                                    .ici_s = 4e-4,
                                    .latency_s = 1e-5,
                                    .peak_frac = 0.458,
                                    .cores = 8,
                                    .category = "collective",
                                    .instances = 1,
                                    .time_s = 0.5e-3};
    for (int i = 0; i < 2; i++)
        summary_pick_bound(&s->ops[i]);
    /* busy over time: mxu 7e-4 / 1e-3, hbm 5e-4 / 1e-3; ici 4e-4 / 5e-4, latency 1e-5 / 5e-4 */
    s->ops[0].bound_frac = 0.7, s->ops[0].runner_up_frac = 0.5;
    s->ops[0].useful_bytes = 6.5e9; /* under a tenth padding: not printed */
    s->ops[1].bound_frac = 0.8, s->ops[1].runner_up_frac = 0.02;
    s->ops[1].coll = (struct summary_coll){.present = true, .n = 8, .data_bytes = 1e8,
                                           .algbw_Bps = 2e11, .busbw_Bps = 1.75e11,
                                           .link_peak_Bps = 1.8e11, .link_share = 0.972};
}

/* The same, run on an SPMD fold of 4 of the 8 chips, with chip 0's timeline:
 * the matmul, then the all-gather exposed; both on the critical path. */
static void two_op_summary_timeline(struct summary *s)
{
    two_op_summary(s);
    s->sim_chips = 4, s->sim_shape[0] = 2, s->sim_shape[1] = 2;
    s->timeline = true;
    s->cat_s[CAT_MATMUL] = 1e-3, s->cat_s[CAT_COLLECTIVE_EXPOSED] = 0.5e-3;
    s->npath = 2;
    s->path = xcalloc(2, sizeof *s->path);
    s->path[0] = (struct summary_path_op){xstrdup("matmul-4k"), 1, 1e-3};
    s->path[1] = (struct summary_path_op){xstrdup("a-very-long-all-gather-name"), 1, 0.5e-3};
}

static void test_summary_json_has_the_contract_keys(void **state)
{
    (void)state;
    struct summary s;
    two_op_summary_timeline(&s);
    assert_int_equal(s.ops[0].bound, BOUND_MXU);
    assert_int_equal(s.ops[1].bound, BOUND_ICI);
    char *p = path_in("summary.json");
    assert_int_equal(summary_write_json(&s, p), 0);
    summary_fini(&s);
    struct json *j = read_json(p);
    static const char *const top[] = {
        "scenario",     "chip", "topology",           "simulated_chips", "simulated_shape",
        "total_time_s", "ops",  "time_by_category_s", "critical_path",   "blocks"};
    for (size_t i = 0; i < sizeof top / sizeof *top; i++)
        assert_non_null(json_get(j, top[i]));
    assert_int_equal(json_get(j, "topology")->n, 2);
    assert_float_equal(json_num(j, "simulated_chips", 0), 4, 0);
    assert_float_equal(json_num(json_get(j, "time_by_category_s"), "collective_exposed", 0), 0.5e-3,
                       1e-15);
    const struct json *path = json_get(j, "critical_path");
    assert_int_equal(path->n, 2);
    assert_string_equal(json_str(path->kids[1], "name", ""), "a-very-long-all-gather-name");
    const struct json *ops = json_get(j, "ops");
    assert_int_equal(ops->n, 2);
    static const char *const keys[] = {
        "name",           "kind",          "start_s",         "end_s",           "time_s",
        "flops",          "hbm_bytes",     "ici_bytes",       "vmem_peak_bytes", "grid_steps",
        "bound",          "compute_steps", "peak_fraction",   "cores",           "dmas",
        "coalesced_runs", "vpu_flops",     "transcendentals", "busy_s",          "category",
        "instances"};
    for (int o = 0; o < ops->n; o++)
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
            if (!json_get(ops->kids[o], keys[i]))
                fail_msg("op %d has no %s", o, keys[i]);
    static const char *const units[] = {"mxu", "vpu", "hbm", "ici", "overhead", "latency"};
    for (size_t i = 0; i < 6; i++)
        assert_non_null(json_get(json_get(ops->kids[1], "busy_s"), units[i]));
    assert_string_equal(json_str(ops->kids[0], "bound", ""), "mxu");
    assert_string_equal(json_str(ops->kids[1], "bound", ""), "ici");
    assert_float_equal(json_num(ops->kids[1], "time_s", 0), 0.5e-3, 1e-15);
    assert_float_equal(json_num(ops->kids[0], "vmem_peak_bytes", 0), 10485760, 0);
    /* the explanations */
    assert_string_equal(json_str(ops->kids[0], "runner_up", ""), "hbm");
    assert_float_equal(json_num(ops->kids[0], "bound_fraction", 0), 0.7, 1e-9);
    assert_string_equal(json_str(ops->kids[1], "runner_up", ""), "latency");
    const struct json *coll = json_get(ops->kids[1], "collective");
    assert_non_null(coll);
    assert_float_equal(json_num(coll, "busbw_Bps", 0), 1.75e11, 1);
    assert_float_equal(json_num(coll, "link_share", 0), 0.972, 1e-9);
    assert_null(json_get(ops->kids[0], "collective"));
    json_free(j);
    free(p);
}

/* No NaN or infinity reaches a JSON file: json_fmt_num writes them null (printf's "-nan" made
 * summary.json invalid: issue 32.2), and finite numbers exactly as printf's "%.9e", "%.17g",
 * "%.6f" (the golden outputs stay byte-identical). */
static void test_json_numbers_never_nan(void **state)
{
    (void)state;
    char b[40];
    assert_string_equal(json_fmt_num(b, sizeof b, NAN, 'e', 9), "null");
    assert_string_equal(json_fmt_num(b, sizeof b, -NAN, 'f', 6), "null");
    assert_string_equal(json_fmt_num(b, sizeof b, INFINITY, 'g', 17), "null");
    assert_string_equal(json_fmt_num(b, sizeof b, -INFINITY, 'e', 9), "null");
    assert_string_equal(json_fmt_num(b, sizeof b, 1.5e-3, 'e', 9), "1.500000000e-03");
    assert_string_equal(json_fmt_num(b, sizeof b, 1073741824.0, 'g', 17), "1073741824");
    assert_string_equal(json_fmt_num(b, sizeof b, 0.8591575, 'f', 6), "0.859158");
    /* a huge "%.6f" would be 301 digits: as "%.6e" */
    assert_string_equal(json_fmt_num(b, sizeof b, 1e300, 'f', 6), "1.000000e+300");
    /* a summary whose numbers went non-finite is still valid JSON, with nulls */
    struct summary s;
    two_op_summary_timeline(&s);
    s.ops[0].peak_frac = -NAN, s.ops[0].time_s = INFINITY, s.total_time_s = NAN;
    char *p = path_in("nan-summary.json");
    assert_int_equal(summary_write_json(&s, p), 0);
    summary_fini(&s);
    struct json *j = read_json(p);
    assert_int_equal(json_get(j, "total_time_s")->type, JSON_NULL);
    const struct json *op = json_get(j, "ops")->kids[0];
    assert_int_equal(json_get(op, "peak_fraction")->type, JSON_NULL);
    assert_int_equal(json_get(op, "time_s")->type, JSON_NULL);
    json_free(j);
    free(p);
}

static void test_summary_console_table(void **state)
{
    (void)state;
    struct summary s;
    two_op_summary_timeline(&s);
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    assert_non_null(f);
    summary_print_table(&s, f);
    fclose(f);
    summary_fini(&s);
    assert_string_equal(text, "scenario demo on v5e [2x4], simulating 4 of 8 chips (SPMD fold "
                              "[2x2])\n"
                              "op                   kind                          start     "
                              "    time   % peak bound          steps\n"
                              "matmul-4k            matmul                     0.000 us     "
                              "1.000 ms    86.5% mxu             2048\n"
                              "a-very-long-all-gath all_gather                 1.000 ms   "
                              "500.000 us    45.8% ici                0\n"
                              "total 1.500 ms\n"
                              "time by category (chip 0): matmul 1.000 ms (66.7%) "
                              "collective_exposed 500.000 us (33.3%)\n"
                              "critical path: matmul-4k (1.000 ms) -> "
                              "a-very-long-all-gather-name (500.000 us)\n"
                              "why:\n"
                              "  matmul-4k: mxu 70% of its time, then hbm 50%\n"
                              "  a-very-long-all-gather-name: ici 80% of its time, then latency "
                              "2%; algbw 200.0 GB/s, busbw 175.0 GB/s over 8 devices, 97.2% of "
                              "the links' 180.0 GB/s\n");
    free(text);
}

/* ---------------- sweep tables ---------------- */

/* Points 0 (ok) and 1 (infeasible) of a three-point sweep over two keys.
 * Static: a test may change it; each call gives it back as it was. */
static struct table *demo_table(void)
{
    static char *keys[] = {(char *)"workload.0.block_q", (char *)"workload.0.shape"};
    static char *v0[] = {(char *)"128", (char *)"[1, 2]"}, *v1[] = {(char *)"512", (char *)""};
    static struct table_row rows[2];
    static struct table t;
    rows[0] = (struct table_row){.point = 0,
                                 .values = v0,
                                 .status = TABLE_OK,
                                 .reason = (char *)"",
                                 .scenario = (char *)"demo",
                                 .chip = (char *)"v5e",
                                 .time_s = 1.5e-3,
                                 .op = (char *)"flash",
                                 .bound = (char *)"mxu",
                                 .peak_fraction = 0.5,
                                 .vmem_peak_bytes = 1048576,
                                 .grid_steps = 64};
    rows[1] = (struct table_row){.point = 1,
                                 .values = v1,
                                 .status = TABLE_INFEASIBLE,
                                 .reason = (char *)"block_q=512 is too big, \"q\" | 256"};
    t = (struct table){.name = (char *)"demo",
                       .base = (char *)"base.yaml",
                       .nkeys = 2,
                       .keys = keys,
                       .npoints = 3,
                       .nrows = 2,
                       .rows = rows,
                       .default_point = 0,
                       .default_is_base = true};
    return &t;
}

static const char want_csv[] =
    "point,workload.0.block_q,workload.0.shape,time_s,peak_fraction,bound,vmem_peak_bytes,"
    "grid_steps,status,reason\n"
    "0,128,\"[1, 2]\",1.500000000e-03,0.500000,mxu,1048576,64,ok,\n"
    "1,512,,,,,,,infeasible,\"block_q=512 is too big, \"\"q\"\" | 256\"\n";

static const char want_json[] =
    "{\n"
    "  \"sweep\": \"demo\",\n"
    "  \"base\": \"base.yaml\",\n"
    "  \"keys\": [\"workload.0.block_q\", \"workload.0.shape\"],\n"
    "  \"points_total\": 3, \"points_done\": 2, \"complete\": false,\n"
    "  \"best_point\": 0, \"default_point\": 0, \"default_is_base\": true, "
    "\"default_added\": false,\n"
    "  \"points\": [\n"
    "    {\"point\": 0, \"dir\": \"points/0000\", \"values\": {\"workload.0.block_q\": 128, "
    "\"workload.0.shape\": \"[1, 2]\"},\n"
    "     \"status\": \"ok\", \"reason\": \"\",\n"
    "     \"scenario\": \"demo\", \"chip\": \"v5e\", \"time_s\": 1.500000000e-03, \"op\": "
    "\"flash\", \"bound\": \"mxu\", \"peak_fraction\": 0.500000, \"vmem_peak_bytes\": 1048576, "
    "\"grid_steps\": 64},\n"
    "    {\"point\": 1, \"dir\": \"points/0001\", \"values\": {\"workload.0.block_q\": 512, "
    "\"workload.0.shape\": null},\n"
    "     \"status\": \"infeasible\", \"reason\": \"block_q=512 is too big, \\\"q\\\" | 256\",\n"
    "     \"time_s\": null, \"bound\": null, \"peak_fraction\": null, \"vmem_peak_bytes\": null, "
    "\"grid_steps\": null}\n"
    "  ]\n"
    "}\n";

static void test_table_write_csv_bytes(void **state)
{
    (void)state;
    struct table *t = demo_table();
    char *p = path_in("sweep.csv");
    assert_int_equal(table_write_csv(t, p), 0);
    char *text = read_text(p);
    assert_string_equal(text, want_csv);
    free(text);
    free(p);
}

static void test_table_write_json_bytes_and_read_back(void **state)
{
    (void)state;
    struct table *t = demo_table();
    char *p = path_in("sweep.json");
    assert_int_equal(table_write_json(t, p), 0);
    char *text = read_text(p);
    assert_string_equal(text, want_json);
    free(text);
    struct json *j = read_json(p);
    struct table back;
    char err[256] = "";
    assert_int_equal(table_from_json(&back, j, err, sizeof err), 0);
    assert_int_equal(back.nrows, 2);
    assert_int_equal(back.npoints, 3);
    assert_int_equal(back.default_point, 0);
    assert_string_equal(back.keys[1], "workload.0.shape");
    assert_string_equal(back.rows[0].values[0], "128");
    assert_string_equal(back.rows[0].values[1], "[1, 2]");
    assert_string_equal(back.rows[1].values[1], ""); /* null: not set */
    assert_int_equal(back.rows[1].status, TABLE_INFEASIBLE);
    assert_string_equal(back.rows[1].reason, t->rows[1].reason);
    assert_float_equal(back.rows[0].time_s, 1.5e-3, 1e-18);
    assert_int_equal(back.rows[0].grid_steps, 64);
    assert_int_equal(table_best_row(&back), 0);
    assert_int_equal(table_find_row(&back, 1), 1);
    assert_int_equal(table_find_row(&back, 2), -1);
    table_fini(&back);
    json_free(j);
    free(p);
}

static void test_table_short_key_and_status(void **state)
{
    (void)state;
    struct table *t = demo_table();
    assert_string_equal(table_short_key(t, 0), "block_q");
    static char *same[] = {(char *)"workload.0.block_q", (char *)"workload.1.block_q"};
    t->keys = same; /* two keys end in block_q: the whole path */
    assert_string_equal(table_short_key(t, 1), "workload.1.block_q");
    enum table_status st;
    assert_int_equal(table_status_parse("failed", &st), 0);
    assert_int_equal(st, TABLE_FAILED);
    assert_int_equal(table_status_parse("done", &st), -1);
    assert_int_equal(table_status_parse(NULL, &st), -1);
    char buf[32];
    table_format_time(buf, sizeof buf, 1.5e-3);
    assert_string_equal(buf, "1.5 ms");
    table_format_time(buf, sizeof buf, 999.96e-6); /* rounds up into the next unit */
    assert_string_equal(buf, "1 ms");
}

/* ---------------- report.md and plots ---------------- */

static void test_report_md_lines(void **state)
{
    (void)state;
    struct table *t = demo_table();
    char *p = path_in("report.md");
    assert_int_equal(report_md_write(t, p), 0);
    char *md = read_text(p);
    static const char *const want[] = {
        "# Sweep `demo`\n\nBase scenario: `base.yaml` on v5e · 3 points: 1 ok, 1 infeasible, "
        "0 failed\n",
        "> **Interrupted**: 2 of 3 points finished",
        "- **Best**: point 0 (block_q=128, shape=[1, 2]): **1.5 ms**; bound by the MXU (`mxu`, "
        "op `flash`, 50.0% of peak)\n",
        "| 1 | 0 (default) | 128 | [1, 2] | 1.5 ms | 1.00\xc3\x97 | 50.0% | mxu | flash | 1 MiB "
        "| 64 |\n",
        "| 1 | 512 |  | infeasible | block_q=512 is too big, \"q\" \\| 256 |\n",
        "![time against block_q](plot_workload.0.block_q.svg)\n",
        "![time by both keys](heatmap.svg)\n"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(md, want[i]))
            fail_msg("report.md lacks:\n%s\n--- report.md:\n%s", want[i], md);
    free(md);
    free(p);
}

/* A model step's summary gives its row the model columns: MFU, tokens/s,
 * memory per chip and exposed collectives; csv, json and report.md show them
 * and the json reads back. */
static void test_table_model_columns(void **state)
{
    (void)state;
    static const char summary[] =
        "{\"scenario\": \"m\", \"chip\": \"v5e\", \"total_time_s\": 0.5, \"ops\": "
        "[{\"name\": \"a\", \"time_s\": 0.25, \"bound\": \"mxu\", \"peak_fraction\": 0.5}],"
        " \"time_by_category_s\": {\"collective_exposed\": 0.125},"
        " \"model\": {\"mfu\": 0.4375, \"tokens_per_s\": 8192,"
        " \"memory_bytes\": {\"total\": 1073741824}}}";
    char err[256] = "";
    struct json *j = json_parse(summary, strlen(summary), err, sizeof err);
    assert_non_null(j);
    struct table_row r = {.point = 0};
    assert_int_equal(table_row_from_summary(&r, j, err, sizeof err), 0);
    json_free(j);
    assert_true(r.has_model);
    assert_float_equal(r.mfu, 0.4375, 0);
    assert_float_equal(r.tokens_per_s, 8192, 0);
    assert_float_equal(r.memory_bytes, 1073741824.0, 0);
    assert_float_equal(r.collective_exposed_s, 0.125, 0);
    char *keys[] = {(char *)"mesh.fsdp"}, *v0[] = {(char *)"4"}, *v1[] = {(char *)"8"};
    r.values = v0;
    struct table_row rows[2] = {r, {.point = 1, .values = v1, .status = TABLE_INFEASIBLE,
                                    .reason = (char *)"out of memory"}};
    struct table t = {.name = (char *)"m", .base = (char *)"b.yaml", .nkeys = 1, .keys = keys,
                      .npoints = 2, .nrows = 2, .rows = rows, .default_point = 0};
    assert_true(table_has_model(&t));
    char *p = path_in("model.csv");
    assert_int_equal(table_write_csv(&t, p), 0);
    char *text = read_text(p);
    assert_string_equal(text,
                        "point,mesh.fsdp,time_s,peak_fraction,bound,vmem_peak_bytes,grid_steps,"
                        "mfu,tokens_per_s,memory_bytes,collective_exposed_s,status,reason\n"
                        "0,4,5.000000000e-01,0.500000,mxu,0,0,0.437500,8.192000000e+03,"
                        "1073741824,1.250000000e-01,ok,\n"
                        "1,8,,,,,,,,,,infeasible,out of memory\n");
    free(text);
    free(p);
    p = path_in("model.json");
    assert_int_equal(table_write_json(&t, p), 0);
    struct json *jj = read_json(p);
    struct table back;
    assert_int_equal(table_from_json(&back, jj, err, sizeof err), 0);
    assert_true(back.rows[0].has_model && !back.rows[1].has_model);
    assert_float_equal(back.rows[0].mfu, 0.4375, 0);
    assert_float_equal(back.rows[0].memory_bytes, 1073741824.0, 0);
    table_fini(&back);
    json_free(jj);
    free(p);
    p = path_in("model.md");
    assert_int_equal(report_md_write(&t, p), 0);
    char *md = read_text(p);
    const char *want = "| 1 | 0 (default) | 4 | 500 ms | 1.00\xc3\x97 | 43.8% | 8192 | 1 GiB | "
                       "125 ms | mxu | a |\n";
    if (!strstr(md, want))
        fail_msg("report.md lacks:\n%s\n--- report.md:\n%s", want, md);
    free(md);
    free(p);
    free(r.scenario), free(r.chip), free(r.op), free(r.bound), free(r.reason);
}

static void test_plots_write_svg_files(void **state)
{
    (void)state;
    struct table *t = demo_table();
    char *name = plot_file_name("a/b c.d");
    assert_string_equal(name, "plot_a_b_c.d.svg");
    free(name);
    assert_int_equal(plot_write_sweep(t, tmpdir), 0);
    static const char *const files[] = {"plot_workload.0.block_q.svg", "plot_workload.0.shape.svg",
                                        "heatmap.svg"};
    for (size_t i = 0; i < 3; i++) {
        char *p = path_in(files[i]);
        char *svg = read_text(p);
        assert_non_null(strstr(svg, "<svg"));
        assert_non_null(strstr(svg, "</svg>\n"));
        assert_non_null(strstr(svg, i < 2 ? "demo: time against " : "demo: time by block_q"));
        free(svg);
        free(p);
    }
    t->nkeys = 1; /* one key: no heatmap */
    char *sub = path_in("one");
    assert_int_equal(fs_mkdirs(sub), 0);
    assert_int_equal(plot_write_sweep(t, sub), 0);
    char *heat = xasprintf("%s/heatmap.svg", sub);
    assert_false(fs_exists(heat));
    free(heat);
    free(sub);
}

/* ---------------- compare ---------------- */

static void test_compare_summaries_and_kinds(void **state)
{
    (void)state;
    struct summary s;
    two_op_summary(&s);
    char *a = path_in("a.json"), *b = path_in("b.json"), *sw = path_in("sweep.json");
    assert_int_equal(summary_write_json(&s, a), 0);
    s.ops[0].end_s = s.ops[0].time_s = 2e-3; /* matmul-4k twice as slow */
    s.total_time_s = 2.5e-3;
    assert_int_equal(summary_write_json(&s, b), 0);
    summary_fini(&s);
    struct table *t = demo_table();
    assert_int_equal(table_write_json(t, sw), 0);

    char *text = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&text, &n), *err = fopen("/dev/null", "w");
    assert_int_equal(compare_outputs(a, b, NULL, out, err), 0); /* one directory: "A", "B" */
    fclose(out);
    const char *table = strchr(strchr(text, '\n') + 1, '\n') + 1; /* after A: and B: */
    assert_string_equal(table, "op                       kind                   time A       time B"
                               "         delta   delta %  bound A -> B\n"
                               "matmul-4k                matmul                   1 ms         2 ms"
                               "         +1 ms   +100.0%  mxu -> mxu\n"
                               "a-very-long-all-gather-n all_gather             500 us       500 us"
                               "          0 ns     +0.0%  ici -> ici\n"
                               "total                                           1.5 ms       2.5 ms"
                               "         +1 ms    +66.7%\n");
    assert_non_null(strstr(text, "/a.json (demo on v5e)\nB = B: "));
    free(text);
    /* labels name both sides, in the header and the columns */
    const char *const labels[2] = {"before", "after"};
    out = open_memstream(&text, &n);
    assert_int_equal(compare_outputs(a, b, labels, out, err), 0);
    fclose(out);
    assert_non_null(strstr(text, "A = before: "));
    assert_non_null(strstr(text, "\nB = after: "));
    assert_non_null(strstr(text, "  time before   time after         delta   delta %  "
                                 "bound before -> after\n"));
    free(text);
    /* a summary against a sweep, or a missing file: exit status 2 */
    assert_int_equal(compare_outputs(a, sw, NULL, stdout, err), 2);
    char *missing = path_in("missing.json");
    assert_int_equal(compare_outputs(a, missing, NULL, stdout, err), 2);
    fclose(err);
    free(a), free(b), free(sw), free(missing);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_counts_kept_and_dropped_events),
        cmocka_unit_test(test_trace_write_streams_valid_json),
        cmocka_unit_test(test_json_write_string_escapes),
        cmocka_unit_test(test_trace_units_merges_an_ops_activity),
        cmocka_unit_test(test_trace_filters_chips_window_and_levels),
        cmocka_unit_test(test_trace_freed_open_leaves_nothing),
        cmocka_unit_test(test_summary_json_has_the_contract_keys),
        cmocka_unit_test(test_json_numbers_never_nan),
        cmocka_unit_test(test_summary_console_table),
        cmocka_unit_test(test_table_write_csv_bytes),
        cmocka_unit_test(test_table_model_columns),
        cmocka_unit_test(test_table_write_json_bytes_and_read_back),
        cmocka_unit_test(test_table_short_key_and_status),
        cmocka_unit_test(test_report_md_lines),
        cmocka_unit_test(test_plots_write_svg_files),
        cmocka_unit_test(test_compare_summaries_and_kinds),
    };
    return cmocka_run_group_tests_name("traces", tests, setup, teardown);
}
