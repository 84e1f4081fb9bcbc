/* tests/unit/test_ragged3.c -- ragged_paged_attention_v3 (vLLM TPU's RPA
 * v3, kernels/ragged3.c): DMA counts and bytes of a decode step and of a
 * causal prefill chunk derived by hand, what differs from v2 on the same
 * batch and why, upstream's block-size defaults and error messages, and a
 * SimGrid run of a decode step against bytes / HBM bandwidth. */
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel.h"
#include "kernels/pallas.h"
#include "pl_rec.h"
#include "config/op_table.h"
#include "sim_fork.h"
#include "base/diag.h"
#include "config/cfg.h"

/* bf16, 8 q heads and 1 kv head (Llama-3-70B's per chip at tensor 8), head
 * dim 128, pages of 16 tokens, max_model_len 64: 4 pages per sequence. */
static struct op rpa3_op(enum op_kind kind, int n, int64_t *q_lens, int64_t *kv_lens)
{
    struct op op = {.kind = kind, .name = (char *)"rpa"};
    struct op_ragged *p = &op.u.ragged;
    p->q_heads = 8, p->kv_heads = 1, p->head_dim = 128;
    p->dt = p->kv_dt = DT_BF16;
    p->page_size = 16, p->max_model_len = 64;
    p->nseqs = n, p->q_lens = q_lens, p->kv_lens = kv_lens;
    return op;
}

static struct pl_stats rpa3_run(const struct op *op, struct rec *r)
{
    struct chip_params ch = test_chip();
    struct kern k;
    rec_init_ok(&k, op, &ch, false);
    struct pl_stats st = rec_run_core(&k, &ch, 0, 1, r);
    kern_fini(&k);
    return st;
}

/* Two decodes (q_len 1) over kv_len 40 and 17. Defaults (v5): decode blocks
 * bq 1, bkv = min(16 MiB x 2 / 4 / 128 / 2, 64) = 64 tokens = 4 pages; a
 * token's K+V is one row of 128 32-bit words (2 heads x bf16 packed) = 512 B.
 *   seq 0: 39 cached tokens: pages of 16, 16, 7 (3 DMAs; the 4th page holds
 *          none and copies nothing) + the new token (1 DMA);
 *   seq 1: 16 cached: 1 page + the new token.
 * DMA bytes (rows padded to 8, 4 KiB granules): 16 rows 8 KiB, 7 or 1 row
 * 4 KiB: seq 0 8 + 8 + 4 + 4, seq 1 8 + 4 = 36 KiB of kv; q: 2 fetches of
 * [1, 8 heads / 2 packed = 4 rows -> 8, 128] words = 4 KiB each; scalar
 * prefetch per call (two calls: decode, then the empty mixed one):
 * (128 + 128 + 128 + 512) x 4 B = 3584 B. In: 36 + 8 KiB + 2 x 3584 =
 * 52224 B. Out: the new tokens to their pages (2), o (2).
 * DMAs: 4 + 2 + 2 (q) + 2 (update) + 2 (o) + 2 (prefetch) = 14.
 * Compute: one chunk of bkv_csz = 64 tokens per sequence (masked past
 * kv_len), 8 q rows: 2 x (2 x 8 x 128 x 64) FLOPs each. */
static void test_rpa3_decode_dmas_hand(void **state)
{
    (void)state;
    int64_t q[] = {1, 1}, kv[] = {40, 17};
    struct op op = rpa3_op(OP_RAGGED3, 2, q, kv);
    struct rec r = {0};
    struct pl_stats st = rpa3_run(&op, &r);
    assert_int_equal(st.dmas, 14);
    assert_int_equal(r.in_bytes, 36 * 1024 + 8 * 1024 + 2 * 3584);
    int out = 0;
    for (int i = 0; i < r.nrec; i++)
        out += !r.in[i];
    assert_int_equal(out, 4);
    assert_true(st.flops == 2 * 2 * (2.0 * 8 * 128 * 64));
}

/* The scalar core's bookkeeping of each kv-block fetch (issue 28): SGLang-JAX
 * counted about 160 bundles for a fetch of 16 pages and the new tokens (17
 * copies) on TPU7x, so 160 / 17 bundles a copy slot. The two decodes above
 * fetch one 4-page block each (the prologue's for seq 0, the prefetch of seq
 * 1's during seq 0): 2 x 5 x 160 / 17 = 94.12 bundles, at the test chip's 1
 * GHz 94.12 ns, on the serial path (counted with the VPU time). */
static void test_rpa3_fetch_scalar_hand(void **state)
{
    (void)state;
    assert_true(fabs(r3_fetch_bundles(16) - 160.0) < 1e-9);
    int64_t q[] = {1, 1}, kv[] = {40, 17};
    struct op op = rpa3_op(OP_RAGGED3, 2, q, kv);
    struct rec r = {0};
    struct pl_stats st = rpa3_run(&op, &r);
    double want = 2 * 5 * 160.0 / 17 / 1e9;
    assert_true(fabs(st.scalar_s - want) < 1e-15);
    assert_true(st.vpu_s >= want);
}

/* The same two decodes on RPA v2 (kernels/ragged.c): its default block is
 * min(128, 4) = 4 pages, fetched whole for every sequence (a page past the
 * sequence copies page 0 again): 2 x 4 page DMAs; and its page [16 tokens,
 * 2 combined heads, 128] bf16 pads the 2 heads to the test chip's 8 bf16
 * sublanes: 16 x 8 x 128 x 2 B = 32 KiB a page. In: 8 x 32 KiB, one q block
 * [2, 8, 128] bf16 = 4 KiB and 64 B of scalar prefetch = 266304 B, against
 * v3's 36 KiB of kv (v3 packs K and V in 32-bit words and copies only the
 * cached tokens). And
 * v2 computes its 32-token q block... here min(32, T = 2) = 2 tokens: 16
 * rows per kv block against v3's 8. */
static void test_rpa3_vs_v2_same_decode(void **state)
{
    (void)state;
    int64_t q[] = {1, 1}, kv[] = {40, 17};
    struct op op = rpa3_op(OP_RAGGED, 2, q, kv);
    struct rec r = {0};
    struct pl_stats st = rpa3_run(&op, &r);
    int pages = 0;
    for (int i = 0; i < r.nrec; i++)
        pages += r.op[i] < 0 && r.in[i];
    assert_int_equal(pages, 8 + 1); /* and its one scalar prefetch */
    assert_int_equal(r.in_bytes, 8 * 32768 + 4096 + 64);
    assert_true(st.flops == 2 * 2 * (2.0 * 16 * 128 * 64));
}

/* A prefill chunk of 32 new tokens over kv_len 64 (32 cached), mixed blocks
 * [16, 16, 16, 16] (one page a kv block): q blocks of 16, causal ends
 * min(64, 32 + 16) = 48 and 64: 3 + 4 = 7 kv blocks (v2 would walk all 4
 * for each q block: 8). kv DMAs: q block 0: blocks 0, 1 one cached page
 * each, block 2 its 16 new tokens; q block 1: 1 + 1 + 1 + 1 (blocks 2, 3
 * new) = 7; the new tokens go to their 2 pages on the last q block only;
 * q: 2 fetches; o: 2; prefetch: 2 (the decode call is empty). = 15.
 * FLOPs: 7 blocks x 2 x (2 x 128 rows (16 x 8 heads) x 16 x 128). */
static void test_rpa3_causal_prefill_blocks_hand(void **state)
{
    (void)state;
    int64_t q[] = {32}, kv[] = {64};
    struct op op = rpa3_op(OP_RAGGED3, 1, q, kv);
    for (int i = 0; i < 4; i++)
        op.u.ragged.m_block_sizes[i] = 16;
    struct rec r = {0};
    struct pl_stats st = rpa3_run(&op, &r);
    assert_int_equal(st.dmas, 15);
    assert_true(st.flops == 7 * 2 * (2.0 * 128 * 16 * 128));
    int out = 0;
    for (int i = 0; i < r.nrec; i++)
        out += !r.in[i];
    assert_int_equal(out, 2 + 2);
}

/* update_kv_cache: false reads every token from the cache: the 32 new
 * tokens are 2 cached pages, nothing is written back but o. */
static void test_rpa3_no_kv_update(void **state)
{
    (void)state;
    int64_t q[] = {32}, kv[] = {64};
    struct op op = rpa3_op(OP_RAGGED3, 1, q, kv);
    for (int i = 0; i < 4; i++)
        op.u.ragged.m_block_sizes[i] = 16;
    op.u.ragged.no_kv_update = true;
    struct rec r = {0};
    struct pl_stats st = rpa3_run(&op, &r);
    assert_int_equal(st.dmas, 7 + 2 + 2 + 2);
}

/* get_default_block_sizes on v5/v6 (mixed): bq = min(1024 / 8, 32 / 2) =
 * 16 for T = 32, bkv = min(1024, 64) = 64, bq_csz = min(512 / 8, 32) = 32
 * (above bq: cut to it, not refused), bkv_csz = min(512, 32) = 32. The
 * VMEM limit is the whole VMEM (128 MiB on the test chip, whose scoped
 * default is 16 MiB). v5e-type 5 kv heads (Llama-2-13B at tensor 8): v2
 * refuses the untiled 10 combined heads, v3 packs them in 5 rows. */
static void test_rpa3_defaults_and_packing(void **state)
{
    (void)state;
    int64_t q[] = {32}, kv[] = {64};
    struct op op = rpa3_op(OP_RAGGED3, 1, q, kv);
    struct chip_params ch = test_chip();
    struct kern k;
    rec_init_ok(&k, &op, &ch, false);
    assert_int_equal(k.ncalls, 2);
    assert_int_equal(k.calls[1].scratch[0].shape[1], 64 * 1); /* bkv x stride */
    assert_int_equal(k.calls[1].scratch[1].shape[1], 16 * 8 / 2); /* bq rows, packed */
    assert_int_equal(k.calls[1].vmem_limit_bytes, 128 << 20);
    kern_fini(&k);
    op.u.ragged.q_heads = 40, op.u.ragged.kv_heads = 5;
    rec_init_ok(&k, &op, &ch, false);
    kern_fini(&k);
    op.kind = OP_RAGGED;
    rec_expect_error(&op, &ch,
                     "Not implemented: num_combined_kv_heads=10 can not be XLA fully tiled.");
}

static void test_rpa3_errors(void **state)
{
    (void)state;
    int64_t q[] = {1, 1}, kv[] = {40, 17};
    struct op op = rpa3_op(OP_RAGGED3, 2, q, kv);
    struct chip_params ch = test_chip();
    int64_t d[4] = {8, 16, 3, 16};
    memcpy(op.u.ragged.d_block_sizes, d, sizeof d);
    rec_expect_error(&op, &ch,
                     "decode bq_csz=3 and bq_sz=8 must satisfy (0 < bq_csz and bq_sz % bq_csz "
                     "== 0).");
    int64_t m[4] = {16, 48, 16, 32};
    memset(op.u.ragged.d_block_sizes, 0, sizeof d);
    memcpy(op.u.ragged.m_block_sizes, m, sizeof m);
    rec_expect_error(&op, &ch,
                     "mixed bkv_csz=32 and bkv_sz=48 must satisfy (0 < bkv_csz and bkv_sz % "
                     "bkv_csz == 0).");
    m[1] = 24, m[3] = 8;
    memcpy(op.u.ragged.m_block_sizes, m, sizeof m);
    rec_expect_error(&op, &ch, "mixed bkv_sz=24 must be divisible by page_size=16.");
    memset(op.u.ragged.m_block_sizes, 0, sizeof m);
    op.u.ragged.kv_dt = DT_INT8;
    rec_expect_error(&op, &ch, "Expected kv_cache.dtype=int8 to be a floating point.");
    op.u.ragged.kv_dt = DT_BF16;
    ch.generation = 4;
    rec_expect_error(&op, &ch, "Unsupported tpu_version=4.");
    ch.generation = 5;
    q[1] = 18;
    rec_expect_error(&op, &ch, "Require 0 < q_len=18 <= kv_len=17 at sequence 1.");
}

/* One decode step on v5e (819 GB/s, launch 2 us a pallas_call): 8
 * sequences of kv_len 1024, q 2 heads, kv 1 head, pages of 128, max_model_len
 * 1024 (one 8-page kv block a sequence). Each reads 1023 cached tokens:
 * 7 pages of 64 KiB and one of 127 rows (-> 128: 64 KiB), and its new token
 * (4 KiB): 8 x 516 KiB = 4128 KiB, + q 8 x 4 KiB + 2 x 3584 B of scalar
 * prefetch: 4267008 B in; out: 8 new tokens and 8 o blocks of 4 KiB, 65536
 * B: 4332544 B. HBM alone: 4332544 B / 819e9 = 5.29 us, and the two
 * launches 4 us: at least 9.29 us. Each sequence's own work (MXU q.k and f32 p.v over 1024 tokens
 * and the softmax) runs while the next sequence's pages come in; nothing
 * overlaps at worst: below 9.29 us + 8 x 1 us. */
static void test_rpa3_decode_step_time_hand(void **state)
{
    (void)state;
    struct result res = run("chip: v5e\nworkload:\n  - {op: ragged_paged_attention_v3, "
                            "q_heads: 2, kv_heads: 1, head_dim: 128, page_size: 128, "
                            "max_model_len: 1024, decode: {batch: 8, kv_len: 1024}}\n",
                            NULL, 0);
    assert_int_equal(res.rc, 0);
    assert_true(res.hbm[0] == 4332544.0);
    double t = res.end[0] - res.start[0];
    assert_true(t >= 4e-6 + 4332544.0 / 819e9);
    assert_true(t <= 4e-6 + 4332544.0 / 819e9 + 8e-6);
}

/* model: attention_kernel picks the op a decode step's attention runs as,
 * and the block keys of that kernel reach it (issue 31.5): Llama-3-70B's
 * 64 q and 8 kv heads over tensor 8 are 8 and 1 a chip. */
static void test_rpa3_model_keys(void **state)
{
    (void)state;
    static const char *const tails[2] = {"attention_kernel: rpa_v3, d_block_sizes: [1, 1024, 1, "
                                         "512]}\n",
                                         "num_queries_per_block: 8}\n"};
    for (int v = 0; v < 2; v++) {
        char yaml[512];
        snprintf(yaml, sizeof yaml,
                 "chip: v6e\ntopology: {shape: [2, 4]}\nmesh: {tensor: 8}\n"
                 "model: {arch: llama, layers: 2, d_model: 1024, heads: 64, kv_heads: 8, "
                 "head_dim: 128, ffn: 2048, vocab: 8192, batch: 64, mode: decode, kv_len: 1500, "
                 "page_size: 128, %s",
                 tails[v]);
        struct cfg_scenario sc;
        struct diag *d = diag_new();
        int rc = cfg_load_scenario_text(yaml, strlen(yaml), "m.yaml", NULL, 0, &sc, d);
        if (rc != 0)
            diag_print(d, stderr);
        assert_int_equal(rc, 0);
        int found = 0;
        for (int i = 0; i < sc.nops; i++) {
            const struct op_ragged *r = &sc.ops[i].u.ragged;
            if (sc.ops[i].kind == OP_RAGGED3) {
                found++;
                assert_int_equal(v, 0);
                assert_int_equal(r->q_heads, 8);
                assert_int_equal(r->d_block_sizes[1], 1024);
                assert_int_equal(r->d_block_sizes[3], 512);
            } else if (sc.ops[i].kind == OP_RAGGED) {
                found++;
                assert_int_equal(v, 1);
                assert_int_equal(r->num_queries_per_block, 8);
                assert_int_equal(r->num_kv_pages_per_block, 0);
            }
        }
        assert_int_equal(found, 1);
        cfg_scenario_fini(&sc);
        diag_free(d);
    }
}

int main(void)
{
    (void)assert_time; /* sim_fork.h's timing helper: not used here */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rpa3_decode_dmas_hand),
        cmocka_unit_test(test_rpa3_fetch_scalar_hand),
        cmocka_unit_test(test_rpa3_vs_v2_same_decode),
        cmocka_unit_test(test_rpa3_causal_prefill_blocks_hand),
        cmocka_unit_test(test_rpa3_no_kv_update),
        cmocka_unit_test(test_rpa3_defaults_and_packing),
        cmocka_unit_test(test_rpa3_errors),
        cmocka_unit_test(test_rpa3_decode_step_time_hand),
        cmocka_unit_test(test_rpa3_model_keys),
    };
    return cmocka_run_group_tests_name("ragged3", tests, NULL, NULL);
}
