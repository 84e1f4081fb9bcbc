/* tests/unit/test_ragged.c -- ragged_paged_attention (RPA v2): functional
 * results against naive attention, DMA and step counts derived by hand,
 * upstream's error messages and block-size defaults, and a SimGrid run. */
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/kernel.h"
#include "kernels/pallas.h"
#include "pl_rec.h"
#include "sim_fork.h"

static struct op ragged_op(int64_t hq, int64_t hkv, int n, int64_t *q_lens, int64_t *kv_lens)
{
    struct op op = {.kind = OP_RAGGED, .name = (char *)"rpa"};
    struct op_ragged *p = &op.u.ragged;
    p->q_heads = hq, p->kv_heads = hkv, p->head_dim = 128;
    p->dt = p->kv_dt = DT_F32;
    p->page_size = 16, p->max_model_len = 64;
    p->num_kv_pages_per_block = 2, p->num_queries_per_block = 4;
    p->nseqs = n, p->q_lens = q_lens, p->kv_lens = kv_lens;
    p->shuffled_pages = true, p->seed = 9;
    return op;
}

static double ragged_functional(const struct op *op)
{
    struct chip_params ch = test_chip();
    struct kern k;
    double worst = rec_functional_ok(&k, op, &ch, 21);
    kern_fini(&k);
    return worst;
}

/* Prefill, decode and a chunk crossing q blocks, GQA 2:1, two head blocks. */
static void test_ragged_functional_mixed_batch(void **state)
{
    (void)state;
    int64_t q[] = {3, 1, 5, 1, 7}, kv[] = {40, 17, 5, 64, 30};
    struct op op = ragged_op(16, 8, 5, q, kv);
    assert_true(ragged_functional(&op) < 1e-5);
    op.u.ragged.shuffled_pages = false;
    op.u.ragged.num_queries_per_block = 8, op.u.ragged.num_kv_pages_per_block = 1;
    assert_true(ragged_functional(&op) < 1e-5);
}

static void test_ragged_functional_window_soft_cap(void **state)
{
    (void)state;
    int64_t q[] = {3, 1, 5, 1, 7}, kv[] = {40, 17, 5, 64, 30};
    struct op op = ragged_op(16, 8, 5, q, kv);
    op.u.ragged.sliding_window = 9;
    assert_true(ragged_functional(&op) < 1e-5);
    op.u.ragged.soft_cap = 2.5;
    assert_true(ragged_functional(&op) < 1e-5);
    op.u.ragged.dt = op.u.ragged.kv_dt = DT_BF16; /* 16 q heads per block: one head block */
    assert_true(ragged_functional(&op) < 1e-2);
}

static void test_ragged_functional_int8_kv(void **state)
{
    (void)state;
    int64_t q[] = {3, 1, 5, 1, 7}, kv[] = {40, 17, 5, 64, 30};
    struct op op = ragged_op(32, 8, 5, q, kv);
    op.u.ragged.dt = DT_BF16, op.u.ragged.kv_dt = DT_INT8;
    assert_true(ragged_functional(&op) < 1e-2);
}

/* f32, Hq = 16, Hkv = 8: combined kv heads 16 -> 8 per block (8 x packing 1),
 * 8 q heads per block: 2 head blocks. Sequences (q_len, kv_len) = (3, 40),
 * (1, 17), (5, 5); T = 9, bq = 4: q blocks [0,4) [4,8) [8,12); cu_q_lens
 * [0, 3, 4, 9]; a kv block is 2 pages = 32 tokens. Visits per head block:
 *   q block 0: seq 0 (ends at 3 < 4: go on) 2 kv blocks; seq 1 (ends at 4):
 *              1 block; q block 1: seq 2 (ends at 9 > 8) 1 block; q block 2:
 *              seq 2 again 1 block. = 5 kv blocks.
 * 2 head blocks x 5 kv blocks x 2 page DMAs = 20 (the first at (0, 0), then
 * one prefetch per block but the last); q: 6 steps x 1 fetch; o: 6
 * write-backs; 1 scalar-prefetch copy: 20 + 6 + 6 + 1 = 33. */
static void test_ragged_dma_count_hand(void **state)
{
    (void)state;
    int64_t q[] = {3, 1, 5}, kv[] = {40, 17, 5};
    struct op op = ragged_op(16, 8, 3, q, kv);
    struct chip_params ch = test_chip();
    struct kern k;
    char err[256];
    assert_int_equal(kern_init(&k, &op, &ch, false, err, sizeof err), 0);
    assert_int_equal(k.calls[0].grid[0], 2);
    assert_int_equal(k.calls[0].grid[1], 3);
    struct rec r = {0};
    struct pl_stats st = rec_run_core(&k, &ch, 0, 1, &r);
    assert_int_equal(st.dmas, 33);
    kern_fini(&k);
    /* the same count in the summary of a SimGrid run (v5e: one core) */
    struct result res = run("chip: v5e\nworkload:\n  - {op: ragged_paged_attention, "
                            "functional: true, q_heads: 16, kv_heads: 8, head_dim: 128, dtype: "
                            "f32, kv_dtype: f32, page_size: 16, max_model_len: 64, "
                            "num_kv_pages_per_block: 2, num_queries_per_block: 4, sequences: "
                            "[{q_len: 3, kv_len: 40}, {q_len: 1, kv_len: 17}, {q_len: 5, "
                            "kv_len: 5}], pages: shuffled}\n",
                            NULL, 0);
    assert_int_equal(res.rc, 0);
    assert_int_equal(res.dmas[0], 33);
    assert_int_equal(res.steps[0], 6);
}

static void test_ragged_upstream_errors(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    int64_t q[] = {3, 6}, kv[] = {40, 5};
    struct op op = ragged_op(16, 8, 2, q, kv);
    rec_expect_error(&op, &ch, "q_len=6 must be less or equal to kv_len=5 at sequence 1.");
    q[1] = 2;
    op = ragged_op(12, 8, 2, q, kv);
    rec_expect_error(&op, &ch, "num_q_heads=12 must be divisible by num_kv_heads=8");
    op = ragged_op(16, 8, 2, q, kv);
    op.u.ragged.num_kv_pages_per_block = 5;
    rec_expect_error(&op, &ch, "num_kv_pages_per_block=5 must be in range (0, 4].");
    op = ragged_op(6, 3, 2, q, kv);
    op.u.ragged.dt = op.u.ragged.kv_dt = DT_BF16;
    rec_expect_error(&op, &ch,
                     "Not implemented: num_combined_kv_heads=6 can not be XLA fully tiled.");
}

/* Block sizes left at 0: (128, 32) clipped to (pages_per_seq, T); v4 (32, 32). */
static void test_ragged_default_block_sizes(void **state)
{
    (void)state;
    int64_t q[] = {30, 1}, kv[] = {40, 2000};
    struct op op = ragged_op(32, 8, 2, q, kv);
    op.u.ragged.dt = op.u.ragged.kv_dt = DT_BF16;
    op.u.ragged.max_model_len = 4096; /* 256 pages of 16 per sequence */
    op.u.ragged.num_kv_pages_per_block = 0, op.u.ragged.num_queries_per_block = 0;
    for (int gen = 4; gen <= 6; gen++) {
        struct chip_params ch = test_chip();
        ch.generation = gen; /* v4 defaults to 32 kv pages per block, later ones to 128 */
        /* 128 pages: kv_bufs alone are 16 MiB, over the 16 MiB default limit */
        ch.vmem_limit_bytes = 32 << 20;
        struct kern k;
        char err[256];
        assert_int_equal(kern_init(&k, &op, &ch, false, err, sizeof err), 0);
        assert_int_equal(k.calls[0].scratch[0].shape[1], gen == 4 ? 32 : 128);
        assert_int_equal(k.calls[0].ops[0].block[0], 31); /* min(32, T = 31) */
        assert_int_equal(k.calls[0].grid[0], 1);          /* 16 combined heads: all 32 q heads */
        kern_fini(&k);
    }
    op.u.ragged.max_model_len = 64; /* 4 pages per sequence */
    kv[1] = 64;
    struct chip_params ch = test_chip();
    struct kern k;
    char err[256];
    assert_int_equal(kern_init(&k, &op, &ch, false, err, sizeof err), 0);
    assert_int_equal(k.calls[0].scratch[0].shape[1], 4);
    kern_fini(&k);
}

int main(void)
{
    (void)assert_time; /* sim_fork.h's timing helper: not used here */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ragged_functional_mixed_batch),
        cmocka_unit_test(test_ragged_functional_window_soft_cap),
        cmocka_unit_test(test_ragged_functional_int8_kv),
        cmocka_unit_test(test_ragged_dma_count_hand),
        cmocka_unit_test(test_ragged_upstream_errors),
        cmocka_unit_test(test_ragged_default_block_sizes),
    };
    return cmocka_run_group_tests_name("ragged", tests, NULL, NULL);
}
