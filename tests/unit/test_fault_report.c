/* tests/unit/test_fault_report.c -- goodput's formula by hand (engine/fault_report.h). */
#include "test_util.h"

#include <math.h>

#include "engine/fault_report.h"

/* 256 chips of MTBF 50,000 h: 256 / 1.8e8 s = 1.4222e-6 failures/s. A 2 s step and a
 * checkpoint every 100 steps: 200 s of work, then 32 GB written at 4 GB/s, 8 s. A failure
 * loses half a cycle, (200 + 8) / 2 = 104 s, plus the 600 s restart: 704 s. Useful share
 * 200 / 208 x (1 - 1.4222e-6 x 704) = 0.961538 x 0.998999 = 0.960576. Young's interval
 * sqrt(2 x 8 / 1.4222e-6) = 3354.1 s. */
static void test_goodput_by_hand(void **state)
{
    (void)state;
    struct cfg_goodput g = {.present = true, .mtbf_chip_s = 50000 * 3600.0,
                            .checkpoint_period = 100, .checkpoint_bytes = 32e9,
                            .checkpoint_Bps = 4e9, .restart_s = 600};
    struct fault_goodput o;
    fault_goodput(&g, 256, 2.0, &o);
    assert_true(fabs(o.failures_per_s - 1.42222e-6) < 1e-10);
    assert_true(fabs(o.interval_s - 200) < 1e-9);
    assert_true(fabs(o.write_s - 8) < 1e-9);
    assert_true(fabs(o.lost_per_failure_s - 704) < 1e-9);
    assert_true(fabs(o.goodput - 0.960576) < 1e-6);
    assert_true(fabs(o.young_interval_s - 3354.1) < 0.1);
    /* failures faster than a cycle: nothing useful, not a negative share */
    g.mtbf_chip_s = 3600;
    fault_goodput(&g, 256, 2.0, &o);
    assert_true(o.goodput == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_goodput_by_hand),
    };
    return cmocka_run_group_tests_name("fault_report", tests, NULL, NULL);
}
