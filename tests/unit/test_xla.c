/* tests/unit/test_xla.c -- XLA ops (fusion, einsum): how a loop reads each
 * array, and every form's time on SimGrid against a hand derivation.
 *
 * The test chip is v5e with an HBM of 1 PB/s (a MiB costs 1 ns), no DMA
 * latency, a 2 us launch, a 0.1 us step overhead and a 1 GHz clock (a cycle
 * is 1 ns; the MXU clock too: 131.072 TF / (2 x 128^2 x 4 MXUs)). Per cycle
 * its VPU issues 4 ALU, 3 load, 1 store and 1 EUP vreg ops and half an XLU
 * op; a vreg holds 8 x 128 32-bit values, so a (256, 1024) tile is 256
 * vregs. A step's compute c is its busiest slot. Every DMA ends within the
 * step that issued it, so a loop of n steps takes
 *   launch + n (overhead + c) + (bytes moved outside the steps) / 1 PB/s,
 * the bytes outside being the trivial windows read before step 0 and the
 * write-backs of the last step (DMAs move whole 4 KiB granules). Each time
 * is checked in both fidelities, to 1e-9. */
#include "test_util.h"

#include "kernels/fusion.h"
#include "sim_fork.h"

static const char *const TEST_CHIP[] = {"chip.hbm.bandwidth=1000TBps",
                                        "chip.tensorcore.dma_latency=0us",
                                        "chip.tensorcore.launch_overhead=2us",
                                        "chip.tensorcore.step_overhead=0.1us",
                                        "chip.tensorcore.clock=1GHz",
                                        "chip.tensorcore.peak.bf16=131.072Tf",
                                        "options.fidelity=exact"};

/* One loop: launch + n (overhead + c ns) + 'edge' bytes at 1 PB/s. */
static double loop_s(int n, double c_ns, double edge_bytes)
{
    return 2e-6 + n * (0.1e-6 + c_ns * 1e-9) + edge_bytes / 1e15;
}

/* Runs the op 'op' (a flow mapping) on the test chip, exact then fast; both
 * must take 'want' seconds and be bound by 'bound'. */
static struct result check_op(const char *op, double want, const char *bound)
{
    char yaml[1024];
    snprintf(yaml, sizeof yaml, "chip: v5e\nworkload:\n  - %s\n", op);
    struct result r = run(yaml, TEST_CHIP, 7), f = run(yaml, TEST_CHIP, 6);
    assert_int_equal(r.rc, 0);
    assert_int_equal(f.rc, 0);
    assert_time(r.total, want);
    assert_time(f.total, want);
    assert_string_equal(r.bound[0], bound);
    return r;
}

/* ---- how a loop reads its arrays ---- */

static struct op_array shape(int rank, const int64_t *dims)
{
    struct op_array a = {.rank = rank, .dt = DT_F32};
    memcpy(a.shape, dims, sizeof(int64_t) * (size_t)rank);
    return a;
}
#define SHAPE(...) shape(sizeof((int64_t[]){__VA_ARGS__}) / 8, (int64_t[]){__VA_ARGS__})

static enum fusion_rel rel(const struct op_array *s, struct op_array a, int axis, bool out)
{
    return fusion_relation(s, &a, axis, out);
}

static void test_fusion_relation_follows_numpy_broadcasting(void **state)
{
    (void)state;
    struct op_array s = SHAPE(8, 16, 4096);
    struct op_array scalar = {.rank = 0};
    assert_int_equal(fusion_relation(&s, &s, -1, false), FUSION_SAME);
    assert_int_equal(rel(&s, SHAPE(4096), -1, false), FUSION_TILE);
    assert_int_equal(rel(&s, SHAPE(1, 16, 4096), -1, false), FUSION_TILE);
    assert_int_equal(rel(&s, SHAPE(8, 16, 1), -1, false), FUSION_ROW);
    assert_int_equal(rel(&s, SHAPE(1, 1), -1, false), FUSION_SCALAR);
    assert_int_equal(fusion_relation(&s, &scalar, -1, false), FUSION_SCALAR);
    assert_int_equal(rel(&s, SHAPE(4095), -1, false), FUSION_BAD);
    /* numpy broadcasts a 1 between kept dims; a loop over rows cannot read it */
    assert_int_equal(rel(&s, SHAPE(8, 1, 4096), -1, false), FUSION_UNSUPPORTED);
    /* outputs: the space, or the space without the reduced axis */
    assert_int_equal(rel(&s, SHAPE(8, 4096), 1, true), FUSION_REDUCED);
    assert_int_equal(rel(&s, SHAPE(16, 4096), -1, true), FUSION_BAD);
}

/* The first array a 'fusion' op's loop cannot read, and what it expects. */
static void test_fusion_check_op_names_the_array(void **state)
{
    (void)state;
    struct op_fusion f = {.nin = 2, .nout = 1, .reduce_axis = -1};
    f.in[0] = f.out[0] = SHAPE(4096, 4096);
    f.in[1] = SHAPE(4095);
    bool out;
    int i;
    char want[320];
    assert_int_equal(fusion_check_op(&f, &out, &i, want, sizeof want), -1);
    assert_false(out);
    assert_int_equal(i, 1);
    assert_string_equal(want, "a shape that broadcasts to the loop's [4096, 4096]");
    f.in[1] = SHAPE(4096);
    assert_int_equal(fusion_check_op(&f, &out, &i, want, sizeof want), 0);
    f.reduce_axis = 0; /* a reduction: every output is in[0] without the axis */
    assert_int_equal(fusion_check_op(&f, &out, &i, want, sizeof want), -1);
    assert_true(out);
    assert_non_null(strstr(want, "[4096] (inputs.0 [4096, 4096] without axis 0"));
}

/* ---- hand-derived times ---- */

/* einsum: 2 x (256, 256) @ (256, 256) bf16 in 128^3 blocks, grid (2, 2, 2, 2):
 * a step's MXU pass is 128 rows + a 128-row fill = 256 cycles, its VPU 32
 * store cycles (k = 0: zero the accumulator and update it; k = 1: update and
 * cast to o): 288 ns. After: the last o block (32 KiB). */
static void test_einsum_time(void **state)
{
    (void)state;
    struct result r = check_op(
        "{op: einsum, batch: 2, m: 256, k: 256, n: 256, block: {bm: 128, bk: 128, bn: 128}}",
        loop_s(16, 288, 32768), "mxu");
    assert_true(r.flops[0] == 2.0 * 2 * 256 * 256 * 256);
}

/* fusion: x [1024, 1024] f32 with a [1024] f32 scale (read once, 4 KiB),
 * 6 ALU (384 cycles) and 2 transcendentals (EUP 512) per element. */
static void test_fusion_broadcast_time(void **state)
{
    (void)state;
    check_op("{op: fusion, inputs: [{shape: [1024, 1024], dtype: f32}, {shape: [1024], dtype: "
             "f32}], outputs: [{shape: [1024, 1024], dtype: f32}], vpu_ops: 6, "
             "transcendentals: 2, block: 256}",
             loop_s(4, 512, 4096 + 1048576), "vpu");
}

/* fusion reductions of [1024, 1024] f32 with 1 ALU op (the add) per element.
 * Along the rows (reduce_axis 1): loads 256 -> 85.33 (XLU 32 -> 64, stores
 * 32); after: the last [256] f32 block. Along the columns (0): loads 85.33
 * (last step: XLU 8 -> 16, 8 stores); after: the [1024] f32 sums. Both cost
 * less than their overhead. A leading axis ([4, 256, 1024] along 0): one
 * (256, 1024) slice a step, loads 85.33, the last step stores the 256-vreg
 * sum; after: the [256, 1024] f32 output (1 MiB). */
static void test_fusion_reduction_time(void **state)
{
    (void)state;
    const char *in = "{op: fusion, inputs: [{shape: [1024, 1024], dtype: f32}], outputs: "
                     "[{shape: [1024], dtype: f32}], vpu_ops: 1, block: 256, reduce_axis: ";
    char op[256];
    for (int axis = 0; axis < 2; axis++) {
        snprintf(op, sizeof op, "%s%d}", in, axis);
        check_op(op, loop_s(4, 256.0 / 3, 4096), "overhead");
    }
    check_op("{op: fusion, inputs: [{shape: [4, 256, 1024], dtype: f32}], outputs: [{shape: "
             "[256, 1024], dtype: f32}], vpu_ops: 1, block: 256, reduce_axis: 0}",
             loop_s(4, 0, 1048576) + (3 * 256.0 / 3 + 256) * 1e-9, "vpu");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fusion_relation_follows_numpy_broadcasting),
        cmocka_unit_test(test_fusion_check_op_names_the_array),
        cmocka_unit_test(test_einsum_time),
        cmocka_unit_test(test_fusion_broadcast_time),
        cmocka_unit_test(test_fusion_reduction_time),
    };
    return cmocka_run_group_tests_name("xla", tests, NULL, NULL);
}
