/* tests/unit/test_validate.c -- the resource guards: what the step estimate
 * counts, and that the same guards refuse a scenario whatever asks. */
#include "test_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/cfg.h"
#include "engine/spmd.h"
#include "engine/validate.h"

static int load(const char *text, struct cfg_scenario *sc, struct diag *d)
{
    int rc = cfg_load_scenario_text(text, strlen(text), "t.yaml", NULL, 0, sc, d);
    if (rc == 0)
        spmd_fold(sc, sc->all_chips);
    return rc;
}

/* Issue 18.6: hbm_copy chunk: 1 was 0 grid steps, so no guard saw a run of
 * 67 M chunks (about 17 minutes and tens of GB). */
static void test_estimate_counts_copy_chunks(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    assert_int_equal(load("chip: v5e\ntopology: {shape: [2]}\n"
                          "workload:\n  - {op: hbm_copy, bytes: 64MiB, chunk: 1}\n",
                          &sc, d),
                     0);
    struct validate_estimate e;
    validate_estimate(&sc, &e);
    assert_int_equal(e.grid_steps, 0);
    /* per core of the chips simulated: the 2 chips fold to 1 (engine/spmd.h) */
    assert_int_equal(sc.sim.nchips, 1);
    assert_int_equal(e.copy_chunks, 67108864LL);
    assert_int_equal(validate_estimate_steps(&sc), 67108864LL);
    struct validate_limits lim = {.max_steps = 10000000};
    assert_int_equal(validate_guards(&sc, &lim, d), -1);
    assert_non_null(strstr(diag_message(d, 0), "the run would simulate 67108864 steps (0 grid "
                                               "steps, 67108864 copy chunks), above the limit "
                                               "of 10000000"));
    cfg_scenario_fini(&sc);
    diag_free(d);
}

/* Estimates saturate instead of overflowing (UBSan): 65536 chips copying
 * 1e18 bytes in 1-byte chunks. */
static void test_estimate_saturates(void **state)
{
    (void)state;
    struct diag *d = diag_new();
    struct cfg_scenario sc;
    assert_int_equal(load("chip: {base: v5p, hypothetical: true,\n"
                          "       hbm: {capacity: 999999999999999999}}\n"
                          "topology: {shape: [64, 32, 32]}\noptions: {all_chips: true}\n"
                          "workload:\n  - {op: hbm_copy, bytes: 999999999999999999, chunk: 1}\n"
                          "  - {op: hbm_copy, bytes: 999999999999999999, chunk: 1}\n",
                          &sc, d),
                     0);
    assert_int_equal(validate_estimate_steps(&sc), INT64_MAX);
    cfg_scenario_fini(&sc);
    diag_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_estimate_counts_copy_chunks),
        cmocka_unit_test(test_estimate_saturates),
    };
    return cmocka_run_group_tests_name("validate", tests, NULL, NULL);
}
