/* serving/serve_rpa.h -- the block sizes SGLang-JAX gives ragged paged
 * attention v3's mixed call (the one that runs its prefill chunks), for the
 * engine step of serve.engine.scheduler: sglang with attention_kernel: rpa_v3
 * when the model gives no m_block_sizes (docs/reference.md, "SGLang's
 * scheduler"). SGLang-JAX runs its own copy of the v3 kernel, whose q blocks
 * hold at most 32 tokens, where vLLM's defaults (kernels/ragged3.c) take
 * 2048 / (q heads per KV head) on v7. */
#ifndef TPUSIM_SERVING_SERVE_RPA_H
#define TPUSIM_SERVING_SERVE_RPA_H

#include <stdint.h>

/* What SGLang-JAX keys its choice on: per device. */
struct serve_rpa_shape {
    int generation;            /* the chip's (5, 6, 7, ...) */
    int64_t q_heads, kv_heads; /* on one device */
    int64_t head_dim, page_size;
    int64_t kv_packing;        /* KV values per 32-bit word: 2 for bf16 */
    int64_t tokens;            /* the step's tokens, padded (the kernel's max_num_tokens) */
    int64_t max_model_len;     /* the page table's width in tokens */
};

/* (bq_sz, bkv_sz, bq_csz, bkv_csz) in 'b': on v7, the tuned table's entry
 * for the shape when it has one, else get_default_block_sizes' heuristic. */
void serve_rpa_sglang_m_blocks(const struct serve_rpa_shape *s, int64_t b[4]);

#endif
