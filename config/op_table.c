/* config/op_table.c -- the op table: one row per op kind (see config/op_table.h).
 * Uses base/, kernels/ (parameters, builders, rules) and the loaders the rows
 * name. How the engine runs each kind is engine/eng_runners.c. */
#include "config/op_table.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/collective.h"
#include "kernels/copy.h"
#include "kernels/kernel.h"
#include "kernels/tune.h"
#include "kernels/xla.h"

/* One key: its name, its type and the field of struct op it fills, then options. */
#define KEY(name, type_, field, ...)                                                               \
    {                                                                                              \
        .key = name, .type = type_, .offset = offsetof(struct op, u.field), __VA_ARGS__            \
    }

static const struct walk_key hbm_copy_keys[] = {
    KEY("bytes", WALK_BYTES, hbm_copy.bytes, .required = true),
    KEY("chunk", WALK_BYTES, hbm_copy.chunk_bytes),
    {0}};

static const struct walk_key host_copy_keys[] = {
    KEY("bytes", WALK_BYTES, host_copy.bytes, .required = true),
    KEY("direction", WALK_ENUM, host_copy.dir, .required = true, .names = copy_host_dir_names),
    {0}};

static const struct walk_key ppermute_keys[] = {
    KEY("bytes", WALK_BYTES, ppermute.bytes, .required = true),
    KEY("axis", WALK_INT32, ppermute.axis, .min = 0, .max = TOPO_MAX_DIMS - 1),
    KEY("shift", WALK_INT32, ppermute.shift, .dflt = 1, .min = -4096, .max = 4096),
    {0}};

static const struct walk_key matmul_block_keys[] = {
    KEY("bm", WALK_INT, matmul.bm, .dflt = 128, .min = 1, .max = 1 << 24),
    KEY("bk", WALK_INT, matmul.bk, .dflt = 128, .min = 1, .max = 1 << 24),
    KEY("bn", WALK_INT, matmul.bn, .dflt = 128, .min = 1, .max = 1 << 24),
    {0}};

static const struct walk_key einsum_block_keys[] = {
    KEY("bm", WALK_INT, matmul.bm, .dflt = 128, .min = 1, .max = 1 << 24),
    KEY("bk", WALK_INT, matmul.bk, .dflt = 128, .min = 1, .max = 1 << 24),
    KEY("bn", WALK_INT, matmul.bn, .dflt = 128, .min = 1, .max = 1 << 24),
    KEY("bb", WALK_INT, matmul.bb, .dflt = 1, .min = 1, .max = 1 << 24),
    {0}};

/* matmul's keys; einsum has them too, after its batch, and bb in its block. */
#define MATMUL_KEYS(blocks)                                                                        \
    KEY("m", WALK_INT, matmul.m, .required = true, .min = 1, .max = 1 << 24),                      \
    KEY("k", WALK_INT, matmul.k, .required = true, .min = 1, .max = 1 << 24),                      \
    KEY("n", WALK_INT, matmul.n, .required = true, .min = 1, .max = 1 << 24),                      \
    KEY("dtype", WALK_MXU_DTYPE, matmul.dt, .dflt = DT_BF16),                                          \
    KEY("rhs_dtype", WALK_DTYPE, matmul.rhs_dt, .dflt = DT_COUNT),                                     \
    {.key = "block", .type = WALK_MAP, .sub = blocks}

static const struct walk_key matmul_keys[] = {MATMUL_KEYS(matmul_block_keys), {0}};

static const struct walk_key einsum_keys[] = {
    KEY("batch", WALK_INT, matmul.batch, .required = true, .min = 1, .max = 1 << 24),
    MATMUL_KEYS(einsum_block_keys),
    {0}};

/* ---- XLA ops: 'fusion' (its loader reads the arrays) and the named forms ---- */

#define XLA_BLOCK KEY("block", WALK_INT, xla.block, .min = 1, .max = (int64_t)1 << 40)
#define XLA_DTYPE KEY("dtype", WALK_DTYPE, xla.x.dt, .dflt = DT_BF16)

static const struct walk_key fusion_keys[] = {
    KEY("block", WALK_INT, fusion.block, .min = 1, .max = (int64_t)1 << 40), {0}};
static const char *const fusion_extra[] = {"inputs", "outputs", "vpu_ops", "transcendentals",
                                           "reduce_axis", NULL};
static const char *const shape_extra[] = {"shape", NULL};

static const struct walk_key elementwise_keys[] = {
    KEY("fn", WALK_ENUM, xla.fn, .required = true, .names = xla_fn_names),
    KEY("inputs", WALK_INT32, xla.inputs, .min = 1, .max = OP_FUSION_MAX_IO),
    XLA_DTYPE,
    XLA_BLOCK,
    {0}};

static const struct walk_key norm_keys[] = {
    XLA_DTYPE, KEY("mode", WALK_ENUM, xla.mode, .names = xla_mode_names), XLA_BLOCK, {0}};

static const struct walk_key shape_keys[] = {XLA_DTYPE, XLA_BLOCK, {0}};

static const struct walk_key rope_keys[] = {
    XLA_DTYPE, KEY("head_dim", WALK_INT, xla.head_dim, .min = 1, .max = 1 << 16), XLA_BLOCK, {0}};

static const struct walk_key embedding_keys[] = {
    KEY("rows", WALK_INT, xla.rows, .required = true, .min = 1, .max = 1 << 30),
    KEY("vocab", WALK_INT, xla.vocab, .required = true, .min = 1, .max = 1 << 30),
    KEY("d", WALK_INT, xla.d, .required = true, .min = 1, .max = 1 << 24),
    XLA_DTYPE,
    XLA_BLOCK,
    {0}};

static const struct walk_key optimizer_keys[] = {
    KEY("algorithm", WALK_ENUM, xla.algo, .names = xla_algo_names),
    KEY("params", WALK_INT, xla.params, .required = true, .min = 1, .max = (int64_t)1 << 40),
    KEY("param_dtype", WALK_DTYPE, xla.param_dt, .dflt = DT_F32),
    KEY("grad_dtype", WALK_DTYPE, xla.grad_dt, .dflt = DT_F32),
    KEY("state_dtype", WALK_DTYPE, xla.state_dt, .dflt = DT_F32),
    XLA_BLOCK,
    {0}};

/* An XLA op: a fusion category, its keys (and the loader's), its builder. */
#define XLA_OP(nm, keys_, extra_, load_, kern_)                                                    \
    {                                                                                              \
        .name = nm, .category = "fusion", .keys = keys_, .extra_keys = extra_, .load = load_,      \
        .kern = kern_                                                                              \
    }
#define XLA_FORM(nm, keys_) XLA_OP(nm, keys_, NULL, NULL, &kern_xla_kind)
#define XLA_SHAPED(nm, keys_) XLA_OP(nm, keys_, shape_extra, cfg_load_xla, &kern_xla_kind)

/* The Pallas blocked matmul, batched or not. */
#define MATMUL(nm, keys_, tune_)                                                                   \
    {                                                                                              \
        .name = nm, .category = "matmul", .keys = keys_, .kern = &kern_matmul_kind,                \
        .tune = &tune_                                                                             \
    }

static const struct walk_key collective_keys[] = {
    KEY("bytes", WALK_BYTES, coll.bytes, .required = true),
    KEY("dtype", WALK_DTYPE, coll.dt, .dflt = DT_BF16),
    KEY("algorithm", WALK_ENUM, coll.algo, .names = coll_algo_names),
    KEY("chip_devices", WALK_INT32, coll.chip_devices, .dflt = 1, .min = 1, .max = 8),
    {0}};
static const char *const collective_extra[] = {"axes", "groups", "replica_groups", NULL};

static const char *const coll_matmul_kinds[] = {"all_gather", "reduce_scatter", NULL};
static const struct walk_key coll_matmul_keys[] = {
    KEY("m", WALK_INT, coll_matmul.m, .required = true, .min = 1, .max = 1 << 24),
    KEY("k", WALK_INT, coll_matmul.k, .required = true, .min = 1, .max = 1 << 24),
    KEY("n", WALK_INT, coll_matmul.n, .required = true, .min = 1, .max = 1 << 24),
    KEY("dtype", WALK_MXU_DTYPE, coll_matmul.dt, .dflt = DT_BF16),
    KEY("axis", WALK_INT32, coll_matmul.axis, .min = 0, .max = TOPO_MAX_DIMS - 1),
    KEY("overlapped", WALK_BOOL, coll_matmul.overlap, .dflt = 1),
    KEY("collective", WALK_ENUM, coll_matmul.scatter, .names = coll_matmul_kinds),
    {0}};
static const char *const coll_matmul_extra[] = {"groups", NULL};

#define COLLECTIVE(nm)                                                                             \
    {                                                                                              \
        .name = nm, .category = "collective", .async = true, .core0 = true,                       \
        .keys = collective_keys,                                                                   \
        .extra_keys = collective_extra, .load = cfg_load_axes, .check = coll_check,                \
        .reach = coll_reach                                                                        \
    }

static const struct op_row rows[] = {
    [OP_HBM_COPY] = {.name = "hbm_copy",
                     .category = "copy",
                     .async = true,
                     .keys = hbm_copy_keys,
                     .check = copy_check_hbm},
    [OP_PPERMUTE] = {.name = "ppermute",
                     .category = "collective",
                     .async = true,
                     .core0 = true,
                     .keys = ppermute_keys,
                     .check = copy_check_ppermute,
                     .reach = copy_reach_ppermute},
    [OP_MATMUL] = MATMUL("matmul", matmul_keys, kern_matmul_tune),
    [OP_FLASH] = {.name = "flash_attention",
                  .category = "attention",
                  .load = cfg_load_flash,
                  .kern = &kern_flash_kind,
                  .tune = &kern_flash_tune},
    [OP_SPLASH] = {.name = "splash_attention",
                   .category = "attention",
                   .load = cfg_load_splash,
                   .kern = &kern_splash_kind,
                   .tune = &kern_splash_tune},
    [OP_PAGED] = {.name = "paged_attention",
                  .category = "attention",
                  .load = cfg_load_paged,
                  .kern = &kern_paged_kind},
    [OP_RAGGED] = {.name = "ragged_paged_attention",
                   .category = "attention",
                   .load = cfg_load_ragged,
                   .kern = &kern_ragged_kind},
    [OP_ALL_GATHER] = COLLECTIVE("all_gather"),
    [OP_REDUCE_SCATTER] = COLLECTIVE("reduce_scatter"),
    [OP_ALL_REDUCE] = COLLECTIVE("all_reduce"),
    [OP_ALL_TO_ALL] = COLLECTIVE("all_to_all"),
    [OP_COLLECTIVE_MATMUL] = {.name = "collective_matmul",
                              .category = "collective",
                              .keys = coll_matmul_keys,
                              .extra_keys = coll_matmul_extra, .load = cfg_load_cmm_groups,
                              .check = coll_check_matmul, .reach = coll_reach_matmul},
    [OP_REMOTE_COPY] = {.name = "remote_copy",
                        .category = "collective",
                        .async = true,
                        .core0 = true,
                        .load = cfg_load_remote_copy,
                        .check = coll_check_remote_copy, .reach = coll_reach_remote_copy},
    [OP_FUSION] = XLA_OP("fusion", fusion_keys, fusion_extra, cfg_load_fusion, &kern_fusion_kind),
    [OP_ELEMENTWISE] = XLA_SHAPED("elementwise", elementwise_keys),
    [OP_RMSNORM] = XLA_SHAPED("rmsnorm", norm_keys),
    [OP_LAYERNORM] = XLA_SHAPED("layernorm", norm_keys),
    [OP_SOFTMAX] = XLA_SHAPED("softmax", norm_keys),
    [OP_ROPE] = XLA_SHAPED("rope", rope_keys),
    [OP_CROSS_ENTROPY] = XLA_SHAPED("cross_entropy", shape_keys),
    [OP_EMBEDDING] = XLA_FORM("embedding", embedding_keys),
    [OP_OPTIMIZER] = XLA_FORM("optimizer", optimizer_keys),
    [OP_TRANSPOSE] =
        XLA_OP("transpose", shape_keys, shape_extra, cfg_load_xla, &kern_transpose_kind),
    [OP_COPY] = XLA_SHAPED("copy", shape_keys),
    [OP_EINSUM] = MATMUL("einsum", einsum_keys, kern_einsum_tune),
    [OP_HOST_COPY] = {.name = "host_copy",
                      .category = "copy",
                      .async = true,
                      .keys = host_copy_keys,
                      .check = copy_check_host},
    [OP_PALLAS_CALL] = {.name = "pallas_call",
                        .category = "pallas",
                        .load = cfg_load_pallas_call,
                        .kern = &kern_pcall_kind},
    [OP_RAGGED3] = {.name = "ragged_paged_attention_v3",
                    .category = "attention",
                    .load = cfg_load_ragged3,
                    .kern = &kern_ragged3_kind},
};
_Static_assert(sizeof rows / sizeof rows[0] == OP_KIND_COUNT, "one op table row per op kind");

const struct op_row *op_row(enum op_kind kind)
{
    return &rows[kind];
}

const char *op_kind_name(enum op_kind kind)
{
    return (unsigned)kind < OP_KIND_COUNT ? rows[kind].name : "?";
}

int op_kind_parse(const char *s, enum op_kind *kind)
{
    for (int i = 0; i < OP_KIND_COUNT; i++) {
        if (strcmp(s, rows[i].name) == 0) {
            *kind = (enum op_kind)i;
            return 0;
        }
    }
    return -1;
}

void op_kind_names(const char **names)
{
    for (int i = 0; i < OP_KIND_COUNT; i++)
        names[i] = rows[i].name;
    names[OP_KIND_COUNT] = NULL;
}

void op_fini(struct op *op)
{
    free(op->name);
    free(op->op_name);
    const struct kern_kind *k = rows[op->kind].kern;
    if (k && k->params_fini)
        k->params_fini(op);
    if (rows[op->kind].reach == coll_reach) { /* replica_groups */
        free(op->u.coll.replica);
        free(op->u.coll.replica_pos);
    }
    memset(op, 0, sizeof *op);
}

enum dtype op_mxu_dtype(const struct op *op)
{
    switch (op->kind) {
    case OP_MATMUL:
    case OP_EINSUM:
        return op->u.matmul.dt;
    case OP_FLASH:
        return op->u.flash.dt;
    case OP_SPLASH:
        return op->u.splash.dt;
    case OP_PAGED:
        return op->u.paged.dt;
    case OP_RAGGED:
    case OP_RAGGED3:
        return op->u.ragged.dt;
    case OP_COLLECTIVE_MATMUL:
        return op->u.coll_matmul.dt;
    default:
        return DT_BF16;
    }
}
