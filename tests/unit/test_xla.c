/* tests/unit/test_xla.c -- XLA ops (fusion, the named forms, einsum): how a
 * loop reads each array, the blocks chosen from the VMEM limit, and every
 * form's time on SimGrid against a hand derivation.
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
#include "kernels/xla.h"
#include "config/op_table.h"
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

/* ---- blocks from the scoped VMEM limit ---- */

static struct kern build(const char *yaml, struct cfg_scenario *sc)
{
    struct diag *d = diag_new();
    assert_int_equal(cfg_load_scenario_text(yaml, strlen(yaml), "x.yaml", NULL, 0, sc, d), 0);
    diag_free(d);
    struct kern k;
    char err[512];
    const struct op *op = &sc->ops[0];
    assert_int_equal(kern_init(&k, op_row(op->kind)->kern, op, &sc->chip, false, err, sizeof err),
                     0);
    return k;
}

static int64_t block0(const struct kern *k, int call, int operand, int dim)
{
    return k->calls[call].operands[operand].block[dim];
}

/* Auto blocks: whole rows when they fit, then the largest power-of-two
 * number of rows whose double-buffered footprint fits half the limit. */
static void test_fusion_blocks_fill_half_the_vmem_limit(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    /* rmsnorm [4096, 4096] bf16 on v5e (16 MiB): 128 rows of x and y, 1 MiB
     * each, double-buffered, plus the scale once = 4 MiB + 8 KiB; 256 rows
     * would be 8 KiB over 8 MiB */
    struct kern k = build("chip: v5e\nworkload:\n  - {op: rmsnorm, shape: [4096, 4096]}\n", &sc);
    assert_int_equal(block0(&k, 0, 0, 0), 128);
    assert_int_equal(block0(&k, 0, 0, 1), 4096);
    assert_null(k.calls[0].operands[1].index); /* the scale: a trivial window, read once */
    assert_int_equal(pl_num_steps(&k.calls[0]), 32);
    kern_fini(&k);
    cfg_scenario_fini(&sc);
    /* a raised limit gives bigger blocks */
    k = build("chip: v5e\nworkload:\n  - {op: rmsnorm, shape: [4096, 4096], "
              "vmem_limit_bytes: 64MiB}\n",
              &sc);
    assert_int_equal(block0(&k, 0, 0, 0), 512);
    kern_fini(&k);
    cfg_scenario_fini(&sc);
    /* adamw over 1e9 f32 parameters: 28 bytes a parameter, double-buffered:
     * 131072 x 56 = 7 MiB */
    k = build("chip: v5e\nworkload:\n  - {op: optimizer, params: 1000000000}\n", &sc);
    assert_int_equal(block0(&k, 0, 0, 0), 131072);
    assert_int_equal(pl_num_steps(&k.calls[0]), 7630); /* the last block padded */
    kern_fini(&k);
    cfg_scenario_fini(&sc);
    /* cross entropy over a 128256 vocabulary: rows of 250 KiB do not fit 128
     * at a time (the fewest a flat f32 output takes), so the columns are
     * blocked: 768, the largest multiple of 128 dividing 128256 that fits,
     * then 2048 rows (2048 x 768 x 2 B x 2 buffers = 6 MiB) */
    k = build("chip: v5e\nworkload:\n  - {op: cross_entropy, shape: [8192, 128256]}\n", &sc);
    assert_int_equal(k.ncalls, 2);
    assert_int_equal(block0(&k, 1, 0, 0), 2048);
    assert_int_equal(block0(&k, 1, 0, 1), 768);
    assert_int_equal(k.calls[1].sem[1], PL_ARBITRARY); /* the reduced dim, innermost */
    kern_fini(&k);
    cfg_scenario_fini(&sc);
    /* a layernorm backward over rows of 20480 (a 1T-parameter model's width):
     * its per-row mean and rstd are [R] f32, whose blocks take 128 rows at
     * least; 128 whole rows of x, dy and dx, 5 MiB each, double-buffered,
     * are 31.5 MB, over the 16 MiB scoped limit: as an XLA fusion it may use
     * the chip's VMEM (a pallas_call would be refused) */
    k = build("chip: v5p\nworkload:\n  - {op: layernorm, shape: [65536, 20480], mode: bwd}\n",
              &sc);
    assert_int_equal(block0(&k, 0, 0, 0), 128);
    assert_int_equal(pl_vmem_bytes(&k.calls[0], &sc.chip), 31500288);
    assert_int_equal(k.calls[0].vmem_limit_bytes, sc.chip.vmem_bytes);
    kern_fini(&k);
    cfg_scenario_fini(&sc);
    /* ... and one that fits keeps the scoped limit */
    k = build("chip: v5p\nworkload:\n  - {op: layernorm, shape: [65536, 8192], mode: bwd}\n",
              &sc);
    assert_int_equal(k.calls[0].vmem_limit_bytes, 0);
    kern_fini(&k);
    cfg_scenario_fini(&sc);
}

/* ---- hand-derived times ---- */

/* gelu over [1024, 1024] f32 in 4 blocks of 256 rows: 8 ALU per element,
 * 2048 ALU ops over 4 slots = 512 cycles (EUP 256, stores 256); gating a
 * second input (gelu(x0) * x1) adds 1 ALU: 9 x 256 / 4 = 576. add of 3
 * inputs folds twice: 2 ALU (128 cycles), but 768 loads over 3 slots and
 * 256 stores take 256. The last y block, 1 MiB, is written after step 3. */
static void test_elementwise_time(void **state)
{
    (void)state;
    check_op("{op: elementwise, fn: gelu, shape: [1024, 1024], dtype: f32, block: 256}",
             loop_s(4, 512, 1048576), "vpu");
    check_op("{op: elementwise, fn: gelu, inputs: 2, shape: [1024, 1024], dtype: f32, "
             "block: 256}",
             loop_s(4, 576, 1048576), "vpu");
    check_op("{op: elementwise, fn: add, inputs: 3, shape: [1024, 1024], dtype: f32, block: 256}",
             loop_s(4, 256, 1048576), "vpu");
}

/* rmsnorm [1024, 1024] bf16, 256 rows a block: 256 vregs of x; ALU 4 x 256
 * + 2 x 32 per row (a (256, 1) column is 32 vregs) = 1088 -> 272 cycles;
 * loads 256 + the scale's 8 -> 88; stores 256; EUP 32; XLU 32 -> 64. Before
 * step 0 the scale (2 KiB, one 4 KiB granule), after step 3 the last y block
 * (512 KiB). */
static void test_rmsnorm_fwd_time(void **state)
{
    (void)state;
    struct result r = check_op("{op: rmsnorm, shape: [1024, 1024], block: 256}",
                               loop_s(4, 272, 4096 + 524288), "vpu");
    assert_true(r.hbm[0] == 2.0 * 1024 * 1024 * 2 + 4096);
}

/* The brief's example, HBM-bound: rmsnorm [4096, 4096] bf16 with the default
 * blocks (128 rows) on round numbers: HBM 32.768 GB/s (32 KiB per us), step
 * overhead 1 us. A step moves 2 MiB (64 us) and computes 0.52 us (512 vregs:
 * ALU (4 x 512 + 2 x 64) / 4 = 520 cycles); the next block is fetched before
 * the body and the write-back overlaps the next step, so the HBM is busy from
 * the first byte to the last: launch + (2 x 32 MiB + 8 KiB of scale) / bw =
 * 2 + 2048.25 us (exact fidelity). */
static void test_rmsnorm_hbm_bound_time(void **state)
{
    (void)state;
    const char *sets[] = {
        "chip.hbm.bandwidth=32.768GBps",       "chip.tensorcore.dma_latency=0us",
        "chip.tensorcore.launch_overhead=2us", "chip.tensorcore.step_overhead=1us",
        "chip.tensorcore.clock=1GHz",          "options.fidelity=exact"};
    struct result r =
        run("chip: v5e\nworkload:\n  - {op: rmsnorm, shape: [4096, 4096], dtype: bf16}\n", sets, 6);
    assert_int_equal(r.rc, 0);
    assert_time(r.total, 2050.25e-6);
    assert_string_equal(r.bound[0], "hbm");
    assert_int_equal(r.steps[0], 32);
    assert_true(r.hbm[0] == 67117056.0);
}

/* rmsnorm bwd, two loops. dx: loads x, dy 512 + scale 8 -> 173.3; ALU 8 x
 * 256 + 5 x 32 = 2208 -> 552; XLU 2 x 32 -> 128; stores dx 256 + rstd 32.
 * Before: the scale (4 KiB); after: the last dx (512 KiB) and rstd (256 f32,
 * a 4 KiB granule) blocks. dscale (a sum over the rows, 256 at a time):
 * loads 512 + rstd 32 -> 181.3; ALU 3 x 256 -> 192; at the last step 8 XLU
 * (16 cycles) and 8 stores; after: dscale [1024] f32 (4 KiB). */
static void test_rmsnorm_bwd_time(void **state)
{
    (void)state;
    check_op("{op: rmsnorm, mode: bwd, shape: [1024, 1024], block: 256}",
             loop_s(4, 552, 4096 + 524288 + 4096) + loop_s(4, 192, 4096), "vpu");
}

/* layernorm fwd: ALU 7 x 256 + 5 x 32 = 1952 -> 488 (XLU 64 -> 128, stores
 * 256); before: scale and bias. bwd dx: ALU 13 x 256 + 7 x 32 = 3552 -> 888
 * (XLU 4 x 32 -> 256, stores dx, mean, rstd 320); dscale and dbias: loads
 * 576 -> 192, ALU 5 x 256 -> 320; after: two [1024] f32. */
static void test_layernorm_time(void **state)
{
    (void)state;
    check_op("{op: layernorm, shape: [1024, 1024], block: 256}", loop_s(4, 488, 8192 + 524288),
             "vpu");
    check_op("{op: layernorm, mode: bwd, shape: [1024, 1024], block: 256}",
             loop_s(4, 888, 4096 + 524288 + 2 * 4096) + loop_s(4, 320, 2 * 4096), "vpu");
}

/* softmax [1024, 1024] f32: fwd ALU 5 x 256 -> 320 (EUP 256 + 32, XLU 64 ->
 * 128, stores 256); bwd ALU 4 x 256 -> 256 (stores 256, loads 512 -> 170.7). */
static void test_softmax_time(void **state)
{
    (void)state;
    check_op("{op: softmax, shape: [1024, 1024], dtype: f32, block: 256}", loop_s(4, 320, 1048576),
             "vpu");
    check_op("{op: softmax, mode: bwd, shape: [1024, 1024], dtype: f32, block: 256}",
             loop_s(4, 256, 1048576), "vpu");
}

/* rope [1024 tokens, 8 heads, 128] bf16 as [1024, 1024]: loads x 256 + cos
 * and sin (256, 128) 32 each -> 106.7; ALU 3 x 256 -> 192; the rotation is
 * 1 XLU op per vreg: 256 -> 512 cycles. Written [tokens, heads * head_dim],
 * it is the same loop. */
static void test_rope_time(void **state)
{
    (void)state;
    check_op("{op: rope, shape: [1024, 8, 128], block: 256}", loop_s(4, 512, 524288), "vpu");
    check_op("{op: rope, shape: [1024, 1024], head_dim: 128, block: 256}",
             loop_s(4, 512, 524288), "vpu");
}

/* cross_entropy [1024, 1024] bf16, two passes of 4 steps. max: loads 256 ->
 * 85.33 (ALU 64, XLU 32 -> 64, stores 32). logsumexp: loads 256 + max 32 +
 * labels 32 -> 106.7; ALU 6 x 256 + 3 x 32 = 1632 -> 408 (EUP 288, XLU 2 x 32
 * -> 128). After each, its last [256] f32 block (a 4 KiB granule). */
static void test_cross_entropy_time(void **state)
{
    (void)state;
    check_op("{op: cross_entropy, shape: [1024, 1024], block: 256}",
             loop_s(4, 256.0 / 3, 4096) + loop_s(4, 408, 4096), "vpu");
}

/* embedding: DMA only. On round numbers (32 KiB per us, 1 us steps) each of
 * 4 steps moves ids (256 int32: a 4 KiB granule), 256 rows of 2 KiB and
 * writes them back: launch + (4 x 4 KiB + 2 x 2 MiB) / bw = 2 + 128.5 us. */
static void test_embedding_time(void **state)
{
    (void)state;
    const char *y = "chip: v5e\nworkload:\n  - {op: embedding, rows: 1024, vocab: 32000, "
                    "d: 1024, block: 256}\n";
    const char *sets[] = {"chip.hbm.bandwidth=32.768GBps", "chip.tensorcore.dma_latency=0us",
                          "chip.tensorcore.launch_overhead=2us",
                          "chip.tensorcore.step_overhead=1us", "options.fidelity=exact"};
    for (int nsets = 4; nsets <= 5; nsets++) {
        struct result r = run(y, sets, nsets);
        assert_int_equal(r.rc, 0);
        assert_time(r.total, 130.5e-6);
        assert_string_equal(r.bound[0], "hbm");
    }
}

/* optimizer over 2^20 f32 parameters in 4 blocks of 2^18 (256 vregs an
 * array). adamw: loads 4 x 256 -> 341.3; ALU 15 x 256 -> 960; EUP 512; stores
 * 768; after: param, mu, nu blocks (3 MiB); 28 bytes a parameter. sgd: stores
 * 256 bind (ALU 2 x 256 -> 128). adafactor: g^2 sums ALU 3 x 256 -> 192, the
 * update's RMS ALU 5 x 256 -> 320, apply ALU 8 x 256 -> 512; the sums are one
 * f32 each (a 4 KiB granule). */
static void test_optimizer_time(void **state)
{
    (void)state;
    struct result r = check_op("{op: optimizer, params: 1048576, block: 262144}",
                               loop_s(4, 960, 3 * 1048576), "vpu");
    assert_true(r.hbm[0] == 28.0 * 1048576);
    check_op("{op: optimizer, algorithm: sgd, params: 1048576, block: 262144}",
             loop_s(4, 256, 1048576), "vpu");
    check_op("{op: optimizer, algorithm: adafactor, params: 1048576, block: 262144}",
             loop_s(4, 192, 4096) + loop_s(4, 320, 4096) + loop_s(4, 512, 1048576), "vpu");
}

/* transpose [1024, 1024] f32 in (512, 512) tiles: 256 vregs each, 1 XLU op
 * per vreg -> 512 cycles. copy: 256 stores per 256-row block. */
static void test_transpose_and_copy_time(void **state)
{
    (void)state;
    check_op("{op: transpose, shape: [1024, 1024], dtype: f32, block: 512}",
             loop_s(4, 512, 1048576), "vpu");
    check_op("{op: copy, shape: [1024, 1024], dtype: f32, block: 256}", loop_s(4, 256, 1048576),
             "vpu");
}

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
        cmocka_unit_test(test_fusion_blocks_fill_half_the_vmem_limit),
        cmocka_unit_test(test_elementwise_time),
        cmocka_unit_test(test_rmsnorm_fwd_time),
        cmocka_unit_test(test_rmsnorm_hbm_bound_time),
        cmocka_unit_test(test_rmsnorm_bwd_time),
        cmocka_unit_test(test_layernorm_time),
        cmocka_unit_test(test_softmax_time),
        cmocka_unit_test(test_rope_time),
        cmocka_unit_test(test_cross_entropy_time),
        cmocka_unit_test(test_embedding_time),
        cmocka_unit_test(test_optimizer_time),
        cmocka_unit_test(test_transpose_and_copy_time),
        cmocka_unit_test(test_einsum_time),
        cmocka_unit_test(test_fusion_broadcast_time),
        cmocka_unit_test(test_fusion_reduction_time),
    };
    return cmocka_run_group_tests_name("xla", tests, NULL, NULL);
}
