/* tests/unit/test_ragged.c -- ragged_paged_attention (RPA v2): functional
 * results against naive attention, DMA, byte, FLOP and step counts derived by
 * hand (a mixed prefill + decode batch), the sliding window (masks, skips no
 * kv block), upstream's error messages and block-size defaults, and a
 * SimGrid run. */
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/kernel.h"
#include "kernels/pallas.h"
#include "pl_rec.h"
#include "config/op_table.h"
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
    assert_int_equal(kern_init(&k, op_row(op.kind)->kern, &op, &ch, false, err, sizeof err), 0);
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

/* A mixed batch on one head block: f32, Hq = 8, Hkv = 4 (combined kv heads 8
 * = 8 x packing 1: all in one block, ratio 2, 8 q heads per block), page 16,
 * max_model_len 128 (8 pages per sequence), 2 pages = 32 tokens per kv block,
 * 4 queries per block. Sequences (q_len, kv_len): decode (1, 70), prefill
 * (6, 6), decode (1, 33), prefill chunk (5, 40); T = 13, cu_q_lens
 * [0, 1, 7, 8, 13], q blocks [0,4) [4,8) [8,12) [12,16): grid (1, 4).
 *   q block 0: seq 0 (ends at 1 < 4) 3 kv blocks (70 > 64); seq 1 (ends at 7
 *              > 4: stop) 1 block;
 *   q block 1: seq 1 again 1 block; seq 2 (ends at 8) 2 blocks (33 > 32);
 *   q block 2: seq 3 (ends at 13 > 12) 2 blocks;
 *   q block 3: seq 3 again 2 blocks.                  = 11 kv blocks
 * Each is 2 page DMAs (22): the first started at (0, 0), each of the others
 * prefetched by the block before; the last block prefetches nothing (no
 * next head block). q: 4 fetches of (4, 8, 128) f32 = 16 KiB; o: 4
 * write-backs; 1 scalar-prefetch copy of 4 S + 4 S pps + 4 (S + 1) + 8 + 4 =
 * 176 bytes: 22 + 4 + 4 + 1 = 31 DMAs in 4 steps. A page DMA is (16, 8, 128)
 * f32 = 64 KiB, so 22 x 64 KiB + 4 x 16 KiB + 176 bytes come in. Per kv block
 * and kv head, q.k and p.v are each 2 x (4 x 2 rows) x 32 x 128 FLOPs. */
static struct op ragged_mixed_op(int64_t *q, int64_t *kv)
{
    struct op op = ragged_op(8, 4, 4, q, kv);
    op.u.ragged.max_model_len = 128;
    return op;
}

static void test_ragged_mixed_prefill_decode_dmas_hand(void **state)
{
    (void)state;
    int64_t q[] = {1, 6, 1, 5}, kv[] = {70, 6, 33, 40};
    struct op op = ragged_mixed_op(q, kv);
    struct chip_params ch = test_chip();
    struct kern k;
    rec_init_ok(&k, &op, &ch, false);
    const struct pl_call *c = &k.calls[0];
    assert_int_equal(c->grid[0], 1);
    assert_int_equal(c->grid[1], 4);
    assert_int_equal(c->operands[0].block[1], 8); /* q heads per block */
    struct rec r = {0};
    struct pl_stats st = rec_run_core(&k, &ch, 0, 1, &r);
    assert_int_equal(st.dmas, 31);
    assert_int_equal(st.steps, 4);
    assert_int_equal(r.fetches[rec_op_index(c, "q")], 4);
    assert_int_equal(r.writes[rec_op_index(c, "o")], 4);
    int manual = 0; /* page copies and the scalar prefetch name no operand */
    for (int i = 0; i < r.nrec; i++)
        manual += r.op[i] < 0;
    assert_int_equal(manual, 22 + 1);
    assert_int_equal(r.in_bytes, 22 * 65536 + 4 * 16384 + 176);
    assert_true(st.flops == 11.0 * 4 * 2 * (2.0 * 8 * 32 * 128));
    kern_fini(&k);
}

/* RPA v2 has no sliding-window block skip (upstream kernel.py walks every kv
 * block while kv_blk * num_kv_per_blk < kv_len; the window only masks), and
 * neither does the model: with sliding_window = 8 the mixed batch above
 * fetches and multiplies the same 11 kv blocks, and only the VPU does more:
 * 3 ALU ops per score for the window compare, on 11 blocks x 4 kv heads x
 * (4 x 2 rows) x 32 scores. */
static void test_ragged_sliding_window_fetches_every_kv_block(void **state)
{
    (void)state;
    int64_t q[] = {1, 6, 1, 5}, kv[] = {70, 6, 33, 40};
    struct chip_params ch = test_chip();
    struct pl_stats st[2];
    struct rec r[2];
    memset(r, 0, sizeof r);
    for (int w = 0; w < 2; w++) {
        struct op op = ragged_mixed_op(q, kv);
        op.u.ragged.sliding_window = w ? 8 : 0;
        struct kern k;
        rec_init_ok(&k, &op, &ch, false);
        st[w] = rec_run_core(&k, &ch, 0, 1, &r[w]);
        kern_fini(&k);
    }
    assert_int_equal(st[1].dmas, 31);
    assert_int_equal(r[1].in_bytes, r[0].in_bytes);
    assert_true(st[1].flops == st[0].flops);
    assert_float_equal(st[1].vpu_flops - st[0].vpu_flops, 11.0 * 4 * 8 * 32 * 3, 1e-6);
    /* and the window does change the numbers: the masked result still matches */
    struct op op = ragged_mixed_op(q, kv);
    op.u.ragged.sliding_window = 8;
    assert_true(ragged_functional(&op) < 1e-5);
}

/* The rules on block sizes and lengths, each with upstream's message (or
 * the VMEM budget's, naming every buffer). */
static void test_ragged_block_size_errors(void **state)
{
    (void)state;
    struct chip_params ch = test_chip();
    ch.vmem_bytes = 128 << 20, ch.vmem_limit_bytes = 16 << 20; /* the VMEM message's figures */
    int64_t q[] = {1, 6, 1, 5}, kv[] = {70, 6, 33, 40};
    struct op op = ragged_mixed_op(q, kv);
    op.u.ragged.num_kv_pages_per_block = 9; /* 8 pages per sequence */
    rec_expect_error(&op, &ch, "num_kv_pages_per_block=9 must be in range (0, 8].");
    op = ragged_mixed_op(q, kv);
    op.u.ragged.max_model_len = 64; /* 4 pages of 16: 70 tokens do not fit */
    rec_expect_error(&op, &ch,
                     "pages_per_seq=4 must be greater or equal to min_pages_per_seq=5 given "
                     "max_kv_len=70 and page_size=16.");
    op = ragged_mixed_op(q, kv);
    op.u.ragged.max_num_batched_tokens = 12; /* T = 13 */
    rec_expect_error(&op, &ch,
                     "Total q tokens 13 must be less or equal to max_num_batched_tokens=12.");
    op = ragged_mixed_op(q, kv);
    op.u.ragged.sliding_window = -1;
    rec_expect_error(&op, &ch, "sliding_window=-1 must be positive.");
    /* 128 pages per block: kv_bufs [2, 128, 16, 8, 128] f32 = 16 MiB alone;
     * q and o 2 x (4, 8, 128) f32, l and m [4, 8, 128] f32, acc (4, 8, 128) f32 */
    op = ragged_mixed_op(q, kv);
    op.u.ragged.max_model_len = 4096, op.u.ragged.num_kv_pages_per_block = 128;
    rec_expect_error(&op, &ch,
                     "VMEM footprint 16891904 bytes exceeds the scoped limit 16777216 bytes: "
                     "q 2 x 16384; o 2 x 16384; scratch kv_bufs 16777216; scratch l 16384; "
                     "scratch m 16384; scratch acc 16384; (raise vmem_limit_bytes, up to "
                     "134217728)");
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
        ch.rpa_kv_pages_per_block = gen == 4 ? 32 : 128; /* as configs/chips/ say */
        /* 128 pages: kv_bufs alone are 16 MiB, over the 16 MiB default limit */
        ch.vmem_limit_bytes = 32 << 20;
        struct kern k;
        char err[256];
        assert_int_equal(kern_init(&k, op_row(op.kind)->kern, &op, &ch, false, err, sizeof err), 0);
        assert_int_equal(k.calls[0].scratch[0].shape[1], gen == 4 ? 32 : 128);
        assert_int_equal(k.calls[0].operands[0].block[0], 31); /* min(32, T = 31) */
        assert_int_equal(k.calls[0].grid[0], 1); /* 16 combined heads: all 32 q heads */
        kern_fini(&k);
    }
    op.u.ragged.max_model_len = 64; /* 4 pages per sequence */
    kv[1] = 64;
    struct chip_params ch = test_chip();
    struct kern k;
    char err[256];
    assert_int_equal(kern_init(&k, op_row(op.kind)->kern, &op, &ch, false, err, sizeof err), 0);
    assert_int_equal(k.calls[0].scratch[0].shape[1], 4);
    kern_fini(&k);
}

/* A block override of one size only: the other comes from the default
 * (issue 31.5; both used to be replaced by the defaults, silently). T = 31
 * rows, 4 pages per sequence: queries 8 given -> grid of cdiv(31, 8) = 4 q
 * blocks with kv pages min(128, 4) = 4; kv pages 2 given -> 2 with queries
 * min(32, 31) = 31. */
static void test_ragged_one_block_size_completed(void **state)
{
    (void)state;
    int64_t q[] = {30, 1}, kv[] = {40, 64};
    struct op op = ragged_op(32, 8, 2, q, kv);
    struct chip_params ch = test_chip();
    struct kern k;
    char err[256];
    op.u.ragged.num_kv_pages_per_block = 0, op.u.ragged.num_queries_per_block = 8;
    assert_int_equal(kern_init(&k, op_row(op.kind)->kern, &op, &ch, false, err, sizeof err), 0);
    assert_int_equal(k.calls[0].operands[0].block[0], 8);
    assert_int_equal(k.calls[0].grid[1], 4);
    assert_int_equal(k.calls[0].scratch[0].shape[1], 4);
    kern_fini(&k);
    op.u.ragged.num_kv_pages_per_block = 2, op.u.ragged.num_queries_per_block = 0;
    assert_int_equal(kern_init(&k, op_row(op.kind)->kern, &op, &ch, false, err, sizeof err), 0);
    assert_int_equal(k.calls[0].scratch[0].shape[1], 2);
    assert_int_equal(k.calls[0].operands[0].block[0], 31);
    assert_int_equal(k.calls[0].grid[1], 1);
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
        cmocka_unit_test(test_ragged_mixed_prefill_decode_dmas_hand),
        cmocka_unit_test(test_ragged_sliding_window_fetches_every_kv_block),
        cmocka_unit_test(test_ragged_block_size_errors),
        cmocka_unit_test(test_ragged_one_block_size_completed),
    };
    return cmocka_run_group_tests_name("ragged", tests, NULL, NULL);
}
