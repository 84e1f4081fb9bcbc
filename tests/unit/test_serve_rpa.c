/* tests/unit/test_serve_rpa.c -- SGLang-JAX's block sizes for RPA v3's mixed
 * call (serving/serve_rpa.c), each figure read off sgl-project/sglang-jax at
 * 2d97c787 by hand: TUNED_BLOCK_SIZES_V3["TPU v7"] and get_default_block_sizes. */
#include "test_util.h"

#include "serving/serve_rpa.h"

static void expect(const struct serve_rpa_shape *s, int64_t bq, int64_t bkv, int64_t bqc,
                   int64_t bkvc)
{
    int64_t b[4] = {0};
    serve_rpa_sglang_m_blocks(s, b);
    assert_int_equal(b[0], bq);
    assert_int_equal(b[1], bkv);
    assert_int_equal(b[2], bqc);
    assert_int_equal(b[3], bkvc);
}

/* v7, a prefill step of 2048 tokens: Qwen3-8B at TP 8 (4 q heads and 1 KV head
 * a device) hits ("m", None, bf16, bf16, 4, 1, 128, 128, 2048): (32, 2048, 32,
 * 2048); Llama-3-70B (8 and 1) (32, 2048, 32, 1024); 2000 tokens round up to
 * the same key; 24 q heads round up to 32 and 3 KV heads to 4: (32, 1024, 32,
 * 1024). vLLM's defaults (kernels/ragged3.c) would take q blocks of 2048 / 4 =
 * 512 tokens for the first. */
static void test_v7_tuned(void **state)
{
    (void)state;
    struct serve_rpa_shape s = {.generation = 7, .q_heads = 4, .kv_heads = 1, .head_dim = 128,
                                .page_size = 128, .kv_packing = 2, .tokens = 2048,
                                .max_model_len = 2048};
    expect(&s, 32, 2048, 32, 2048);
    s.q_heads = 8;
    expect(&s, 32, 2048, 32, 1024);
    s.tokens = 2000;
    expect(&s, 32, 2048, 32, 1024);
    s.q_heads = 24, s.kv_heads = 3;
    expect(&s, 32, 1024, 32, 1024);
    s.q_heads = 4, s.kv_heads = 1, s.tokens = 128; /* (4, 1, 128, 128, 128): (32, 256, 32, 256) */
    expect(&s, 32, 256, 32, 256);
}

/* The heuristic. v7 at 1024 tokens (no such key) and a page table of 2048
 * tokens: bq = min(32, 1024 / 2), bkv = min(2048, 2048 / 2) = 1024, bq_csz =
 * min(32, 1024 / 4, 1024), bkv_csz = min(1024, 1024). v6e (no lookup), Qwen3-8B
 * at TP 4 (8 and 2: r 4), 2048 tokens: bkv = min(1024, 2048), bkv_csz =
 * min(512, 1024); a step of 16 tokens: bq = min(32, 8) = 8, bq_csz = min(32,
 * 512 / 4, 16) = 16 cut to bq. A page table of 8192 tokens on v7: bkv = 2048,
 * bkv_csz 1024. */
static void test_heuristic(void **state)
{
    (void)state;
    struct serve_rpa_shape s = {.generation = 7, .q_heads = 4, .kv_heads = 1, .head_dim = 128,
                                .page_size = 128, .kv_packing = 2, .tokens = 1024,
                                .max_model_len = 2048};
    expect(&s, 32, 1024, 32, 1024);
    s.max_model_len = 8192;
    expect(&s, 32, 2048, 32, 1024);
    s.generation = 6, s.q_heads = 8, s.kv_heads = 2, s.tokens = 2048, s.max_model_len = 2048;
    expect(&s, 32, 1024, 32, 512);
    s.tokens = 16;
    expect(&s, 8, 1024, 8, 512);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v7_tuned),
        cmocka_unit_test(test_heuristic),
    };
    return cmocka_run_group_tests_name("serve_rpa", tests, NULL, NULL);
}
