/* tests/unit/test_units.c -- the quantity parser. */
#include "test_util.h"

#include "base/units.h"

static void test_units_parse_bytes(void **state)
{
    (void)state;
    double v;
    assert_int_equal(units_parse("128MiB", UNITS_BYTES, &v), 0);
    assert_true(v == 134217728.0);
    assert_int_equal(units_parse("16GB", UNITS_BYTES, &v), 0);
    assert_true(v == 16e9);
    assert_int_equal(units_parse("4096", UNITS_BYTES, &v), 0);
    assert_true(v == 4096.0);
    assert_int_equal(units_parse("1.5KiB", UNITS_BYTES, &v), 0);
    assert_true(v == 1536.0);
}

static void test_units_parse_rates_and_times(void **state)
{
    (void)state;
    double v;
    assert_int_equal(units_parse("819GBps", UNITS_BANDWIDTH, &v), 0);
    assert_true(v == 819e9);
    assert_int_equal(units_parse("100Gbps", UNITS_BANDWIDTH, &v), 0);
    assert_true(v == 12.5e9);
    /* the top of a bandwidth's range as its message writes it (config/cfg_walk.c) */
    assert_int_equal(units_parse("1PBps", UNITS_BANDWIDTH, &v), 0);
    assert_true(v == 1e15);
    assert_int_equal(units_parse("1us", UNITS_TIME, &v), 0);
    assert_float_equal(v, 1e-6, 1e-20);
    assert_int_equal(units_parse("800ns", UNITS_TIME, &v), 0);
    assert_float_equal(v, 800e-9, 1e-20);
    assert_int_equal(units_parse("197Tf", UNITS_FLOPS, &v), 0);
    assert_true(v == 197e12);
    assert_int_equal(units_parse("1.5GHz", UNITS_FREQ, &v), 0);
    assert_true(v == 1.5e9);
}

static void test_units_parse_rejects_bad_units(void **state)
{
    (void)state;
    double v;
    assert_int_equal(units_parse("12XB", UNITS_BYTES, &v), -1);
    assert_int_equal(units_parse("1", UNITS_TIME, &v), -1);    /* a duration needs a unit */
    assert_int_equal(units_parse("GBps", UNITS_BANDWIDTH, &v), -1);
    assert_int_equal(units_parse("1us", UNITS_BYTES, &v), -1);
    assert_int_equal(units_parse("", UNITS_BYTES, &v), -1);
    assert_int_equal(units_parse("nan", UNITS_BYTES, &v), -1);
}

static void test_units_format(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(units_format(buf, sizeof buf, 134217728.0, UNITS_BYTES), "128 MiB");
    assert_string_equal(units_format(buf, sizeof buf, 819e9, UNITS_BANDWIDTH), "819 GB/s");
    assert_string_equal(units_format(buf, sizeof buf, 1e-6, UNITS_TIME), "1 us");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units_parse_bytes),
        cmocka_unit_test(test_units_parse_rates_and_times),
        cmocka_unit_test(test_units_parse_rejects_bad_units),
        cmocka_unit_test(test_units_format),
    };
    return cmocka_run_group_tests_name("units", tests, NULL, NULL);
}
