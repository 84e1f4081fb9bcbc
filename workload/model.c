/* workload/model.c -- a model step expanded into per-chip work (see workload/model.h):
 * the builder emits the step's program, ops and the tensors they read and
 * write (workload/program.h); the schedule derives the waits. Shapes are per
 * device; a chip runs one device's program on each of its
 * TensorCores that is a JAX device (v7), or one program over its cores
 * (megacore). Collective byte counts are per chip: the engine's collectives
 * run once per chip. */
#include "workload/model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/check.h"
#include "base/xalloc.h"
#include "workload/model_moe_int.h"
#include "workload/model_pipeline_int.h"
#include "workload/schedule.h"

static const char *const arch_names[] = {"llama", "gpt", "mixtral", NULL};
static const char *const mode_names[] = {"train", "prefill", "decode", NULL};

#define D_ KEEP_DEVICE
#define O_ KEEP_OFFLOAD
#define R_ KEEP_REMAT
/* MaxText's remat policies (maxtext layers/decoders.py get_remat_policy): what
 * each keeps on the device (D_), offloads to host memory (O_) or recomputes
 * (R_). The layer input is always kept: under scan it is the carry (MaxText
 * base.yml). One row per policy, named by the same index in remat_names. */
static const struct model_remat policies[] = {
    /*                 input q   k   v   ctx out wi  wo */
    {NULL, false, {D_, R_, R_, R_, R_, R_, R_, R_}}, /* full */
    {NULL, false, {D_, D_, D_, D_, R_, D_, D_, D_}}, /* minimal */
    {NULL, false, {D_, D_, D_, D_, D_, D_, D_, D_}}, /* minimal_with_context */
    {NULL, false, {D_, D_, D_, D_, D_, D_, R_, R_}}, /* save_dot_with_context_except_mlp */
    {NULL, false, {D_, D_, D_, D_, R_, D_, R_, D_}}, /* save_dot_except_mlpwi */
    {NULL, false, {D_, D_, D_, D_, R_, D_, R_, R_}}, /* save_dot_except_mlp */
    {NULL, false, {D_, D_, D_, D_, R_, R_, R_, R_}}, /* save_qkv_proj */
    {NULL, false, {D_, R_, R_, R_, R_, D_, R_, R_}}, /* save_out_proj */
    {NULL, false, {D_, O_, O_, O_, R_, R_, R_, R_}}, /* qkv_proj_offloaded */
    {NULL, false, {D_, O_, O_, O_, R_, O_, O_, O_}}, /* minimal_offloaded */
    {NULL, false, {O_, O_, O_, O_, R_, O_, R_, R_}}, /* offload: the TPU recipes' custom
                                                        policy for Llama 3.1 on v6e */
    {NULL, true, {D_, D_, D_, D_, D_, D_, D_, D_}},  /* none: jax keeps every residual */
    {NULL, false, {D_, D_, D_, D_, D_, D_, D_, D_}}, /* minimal_flash: MaxText's older name of
                                                        minimal_with_context (decoders.py) */
};
#undef D_
#undef O_
#undef R_
#define NPOLICIES (sizeof policies / sizeof policies[0])
static const char *const remat_names[] = {"full",
                                          "minimal",
                                          "minimal_with_context",
                                          "save_dot_with_context_except_mlp",
                                          "save_dot_except_mlpwi",
                                          "save_dot_except_mlp",
                                          "save_qkv_proj",
                                          "save_out_proj",
                                          "qkv_proj_offloaded",
                                          "minimal_offloaded",
                                          "offload",
                                          "none",
                                          "minimal_flash",
                                          NULL};
_Static_assert(sizeof remat_names / sizeof remat_names[0] == NPOLICIES + 1,
               "a name per remat policy");
static const char *const tensor_names[MT_COUNT] = {
    [MT_INPUT] = "decoder_layer_input", [MT_QUERY] = "query_proj", [MT_KEY] = "key_proj",
    [MT_VALUE] = "value_proj", [MT_CONTEXT] = "context", [MT_OUT_PROJ] = "out_proj",
    [MT_MLPWI] = "mlpwi", [MT_MLPWO] = "mlpwo"};
static const char *const attention_names[] = {"auto", "flash", "splash", "dot_product", NULL};

const char *const *model_arch_names(void)
{
    return arch_names;
}

const char *const *model_mode_names(void)
{
    return mode_names;
}

const char *const *model_remat_names(void)
{
    return remat_names;
}

int model_remat_policy(const char *name, struct model_remat *r)
{
    for (size_t i = 0; i < NPOLICIES; i++)
        if (strcmp(remat_names[i], name) == 0) {
            *r = policies[i];
            r->name = remat_names[i];
            return 0;
        }
    return -1;
}

const char *model_tensor_name(enum model_tensor t)
{
    return tensor_names[t];
}

const char *const *model_attention_names(void)
{
    return attention_names;
}

const char *const *model_attention_kernel_names(void)
{
    static const char *const names[] = {"rpa_v2", "rpa_v3", NULL};
    return names;
}

static const char *const sa_block_names[] = {
    "sa_block_q", "sa_block_kv", "sa_block_kv_compute", "sa_block_q_dkv", "sa_block_kv_dkv",
    "sa_block_kv_dkv_compute", "sa_block_q_dq", "sa_block_kv_dq", NULL};

const char *const *model_sa_block_names(void)
{
    return sa_block_names;
}

/* ---------------- sharding ---------------- */

static int axis_size(const struct mesh *mesh, const char *name)
{
    int i = mesh_axis_index(mesh, name);
    return i < 0 ? 1 : mesh->axis[i].size;
}

static bool gated(const struct model *m)
{
    return m->arch != MODEL_GPT;
}

/* Parameters of one layer: attention, MLP (or experts and router), two norms.
 * In double: the keys' maxima multiply past int64 (model_shard bounds it). */
static double layer_params(const struct model *m)
{
    double D = (double)m->d_model, Dh = (double)m->head_dim, H = (double)m->heads;
    double attn = D * (H + 2.0 * (double)m->kv_heads) * Dh + H * Dh * D;
    double mlp = (gated(m) ? 3 : 2) * D * (double)m->ffn;
    if (m->arch == MODEL_MIXTRAL)
        mlp = (double)m->experts * mlp + D * (double)m->experts;
    return attn + mlp + 2 * D;
}

/* The model's parameters, refused above MODEL_MAX_PARAMS (exact below it:
 * 1e15 < 2^53). */
static int count_params(const struct model *m, struct model_shard *s, char *err, size_t n)
{
    double layer = layer_params(m);
    double all = (double)m->layers * layer +
                 (double)m->vocab * (double)m->d_model * (gated(m) ? 2 : 1) + (double)m->d_model;
    if (!(all <= MODEL_MAX_PARAMS)) {
        return diag_fail(err, n, "expected a model of at most %g parameters, got %.3g",
                         MODEL_MAX_PARAMS,
                         all);
    }
    s->layer_params = (int64_t)layer;
    s->params = (int64_t)all;
    return 0;
}

static int need(char *err, size_t n, int64_t a, int64_t b, const char *what, const char *by)
{
    if (b > 0 && a % b == 0)
        return 0;
    return diag_fail(err, n, "%s (%lld) is not divisible by %s (%lld)", what, (long long)a, by,
                     (long long)b);
}

static int check_mesh_names(const struct mesh *mesh, char *err, size_t n)
{
    static const char *const known[] = {"data",   "fsdp",     "tensor", "sequence",
                                        "expert", "pipeline", NULL};
    for (int i = 0; i < mesh->naxes; i++) {
        bool ok = false;
        for (int k = 0; known[k]; k++)
            ok |= strcmp(mesh->axis[i].name, known[k]) == 0;
        if (!ok) {
            return diag_fail(err, n, "a model's mesh has the axes data, fsdp, tensor, sequence, "
                             "expert and pipeline; got '%s'", mesh->axis[i].name);
        }
    }
    return 0;
}

/* The axes a decode step does not model: fsdp (it would gather every
 * layer's weights each step) and sequence (a sequence's new tokens run on
 * one device). */
static int decode_mesh(const struct model_shard *s, char *err, size_t n)
{
    if (s->fsdp > 1)
        snprintf(err, n, "a decode step does not shard its weights over fsdp (%d): it would "
                         "all-gather every layer's weights for a few tokens, which the expansion "
                         "does not model; put those devices on data (weights replicated) or "
                         "tensor", s->fsdp);
    else if (s->sequence > 1)
        snprintf(err, n, "a decode step does not split its sequences over the sequence axis "
                         "(%d): put those devices on data or tensor", s->sequence);
    return s->fsdp > 1 || s->sequence > 1 ? -1 : 0;
}

int model_shard(const struct model *m, const struct mesh *mesh, const struct topo *topo,
                const struct chip_params *chip, struct model_shard *s, char *err, size_t n)
{
    memset(s, 0, sizeof *s);
    if (check_mesh_names(mesh, err, n) != 0)
        return -1;
    s->data = axis_size(mesh, "data"), s->fsdp = axis_size(mesh, "fsdp");
    s->tensor = axis_size(mesh, "tensor"), s->sequence = axis_size(mesh, "sequence");
    s->expert = axis_size(mesh, "expert"), s->pipeline = axis_size(mesh, "pipeline");
    s->tensor_dev = 1;
    if (mesh->dev_per_chip > 1) {
        const char *on = mesh->axis[mesh->dev_axis].name;
        bool tp = strcmp(on, "tensor") == 0 && m->mode == MODEL_DECODE;
        if (!tp && (strcmp(on, "tensor") == 0 || strcmp(on, "sequence") == 0)) {
            return diag_fail(err, n,
                             "the mesh puts the %d devices of a chip on the %s axis; a model "
                             "runs them on a batch axis (data, fsdp or expert; a decode step "
                             "also on tensor)",
                             mesh->dev_per_chip, on);
        }
        s->tensor_dev = tp ? mesh->dev_per_chip : 1;
        s->tensor *= s->tensor_dev;
    }
    s->dev_per_chip = chip->megacore ? 1 : chip->cores;
    s->devices = (int64_t)topo->nchips * s->dev_per_chip;
    s->slices = 1;
    for (int i = 0; i < mesh->naxes; i++) /* the slices over the DCN count too */
        if (mesh->axis[i].dcn > 1)
            s->slices *= mesh->axis[i].dcn;
    s->devices *= s->slices;
    int64_t shards = (int64_t)s->data * s->fsdp * s->expert * s->dev_per_chip / s->tensor_dev;
    int rc = need(err, n, m->batch, shards, "batch",
                  "the devices the batch is split over (data x fsdp x expert x devices per chip)");
    rc = rc ? rc : need(err, n, m->heads, s->tensor, "heads", "the tensor axis");
    if (rc == 0 && m->kv_heads % s->tensor != 0 && s->tensor % m->kv_heads != 0)
        rc = need(err, n, m->kv_heads, s->tensor, "kv_heads", "the tensor axis");
    rc = rc ? rc : need(err, n, m->ffn, s->tensor, "ffn", "the tensor axis");
    rc = rc ? rc : need(err, n, m->d_model, s->tensor, "d_model", "the tensor axis");
    rc = rc ? rc : need(err, n, m->seq_len, s->sequence, "seq_len", "the sequence axis");
    if (rc == 0 && m->arch == MODEL_MIXTRAL)
        rc = need(err, n, m->experts, s->expert, "experts", "the expert axis");
    if (rc == 0 && m->mode == MODEL_DECODE)
        rc = decode_mesh(s, err, n);
    rc = rc ? rc : moe_check(m, err, n);
    if (rc)
        return -1;
    s->b = m->batch / shards;
    s->tokens = m->nseqs ? m->tokens : s->b * m->seq_len / s->sequence;
    if (pipe_check(m, s, err, n) != 0)
        return -1;
    s->heads = m->heads / s->tensor;
    s->kv_heads = m->kv_heads >= s->tensor ? m->kv_heads / s->tensor : 1;
    s->ffn = m->ffn / s->tensor;
    s->experts = m->arch == MODEL_MIXTRAL ? m->experts / s->expert : 0;
    return count_params(m, s, err, n);
}

/* ---------------- MaxText's FLOP count ---------------- */

double model_flops_per_device(const struct model *m, const struct model_shard *s)
{
    /* MaxText's per_device_batch_size: the global batch over every device
     * (devices that split a sequence's work -- tensor, sequence -- share it) */
    double b = (double)m->batch / (double)s->devices, S = (double)m->seq_len;
    double D = (double)m->d_model;
    double H = (double)m->heads, K = (double)m->kv_heads, Dh = (double)m->head_dim;
    double F = (double)m->ffn, V = (double)m->vocab, a = gated(m) ? 2 : 1;
    double ffn = 2 * b * S * F * D * a + 2 * b * S * F * D;
    if (m->arch == MODEL_MIXTRAL)
        ffn = 2 * b * S * D * (double)m->experts + (double)m->top_k * ffn;
    double qkv = 2 * b * S * D * (H + 2 * K) * Dh, proj = 2 * b * S * D * H * Dh;
    double attn = 4 * b * S * S * H * Dh / (m->non_causal ? 1 : 2); /* causal: half */
    double emb = 2 * b * S * D * V;
    double weights = (ffn + qkv + proj) * (double)m->layers + emb;
    double mult = m->mode == MODEL_TRAIN ? 3 : 1;
    return (weights + attn * (double)m->layers) * mult;
}

/* ---------------- memory ---------------- */

static double bytes(enum dtype dt)
{
    return (double)dtype_bytes(dt);
}

/* Bytes per token of one of a layer's named tensors, per device (heads and
 * ffn local, the residual split over tensor). */
static double tensor_bytes(const struct model *m, const struct model_shard *s, enum model_tensor t)
{
    double D = (double)m->d_model / s->tensor, Dh = (double)m->head_dim, e = bytes(m->dtype);
    double wi = (double)s->ffn * (gated(m) ? 2 : 1) * (m->arch == MODEL_MIXTRAL ? m->top_k : 1);
    switch (t) {
    case MT_INPUT:
    case MT_OUT_PROJ:
    case MT_MLPWO:
        return D * e;
    case MT_QUERY:
        return (double)s->heads * Dh * e;
    case MT_KEY:
    case MT_VALUE:
        return (double)s->kv_heads * Dh * e;
    case MT_CONTEXT: /* the output and its f32 logsumexp per head */
        return (double)s->heads * (Dh * e + 4);
    case MT_MLPWI:
        return wi * e;
    case MT_COUNT:
        break;
    }
    return 0;
}

/* Whether the backward reads tensor 't' (or recomputes from it what it
 * reads): only such a tensor is a residual. jax's remat saves (or offloads)
 * what the policy names only when the backward pass uses it and drops the
 * rest from the forward's outputs (jax ad_checkpoint.remat_partial_eval: the
 * residuals the staged backward does not use are dead-code eliminated). The
 * MLP's output (mlpwo) only feeds the residual add, whose gradient needs
 * nothing, and the layer's output is the next layer's input (kept as that);
 * a dot's backward reads its inputs, not its output. So it is never kept. */
static bool is_residual(enum model_tensor t)
{
    return t != MT_MLPWO;
}

/* Bytes per token of what one layer keeps in 'where' under the policy; with
 * no policy also the norms' outputs, the attention output before its
 * projection and the MLP's activation product. */
static double kept_per_token(const struct model *m, const struct model_shard *s,
                             enum model_keep where)
{
    double sum = 0;
    for (int t = 0; t < MT_COUNT; t++)
        if (m->remat.t[t] == where && is_residual((enum model_tensor)t))
            sum += tensor_bytes(m, s, (enum model_tensor)t);
    if (m->remat.none && where == KEEP_DEVICE)
        sum += (2.0 * (double)m->d_model / s->tensor + (double)s->heads * (double)m->head_dim +
                (double)s->ffn) * bytes(m->dtype);
    return sum;
}

double model_offload_bytes_per_layer(const struct model *m, const struct model_shard *s)
{
    return (double)s->dev_per_chip * (double)s->tokens * kept_per_token(m, s, KEEP_OFFLOAD);
}

/* Parameters a chip holds: the state is split over fsdp and tensor (and
 * expert weights over expert too), replicated over data. */
static double chip_params(const struct model *m, const struct model_shard *s)
{
    double expert = 0;
    if (m->arch == MODEL_MIXTRAL)
        expert = (double)m->layers * (double)m->experts * 3.0 * (double)m->d_model *
                 (double)m->ffn;
    double split = (double)s->fsdp * s->tensor;
    /* a pipeline stage holds its layers; the embedding and head stay on every stage */
    double layers = (double)m->layers * (double)s->layer_params, stage = s->pipeline;
    return ((double)s->params - layers) / split + (layers - expert) / (split * stage) +
           expert / (split * s->expert * stage);
}

/* Tokens in the KV cache of a device's sequences after a decode step. */
static double cached_tokens(const struct model *m, const struct model_shard *s)
{
    if (!m->nseqs)
        return (double)s->b * (double)(m->kv_len + m->seq_len);
    double n = 0;
    for (int i = 0; i < m->nseqs; i++)
        n += (double)m->kv_lens[i];
    return n;
}

void model_memory(const struct model *m, const struct model_shard *s,
                  const struct chip_params *chip, struct model_memory *mem)
{
    memset(mem, 0, sizeof *mem);
    double dpc = s->dev_per_chip, p_chip = chip_params(m, s);
    bool train = m->mode == MODEL_TRAIN;
    /* a chip's devices on tensor hold a shard each (chip_params: one device's) */
    mem->params = p_chip * s->tensor_dev *
                  bytes(train ? m->weight_dtype : m->weight_int8 ? DT_INT8 : m->dtype);
    if (train) {
        mem->grads = p_chip * bytes(m->weight_dtype);
        mem->optimizer = p_chip * (bytes(m->mu_dtype) + bytes(m->weight_dtype));
        /* kept layers, and two layers' offloaded tensors on their way to or from the host */
        struct pipe_plan pp; /* a stage keeps its layers' for the microbatches in flight */
        pipe_plan(m, s, &pp);
        mem->activations = dpc * (double)(pp.micro_tokens * pp.in_flight) *
                               kept_per_token(m, s, KEEP_DEVICE) *
                               (double)pipe_stage_layers(m, s) +
                           2.0 * model_offload_bytes_per_layer(m, s);
    }
    if (s->fsdp > 1 && m->mode != MODEL_DECODE)
        mem->weights_gathered = 2.0 * (double)s->layer_params / s->tensor * bytes(m->dtype);
    if (m->mode != MODEL_DECODE)
        mem->logits = dpc * (double)s->tokens * ((double)m->vocab / s->tensor) * 4.0 /
                      (double)(m->vocab_tiling > 0 ? m->vocab_tiling : 1);
    if (m->mode == MODEL_DECODE)
        mem->kv_cache = dpc * 2.0 * (double)m->layers * (double)s->kv_heads *
                        (double)m->head_dim * bytes(model_kv_dtype(m)) * cached_tokens(m, s);
    /* the gathered layers and the logits peak at different moments: the
     * layers' loops hold two gathered layers; the loss holds the logits, the
     * gathered unembedding and the backward's first layer, prefetched */
    double layer_w = mem->weights_gathered / 2.0; /* (0 without fsdp) */
    double unembed = s->fsdp > 1 && m->mode != MODEL_DECODE
                         ? (double)m->vocab / s->tensor * (double)m->d_model * bytes(m->dtype)
                         : 0;
    double at_loss = mem->logits + unembed + layer_w;
    mem->total = mem->params + mem->grads + mem->optimizer + mem->activations + mem->kv_cache +
                 (at_loss > mem->weights_gathered ? at_loss : mem->weights_gathered);
    /* XLA's limit is the usable HBM, the runtime keeps the rest: the preset's
     * hbm.usable (what XLA's OOM messages say), else the share v5e shows
     * (15.48G of 16 GiB) */
    mem->capacity = chip->hbm_usable_bytes > 0 ? (double)chip->hbm_usable_bytes
                                               : (double)chip->hbm_bytes * 0.9675;
}

static double gib(double b)
{
    return b / 1073741824.0;
}

void model_oom_message(const struct model_memory *mem, char *buf, size_t n)
{
    snprintf(buf, n, "Ran out of memory in memory space hbm. Used %.2fG of %.2fG hbm. Exceeded "
                     "hbm capacity by %.2fG (parameters %.2fG, gradients %.2fG, optimizer state "
                     "%.2fG, saved activations %.2fG, gathered weights %.2fG, logits %.2fG, KV "
                     "cache %.2fG)",
             gib(mem->total), gib(mem->capacity), gib(mem->total - mem->capacity),
             gib(mem->params), gib(mem->grads), gib(mem->optimizer), gib(mem->activations),
             gib(mem->weights_gathered), gib(mem->logits), gib(mem->kv_cache));
}

/* ---------------- the workload ---------------- */

/* The step's program (workload/program.h): each op with the tensors it
 * reads and writes; workload/schedule.h derives what waits for what. A value
 * is a small list of tensors: a collective skipped (its axis has one device)
 * passes its input on. */
#define VAL_MAX 8

struct val {
    int t[VAL_MAX];
    int n;
};

static const struct val none_val = {.n = 0};

static struct val val1(int t)
{
    return t < 0 ? none_val : (struct val){.t = {t}, .n = 1};
}

static struct val val2(struct val a, struct val b)
{
    TPU_ASSERT(a.n + b.n <= VAL_MAX, "a value of %d tensors", a.n + b.n);
    for (int i = 0; i < b.n; i++)
        a.t[a.n++] = b.t[i];
    return a;
}

/* 'a' with tensor 't' added, unless it holds it (q, k and v are three tensors). */
static struct val val_with(struct val a, int t)
{
    for (int i = 0; i < a.n; i++)
        if (a.t[i] == t)
            return a;
    return val2(a, val1(t));
}

/* A layer's tensors, as its forward (or the recomputation) leaves them. */
struct layer_vals {
    struct val x;   /* the layer's input */
    int w;          /* its weights (gathered over fsdp, or the local shard) */
    int w1;         /* its first matmul's, gathered over fsdp before the rest, or -1 */
    int wk, wv;     /* with fused_qkv false: k's and v's, gathered after q's, or -1 */
    struct val n1g; /* norm1's output, gathered over tensor */
    struct val q;   /* q, k, v after RoPE */
    struct val kv;  /* k and v gathered over sequence */
    struct val ctx; /* the attention's output */
    struct val r1;  /* the first residual */
    struct val n2g; /* norm2's output, gathered over tensor */
    struct val up;  /* the MLP's gate and up outputs (the experts' for Mixtral) */
    struct val act; /* its activation */
    struct val mo;  /* its output (before the scatter) */
    struct val proj; /* the attention's output projection */
    struct val out; /* the layer's output */
};

struct out {
    struct program *p;
    struct prog_block *b; /* where ops go */
    unsigned flags;       /* added to each op (PROG_REMAT in the recomputation) */
    bool win_ag, win_rs;  /* in a layer's forward: its MLP's gather, its scatter windowed */
    enum dtype mm_dt;     /* the dtype matmul() emits (a dense layer's quantized dtype) */
    const struct model *m;
    const struct model_shard *sh;
    const struct chip_params *chip;
    struct layer_vals fwd; /* the forward layer's tensors (the backward reads them) */
    int w;                /* the weights the current layer's matmuls read */
    int w1;               /* its first matmul's (gathered first), or -1 */
    int wk, wv;           /* k's and v's (gathered after q's: fused_qkv false), or -1 */
    int start_op;         /* the embedding's last op in the top block, or -1 */
    int host;             /* the forward's offloaded tensors in host memory */
    int h0;               /* the backward's first layer's, back on the device */
    struct val x_last;    /* the last layer's output */
    struct val grad_last; /* the first layer's input gradient */
    struct val layer_grads; /* the layers' gradients, reduced */
    struct val rest;      /* the other gradients (head and embedding) */
    struct val rows;      /* the embedding's all-to-all's rows (the loop waits for them), or none */
};

static const char *dt(enum dtype d)
{
    return dtype_name(d);
}

/* A new op (with o->flags) reading 'in'; returns its index. */
static int op(struct out *o, const char *kind, const char *name, unsigned flags, struct val in)
{
    int k = prog_op(o->b, kind, name, flags | o->flags);
    for (int i = 0; i < in.n; i++)
        prog_read(o->b, k, in.t[i]);
    return k;
}

static struct prog_params *params(struct out *o, int k)
{
    return &o->b->op[k].params;
}

/* A new tensor op 'k' writes. */
static int wr(struct out *o, int k)
{
    int t = prog_tensor(o->p, o->b->op[k].name);
    prog_write(o->p, o->b, k, t);
    return t;
}

static struct val wrv(struct out *o, int k)
{
    return val1(wr(o, k));
}

/* The largest power of 2 up to 'max' (and at least 'quantum') dividing 'dim', or 'dim'. */
static int64_t block_for(int64_t dim, int64_t max, int64_t quantum)
{
    for (int64_t b = max; b >= quantum; b /= 2)
        if (dim % b == 0)
            return b;
    return dim;
}

static int64_t round_up(int64_t x, int64_t q)
{
    return (x + q - 1) / q * q;
}

/* A matmul [m, k] x [k, n]: XLA's dot, tiled by XLA, so its blocks are
 * searched (block: auto); XLA pads a dim that is not a multiple of the tile
 * (8 rows, 128 lanes: a vocabulary of 128256 split 4 ways is 32064 wide) and
 * computes the padding too. */
static int matmul(struct out *o, const char *name, int64_t m, int64_t k, int64_t n, struct val in)
{
    int i = op(o, "matmul", name, 0, in);
    struct prog_params *ps = params(o, i);
    prog_int(ps, "m", round_up(m, 8));
    prog_int(ps, "k", round_up(k, 128));
    prog_int(ps, "n", round_up(n, 128));
    prog_word(ps, "dtype", dt(o->mm_dt));
    if (o->m->weight_int8) /* a decode step's weights: every matmul's rhs */
        prog_word(ps, "rhs_dtype", "int8");
    prog_word(ps, "block", "auto");
    return i;
}

/* The quantization of a dense matmul's operand [rows, cols] (workload/model_quant.c): a
 * loop fusion from the model's dtype to the quantized one. */
static int quantize(struct out *o, const char *name, int64_t rows, int64_t cols, struct val in)
{
    int i = op(o, "fusion", name, 0, in);
    struct prog_params *ps = params(o, i);
    char a[96];
    snprintf(a, sizeof a, "[{shape: [%lld, %lld], dtype: %s}]", (long long)rows, (long long)cols,
             dt(o->m->dtype));
    prog_raw(ps, "inputs", a);
    snprintf(a, sizeof a, "[{shape: [%lld, %lld], dtype: %s}]", (long long)rows, (long long)cols,
             dt(o->m->quant_dtype));
    prog_raw(ps, "outputs", a);
    prog_int(ps, "vpu_ops", MODEL_QUANT_VPU_OPS);
    return i;
}

/* Both operands of a dense layer's matmul [m, k] x [k, n] quantized, when the model is
 * (MaxText's AQT); returns what the matmul reads. */
static struct val quantized(struct out *o, const char *name, int64_t m, int64_t k, int64_t n,
                            struct val in)
{
    if (!o->m->quantized)
        return in;
    char nm[80];
    snprintf(nm, sizeof nm, "%s_q_lhs", name);
    struct val q = wrv(o, quantize(o, nm, m, k, in));
    snprintf(nm, sizeof nm, "%s_q_rhs", name);
    return val2(q, wrv(o, quantize(o, nm, k, n, in)));
}

/* A dense layer's matmul: in the quantized dtype after its operands' quantization. */
static int dense(struct out *o, const char *name, int64_t m, int64_t k, int64_t n, struct val in)
{
    struct val q = quantized(o, name, m, k, n, in);
    o->mm_dt = model_dense_dtype(o->m);
    int i = matmul(o, name, m, k, n, q);
    o->mm_dt = o->m->dtype;
    return i;
}

/* A batched matmul (the experts' weights), padded and searched as matmul. */
static int einsum(struct out *o, const char *name, int64_t batch, int64_t m, int64_t k, int64_t n,
                  struct val in)
{
    int i = op(o, "einsum", name, 0, in);
    struct prog_params *ps = params(o, i);
    prog_int(ps, "batch", batch);
    prog_int(ps, "m", round_up(m, 8));
    prog_int(ps, "k", round_up(k, 128));
    prog_int(ps, "n", round_up(n, 128));
    prog_word(ps, "dtype", dt(o->m->dtype));
    prog_word(ps, "block", "auto");
    return i;
}

static int fusion(struct out *o, const char *kind, const char *name, int64_t rows, int64_t cols,
                  struct val in)
{
    int i = op(o, kind, name, 0, in);
    prog_ints(params(o, i), "shape", rows, cols);
    prog_word(params(o, i), "dtype", dt(o->m->dtype));
    return i;
}

/* An elementwise fusion: fn, and its inputs when more than one. */
static int elementwise(struct out *o, const char *name, int64_t rows, int64_t cols,
                       const char *fn, int inputs, struct val in)
{
    int i = fusion(o, "elementwise", name, rows, cols, in);
    prog_word(params(o, i), "fn", fn);
    if (inputs > 1)
        prog_int(params(o, i), "inputs", inputs);
    return i;
}

static const char *norm_kind(const struct out *o)
{
    return o->m->arch == MODEL_GPT ? "layernorm" : "rmsnorm";
}

/* A norm's backward. */
static int norm_bwd(struct out *o, const char *name, int64_t rows, int64_t cols, struct val in)
{
    int i = fusion(o, norm_kind(o), name, rows, cols, in);
    prog_word(params(o, i), "mode", "bwd");
    return i;
}

static int rope(struct out *o, const char *name, int64_t rows, struct val in)
{
    const struct model_shard *s = o->sh;
    int64_t Dh = o->m->head_dim;
    int i = fusion(o, "rope", name, rows, (s->heads + s->kv_heads) * Dh, in);
    prog_int(params(o, i), "head_dim", Dh);
    return i;
}

/* A collective over mesh axis 'axis' of 'bytes' per chip reading 'in';
 * returns what it writes, or 'in' when skipped (the axis has 1 device). */
static struct val collective(struct out *o, const char *kind, const char *name, const char *axis,
                             int size, double bytes_per_chip, unsigned flags, struct val in)
{
    if (size <= 1 || bytes_per_chip < 1)
        return in;
    int i = op(o, kind, name, flags, in);
    prog_bytes(params(o, i), "bytes", bytes_per_chip);
    prog_axes(params(o, i), "groups", axis);
    if (o->sh->tensor_dev > 1 && strcmp(axis, "tensor") == 0) /* over a chip's devices too */
        prog_int(params(o, i), "chip_devices", o->sh->tensor_dev);
    return wrv(o, i);
}

/* Tensor-parallel all-gather of the residual [T, D/N_t] -> [T, D], or the
 * reduce-scatter of a partial [T, D] back (both per chip). */
static struct val tp(struct out *o, const char *kind, const char *name, unsigned flags,
                     struct val in)
{
    const struct model_shard *s = o->sh;
    double full = (double)s->tokens * (double)o->m->d_model * bytes(o->m->dtype) * s->dev_per_chip;
    return collective(o, kind, name, "tensor", s->tensor,
                      strcmp(kind, "all_gather") == 0 ? full / s->tensor : full, flags, in);
}

/* XLA's windowed einsum (workload/model_cmm.c): the tensor-parallel gather of the
 * activation and a matmul [T, D/N_t] x [D/N_t, n] per step, or a matmul
 * [T, k] x [k, D/N_t] per step passing the partial sums on (reduce_scatter). */
static int cmm(struct out *o, const char *name, enum model_cmm c, int64_t k, int64_t n,
               struct val in)
{
    struct val q = quantized(o, name, o->sh->tokens, k, n, in);
    int i = op(o, "collective_matmul", name, 0, q);
    struct prog_params *ps = params(o, i);
    prog_int(ps, "m", round_up(o->sh->tokens, 8));
    prog_int(ps, "k", round_up(k, 128));
    prog_int(ps, "n", round_up(n, 128));
    prog_word(ps, "dtype", dt(model_dense_dtype(o->m)));
    prog_axes(ps, "groups", "tensor");
    if (c == MODEL_CMM_RS)
        prog_word(ps, "collective", "reduce_scatter");
    return i;
}

/* The gather of the sharded activation 'x' over tensor and the matmul [T, D] x [D, n]
 * reading it and 'w': a collective matmul when XLA windows it ('xg': what the backward
 * reads as the gathered input). */
static struct val ag_matmul(struct out *o, const char *ag, const char *name, int64_t n,
                            struct val x, int w, struct val *xg)
{
    const struct model_shard *s = o->sh;
    int64_t D = o->m->d_model;
    if (model_cmm_windowed(o->m, s, MODEL_CMM_AG)) {
        *xg = x;
        return wrv(o, cmm(o, name, MODEL_CMM_AG, D / s->tensor, n, val2(x, val1(w))));
    }
    *xg = tp(o, "all_gather", ag, 0, x);
    return wrv(o, dense(o, name, s->tokens, D, n, val2(*xg, val1(w))));
}

/* The matmul [T, k] x [k, D] reading 'in' and its reduce-scatter over tensor: a
 * collective matmul when XLA windows it ('proj': the matmul's output). */
static struct val matmul_rs(struct out *o, const char *name, const char *rs, int64_t k,
                            struct val in, struct val *proj)
{
    const struct model_shard *s = o->sh;
    int64_t D = o->m->d_model;
    if (model_cmm_windowed(o->m, s, MODEL_CMM_RS)) {
        *proj = wrv(o, cmm(o, name, MODEL_CMM_RS, k, D / s->tensor, in));
        return *proj;
    }
    *proj = wrv(o, dense(o, name, s->tokens, k, D, in));
    return tp(o, "reduce_scatter", rs, 0, *proj);
}

/* MaxText's sa_block_* for splash: each set one, MaxText's default 512 (or attention_block)
 * for the others, each at most its sequence (MaxText takes the min). With
 * sa_use_fused_bwd_kernel the dq blocks are None and the backward one fused kernel
 * (MaxText's tpu_flash_attention: block_q_dq=None if global_use_fused_bwd_kernel). */
static bool sa_blocks(struct out *o, struct prog_params *ps, int64_t q)
{
    const struct model *m = o->m;
    bool any = m->sa_fused_bwd;
    for (int i = 0; i < 8; i++)
        any |= m->sa_block[i] > 0;
    if (!any)
        return false;
    static const char *const keys[] = {"block_q", "block_kv", "block_kv_compute",
        "block_q_dkv", "block_kv_dkv", "block_kv_dkv_compute", "block_q_dq", "block_kv_dq"};
    struct prog_params *b = prog_map(ps, "block_sizes");
    int64_t v[8];
    for (int i = 0; i < (m->sa_fused_bwd ? 6 : 8); i++) {
        v[i] = m->sa_block[i] ? m->sa_block[i] : m->attention_block ? m->attention_block : 512;
        int64_t len = strncmp(keys[i], "block_q", 7) == 0 ? q : m->seq_len;
        v[i] = v[i] < len ? v[i] : len;
        /* an unset compute block within the block it computes (2: kv, 5: kv_dkv) */
        if ((i == 2 || i == 5) && !m->sa_block[i] && v[i] > v[i - 1])
            v[i] = v[i - 1];
        prog_int(b, keys[i], v[i]);
    }
    if (m->sa_fused_bwd)
        prog_word(b, "use_fused_bwd_kernel", "true");
    return true;
}

static void block_sizes(struct out *o, struct prog_params *ps, bool splash, int64_t q)
{
    const struct model *m = o->m;
    if (splash && sa_blocks(o, ps, q))
        return;
    if (m->attention_block == 0) { /* searched, as the recipes tune them */
        prog_word(ps, "block_sizes", "auto");
        return;
    }
    int64_t bq = block_for(q, m->attention_block, 128);
    int64_t bk = block_for(m->seq_len, m->attention_block, 128);
    static const char *const splash_keys[] = {"block_q", "block_kv", "block_kv_compute",
        "block_q_dkv", "block_kv_dkv", "block_kv_dkv_compute", "block_q_dq", "block_kv_dq", NULL};
    static const char *const flash_keys[] = {"block_q", "block_k_major", "block_k",
        "block_q_major_dkv", "block_k_major_dkv", "block_k_dkv", "block_q_dkv",
        "block_k_major_dq", "block_k_dq", "block_q_dq", NULL};
    const char *const *keys = splash ? splash_keys : flash_keys;
    struct prog_params *b = prog_map(ps, "block_sizes");
    for (int i = 0; keys[i]; i++)
        prog_int(b, keys[i], strncmp(keys[i], "block_q", 7) == 0 ? bq : bk);
}

static int attention(struct out *o, const char *name, const char *mode, struct val in)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t q = m->seq_len / s->sequence;
    bool splash = m->attention == MODEL_ATTN_SPLASH ||
                  (m->attention == MODEL_ATTN_AUTO && s->kv_heads != s->heads);
    int i = op(o, splash ? "splash_attention" : "flash_attention", name, 0, in);
    struct prog_params *ps = params(o, i);
    prog_int(ps, "batch", s->b);
    prog_int(ps, splash ? "q_heads" : "heads", s->heads);
    if (splash)
        prog_int(ps, "kv_heads", s->kv_heads);
    prog_int(ps, "q_seq_len", q);
    prog_int(ps, "kv_seq_len", m->seq_len);
    prog_int(ps, "head_dim", m->head_dim);
    prog_word(ps, "dtype", dt(m->dtype));
    prog_word(ps, "mode", mode);
    if (!splash)
        prog_word(ps, "causal", m->non_causal ? "false" : "true");
    prog_wrap(ps);
    if (splash)
        prog_word(prog_map(ps, "mask"), "type", m->non_causal ? "full" : "causal");
    block_sizes(o, ps, splash, q);
    return i;
}

static void name_op(char *nm, size_t n, const char *pre, const char *what)
{
    snprintf(nm, n, "%s%s", pre, what);
}

/* A batched matmul of the dot-product attention, named 'name' + 'what'. */
static struct val attn_einsum(struct out *o, const char *name, const char *what, int64_t m,
                              int64_t k, int64_t n, struct val in)
{
    const struct model_shard *s = o->sh;
    char nm[72];
    snprintf(nm, sizeof nm, "%s_%s", name, what);
    return wrv(o, einsum(o, nm, s->b * s->kv_heads, m, k, n, in));
}

/* MaxText's dot_product attention as XLA runs it, per KV head group (GQA: the H/K query
 * heads of a KV head stacked as rows, r = (H/K) q): the scores Q K^T [r, S] (an einsum
 * over Dh), the masked softmax over S (the whole S^2, causal or not), the context P V
 * [r, Dh]. Its backward: dP = dO V^T, dV = P^T dO, the softmax's backward, dQ = dS K,
 * dK = dS^T Q. Returns the output (fwd) or the gradient of q, k, v (bwd). */
static struct val dot_attention(struct out *o, const char *name, bool bwd, struct val in)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t q = m->seq_len / s->sequence, S = m->seq_len, Dh = m->head_dim;
    int64_t r = s->heads / s->kv_heads * q, rows = s->b * s->heads * q;
    char nm[72];
    snprintf(nm, sizeof nm, "%s_softmax", name);
    if (!bwd) {
        struct val sc = attn_einsum(o, name, "scores", r, Dh, S, in);
        struct val p = wrv(o, fusion(o, "softmax", nm, rows, S, sc));
        return attn_einsum(o, name, "context", r, S, Dh, val2(p, in));
    }
    struct val dp = attn_einsum(o, name, "dprobs", r, Dh, S, in);
    struct val dv = attn_einsum(o, name, "dvalue", S, r, Dh, in);
    int k = fusion(o, "softmax", nm, rows, S, val2(dp, in));
    prog_word(params(o, k), "mode", "bwd");
    struct val ds = wrv(o, k);
    struct val dq = attn_einsum(o, name, "dquery", r, S, Dh, val2(ds, in));
    return val2(val2(dq, attn_einsum(o, name, "dkey", S, r, Dh, val2(ds, in))), dv);
}

/* The attention kernel, or the dot-product attention's ops: its output (or gradients). */
static struct val attend(struct out *o, const char *name, const char *mode, struct val in)
{
    if (o->m->attention == MODEL_ATTN_DOT)
        return dot_attention(o, name, strcmp(mode, "bwd") == 0, in);
    return wrv(o, attention(o, name, mode, in));
}

/* Mixtral's routed experts as MaxText runs them (workload/model_moe_int.h): the
 * router and its softmax and top-k, the rows sorted by expert, the dispatch
 * all-to-all, the experts' matmuls, the combine all-to-all and the
 * unpermute with its weighted sum (up to the activation when not 'down'). */
static void experts_run(struct out *o, const char *pre, bool down, struct layer_vals *l)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = m->d_model, F = s->ffn, E = s->experts, k = m->top_k;
    struct moe_plan mp;
    moe_plan(m, s, &mp);
    char nm[64];
    name_op(nm, sizeof nm, pre, "router");
    struct val rt = wrv(o, matmul(o, nm, T, D, m->experts, val2(l->n2g, val1(l->w))));
    name_op(nm, sizeof nm, pre, "router_softmax");
    rt = wrv(o, fusion(o, "softmax", nm, T, m->experts, rt));
    name_op(nm, sizeof nm, pre, "router_topk"); /* k passes of a max over the experts */
    rt = wrv(o, elementwise(o, nm, T, m->experts * k, "max", 1, rt));
    name_op(nm, sizeof nm, pre, m->dense_matmul ? "dispatch_mask" : "permute");
    struct val pm = wrv(o, m->dense_matmul
                               ? einsum(o, nm, mp.disp_batch, mp.disp_m, mp.disp_k, mp.disp_n,
                                        val2(rt, l->n2g))
                               : fusion(o, "copy", nm, mp.routed, D, val2(rt, l->n2g)));
    name_op(nm, sizeof nm, pre, "dispatch");
    struct val ds = collective(o, "all_to_all", nm, "expert", s->expert, mp.a2a_bytes, 0, pm);
    name_op(nm, sizeof nm, pre, "experts_up");
    l->up = wrv(o, einsum(o, nm, E, mp.rows_per_expert, D, 2 * F, val2(ds, val1(l->w))));
    name_op(nm, sizeof nm, pre, "experts_act");
    l->act = wrv(o, elementwise(o, nm, E * mp.rows_per_expert, F, "silu", 2, l->up));
    if (!down)
        return;
    name_op(nm, sizeof nm, pre, "experts_down");
    struct val ed = wrv(o, einsum(o, nm, E, mp.rows_per_expert, F, D, val2(l->act, val1(l->w))));
    name_op(nm, sizeof nm, pre, "combine");
    struct val cb = collective(o, "all_to_all", nm, "expert", s->expert, mp.a2a_bytes, 0, ed);
    name_op(nm, sizeof nm, pre, m->dense_matmul ? "combine_mask" : "unpermute");
    cb = wrv(o, m->dense_matmul
                    ? einsum(o, nm, mp.disp_batch, mp.disp_k, mp.disp_m, mp.disp_n, cb)
                    : fusion(o, "copy", nm, mp.routed, D, cb));
    name_op(nm, sizeof nm, pre, "combine_sum"); /* the top_k outputs weighted and summed */
    l->mo = wrv(o, elementwise(o, nm, T, D, "mul", (int)(k < 8 ? k + 1 : 8), val2(cb, rt)));
}

/* The MLP of a layer: gated (gate and up fused, SiLU x mul, down) or GPT's
 * GeLU; or Mixtral's routed experts. Up to the activation when not 'down'
 * (what the backward needs recomputed). */
static void mlp_run(struct out *o, const char *pre, bool down, struct layer_vals *l)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = m->d_model, F = s->ffn;
    char nm[64];
    if (m->arch == MODEL_MIXTRAL) {
        experts_run(o, pre, down, l);
        return;
    }
    name_op(nm, sizeof nm, pre, "up");
    if (o->win_ag) { /* the gather of norm2's output is the matmul's (layer_forward) */
        struct val n2 = l->n2g;
        l->up = ag_matmul(o, "", nm, (gated(m) ? 2 : 1) * F, n2, l->w, &l->n2g);
    } else {
        l->up = wrv(o, dense(o, nm, T, D, (gated(m) ? 2 : 1) * F, val2(l->n2g, val1(l->w))));
    }
    name_op(nm, sizeof nm, pre, "act");
    l->act = wrv(o, elementwise(o, nm, T, F, gated(m) ? "silu" : "gelu", gated(m) ? 2 : 1, l->up));
    if (!down)
        return;
    name_op(nm, sizeof nm, pre, "down");
    if (o->win_rs) { /* the scatter of its output too */
        struct val mo;
        l->mo = matmul_rs(o, nm, "", F, val2(l->act, val1(l->w)), &mo);
        return;
    }
    l->mo = wrv(o, dense(o, nm, T, F, D, val2(l->act, val1(l->w))));
}

/* What a layer's forward runs: all of it, or in the backward what the remat
 * policy recomputes (the backward needs q, k, v, the attention output and its
 * logsumexp, out_proj -- the input of the second norm --, the MLP's gate and
 * up outputs; the norms, RoPE and the activation are recomputed whenever a
 * policy is set, and nothing feeds on the MLP's output, so XLA does not
 * recompute it). */
struct layer_part {
    bool qkv, attn, out, up, down;
};

static struct layer_part recompute_part(const struct model *m)
{
    const enum model_keep *t = m->remat.t;
    if (m->remat.none)
        return (struct layer_part){false, false, false, false, false};
    return (struct layer_part){
        .qkv = t[MT_QUERY] == KEEP_REMAT || t[MT_KEY] == KEEP_REMAT || t[MT_VALUE] == KEEP_REMAT,
        .attn = t[MT_CONTEXT] == KEEP_REMAT,
        .out = t[MT_OUT_PROJ] == KEEP_REMAT,
        .up = t[MT_MLPWI] == KEEP_REMAT,
        .down = false};
}

/* Does the backward recompute the QKV projection (its first matmul then)? A
 * parallel block recomputes it with the MLP's up projection. */
static bool recomputes_qkv(const struct model *m)
{
    struct layer_part rp = recompute_part(m);
    return !m->remat.none && (rp.qkv || (m->parallel_block && rp.up));
}

/* The sequence-parallel gather of K and V (or 'q' itself without a sequence axis). */
static struct val gather_kv(struct out *o, const char *name, struct val q)
{
    const struct model_shard *s = o->sh;
    double kv = (double)s->tokens * 2.0 * (double)s->kv_heads * o->m->head_dim *
                bytes(o->m->dtype) * s->dev_per_chip;
    return collective(o, "all_gather", name, "sequence", s->sequence, kv, 0, q);
}

/* The weights a layer's first op reads: its first matmul's, gathered over
 * fsdp ahead of the others (layer_block), else all of them. */
static int first_w(const struct layer_vals *l)
{
    return l->w1 >= 0 ? l->w1 : l->w;
}

/* The weights projection 'i' reads (0: q, or the fused QKV projection; 1: k; 2: v):
 * its own gather when the layer gathers it apart (layer_block), else the rest's. */
static int proj_w(const struct layer_vals *l, int i)
{
    int w = i == 0 ? l->w1 : i == 1 ? l->wk : l->wv;
    return w >= 0 ? w : l->w;
}

/* fused_qkv false (MaxText's base.yml; its Attention's query, key and value
 * DenseGenerals): three matmuls on the one gathered norm output, [T, D] x [D, H Dh]
 * and twice [T, D] x [D, K Dh], each reading its own weights; when XLA windows the
 * gather, each dot is windowed on its own (its SPMD partitioner handles dot by dot). */
static struct val qkv_apart(struct out *o, const char *pre, const char *ag, struct val n1,
                            struct layer_vals *l)
{
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = o->m->d_model, Dh = o->m->head_dim;
    int64_t n[3] = {s->heads * Dh, s->kv_heads * Dh, s->kv_heads * Dh};
    static const char *const what[3] = {"q", "k", "v"};
    char nm[64];
    name_op(nm, sizeof nm, pre, what[0]);
    struct val out = ag_matmul(o, ag, nm, n[0], n1, proj_w(l, 0), &l->n1g);
    bool win = model_cmm_windowed(o->m, s, MODEL_CMM_AG);
    for (int i = 1; i < 3; i++) {
        name_op(nm, sizeof nm, pre, what[i]);
        struct val in = val2(l->n1g, val1(proj_w(l, i)));
        out = val2(out, wrv(o, win ? cmm(o, nm, MODEL_CMM_AG, D / s->tensor, n[i], in)
                                   : dense(o, nm, T, D, n[i], in)));
    }
    return out;
}

/* norm1 (reading the layer's input, its weights and 'also'), the QKV
 * projection (gathering the residual over tensor first; one matmul with
 * fused_qkv, else three), RoPE, the sequence-parallel gather of K and V. */
static void attn_inputs(struct out *o, const char *pre, bool qkv, struct val also,
                        struct layer_vals *l)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = m->d_model, Dh = m->head_dim;
    char nm[64];
    /* the norms run on the residual as it is sharded, [T, D / N_t] (MaxText
     * constrains their input and output to activation_embed, over tensor; the
     * partitioner sums the statistics across the shards: [T] floats, a few
     * microseconds, left out), the gather feeds the matmul after them */
    name_op(nm, sizeof nm, pre, "norm1");
    int k = fusion(o, norm_kind(o), nm, T, D / s->tensor,
                   val2(val2(l->x, val1(first_w(l))), also));
    o->b->op[k].flags |= PROG_DATA_WAIT; /* the layer's first op names what it waits for */
    struct val n1 = wrv(o, k);
    if (!qkv)
        return;
    char ag[64];
    name_op(ag, sizeof ag, pre, "tp_ag1");
    name_op(nm, sizeof nm, pre, "qkv");
    if (m->fused_qkv)
        l->q = ag_matmul(o, ag, nm, (s->heads + 2 * s->kv_heads) * Dh, n1, first_w(l), &l->n1g);
    else
        l->q = qkv_apart(o, pre, ag, n1, l);
    if (m->qk_norm) { /* use_qk_norm: each head of q and k over its head_dim */
        name_op(nm, sizeof nm, pre, "qk_norm");
        l->q = wrv(o, fusion(o, "rmsnorm", nm, T * (s->heads + s->kv_heads), Dh,
                             val2(l->q, val1(l->w))));
    }
    if (m->arch != MODEL_GPT) {
        name_op(nm, sizeof nm, pre, "rope");
        l->q = wrv(o, rope(o, nm, T, l->q));
    }
    name_op(nm, sizeof nm, pre, "cp_kv");
    l->kv = gather_kv(o, nm, l->q);
}

/* The attention's output projection, its scatter and the first residual. */
static void attn_out(struct out *o, const char *pre, struct layer_vals *l)
{
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = o->m->d_model;
    char nm[64];
    char rs[64];
    name_op(nm, sizeof nm, pre, "out");
    name_op(rs, sizeof rs, pre, "tp_rs1");
    struct val pr = matmul_rs(o, nm, rs, s->heads * o->m->head_dim, val2(l->ctx, val1(l->w)),
                              &l->proj);
    name_op(nm, sizeof nm, pre, "res1");
    l->r1 = wrv(o, elementwise(o, nm, T, D / s->tensor, "add", 1, val2(pr, l->x)));
}

/* One layer's forward (or the part of it 'p' names), ops named with 'pre'
 * (the recomputation in the backward uses "re_"); norm1 reads 'also' too. */
/* use_parallel_block (PaLM, GPT-J, Cohere: HF's and vLLM's key): attention and MLP both
 * read the one norm's output (gathered once, or windowed into each matmul), their partial
 * outputs summed and scattered once, x + attn + mlp. */
static void parallel_forward(struct out *o, const char *pre, struct layer_part p,
                             struct val also, struct layer_vals *l)
{
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = o->m->d_model;
    char nm[64];
    attn_inputs(o, pre, p.qkv || p.up, also, l);
    if (p.attn) {
        name_op(nm, sizeof nm, pre, "attn");
        l->ctx = attend(o, nm, "fwd", val2(l->q, l->kv));
    }
    if (p.out && p.down) { /* (nothing in the backward reads it: never recomputed) */
        name_op(nm, sizeof nm, pre, "out");
        l->proj = wrv(o, dense(o, nm, T, s->heads * o->m->head_dim, D, val2(l->ctx, val1(l->w))));
    }
    l->r1 = l->x;
    l->n2g = l->n1g; /* the MLP reads the attention's input */
    o->win_ag = model_cmm_windowed(o->m, s, MODEL_CMM_AG) && o->m->arch != MODEL_MIXTRAL;
    if (p.up || p.down)
        mlp_run(o, pre, p.down, l);
    o->win_ag = false;
    if (!p.down)
        return;
    name_op(nm, sizeof nm, pre, "sum");
    struct val sum = wrv(o, elementwise(o, nm, T, D, "add", 1, val2(l->mo, l->proj)));
    name_op(nm, sizeof nm, pre, "tp_rs2");
    struct val r2 = tp(o, "reduce_scatter", nm, 0, sum);
    name_op(nm, sizeof nm, pre, "res2");
    l->out = wrv(o, elementwise(o, nm, T, D / s->tensor, "add", 1, val2(r2, l->x)));
}

static void layer_forward(struct out *o, const char *pre, struct layer_part p, struct val also,
                          struct layer_vals *l)
{
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = o->m->d_model;
    char nm[64];
    if (o->m->parallel_block) {
        parallel_forward(o, pre, p, also, l);
        return;
    }
    attn_inputs(o, pre, p.qkv, also, l);
    if (p.attn) {
        name_op(nm, sizeof nm, pre, "attn");
        l->ctx = attend(o, nm, "fwd", val2(l->q, l->kv));
    }
    if (p.out)
        attn_out(o, pre, l);
    name_op(nm, sizeof nm, pre, "norm2");
    struct val n2 = wrv(o, fusion(o, norm_kind(o), nm, T, D / s->tensor, l->r1));
    /* XLA windows the MLP's gather and scatter into its matmuls (not the experts') */
    bool ag = model_cmm_windowed(o->m, s, MODEL_CMM_AG) && o->m->arch != MODEL_MIXTRAL;
    bool rs = model_cmm_windowed(o->m, s, MODEL_CMM_RS) && o->m->arch != MODEL_MIXTRAL;
    if ((p.up || p.down) && !ag) {
        name_op(nm, sizeof nm, pre, "tp_ag2");
        l->n2g = tp(o, "all_gather", nm, 0, n2);
    } else if (p.up || p.down) {
        l->n2g = n2;
    }
    o->win_ag = ag, o->win_rs = rs;
    if (p.up || p.down)
        mlp_run(o, pre, p.down, l);
    o->win_ag = o->win_rs = false;
    if (!p.down)
        return;
    name_op(nm, sizeof nm, pre, "tp_rs2");
    struct val r2 = rs ? l->mo : tp(o, "reduce_scatter", nm, 0, l->mo);
    name_op(nm, sizeof nm, pre, "res2");
    l->out = wrv(o, elementwise(o, nm, T, D / s->tensor, "add", 1, val2(r2, l->r1)));
}

/* The bytes of a gradient as XLA reduces it: MaxText casts its f32 weights to
 * dtype before each dot, so a weight gradient's partial sums are made in dtype
 * and reduced there, before the cast's transpose takes them to weight_dtype
 * (docs/reference.md, "Agreement with model:"). With a pipeline the stage's
 * gradients are summed over its microbatches first and reduced over data once,
 * from weight_dtype's accumulator. */
static double grad_dtype_bytes(const struct out *o)
{
    return bytes(o->sh->pipeline > 1 ? o->m->weight_dtype : o->m->dtype);
}

/* Per chip bytes of one layer's weights gathered (dtype) or its gradients
 * reduce-scattered (grad_dtype_bytes), as the collective's per-device input. */
static double layer_gather_bytes(const struct out *o)
{
    const struct model_shard *s = o->sh;
    return (double)s->layer_params / s->tensor / s->fsdp * bytes(o->m->dtype);
}

static double layer_grad_bytes(const struct out *o)
{
    const struct model_shard *s = o->sh;
    return (double)s->layer_params / s->tensor * grad_dtype_bytes(o);
}

/* ... and of the unembedding [D, V / N_t] (the embedding table itself when
 * tied), gathered over fsdp before the logits and its gradient
 * reduce-scattered after them. */
static double head_gather_bytes(const struct out *o)
{
    const struct model_shard *s = o->sh;
    return (double)o->m->d_model * (double)(o->m->vocab / s->tensor) / s->fsdp *
           bytes(o->m->dtype);
}

static double head_grad_bytes(const struct out *o)
{
    const struct model_shard *s = o->sh;
    return (double)o->m->d_model * (double)(o->m->vocab / s->tensor) * grad_dtype_bytes(o);
}

/* The gradients a layer's backward writes as it goes: the matmuls' weights
 * (accumulated in one buffer, wgrad after wgrad) and the norms'. */
struct layer_grads {
    struct val mm, norms;
};

/* The dgrad of a forward matmul [m, k] x [k, n] from its output gradient 'g',
 * quantized as its forward when 'quant' (MaxText's AQT int8), adding into 'acc'
 * (the input's gradient so far: XLA fuses the add into the dot's output). */
static struct val dgrad(struct out *o, const char *name, int64_t m, int64_t k, int64_t n,
                        struct val g, struct val acc, bool quant)
{
    char nm[72];
    snprintf(nm, sizeof nm, "%s_dgrad", name);
    struct val in = val2(val2(g, val1(o->w)), acc);
    return wrv(o, quant ? dense(o, nm, m, n, k, in) : matmul(o, nm, m, n, k, in));
}

/* ... and its wgrad from its input 'x', into the layer's gradient buffer. */
static void wgrad(struct out *o, const char *name, int64_t m, int64_t k, int64_t n,
                  struct val x, struct val g, bool quant, struct layer_grads *lg)
{
    char nm[72];
    snprintf(nm, sizeof nm, "%s_wgrad", name);
    struct val in = val2(val2(x, g), lg->mm);
    lg->mm = wrv(o, quant ? dense(o, nm, k, m, n, in) : matmul(o, nm, k, m, n, in));
}

/* Both, the dgrad first; returns the input's gradient. */
static struct val backward_dots(struct out *o, const char *name, int64_t m, int64_t k,
                                int64_t n, struct val x, struct val g, bool quant,
                                struct layer_grads *lg)
{
    struct val dx = dgrad(o, name, m, k, n, g, none_val, quant);
    wgrad(o, name, m, k, n, x, g, quant, lg);
    return dx;
}

static struct val matmul_backward(struct out *o, const char *name, int64_t m, int64_t k,
                                  int64_t n, struct val x, struct val g, struct layer_grads *lg)
{
    return backward_dots(o, name, m, k, n, x, g, false, lg);
}

/* ... of a dense layer's matmul. */
static struct val dense_backward(struct out *o, const char *name, int64_t m, int64_t k,
                                 int64_t n, struct val x, struct val g, struct layer_grads *lg)
{
    return backward_dots(o, name, m, k, n, x, g, model_quant_backward(o->m), lg);
}

/* Mixtral's experts' backward (the forward's ops in reverse, sized alike);
 * returns the gradient of the MLP's input. */
static struct val experts_backward(struct out *o, const struct layer_vals *l, struct val g,
                                   struct layer_grads *lg)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = m->d_model, F = s->ffn, E = s->experts;
    struct moe_plan mp;
    moe_plan(m, s, &mp);
    struct val gp = wrv(o, m->dense_matmul
                               ? einsum(o, "g_combine_mask", mp.disp_batch, mp.disp_m, mp.disp_k,
                                        mp.disp_n, g)
                               : fusion(o, "copy", "g_unpermute", mp.routed, D, g));
    struct val gd = collective(o, "all_to_all", "g_dispatch", "expert", s->expert, mp.a2a_bytes,
                               0, gp);
    struct val ged = wrv(o, einsum(o, "g_experts_dgrad", E, mp.rows_per_expert, 3 * F, D,
                                   val2(gd, val1(l->w))));
    lg->mm = wrv(o, einsum(o, "g_experts_wgrad", E, mp.rows_per_expert, 3 * F, D,
                           val2(val2(l->act, gd), lg->mm)));
    struct val ga = wrv(o, elementwise(o, "g_experts_act", E * mp.rows_per_expert, F, "mul", 3,
                                       val2(ged, l->up)));
    struct val gc = collective(o, "all_to_all", "g_combine", "expert", s->expert, mp.a2a_bytes,
                               0, ga);
    gc = wrv(o, m->dense_matmul
                    ? einsum(o, "g_dispatch_mask", mp.disp_batch, mp.disp_k, mp.disp_m,
                             mp.disp_n, gc)
                    : fusion(o, "copy", "g_permute", mp.routed, D, gc));
    return matmul_backward(o, "g_router", T, D, m->experts, l->n2g, gc, lg);
}

/* The MLP's backward from the gathered gradient 'g'; returns the gradient
 * of its input. */
static struct val mlp_backward(struct out *o, const struct layer_vals *l, struct val g,
                               struct layer_grads *lg)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = m->d_model, F = s->ffn;
    if (m->arch == MODEL_MIXTRAL)
        return experts_backward(o, l, g, lg);
    int w = o->w;
    if (!recomputes_qkv(m)) /* then the backward's first matmul */
        o->w = first_w(l);
    struct val gact = dense_backward(o, "g_down", T, F, D, l->act, g, lg);
    o->w = w;
    gact = wrv(o, elementwise(o, "g_act", T, F, gated(m) ? "mul" : "gelu", gated(m) ? 3 : 1,
                              val2(gact, l->up)));
    return dense_backward(o, "g_up", T, D, (gated(m) ? 2 : 1) * F, l->n2g, gact, lg);
}

/* The attention's backward from the output's gradient 'g' (gathered over
 * tensor); returns the gradient of the residual, scattered back. */
static struct val attn_backward(struct out *o, const struct layer_vals *l, struct val g,
                                struct val extra, struct layer_grads *lg)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = m->d_model, Dh = m->head_dim;
    int64_t n[3] = {s->heads * Dh, s->kv_heads * Dh, s->kv_heads * Dh};
    struct val gc = dense_backward(o, "g_out", T, s->heads * Dh, D, l->ctx, g, lg);
    struct val gq = attend(o, "g_attn", "bwd", val2(val2(gc, l->q), l->ctx));
    if (m->arch != MODEL_GPT)
        gq = wrv(o, rope(o, "g_rope", T, gq));
    if (m->qk_norm)
        gq = wrv(o, norm_bwd(o, "g_qk_norm", T * (s->heads + s->kv_heads), Dh, gq));
    struct val gx = none_val;
    if (m->fused_qkv) {
        gx = dense_backward(o, "g_qkv", T, D, n[0] + n[1] + n[2], l->n1g, gq, lg);
    } else { /* q's, k's and v's: three dgrads summed (the input's gradient, which the
                scatter below waits for, first), then three wgrads */
        static const char *const what[3] = {"g_q", "g_k", "g_v"};
        bool quant = model_quant_backward(m);
        for (int i = 0; i < 3; i++)
            gx = dgrad(o, what[i], T, D, n[i], gq, gx, quant);
        for (int i = 0; i < 3; i++)
            wgrad(o, what[i], T, D, n[i], l->n1g, gq, quant, lg);
    }
    /* the gradient of the layer's input is scattered as soon as its dgrad is
     * done, beside the wgrad (XLA's async reduce-scatter: only the dgrad feeds
     * it); what follows waits for the scatter. A parallel block adds the MLP's 'extra'. */
    if (extra.n)
        gx = wrv(o, elementwise(o, "g_sum", s->tokens, D, "add", 1, val2(gx, extra)));
    return tp(o, "reduce_scatter", "g_tp_rs1", PROG_ASYNC, gx);
}

/* True when the layers' data-parallel gradient sums run once, after the
 * backward: with a pipeline (summed over the microbatches first), or when
 * xla_tpu_enable_data_parallel_all_reduce_opt is false (XLA's while-loop
 * all-reduce code motion sinks an all-reduce whose result is only
 * dynamic-update-sliced into the loop's output -- the scanned backward's
 * stacked weight gradients -- out of the loop: openxla/xla
 * xla/service/while_loop_all_reduce_code_motion.h). */
static bool grads_summed_after(const struct out *o)
{
    return o->sh->pipeline > 1 || o->m->xla.dp_sums_after_backward;
}

/* The layer's gradients reduce-scattered over fsdp as the layer's backward
 * ends, then summed over data as soon as they are reduced: beside the
 * backward of the layers below (over the DCN when data spans the slices). */
static struct val reduce_grads(struct out *o, struct layer_grads lg)
{
    const struct model_shard *s = o->sh;
    struct val g = collective(o, "reduce_scatter", "grad_rs", "fsdp", s->fsdp,
                              layer_grad_bytes(o), PROG_ASYNC, val2(lg.norms, lg.mm));
    if (grads_summed_after(o)) /* all-reduced once (optimizer) */
        return g;
    return collective(o, "all_reduce", "grad_ar", "data", s->data, layer_grad_bytes(o) / s->fsdp,
                      PROG_ASYNC, g);
}

/* What the remat policy recomputes of the layer's forward (the first op
 * reading 'also' too), or a start for the layer's backward without one. */
static void layer_recompute(struct out *o, struct val g, struct val also, struct layer_vals *l)
{
    const struct model *m = o->m;
    if (!m->remat.none) {
        o->flags = PROG_REMAT;
        layer_forward(o, "re_", recompute_part(m), also, l);
        o->flags = 0;
        return;
    }
    int k = elementwise(o, "g_start", o->sh->tokens, m->d_model / o->sh->tensor, "add", 1,
                        val2(val2(g, val1(first_w(l))), also));
    o->b->op[k].flags |= PROG_DATA_WAIT;
}

/* One layer's backward from the incoming gradient 'g': recomputation per
 * the remat policy, then the gradients in reverse order, then the weight
 * gradients reduced; returns the gradient of the layer's input. */
static struct val layer_backward(struct out *o, struct val g, struct val also)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = m->d_model;
    struct layer_vals l = o->fwd;
    l.w = o->w;
    l.w1 = o->w1;
    l.wk = o->wk, l.wv = o->wv;
    struct layer_grads lg = {none_val, none_val};
    layer_recompute(o, g, also, &l);
    struct val gg = tp(o, "all_gather", "g_tp_ag2", 0, g);
    struct val gx = mlp_backward(o, &l, gg, &lg);
    if (m->parallel_block) { /* one gathered gradient for both branches, one scatter */
        gx = attn_backward(o, &l, gg, gx, &lg);
        int k = norm_bwd(o, "g_norm1", T, D / s->tensor, val2(gx, g));
        gx = wrv(o, k);
        lg.norms = wrv(o, k);
        o->layer_grads = reduce_grads(o, lg);
        return gx;
    }
    gx = tp(o, "reduce_scatter", "g_tp_rs2", m->arch == MODEL_MIXTRAL ? 0 : PROG_ASYNC, gx);
    int k = norm_bwd(o, "g_norm2", T, D / s->tensor, val2(gx, l.r1));
    struct val gn = wrv(o, k);
    lg.norms = wrv(o, k);
    gx = tp(o, "all_gather", "g_tp_ag1", 0, gn);
    gx = attn_backward(o, &l, gx, none_val, &lg);
    k = norm_bwd(o, "g_norm1", T, D / s->tensor, val2(val2(gx, gn), lg.norms));
    gx = wrv(o, k);
    lg.norms = wrv(o, k);
    o->layer_grads = reduce_grads(o, lg);
    return gx;
}

/* A copy between HBM and host memory over the chip's PCIe link. */
static int host_copy(struct out *o, const char *name, double bytes, const char *direction,
                     struct val in)
{
    int k = op(o, "host_copy", name, PROG_ASYNC, in);
    prog_bytes(params(o, k), "bytes", bytes);
    prog_word(params(o, k), "direction", direction);
    return wr(o, k);
}

/* The token embedding (a gather of rows); GPT adds its learned positions.
 * use_iota_embed: MaxText's Embed as a matmul of the tokens' one-hot rows
 * [T, vocab] with the table (its vocab split over tensor as the logits'). */
static struct val embed(struct out *o)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    bool gpt = m->arch == MODEL_GPT;
    const char *name = gpt ? "tokens" : "embed";
    int k;
    if (m->iota_embed) {
        k = matmul(o, name, s->tokens, m->vocab / s->tensor, m->d_model, none_val);
    } else {
        k = op(o, "embedding", name, 0, none_val);
        prog_int(params(o, k), "rows", s->tokens);
        prog_int(params(o, k), "vocab", m->vocab);
        prog_int(params(o, k), "d", m->d_model);
        prog_word(params(o, k), "dtype", dt(m->dtype));
    }
    struct val x = wrv(o, k);
    if (gpt) /* the op the first layer waits for is named 'embed' either way */
        x = wrv(o, elementwise(o, "embed", s->tokens, m->d_model, "add", 1, x));
    return x;
}

/* The unembedding and the loss (and their backward) on 'T' tokens of the
 * final norm's output 'fn'; returns the gradient of 'fn'. */
static struct val loss_tile(struct out *o, int64_t T, struct val fn, bool backward)
{
    int64_t V = o->m->vocab / o->sh->tensor, D = o->m->d_model;
    struct val lg = wrv(o, matmul(o, "logits", T, D, V, fn));
    struct val loss = wrv(o, fusion(o, "cross_entropy", "loss", T, V, lg));
    if (!backward) {
        prog_output(o->p, loss.t[0]);
        return none_val;
    }
    struct val g = wrv(o, elementwise(o, "g_loss", T, V, "sub", 2, val2(loss, lg)));
    struct layer_grads hg = {none_val, none_val};
    g = matmul_backward(o, "g_logits", T, D, V, fn, g, &hg);
    o->rest = hg.mm;
    return g;
}

/* Final norm, unembedding and loss, in vocab_tiling chunks of tokens. */
static void head(struct out *o, bool backward)
{
    const struct model_shard *s = o->sh;
    int64_t tiles = o->m->vocab_tiling > 0 ? o->m->vocab_tiling : 1, D = o->m->d_model;
    /* after the last layer, not after what the layers left running (a host copy) */
    int k = fusion(o, norm_kind(o), "final_norm", s->tokens, D, o->x_last);
    o->b->op[k].flags |= PROG_DATA_WAIT;
    struct val fn = wrv(o, k);
    /* the unembedding's weights, sharded over fsdp as the layers': issued
     * where it stands, as the forward's layers are issued, never before the embedding
     * (its after:); made synchronous by an XLA flag, it blocks the stream there */
    struct val hw = collective(o, "all_gather", "head_wg", "fsdp", s->fsdp, head_gather_bytes(o),
                               PROG_ASYNC, none_val);
    if (hw.n && o->start_op >= 0)
        o->b->op[o->b->nops - 1].issue = o->start_op;
    struct prog_block *top = o->b;
    if (tiles > 1)
        o->b = prog_loop(o->b, "vocab", tiles);
    struct val g = loss_tile(o, s->tokens / tiles, val2(fn, hw), backward);
    o->b = top;
    if (!backward)
        return;
    struct val hrs = collective(o, "reduce_scatter", "head_grad_rs", "fsdp", s->fsdp,
                                head_grad_bytes(o), PROG_ASYNC, o->rest);
    k = norm_bwd(o, "g_final_norm", s->tokens, D, val2(val2(g, o->x_last), o->rest));
    o->grad_last = wrv(o, k);
    bool scattered = hrs.n && hrs.t[0] != o->rest.t[0];
    o->rest = scattered ? val2(wrv(o, k), hrs) : wrv(o, k);
}

/* What the remat policy offloads of a layer, as its forward leaves it. */
static struct val offloaded(const struct out *o, const struct layer_vals *l)
{
    const enum model_keep *t = o->m->remat.t;
    const struct val *v[MT_COUNT] = {[MT_INPUT] = &l->x, [MT_QUERY] = &l->q, [MT_KEY] = &l->q,
                                     [MT_VALUE] = &l->kv, [MT_CONTEXT] = &l->ctx,
                                     [MT_OUT_PROJ] = &l->proj, [MT_MLPWI] = &l->up,
                                     [MT_MLPWO] = &l->mo};
    struct val in = none_val;
    for (int i = 0; i < MT_COUNT; i++)
        for (int j = 0; t[i] == KEEP_OFFLOAD && j < v[i]->n; j++)
            in = val_with(in, v[i]->t[j]);
    return in;
}

/* The forward layer: the residual carried from layer to layer; what the
 * policy offloads goes to the host as the layer ends. */
static void forward_layer(struct out *o, struct prog_block *body, int x)
{
    struct layer_vals l = {.x = val1(x), .w = o->w, .w1 = o->w1, .wk = o->wk, .wv = o->wv};
    layer_forward(o, "", (struct layer_part){true, true, true, true, true}, none_val, &l);
    prog_carry_next(body, x, l.out.t[0]);
    o->fwd = l;
    o->x_last = l.out;
    double off = model_offload_bytes_per_layer(o->m, o->sh);
    if (off > 0)
        o->host = host_copy(o, "d2h", off, "to_host", offloaded(o, &l));
}

/* The backward layer: the gradient carried from layer to layer, the
 * offloaded tensors fetched one layer ahead. */
static void backward_layer(struct out *o, struct prog_block *body, int g)
{
    double off = model_offload_bytes_per_layer(o->m, o->sh);
    struct val also = none_val;
    if (off > 0) {
        int h = prog_tensor(o->p, "offloaded");
        prog_carry(body, h, o->h0);
        prog_carry_next(body, h, host_copy(o, "h2d", off, "to_device", none_val));
        also = val1(h);
    }
    struct val gx = layer_backward(o, val1(g), also);
    prog_carry_next(body, g, gx.t[0]);
    o->grad_last = gx;
}

/* With a pipeline axis, the stage's iterations around its chunk of layers
 * (workload/model_pipeline_int.h): a loop of r m + p - 1 iterations on a
 * microbatch each, the stage's input carried from the previous stage's send. */
struct pipe_ctx {
    struct pipe_plan pp;
    struct model_shard mb; /* the shard with a microbatch's sequences */
    const struct model_shard *full;
    struct prog_block *loop;
    int in;                /* the stage's input, carried */
};

static void pipe_begin(struct out *o, bool backward, struct pipe_ctx *c)
{
    pipe_plan(o->m, o->sh, &c->pp);
    if (c->pp.stages <= 1)
        return;
    c->loop = o->b = prog_loop(o->b, backward ? "pipe_bwd" : "pipe_fwd", c->pp.iterations);
    c->in = prog_tensor(o->p, backward ? "stage_grad" : "stage_x");
    prog_carry(c->loop, c->in, backward ? o->grad_last.t[0] : o->x_last.t[0]);
    *(backward ? &o->grad_last : &o->x_last) = val1(c->in);
    c->full = o->sh;
    c->mb = *o->sh;
    c->mb.b = c->pp.micro_b, c->mb.tokens = c->pp.micro_tokens;
    o->sh = &c->mb;
}

/* The stage sends its output on: point to point, as a ring all-gather of
 * send_bytes / (p - 1) per piece, which puts send_bytes on the link to the
 * next stage (over ICI, or the DCN when the axis spans the slices). */
static void pipe_end(struct out *o, bool backward, struct pipe_ctx *c)
{
    if (c->pp.stages <= 1)
        return;
    o->b = c->loop;
    struct val *out = backward ? &o->grad_last : &o->x_last;
    struct val sent = collective(o, "all_gather", "stage_send", "pipeline", c->pp.stages,
                                 c->pp.send_bytes / (c->pp.stages - 1), 0, *out);
    prog_carry_next(c->loop, c->in, sent.t[0]);
    *out = sent;
    o->sh = c->full;
}

/* The weights a layer's forward or backward gathers over fsdp ahead of the
 * rest, in order, as bytes per chip into 'b': its first matmuls' -- the QKV
 * projection's (with fused_qkv false q's, then k's and v's), or with q, k, v
 * saved the MLP's down projection's. Returns how many (0: no one matmul comes
 * first, Mixtral's experts). */
static int early_gathers(const struct out *o, bool backward, double b[3])
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    double per = (double)m->d_model * bytes(m->dtype) / s->fsdp, Dh = (double)m->head_dim;
    if (backward && !recomputes_qkv(m)) {
        b[0] = (double)s->ffn * per;
        return m->arch == MODEL_MIXTRAL ? 0 : 1;
    }
    if (m->fused_qkv) {
        b[0] = (double)(s->heads + 2 * s->kv_heads) * Dh * per;
        return 1;
    }
    b[0] = (double)s->heads * Dh * per;
    b[1] = b[2] = (double)s->kv_heads * Dh * per;
    return 3;
}

/* The layer's weights gathered over fsdp: the early ones one after another, then
 * the rest (XLA keeps one all-gather in flight: layer_block); sets o->w, w1, wk, wv. */
static void gather_weights(struct out *o, bool backward)
{
    static const char *const names[3] = {"wgather1", "wgather_k", "wgather_v"};
    double rest = layer_gather_bytes(o), early[3];
    int n = early_gathers(o, backward, early), id[3] = {-1, -1, -1};
    /* XLA's loop starts after its input: the forward's first gather after the
     * embedding's all-to-all */
    struct val prev = backward ? none_val : o->rows;
    for (int i = 0; i < n && early[i] >= 1 && early[i] < rest; i++) {
        prev = collective(o, "all_gather", names[i], "fsdp", o->sh->fsdp, early[i], PROG_ASYNC,
                          prev);
        id[i] = prev.t[0];
        rest -= early[i];
    }
    o->w = collective(o, "all_gather", "wgather", "fsdp", o->sh->fsdp, rest, PROG_ASYNC, prev)
               .t[0];
    o->w1 = id[0], o->wk = id[1], o->wv = id[2];
}

/* The layers' loop; with FSDP each layer gathers its own weights in its
 * iteration: XLA pipelines an all-gather back through a scan loop (into the
 * previous layer) only over the DCN (MaxText configs/README.md,
 * xla_tpu_enable_ag_backward_pipelining: "currently megascale all-gathers"),
 * and its scheduler keeps one all-gather in flight at a time (openxla
 * latency_hiding_scheduler.h, SchedulerConfig::all_gather_overlap_limit = 1).
 * So the first matmul's weights are gathered first, exposed, and the rest
 * after them, beside that matmul (docs/reference.md, "Model steps"). */
static void layer_block(struct out *o, const char *name, bool backward)
{
    struct prog_block *top = o->b;
    struct pipe_ctx pc;
    pipe_begin(o, backward, &pc);
    struct prog_block *body = o->b = prog_loop(o->b, name, pc.pp.layers_per_iter);
    int x = prog_tensor(o->p, backward ? "grad" : "x");
    prog_carry(body, x, backward ? o->grad_last.t[0] : o->x_last.t[0]);
    int sharded = o->w;
    if (o->sh->fsdp > 1)
        gather_weights(o, backward);
    if (backward)
        backward_layer(o, body, x);
    else
        forward_layer(o, body, x);
    o->w = sharded;
    o->w1 = o->wk = o->wv = -1;
    pipe_end(o, backward, &pc);
    o->b = top;
}

/* The embedding lookup's all-to-all (forward) or its gradient's (backward), in
 * training: MaxText shards the table [vocab, d] along d over fsdp (logical axis
 * 'embed'), so each chip looks up the fsdp group's tokens in its d / fsdp
 * columns and XLA turns the rows to the batch's sharding with an all-to-all over
 * fsdp, the gradient back with another (tools/hlo_agree.py's Llama-3-8B on fsdp
 * 256: two all-to-alls of bf16[2048,2048,16], the layer input's bytes per chip;
 * docs/reference.md, "The embedding"). Synchronous, as XLA's (nothing to hide
 * behind). The one-hot embedding (a matmul) is not checked against XLA: none.
 * Left out over several slices: an all-to-all over a whole slice runs as a
 * stand-in on one slice only (engine/spmd.h), else every chip is simulated
 * (2 x 256 chips: above the step limit); docs/reference.md says what it misses. */
static struct val embed_a2a(struct out *o, const char *name, struct val in)
{
    const struct model_shard *s = o->sh;
    if (o->m->mode != MODEL_TRAIN || o->m->iota_embed || s->slices > 1)
        return in;
    double rows = (double)s->tokens * (double)o->m->d_model * bytes(o->m->dtype) *
                  s->dev_per_chip / s->tensor;
    return collective(o, "all_to_all", name, "fsdp", s->fsdp, rows, 0, in);
}

/* The embedding (the first layer gathers its own weights: layer_block). */
static void step_start(struct out *o)
{
    struct val x = embed(o);
    o->x_last = embed_a2a(o, "embed_a2a", x);
    o->rows = o->x_last.t[0] != x.t[0] ? o->x_last : none_val;
    o->start_op = o->b->nops - 1;
}

/* The update waits for every layer's gradients and their data-parallel sums
 * (each layer's in the backward, then the rest: embedding, head). */
static void optimizer(struct out *o)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    double local = chip_params(m, s), rest_params = local; /* with a pipeline: every one */
    if (!grads_summed_after(o))
        rest_params -= (double)m->layers * (double)s->layer_params / s->tensor / s->fsdp;
    double rest = rest_params * grad_dtype_bytes(o);
    struct val r = collective(o, "all_reduce", "grad_ar_rest", "data", s->data, rest, PROG_ASYNC,
                              grads_summed_after(o) ? val2(o->rest, o->layer_grads) : o->rest);
    if (s->data > 1 && rest < 1) /* no other gradients to wait for */
        r = none_val;
    int k = op(o, "optimizer", "adamw", PROG_DATA_WAIT, val2(o->layer_grads, r));
    struct prog_params *ps = params(o, k);
    prog_word(ps, "algorithm", "adamw");
    prog_bytes(ps, "params", local);
    prog_word(ps, "param_dtype", dt(m->weight_dtype));
    prog_word(ps, "grad_dtype", dt(m->weight_dtype));
    prog_word(ps, "state_dtype", dt(m->mu_dtype));
    prog_output(o->p, wr(o, k));
}

static void train_step(struct out *o)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    step_start(o);
    layer_block(o, "fwd", false);
    head(o, true);
    double off = model_offload_bytes_per_layer(m, s);
    if (off > 0) /* the last layer's tensors come back first */
        o->h0 = host_copy(o, "h2d0", off, "to_device", val1(o->host));
    layer_block(o, "bwd", true);
    struct val g = val2(embed_a2a(o, "g_embed_a2a", o->grad_last), o->rest);
    o->rest = wrv(o, m->iota_embed /* the table's gradient: one_hot^T x g */
                         ? matmul(o, "g_embed", m->vocab / s->tensor, s->tokens, m->d_model, g)
                         : elementwise(o, "g_embed", s->tokens, m->d_model, "add", 1, g));
    optimizer(o);
}

static void prefill_step(struct out *o)
{
    step_start(o);
    layer_block(o, "fwd", false);
    head(o, false);
}

/* A serving step's sequences as a flow list: [{q_len: 1, kv_len: 900}, ...]. */
static char *seq_list(const struct model *m)
{
    size_t cap = 48 * (size_t)m->nseqs + 4, n = 0;
    char *t = xmalloc(cap);
    t[n++] = '[';
    for (int i = 0; i < m->nseqs; i++)
        n += (size_t)snprintf(t + n, cap - n, "%s{q_len: %lld, kv_len: %lld}", i ? ", " : "",
                              (long long)m->q_lens[i], (long long)m->kv_lens[i]);
    snprintf(t + n, cap - n, "]");
    return t;
}

/* The model's RPA block sizes, those of the kernel it runs. */
static void rpa_blocks(struct prog_params *ps, const struct model *m)
{
    if (m->rpa_kv_pages)
        prog_int(ps, "num_kv_pages_per_block", m->rpa_kv_pages);
    if (m->rpa_queries)
        prog_int(ps, "num_queries_per_block", m->rpa_queries);
    const int64_t *b[2] = {m->rpa_d_blocks, m->rpa_m_blocks};
    static const char *const keys[2] = {"d_block_sizes", "m_block_sizes"};
    for (int i = 0; i < 2; i++) {
        if (!b[i][0])
            continue;
        char t[96];
        snprintf(t, sizeof t, "[%lld, %lld, %lld, %lld]", (long long)b[i][0], (long long)b[i][1],
                 (long long)b[i][2], (long long)b[i][3]);
        prog_word(ps, keys[i], t);
    }
}

/* Every sequence's new tokens against its paged KV cache. */
static struct val ragged_attention(struct out *o, struct val in)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int k = op(o, m->rpa_v3 ? "ragged_paged_attention_v3" : "ragged_paged_attention", "attn", 0,
               in);
    struct prog_params *ps = params(o, k);
    prog_int(ps, "q_heads", s->heads);
    prog_int(ps, "kv_heads", s->kv_heads);
    prog_int(ps, "head_dim", m->head_dim);
    prog_word(ps, "dtype", dt(m->dtype));
    if (m->kv_int8)
        prog_word(ps, "kv_dtype", "int8");
    prog_int(ps, "page_size", m->page_size);
    prog_int(ps, "max_model_len", m->kv_len + m->seq_len);
    rpa_blocks(ps, m);
    if (m->nseqs) {
        prog_int(ps, "max_num_batched_tokens", s->tokens);
        prog_wrap(ps);
        char *seqs = seq_list(m);
        prog_word(ps, "sequences", seqs);
        free(seqs);
        return wrv(o, k);
    }
    prog_wrap(ps);
    if (m->seq_len == 1) {
        struct prog_params *dec = prog_map(ps, "decode");
        prog_int(dec, "batch", s->b);
        prog_int(dec, "kv_len", m->kv_len);
    } else { /* the new tokens attend to the cache and (causally) to each other */
        struct prog_params *pre = prog_map(ps, "prefill");
        prog_int(pre, "batch", s->b);
        prog_int(pre, "q_len", m->seq_len);
        prog_int(pre, "kv_len", m->kv_len + m->seq_len);
    }
    return wrv(o, k);
}

/* A batched matmul [batch: m, k] x [k, n] whose rhs is the KV cache (in the
 * cache's dtype: int8 is cast on the VPU as the MXU takes it, kernels/matmul.c). */
static struct val cache_einsum(struct out *o, const char *name, int64_t batch, int64_t m,
                               int64_t k, int64_t n, struct val in)
{
    int i = einsum(o, name, batch, m, k, n, in);
    if (o->m->kv_int8)
        prog_word(params(o, i), "rhs_dtype", "int8");
    return wrv(o, i);
}

/* JetStream-PyTorch's attention without ragged_mha (jetstream_pt/layers.py
 * AttentionKernel, Int8KVAttentionKernel): XLA einsums over the dense cache
 * [slots, kv heads, cache length, head_dim] of every slot of the decode state.
 * A decode step's query (one token, broadcast to two rows for the matmul's
 * shape) of the H/K heads of a KV head against all cache_length (kv_lens[0])
 * keys, the masked softmax (int8: times the per-token scales), the context
 * against all values; a prefill (one request, the step's padded tokens) the
 * same within its prompt, causal by mask: the whole q x q. */
static struct val dense_attention(struct out *o, struct val in)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    bool decode = m->q_lens[0] == 1;
    int64_t g = s->heads / s->kv_heads, Dh = m->head_dim;
    int64_t slots = decode ? m->nseqs : 1, q = decode ? 2 : s->tokens;
    int64_t S = decode ? m->kv_lens[0] : s->tokens;
    struct val sc = cache_einsum(o, "attn_scores", slots * s->kv_heads, g * q, Dh, S, in);
    struct val p = wrv(o, fusion(o, "softmax", "attn_softmax", slots * s->heads * q, S, sc));
    return cache_einsum(o, "attn_context", slots * s->kv_heads, g * q, S, Dh, val2(p, in));
}

/* A decode layer: with tensor parallelism the attention output and the MLP
 * output are all-reduced (activations replicated, as vLLM TPU runs). */
static void decode_layer(struct out *o, struct layer_vals *l, struct val x)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = m->d_model, Dh = m->head_dim;
    /* per chip: its devices' buffers, or one buffer that its devices on tensor share */
    double ar = (double)T * (double)D * bytes(m->dtype) * s->dev_per_chip / s->tensor_dev;
    struct val v = wrv(o, fusion(o, "rmsnorm", "norm1", T, D, val2(x, val1(l->w))));
    v = wrv(o, matmul(o, "qkv", T, D, (s->heads + 2 * s->kv_heads) * Dh, val2(v, val1(l->w))));
    v = wrv(o, rope(o, "rope", T, v));
    v = m->dense_kv ? dense_attention(o, v) : ragged_attention(o, v);
    v = wrv(o, matmul(o, "out", T, s->heads * Dh, D, val2(v, val1(l->w))));
    v = collective(o, "all_reduce", "tp_ar1", "tensor", s->tensor, ar, 0, v);
    l->r1 = wrv(o, elementwise(o, "res1", T, D, "add", 1, val2(v, x)));
    l->n2g = wrv(o, fusion(o, "rmsnorm", "norm2", T, D, l->r1));
    mlp_run(o, "", true, l);
    v = collective(o, "all_reduce", "tp_ar2", "tensor", s->tensor, ar, 0, l->mo);
    l->out = wrv(o, elementwise(o, "res2", T, D, "add", 1, val2(v, l->r1)));
}

/* The logits through a tied embedding table sharded on its hidden axis
 * (logits_hidden_sharded): each chip multiplies its D / tensor slice of the
 * activations by its slice of the table, [rows, D / tensor] x [D / tensor,
 * vocab], and the partial sums are all-reduced (XLA's SPMD choice for a
 * contracted dim sharded on one operand: the [rows, vocab] result is smaller
 * than the table it would otherwise gather). */
static int logits_partial(struct out *o, int64_t rows, struct val v)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    double bytes_ar = (double)rows * (double)m->vocab * bytes(m->dtype) * s->dev_per_chip;
    int64_t D = m->d_model / s->tensor;
    struct val lg = wrv(o, matmul(o, "logits", rows, D, m->vocab, v));
    struct val r = collective(o, "all_reduce", "logits_ar", "tensor", s->tensor, bytes_ar, 0, lg);
    return r.t[0];
}

/* A decode step: every sequence adds seq_len tokens (1, or several for
 * speculative or multi-token decode: every op runs the b x seq_len tokens, as
 * the FLOP count does) against its paged KV cache (ragged paged attention). */
static void decode_step(struct out *o)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = m->d_model;
    struct prog_block *top = o->b;
    struct prog_block *body = o->b = prog_loop(o->b, "layer", m->layers);
    int x = prog_tensor(o->p, "x");
    prog_carry(body, x, -1);
    struct layer_vals l = {.w = o->w, .w1 = -1, .wk = -1, .wv = -1};
    decode_layer(o, &l, val1(x));
    prog_carry_next(body, x, l.out.t[0]);
    o->b = top;
    struct val v = wrv(o, fusion(o, "rmsnorm", "final_norm", T, D, l.out));
    int64_t rows = m->nseqs ? m->rows : T; /* a serving step samples one token per sequence */
    if (m->logits_hidden_sharded && s->tensor > 1) {
        prog_output(o->p, logits_partial(o, rows, v));
        return;
    }
    prog_output(o->p, wr(o, matmul(o, "logits", rows, D, m->vocab / s->tensor, v)));
}

struct program *model_program(const struct model *m, const struct model_shard *s,
                              const struct chip_params *chip)
{
    char comment[64];
    snprintf(comment, sizeof comment, "one %s step, per chip", mode_names[m->mode]);
    struct out o = {.p = prog_new(comment), .m = m, .sh = s, .chip = chip, .w1 = -1, .wk = -1, .wv = -1,
                    .start_op = -1, .host = -1, .h0 = -1, .mm_dt = m->dtype};
    o.b = &o.p->top;
    o.w = prog_tensor(o.p, "weights"); /* each layer's local shard */
    if (m->mode == MODEL_TRAIN)
        train_step(&o);
    else if (m->mode == MODEL_PREFILL)
        prefill_step(&o);
    else
        decode_step(&o);
    char err[256];
    int rc = sched_program(o.p, err, sizeof err);
    TPU_ASSERT(rc == 0, "the model's program: %s", err);
    return o.p;
}

char *model_workload_yaml(const struct model *m, const struct model_shard *s,
                          const struct chip_params *chip)
{
    struct program *p = model_program(m, s, chip);
    char *yaml = prog_yaml(p);
    prog_free(p);
    return yaml;
}
