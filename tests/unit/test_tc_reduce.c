/* tests/unit/test_tc_reduce.c -- the reductions of reduce-scatters and
 * all-reduces take TensorCore time from the kernel beside them unless XLA
 * offloads them to the SparseCore (docs/reference.md, "Reductions on the
 * TensorCore"; xla_tpu_enable_sparse_core_collective_offload_reduce_scatter
 * and _all_reduce). */
#include "test_util.h"

#include "sim_fork.h"

static double op_time(const struct result *r, int i)
{
    return r->end[i] - r->start[i];
}

static void assert_within(double got, double want, double rel)
{
    if (fabs(got - want) > rel * want) {
        print_error("got %.9g, want %.9g within %.2f%%\n", got, want, 100 * rel);
        fail();
    }
}

/* v5e (one TensorCore, H = 819e9 B/s at hbm.efficiency 1), a wrapped ring of
 * n = 4 chips reduce-scattering B = 16 MiB beside an elementwise add of
 * [16384, 8192] bf16 (768 MiB of HBM traffic, about 1 ms: it outlasts the
 * reduce-scatter's 0.2 ms, so every reduction step runs while it does).
 * Each chip reduces (n-1)/n of B; each reduced byte is read twice (the local
 * and the received chunk) and written once by the TensorCore's VPU:
 *   (3/4) x 16777216 x 3 / 819e9 = 46.0906 us
 * of TensorCore time the add loses: it ends that much later than with the
 * reductions on the SparseCore. The reduce-scatter itself (its steps run
 * alike either way) takes the same time. */
static void test_reduce_scatter_slows_the_kernel_beside_it(void **state)
{
    (void)state;
    static const char *const yaml =
        "chip: v5e\ntopology: {shape: [4], wraparound: true}\nworkload:\n"
        "  - {op: reduce_scatter, name: rs, bytes: 16MiB, axes: [0], after: []}\n"
        "  - {op: elementwise, name: ew, shape: [16384, 8192], dtype: bf16, fn: add,"
        " after: []}\n";
    const char *tc[] = {"chip.hbm.efficiency=1"};
    const char *sc[] = {"chip.hbm.efficiency=1",
                        "xla_flags.xla_tpu_enable_sparse_core_collective_offload_reduce_scatter="
                        "true"};
    struct result t = run(yaml, tc, 1), s = run(yaml, sc, 2);
    assert_int_equal(t.rc, 0);
    assert_int_equal(s.rc, 0);
    assert_true(op_time(&s, 1) > 2 * op_time(&s, 0)); /* the add outlasts the reduce-scatter */
    assert_within(op_time(&t, 1) - op_time(&s, 1), 46.0906e-6, 0.001);
    assert_within(op_time(&t, 0), op_time(&s, 0), 1e-9);
}

/* An all-reduce alone (no kernel beside it): an idle TensorCore loses
 * nothing, so the flag changes no time. The same add beside a 16 MiB
 * all-reduce: its reduce-scatter half reduces (n-1)/n of B, as above
 * (46.0906 us); its all-gather half reduces nothing. */
static void test_all_reduce_idle_and_beside_kernel(void **state)
{
    (void)state;
    static const char *const alone =
        "chip: v5e\ntopology: {shape: [4], wraparound: true}\nworkload:\n"
        "  - {op: all_reduce, name: ar, bytes: 16MiB, axes: [0], after: []}\n";
    static const char *const beside =
        "chip: v5e\ntopology: {shape: [4], wraparound: true}\nworkload:\n"
        "  - {op: all_reduce, name: ar, bytes: 16MiB, axes: [0], after: []}\n"
        "  - {op: elementwise, name: ew, shape: [16384, 8192], dtype: bf16, fn: add,"
        " after: []}\n";
    const char *tc[] = {"chip.hbm.efficiency=1"};
    const char *sc[] = {"chip.hbm.efficiency=1",
                        "xla_flags.xla_tpu_enable_sparse_core_collective_offload_all_reduce=true"};
    struct result ta = run(alone, tc, 1), sa = run(alone, sc, 2);
    assert_int_equal(ta.rc, 0);
    assert_int_equal(sa.rc, 0);
    assert_within(op_time(&ta, 0), op_time(&sa, 0), 1e-9);
    struct result tb = run(beside, tc, 1), sb = run(beside, sc, 2);
    assert_int_equal(tb.rc, 0);
    assert_int_equal(sb.rc, 0);
    assert_true(op_time(&sb, 1) > op_time(&sb, 0));
    assert_within(op_time(&tb, 1) - op_time(&sb, 1), 46.0906e-6, 0.001);
}

/* v7 offloads by default (MaxText's flag library: on by default on
 * Ironwood): no TensorCore time, as with the flag set true. */
static void test_v7_offloads_by_default(void **state)
{
    (void)state;
    static const char *const yaml =
        "chip: v7\ntopology: {shape: [2, 2, 1]}\nworkload:\n"
        "  - {op: reduce_scatter, name: rs, bytes: 16MiB, axes: [0], after: []}\n"
        "  - {op: elementwise, name: ew, shape: [16384, 8192], dtype: bf16, fn: add,"
        " after: []}\n";
    const char *on[] = {"xla_flags.xla_tpu_enable_sparse_core_collective_offload_reduce_scatter="
                        "true"};
    struct result d = run(yaml, NULL, 0), s = run(yaml, on, 1);
    assert_int_equal(d.rc, 0);
    assert_int_equal(s.rc, 0);
    assert_within(op_time(&d, 1), op_time(&s, 1), 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reduce_scatter_slows_the_kernel_beside_it),
        cmocka_unit_test(test_all_reduce_idle_and_beside_kernel),
        cmocka_unit_test(test_v7_offloads_by_default),
    };
    return cmocka_run_group_tests_name("tc_reduce", tests, NULL, NULL);
}
