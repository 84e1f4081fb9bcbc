/* tests/unit/test_plan.c -- the slice planner's counting (study/plan.c): the
 * legal slices of a chip count per generation (Google Cloud's offered
 * topologies, configs/README.md "Plans") and the ordered factorizations
 * that size the search space before anything is enumerated. */
#include "test_util.h"

#include "config/cfg.h"
#include "study/plan_int.h"

static int shapes(const char *chip, long chips, int (*out)[3])
{
    struct chip_params c;
    struct diag *d = diag_new();
    assert_int_equal(cfg_load_chip(chip, &c, d), 0);
    diag_free(d);
    return plan_shapes(&c, chips, out, 64);
}

/* v5e (2D, pod 16x16): 8 chips are 2x4 only (2x2x2 is not 2D, 1x8 not offered); 2 chips
 * none (1x2 is not offered); 128 is 8x16; 512 none (past the pod). */
static void test_v5e_slices(void **state)
{
    (void)state;
    int s[64][3];
    assert_int_equal(shapes("v5e", 8, s), 1);
    assert_int_equal(s[0][1], 2);
    assert_int_equal(s[0][2], 4);
    assert_int_equal(shapes("v5e", 2, s), 0);
    assert_int_equal(shapes("v5e", 128, s), 1);
    assert_int_equal(s[0][1], 8);
    assert_int_equal(shapes("v5e", 256, s), 1);
    assert_int_equal(shapes("v5e", 512, s), 0);
    assert_int_equal(shapes("v5e", 1, s), 1);
}

/* v5p (3D, pod 16x20x28, at most 6144 chips): 512 chips as multiples of 4 a <= b <= c:
 * 4x8x16 and 8x8x8 (4x4x32: 32 > 28); 8 chips 2x2x2; 64 chips 4x4x4; 4 chips 2x2x1;
 * 6 chips none. */
static void test_v5p_slices(void **state)
{
    (void)state;
    int s[64][3];
    assert_int_equal(shapes("v5p", 512, s), 2);
    assert_int_equal(s[0][0] * 100 + s[0][1] * 10 + s[0][2], 4 * 100 + 8 * 10 + 16);
    assert_int_equal(s[1][0] * 100 + s[1][1] * 10 + s[1][2], 8 * 100 + 8 * 10 + 8);
    assert_int_equal(shapes("v5p", 8, s), 1);
    assert_int_equal(shapes("v5p", 64, s), 1);
    assert_int_equal(shapes("v5p", 4, s), 1);
    assert_int_equal(s[0][0], 1);
    assert_int_equal(shapes("v5p", 6, s), 0);
    assert_int_equal(shapes("v5p", 8192, s), 0); /* above the largest slice, 6144 */
}

/* Ordered factorizations: 512 = 2^9 over 2 axes: C(10, 1) = 10; 1024 = 2^10 over 6: C(15, 5)
 * = 3003; 12 = 2^2 x 3 over 3: C(4, 2) x C(3, 2) = 18; 1 over any: 1. */
static void test_factorizations(void **state)
{
    (void)state;
    assert_true(plan_factorizations(512, 2) == 10);
    assert_true(plan_factorizations(1024, 6) == 3003);
    assert_true(plan_factorizations(12, 3) == 18);
    assert_true(plan_factorizations(1, 4) == 1);
    assert_true(plan_factorizations(97, 3) == 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v5e_slices),
        cmocka_unit_test(test_v5p_slices),
        cmocka_unit_test(test_factorizations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
