/* tests/unit/test_written.c -- what a run writes and refuses, at the value
 * that matters: a summary.json key as written (not the internal figure), the
 * step guard at its boundary (limit = estimate runs, estimate - 1 does not),
 * a backslash through the JSON writer. Each was a surviving mutant of issue
 * 32's mutation run (tools/mutants.txt). */
#include "test_util.h"

#include "base/diag.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "config/cfg.h"
#include "engine/validate.h"
#include "outputs/summary.h"

/* An op that moved 1000 HBM bytes for 600 of data writes "useful_hbm_bytes":
 * 600 and "padded_hbm_bytes": 400 (what the tiles padded or fetched again). */
static void test_padded_hbm_bytes_as_written(void **state)
{
    (void)state;
    struct summary s;
    memset(&s, 0, sizeof s);
    s.scenario = xstrdup("written"), s.chip = xstrdup("v5e");
    s.ndims = 1, s.shape[0] = 1, s.sim_chips = 1, s.sim_shape[0] = 1;
    s.total_time_s = 1e-3;
    s.nops = 1;
    s.ops = xcalloc(1, sizeof *s.ops);
    s.ops[0] = (struct summary_op){.name = xstrdup("copy"), .kind = "hbm_copy",
                                   .category = "copy", .end_s = 1e-3, .time_s = 1e-3,
                                   .hbm_bytes = 1000, .useful_bytes = 600, .hbm_s = 1e-3,
                                   .cores = 1, .instances = 1};
    summary_pick_bound(&s.ops[0]);
    char dir[64];
    assert_int_equal(test_tmpdir_make(dir, sizeof dir, "written"), 0);
    char path[96];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    assert_int_equal(summary_write_json(&s, path), 0);
    summary_fini(&s);
    char err[256];
    struct json *j = json_read_file(path, 1 << 20, err, sizeof err);
    if (!j)
        fail_msg("%s", err);
    const struct json *op = json_get(j, "ops")->kids[0];
    assert_float_equal(json_num(op, "useful_hbm_bytes", -1), 600, 0);
    assert_float_equal(json_num(op, "padded_hbm_bytes", -1), 400, 0);
    json_free(j);
    assert_int_equal(test_tmpdir_remove(dir), 0);
}

/* The step guard at its boundary: a limit of exactly the estimated work runs,
 * one step less is refused (test_validate checks the estimate's parts). */
static void test_step_guard_boundary(void **state)
{
    (void)state;
    static const char yaml[] = "chip: v5e\ntopology: {shape: [1]}\nworkload:\n"
                               "  - {op: matmul, m: 1024, k: 1024, n: 1024}\n";
    struct cfg_scenario sc;
    struct diag *d = diag_new();
    assert_int_equal(cfg_load_scenario_text(yaml, sizeof yaml - 1, "g.yaml", NULL, 0, &sc, d), 0);
    assert_true(validate_estimate_steps(&sc) == 8 * 8 * 8); /* 128-blocks of 1024^3 */
    struct validate_estimate e;
    validate_estimate(&sc, &e); /* the guard limits the steps of work (engine/validate.h) */
    int64_t est = e.work;
    assert_true(est > 0);
    struct validate_limits lim = {.max_steps = est};
    assert_int_equal(validate_guards(&sc, &lim, d), 0);
    lim.max_steps = est - 1;
    assert_int_equal(validate_guards(&sc, &lim, d), -1);
    cfg_scenario_fini(&sc);
    diag_free(d);
}

/* A sweep value x\y (or any string with a backslash) is written "x\\y":
 * unescaped, sweep.json was invalid. */
static void test_json_backslash(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_non_null(f);
    json_write_string(f, "x\\y \"q\"\n");
    fclose(f);
    assert_string_equal(buf, "\"x\\\\y \\\"q\\\"\\n\"");
    char err[128];
    struct json *j = json_parse(buf, n, err, sizeof err);
    assert_non_null(j);
    json_free(j);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_padded_hbm_bytes_as_written),
        cmocka_unit_test(test_step_guard_boundary),
        cmocka_unit_test(test_json_backslash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
