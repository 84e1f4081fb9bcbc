/* config/cfg_model.c -- the model section: `model: {preset: llama3-8b, seq_len:
 * ..., batch: ...}` (a preset from configs/models/presets/, embedded, with
 * overrides of any key) or every dimension given; checked against the mesh
 * and the HBM, then expanded into the scenario's workload (workload/model.h).
 * Uses base/, the config stages and workload/model.h. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "config/cfg.h"
#include "config/cfg_int.h"
#include "config/cfg_xla_flags.h"
#include "config/embedded.h"
#include "workload/model.h"

static const char *const model_keys[] = {
    "preset",   "arch",     "layers",       "d_model",  "heads",     "kv_heads",
    "head_dim", "ffn",      "vocab",        "experts",  "top_k",     "seq_len",
    "batch",    "mode",     "kv_len",       "page_size", "dtype",    "weight_dtype",
    "mu_dtype", "optimizer", "remat",       "attention", "attention_kernel", "num_kv_pages_per_block",
    "num_queries_per_block", "d_block_sizes", "m_block_sizes", "attention_block", "vocab_tiling",
    "capacity_factor", "expert_load_imbalance", "sparse_matmul", "num_pipeline_microbatches",
    "num_pipeline_repeats", "pipeline_schedule",
    "xla_flags", "quantization", "kv_cache_dtype", "use_qk_norm", "fused_qkv", "use_parallel_block", "tie_word_embeddings", "use_iota_embed", "causal", "sa_block_q", "sa_block_kv",
    "sa_block_kv_compute", "sa_block_q_dkv", "sa_block_kv_dkv", "sa_block_kv_dkv_compute",
    "sa_block_q_dq", "sa_block_kv_dq", "sa_use_fused_bwd_kernel", NULL};

/* The preset's tree merged under the scenario's keys. */
static struct cfg_node *with_preset(struct walk *w, const struct cfg_node *m)
{
    const struct cfg_node *p = cfg_get(m, "preset");
    if (!p)
        return cfg_copy(m);
    char *path = p->type == CFG_SCALAR ? xasprintf("configs/models/presets/%s.yaml", p->value)
                                       : NULL;
    struct cfg_node *tree = path && embedded_find(path) ? cfg_parse_file(path, w->d) : NULL;
    if (!tree) {
        char want[512] = "a model preset (";
        int k = 0;
        for (const struct embedded_file *f = embedded_files; f->path; f++) {
            const char *pre = "configs/models/presets/";
            if (strncmp(f->path, pre, strlen(pre)) != 0)
                continue;
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%.*s", k++ ? ", " : "",
                     (int)(strlen(f->path) - strlen(pre) - 5), f->path + strlen(pre));
        }
        strcat(want, ")");
        walk_type_error(w, p, "model.preset", want);
    }
    free(path);
    if (!tree)
        return NULL;
    static const char *const skip[] = {"preset", NULL};
    cfg_merge(tree, m, skip);
    return tree;
}

static void read_dims(struct walk *w, const struct cfg_node *t, struct model *m)
{
    static const struct {
        const char *key;
        bool required;
        int64_t max;
        size_t off;
    } dims[] = {
        {"layers", true, 1 << 12, offsetof(struct model, layers)},
        {"d_model", true, 1 << 20, offsetof(struct model, d_model)},
        {"heads", true, 1 << 12, offsetof(struct model, heads)},
        {"kv_heads", false, 1 << 12, offsetof(struct model, kv_heads)},
        {"head_dim", true, 1 << 12, offsetof(struct model, head_dim)},
        {"ffn", true, 1 << 22, offsetof(struct model, ffn)},
        {"vocab", true, 1 << 24, offsetof(struct model, vocab)},
        {"seq_len", false, 1 << 22, offsetof(struct model, seq_len)},
        {"batch", true, 1 << 24, offsetof(struct model, batch)},
        {"kv_len", false, 1 << 22, offsetof(struct model, kv_len)},
        {"page_size", false, 1 << 12, offsetof(struct model, page_size)},
        {"vocab_tiling", false, 1 << 10, offsetof(struct model, vocab_tiling)},
        {"experts", false, 1 << 10, offsetof(struct model, experts)},
        {"top_k", false, 1 << 10, offsetof(struct model, top_k)},
        {"num_pipeline_microbatches", false, 1 << 12, offsetof(struct model, microbatches)},
        {"num_pipeline_repeats", false, 1 << 10, offsetof(struct model, pipeline_repeats)},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        walk_int(w, t, "model", dims[i].key, dims[i].required, 1, dims[i].max,
                 (int64_t *)((char *)m + dims[i].off));
    const struct cfg_node *ab = cfg_get(t, "attention_block");
    if (ab && !(ab->type == CFG_SCALAR && !ab->quoted && strcmp(ab->value, "auto") == 0))
        walk_int(w, t, "model", "attention_block", false, 128, 1 << 16, &m->attention_block);
}

/* remat: custom -- {decoder_layer_input: offload, query_proj: device, ...};
 * a tensor not named is recomputed, except the layer input (kept). qkv_proj (MaxText's name
 * for the fused projection's output) sets query_proj, key_proj and value_proj at once. */
static void read_custom_remat(struct walk *w, const struct cfg_node *c, struct model *m)
{
    static const char *const keep[] = {"remat", "device", "offload", NULL};
    const char *keys[MT_COUNT + 2];
    for (int t = 0; t < MT_COUNT; t++)
        keys[t] = model_tensor_name((enum model_tensor)t);
    keys[MT_COUNT] = "qkv_proj";
    keys[MT_COUNT + 1] = NULL;
    walk_check_keys(w, c, "model.remat", keys);
    m->remat = (struct model_remat){.name = "custom"};
    m->remat.t[MT_INPUT] = KEEP_DEVICE;
    int qkv = (int)KEEP_REMAT;
    walk_enum(w, c, "model.remat", "qkv_proj", keep, &qkv);
    m->remat.t[MT_QUERY] = m->remat.t[MT_KEY] = m->remat.t[MT_VALUE] = (enum model_keep)qkv;
    for (int t = 0; t < MT_COUNT; t++) {
        int v = (int)m->remat.t[t];
        walk_enum(w, c, "model.remat", keys[t], keep, &v);
        m->remat.t[t] = (enum model_keep)v;
    }
}

/* remat: a policy's name (MaxText's) or a custom map. */
static void read_remat(struct walk *w, const struct cfg_node *t, struct model *m)
{
    const struct cfg_node *r = cfg_get(t, "remat");
    if (r && r->type == CFG_MAP) {
        read_custom_remat(w, r, m);
        return;
    }
    int v = 0;
    walk_enum(w, t, "model", "remat", model_remat_names(), &v);
    model_remat_policy(model_remat_names()[v], &m->remat);
}

/* Mixture of experts as it runs and the pipeline's schedule (MaxText's names). */
static void read_moe_pipeline(struct walk *w, const struct cfg_node *t, struct model *m)
{
    const struct cfg_node *cf = cfg_get(t, "capacity_factor");
    char *end = NULL;
    double v = cf && cf->type == CFG_SCALAR && !cf->quoted ? strtod(cf->value, &end) : 0;
    if (cf && !(end && *end == '\0' && v == -1.0))
        walk_real(w, t, "model", "capacity_factor", false, 0.01, 1024,
                  "-1 (dropless) or a factor from 0.01 to 1024", &m->capacity_factor);
    else if (cf)
        m->capacity_factor = -1;
    walk_real(w, t, "model", "expert_load_imbalance", false, 1, 1024,
              "a ratio of the busiest device's routed tokens to the mean, from 1 to 1024",
              &m->expert_load_imbalance);
    bool sparse = true;
    walk_bool(w, t, "model", "sparse_matmul", &sparse);
    m->dense_matmul = !sparse;
    int sch = (int)m->pipeline_schedule;
    walk_enum(w, t, "model", "pipeline_schedule", model_pipe_schedule_names(), &sch);
    m->pipeline_schedule = (enum model_pipe_schedule)sch;
}

/* The RPA block sizes of the kernel attention_kernel names; the other
 * kernel's are refused, never ignored (issue 31.5). */
static void read_rpa_blocks(struct walk *w, const struct cfg_node *t, struct model *m)
{
    walk_int(w, t, "model", "num_kv_pages_per_block", false, 1, 1 << 16, &m->rpa_kv_pages);
    walk_int(w, t, "model", "num_queries_per_block", false, 1, 1 << 16, &m->rpa_queries);
    cfg_read_rpa3_blocks(w, t, "model", "d_block_sizes", m->rpa_d_blocks);
    cfg_read_rpa3_blocks(w, t, "model", "m_block_sizes", m->rpa_m_blocks);
    static const char *const v2[] = {"num_kv_pages_per_block", "num_queries_per_block"};
    static const char *const v3[] = {"d_block_sizes", "m_block_sizes"};
    for (int i = 0; i < 2; i++) {
        const char *k = m->rpa_v3 ? v2[i] : v3[i];
        if (cfg_get(t, k)) {
            char *p = walk_join("model", k);
            walk_type_error(w, cfg_get(t, k), p,
                            m->rpa_v3 ? "d_block_sizes or m_block_sizes (attention_kernel: "
                                        "rpa_v3 takes RPA v3's blocks)"
                                      : "num_kv_pages_per_block or num_queries_per_block "
                                        "(attention_kernel: rpa_v2 takes RPA v2's blocks)");
            free(p);
        }
    }
}

static void read_choices(struct walk *w, const struct cfg_node *t, struct model *m)
{
    read_moe_pipeline(w, t, m);
    int v = (int)m->arch;
    walk_enum(w, t, "model", "arch", model_arch_names(), &v);
    m->arch = (enum model_arch)v;
    v = (int)m->mode;
    walk_enum(w, t, "model", "mode", model_mode_names(), &v);
    m->mode = (enum model_mode)v;
    read_remat(w, t, m);
    v = (int)m->attention;
    walk_enum(w, t, "model", "attention", model_attention_names(), &v);
    m->attention = (enum model_attention)v;
    v = m->rpa_v3;
    walk_enum(w, t, "model", "attention_kernel", model_attention_kernel_names(), &v);
    m->rpa_v3 = v == 1;
    read_rpa_blocks(w, t, m);
    static const char *const optimizers[] = {"adamw", NULL};
    v = 0;
    walk_enum(w, t, "model", "optimizer", optimizers, &v);
    walk_mxu_dtype(w, t, "model", "dtype", &m->dtype);
    walk_dtype(w, t, "model", "weight_dtype", &m->weight_dtype);
    m->mu_dtype = m->weight_dtype;
    walk_dtype(w, t, "model", "mu_dtype", &m->mu_dtype);
}

/* The scenario's xla_flags: (config/cfg_xla_flags.h) over XLA's defaults:
 * the windowed einsums of the model's tensor-parallel matmuls. They sit at
 * the top of the scenario, beside the other XLA flags, not under model:. */
static void read_xla_flags(struct walk *w, const struct cfg_node *t, struct model *m)
{
    const struct cfg_node *f = cfg_get(t, "xla_flags");
    if (f) {
        char *p = walk_join("model", "xla_flags");
        walk_type_error(w, f, p, "the XLA flags at the top of the scenario (xla_flags:, beside "
                                 "model:)");
        free(p);
    }
    const struct cfg_xla_flags *x = w->xla;
    if (!x)
        return;
    if (x->set_windowed_ag)
        m->xla.windowed_ag = x->windowed_ag;
    if (x->set_windowed_rs)
        m->xla.windowed_rs = x->windowed_rs;
    if (x->set_windowed_threshold)
        m->xla.windowed_threshold_mib = x->windowed_threshold_mib;
    if (x->set_dp_all_reduce_opt)
        m->xla.dp_sums_after_backward = !x->dp_all_reduce_opt;
}

/* quantization: int8 | fp8 (MaxText's AQT), in a dtype the chip's MXU takes. */
static void read_quantization(struct walk *w, const struct cfg_node *t, struct model *m)
{
    const struct cfg_node *q = cfg_get(t, "quantization");
    int v = 0;
    if (!q || walk_enum(w, t, "model", "quantization", model_quant_names(), &v) != 0)
        return;
    const struct chip_params *c = w->chip;
    if (m->mode == MODEL_DECODE) { /* weight-only, the matmuls in dtype: any chip */
        m->weight_int8 = model_quant_dtype(v) == DT_INT8;
        if (!m->weight_int8)
            walk_type_error(w, q, "model.quantization", "int8 in a decode step (weight-only "
                            "int8 as JetStream serves it; fp8 quantizes training and prefill)");
        return;
    }
    m->quantized = true;
    m->quant_dtype = model_quant_dtype(v);
    if (c && !c->hypothetical && c->mxu_dtype[DT_BF16] && !c->mxu_dtype[m->quant_dtype]) {
        char want[256];
        snprintf(want, sizeof want, "a quantization the %s MXU takes (%s has no %s rate; "
                 "chip: {base: %s, hypothetical: true} allows it)", c->name, c->name,
                 q->value, c->name);
        walk_type_error(w, q, "model.quantization", want);
    }
}

/* kv_cache_dtype: auto | int8 (vLLM's --kv-cache-dtype; auto: the model's dtype), the
 * KV cache pages of a decode step; RPA v3 takes no int8 pages (upstream refuses them). */
static void read_kv_dtype(struct walk *w, const struct cfg_node *t, struct model *m)
{
    static const char *const names[] = {"auto", "int8", NULL};
    const struct cfg_node *k = cfg_get(t, "kv_cache_dtype");
    int v = 0;
    if (!k || walk_enum(w, t, "model", "kv_cache_dtype", names, &v) != 0)
        return;
    m->kv_int8 = v == 1;
    if (m->kv_int8 && m->mode != MODEL_DECODE)
        walk_type_error(w, k, "model.kv_cache_dtype", "auto outside a decode step (int8 is a "
                        "decode step's paged KV cache)");
    else if (m->kv_int8 && m->rpa_v3)
        walk_type_error(w, k, "model.kv_cache_dtype", "auto with attention_kernel: rpa_v3 (RPA "
                        "v3 takes no int8 KV pages; rpa_v2 does)");
}

/* MaxText's layer options: use_qk_norm, fused_qkv, use_iota_embed, causal, the splash block sizes sa_block_*
 * and sa_use_fused_bwd_kernel (refused beside an attention that is not splash's). */
static void read_layer(struct walk *w, const struct cfg_node *t, struct model *m)
{
    walk_bool(w, t, "model", "use_qk_norm", &m->qk_norm);
    walk_bool(w, t, "model", "fused_qkv", &m->fused_qkv);
    walk_bool(w, t, "model", "use_parallel_block", &m->parallel_block);
    walk_bool(w, t, "model", "tie_word_embeddings", &m->tied_embeddings);
    walk_bool(w, t, "model", "use_iota_embed", &m->iota_embed);
    bool causal = true;
    walk_bool(w, t, "model", "causal", &causal);
    m->non_causal = !causal;
    const char *const *sa = model_sa_block_names();
    for (int i = 0; sa[i]; i++)
        walk_int(w, t, "model", sa[i], false, 128, 1 << 16, &m->sa_block[i]);
    walk_bool(w, t, "model", "sa_use_fused_bwd_kernel", &m->sa_fused_bwd);
    if (m->sa_fused_bwd && (m->attention == MODEL_ATTN_FLASH || m->attention == MODEL_ATTN_DOT))
        walk_type_error(w, cfg_get(t, "sa_use_fused_bwd_kernel"), "model.sa_use_fused_bwd_kernel",
                        "false or absent with attention flash or dot_product (it is a "
                        "splash attention option)");
}

/* Rules the keys alone imply. */
static void check_model(struct walk *w, const struct cfg_node *t, struct model *m)
{
    if (m->arch == MODEL_MIXTRAL && (m->experts < 2 || m->top_k < 1 || m->top_k > m->experts))
        walk_type_error(w, t, "model", "a mixtral model with experts (2 or more) and top_k "
                                       "(1 to experts)");
    if (m->heads % m->kv_heads != 0)
        walk_type_error(w, cfg_get(t, "kv_heads") ? cfg_get(t, "kv_heads") : t, "model.kv_heads",
                        "a divisor of heads");
    if (m->mode == MODEL_DECODE && m->kv_len < 1)
        walk_type_error(w, t, "model", "kv_len (the tokens in each sequence's cache) for decode");
    if (m->seq_len % m->vocab_tiling != 0)
        walk_type_error(w, cfg_get(t, "vocab_tiling") ? cfg_get(t, "vocab_tiling") : t,
                        "model.vocab_tiling", "a divisor of seq_len");
}

int cfg_load_model(struct walk *w, const struct cfg_node *node, struct model *m)
{
    int before = diag_count(w->d);
    if (!walk_is_map(w, node, "model"))
        return -1;
    walk_check_keys(w, node, "model", model_keys);
    struct cfg_node *t = with_preset(w, node);
    if (!t)
        return -1;
    *m = (struct model){.arch = MODEL_LLAMA, .mode = MODEL_TRAIN,
                        .attention = MODEL_ATTN_AUTO, .dtype = DT_BF16, .weight_dtype = DT_F32,
                        .page_size = 128, .vocab_tiling = 1, .top_k = 2};
    read_dims(w, t, m);
    if (m->kv_heads == 0)
        m->kv_heads = m->heads;
    read_choices(w, t, m);
    m->xla = model_xla_defaults();
    read_xla_flags(w, t, m);
    read_quantization(w, t, m);
    read_kv_dtype(w, t, m);
    read_layer(w, t, m);
    if (m->mode == MODEL_DECODE && !cfg_get(t, "seq_len"))
        m->seq_len = 1; /* one new token per sequence and step */
    else if (!cfg_get(t, "seq_len"))
        walk_type_error(w, t, "model", "a model with seq_len (tokens per sequence)");
    if (diag_count(w->d) == before)
        check_model(w, t, m);
    cfg_copy_reads(node, t); /* the walk read the merged copy */
    cfg_node_free(t);
    return diag_count(w->d) > before ? -1 : 0;
}
