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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_progress_lines_after_the_interval),
    };
    return cmocka_run_group_tests_name("progress", tests, NULL, NULL);
}
