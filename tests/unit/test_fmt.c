/* tests/unit/test_fmt.c -- formatting without printf (base/fmt.h): the
 * same text printf writes. */
#include "test_util.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "base/fmt.h"

/* The text fmt wrote between 'buf' and 'end', terminated. */
static const char *done(char *buf, char *end)
{
    *end = '\0';
    return buf;
}

static void test_fmt_integers_and_strings(void **state)
{
    (void)state;
    char b[64];
    assert_string_equal(done(b, fmt_u64(b, 0)), "0");
    assert_string_equal(done(b, fmt_u64(b, ULLONG_MAX)), "18446744073709551615");
    assert_string_equal(done(b, fmt_i64(b, -42)), "-42");
    assert_string_equal(done(b, fmt_i64(b, LLONG_MIN)), "-9223372036854775808");
    assert_string_equal(done(b, fmt_lit(fmt_i64(b, 7), " op")), "7 op");
    /* cut at 'end': the wait notes' bounded names */
    assert_string_equal(done(b, fmt_str(b, "all_gather", b + 3)), "all");
    assert_string_equal(done(b, fmt_str(b + 3, "x", b + 3)), "all"); /* nothing at b + 3 */
}

static void test_fmt_us_rounds_to_the_nanosecond(void **state)
{
    (void)state;
    char b[64];
    assert_string_equal(done(b, fmt_us(b, 0)), "0.000");
    assert_string_equal(done(b, fmt_us(b, 1.5e-9)), "0.002"); /* half away from zero */
    assert_string_equal(done(b, fmt_us(b, 12.3456789e-6)), "12.346");
    assert_string_equal(done(b, fmt_us(b, 2.5)), "2500000.000");
    assert_string_equal(done(b, fmt_us(b, -3e-9)), "-0.003");
}

/* fmt_fixed writes what printf's "%.*f" writes, on values of every size
 * (whole, ties of the last digit, huge, negative, not finite) */
static void test_fmt_fixed_equals_printf(void **state)
{
    (void)state;
    static const double some[] = {0,      0.0625, 0.0005, 1.0005, 12.3455, 2.5,   1e9,
                                  1e15,   9e15,   1e300,  -0.0001, -2.5,   123456.789};
    char b[512], want[512];
    for (int d = 0; d <= 6; d++) {
        for (size_t i = 0; i < sizeof some / sizeof some[0]; i++) {
            snprintf(want, sizeof want, "%.*f", d, some[i]);
            want[47] = '\0'; /* (fmt_fixed keeps the first 47 characters) */
            assert_string_equal(done(b, fmt_fixed(b, some[i], d)), want);
        }
        assert_string_equal(done(b, fmt_fixed(b, NAN, d)), "nan");
    }
    srand(7);
    for (int i = 0; i < 200000; i++) {
        int d = i % 7;
        double scale = pow(10, rand() % 13 - 4); /* 1e-4 to 1e8 */
        double x = (double)rand() / RAND_MAX * scale;
        if (i % 5 == 0) /* on the grid of the last digit, or half-way along it */
            x = floor(x * pow(10, d)) / pow(10, d) + (i % 10 == 0 ? 0.5 / pow(10, d) : 0);
        snprintf(want, sizeof want, "%.*f", d, x);
        assert_string_equal(done(b, fmt_fixed(b, x, d)), want);
    }
}

/* A word a POSIX shell reads back as itself: plain words stay, others are
 * single-quoted with an inner quote as '\''. */
static void test_fmt_shell_word_quotes_what_it_must(void **state)
{
    (void)state;
    const char *cases[][2] = {{"configs/a.yaml", "configs/a.yaml"},
                              {"model.mesh.tensor=4", "model.mesh.tensor=4"},
                              {"", "''"},
                              {"a b", "'a b'"},
                              {"it's", "'it'\\''s'"},
                              {"$HOME", "'$HOME'"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *w = fmt_shell_word(cases[i][0]);
        assert_string_equal(w, cases[i][1]);
        free(w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fmt_integers_and_strings),
        cmocka_unit_test(test_fmt_us_rounds_to_the_nanosecond),
        cmocka_unit_test(test_fmt_fixed_equals_printf),
        cmocka_unit_test(test_fmt_shell_word_quotes_what_it_must),
    };
    return cmocka_run_group_tests_name("fmt", tests, NULL, NULL);
}
