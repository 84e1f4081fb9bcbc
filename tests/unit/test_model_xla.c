/* tests/unit/test_model_xla.c -- what a model step's expansion takes from XLA and
 * MaxText (issue 29): windowed einsums (collective matmuls) by XLA's flags and
 * threshold. Each case loads a scenario and reads the ops it expanded into. */
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "config/cfg.h"
#include "config/op_table.h"
#include "kernels/kernel.h"
#include "workload/model.h"

/* The scenario 'yaml' loaded (asserted to load). */
static void load(const char *yaml, struct cfg_scenario *sc)
{
    struct diag *d = diag_new();
    int rc = cfg_load_scenario_text(yaml, strlen(yaml), "m.yaml", NULL, 0, sc, d);
    if (rc != 0)
        diag_print(d, stderr);
    assert_int_equal(rc, 0);
    diag_free(d);
}

/* The op named 'name' (in a loop: 'loop.name'). */
static const struct op *find(const struct cfg_scenario *sc, const char *name)
{
    for (int i = 0; i < sc->nops; i++) {
        const char *dot = strrchr(sc->ops[i].name, '.');
        if (strcmp(dot ? dot + 1 : sc->ops[i].name, name) == 0)
            return &sc->ops[i];
    }
    return NULL;
}

static enum op_kind kind_of(const struct cfg_scenario *sc, const char *name)
{
    const struct op *o = find(sc, name);
    assert_non_null(o);
    return o->kind;
}

static int count_kind(const struct cfg_scenario *sc, enum op_kind k)
{
    int n = 0;
    for (int i = 0; i < sc->nops; i++)
        n += sc->ops[i].kind == k;
    return n;
}

/* A llama layer on 8 v5p chips as fsdp 2 x tensor 4, D = 8192, seq_len 2048; the
 * windowed operand is the activation [batch x 2048, 8192] bf16: 32 MiB per sequence,
 * so batch 8 is 256 MiB (XLA's threshold: windowed) and batch 4 is 128 MiB (not). */
#define TP_MODEL(batch, flags)                                                                     \
    "chip: v5p\ntopology: {shape: [2, 2, 2]}\nmesh: {fsdp: 2, tensor: 4}\n"                       \
    "model: {arch: llama, layers: 1, d_model: 8192, heads: 32, kv_heads: 8, head_dim: 128,\n"      \
    "        ffn: 16384, vocab: 1024, seq_len: 2048, batch: " batch ", remat: full" flags "}\n"
/* ... with the scenario's xla_flags: {...} */
#define TP_MODEL_X(batch, flags, xla) TP_MODEL(batch, flags) "xla_flags: {" xla "}\n"

/* At XLA's threshold the forward's four tensor-parallel pairs and the recomputation's
 * three (full remat recomputes up to the MLP's activation) are collective matmuls:
 * QKV (q, k and v, each dot windowed on its own: fused_qkv false) and the MLP's up
 * projection gather ([T, D/4] per step, k = 2048), the output
 * projection and the MLP's down projection scatter (n = D/4 = 2048); no tensor
 * all-gather or reduce-scatter of the forward remains. */
static void test_windowed_at_threshold(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    load(TP_MODEL("8", ""), &sc);
    static const char *const names[] = {"q",    "k",    "v",    "out",    "up",   "down",
                                        "re_q", "re_k", "re_v", "re_out", "re_up"};
    for (int i = 0; i < 11; i++) {
        const struct op *o = find(&sc, names[i]);
        assert_non_null(o);
        assert_int_equal(o->kind, OP_COLLECTIVE_MATMUL);
        assert_true(o->u.coll_matmul.g.grouped);
        bool rs = strstr(names[i], "out") || strstr(names[i], "down");
        assert_int_equal(o->u.coll_matmul.scatter, rs);
        assert_int_equal(rs ? o->u.coll_matmul.n : o->u.coll_matmul.k, 2048);
        assert_int_equal(o->u.coll_matmul.m, 4 * 2048); /* b = 8 / fsdp 2 sequences */
    }
    assert_null(find(&sc, "tp_ag1"));
    assert_null(find(&sc, "tp_rs2"));
    assert_null(find(&sc, "re_tp_ag1"));
    assert_non_null(find(&sc, "g_tp_ag2")); /* the backward's stay collectives */
    cfg_scenario_fini(&sc);
}

/* Below the threshold, with the threshold raised (MaxText's DISABLE_COLLECTIVE_MATMUL)
 * or with both flags off: no collective matmul, the gathers and scatters are back. */
static void test_not_windowed(void **state)
{
    (void)state;
    static const char *const yamls[] = {
        TP_MODEL("4", ""),
        TP_MODEL_X("8", "", "xla_jf_spmd_threshold_for_windowed_einsum_mib: 1000000"),
        TP_MODEL_X("8", "", "xla_tpu_enable_windowed_einsum_for_all_gather: false,\n"
                            "  xla_tpu_enable_windowed_einsum_for_reduce_scatter: false")};
    for (int i = 0; i < 3; i++) {
        struct cfg_scenario sc;
        load(yamls[i], &sc);
        assert_int_equal(count_kind(&sc, OP_COLLECTIVE_MATMUL), 0);
        assert_int_equal(kind_of(&sc, "tp_ag1"), OP_ALL_GATHER);
        assert_int_equal(kind_of(&sc, "tp_rs2"), OP_REDUCE_SCATTER);
        assert_int_equal(kind_of(&sc, "q"), OP_MATMUL);
        assert_int_equal(kind_of(&sc, "v"), OP_MATMUL);
        cfg_scenario_fini(&sc);
    }
}

/* Only the gathers windowed: the scatters stay matmul + reduce_scatter. */
static void test_windowed_gathers_only(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    load(TP_MODEL_X("8", "", "xla_tpu_enable_windowed_einsum_for_reduce_scatter: false"),
         &sc);
    assert_int_equal(kind_of(&sc, "q"), OP_COLLECTIVE_MATMUL);
    assert_int_equal(kind_of(&sc, "k"), OP_COLLECTIVE_MATMUL);
    assert_int_equal(kind_of(&sc, "up"), OP_COLLECTIVE_MATMUL);
    assert_int_equal(kind_of(&sc, "down"), OP_MATMUL);
    assert_int_equal(kind_of(&sc, "tp_rs2"), OP_REDUCE_SCATTER);
    assert_int_equal(kind_of(&sc, "tp_rs1"), OP_REDUCE_SCATTER);
    assert_null(find(&sc, "tp_ag2"));
    cfg_scenario_fini(&sc);
}

/* Issue 29.8: on v4 (16 MiB of VMEM, an 8 MiB scoped limit) a norm over
 * d_model 12288 was refused: the backward's smallest block of whole rows, 128 (its
 * per-row rstd output, 1-D, is laid in 128 lanes), takes 2 buffers x (x, dy, dx) x
 * 128 x 12288 x 2 B = 18.9 MB. XLA tiles the loop: the per-row values kept as a
 * column, blocks of 8-row multiples dividing the chip's 2048 rows; the largest fitting
 * half the limit (v4's 8 MiB scoped limit: 4 MiB) is br x 147456 B <= 4194304, br <=
 * 28.4: 16 rows (24 does not divide 2048; 32 when the limit was all 16 MiB). Every
 * norm of the step builds. */
static void test_wide_norm_tiles_rows(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    load("chip: v4\ntopology: {shape: [4, 4, 8]}\nmesh: {fsdp: 128}\n"
         "model: {arch: llama, layers: 1, d_model: 12288, heads: 96, head_dim: 128,\n"
         "        ffn: 49152, vocab: 32000, seq_len: 2048, batch: 128, remat: full}\n",
         &sc);
    int norms = 0;
    for (int i = 0; i < sc.nops; i++) {
        const struct op *o = &sc.ops[i];
        if (o->kind != OP_RMSNORM)
            continue;
        struct kern k;
        char err[512] = "";
        int rc = kern_init(&k, op_row(o->kind)->kern, o, &sc.chip, false, err, sizeof err);
        if (rc != 0)
            print_error("%s: %s\n", o->name, err);
        assert_int_equal(rc, 0);
        const char *dot = strrchr(o->name, '.');
        if (strcmp(dot ? dot + 1 : o->name, "g_norm1") == 0)
            assert_int_equal(k.calls[0].operands[0].block[0], 16);
        kern_fini(&k);
        norms++;
    }
    assert_true(norms >= 6);
    cfg_scenario_fini(&sc);
}

/* The expansion's YAML of a loaded model scenario; caller frees. */
static char *expansion(const struct cfg_scenario *sc)
{
    return model_workload_yaml(&sc->model->m, &sc->model->shard, &sc->chip);
}

/* A Llama layer on 8 v5e chips (fsdp 8, one 2048-token sequence per chip; GQA: splash). */
#define LAYER_WITH(keys)                                                                           \
    "chip: v5e\ntopology: {shape: [2, 4]}\nmesh: {fsdp: 8}\n"                                    \
    "model: {arch: llama, layers: 1, d_model: 4096, heads: 32, kv_heads: 8, head_dim: 128,\n"     \
    "        ffn: 14336, vocab: 32768, seq_len: 2048, batch: 8" keys "}\n"
#define LAYER(extra) LAYER_WITH(", remat: full" extra)

/* MaxText's splash block keys: the ones set, MaxText's 512 for the others, an unset
 * compute block within its block (block_kv_dkv_compute 256 under sa_block_kv_dkv 256),
 * each at most the sequence (sa_block_q 4096 -> 2048). */
static void test_sa_block_sizes(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    load(LAYER(", sa_block_q: 4096, sa_block_kv_dkv: 256"), &sc);
    char *y = expansion(&sc);
    assert_non_null(strstr(y, "block_sizes: {block_q: 2048, block_kv: 512, block_kv_compute: 512, "
                              "block_q_dkv: 512, block_kv_dkv: 256, block_kv_dkv_compute: 256, "
                              "block_q_dq: 512, block_kv_dq: 512}"));
    free(y);
    cfg_scenario_fini(&sc);
    load(LAYER(""), &sc); /* without them: searched */
    y = expansion(&sc);
    assert_null(strstr(y, "block_q: 512"));
    assert_non_null(strstr(y, "block_sizes: auto"));
    free(y);
    cfg_scenario_fini(&sc);
}

/* sa_use_fused_bwd_kernel: MaxText's BlockSizes take no dq blocks (None, even when
 * sa_block_*_dq are set) and use_fused_bwd_kernel; the key alone makes every block
 * explicit (512). The fused backward runs 5 of the unfused kernels' 7 matmuls a
 * computed block (q k^T, dp, dv, dk, dq against dq's q k^T, dp, dq and dkv's four). */
static void test_sa_fused_bwd(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    load(LAYER(", sa_use_fused_bwd_kernel: true, sa_block_q_dq: 1024"), &sc);
    char *y = expansion(&sc);
    assert_non_null(strstr(y, "block_sizes: {block_q: 512, block_kv: 512, block_kv_compute: 512, "
                              "block_q_dkv: 512, block_kv_dkv: 512, block_kv_dkv_compute: 512, "
                              "use_fused_bwd_kernel: true}"));
    assert_null(strstr(y, "block_q_dq"));
    free(y);
    const struct op *g = find(&sc, "g_attn");
    assert_non_null(g);
    assert_true(g->u.splash.bs.use_fused_bwd_kernel);
    cfg_scenario_fini(&sc);
    /* refused beside an attention that is not splash's */
    const char *bad = LAYER(", attention: flash, sa_use_fused_bwd_kernel: true");
    struct diag *d = diag_new();
    struct cfg_scenario b;
    assert_int_not_equal(cfg_load_scenario_text(bad, strlen(bad), "m.yaml", NULL, 0, &b, d), 0);
    assert_int_equal(diag_count(d), 1);
    diag_free(d);
}

/* fused_qkv (MaxText's key; base.yml: false): with it one projection [D, (H + 2K) Dh] =
 * [4096, 6144] and one gather of its weights first (4096 x 6144 / fsdp 8 x 2 B = 6291456),
 * the rest after it (218112000 parameters a layer / 8 x 2 B - 6291456 = 48236544).
 * Without it (MaxText's Attention: query, key, value DenseGenerals) q [4096, 4096] and k,
 * v [4096, 1024] are three matmuls (2 x 2048 x 4096 x 4096 = 6.87e10 flops and 1.72e10
 * each), their weights gathered one after the other (4194304, 1048576, 1048576 B), the
 * same rest; three dgrads, then three wgrads. The gpt3-175b preset states it true as MaxText's
 * configs/models/gpt3-175b.yml; a wrong type is refused. */
static void test_fused_qkv(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    load(LAYER(", fused_qkv: true"), &sc);
    char *y = expansion(&sc);
    assert_non_null(strstr(y, "{op: matmul, name: qkv, m: 2048, k: 4096, n: 6144,"));
    assert_non_null(strstr(y, "{op: all_gather, name: wgather1, bytes: 6291456,"));
    assert_non_null(strstr(y, "{op: all_gather, name: wgather, bytes: 48236544, groups: [fsdp], "
                              "after: [wgather1]}"));
    assert_non_null(strstr(y, "name: g_qkv_dgrad, m: 2048, k: 6144, n: 4096,"));
    assert_null(strstr(y, "wgather_k"));
    free(y);
    cfg_scenario_fini(&sc);
    load(LAYER(""), &sc);
    y = expansion(&sc);
    assert_null(strstr(y, "qkv"));
    assert_non_null(strstr(y, "{op: matmul, name: q, m: 2048, k: 4096, n: 4096,"));
    assert_non_null(strstr(y, "{op: matmul, name: k, m: 2048, k: 4096, n: 1024,"));
    assert_non_null(strstr(y, "{op: matmul, name: v, m: 2048, k: 4096, n: 1024,"));
    assert_non_null(strstr(y, "{op: all_gather, name: wgather1, bytes: 4194304,"));
    assert_non_null(strstr(y, "{op: all_gather, name: wgather_k, bytes: 1048576, groups: [fsdp], "
                              "after: [wgather1]}"));
    assert_non_null(strstr(y, "{op: all_gather, name: wgather_v, bytes: 1048576, groups: [fsdp], "
                              "after: [wgather_k]}"));
    assert_non_null(strstr(y, "{op: all_gather, name: wgather, bytes: 48236544, groups: [fsdp], "
                              "after: [wgather_v]}"));
    assert_non_null(strstr(y, "name: g_v_dgrad, m: 2048, k: 1024, n: 4096,"));
    assert_non_null(strstr(y, "name: g_k_wgrad, m: 4096, k: 2048, n: 1024,"));
    /* the three dgrads first (their sum is the input's gradient, which the tensor scatter
     * or the next layer waits for), then the wgrads */
    assert_true(strstr(y, "name: g_v_dgrad,") < strstr(y, "name: g_q_wgrad,"));
    free(y);
    cfg_scenario_fini(&sc);
    load("chip: v5e\ntopology: {shape: [2, 4]}\nmesh: {fsdp: 8}\n"
         "model: {preset: gpt3-175b, layers: 1, seq_len: 2048, batch: 8}\n",
         &sc);
    assert_true(sc.model->m.fused_qkv);
    cfg_scenario_fini(&sc);
    const char *bad = LAYER(", fused_qkv: 3");
    struct diag *d = diag_new();
    struct cfg_scenario b;
    assert_int_not_equal(cfg_load_scenario_text(bad, strlen(bad), "m.yaml", NULL, 0, &b, d), 0);
    assert_int_equal(diag_count(d), 1);
    assert_non_null(strstr(diag_message(d, 0), "model.fused_qkv: expected true or false, got '3'"));
    diag_free(d);
}

/* use_qk_norm: an RMSNorm over each head of q and k ([T (H + K), Dh] = [2048 x 40, 128]) after
 * the QKV projection, in the forward, the recomputation and (its backward) the backward. */
static void test_qk_norm(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    load(LAYER(", use_qk_norm: true"), &sc);
    char *y = expansion(&sc);
    assert_non_null(strstr(y, "{op: rmsnorm, name: qk_norm, shape: [81920, 128]"));
    assert_non_null(strstr(y, "{op: rmsnorm, name: re_qk_norm, shape: [81920, 128]"));
    assert_non_null(strstr(y, "{op: rmsnorm, name: g_qk_norm, shape: [81920, 128], dtype: bf16, "
                              "mode: bwd}"));
    free(y);
    cfg_scenario_fini(&sc);
    load(LAYER(""), &sc);
    y = expansion(&sc);
    assert_null(strstr(y, "qk_norm"));
    free(y);
    cfg_scenario_fini(&sc);
}

/* causal: false -- the splash mask is full, and MaxText's FLOP count keeps the whole
 * attention: per device and layer 4 b S^2 H Dh = 4 x 1 x 2048^2 x 32 x 128 = 68719476736,
 * half of it counted when causal; x 3 for training: 103079215104 FLOPs more. */
static void test_non_causal(void **state)
{
    (void)state;
    struct cfg_scenario a, b;
    load(LAYER(""), &a);
    load(LAYER(", causal: false"), &b);
    assert_float_equal(b.model->flops_per_device - a.model->flops_per_device, 103079215104.0, 1);
    char *y = expansion(&b);
    assert_non_null(strstr(y, "mask: {type: full}"));
    assert_null(strstr(y, "type: causal"));
    free(y);
    cfg_scenario_fini(&a);
    cfg_scenario_fini(&b);
}

/* attention: dot_product (MaxText's XLA attention) per KV head group: b K = 8 groups of
 * r = (H / K) q = 4 x 2048 = 8192 query rows; scores [8192, 128] x [128, 2048], the softmax
 * over [b H q, S] = [65536, 2048], context [8192, 2048] x [2048, 128]; its backward's four
 * einsums and the softmax's backward; no attention kernel. */
static void test_dot_product_attention(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    load(LAYER(", attention: dot_product"), &sc);
    char *y = expansion(&sc);
    static const char *const want[] = {
        "{op: einsum, name: attn_scores, batch: 8, m: 8192, k: 128, n: 2048,",
        "{op: softmax, name: attn_softmax, shape: [65536, 2048], dtype: bf16}",
        "{op: einsum, name: attn_context, batch: 8, m: 8192, k: 2048, n: 128,",
        "{op: einsum, name: g_attn_dprobs, batch: 8, m: 8192, k: 128, n: 2048,",
        "{op: einsum, name: g_attn_dvalue, batch: 8, m: 2048, k: 8192, n: 128,",
        "{op: softmax, name: g_attn_softmax, shape: [65536, 2048], dtype: bf16, mode: bwd}",
        "{op: einsum, name: g_attn_dquery, batch: 8, m: 8192, k: 2048, n: 128,",
        "{op: einsum, name: g_attn_dkey, batch: 8, m: 2048, k: 8192, n: 128,"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!strstr(y, want[i]))
            print_error("missing %s\n", want[i]);
        assert_non_null(strstr(y, want[i]));
    }
    assert_null(strstr(y, "splash_attention"));
    assert_null(strstr(y, "flash_attention"));
    free(y);
    cfg_scenario_fini(&sc);
}

/* use_parallel_block: one norm, its output gathered once over tensor for QKV and the MLP,
 * the attention's and the MLP's partial outputs summed ([T, D]) and scattered once; in the
 * backward one gather of the gradient for both branches and one scatter of the summed
 * input gradients. Per layer 4 tensor collectives instead of 8 (the recomputation's
 * gather aside); the output projection is not recomputed (nothing in the backward reads
 * it). Windowed einsums off (threshold 1000000) to count the collectives. */
static void test_parallel_block(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    load(TP_MODEL_X("8", ", use_parallel_block: true",
                    "xla_jf_spmd_threshold_for_windowed_einsum_mib: 1000000"),
         &sc);
    static const char *const present[] = {"tp_ag1", "sum", "tp_rs2", "g_tp_ag2", "g_sum",
                                          "g_tp_rs1", "g_norm1", "re_tp_ag1"};
    static const char *const absent[] = {"norm2", "tp_ag2", "tp_rs1", "res1", "g_tp_rs2",
                                         "g_tp_ag1", "g_norm2", "re_out", "re_norm2"};
    for (size_t i = 0; i < sizeof present / sizeof present[0]; i++)
        assert_non_null(find(&sc, present[i]));
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
        assert_null(find(&sc, absent[i]));
    int tensor = 0;
    for (int i = 0; i < sc.nops; i++)
        tensor += (sc.ops[i].kind == OP_ALL_GATHER || sc.ops[i].kind == OP_REDUCE_SCATTER) &&
                  strstr(sc.ops[i].name, "tp_");
    assert_int_equal(tensor, 5);
    cfg_scenario_fini(&sc);
}

/* remat: custom names qkv_proj (MaxText's fused projection) for query_proj, key_proj and
 * value_proj at once: the same saved activations per chip as naming the three. */
static void test_custom_qkv_proj(void **state)
{
    (void)state;
    struct cfg_scenario a, b, c;
    load(LAYER_WITH(", remat: {qkv_proj: device}"), &a);
    load(LAYER_WITH(", remat: {query_proj: device, key_proj: device, value_proj: device}"), &b);
    load(LAYER(""), &c); /* full: nothing but the layer input */
    assert_float_equal(a.model->mem.activations, b.model->mem.activations, 0);
    assert_true(a.model->mem.activations > c.model->mem.activations);
    assert_int_equal(a.model->m.remat.t[MT_KEY], KEEP_DEVICE);
    cfg_scenario_fini(&a);
    cfg_scenario_fini(&b);
    cfg_scenario_fini(&c);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* quantization: fp8 is AQT's fp8 configuration in MaxText (fwd_bits e4m3 only): on v5p (an fp8
 * rate) the forward's 6 dense matmuls (q, k, v apart: fused_qkv false) and the full remat's 5
 * recomputed ones in fp8, each after two quantizing fusions; the backward's in bf16. int8
 * quantizes the backward's 12 too. */
static void test_fp8_forward_only(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    load("chip: v5p\ntopology: {shape: [2, 2, 2]}\nmesh: {fsdp: 8}\n"
         "model: {arch: llama, layers: 1, d_model: 4096, heads: 32, kv_heads: 8, head_dim: 128,\n"
         "        ffn: 14336, vocab: 32768, seq_len: 2048, batch: 8, remat: full,\n"
         "        quantization: fp8}\n",
         &sc);
    char *y = expansion(&sc);
    assert_int_equal(count(y, "dtype: fp8, block: auto"), 11);
    assert_int_equal(count(y, "vpu_ops: 7"), 22);
    assert_non_null(strstr(y, "name: g_up_wgrad, m: 4096, k: 2048, n: 28672, dtype: bf16"));
    assert_int_equal(sc.model->peak_dtype, DT_FP8);
    free(y);
    cfg_scenario_fini(&sc);
}

/* use_iota_embed: MaxText's embedding as a one-hot matmul (Embed.__call__: one_hot
 * [tokens, vocab] x the table [vocab, D] in dtype) instead of a gather of rows, and its
 * gradient the table's: one_hot^T x g ([vocab, tokens] x [tokens, D]) instead of a
 * scatter-add. One 2048-token sequence per chip (batch 8 over fsdp 8), vocab 32768,
 * D 4096: embed is m 2048, k 32768, n 4096 (2 x 2048 x 32768 x 4096 = 5.50e11 flops);
 * g_embed m 32768, k 2048, n 4096, the same flops. Without the key: the gather and an
 * elementwise add. */
static void test_iota_embed(void **state)
{
    (void)state;
    struct cfg_scenario sc;
    load(LAYER(", use_iota_embed: true"), &sc);
    char *y = expansion(&sc);
    assert_non_null(strstr(y, "{op: matmul, name: embed, m: 2048, k: 32768, n: 4096, dtype: bf16"));
    assert_non_null(strstr(y, "{op: matmul, name: g_embed, m: 32768, k: 2048, n: 4096, dtype: bf16"));
    assert_null(strstr(y, "op: embedding"));
    free(y);
    cfg_scenario_fini(&sc);
    load(LAYER(""), &sc);
    assert_int_equal(kind_of(&sc, "embed"), OP_EMBEDDING);
    assert_int_equal(kind_of(&sc, "g_embed"), OP_ELEMENTWISE);
    cfg_scenario_fini(&sc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_windowed_at_threshold),
        cmocka_unit_test(test_not_windowed),
        cmocka_unit_test(test_windowed_gathers_only),
        cmocka_unit_test(test_wide_norm_tiles_rows),
        cmocka_unit_test(test_sa_block_sizes),
        cmocka_unit_test(test_sa_fused_bwd),
        cmocka_unit_test(test_qk_norm),
        cmocka_unit_test(test_fused_qkv),
        cmocka_unit_test(test_non_causal),
        cmocka_unit_test(test_dot_product_attention),
        cmocka_unit_test(test_parallel_block),
        cmocka_unit_test(test_custom_qkv_proj),
        cmocka_unit_test(test_fp8_forward_only),
        cmocka_unit_test(test_iota_embed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
