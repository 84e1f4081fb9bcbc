/* tests/unit/test_explain.c -- the explanations of summary.json (engine/explain.h)
 * on hand-checked cases: megacore imbalance per TensorCore, sub-kernels of a
 * flash attention fwd+bwd, a collective's algbw/busbw (nccl-tests) and its
 * share of the links, the runner-up unit. */
#include "test_util.h"

#include "engine/explain.h"
#include "sim_fork.h"

/* v5p matmul 128 x 8192 x 128 in 128^3 blocks: grid (1, 1, 64), whose
 * parallel prefix has one block: TensorCore 0 runs all 64 steps, TensorCore
 * 1 none (it only waits for the launch). With m = 256 the prefix has 2 blocks,
 * one per core: the same MXU time on both. */
static void test_megacore_imbalance_per_core(void **state)
{
    (void)state;
    struct result r = run("chip: v5p\nworkload:\n"
                          "  - {op: matmul, m: 128, k: 8192, n: 128}\n", NULL, 0);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.ntc, 2);
    assert_true(r.core[0][0].mxu_s > 0);
    assert_float_equal(r.core[0][1].mxu_s, 0, 0);
    /* the op's busy_s is per core: the average of the two */
    assert_float_equal(r.mxu_s[0], r.core[0][0].mxu_s / 2, 1e-15);
    assert_float_equal(r.tc[0].mxu_s, r.core[0][0].mxu_s, 1e-15);
    assert_float_equal(r.tc[1].mxu_s, 0, 0);
    /* core 1 idles for all but the launch: idle + compute = the run */
    assert_float_equal(r.tc[1].idle_s + r.tc[1].compute_s, r.total, 1e-12);
    assert_true(r.tc[1].compute_s < 0.1 * r.total);
    struct result b = run("chip: v5p\nworkload:\n"
                          "  - {op: matmul, m: 256, k: 8192, n: 128}\n", NULL, 0);
    assert_int_equal(b.rc, 0);
    assert_float_equal(b.core[0][0].mxu_s, b.core[0][1].mxu_s, 1e-15);
    assert_float_equal(b.core[0][0].mxu_s, r.core[0][0].mxu_s, 1e-15);
}

/* flash attention fwd+bwd runs four pallas_calls named as upstream names
 * them (<op>.fwd, .di, .dkv, .dq); on TensorCore 0 their times add up to
 * the op's (the op starts with the first launch and ends with the last
 * call). A one-call op has none. */
static void test_flash_subkernels(void **state)
{
    (void)state;
    struct result r = run("chip: v5e\nworkload:\n"
                          "  - {op: flash_attention, name: attn, batch: 1, heads: 2, q_seq_len: 512,\n"
                          "     head_dim: 128, mode: fwd_bwd}\n"
                          "  - {op: matmul, m: 256, k: 256, n: 256}\n",
                          NULL, 0);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.nsub[0], 4);
    static const char *const phase[] = {"fwd", "di", "dkv", "dq"};
    double sum = 0;
    for (int i = 0; i < 4; i++) {
        assert_string_equal(r.sub[0][i].phase, phase[i]);
        char want[32];
        snprintf(want, sizeof want, "attn.%s", phase[i]);
        assert_string_equal(r.sub[0][i].name, want);
        assert_true(r.sub[0][i].core[0].time_s > 0);
        sum += r.sub[0][i].core[0].time_s;
    }
    assert_float_equal(sum, r.core[0][0].time_s, 1e-12);
    assert_true(r.sub[0][2].core[0].mxu_s > 0); /* dkv runs matmuls */
    assert_int_equal(r.nsub[1], 0);
    assert_string_equal(explain_phase("splash_mha_dkv_no_residuals"), "dkv");
    assert_string_equal(explain_phase("splash_mqa_fwd_segmented_residuals"), "fwd");
    assert_string_equal(explain_phase("splash_mha_bwd_no_residuals"), "bwd");
    assert_string_equal(explain_phase("mm"), "");
}

/* nccl-tests (PERFORMANCE.md): algbw = S / t; busbw = algbw (n-1)/n for an
 * all-gather (S: the gathered output, n x bytes), 2 (n-1)/n for an
 * all-reduce (S: bytes). A v5e ring of 16 (wrapped), 64 MiB per device:
 * the device first copies its own shard into the output (64 MiB read and
 * written at 819 GB/s: 164 us), then the bidirectional ring moves 15/16 of
 * S (1006632960 B) over 2 links at 45 GB/s x 0.95 = 42.75 GB/s each:
 * 11.773 ms, plus 5 us and 15 steps of ~0.45 us: t = 11.949 ms, busbw =
 * 1006632960 / t = 84.24 GB/s, 93.6 % of the links' published 2 x 45 GB/s. */
static void test_collective_busbw(void **state)
{
    (void)state;
    struct result r = run("chip: v5e\ntopology: {shape: [16]}\nworkload:\n"
                          "  - {op: all_gather, bytes: 64MiB}\n"
                          "  - {op: all_reduce, bytes: 64MiB}\n",
                          NULL, 0);
    assert_int_equal(r.rc, 0);
    const struct summary_coll *ag = &r.coll[0], *ar = &r.coll[1];
    assert_true(ag->present && ar->present);
    assert_int_equal(ag->n, 16);
    assert_float_equal(ag->data_bytes, 16.0 * 67108864, 0);
    assert_float_equal(ag->algbw_Bps, 16.0 * 67108864 / r.time[0], 1);
    assert_float_equal(ag->busbw_Bps, ag->algbw_Bps * 15 / 16, 1);
    assert_float_equal(ag->busbw_Bps, 84.24e9, 0.002 * 84.24e9);
    assert_float_equal(ag->link_peak_Bps, 90e9, 0);
    assert_float_equal(ag->link_share, 0.936, 0.002);
    assert_float_equal(ar->data_bytes, 67108864, 0);
    assert_float_equal(ar->algbw_Bps, 67108864 / r.time[1], 1);
    assert_float_equal(ar->busbw_Bps, ar->algbw_Bps * 2 * 15 / 16, 1);
    assert_false(r.coll[0].present && r.nops > 2);
}

/* The runner-up: a 2048^3 bf16 matmul in 512 x 1024 x 1024 blocks on v5e is
 * MXU-bound; the HBM comes second (its busy time is below the MXU's). */
static void test_bound_runner_up(void **state)
{
    (void)state;
    struct result r = run("chip: v5e\nworkload:\n"
                          "  - {op: matmul, m: 2048, k: 2048, n: 2048,\n"
                          "     block: {bm: 512, bk: 1024, bn: 1024}}\n",
                          NULL, 0);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.bound[0], "mxu");
    assert_string_equal(r.runner_up[0], "hbm");
    assert_string_equal(bound_name(r.tc[0].bound), "mxu");
    assert_string_equal(bound_name(r.tc[0].runner_up), "hbm");
}

/* Useful vs padded bytes. A matmul 8 x 128 x 128 in one block (bf16): x and
 * o are [8, 128] blocks of 2048 bytes, which a DMA moves as a whole 4 KiB
 * granule (4096 bytes moved each for 2048 of data); y [128, 128] is 32768:
 * 40960 moved, 36864 useful.
 * A ragged decode with 1 KV head (the case) on v6e: one sequence of
 * 100 cached tokens, pages of 16 tokens x 2 combined heads (k, v) x 128.
 * With upstream's default blocks (128 pages a kv block on v6e) its one kv
 * block fetches 128 page slots: 7 hold its tokens, the other 121 fetch page
 * 0 again; each is a 32768-byte DMA of the tiled [16, 8, 128] layout (the
 * 2 combined heads padded to bf16's 8 sublanes on v6e) for at
 * most 16 x 2 x 128 x 2 = 8192 bytes of data; the data is 100 x 512 = 51200
 * bytes of KV. Besides: q
 * [1, 8, 128] (2048 of data, 4096 moved), o the same, the scalar prefetch
 * (1048 bytes, all data). Moved 4096 + 128 x 32768 + 4096 + 1048 =
 * 4203544; useful 51200 + 2048 + 2048 + 1048 = 56344. */
static void test_useful_and_padded_bytes(void **state)
{
    (void)state;
    struct result r = run("chip: v5e\nworkload:\n"
                          "  - {op: matmul, m: 8, k: 128, n: 128, block: {bm: 8, bk: 128, bn: 128}}\n",
                          NULL, 0);
    assert_int_equal(r.rc, 0);
    assert_float_equal(r.hbm[0], 40960, 0);
    assert_float_equal(r.useful[0], 36864, 0);
    struct result g = run("chip: v6e\nworkload:\n"
                          "  - {op: ragged_paged_attention, q_heads: 8, kv_heads: 1, head_dim: 128,\n"
                          "     page_size: 16, max_model_len: 4096,\n"
                          "     sequences: [{q_len: 1, kv_len: 100}]}\n",
                          NULL, 0);
    assert_int_equal(g.rc, 0);
    assert_float_equal(g.hbm[0], 4203544, 0);
    assert_float_equal(g.useful[0], 56344, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_megacore_imbalance_per_core),
        cmocka_unit_test(test_flash_subkernels),
        cmocka_unit_test(test_collective_busbw),
        cmocka_unit_test(test_bound_runner_up),
        cmocka_unit_test(test_useful_and_padded_bytes),
    };
    return cmocka_run_group_tests_name("explain", tests, NULL, NULL);
}
