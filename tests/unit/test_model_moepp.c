/* tests/unit/test_model_moepp.c -- mixture of experts as it runs and
 * pipeline parallelism, checked by hand on small models: the dispatch
 * all-to-all's bytes, the grouped matmul's rows under load imbalance, the
 * capacity factor's dropped share and the dense einsum dispatch; the
 * pipeline's bubble, its iterations and chunks, the stage-to-stage transfer's
 * bytes and the memory each schedule keeps.
 *
 * Both models: D = 256, H = 4, K = 2, Dh = 64, V = 1024, S = 256, on 8 chips
 * (a 2 x 4 torus), one device per chip. */
#include "test_util.h"

#include "base/diag.h"
#include "config/cfg_tree.h"
#include "topology/mesh.h"
#include "workload/model.h"
#include "workload/model_moe_int.h"
#include "workload/model_pipeline_int.h"

struct fixture {
    struct topo topo;
    struct mesh mesh;
    struct chip_params chip;
    struct model_shard sh;
};

/* Mixtral-like: 2 layers, 8 experts of F = 512, top 2; global batch 8. */
static struct model moe_model(void)
{
    struct model m = {.arch = MODEL_MIXTRAL, .layers = 2, .d_model = 256, .heads = 4,
                      .kv_heads = 2, .head_dim = 64, .ffn = 512, .vocab = 1024, .seq_len = 256,
                      .batch = 8, .experts = 8, .top_k = 2, .mode = MODEL_TRAIN,
                      .dtype = DT_BF16, .weight_dtype = DT_F32, .mu_dtype = DT_F32,
                      .vocab_tiling = 1, .page_size = 128};
    assert_int_equal(model_remat_policy("full", &m.remat), 0);
    return m;
}

/* Llama-like: 8 layers, F = 512; global batch 16. */
static struct model pipe_model(void)
{
    struct model m = moe_model();
    m.arch = MODEL_LLAMA, m.layers = 8, m.batch = 16, m.experts = 0;
    return m;
}

/* 'a' of size 'na' x 'b' of size 'nb' on the 2 x 4 torus; returns model_shard's rc. */
static int setup(struct fixture *f, const struct model *m, const char *a, int na, const char *b,
                 int nb, char *err, size_t n)
{
    int shape[2] = {2, 4};
    bool wrap[2] = {false, false};
    assert_int_equal(topo_init(&f->topo, 2, shape, wrap), 0);
    memset(&f->mesh, 0, sizeof f->mesh);
    f->mesh.naxes = 2;
    snprintf(f->mesh.axis[0].name, MESH_NAME_MAX, "%s", a);
    f->mesh.axis[0].size = na;
    snprintf(f->mesh.axis[1].name, MESH_NAME_MAX, "%s", b);
    f->mesh.axis[1].size = nb;
    assert_int_equal(mesh_layout(&f->mesh, &f->topo, err, n), 0);
    f->chip = test_chip();
    f->chip.hbm_bytes = (uint64_t)16 << 30;
    return model_shard(m, &f->mesh, &f->topo, &f->chip, &f->sh, err, n);
}

static struct cfg_node *expansion(const struct model *m, const struct fixture *f)
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

/* The first op (or repeat block) named 'name' in any block of an expansion. */
static const struct cfg_node *find(const struct cfg_node *list, const char *name)
{
    for (int i = 0; i < list->n; i++) {
        const struct cfg_node *it = list->kids[i], *rep = cfg_get(it, "repeat");
        const struct cfg_node *nm = cfg_get(rep ? rep : it, "name");
        if (nm && strcmp(nm->value, name) == 0)
            return rep ? rep : it;
        const struct cfg_node *got = rep ? find(cfg_get(rep, "ops"), name) : NULL;
        if (got)
            return got;
    }
    return NULL;
}

static double num(const struct cfg_node *op, const char *key)
{
    assert_non_null(op);
    const struct cfg_node *v = cfg_get(op, key);
    assert_non_null(v);
    return atof(v->value);
}

/* expert 4 x fsdp 2: b = 8 / 8 = 1 sequence, T = 256 tokens per device,
 * E / N_e = 2 local experts. The dispatch buffer is T x top_k x D x 2 B =
 * 256 x 2 x 256 x 2 = 262144 bytes per chip, of which (N_e - 1) / N_e =
 * 3 / 4 (196608) leave the chip (the all-to-all keeps its own quarter); the
 * combine's the same. Each local expert runs T k / 2 = 256 rows. With an
 * imbalance of 1.5 the busiest device receives 1.5 x as much: 393216 bytes,
 * 384 rows per expert. */
static void test_moe_dispatch_bytes(void **state)
{
    (void)state;
    struct model m = moe_model();
    struct fixture f;
    char err[256];
    assert_int_equal(setup(&f, &m, "expert", 4, "fsdp", 2, err, sizeof err), 0);
    struct cfg_node *t = expansion(&m, &f);
    assert_float_equal(num(find(t, "dispatch"), "bytes"), 262144, 0.5);
    assert_float_equal(num(find(t, "combine"), "bytes"), 262144, 0.5);
    assert_float_equal(num(find(t, "g_dispatch"), "bytes"), 262144, 0.5);
    assert_float_equal(num(find(t, "experts_up"), "batch"), 2, 0);
    assert_float_equal(num(find(t, "experts_up"), "m"), 256, 0);
    assert_float_equal(num(find(t, "experts_up"), "n"), 2 * 512, 0);
    /* the router's softmax and top-k on the VPU, the rows sorted and back */
    assert_non_null(find(t, "router_softmax"));
    assert_non_null(find(t, "router_topk"));
    assert_non_null(find(t, "permute"));
    assert_non_null(find(t, "unpermute"));
    cfg_node_free(t);
    m.expert_load_imbalance = 1.5;
    t = expansion(&m, &f);
    assert_float_equal(num(find(t, "dispatch"), "bytes"), 393216, 0.5);
    assert_float_equal(num(find(t, "experts_up"), "m"), 384, 0);
    assert_float_equal(num(find(t, "g_experts_dgrad"), "m"), 384, 0);
    cfg_node_free(t);
    /* a capacity factor of 1.25 caps the busiest device at 1.25 x the mean: 320 rows */
    m.capacity_factor = 1.25;
    t = expansion(&m, &f);
    assert_float_equal(num(find(t, "experts_up"), "m"), 320, 0);
    assert_float_equal(num(find(t, "dispatch"), "bytes"), 327680, 0.5);
    cfg_node_free(t);
}

/* One hot expert at 1.5 x the mean, the 7 others at (8 - 1.5) / 7 = 0.929:
 * with capacity 1.25 x the mean only the hot one overflows, by 0.25 of the
 * mean, 0.25 / 8 = 3.125 % of the routed rows. At capacity 0.9 the others
 * drop 0.029 each too: (0.6 + 7 x 0.02857) / 8 = 0.1. Dropless: none. */
static void test_moe_dropped_share(void **state)
{
    (void)state;
    assert_float_equal(moe_dropped_share(1.5, 1.25, 8), 0.03125, 1e-12);
    assert_float_equal(moe_dropped_share(1.5, 0.9, 8), (0.6 + 7 * (6.5 / 7 - 0.9)) / 8, 1e-12);
    assert_float_equal(moe_dropped_share(1.5, -1, 8), 0, 0);
    assert_float_equal(moe_dropped_share(1, 1, 8), 0, 1e-12);
}

/* The dense einsum dispatch (sparse_matmul: false) with capacity factor 1.25:
 * C = S k / E x 1.25 = 256 x 2 / 8 x 1.25 = 80 rows per expert and
 * sequence; the dispatch einsum per sequence [E C, S] x [S, D] = [640, 256] x
 * [256, 256]; the buffer exchanged [E, b, C, D] = 8 x 1 x 80 x 256 x 2 B =
 * 327680; each local expert runs N_e b C = 4 x 80 = 320 rows, whatever the
 * imbalance (the buffers are padded to capacity). */
static void test_moe_dense_dispatch(void **state)
{
    (void)state;
    struct model m = moe_model();
    m.dense_matmul = true, m.capacity_factor = 1.25, m.expert_load_imbalance = 1.5;
    struct fixture f;
    char err[256];
    assert_int_equal(setup(&f, &m, "expert", 4, "fsdp", 2, err, sizeof err), 0);
    struct cfg_node *t = expansion(&m, &f);
    const struct cfg_node *dm = find(t, "dispatch_mask");
    assert_float_equal(num(dm, "batch"), 1, 0);
    assert_float_equal(num(dm, "m"), 640, 0);
    assert_float_equal(num(dm, "k"), 256, 0);
    assert_float_equal(num(dm, "n"), 256, 0);
    assert_float_equal(num(find(t, "combine_mask"), "k"), 640, 0);
    assert_float_equal(num(find(t, "dispatch"), "bytes"), 327680, 0.5);
    assert_float_equal(num(find(t, "experts_up"), "m"), 320, 0);
    assert_null(find(t, "permute"));
    cfg_node_free(t);
    /* a capacity past the sequence's 256 tokens pads to 256 rows (a token picks an
     * expert once): the mask [8 x 256, 256] */
    m.capacity_factor = 1024;
    t = expansion(&m, &f);
    assert_float_equal(num(find(t, "dispatch_mask"), "m"), 8 * 256, 0);
    cfg_node_free(t);
}

static void test_moe_errors(void **state)
{
    (void)state;
    struct model m = moe_model();
    struct fixture f;
    char err[256];
    m.dense_matmul = true; /* no capacity */
    assert_int_equal(setup(&f, &m, "expert", 4, "fsdp", 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "needs a capacity_factor"));
    m = moe_model();
    m.expert_load_imbalance = 9;
    assert_int_equal(setup(&f, &m, "expert", 4, "fsdp", 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "expert_load_imbalance of at most experts (8)"));
}

/* pipeline 4 x fsdp 2, GPipe, 8 microbatches: b = 16 / 2 = 8 sequences per
 * device, a microbatch of 1 (256 tokens). A pass runs m + p - 1 = 11
 * iterations of L / p = 2 layers: the bubble is (p - 1) / (m + p - 1) =
 * 3 / 11. After each iteration a stage sends 1 x 256 x 256 x 2 B = 131072
 * bytes to the next: the ring all-gather's piece is 131072 / (p - 1). */
static void test_pipeline_gpipe(void **state)
{
    (void)state;
    struct model m = pipe_model();
    m.microbatches = 8;
    struct fixture f;
    char err[256];
    assert_int_equal(setup(&f, &m, "pipeline", 4, "fsdp", 2, err, sizeof err), 0);
    struct pipe_plan pp;
    pipe_plan(&m, &f.sh, &pp);
    assert_int_equal(pp.iterations, 11);
    assert_int_equal(pp.layers_per_iter, 2);
    assert_float_equal(pp.bubble, 3.0 / 11.0, 1e-12);
    assert_float_equal(pp.send_bytes, 131072, 0);
    struct cfg_node *t = expansion(&m, &f);
    assert_float_equal(num(find(t, "pipe_fwd"), "count"), 11, 0);
    assert_float_equal(num(find(t, "pipe_bwd"), "count"), 11, 0);
    assert_float_equal(num(find(t, "fwd"), "count"), 2, 0);
    const struct cfg_node *send = find(t, "stage_send");
    assert_float_equal(num(send, "bytes") * 3, 131072, 1);
    assert_string_equal(cfg_get(send, "groups")->kids[0]->value, "pipeline");
    assert_float_equal(num(find(t, "q"), "m"), 256, 0); /* a microbatch's tokens */
    cfg_node_free(t);
}

/* pipeline 4 x tensor 2: the activations a stage sends are sharded over
 * tensor. b = 16 sequences (tensor does not split the batch), 8 microbatches
 * of 2 x 256 = 512 tokens; each device sends its half of d_model: 512 x
 * 256 / 2 x 2 B = 131072 bytes (the whole activation, 262144, is twice the
 * traffic). */
static void test_pipeline_send_sharded_over_tensor(void **state)
{
    (void)state;
    struct model m = pipe_model();
    m.microbatches = 8;
    struct fixture f;
    char err[256];
    assert_int_equal(setup(&f, &m, "pipeline", 4, "tensor", 2, err, sizeof err), 0);
    struct pipe_plan pp;
    pipe_plan(&m, &f.sh, &pp);
    assert_int_equal(pp.micro_tokens, 512);
    assert_float_equal(pp.send_bytes, 131072, 0);
}

/* The circular schedule with 2 repeats: chunks of L / (p r) = 1 layer,
 * r m + p - 1 = 19 iterations, bubble 3 / 19. */
static void test_pipeline_circular(void **state)
{
    (void)state;
    struct model m = pipe_model();
    m.microbatches = 8, m.pipeline_repeats = 2, m.pipeline_schedule = PIPE_CIRCULAR;
    struct fixture f;
    char err[256];
    assert_int_equal(setup(&f, &m, "pipeline", 4, "fsdp", 2, err, sizeof err), 0);
    struct pipe_plan pp;
    pipe_plan(&m, &f.sh, &pp);
    assert_int_equal(pp.iterations, 19);
    assert_int_equal(pp.layers_per_iter, 1);
    assert_float_equal(pp.bubble, 3.0 / 19.0, 1e-12);
}

/* Memory per chip, full remat (the layer input, D x 2 B = 512 B per token
 * and layer): GPipe keeps every microbatch's, 8 x 256 tokens x 512 B x 2
 * layers = 2097152; 1F1B at most p = 4 microbatches, 1048576. */
static void test_pipeline_memory(void **state)
{
    (void)state;
    struct model m = pipe_model();
    m.microbatches = 8;
    struct fixture f;
    char err[256];
    assert_int_equal(setup(&f, &m, "pipeline", 4, "fsdp", 2, err, sizeof err), 0);
    struct model_memory mem;
    model_memory(&m, &f.sh, &f.chip, &mem);
    assert_float_equal(mem.activations, 2097152, 0.5);
    m.pipeline_schedule = PIPE_1F1B;
    model_memory(&m, &f.sh, &f.chip, &mem);
    assert_float_equal(mem.activations, 1048576, 0.5);
    /* parameters: the 8 layers' 8 x 590336 = 4722688 split over fsdp 2 and
     * 4 stages, the embedding, head and final norm (2 x 1024 x 256 + 256 =
     * 524544) over fsdp 2 only: (4722688 / 8 + 524544 / 2) x 4 B (f32) */
    assert_float_equal(mem.params, (4722688.0 / 8 + 524544.0 / 2) * 4, 0.5);
}

/* pipeline 4 x data 2: the stage's gradients are summed over the
 * microbatches and all-reduced over data once, before the optimizer (not
 * per layer and iteration): the stage's 8 / 4 = 2 layers (2 x 590336) and the
 * embedding, head and final norm (524544) in f32, (1180672 + 524544) x 4 B =
 * 6820864 bytes in one grad_ar_rest; no grad_ar in the loops. */
static void test_pipeline_data_allreduce_once(void **state)
{
    (void)state;
    struct model m = pipe_model();
    m.microbatches = 8;
    struct fixture f;
    char err[256];
    assert_int_equal(setup(&f, &m, "pipeline", 4, "data", 2, err, sizeof err), 0);
    struct cfg_node *t = expansion(&m, &f);
    assert_null(find(t, "grad_ar"));
    assert_float_equal(num(find(t, "grad_ar_rest"), "bytes"), 6820864, 0.5);
    cfg_node_free(t);
}

static void test_pipeline_errors(void **state)
{
    (void)state;
    struct model m = pipe_model();
    struct fixture f;
    char err[256];
    m.microbatches = 3; /* 8 sequences per device */
    assert_int_equal(setup(&f, &m, "pipeline", 4, "fsdp", 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "not divisible by num_pipeline_microbatches (3)"));
    m = pipe_model();
    m.layers = 6;
    assert_int_equal(setup(&f, &m, "pipeline", 4, "fsdp", 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "layers (6) is not divisible"));
    m = pipe_model();
    m.pipeline_repeats = 2; /* gpipe */
    assert_int_equal(setup(&f, &m, "pipeline", 4, "fsdp", 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "circular schedule has num_pipeline_repeats above 1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moe_dispatch_bytes), cmocka_unit_test(test_moe_dropped_share),
        cmocka_unit_test(test_moe_dense_dispatch), cmocka_unit_test(test_moe_errors),
        cmocka_unit_test(test_pipeline_gpipe), cmocka_unit_test(test_pipeline_circular),
        cmocka_unit_test(test_pipeline_send_sharded_over_tensor),
        cmocka_unit_test(test_pipeline_memory),    cmocka_unit_test(test_pipeline_errors),
        cmocka_unit_test(test_pipeline_data_allreduce_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
