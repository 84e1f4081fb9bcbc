/* workload/model.h -- model steps: a transformer and a mesh in, the per-chip
 * program of one step out. A scenario's `model:` (a preset from
 * configs/models/presets/ and/or dimensions) with its `mesh:` (logical axes
 * data, fsdp, tensor, sequence, expert, pipeline laid out on the slice) expands into
 * the workload every chip runs: per layer its norms, projections, rotary
 * embedding, attention kernel, MLP or routed experts and residuals, with
 * shard shapes; embedding, final norm, unembedding and loss; the backward
 * (dgrad and wgrad of every matmul, the attention backward kernels) and what
 * the remat policy recomputes; the optimizer on the local shard; and the
 * collectives the sharding implies (FSDP all-gather of each layer's weights
 * one layer ahead, reduce-scatter of its gradients, tensor-parallel
 * all-gather and reduce-scatter of activations, data-parallel all-reduce,
 * expert all-to-alls; workload/model_moe.c sizes the experts' routing,
 * workload/model_pipeline.c the pipeline's stages, microbatches and sends).
 * The builder emits the step as a program
 * (workload/program.h: each op with the tensors it reads and writes) and
 * workload/schedule.h derives what waits for what; the program's YAML is
 * plain workload YAML, loaded like any other (`tpusim expand` prints it).
 * Memory per chip and MaxText's FLOP count come with it. Uses base/,
 * models/, topology/ and workload/. */
#ifndef TPUSIM_WORKLOAD_MODEL_H
#define TPUSIM_WORKLOAD_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/diag.h"
#include "models/chip.h"
#include "topology/mesh.h"
#include "topology/topo.h"
#include "workload/program.h"

/* The most parameters a model may have: 1e15, 5700 GPT-3s (exact in a double). */
#define MODEL_MAX_PARAMS 1e15

enum model_arch { MODEL_LLAMA, MODEL_GPT, MODEL_MIXTRAL };
enum model_mode { MODEL_TRAIN, MODEL_PREFILL, MODEL_DECODE };
/* The tensors of a layer a remat policy names (MaxText's checkpoint names),
 * and where each one is between the forward and the backward. */
enum model_tensor {
    MT_INPUT,    /* decoder_layer_input: the layer's input (the scan carry) */
    MT_QUERY,    /* query_proj, after RoPE */
    MT_KEY,      /* key_proj */
    MT_VALUE,    /* value_proj */
    MT_CONTEXT,  /* context: the attention output and its logsumexp */
    MT_OUT_PROJ, /* out_proj: the attention's output projection */
    MT_MLPWI,    /* mlpwi_0 and mlpwi_1 (gate and up), mlpwi for a plain MLP */
    MT_MLPWO,    /* mlpwo: the MLP's output */
    MT_COUNT
};
enum model_keep { KEEP_REMAT, KEEP_DEVICE, KEEP_OFFLOAD };

struct model_remat {
    const char *name;            /* a policy's name, or "custom" */
    bool none;                   /* no policy: jax keeps every residual */
    enum model_keep t[MT_COUNT]; /* per tensor */
};
/* dot_product: MaxText's XLA attention (the scores materialized, softmax, two einsums). */
enum model_attention { MODEL_ATTN_AUTO, MODEL_ATTN_FLASH, MODEL_ATTN_SPLASH, MODEL_ATTN_DOT };

/* The XLA flags the expansion follows (`model.xla_flags:`, named as libtpu's flags;
 * workload/model_cmm.c): XLA's windowed einsums (collective matmuls) for the
 * tensor-parallel gather + matmul and matmul + reduce-scatter of the forward. */
struct model_xla_flags {
    bool windowed_ag;            /* xla_tpu_enable_windowed_einsum_for_all_gather */
    bool windowed_rs;            /* xla_tpu_enable_windowed_einsum_for_reduce_scatter */
    int64_t windowed_threshold_mib; /* xla_jf_spmd_threshold_for_windowed_einsum_mib */
    /* xla_tpu_enable_data_parallel_all_reduce_opt false (0, the default: true): one
     * data-parallel sum of every layer's gradient after the backward (XLA's while-loop
     * all-reduce code motion) instead of each layer's beside the backward below it */
    bool dp_sums_after_backward;
};
/* The pipeline schedules (workload/model_pipeline_int.h). */
enum model_pipe_schedule { PIPE_GPIPE, PIPE_1F1B, PIPE_CIRCULAR };

struct model {
    enum model_arch arch;
    int64_t layers, d_model, heads, kv_heads, head_dim, ffn, vocab, experts, top_k;
    int64_t seq_len;       /* tokens per sequence (decode: the new tokens per step, 1) */
    int64_t batch;         /* global sequences per step */
    int64_t kv_len;        /* decode: tokens already in each sequence's cache */
    int64_t page_size;     /* decode: KV cache page */
    enum model_mode mode;
    enum dtype dtype;      /* activations and the weights the matmuls use */
    enum dtype weight_dtype; /* master weights (and gradients) */
    enum dtype mu_dtype;   /* AdamW's first moment (the second is in weight_dtype) */
    struct model_remat remat;
    enum model_attention attention;
    /* decode and serving steps' ragged paged attention: RPA v3 (vLLM TPU's
     * kernel, kernels/ragged3.c) instead of v2 (`attention_kernel: rpa_v3`) */
    bool rpa_v3;
    /* its block sizes (0: the kernel's defaults): v2's num_kv_pages_per_block and
     * num_queries_per_block; v3's d_block_sizes and m_block_sizes */
    int64_t rpa_kv_pages, rpa_queries, rpa_d_blocks[4], rpa_m_blocks[4];
    int64_t attention_block; /* every block of the attention kernel; 0: searched (auto) */
    int64_t vocab_tiling;  /* the loss computed in this many chunks of tokens */
    /* Mixture of experts as it runs (workload/model_moe_int.h); zero values are
     * MaxText's defaults: dropless, balanced, the grouped matmul. */
    double capacity_factor;       /* MaxText's capacity_factor; <= 0: dropless */
    double expert_load_imbalance; /* busiest device's routed tokens over the mean; 0: 1 */
    bool dense_matmul;            /* sparse_matmul: false (the einsum dispatch) */
    /* Pipeline parallelism over the `pipeline` mesh axis (workload/model_pipeline_int.h). */
    int64_t microbatches;         /* num_pipeline_microbatches; 0: the stages */
    int64_t pipeline_repeats;     /* num_pipeline_repeats (circular); 0: 1 */
    enum model_pipe_schedule pipeline_schedule;
    struct model_xla_flags xla;
    /* MaxText's splash block sizes (sa_block_q, sa_block_kv, ...: model_sa_block_names
     * order); 0: unset (the set ones make every block explicit, MaxText's 512 the others) */
    int64_t sa_block[8];
    /* sa_use_fused_bwd_kernel: splash's backward as one kernel computing dq beside dk, dv
     * (MaxText's BlockSizes then take no dq blocks); makes every splash block explicit */
    bool sa_fused_bwd;
    bool qk_norm;          /* use_qk_norm: an RMSNorm over each head of q and k */
    /* fused_qkv: q, k, v as one projection [D, (H + 2K) Dh] (MaxText's qkv_proj), one
     * weight gather; false (MaxText's base.yml): three DenseGenerals, three gathers */
    bool fused_qkv;
    bool parallel_block;   /* use_parallel_block: attention and MLP side by side */
    bool iota_embed;       /* use_iota_embed: the embedding as a one-hot matmul */
    bool non_causal;       /* causal: false -- every token attends to every other */
    bool quantized;        /* quantization: int8 or fp8 (MaxText's AQT; model_quant.c) */
    enum dtype quant_dtype; /* ... the dtype of the dense layers' matmuls */
    /* decode (serving): quantization: int8 is weight-only int8 with per-channel scales
     * (JetStream's int8): the dense weights held and read as int8, the matmuls in dtype */
    bool weight_int8;
    bool kv_int8;          /* decode: kv_cache_dtype: int8 (the KV cache pages in int8) */
    /* serving (nseqs > 0): JetStream-PyTorch's dense-cache attention (XLA einsums over
     * each slot's whole cache, serve.engine.attention_kernel: dense) instead of RPA */
    bool dense_kv;
    bool tied_embeddings;  /* tie_word_embeddings: the logits multiply by the embedding table */
    /* serving with JetStream-PyTorch: a tied table is sharded on its hidden axis (its
     * default_shardings), so a decode step's logits [rows, D / tensor] x [D / tensor,
     * vocab] are partial sums, all-reduced over the tensor axis */
    bool logits_hidden_sharded;
    /* A serving engine's step (decode mode, serving/serve.h): 'nseqs' sequences, each
     * adding q_lens[i] tokens over kv_lens[i] cached ones (ragged paged attention),
     * in a batch padded to 'tokens' rows, logits for 'rows' of them; 0: a plain
     * decode step (batch x one token). The arrays are borrowed. */
    int nseqs;
    int64_t tokens, rows;
    const int64_t *q_lens, *kv_lens;
};

/* How a model lands on the devices of a mesh: sizes and per-device shapes. */
struct model_shard {
    int data, fsdp, tensor, sequence, expert; /* mesh axis sizes (1 when absent) */
    int pipeline;          /* pipeline stages (the `pipeline` axis; 1 when absent) */
    int dev_per_chip;      /* devices (TensorCores that are JAX devices) per chip */
    int tensor_dev;        /* of them on the tensor axis: 1, or dev_per_chip when a decode
                            * step's mesh counts devices and puts a chip's on tensor (v7
                            * serving: TP over the 8 devices of 4 chips); 'tensor' then
                            * counts devices, the mesh's tensor axis chips */
    int64_t devices;       /* chips x dev_per_chip */
    int slices;            /* the mesh's extent over the DCN (1: one slice) */
    int64_t b;             /* sequences per device */
    int64_t tokens;        /* tokens per device per step: b x seq_len / sequence */
    int64_t heads, kv_heads, ffn, experts; /* local to a device */
    int64_t layer_params;  /* parameters of one layer (all of it, not a shard) */
    int64_t params;        /* of the model */
};

/* Per-chip memory of a step, in bytes. */
struct model_memory {
    double params, grads, optimizer; /* the local shards of the state */
    double activations;    /* saved for the backward under the remat policy */
    double weights_gathered; /* FSDP-gathered layers alive at once (two) */
    double logits;         /* the loss' working set */
    double kv_cache;       /* decode */
    double total;          /* the peak: the state, the saved activations and the KV cache,
                              plus the larger of the layers' loops (weights_gathered) and the
                              loss (logits, the gathered unembedding, one gathered layer) */
    double capacity;
};

/* A scenario's model step: the model, how it lands on the mesh, what a chip holds. */
struct model_step {
    struct model m;
    struct model_shard shard;
    struct model_memory mem;
    double flops_per_device; /* model_flops_per_device */
    double peak_per_device;  /* FLOP/s of a device in peak_dtype */
    enum dtype peak_dtype;   /* the model's dtype: the MFU's peak is that dtype's */
};

/* Checks the model against 'mesh' and 'chip' (every division must be exact)
 * and fills 's'. Returns 0, or -1 with the reason in 'err'. */
int model_shard(const struct model *m, const struct mesh *mesh, const struct topo *topo,
                const struct chip_params *chip, struct model_shard *s, char *err, size_t n);
/* The step's program (workload/program.h), scheduled (workload/schedule.h);
 * caller frees (prog_free). */
struct program *model_program(const struct model *m, const struct model_shard *s,
                              const struct chip_params *chip);
/* The step's workload as YAML (a list of ops, to be the scenario's
 * `workload:`); caller frees. */
char *model_workload_yaml(const struct model *m, const struct model_shard *s,
                          const struct chip_params *chip);
/* Memory per chip. */
void model_memory(const struct model *m, const struct model_shard *s,
                  const struct chip_params *chip, struct model_memory *mem);
/* MaxText's calculate_tflops_training_per_device (causal attention; x3 for a
 * training step): the model FLOPs MFU counts, per device and step. */
double model_flops_per_device(const struct model *m, const struct model_shard *s);
/* Bytes per chip one layer's offloaded tensors take to the host in the
 * forward (and back in the backward); 0 without offloading. */
double model_offload_bytes_per_layer(const struct model *m, const struct model_shard *s);
/* The XLA-style out-of-memory message: "Ran out of memory in memory space
 * hbm. Used X of Y hbm. Exceeded hbm capacity by Z." and the breakdown. */
void model_oom_message(const struct model_memory *mem, char *buf, size_t n);

/* "llama", "train", "full", ... Static. */
const char *const *model_arch_names(void);
const char *const *model_mode_names(void);
const char *const *model_remat_names(void);
/* The policy named 'name' (MaxText's remat_policy names; "offload" is the
 * TPU recipes' custom policy that offloads the layer input, q, k, v and
 * out_proj). Returns 0, or -1 for an unknown name. */
int model_remat_policy(const char *name, struct model_remat *r);
/* "decoder_layer_input", "query_proj", ... indexed by enum model_tensor. */
const char *model_tensor_name(enum model_tensor t);
const char *const *model_attention_names(void);
/* The names of attention_kernel (rpa_v2, rpa_v3): model.rpa_v3's two values. */
const char *const *model_attention_kernel_names(void);
/* The pipeline's schedule (workload/model_pipeline.c): stages 1 without a
 * pipeline axis; the bubble (p - 1) / (r m + p - 1). */
struct model_pipeline_info {
    int stages;
    int64_t microbatches, repeats, iterations; /* iterations of a pass */
    double bubble;
};
void model_pipeline_info(const struct model *m, const struct model_shard *s,
                         struct model_pipeline_info *pi);
/* The share of routed tokens the capacity factor drops (workload/model_moe.c):
 * 0 dropless or without experts. */
double model_moe_dropped_share(const struct model *m);
/* "gpipe", "1f1b", "circular" (enum model_pipe_schedule). */
const char *const *model_pipe_schedule_names(void);

/* MaxText's splash block keys: sa_block_q, sa_block_kv, sa_block_kv_compute, sa_block_q_dkv,
 * sa_block_kv_dkv, sa_block_kv_dkv_compute, sa_block_q_dq, sa_block_kv_dq; NULL-terminated. */
const char *const *model_sa_block_names(void);

/* ---- workload/model_quant.c: MaxText's quantized training (AQT) ---- */
/* VPU ops per element of a quantized operand: |x|, the max (per row of the
 * contraction), x * 127 / max, round, clip (min, max), the cast: 7. */
#define MODEL_QUANT_VPU_OPS 7
/* "int8", "fp8" (MaxText's quantization values the expansion models), NULL-terminated. */
const char *const *model_quant_names(void);
/* The dtype of quantization 'name' (an entry of model_quant_names). */
enum dtype model_quant_dtype(int name);
/* The dtype the dense layers' matmuls run in: the quantization's, else the model's. */
enum dtype model_dense_dtype(const struct model *m);
/* Whether the backward's dense matmuls are quantized too (int8; AQT's fp8: forward only). */
bool model_quant_backward(const struct model *m);
/* The KV cache's dtype: int8 (kv_cache_dtype: int8), else the model's. */
enum dtype model_kv_dtype(const struct model *m);

/* ---- workload/model_cmm.c: XLA's windowed einsums ---- */
enum model_cmm { MODEL_CMM_AG, MODEL_CMM_RS };
/* XLA's defaults (its SPMD partitioner's options: both on, 256 MiB). */
struct model_xla_flags model_xla_defaults(void);
/* The names of the flags (NULL-terminated), in struct model_xla_flags order. */
const char *const *model_xla_flag_names(void);
/* Whether the forward's tensor-parallel gather (MODEL_CMM_AG) or scatter (MODEL_CMM_RS)
 * runs as a collective matmul: its flag is on, the tensor axis has more than one device
 * (one per chip) and the windowed operand -- the activation [batch x seq_len, d_model]
 * as the whole program sees it -- is at least the threshold. */
bool model_cmm_windowed(const struct model *m, const struct model_shard *s, enum model_cmm c);

#endif
