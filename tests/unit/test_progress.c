/* tests/unit/test_progress.c -- the progress line: nothing for short runs or
 * without a terminal, then a line per interval with the share done and an ETA. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outputs/progress.h"

/* Issue 18.6: a run of many minutes showed nothing until it ended. */
static void test_progress_lines_after_the_interval(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct progress *p = progress_new(1000, f, 2.0);
    progress_add_at(p, 100, 0.5);
    fflush(f);
    assert_int_equal(len, 0); /* a short run prints nothing */
    progress_add_at(p, 150, 2.5);
    fflush(f);
    assert_non_null(strstr(buf, " 25.0% of 1000 steps, 0:03 elapsed, ETA 0:08"));
    size_t first = len;
    progress_add_at(p, 10, 3.0); /* within the interval: no new line */
    fflush(f);
    assert_int_equal(len, first);
    progress_add_at(p, 740, 5.0);
    fflush(f);
    assert_non_null(strstr(buf + first, "100.0% of 1000 steps, 0:05 elapsed, ETA 0:00"));
    progress_free(p);
    fclose(f);
    assert_non_null(strstr(buf, "\r\033[K")); /* drawn in place and erased at the end */
    assert_int_equal(strcmp(buf + len - 4, "\r\033[K"), 0);
    free(buf);
    assert_null(progress_new(1000, NULL, 2.0)); /* not a terminal */
    assert_null(progress_new(0, stderr, 2.0));
    progress_add(NULL, 5);
    progress_free(NULL);
}

/* The one line every display draws: the run's meter and the sweep's bar say
 * what is done, then the elapsed time and the ETA ("--:--" before any). */
static void test_progress_draw_is_one_line(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    progress_draw(f, "[###...] 3/6 points, 1 running", 65.4, 3725.0);
    progress_draw(f, "0/6 points", 1.0, -1);
    fclose(f);
    assert_string_equal(buf, "\r\033[K[###...] 3/6 points, 1 running, 1:05 elapsed, ETA 1:02:05"
                             "\r\033[K0/6 points, 0:01 elapsed, ETA --:--");
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_progress_lines_after_the_interval),
        cmocka_unit_test(test_progress_draw_is_one_line),
    };
    return cmocka_run_group_tests_name("progress", tests, NULL, NULL);
}
