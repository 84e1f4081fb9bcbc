/* tests/unit/test_cfg.c -- scenario loading, presets, overrides, errors. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/cfg.h"

static char path[64];

static const char *tmp_yaml(const char *text)
{
    snprintf(path, sizeof path, "/tmp/tpusim-cfg-%d.yaml", (int)getpid());
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static int load(const char *text, const char *const *sets, int n, struct cfg_scenario *sc,
                struct diag *d)
{
    int rc = cfg_load_scenario(tmp_yaml(text), sets, n, sc, d);
    unlink(path);
    return rc;
}

static void test_cfg_presets_load(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    for (const char *const *n = cfg_chip_names(); *n; n++) {
        struct chip_params c;
        assert_int_equal(cfg_load_chip(*n, &c, d), 0);
        assert_string_equal(c.name, *n);
        assert_true(c.peak_flops[DT_BF16] > 1e14);
        assert_int_equal(c.vpu_sublanes, 8);
        assert_int_equal(c.vpu_lanes, 128);
    }
    struct chip_params c;
    assert_int_equal(cfg_load_chip("v5e", &c, d), 0);
    assert_true(c.hbm_bw_Bps == 819e9);
    assert_true(c.peak_flops[DT_BF16] == 197e12);
    assert_int_equal(c.vmem_bytes, 128u << 20);
    assert_int_equal(c.routing, ICI_ROUTE_POW2);
    assert_int_equal(diag_count(d), 0);
    diag_free(d);
}

static void test_cfg_chip_override_and_set(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    const char *sets[] = {"workload.0.bytes=1GiB", "chip.ici.bandwidth=50GBps"};
    assert_int_equal(load("chip: {base: v5e, hbm: {bandwidth: 1TBps}}\n"
                          "workload:\n  - {op: hbm_copy, bytes: 1MiB}\n",
                          sets, 2, &sc, d),
                     0);
    assert_true(sc.chip.hbm_bw_Bps == 1e12);
    assert_true(sc.chip.ici_bw_Bps == 50e9);
    assert_true(sc.chip.peak_flops[DT_BF16] == 197e12); /* the rest comes from the preset */
    assert_int_equal(sc.ops[0].u.hbm_copy.bytes, 1u << 30);
    cfg_scenario_fini(&sc);
    diag_free(d);
}

static void test_cfg_default_wraparound_rules(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    const char *w = "workload:\n  - {op: hbm_copy, bytes: 1MiB}\n";
    char buf[256];
    snprintf(buf, sizeof buf, "chip: v5e\ntopology: {shape: [8, 16]}\n%s", w);
    assert_int_equal(load(buf, NULL, 0, &sc, d), 0);
    assert_false(sc.topo.wrap[0]);
    assert_true(sc.topo.wrap[1]);
    cfg_scenario_fini(&sc);
    snprintf(buf, sizeof buf, "chip: v5p\ntopology: {shape: [4, 4, 8]}\n%s", w);
    assert_int_equal(load(buf, NULL, 0, &sc, d), 0);
    assert_true(sc.topo.wrap[0] && sc.topo.wrap[1] && sc.topo.wrap[2]);
    cfg_scenario_fini(&sc);
    snprintf(buf, sizeof buf, "chip: v5p\ntopology: {shape: [2, 4, 4]}\n%s", w);
    assert_int_equal(load(buf, NULL, 0, &sc, d), 0);
    assert_false(sc.topo.wrap[0] || sc.topo.wrap[1] || sc.topo.wrap[2]);
    cfg_scenario_fini(&sc);
    snprintf(buf, sizeof buf, "chip: v5e\ntopology: {shape: [8, 16], wraparound: [true, false]}\n%s",
             w);
    assert_int_equal(load(buf, NULL, 0, &sc, d), 0);
    assert_true(sc.topo.wrap[0]);
    assert_false(sc.topo.wrap[1]);
    cfg_scenario_fini(&sc);
    diag_free(d);
}

static void test_cfg_errors_have_positions_and_suggestions(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    assert_int_equal(load("chip: v5e\nworkload:\n  - op: hbm_copy\n    byts: 1MiB\n"
                          "  - {op: matmul, m: x, k: 128, n: 128}\n",
                          NULL, 0, &sc, d),
                     -1);
    char want[128];
    snprintf(want, sizeof want, "%s:4:5: workload.0: unknown key 'byts' (did you mean 'bytes'?)",
             path);
    assert_string_equal(diag_message(d, 0), want);
    snprintf(want, sizeof want, "%s:3:5: workload.0: missing required key 'bytes'", path);
    assert_string_equal(diag_message(d, 1), want);
    snprintf(want, sizeof want, "%s:5:21: workload.1.m: expected a positive integer, got 'x'",
             path);
    assert_string_equal(diag_message(d, 2), want);
    cfg_scenario_fini(&sc);
    diag_free(d);
}

static void test_cfg_set_errors(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    const char *sets[] = {"workload.3.bytes=1MiB"};
    assert_int_equal(load("chip: v5e\nworkload:\n  - {op: hbm_copy, bytes: 1MiB}\n", sets, 1,
                          &sc, d),
                     -1);
    assert_non_null(strstr(diag_message(d, 0), "index 3 is out of range (the list has 1 item)"));
    cfg_scenario_fini(&sc);
    diag_free(d);
}

/* Issue 18.1: an empty path segment used to free the root the caller keeps. */
static void test_cfg_set_empty_segment(void **state)
{
    (void)state;
    static const char *const bad[] = {".=1", "..=1", "workload..bytes=1MiB", ".workload=1",
                                      "workload.=1", "=1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct diag *d = diag_new();
        struct cfg_scenario sc;
        const char *sets[] = {bad[i]};
        assert_int_equal(load("chip: v5e\nworkload:\n  - {op: hbm_copy, bytes: 1MiB}\n", sets, 1,
                              &sc, d),
                         -1);
        assert_non_null(strstr(diag_message(d, 0), "expected key.path=value"));
        diag_free(d);
    }
}

/* Issue 18.2: list indices were read with atoi: 2^63 wrote out of bounds and
 * 2^32+3 silently named item 3. */
static void test_cfg_set_index_overflow(void **state)
{
    (void)state;
    static const char *const bad[] = {"workload.9223372036854775808.bytes=1MiB",
                                      "workload.4294967299.name=X",
                                      "workload.18446744073709551616.bytes=1MiB",
                                      "workload.4.bytes=1MiB", "workload.0004.name=X"};
    static const char *const want[] = {"index 9223372036854775808 is out of range",
                                       "index 4294967299 is out of range",
                                       "index 18446744073709551616 is out of range",
                                       "index 4 is out of range (the list has 4 items)",
                                       "index 0004 is out of range (the list has 4 items)"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct diag *d = diag_new();
        struct cfg_scenario sc;
        const char *sets[] = {bad[i]};
        assert_int_equal(load("chip: v5e\nworkload:\n  - {op: hbm_copy, bytes: 1MiB}\n"
                              "  - {op: hbm_copy, bytes: 1MiB}\n  - {op: hbm_copy, bytes: 1MiB}\n"
                              "  - {op: hbm_copy, bytes: 1MiB}\n",
                              sets, 1, &sc, d),
                         -1);
        assert_non_null(strstr(diag_message(d, 0), want[i]));
        diag_free(d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cfg_presets_load),
        cmocka_unit_test(test_cfg_chip_override_and_set),
        cmocka_unit_test(test_cfg_default_wraparound_rules),
        cmocka_unit_test(test_cfg_errors_have_positions_and_suggestions),
        cmocka_unit_test(test_cfg_set_errors),
        cmocka_unit_test(test_cfg_set_empty_segment),
        cmocka_unit_test(test_cfg_set_index_overflow),
    };
    return cmocka_run_group_tests_name("cfg", tests, NULL, NULL);
}
