/* tests/unit/test_guards.c -- the memory estimate the run guard uses stays
 * within 2x of the memory runs really take, on workloads where different
 * parts dominate: many ops, repeated blocks on a folded slice, a long trace. */
#include "test_util.h"

#include "base/xalloc.h"
#include "sim_fork.h"

static char *many_ops(const char *op, int n)
{
    size_t len = strlen(op) + 8, cap = 64 + (size_t)n * len;
    char *y = xmalloc(cap);
    size_t o = (size_t)snprintf(y, cap, "chip: v5e\nworkload:\n");
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(y + o, cap - o, "  - %s\n", op);
    return y;
}

/* Under AddressSanitizer or valgrind the peak is the tool's (shadow memory,
 * quarantine): the comparison only means something in a plain build. */
static bool rss_is_ours(void)
{
#ifdef __SANITIZE_ADDRESS__
    return false;
#else
    const char *pre = getenv("LD_PRELOAD");
    return !(pre && strstr(pre, "vgpreload"));
#endif
}

static void within_2x(const char *what, const struct result *r)
{
    double peak = (double)r->maxrss_kb * 1024.0;
    print_message("%-28s estimate %6.0f MiB, peak %6.0f MiB\n", what, r->est_memory / 1048576.0,
                  peak / 1048576.0);
    assert_int_equal(r->rc, 0);
    assert_true(r->est_memory > 0);
    if (!rss_is_ours())
        return;
    assert_true(r->est_memory <= 2.0 * peak);
    assert_true(peak <= 2.0 * r->est_memory);
}

/* Where the peak is not ours (valgrind, ASan) the comparison is skipped, and the
 * runs only show that each workload runs cleanly: a tenth of the ops and of the
 * layers takes the same paths (under valgrind: 117 s of CPU down to 17). */
static void test_memory_estimate_tracks_the_peak(void **state)
{
    (void)state;
    int tenth = rss_is_ours() ? 1 : 10;
    char what[64], *y = many_ops("{op: matmul, m: 256, k: 256, n: 256}", 800 / tenth);
    struct result r = run(y, NULL, 0);
    snprintf(what, sizeof what, "%d matmuls", 800 / tenth);
    within_2x(what, &r);
    free(y);
    y = many_ops("{op: hbm_copy, bytes: 64KiB}", 2000 / tenth);
    r = run(y, NULL, 0);
    snprintf(what, sizeof what, "%d copies", 2000 / tenth);
    within_2x(what, &r);
    free(y);
    y = xasprintf("chip: v5e\ntopology: {shape: [16, 16]}\nworkload:\n  - repeat:\n"
                  "      count: %d\n      ops:\n"
                  "        - {op: matmul, m: 512, k: 512, n: 512}\n"
                  "        - {op: all_gather, bytes: 1MiB, axes: [0, 1], overlap: true}\n"
                  "        - {op: hbm_copy, bytes: 1MiB}\n",
                  120 / tenth);
    r = run(y, NULL, 0);
    free(y);
    snprintf(what, sizeof what, "%d layers on a 16x16 fold", 120 / tenth);
    within_2x(what, &r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_estimate_tracks_the_peak),
    };
    return cmocka_run_group_tests_name("guards", tests, NULL, NULL);
}
