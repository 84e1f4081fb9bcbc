/* tests/unit/test_trace_auto.c -- the trace events estimated per level and
 * the default level picked from them (engine/trace_auto.h, issue 31.7). */
#include "test_util.h"

#include "config/cfg.h"
#include "engine/spmd.h"
#include "engine/trace_auto.h"
#include "engine/validate.h"

static void load_file(const char *path, struct cfg_scenario *sc)
{
    struct diag *d = diag_new();
    assert_int_equal(cfg_load_scenario(path, NULL, 0, sc, d), 0);
    spmd_fold(sc, sc->all_chips);
    diag_free(d);
}

/* The shipped default scenario: v5e 2x16 folded to 4 chips of one
 * TensorCore. Ops, counted by hand (as tests/run_trace.sh does on the
 * written trace): per chip a process name and 9 tracks (TC0, async, MXU,
 * VPU, DMA, ICI x+ x- y+ y-) of 2 metadata events = 19, x 4 chips = 76;
 * 4 ops x 4 chips = 16 op spans; the attention's 4 pallas_calls x 4 chips =
 * 16 sub-kernel spans; no after: arrows: 108, what the run writes. Units
 * adds per chip: the attention 2 unit spans + 2 x 4 VMEM samples = 10,
 * the all_gather 5 (a DMA, 4 ICI directions), the collective_matmul 5 (its
 * span and one per unit over its chunks, whose matmuls replay one measured
 * chunk), the copy 1: 21 x 4 chips = 84, 192 in all. The run writes 196:
 * the estimate is 2 % low. */
static void test_events_default(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    load_file("configs/scenarios/default.yaml", &sc);
    assert_int_equal(cfg_engine_chips(&sc), 4);
    double ev[4];
    validate_trace_events(&sc, ev);
    assert_true(ev[TRACE_NONE] == 0);
    assert_true(ev[TRACE_OPS] == 108);
    assert_true(ev[TRACE_UNITS] == 192);
    assert_true(ev[TRACE_STEPS] > ev[TRACE_UNITS]);
    cfg_scenario_fini(&sc);
}

/* The ladder on the same scenario: units 192 x 130 = 24,960 bytes, ops
 * 108 x 155 = 16,740, units on chip 0 (a quarter) 6,240, ops on chip 0
 * 4,185. */
static void test_pick_ladder(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    load_file("configs/scenarios/default.yaml", &sc);
    struct trace_auto a;
    trace_auto_pick(&sc, false, 50e6, &a);
    assert_int_equal(a.level, TRACE_UNITS);
    assert_false(a.chip0);
    assert_true(a.bytes == 24960);
    assert_string_equal(a.why, "default units: ~25 kB estimated, within 50 MB");
    trace_auto_pick(&sc, false, 20000, &a);
    assert_int_equal(a.level, TRACE_OPS);
    assert_false(a.chip0);
    assert_string_equal(a.why, "default units would be ~25 kB, above 20 kB; ops ~17 kB");
    trace_auto_pick(&sc, false, 12000, &a);
    assert_int_equal(a.level, TRACE_UNITS);
    assert_true(a.chip0);
    assert_true(a.bytes == 6240);
    assert_string_equal(a.why, "default units would be ~25 kB and ops ~17 kB on all 4 simulated "
                               "chips, above 12 kB; units on chip 0 of each slice ~6 kB");
    trace_auto_pick(&sc, false, 5000, &a);
    assert_int_equal(a.level, TRACE_OPS);
    assert_true(a.chip0);
    /* nothing fits: the last rung */
    trace_auto_pick(&sc, false, 1000, &a);
    assert_int_equal(a.level, TRACE_OPS);
    assert_true(a.chip0);
    /* --trace-chips given: only the level, ops at the least */
    trace_auto_pick(&sc, true, 1000, &a);
    assert_int_equal(a.level, TRACE_OPS);
    assert_false(a.chip0);
    cfg_scenario_fini(&sc);
}

/* A Llama-2-70B step on v5p-512 (64 chips simulated, 2 TensorCores as one
 * megacore): its units trace measured 1,838,710 events (239 MB) and its ops
 * trace 446,902 events (69.0 MB) with its collective matmuls (issue 29.1;
 * 2,178,550 and 498,102 before them). The estimate must put both above
 * 50 MB and pick units on chip 0, under 50 MB: 1,838,710 / 64 = 28,730
 * events, about 3.7 MB. */
static void test_pick_llama70b(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    load_file("configs/models/llama2-70b-train-v5p-512.yaml", &sc);
    double ev[4];
    validate_trace_events(&sc, ev);
    /* within 25 % of the measured counts */
    assert_true(ev[TRACE_OPS] > 0.75 * 446902 && ev[TRACE_OPS] < 1.25 * 446902);
    assert_true(ev[TRACE_UNITS] > 0.75 * 1838710 && ev[TRACE_UNITS] < 1.25 * 1838710);
    struct trace_auto a;
    trace_auto_pick(&sc, false, TRACE_AUTO_MAX_BYTES, &a);
    assert_int_equal(a.level, TRACE_UNITS);
    assert_true(a.chip0);
    assert_true(a.units_bytes > 50e6 && a.bytes < 50e6);
    cfg_scenario_fini(&sc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_default),
        cmocka_unit_test(test_pick_ladder),
        cmocka_unit_test(test_pick_llama70b),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
