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

/* The shipped default scenario: v5e 2x16 folded to 2 chips of one
 * TensorCore (1x2: the fold whose transfers keep their direction, engine/spmd.h).
 * Ops, counted by hand (as tests/run_trace.sh does on the
 * written trace): per chip a process name and 9 tracks (TC0, async, MXU,
 * VPU, DMA, ICI x+ x- y+ y-) of 2 metadata events = 19, x 2 chips = 38;
 * 4 ops x 2 chips = 8 op spans; the attention's 4 pallas_calls x 2 chips =
 * 8 sub-kernel spans; no after: arrows: 54, what the run writes. Units
 * adds per chip: the attention 2 unit spans + 2 x 4 VMEM samples = 10,
 * the all_gather 5 (a DMA, 4 ICI directions), the collective_matmul 5 (its
 * span and one per unit over its chunks, whose matmuls replay one measured
 * chunk), the copy 1: 21 x 2 chips = 42, 96 in all. The run writes 98:
 * the estimate is 2 % low. */
static void test_events_default(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    load_file("configs/scenarios/default.yaml", &sc);
    assert_int_equal(cfg_engine_chips(&sc), 2);
    double ev[4];
    validate_trace_events(&sc, ev);
    assert_true(ev[TRACE_NONE] == 0);
    assert_true(ev[TRACE_OPS] == 54);
    assert_true(ev[TRACE_UNITS] == 96);
    assert_true(ev[TRACE_STEPS] > ev[TRACE_UNITS]);
    cfg_scenario_fini(&sc);
}

/* The ladder on the same scenario: units 96 x 130 = 12,480 bytes, ops
 * 54 x 155 = 8,370, units on chip 0 (a half) 6,240, ops on chip 0
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
    assert_true(a.bytes == 12480);
    assert_string_equal(a.why, "default units: ~12 kB estimated, within 50 MB");
    trace_auto_pick(&sc, false, 10000, &a);
    assert_int_equal(a.level, TRACE_OPS);
    assert_false(a.chip0);
    assert_string_equal(a.why, "default units would be ~12 kB, above 10 kB; ops ~8 kB");
    trace_auto_pick(&sc, false, 7000, &a);
    assert_int_equal(a.level, TRACE_UNITS);
    assert_true(a.chip0);
    assert_true(a.bytes == 6240);
    assert_string_equal(a.why, "default units would be ~12 kB and ops ~8 kB on all 2 simulated "
                               "chips, above 7 kB; units on chip 0 of each slice ~6 kB");
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

/* A Llama-2-70B step on v5p-512 (8 chips simulated, 2x2x2, 2 TensorCores as
 * one megacore): its units trace measured 287,072 events (37.5 MB) and its
 * ops trace 71,928 events (11.0 MB), with q, k and v as three projections
 * (model.fused_qkv false, MaxText's default; 241,152 and 60,728 with one; at
 * 64 chips simulated, 4x4x4, and before later changes: 1,838,710 and 446,902,
 * issue 29.1). Within 50 MB the estimate picks units on every chip; within
 * 8 MB, above both, units on chip 0: 287,072 / 8 = 35,884 events, about
 * 4.7 MB. */
static void test_pick_llama70b(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    load_file("configs/models/llama2-70b-train-v5p-512.yaml", &sc);
    double ev[4];
    validate_trace_events(&sc, ev);
    /* within 25 % of the measured counts */
    assert_true(ev[TRACE_OPS] > 0.75 * 71928 && ev[TRACE_OPS] < 1.25 * 71928);
    assert_true(ev[TRACE_UNITS] > 0.75 * 287072 && ev[TRACE_UNITS] < 1.25 * 287072);
    struct trace_auto a;
    trace_auto_pick(&sc, false, TRACE_AUTO_MAX_BYTES, &a);
    assert_int_equal(a.level, TRACE_UNITS);
    assert_false(a.chip0);
    trace_auto_pick(&sc, false, 8e6, &a);
    assert_int_equal(a.level, TRACE_UNITS);
    assert_true(a.chip0);
    assert_true(a.units_bytes > 8e6 && a.bytes < 8e6);
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
