/* tests/unit/test_paged.c -- paged_attention: functional results against
 * naive attention, DMA counts derived by hand, the megacore split, upstream's
 * error messages, and SimGrid runs (ragged_paged_attention: test_ragged.c). */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel.h"
#include "kernels/pallas.h"
#include "pl_rec.h"
#include "config/op_table.h"
#include "sim_fork.h"

static struct op paged_op(int64_t B, int64_t hq, int64_t hkv, const int64_t *lengths)
{
    struct op op = {.kind = OP_PAGED, .name = (char *)"pa"};
    struct op_paged *p = &op.u.paged;
    p->batch = B, p->q_heads = hq, p->kv_heads = hkv, p->head_dim = 128;
    p->dt = p->kv_dt = DT_F32;
    p->page_size = 16, p->pages_per_seq = 8, p->pages_per_compute_block = 2;
    p->inline_seq_dim = true;
    p->lengths = (int64_t *)lengths;
    p->shuffled_pages = true, p->seed = 5;
    return op;
}

/* Runs 'op' functionally on one core and returns the worst error; 'k' stays
 * initialised for the caller to inspect and release. */
static double paged_functional(const struct op *op, struct kern *k)
{
    struct chip_params ch = test_chip();
    return rec_functional_ok(k, op, &ch, 11);
}

static const int64_t RAGGED_LENS[] = {0, 3, 20, 33, 64, 128};

/* GQA 4:1 (q launched as f32), ragged lengths including 0, shuffled pages. */
static void test_paged_functional_gqa_ragged_lengths(void **state)
{
    (void)state;
    struct op op = paged_op(6, 8, 2, RAGGED_LENS);
    struct kern k;
    double worst = paged_functional(&op, &k);
    assert_true(worst < 1e-5);
    /* the zero-length sequence keeps the initialised o = 0 (inline_seq_dim) */
    const float *o = k.calls[0].operands[3].data;
    for (int e = 0; e < 8 * 128; e++)
        assert_true(o[e] == 0.0f);
    kern_fini(&k);
}

/* One grid step per compute block: the same numbers. */
static void test_paged_functional_grid_over_blocks(void **state)
{
    (void)state;
    struct op op = paged_op(6, 8, 2, RAGGED_LENS);
    op.u.paged.inline_seq_dim = false;
    struct kern k;
    assert_true(paged_functional(&op, &k) < 1e-5);
    assert_int_equal(k.calls[0].ngrid, 4);
    assert_int_equal(k.calls[0].grid[3], 4); /* pages_per_seq / ppcb */
    kern_fini(&k);
}

/* int8 pages with per-row scales (extra scale DMAs), bf16 q with 8 groups. */
static void test_paged_functional_int8_kv(void **state)
{
    (void)state;
    struct op op = paged_op(6, 16, 2, RAGGED_LENS);
    op.u.paged.dt = DT_BF16, op.u.paged.kv_dt = DT_INT8;
    struct kern k;
    double worst = paged_functional(&op, &k);
    assert_true(worst < 2e-2);
    assert_int_equal(k.calls[0].nscratch, 4);
    kern_fini(&k);
}

/* lengths [0, 20, 70], bk = 2 pages x 16 = 32 tokens, Hkv = 2, inline:
 * compute blocks per kv head: 0 + cdiv(20, 32) + cdiv(70, 32) = 0 + 1 + 3 = 4,
 * so 2 heads x 4 blocks x (2 k + 2 v page DMAs) = 32; the grid (1, 3, 2) has 6
 * steps: 6 q fetches and 6 x 3 write-backs (o, m, l); 1 scalar-prefetch copy:
 * 32 + 6 + 18 + 1 = 57. int8 adds 2 x 2 scale DMAs per block: + 8 x 4 = 89. */
static void test_paged_dma_count_hand(void **state)
{
    (void)state;
    static const int64_t lens[] = {0, 20, 70};
    struct chip_params ch = test_chip();
    char err[256];
    for (int quant = 0; quant < 2; quant++) {
        struct op op = paged_op(3, 8, 2, lens);
        op.u.paged.kv_dt = quant ? DT_INT8 : DT_F32;
        struct kern k;
        assert_int_equal(kern_init(&k, op_row(op.kind)->kern, &op, &ch, false, err, sizeof err), 0);
        struct rec r = {0};
        struct pl_stats st = rec_run_core(&k, &ch, 0, 1, &r);
        assert_int_equal(st.dmas, quant ? 89 : 57);
        assert_int_equal(st.steps, 6);
        kern_fini(&k);
    }
}

/* Outputs of core 'core' are nonzero exactly for its (b, h): kv_head mode
 * gives core c the kv heads h = h' * 2 + c, batch mode the rows b = b' * 2 + c. */
static void megacore_case(enum megacore_mode mode)
{
    static const int64_t lens[] = {17, 40, 128, 5};
    struct chip_params ch = test_chip();
    ch.cores = 2, ch.megacore = true;
    struct op op = paged_op(4, 8, 4, lens);
    op.u.paged.megacore_mode = mode;
    char err[256];
    for (int core = 0; core < 2; core++) {
        struct kern k;
        assert_int_equal(kern_init(&k, op_row(op.kind)->kern, &op, &ch, true, err, sizeof err), 0);
        assert_int_equal(k.calls[0].grid[0], 2);
        assert_int_equal(k.calls[0].grid[1], mode == MEGACORE_BATCH ? 2 : 4);
        assert_int_equal(k.calls[0].grid[2], mode == MEGACORE_KV_HEAD ? 2 : 4);
        kern_data(&k, 3);
        struct rec r = {0};
        struct pl_stats st = rec_run_core(&k, &ch, core, 2, &r);
        assert_int_equal(st.steps, 8);
        const float *o = k.calls[0].operands[3].data;
        for (int b = 0; b < 4; b++)
            for (int hq = 0; hq < 8; hq++) {
                int h = hq / 2;
                bool mine = (mode == MEGACORE_KV_HEAD ? h : b) % 2 == core;
                bool nonzero = false;
                for (int d = 0; d < 128; d++)
                    nonzero |= o[(b * 8 + hq) * 128 + d] != 0.0f;
                assert_int_equal(nonzero, mine);
            }
        kern_fini(&k);
    }
    /* both cores together match the reference */
    struct kern k;
    assert_int_equal(kern_init(&k, op_row(op.kind)->kern, &op, &ch, true, err, sizeof err), 0);
    kern_data(&k, 3);
    for (int core = 0; core < 2; core++) {
        struct rec r = {0};
        rec_run_core(&k, &ch, core, 2, &r);
    }
    bool ok = false;
    char msg[256];
    kern_verify(&k, &ok, msg, sizeof msg);
    assert_true(ok);
    kern_fini(&k);
}

static void test_paged_megacore_kv_head_interleaved(void **state)
{
    (void)state;
    megacore_case(MEGACORE_KV_HEAD);
}

static void test_paged_megacore_batch_interleaved(void **state)
{
    (void)state;
    megacore_case(MEGACORE_BATCH);
}

static void test_paged_upstream_errors(void **state)
{
    (void)state;
    static const int64_t lens[] = {1, 2, 3};
    struct chip_params ch = test_chip(), mc = test_chip();
    mc.cores = 2, mc.megacore = true;
    struct op op = paged_op(3, 6, 4, lens);
    rec_expect_error(&op, &ch,
                     "Number of Q heads must be divisible by number of KV heads. Got 6 "
                     "and 4.");
    op = paged_op(3, 8, 2, lens);
    op.u.paged.pages_per_compute_block = 3;
    rec_expect_error(&op, &ch,
                     "pages_per_compute_block must be divisible by pages per sequence. "
                     "Got 3 and 8.");
    op = paged_op(3, 3, 3, lens);
    op.u.paged.megacore_mode = MEGACORE_KV_HEAD;
    rec_expect_error(&op, &mc, "number of KV heads must be even when megacore_mode is 'kv_head'");
    op = paged_op(3, 8, 2, lens);
    op.u.paged.megacore_mode = MEGACORE_BATCH;
    rec_expect_error(&op, &mc, "batch size must be even when megacore_mode is 'batch'");
    op.u.paged.megacore_mode = MEGACORE_KV_HEAD;
    rec_expect_error(&op, &ch,
                     "megacore_mode 'kv_head' needs a megacore chip (v4, v5p): on test both "
                     "core_index values run on one TensorCore and the second waits for a "
                     "prefetch that was never issued (upstream: \"set this only if megacore is "
                     "enabled, otherwise the kernel may hang\")");
}

/* A paged run on SimGrid: functional check passes and the summary counts the
 * DMAs of test_paged_dma_count_hand; on v5p kv_head mode uses both cores. */
static void test_paged_simgrid_runs(void **state)
{
    (void)state;
    struct result r = run("chip: v5e\nworkload:\n  - {op: paged_attention, functional: true, "
                          "batch: 3, q_heads: 8, kv_heads: 2, head_dim: 128, dtype: f32, "
                          "page_size: 16, pages_per_seq: 8, pages_per_compute_block: 2, "
                          "lengths: [0, 20, 70], pages: shuffled}\n",
                          NULL, 0);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.dmas[0], 57);
    r = run("chip: v5p\nworkload:\n  - {op: paged_attention, functional: true, batch: 4, "
            "q_heads: 8, kv_heads: 4, head_dim: 128, dtype: bf16, page_size: 16, "
            "pages_per_seq: 8, pages_per_compute_block: 4, megacore_mode: kv_head, "
            "decode: {batch: 4, kv_len: {min: 1, max: 128}, seed: 2}}\n",
            NULL, 0);
    assert_int_equal(r.rc, 0);
}

int main(void)
{
    (void)assert_time; /* sim_fork.h's timing helper: not used here */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paged_functional_gqa_ragged_lengths),
        cmocka_unit_test(test_paged_functional_grid_over_blocks),
        cmocka_unit_test(test_paged_functional_int8_kv),
        cmocka_unit_test(test_paged_dma_count_hand),
        cmocka_unit_test(test_paged_megacore_kv_head_interleaved),
        cmocka_unit_test(test_paged_megacore_batch_interleaved),
        cmocka_unit_test(test_paged_upstream_errors),
        cmocka_unit_test(test_paged_simgrid_runs),
    };
    return cmocka_run_group_tests_name("paged", tests, NULL, NULL);
}
