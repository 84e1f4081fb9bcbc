/* tests/unit/test_model.c -- model steps checked by hand on a 2-layer model:
 * the sharding, MaxText's FLOP count, the memory per chip, the expansion's
 * op list, matmul FLOPs and collective bytes per mesh axis, what each remat
 * policy recomputes and offloads, and the errors.
 *
 * The model: llama, L = 2, D = 256, H = 4, K = 2, Dh = 64, F = 512, V = 1024,
 * S = 256, global batch 8, on 8 chips as fsdp 4 x tensor 2 (one device per
 * chip). Per device: b = 8 / 4 = 2 sequences (the tensor pair shares them),
 * T = 512 tokens, 2 query heads, 1 KV head, F_local = 256.
 * One layer: D(H+2K)Dh + H Dh D + 3 D F + 2 D = 131072 + 65536 + 393216 + 512
 * = 590336 parameters; the model 2 x 590336 + 2 V D + D = 1705216. */
#include "test_util.h"

#include "base/diag.h"
#include "config/cfg.h"
#include "config/cfg_tree.h"
#include "workload/model.h"
#include "topology/mesh.h"
#include "workload/schedule.h"

#define LAYER_PARAMS 590336.0
#define MODEL_PARAMS 1705216.0

static struct model small_model(void)
{
    struct model m = {.arch = MODEL_LLAMA, .layers = 2, .d_model = 256, .heads = 4,
                      .kv_heads = 2, .head_dim = 64, .ffn = 512, .vocab = 1024, .seq_len = 256,
                      .batch = 8, .mode = MODEL_TRAIN, .dtype = DT_BF16,
                      .weight_dtype = DT_F32, .mu_dtype = DT_F32, .vocab_tiling = 1,
                      .page_size = 128};
    assert_int_equal(model_remat_policy("full", &m.remat), 0);
    return m;
}

struct fixture {
    struct topo topo;
    struct mesh mesh;
    struct chip_params chip;
    struct model_shard sh;
};

static void setup_shard(struct fixture *f, const struct model *m, int fsdp, int tensor)
{
    int shape[2] = {2, 4};
    bool wrap[2] = {false, false};
    assert_int_equal(topo_init(&f->topo, 2, shape, wrap), 0);
    memset(&f->mesh, 0, sizeof f->mesh);
    f->mesh.naxes = 2;
    snprintf(f->mesh.axis[0].name, MESH_NAME_MAX, "fsdp");
    f->mesh.axis[0].size = fsdp;
    snprintf(f->mesh.axis[1].name, MESH_NAME_MAX, "tensor");
    f->mesh.axis[1].size = tensor;
    char err[256];
    assert_int_equal(mesh_layout(&f->mesh, &f->topo, err, sizeof err), 0);
    f->chip = test_chip();
    f->chip.hbm_bytes = (uint64_t)16 << 30;
    assert_int_equal(model_shard(m, &f->mesh, &f->topo, &f->chip, &f->sh, err, sizeof err), 0);
}

static void test_shard(void **state)
{
    (void)state;
    struct model m = small_model();
    struct fixture f;
    setup_shard(&f, &m, 4, 2);
    assert_int_equal(f.sh.b, 2);
    assert_int_equal(f.sh.tokens, 512);
    assert_int_equal(f.sh.heads, 2);
    assert_int_equal(f.sh.kv_heads, 1);
    assert_int_equal(f.sh.ffn, 256);
    assert_int_equal(f.sh.layer_params, (int64_t)LAYER_PARAMS);
    assert_int_equal(f.sh.params, (int64_t)MODEL_PARAMS);
}

/* MaxText: 6 x N x tokens per device + 3 x the causal attention, with N the
 * matmul weights (L (D(H+2K)Dh + H Dh D + 3 D F) + V D = 1441792) and the
 * tokens per device 8 x 256 / 8 devices = 256: 2214592512; attention
 * 3 x L x 2 b S^2 H Dh = 3 x 2 x 2 x 1 x 65536 x 4 x 64 = 201326592. */
static void test_flops(void **state)
{
    (void)state;
    struct model m = small_model();
    struct fixture f;
    setup_shard(&f, &m, 4, 2);
    assert_float_equal(model_flops_per_device(&m, &f.sh), 2214592512.0 + 201326592.0, 1);
    setup_shard(&f, &m, 8, 1); /* the same work per device however it is split */
    assert_float_equal(model_flops_per_device(&m, &f.sh), 2214592512.0 + 201326592.0, 1);
}

/* Per chip, fsdp 4 x tensor 2, full remat, f32 weights and moments:
 * parameters 1705216 / 8 = 213152 x 4 B = 852608, gradients the same,
 * AdamW 213152 x 8 = 1705216; saved: the layer input, 512 tokens x 128 x 2 B
 * x 2 layers = 262144; two gathered layers 2 x 590336 / 2 x 2 B = 1180672;
 * f32 logits 512 x 512 x 4 = 1048576. The two peak at different moments:
 * the loss holds the logits, the gathered unembedding (1024 / 2 x 256 x
 * 2 B = 262144) and one gathered layer (590336), 1901056 in all, more than
 * the layers' two: total 3672576 + 1901056 = 5573632. */
static void test_memory(void **state)
{
    (void)state;
    struct model m = small_model();
    struct fixture f;
    setup_shard(&f, &m, 4, 2);
    struct model_memory mem;
    model_memory(&m, &f.sh, &f.chip, &mem);
    assert_float_equal(mem.params, 852608, 0.5);
    assert_float_equal(mem.grads, 852608, 0.5);
    assert_float_equal(mem.optimizer, 1705216, 0.5);
    assert_float_equal(mem.activations, 262144, 0.5);
    assert_float_equal(mem.weights_gathered, 1180672, 0.5);
    assert_float_equal(mem.logits, 1048576, 0.5);
    assert_float_equal(mem.total, 5573632, 0.5);
    /* a vocabulary of 128: the loss holds 131072 + 32768 + 590336 = 754176,
     * the layers more (1180672), which the total takes */
    struct model small_vocab = m;
    small_vocab.vocab = 128;
    struct fixture fv;
    setup_shard(&fv, &small_vocab, 4, 2);
    struct model_memory mv;
    model_memory(&small_vocab, &fv.sh, &fv.chip, &mv);
    assert_float_equal(mv.logits, 131072, 0.5);
    assert_float_equal(mv.weights_gathered, 1180672, 0.5);
    assert_float_equal(mv.total, mv.params + mv.grads + mv.optimizer + mv.activations + 1180672,
                       0.5);
    /* the limit: 16 GiB x 0.9675 without hbm.usable, hbm.usable when given */
    assert_float_equal(mem.capacity, 16.0 * (1 << 30) * 0.9675, 1);
    f.chip.hbm_usable_bytes = (uint64_t)15 << 30;
    model_memory(&m, &f.sh, &f.chip, &mem);
    assert_float_equal(mem.capacity, 15.0 * (1 << 30), 0.5);
    /* minimal keeps q (2 x 64 x 2 B), k and v (64 x 2 B each), out_proj
     * (128 x 2 B), mlpwi (2 x 256 x 2 B) beside the input (256): 2048 B a
     * token, 512 x 2 layers x 2048 = 2097152. It names mlpwo too, but the
     * backward never reads the MLP's output: not a residual, not kept. */
    assert_int_equal(model_remat_policy("minimal", &m.remat), 0);
    model_memory(&m, &f.sh, &f.chip, &mem);
    assert_float_equal(mem.activations, 2097152, 0.5);
    /* a policy that names only mlpwo keeps what full keeps: the input */
    assert_int_equal(model_remat_policy("full", &m.remat), 0);
    m.remat.t[MT_MLPWO] = KEEP_DEVICE;
    model_memory(&m, &f.sh, &f.chip, &mem);
    assert_float_equal(mem.activations, 262144, 0.5);
    m.remat.t[MT_MLPWO] = KEEP_OFFLOAD; /* nor sent to the host */
    assert_float_equal(model_offload_bytes_per_layer(&m, &f.sh), 0, 0.5);
    /* offload sends the input, q, k, v and out_proj away (1024 B a token):
     * the device keeps two layers' worth in flight, 2 x 512 x 1024 */
    assert_int_equal(model_remat_policy("offload", &m.remat), 0);
    model_memory(&m, &f.sh, &f.chip, &mem);
    assert_float_equal(model_offload_bytes_per_layer(&m, &f.sh), 524288, 0.5);
    assert_float_equal(mem.activations, 1048576, 0.5);
}

/* A serving engine's step (serving/serve.h): a decode of 50 cached tokens and
 * a 100-token prefill chunk, padded to 128 rows, logits for 8 rows, on tensor
 * 8 (heads 8: one query and one KV head per chip). Ragged paged attention gets
 * the real lengths, the matmuls the padded rows; the KV cache holds the two
 * sequences. 150 tokens: 2 (K, V) x 2 layers x 1 head x 32 x 2 bytes x 150. */
static void test_serving_step(void **state)
{
    (void)state;
    struct model m = small_model();
    static const int64_t q[] = {1, 100}, kv[] = {50, 100};
    m.heads = m.kv_heads = 8, m.head_dim = 32;
    m.mode = MODEL_DECODE, m.batch = 2, m.seq_len = 1, m.kv_len = 2047;
    m.nseqs = 2, m.q_lens = q, m.kv_lens = kv, m.tokens = 128, m.rows = 8;
    struct fixture f;
    setup_shard(&f, &m, 1, 8);
    assert_int_equal(f.sh.tokens, 128);
    char *yaml = model_workload_yaml(&m, &f.sh, &f.chip);
    assert_non_null(strstr(yaml, "sequences: [{q_len: 1, kv_len: 50}, {q_len: 100, kv_len: 100}]"));
    assert_non_null(strstr(yaml, "max_num_batched_tokens: 128"));
    assert_non_null(strstr(yaml, "max_model_len: 2048"));
    assert_non_null(strstr(yaml, "{op: matmul, name: qkv, m: 128,"));
    assert_non_null(strstr(yaml, "{op: matmul, name: logits, m: 8,"));
    free(yaml);
    struct model_memory mem;
    model_memory(&m, &f.sh, &f.chip, &mem);
    assert_float_equal(mem.kv_cache, 2.0 * 2 * 1 * 32 * 2 * 150, 1e-9);
}

/* JetStream-PyTorch's attention over its dense cache (dense_kv): 3 slots at
 * 2048 tokens (the cache length), heads 32 and kv heads 16 on tensor 8: 4 query
 * and 2 KV heads a chip, 2 query heads per KV head, head_dim 128. Per layer the
 * scores einsum is 3 slots x 2 KV heads = 6 batches of [2 heads x 2 rows (the
 * one token broadcast to two) = 4 -> 8 (XLA's rows), 128] x [128, 2048], the
 * softmax 3 x 4 heads x 2 rows = 24 rows of 2048, the context 6 batches of
 * [8, 2048] x [2048, 128]. int8 KV: both read the cache (their rhs) as int8:
 * 6 x 128 x 2048 x 1 B = 1.5 MiB each, K then V. A prefill (one request, 256
 * padded tokens) attends within its prompt: 2 batches of [2 x 256, 128] x
 * [128, 256], softmax 4 x 256 rows of 256. */
static void test_serving_dense_cache_attention(void **state)
{
    (void)state;
    struct model m = small_model();
    static const int64_t q[] = {1, 1, 1}, kv[] = {2048, 2048, 2048};
    m.heads = 32, m.kv_heads = 16, m.head_dim = 128;
    m.mode = MODEL_DECODE, m.batch = 3, m.seq_len = 1, m.kv_len = 2047;
    m.nseqs = 3, m.q_lens = q, m.kv_lens = kv, m.tokens = 3, m.rows = 3;
    m.dense_kv = true, m.kv_int8 = true;
    struct fixture f;
    setup_shard(&f, &m, 1, 8);
    char *yaml = model_workload_yaml(&m, &f.sh, &f.chip);
    assert_null(strstr(yaml, "ragged_paged_attention"));
    assert_non_null(strstr(yaml, "{op: einsum, name: attn_scores, batch: 6, m: 8, k: 128, "
                                 "n: 2048, dtype: bf16, block: auto, rhs_dtype: int8"));
    assert_non_null(strstr(yaml, "{op: softmax, name: attn_softmax, shape: [24, 2048]"));
    assert_non_null(strstr(yaml, "{op: einsum, name: attn_context, batch: 6, m: 8, k: 2048, "
                                 "n: 128, dtype: bf16, block: auto, rhs_dtype: int8"));
    free(yaml);
    static const int64_t pq[] = {256}, pkv[] = {256};
    m.nseqs = 1, m.q_lens = pq, m.kv_lens = pkv, m.tokens = 256, m.rows = 256, m.batch = 1;
    m.kv_int8 = false;
    setup_shard(&f, &m, 1, 8);
    yaml = model_workload_yaml(&m, &f.sh, &f.chip);
    assert_non_null(strstr(yaml, "{op: einsum, name: attn_scores, batch: 2, m: 512, k: 128, "
                                 "n: 256, dtype: bf16, block: auto}"));
    assert_non_null(strstr(yaml, "{op: softmax, name: attn_softmax, shape: [1024, 256]"));
    free(yaml);
}

/* JetStream-PyTorch's logits through a tied embedding table sharded on its
 * hidden axis (logits_hidden_sharded): d_model 256 on tensor 8 is 32 a chip
 * (128 once padded to the lanes), so the logits matmul is [8 rows, 128] x
 * [128, the whole vocabulary 1024], and its partial sums are all-reduced: 3
 * rows (the step's sequences) x 1024 x 2 bytes = 6144 bytes. Without the flag:
 * [8, 256] x [256, 1024 / 8 = 128], no all-reduce. */
static void test_serving_logits_hidden_sharded(void **state)
{
    (void)state;
    struct model m = small_model();
    static const int64_t q[] = {1, 1, 1}, kv[] = {100, 100, 100};
    m.heads = m.kv_heads = 8, m.head_dim = 32;
    m.mode = MODEL_DECODE, m.batch = 3, m.seq_len = 1, m.kv_len = 2047;
    m.nseqs = 3, m.q_lens = q, m.kv_lens = kv, m.tokens = 3, m.rows = 3;
    struct fixture f;
    setup_shard(&f, &m, 1, 8);
    char *yaml = model_workload_yaml(&m, &f.sh, &f.chip);
    assert_non_null(strstr(yaml, "{op: matmul, name: logits, m: 8, k: 256, n: 128,"));
    assert_null(strstr(yaml, "logits_ar"));
    free(yaml);
    m.logits_hidden_sharded = true;
    yaml = model_workload_yaml(&m, &f.sh, &f.chip);
    assert_non_null(strstr(yaml, "{op: matmul, name: logits, m: 8, k: 128, n: 1024,"));
    assert_non_null(strstr(yaml, "{op: all_reduce, name: logits_ar, bytes: 6144, groups: [tensor]"));
    free(yaml);
}

static void test_oom_message(void **state)
{
    (void)state;
    struct model_memory mem = {.params = 8.0 * (1 << 30), .grads = 8.0 * (1 << 30),
                               .optimizer = 16.0 * (1 << 30), .total = 32.0 * (1 << 30),
                               .capacity = 15.48 * (1 << 30)};
    char buf[512];
    model_oom_message(&mem, buf, sizeof buf);
    assert_non_null(strstr(buf, "Ran out of memory in memory space hbm. Used 32.00G of 15.48G "
                                "hbm. Exceeded hbm capacity by 16.52G"));
    assert_non_null(strstr(buf, "parameters 8.00G, gradients 8.00G, optimizer state 16.00G"));
}

/* ---- the expansion, read back as a tree ---- */

struct tally {
    double matmul_flops;      /* 2 m k n over every matmul instance but the recomputation */
    double recompute_flops;   /* ... of the re_ ones */
    double coll_bytes[3];     /* fsdp, tensor, data: collective bytes per chip, all instances */
    double host_bytes[2];     /* to_host, to_device */
    char names[4096];         /* the body of the backward block, space-separated */
};

static double num(const struct cfg_node *m, const char *key)
{
    const struct cfg_node *v = cfg_get(m, key);
    return v ? atof(v->value) : 0;
}

static void tally_op(struct tally *t, const struct cfg_node *op, double count, bool bwd)
{
    const char *kind = cfg_get(op, "op")->value, *name = cfg_get(op, "name")->value;
    if (bwd && strlen(t->names) + strlen(name) + 2 < sizeof t->names)
        strcat(strcat(t->names, name), " ");
    if (strcmp(kind, "matmul") == 0) {
        double fl = 2 * num(op, "m") * num(op, "k") * num(op, "n") * count;
        *(strncmp(name, "re_", 3) == 0 ? &t->recompute_flops : &t->matmul_flops) += fl;
    }
    const struct cfg_node *g = cfg_get(op, "groups");
    if (g) {
        const char *axis = g->kids[0]->value;
        int i = strcmp(axis, "fsdp") == 0 ? 0 : strcmp(axis, "tensor") == 0 ? 1 : 2;
        t->coll_bytes[i] += num(op, "bytes") * count;
    }
    if (strcmp(kind, "host_copy") == 0)
        t->host_bytes[strcmp(cfg_get(op, "direction")->value, "to_host") == 0 ? 0 : 1] +=
            num(op, "bytes") * count;
}

static void tally_list(struct tally *t, const struct cfg_node *list, double count, bool bwd)
{
    for (int i = 0; i < list->n; i++) {
        const struct cfg_node *it = list->kids[i], *rep = cfg_get(it, "repeat");
        if (rep)
            tally_list(t, cfg_get(rep, "ops"), count * num(rep, "count"),
                       strcmp(cfg_get(rep, "name")->value, "bwd") == 0);
        else
            tally_op(t, it, count, bwd);
    }
}

/* The model's expansion, parsed (cfg_node_free it). */
static struct cfg_node *expansion_tree(const struct model *m, const struct fixture *f)
{
    char *yaml = model_workload_yaml(m, &f->sh, &f->chip);
    struct diag *d = diag_new();
    struct cfg_node *tree = cfg_parse(yaml, strlen(yaml), "expansion", d);
    if (!tree)
        diag_print(d, stderr);
    assert_non_null(tree);
    diag_free(d);
    free(yaml);
    return tree;
}

static struct tally expand(const struct model *m, const struct fixture *f)
{
    struct cfg_node *tree = expansion_tree(m, f);
    struct tally t;
    memset(&t, 0, sizeof t);
    tally_list(&t, tree, 1, false);
    cfg_node_free(tree);
    return t;
}

/* Forward, dgrad and wgrad of every matmul: 6 x N_local x T, N_local the
 * matmul weights of a device: L (D (2+2) 64 + 2 x 64 x D + 3 D 256) + D V/2
 * = 720896, so 6 x 720896 x 512 = 2214592512 (the same as MaxText's count:
 * K divides by tensor). Full remat recomputes qkv, out and the MLP's gate and
 * up per layer: 2 x 512 (256 x 256 + 128 x 256 + 256 x 512) x 2 layers =
 * 469762048 (not the MLP's down projection: nothing needs its output). That
 * is fused_qkv; without it (MaxText's default) q [256, 2 x 64], k and v [256,
 * 1 x 64] are three matmuls and XLA pads k's and v's 64 columns to the MXU's
 * 128 lanes: 64 more columns each, 2 x 512 x 256 x 128 = 33554432 flops more
 * per layer and pass, 6 passes (forward, dgrad, wgrad of both) x 2 layers =
 * 201326592 more (2415919104), and 2 x 33554432 more recomputed (536870912). */
/* minimal_flash is MaxText's older name of minimal_with_context (its decoders.py takes
 * both, the one logging that it will go): the same policy, every tensor kept. */
static void test_remat_minimal_flash(void **state)
{
    (void)state;
    struct model_remat a, b;
    assert_int_equal(model_remat_policy("minimal_flash", &a), 0);
    assert_int_equal(model_remat_policy("minimal_with_context", &b), 0);
    assert_string_equal(a.name, "minimal_flash");
    for (int t = 0; t < MT_COUNT; t++)
        assert_int_equal(a.t[t], KEEP_DEVICE);
    assert_memory_equal(a.t, b.t, sizeof a.t);
    assert_false(a.none);
}

static void test_expansion_flops(void **state)
{
    (void)state;
    struct model m = small_model();
    struct fixture f;
    setup_shard(&f, &m, 4, 2);
    struct tally t = expand(&m, &f);
    assert_float_equal(t.matmul_flops, 2415919104.0, 1);
    assert_float_equal(t.recompute_flops, 536870912.0, 1);
    assert_non_null(strstr(t.names, "re_q "));
    assert_non_null(strstr(t.names, "g_k_wgrad "));
    assert_null(strstr(t.names, "qkv"));
    m.fused_qkv = true;
    t = expand(&m, &f);
    assert_float_equal(t.matmul_flops, 2214592512.0, 1);
    assert_float_equal(t.recompute_flops, 469762048.0, 1);
    assert_non_null(strstr(t.names, "re_qkv "));
    assert_null(strstr(t.names, "re_q "));
    /* minimal recomputes no matmul (the attention only), none nothing */
    assert_int_equal(model_remat_policy("minimal", &m.remat), 0);
    t = expand(&m, &f);
    assert_float_equal(t.recompute_flops, 0, 0);
    assert_non_null(strstr(t.names, "re_attn "));
    assert_null(strstr(t.names, "re_qkv "));
    assert_int_equal(model_remat_policy("none", &m.remat), 0);
    t = expand(&m, &f);
    assert_null(strstr(t.names, "re_"));
    assert_non_null(strstr(t.names, "g_start "));
}

/* Collective bytes per chip and step, by mesh axis:
 * fsdp: the weights gathered (bf16, a device's input = a quarter of the
 *   tensor half: 590336 / 2 / 4 x 2 B = 147584) once per layer in the
 *   forward (2) and the backward (2), and the gradients
 *   reduce-scattered (bf16 -- the model's dtype, as XLA reduces them -- the
 *   tensor half: 590336 / 2 x 2 B = 590336) per layer; the unembedding
 *   [D, V / N_t] = 256 x 512 = 131072 parameters gathered once (131072 / 4 x
 *   2 B = 65536) and its gradient reduce-scattered once (131072 x 2 B =
 *   262144), and the embedding's rows and their gradient turned over fsdp
 *   by an all-to-all each (the residual, 512 x 128 x 2 B = 131072):
 *   4 x 147584 + 2 x 590336 + 65536 + 262144 + 2 x 131072 = 2360832;
 * tensor: per layer forward two gathers of the residual (input 512 x 128 x
 *   2 B = 131072) and two reduce-scatters (input 512 x 256 x 2 = 262144),
 *   the same in the backward, and the full remat's recomputation gathers
 *   once for qkv and once for the MLP and scatters out_proj once:
 *   2 layers x (2 x 786432 + 2 x 131072 + 262144) = 4194304. */
static void test_expansion_collectives(void **state)
{
    (void)state;
    struct model m = small_model();
    struct fixture f;
    setup_shard(&f, &m, 4, 2);
    struct tally t = expand(&m, &f);
    assert_float_equal(t.coll_bytes[0], 2360832, 0.5);
    assert_float_equal(t.coll_bytes[1], 4194304, 0.5);
    assert_float_equal(t.coll_bytes[2], 0, 0);
    assert_float_equal(t.host_bytes[0] + t.host_bytes[1], 0, 0);
}

/* The backward's op 'name' (in the bwd block) and what it waits for, as "a b". */
static void bwd_after(const struct cfg_node *list, const char *name, char *out, size_t n)
{
    for (int i = 0; i < list->n; i++) {
        const struct cfg_node *it = list->kids[i], *rep = cfg_get(it, "repeat");
        if (rep) {
            bwd_after(cfg_get(rep, "ops"), name, out, n);
            continue;
        }
        if (strcmp(cfg_get(it, "name")->value, name) != 0)
            continue;
        const struct cfg_node *a = cfg_get(it, "after");
        out[0] = '\0';
        for (int k = 0; a && k < a->n; k++)
            snprintf(out + strlen(out), n - strlen(out), "%s%s", k ? " " : "", a->kids[k]->value);
    }
}

/* The first op named 'name' (in any block) of an expansion. */
static const struct cfg_node *find_op(const struct cfg_node *list, const char *name)
{
    for (int i = 0; i < list->n; i++) {
        const struct cfg_node *it = list->kids[i], *rep = cfg_get(it, "repeat");
        const struct cfg_node *got = rep ? find_op(cfg_get(rep, "ops"), name) : NULL;
        if (got)
            return got;
        if (!rep && strcmp(cfg_get(it, "name")->value, name) == 0)
            return it;
    }
    return NULL;
}

/* The layers' norms run on the residual as sharded over tensor: T = 512
 * tokens by D / N_t = 256 / 2 = 128 (the gather over tensor comes after them,
 * before the matmul), forward, recomputed and backward; the final norm, whose
 * input the unembedding needs whole, stays 256 wide. */
static void test_expansion_norms_sharded(void **state)
{
    (void)state;
    struct model m = small_model();
    struct fixture f;
    setup_shard(&f, &m, 4, 2);
    struct cfg_node *tree = expansion_tree(&m, &f);
    static const char *const names[] = {"norm1", "norm2", "re_norm1", "re_norm2", "g_norm2",
                                        "g_norm1", "final_norm"};
    for (int i = 0; i < 7; i++) {
        const struct cfg_node *op = find_op(tree, names[i]), *shape;
        assert_non_null(op);
        shape = cfg_get(op, "shape");
        assert_int_equal(atoi(shape->kids[0]->value), 512);
        assert_int_equal(atoi(shape->kids[1]->value), i < 6 ? 128 : 256);
    }
    cfg_node_free(tree);
}

/* The backward scatters the gradient of a matmul's input over tensor as soon
 * as its dgrad is done, beside its wgrad, as XLA's async reduce-scatter does
 * (the wgrad does not feed it): on a v5p 512B step (fidelity row 41) the
 * scatter of g_up (18.3 ms) hides behind g_up_wgrad (25 ms) and that of g_qkv
 * behind g_qkv_wgrad (19 ms); ordered after the wgrad, both were exposed.
 * The layer's weight-gradient scatter over fsdp still waits for the last
 * wgrad. */
static void test_expansion_scatter_beside_wgrad(void **state)
{
    (void)state;
    struct model m = small_model();
    struct fixture f;
    setup_shard(&f, &m, 4, 2);
    struct cfg_node *tree = expansion_tree(&m, &f);
    char after[256] = "";
    bwd_after(tree, "g_tp_rs2", after, sizeof after);
    assert_string_equal(after, "g_up_dgrad");
    bwd_after(tree, "g_tp_rs1", after, sizeof after);
    assert_string_equal(after, "g_v_dgrad"); /* the sum of q's, k's and v's dgrads */
    bwd_after(tree, "grad_rs", after, sizeof after);
    assert_string_equal(after, "g_norm1 g_v_wgrad");
    cfg_node_free(tree);
    m.fused_qkv = true;
    tree = expansion_tree(&m, &f);
    bwd_after(tree, "g_tp_rs1", after, sizeof after);
    assert_string_equal(after, "g_qkv_dgrad");
    bwd_after(tree, "grad_rs", after, sizeof after);
    assert_string_equal(after, "g_norm1 g_qkv_wgrad");
    cfg_node_free(tree);
}

/* The unembedding is sharded over fsdp as the layers are: XLA gathers it
 * before the logits (an all-gather of bf16[4096, 128256] in the Llama-3-8B
 * step of tools/hlo_agree.py) and reduce-scatters its gradient after them
 * (the head's bf16 all-reduce there, a reduce-scatter as TPU's pipeline
 * makes it). The gather waits for the first layer's (never against them);
 * the final norm's backward does not wait for the scatter,
 * only the embedding's gradient sum at the end. */
static void test_expansion_head_collectives(void **state)
{
    (void)state;
    struct model m = small_model();
    struct fixture f;
    setup_shard(&f, &m, 4, 2);
    struct cfg_node *tree = expansion_tree(&m, &f);
    const struct cfg_node *wg = find_op(tree, "head_wg"), *rs = find_op(tree, "head_grad_rs");
    assert_non_null(wg);
    assert_non_null(rs);
    assert_float_equal(num(wg, "bytes"), 256.0 * 512 / 4 * 2, 0.5);
    assert_float_equal(num(rs, "bytes"), 256.0 * 512 * 2, 0.5);
    char after[256] = "";
    bwd_after(tree, "head_wg", after, sizeof after);
    assert_string_equal(after, "embed_a2a"); /* issued after the embedding's rows */
    bwd_after(tree, "head_grad_rs", after, sizeof after);
    assert_string_equal(after, "g_logits_wgrad");
    bwd_after(tree, "g_final_norm", after, sizeof after);
    assert_null(strstr(after, "head_grad_rs"));
    bwd_after(tree, "g_embed", after, sizeof after);
    assert_non_null(strstr(after, "head_grad_rs"));
    cfg_node_free(tree);
}

/* The embedding table is sharded over fsdp along d (MaxText's 'embed'): XLA
 * turns the looked-up rows to the batch's sharding with an all-to-all over
 * fsdp and the gradient back with another (tools/hlo_agree.py's Llama-3-8B:
 * bf16[2048, 2048, 16] each on fsdp 256, 16384 tokens x 4096 x 2 B per chip).
 * Here 8 sequences / fsdp 4 x 256 = 512 tokens a device, d 256 over tensor 2
 * (the residual [T, D / N_t]), bf16: 512 x 256 / 2 x 2 B = 131072 B each. The forward's first gather waits
 * for the rows (XLA's loop starts after its input); the embedding's gradient
 * for its all-to-all. Without fsdp, or over several slices, none. */
static void test_expansion_embed_a2a(void **state)
{
    (void)state;
    struct model m = small_model();
    struct fixture f;
    setup_shard(&f, &m, 4, 2);
    struct cfg_node *tree = expansion_tree(&m, &f);
    const struct cfg_node *fw = find_op(tree, "embed_a2a"), *bw = find_op(tree, "g_embed_a2a");
    assert_non_null(fw);
    assert_non_null(bw);
    assert_string_equal(cfg_get(fw, "op")->value, "all_to_all");
    assert_float_equal(num(fw, "bytes"), 131072.0, 0.5);
    assert_float_equal(num(bw, "bytes"), 131072.0, 0.5);
    const struct cfg_node *a = cfg_get(find_op(tree, "wgather1"), "after");
    assert_non_null(a); /* (after the previous layer, prev.*, as its iteration starts) */
    bool rows = false;
    for (int i = 0; i < a->n; i++)
        rows |= strcmp(a->kids[i]->value, "embed_a2a") == 0;
    assert_true(rows);
    char after[256] = "";
    bwd_after(tree, "g_embed", after, sizeof after);
    assert_non_null(strstr(after, "g_embed_a2a"));
    cfg_node_free(tree);
    f.sh.slices = 2; /* left out over several slices (no stand-in there) */
    tree = expansion_tree(&m, &f);
    assert_null(find_op(tree, "embed_a2a"));
    cfg_node_free(tree);
    m.heads = m.kv_heads = 8; /* over tensor 8 */
    setup_shard(&f, &m, 1, 8);
    tree = expansion_tree(&m, &f);
    assert_null(find_op(tree, "embed_a2a"));
    cfg_node_free(tree);
}

/* Each layer gathers its own weights in its iteration (XLA pipelines an
 * all-gather back into the previous iteration only over the DCN), one
 * all-gather at a time: first the first matmul's, then the rest after them.
 * The small model (fsdp 4, tensor 2, bf16) with fused_qkv: qkv [256, (2 + 2 x 1) x 64]
 * / 4 x 2 B = 32768 first, then 147584 - 32768 = 114816; norm1 and qkv wait
 * for the first only. With q, k, v saved (minimal) the backward's first
 * matmul is the MLP's down dgrad: F / N_t x D = 256 x 256
 * / 4 x 2 B = 32768 again (re_norm1 waits for it), and g_down_dgrad does
 * not wait for the rest, g_up_dgrad does. No gather before the loop (wg0).
 * Without fused_qkv (MaxText's default) each projection gathers its own
 * weights, one after the other: q's [256, 2 x 64] / 4 x 2 B = 16384, k's and
 * v's [256, 64] 8192 each, then the same rest 114816; q waits for q's only, k
 * for k's, v for v's; the recomputation likewise. */
static void test_expansion_layer_gathers_apart(void **state)
{
    (void)state;
    struct model m = small_model();
    struct fixture f;
    setup_shard(&f, &m, 4, 2);
    struct cfg_node *tree = expansion_tree(&m, &f);
    static const char *const w[4] = {"wgather1", "wgather_k", "wgather_v", "wgather"};
    static const double b[4] = {16384, 8192, 8192, 114816};
    char after[256] = "";
    for (int i = 0; i < 4; i++) {
        assert_float_equal(num(find_op(tree, w[i]), "bytes"), b[i], 0.5);
        if (i > 0) { /* one in flight: each after the one before */
            bwd_after(tree, w[i], after, sizeof after);
            assert_string_equal(after, w[i - 1]);
        }
    }
    bwd_after(tree, "norm1", after, sizeof after);
    assert_string_equal(after, "wgather1");
    bwd_after(tree, "q", after, sizeof after); /* (in order after tp_ag1 and norm1) */
    assert_null(strstr(after, "wgather"));
    bwd_after(tree, "k", after, sizeof after);
    assert_string_equal(after, "tp_ag1 wgather_k");
    bwd_after(tree, "v", after, sizeof after);
    assert_string_equal(after, "tp_ag1 wgather_v");
    bwd_after(tree, "re_k", after, sizeof after);
    assert_string_equal(after, "re_tp_ag1 wgather_k");
    assert_float_equal(num(find_op(tree, "k"), "n"), 128, 0); /* 64 padded to 128 lanes */
    assert_float_equal(num(find_op(tree, "q"), "n"), 128, 0);
    cfg_node_free(tree);
}

static void test_expansion_layer_gathers_in_loop(void **state)
{
    (void)state;
    struct model m = small_model();
    m.fused_qkv = true;
    struct fixture f;
    setup_shard(&f, &m, 4, 2);
    struct cfg_node *tree = expansion_tree(&m, &f);
    const struct cfg_node *w1 = find_op(tree, "wgather1"), *wr = find_op(tree, "wgather");
    assert_non_null(w1);
    assert_non_null(wr);
    assert_null(find_op(tree, "wg0"));
    assert_float_equal(num(w1, "bytes"), 256.0 * 256 / 4 * 2, 0.5);
    assert_float_equal(num(wr, "bytes"), 147584 - 32768, 0.5);
    char after[256] = "";
    bwd_after(tree, "norm1", after, sizeof after);
    assert_non_null(strstr(after, "wgather1"));
    assert_null(strstr(after, "wgather "));
    bwd_after(tree, "wgather", after, sizeof after);
    assert_string_equal(after, "wgather1");
    bwd_after(tree, "re_norm1", after, sizeof after);
    assert_non_null(strstr(after, "wgather1"));
    cfg_node_free(tree);

    assert_int_equal(model_remat_policy("minimal", &m.remat), 0);
    tree = expansion_tree(&m, &f);
    bwd_after(tree, "g_down_dgrad", after, sizeof after); /* (its after: elided, in order) */
    assert_null(strstr(after, "wgather"));
    bwd_after(tree, "g_up_dgrad", after, sizeof after);
    assert_non_null(strstr(after, "wgather"));
    assert_null(strstr(after, "wgather1"));
    cfg_node_free(tree);
}

/* With qkv recomputed, the backward gathers its incoming gradient over tensor
 * once the recomputation's own gather is done, beside the qkv matmul (it
 * needs only the layer above's gradient): on the v5p 512B step (row 41) the
 * gather, 15.7 ms, hides behind re_qkv's 19.7 ms; it used to wait for the
 * whole recomputation. The MLP's first gradient matmul (g_down_dgrad, 25.5
 * ms, needing only that gradient) then runs beside the recomputation's
 * out_proj scatter (18.3 ms), which re_res1 waits for. Without qkv recomputed
 * (minimal) both stay where they were. */
static void test_expansion_grad_gather_beside_recompute(void **state)
{
    (void)state;
    struct model m = small_model();
    struct fixture f;
    setup_shard(&f, &m, 4, 2);
    for (int pass = 0; pass < 2; pass++) {
        struct cfg_node *tree = expansion_tree(&m, &f);
        char after[256] = "";
        bwd_after(tree, "g_tp_ag2", after, sizeof after);
        assert_string_equal(after, pass == 0 ? "re_tp_ag1" : "");
        bwd_after(tree, "g_down_dgrad", after, sizeof after);
        /* (and its weights, in the rest of the layer's gather) */
        assert_string_equal(after, pass == 0 ? "g_tp_ag2 wgather" : "");
        if (pass == 0) { /* and g_down_dgrad beside the recomputation's scatter */
            bwd_after(tree, "re_q", after, sizeof after);
            assert_string_equal(after, "re_tp_ag1");
            bwd_after(tree, "re_res1", after, sizeof after);
            assert_string_equal(after, "re_tp_rs1");
            bwd_after(tree, "g_down_wgrad", after, sizeof after);
            assert_string_equal(after, "re_act g_tp_ag2");
        }
        cfg_node_free(tree);
        assert_int_equal(model_remat_policy("minimal", &m.remat), 0);
    }
}

/* Offloading: each layer's 524288 bytes go to the host in the forward and
 * come back in the backward (h2d0 for the last layer, then one ahead). */
static void test_expansion_offload(void **state)
{
    (void)state;
    struct model m = small_model();
    struct fixture f;
    setup_shard(&f, &m, 4, 2);
    assert_int_equal(model_remat_policy("offload", &m.remat), 0);
    struct tally t = expand(&m, &f);
    assert_float_equal(t.host_bytes[0], 2 * 524288.0, 0.5);
    assert_float_equal(t.host_bytes[1], 3 * 524288.0, 0.5); /* h2d0 + one per layer ahead */
    /* the recipes' policy recomputes the attention and the MLP's gate and up, not qkv or out */
    assert_non_null(strstr(t.names, "re_attn "));
    assert_null(strstr(t.names, "re_q "));
    assert_null(strstr(t.names, "re_v "));
    assert_null(strstr(t.names, "re_out "));
    assert_non_null(strstr(t.names, "re_up "));
}

/* The step's program reads every tensor it writes (the loss, the logits and
 * the updated parameters are its outputs), under each policy but those that
 * keep or offload q, k and v: they recompute norm1 for nothing (its output
 * fed the qkv matmul they do not recompute) -- the expansion has always done
 * so. */
static void test_program_reads_what_it_writes(void **state)
{
    (void)state;
    static const char *const policies[] = {"full", "none", "offload", "save_dot_except_mlpwi",
                                           NULL};
    for (int i = 0; policies[i]; i++) {
        struct model m = small_model();
        assert_int_equal(model_remat_policy(policies[i], &m.remat), 0);
        struct fixture f;
        setup_shard(&f, &m, 4, 2);
        struct program *p = model_program(&m, &f.sh, &f.chip);
        char buf[256];
        int n = sched_unread(p, buf, sizeof buf);
        bool keeps_qkv = strcmp(policies[i], "offload") == 0 ||
                         strcmp(policies[i], "save_dot_except_mlpwi") == 0;
        assert_int_equal(n, keeps_qkv ? 1 : 0);
        assert_string_equal(buf, keeps_qkv ? "re_norm1" : "");
        prog_free(p);
    }
}

static void test_errors(void **state)
{
    (void)state;
    struct model m = small_model();
    struct fixture f;
    char err[256];
    setup_shard(&f, &m, 4, 2);
    m.heads = 3, m.kv_heads = 3;
    assert_int_equal(model_shard(&m, &f.mesh, &f.topo, &f.chip, &f.sh, err, sizeof err), -1);
    assert_string_equal(err, "heads (3) is not divisible by the tensor axis (2)");
    m = small_model();
    m.batch = 6;
    assert_int_equal(model_shard(&m, &f.mesh, &f.topo, &f.chip, &f.sh, err, sizeof err), -1);
    assert_non_null(strstr(err, "batch (6) is not divisible by the devices the batch is split"));
    struct model_remat r;
    assert_int_equal(model_remat_policy("sometimes", &r), -1);
    /* every dimension at its key's maximum: one Mixtral layer is
     * D(H+2K)Dh + H Dh D + E (3 D F + D) + 2 D with D = 2^20, H = K = Dh = 2^12, F = 2^22,
     * E = 2^10: 1.36e16, and 2^12 layers of it 5.56e19 > 2^63 = 9.2e18: int64 wrapped
     * (UBSan abort; release printed wrapped numbers in the out-of-memory message) */
    m = small_model();
    m.arch = MODEL_MIXTRAL, m.experts = 1 << 10, m.top_k = 1;
    m.layers = 1 << 12, m.d_model = 1 << 20, m.heads = m.kv_heads = m.head_dim = 1 << 12;
    m.ffn = 1 << 22, m.vocab = 1 << 24;
    assert_int_equal(model_shard(&m, &f.mesh, &f.topo, &f.chip, &f.sh, err, sizeof err), -1);
    if (!strstr(err, "expected a model of at most 1e+15 parameters, got 5.56e+19"))
        fail_msg("got '%s'", err);
    /* one layer alone: experts E x 3 D F = 2^10 x 3 x 2^42 = 1.35e16, attention
     * 3 x 2^44 + 2^44 = 7.0e13, embeddings 2 V D = 3.5e13: 1.36e16, still refused */
    m.layers = 1;
    assert_int_equal(model_shard(&m, &f.mesh, &f.topo, &f.chip, &f.sh, err, sizeof err), -1);
    assert_non_null(strstr(err, "at most 1e+15 parameters, got 1.36e+16"));
}

/* A v7-like chip (two TensorCores, each a JAX device): a mesh counted in
 * devices loses the chip's factor from its batch axis. */
static void test_mesh_devices(void **state)
{
    (void)state;
    struct mesh m;
    memset(&m, 0, sizeof m);
    m.naxes = 2;
    snprintf(m.axis[0].name, MESH_NAME_MAX, "fsdp");
    m.axis[0].size = 8;
    snprintf(m.axis[1].name, MESH_NAME_MAX, "tensor");
    m.axis[1].size = 2;
    char err[256];
    assert_int_equal(mesh_fold_devices(&m, 8, 2, err, sizeof err), 0);
    assert_int_equal(m.axis[0].size, 4); /* fsdp, not the last axis: tensor is no batch axis */
    assert_int_equal(m.axis[1].size, 2);
    assert_int_equal(m.dev_axis, 0);
    m.axis[0].size = 4; /* counted in chips: left alone */
    assert_int_equal(mesh_fold_devices(&m, 8, 2, err, sizeof err), 0);
    assert_int_equal(m.dev_per_chip, 1);
    m.axis[0].size = 3, m.axis[1].size = 3; /* neither divides by 2 -- and 9 matches nothing */
    assert_int_equal(mesh_fold_devices(&m, 8, 2, err, sizeof err), 0);
    m.axis[0].size = 1, m.axis[1].size = 16; /* a plain mesh on tensor only is folded there */
    assert_int_equal(mesh_fold_devices(&m, 8, 2, err, sizeof err), 0);
    assert_int_equal(m.dev_axis, 1);
    assert_int_equal(m.axis[1].size, 8);
}

/* Tensor parallelism over a v7-like chip's two devices (a decode step, the mesh counted in
 * devices: SGLang-JAX's --tp-size 8 on 4 chips; here tensor 16 on the 2 x 4 slice of 8
 * chips): the tensor axis keeps 8 chips, the shard counts 16 devices, 2 per chip on it.
 * Heads 16 / 16 = 1 a device (kv heads 8: 1, two devices per head), ffn 512 / 16 = 32;
 * the batch is not split over the chip's devices (both run every sequence): b = 2. A
 * layer's all-reduces carry one device's [T, D] = 2 x 256 x 2 B = 1024 B a chip (not 2
 * x: the devices share the tensor) and chip_devices: 2. The chip holds its two devices'
 * weight shards: parameters / 16 x 2, as tensor 8 over chips. A training step still
 * refuses the devices on tensor. */
static void test_shard_tensor_devices(void **state)
{
    (void)state;
    struct model m = small_model();
    static const int64_t q[] = {1, 1}, kv[] = {100, 200};
    m.heads = 16, m.kv_heads = 8, m.head_dim = 16;
    m.mode = MODEL_DECODE, m.batch = 2, m.seq_len = 1, m.kv_len = 255;
    m.nseqs = 2, m.q_lens = q, m.kv_lens = kv, m.tokens = 2, m.rows = 2;
    struct fixture f, g;
    int shape[2] = {2, 4};
    bool wrap[2] = {false, false};
    assert_int_equal(topo_init(&f.topo, 2, shape, wrap), 0);
    memset(&f.mesh, 0, sizeof f.mesh);
    f.mesh.naxes = 1;
    snprintf(f.mesh.axis[0].name, MESH_NAME_MAX, "tensor");
    f.mesh.axis[0].size = 16;
    char err[256];
    assert_int_equal(mesh_fold_devices(&f.mesh, 8, 2, err, sizeof err), 0);
    assert_int_equal(f.mesh.axis[0].size, 8);
    assert_int_equal(mesh_layout(&f.mesh, &f.topo, err, sizeof err), 0);
    f.chip = test_chip();
    f.chip.cores = 2, f.chip.megacore = false;
    f.chip.hbm_bytes = (uint64_t)16 << 30;
    assert_int_equal(model_shard(&m, &f.mesh, &f.topo, &f.chip, &f.sh, err, sizeof err), 0);
    assert_int_equal(f.sh.tensor, 16);
    assert_int_equal(f.sh.tensor_dev, 2);
    assert_int_equal(f.sh.heads, 1);
    assert_int_equal(f.sh.kv_heads, 1);
    assert_int_equal(f.sh.ffn, 32);
    assert_int_equal(f.sh.b, 2);
    char *yaml = model_workload_yaml(&m, &f.sh, &f.chip);
    assert_non_null(strstr(yaml, "{op: all_reduce, name: tp_ar1, bytes: 1024, groups: [tensor], "
                                 "chip_devices: 2"));
    free(yaml);
    /* the same model over 8 chips of one device each: a device's shard twice as big */
    g = f;
    memset(&g.mesh, 0, sizeof g.mesh);
    g.mesh.naxes = 1;
    snprintf(g.mesh.axis[0].name, MESH_NAME_MAX, "tensor");
    g.mesh.axis[0].size = 8;
    assert_int_equal(mesh_layout(&g.mesh, &g.topo, err, sizeof err), 0);
    g.chip.cores = 1;
    assert_int_equal(model_shard(&m, &g.mesh, &g.topo, &g.chip, &g.sh, err, sizeof err), 0);
    struct model_memory a, b;
    model_memory(&m, &f.sh, &f.chip, &a);
    model_memory(&m, &g.sh, &g.chip, &b);
    assert_float_equal(a.params, b.params, 1e-6 * b.params);
    m.mode = MODEL_TRAIN, m.nseqs = 0, m.batch = 8;
    assert_int_equal(model_shard(&m, &f.mesh, &f.topo, &f.chip, &f.sh, err, sizeof err), -1);
    assert_non_null(strstr(err, "devices of a chip on the tensor axis"));
}

/* The expansion loads as a scenario: every op passes its kind's checks. A
 * regression: over tensor 2 the rope fusion's width (2 q + 1 kv heads of 64
 * = 192) was checked against the default head_dim 128 and refused; the
 * expansion now gives rope its head_dim. With remat: offload it holds the
 * host copies (their kind is known to the loader). */
static void test_expansion_loads(void **state)
{
    (void)state;
    static const char yaml[] =
        "chip: v5e\ntopology: {shape: [2, 4]}\nmesh: {fsdp: 4, tensor: 2}\n"
        "model: {arch: llama, layers: 2, d_model: 256, heads: 4, kv_heads: 2, head_dim: 64,\n"
        "        ffn: 512, vocab: 1024, seq_len: 256, batch: 8, remat: offload}\n";
    struct cfg_scenario sc;
    struct diag *d = diag_new();
    int rc = cfg_load_scenario_text(yaml, sizeof yaml - 1, "model.yaml", NULL, 0, &sc, d);
    if (rc != 0)
        diag_print(d, stderr);
    assert_int_equal(rc, 0);
    int ropes = 0, copies = 0;
    for (int i = 0; i < sc.nops; i++) {
        ropes += sc.ops[i].kind == OP_ROPE && sc.ops[i].u.xla.head_dim == 64;
        copies += sc.ops[i].kind == OP_HOST_COPY;
    }
    assert_int_equal(ropes, 2); /* forward and its gradient (q, k, v offloaded: no recompute) */
    assert_int_equal(copies, 3); /* d2h after the forward layer, h2d0 and h2d */
    assert_true(cfg_uses_kind(&sc, OP_HOST_COPY));
    cfg_scenario_fini(&sc);
    diag_free(d);
}

/* Data parallelism over the DCN: 2 slices of the 2 x 4 slice, mesh {data: 2
 * (dcn: 2), fsdp: 4, tensor: 2}. Every chip's gradient shard is summed
 * across the slices once per step, in bf16 (the model's dtype, as XLA sums
 * them): per layer after its reduce-scatter (the layer's tensor half over
 * fsdp: 590336 / 2 / 4 x 2 B = 147584 B, beside the backward of the layers
 * below), the rest (embedding, unembedding, final norm: (1705216 - 2 x
 * 590336) / 8 x 2 B = 131136 B) after the last: in all the chip's
 * parameters at 2 B, 1705216 / (4 x 2) x 2 B = 426304 B; batch 8 over
 * data x fsdp = 8 devices: one sequence each; devices count both slices. */
static void test_expansion_data_over_dcn(void **state)
{
    (void)state;
    struct model m = small_model();
    struct fixture f;
    int shape[2] = {2, 4};
    bool wrap[2] = {false, false};
    assert_int_equal(topo_init(&f.topo, 2, shape, wrap), 0);
    memset(&f.mesh, 0, sizeof f.mesh);
    f.mesh.naxes = 3;
    static const char *const names[3] = {"data", "fsdp", "tensor"};
    int sizes[3] = {2, 4, 2};
    for (int i = 0; i < 3; i++) {
        snprintf(f.mesh.axis[i].name, MESH_NAME_MAX, "%s", names[i]);
        f.mesh.axis[i].size = sizes[i];
    }
    char err[256];
    assert_int_equal(mesh_place_slices(&f.mesh, 8, 2, err, sizeof err), 0);
    assert_int_equal(f.mesh.axis[0].dcn, 2);
    assert_int_equal(mesh_layout(&f.mesh, &f.topo, err, sizeof err), 0);
    f.chip = test_chip();
    f.chip.hbm_bytes = (uint64_t)16 << 30;
    assert_int_equal(model_shard(&m, &f.mesh, &f.topo, &f.chip, &f.sh, err, sizeof err), 0);
    assert_int_equal(f.sh.devices, 16);
    assert_int_equal(f.sh.b, 1);
    struct tally t = expand(&m, &f);
    assert_float_equal(t.coll_bytes[2], 1705216.0 / 8 * 2, 0.5);
    assert_non_null(strstr(t.names, "grad_rs grad_ar "));
    /* xla_tpu_enable_data_parallel_all_reduce_opt false: no sum in the backward's body,
     * the same bytes summed once after it (grad_ar_rest) */
    m.xla.dp_sums_after_backward = true;
    struct tally u = expand(&m, &f);
    assert_null(strstr(u.names, "grad_ar"));
    assert_float_equal(u.coll_bytes[2], 1705216.0 / 8 * 2, 0.5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard),
        cmocka_unit_test(test_flops),
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_serving_step),
        cmocka_unit_test(test_shard_tensor_devices),
        cmocka_unit_test(test_serving_dense_cache_attention),
        cmocka_unit_test(test_serving_logits_hidden_sharded),
        cmocka_unit_test(test_oom_message),
        cmocka_unit_test(test_expansion_flops),
        cmocka_unit_test(test_expansion_collectives),
        cmocka_unit_test(test_expansion_norms_sharded),
        cmocka_unit_test(test_expansion_scatter_beside_wgrad),
        cmocka_unit_test(test_expansion_head_collectives),
        cmocka_unit_test(test_expansion_embed_a2a),
        cmocka_unit_test(test_expansion_layer_gathers_in_loop),
        cmocka_unit_test(test_expansion_layer_gathers_apart),
        cmocka_unit_test(test_remat_minimal_flash),
        cmocka_unit_test(test_expansion_grad_gather_beside_recompute),
        cmocka_unit_test(test_expansion_data_over_dcn),
        cmocka_unit_test(test_expansion_offload),
        cmocka_unit_test(test_program_reads_what_it_writes),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_mesh_devices),
        cmocka_unit_test(test_expansion_loads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
