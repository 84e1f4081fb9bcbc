/* tests/unit/test_model_steps.c -- decode and inference steps checked by
 * hand on test_model.c's 2-layer model: one token count for every op of a
 * decode step and for its FLOP count, the decode memory terms, the meshes a
 * decode step refuses, and the peak an MFU is taken against.
 *
 * The model: llama, L = 2, D = 256, H = 4, K = 2, Dh = 64, F = 512, V = 1024,
 * bf16; decode of a global batch of 32 sequences with 256 tokens cached and
 * S = 4 new tokens each (speculative or multi-token decode), on 8 chips as
 * data 4 x tensor 2: per chip b = 32 / 4 = 8 sequences, T = 8 x 4 = 32
 * tokens, 2 query heads, 1 KV head, F_local = 256, V_local = 512. */
#include "test_util.h"

#include "base/diag.h"
#include "config/cfg.h"
#include "config/cfg_tree.h"
#include "workload/model.h"
#include "topology/mesh.h"

static struct model decode_model(void)
{
    struct model m = {.arch = MODEL_LLAMA, .layers = 2, .d_model = 256, .heads = 4,
                      .kv_heads = 2, .head_dim = 64, .ffn = 512, .vocab = 1024, .seq_len = 4,
                      .batch = 32, .mode = MODEL_DECODE, .dtype = DT_BF16,
                      .weight_dtype = DT_F32, .mu_dtype = DT_F32, .vocab_tiling = 1,
                      .page_size = 128, .kv_len = 256};
    assert_int_equal(model_remat_policy("full", &m.remat), 0);
    return m;
}

struct fixture {
    struct topo topo;
    struct mesh mesh;
    struct chip_params chip;
    struct model_shard sh;
};

/* A 2 x 4 slice with mesh {a0: n0, a1: n1}; returns model_shard's result ('err'). */
static int shard(struct fixture *f, const struct model *m, const char *a0, int n0,
                 const char *a1, int n1, char *err, size_t n)
{
    int shape[2] = {2, 4};
    bool wrap[2] = {false, false};
    assert_int_equal(topo_init(&f->topo, 2, shape, wrap), 0);
    memset(&f->mesh, 0, sizeof f->mesh);
    f->mesh.naxes = 2;
    snprintf(f->mesh.axis[0].name, MESH_NAME_MAX, "%s", a0);
    f->mesh.axis[0].size = n0;
    snprintf(f->mesh.axis[1].name, MESH_NAME_MAX, "%s", a1);
    f->mesh.axis[1].size = n1;
    assert_int_equal(mesh_layout(&f->mesh, &f->topo, err, n), 0);
    f->chip = test_chip();
    f->chip.hbm_bytes = (uint64_t)16 << 30;
    return model_shard(m, &f->mesh, &f->topo, &f->chip, &f->sh, err, n);
}

static void shard_ok(struct fixture *f, const struct model *m, const char *a0, int n0,
                     const char *a1, int n1)
{
    char err[256] = "";
    int rc = shard(f, m, a0, n0, a1, n1, err, sizeof err);
    if (rc != 0)
        print_error("%s\n", err);
    assert_int_equal(rc, 0);
}

static double num(const struct cfg_node *m, const char *key)
{
    const struct cfg_node *v = cfg_get(m, key);
    return v ? atof(v->value) : 0;
}

/* Over an expansion's op list (repeats multiplied out): matmul FLOPs, the
 * tokens the attention's queries hold, the tensor all-reduces' bytes. */
struct sums {
    double matmul_flops, attn_queries, allreduce_bytes;
    int attn_ops;
};

static void sum_list(struct sums *t, const struct cfg_node *list, double count)
{
    for (int i = 0; i < list->n; i++) {
        const struct cfg_node *it = list->kids[i], *rep = cfg_get(it, "repeat");
        if (rep) {
            sum_list(t, cfg_get(rep, "ops"), count * num(rep, "count"));
            continue;
        }
        const char *kind = cfg_get(it, "op")->value;
        if (strcmp(kind, "matmul") == 0)
            t->matmul_flops += 2 * num(it, "m") * num(it, "k") * num(it, "n") * count;
        if (strcmp(kind, "all_reduce") == 0)
            t->allreduce_bytes += num(it, "bytes") * count;
        if (strcmp(kind, "ragged_paged_attention") == 0) {
            const struct cfg_node *d = cfg_get(it, "decode"), *p = cfg_get(it, "prefill");
            double q = d ? num(d, "batch") : num(p, "batch") * num(p, "q_len");
            t->attn_queries += q * count;
            t->attn_ops++;
        }
    }
}

static struct sums expand(const struct model *m, const struct fixture *f)
{
    char *yaml = model_workload_yaml(m, &f->sh, &f->chip);
    struct diag *d = diag_new();
    struct cfg_node *tree = cfg_parse(yaml, strlen(yaml), "expansion", d);
    if (!tree)
        diag_print(d, stderr);
    assert_non_null(tree);
    struct sums t;
    memset(&t, 0, sizeof t);
    sum_list(&t, tree, 1);
    cfg_node_free(tree);
    diag_free(d);
    free(yaml);
    return t;
}

/* Defect: with seq_len > 1 the MLP ran on b x S tokens, qkv, attention, the
 * projection and the logits on b (MFU 162.8 %). Every op runs the T = 32
 * tokens a chip holds, per layer:
 *   qkv  2 x 32 x 256 x (2 + 2) 64 = 4194304   out  2 x 32 x 128 x 256 = 2097152
 *   up   2 x 32 x 256 x 512 = 8388608          down 2 x 32 x 256 x 256 = 4194304
 * 18874368 x 2 layers + logits 2 x 32 x 256 x 512 = 8388608: 46137344.
 * MaxText's count: b = 32 / 8 devices = 4 (the tensor pair shares a
 * sequence), 4 x 4 = 16 tokens a device, N = L (D (H + 2K) Dh + H Dh D + 3 D F)
 * + V D = 1441792 weights: 2 x 16 x 1441792 = 46137344, the same; causal
 * attention among the new tokens 4 b S^2 H Dh / 2 x L = 65536. The attention
 * takes 8 sequences of 4 queries (32) against the cache and themselves, the
 * two all-reduces per layer 32 x 256 x 2 B = 16384 bytes each. */
static void test_decode_one_token_count(void **state)
{
    (void)state;
    struct model m = decode_model();
    struct fixture f;
    shard_ok(&f, &m, "data", 4, "tensor", 2);
    assert_int_equal(f.sh.b, 8);
    assert_int_equal(f.sh.tokens, 32);
    assert_float_equal(model_flops_per_device(&m, &f.sh), 46137344.0 + 65536.0, 0.5);
    struct sums t = expand(&m, &f);
    assert_float_equal(t.matmul_flops, 46137344.0, 0.5);
    assert_int_equal(t.attn_ops, 1);
    assert_float_equal(t.attn_queries, 2 * 32, 0);
    assert_float_equal(t.allreduce_bytes, 2 * 2 * 16384, 0);
    /* one new token: the same ops on b = 8 tokens (8 rows, XLA's minimum) */
    m.seq_len = 1;
    shard_ok(&f, &m, "data", 4, "tensor", 2);
    t = expand(&m, &f);
    assert_float_equal(t.matmul_flops, 46137344.0 / 4, 0.5);
    assert_float_equal(t.attn_queries, 2 * 8, 0);
}

/* The expansion of a multi-token decode loads (the attention's prefill form
 * passes the ragged kernel's checks: q_len 4 of kv_len 256 + 4 per sequence). */
static void test_decode_multi_token_loads(void **state)
{
    (void)state;
    static const char yaml[] =
        "chip: v6e\ntopology: {shape: [2, 4]}\nmesh: {data: 4, tensor: 2}\n"
        "model: {arch: llama, layers: 2, d_model: 256, heads: 4, kv_heads: 2, head_dim: 64,\n"
        "        ffn: 512, vocab: 1024, seq_len: 4, batch: 32, mode: decode, kv_len: 256}\n";
    struct cfg_scenario sc;
    struct diag *d = diag_new();
    int rc = cfg_load_scenario_text(yaml, sizeof yaml - 1, "decode.yaml", NULL, 0, &sc, d);
    if (rc != 0)
        diag_print(d, stderr);
    assert_int_equal(rc, 0);
    int ragged = 0;
    for (int i = 0; i < sc.nops; i++)
        if (sc.ops[i].kind == OP_RAGGED) {
            const struct op_ragged *r = &sc.ops[i].u.ragged;
            ragged++;
            assert_int_equal(r->nseqs, 8);
            assert_int_equal(r->q_lens[0], 4);
            assert_int_equal(r->kv_lens[7], 260);
        }
    assert_int_equal(ragged, 1);
    cfg_scenario_fini(&sc);
    diag_free(d);
}

/* Per chip, data 4 x tensor 2: the bf16 weights split over tensor, 1705216 /
 * 2 x 2 B = 1705216; the KV cache 2 (K and V) x L x kv_heads x Dh x 2 B x
 * sequences x (cached + new tokens) over the shards: 2 x 2 x 2 x 64 x 2 x 32 x
 * 260 / (4 x 2) = 1064960; no gradients, optimizer state, activations,
 * gathered weights or logits; total 2770176. The shipped Llama-3-8B decode
 * (tests/run_e2e.sh): 2 x 32 x 8 x 128 x 2 x 64 x 2049 / 8 = 2148532224. */
static void test_decode_memory(void **state)
{
    (void)state;
    struct model m = decode_model();
    struct fixture f;
    shard_ok(&f, &m, "data", 4, "tensor", 2);
    struct model_memory mem;
    model_memory(&m, &f.sh, &f.chip, &mem);
    assert_float_equal(mem.params, 1705216, 0.5);
    assert_float_equal(mem.kv_cache, 1064960, 0.5);
    assert_float_equal(mem.grads + mem.optimizer + mem.activations, 0, 0);
    assert_float_equal(mem.weights_gathered + mem.logits, 0, 0);
    assert_float_equal(mem.total, 2770176, 0.5);
}

/* Defect: decode with an fsdp axis divided the weights' memory by fsdp but
 * gathered none of them ({fsdp: 8} took the time of {data: 8} with an eighth
 * of its memory). Such a step would all-gather every layer's weights for a
 * few tokens; the expansion refuses the mesh, saying where to put the
 * devices. A sequence axis likewise (decode runs a sequence's new tokens on
 * one device: no context parallelism, no split cache). */
static void test_decode_refuses_fsdp_and_sequence(void **state)
{
    (void)state;
    struct model m = decode_model();
    struct fixture f;
    char err[256] = "";
    assert_int_equal(shard(&f, &m, "fsdp", 4, "tensor", 2, err, sizeof err), -1);
    assert_string_equal(err, "a decode step does not shard its weights over fsdp (4): it would "
                             "all-gather every layer's weights for a few tokens, which the "
                             "expansion does not model; put those devices on data (weights "
                             "replicated) or tensor");
    assert_int_equal(shard(&f, &m, "sequence", 4, "tensor", 2, err, sizeof err), -1);
    assert_string_equal(err, "a decode step does not split its sequences over the sequence axis "
                             "(4): put those devices on data or tensor");
    m.mode = MODEL_PREFILL; /* prefill and training gather them */
    shard_ok(&f, &m, "fsdp", 4, "tensor", 2);
}

/* Defect: an int8 model's MFU was taken against the bf16 peak (161 %). The
 * peak is the model dtype's: v5e's int8 394 TOP/s (bf16 197), v6e's bf16
 * 918 TFLOP/s. */
static void test_mfu_peak_of_model_dtype(void **state)
{
    (void)state;
    static const char *const yamls[] = {
        "chip: v5e\ntopology: {shape: [2, 4]}\nmesh: {data: 8}\n"
        "model: {arch: llama, layers: 2, d_model: 256, heads: 4, kv_heads: 2, head_dim: 64,\n"
        "        ffn: 512, vocab: 1024, seq_len: 256, batch: 8, mode: prefill, dtype: int8}\n",
        "chip: v6e\ntopology: {shape: [2, 4]}\nmesh: {data: 8}\n"
        "model: {arch: llama, layers: 2, d_model: 256, heads: 4, kv_heads: 2, head_dim: 64,\n"
        "        ffn: 512, vocab: 1024, seq_len: 256, batch: 8, mode: prefill}\n"};
    static const double peaks[] = {394e12, 918e12};
    static const enum dtype dts[] = {DT_INT8, DT_BF16};
    for (int i = 0; i < 2; i++) {
        struct cfg_scenario sc;
        struct diag *d = diag_new();
        int rc = cfg_load_scenario_text(yamls[i], strlen(yamls[i]), "m.yaml", NULL, 0, &sc, d);
        if (rc != 0)
            diag_print(d, stderr);
        assert_int_equal(rc, 0);
        assert_float_equal(sc.model->peak_per_device, peaks[i], 1e3);
        assert_int_equal(sc.model->peak_dtype, dts[i]);
        cfg_scenario_fini(&sc);
        diag_free(d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_one_token_count),
        cmocka_unit_test(test_decode_multi_token_loads),
        cmocka_unit_test(test_decode_memory),
        cmocka_unit_test(test_decode_refuses_fsdp_and_sequence),
        cmocka_unit_test(test_mfu_peak_of_model_dtype),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
