/* sim/model.c -- a model step expanded into per-chip work (see sim/model.h).
 * Shapes are per device; a chip runs one device's program on each of its
 * TensorCores that is a JAX device (v7), or one program over its cores
 * (megacore). Collective byte counts are per chip: the engine's collectives
 * run once per chip. */
#include "sim/model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

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
                                          NULL};
_Static_assert(sizeof remat_names / sizeof remat_names[0] == NPOLICIES + 1,
               "a name per remat policy");
static const char *const tensor_names[MT_COUNT] = {
    [MT_INPUT] = "decoder_layer_input", [MT_QUERY] = "query_proj", [MT_KEY] = "key_proj",
    [MT_VALUE] = "value_proj", [MT_CONTEXT] = "context", [MT_OUT_PROJ] = "out_proj",
    [MT_MLPWI] = "mlpwi", [MT_MLPWO] = "mlpwo"};
static const char *const attention_names[] = {"auto", "flash", "splash", NULL};

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

/* Parameters of one layer: attention, MLP (or experts and router), two norms. */
static int64_t layer_params(const struct model *m)
{
    int64_t D = m->d_model, Dh = m->head_dim;
    int64_t attn = D * (m->heads + 2 * m->kv_heads) * Dh + m->heads * Dh * D;
    int64_t mlp = (gated(m) ? 3 : 2) * D * m->ffn;
    if (m->arch == MODEL_MIXTRAL)
        mlp = m->experts * mlp + D * m->experts;
    return attn + mlp + 2 * D;
}

static int need(char *err, size_t n, int64_t a, int64_t b, const char *what, const char *by)
{
    if (b > 0 && a % b == 0)
        return 0;
    snprintf(err, n, "%s (%lld) is not divisible by %s (%lld)", what, (long long)a, by,
             (long long)b);
    return -1;
}

static int check_mesh_names(const struct mesh *mesh, char *err, size_t n)
{
    static const char *const known[] = {"data", "fsdp", "tensor", "sequence", "expert", NULL};
    for (int i = 0; i < mesh->naxes; i++) {
        bool ok = false;
        for (int k = 0; known[k]; k++)
            ok |= strcmp(mesh->axis[i].name, known[k]) == 0;
        if (!ok) {
            snprintf(err, n, "a model's mesh has the axes data, fsdp, tensor, sequence and "
                             "expert; got '%s'", mesh->axis[i].name);
            return -1;
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
    s->expert = axis_size(mesh, "expert");
    if (mesh->dev_per_chip > 1) {
        const char *on = mesh->axis[mesh->dev_axis].name;
        if (strcmp(on, "tensor") == 0 || strcmp(on, "sequence") == 0) {
            snprintf(err, n, "the mesh puts the %d devices of a chip on the %s axis; a model "
                             "runs them on a batch axis (data, fsdp or expert)",
                     mesh->dev_per_chip, on);
            return -1;
        }
    }
    s->dev_per_chip = chip->megacore ? 1 : chip->cores;
    s->devices = (int64_t)topo->nchips * s->dev_per_chip;
    for (int i = 0; i < mesh->naxes; i++) /* the slices over the DCN count too */
        if (mesh->axis[i].dcn > 1)
            s->devices *= mesh->axis[i].dcn;
    int64_t shards = (int64_t)s->data * s->fsdp * s->expert * s->dev_per_chip;
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
    if (rc)
        return -1;
    s->b = m->batch / shards;
    s->tokens = s->b * m->seq_len / s->sequence;
    s->heads = m->heads / s->tensor;
    s->kv_heads = m->kv_heads >= s->tensor ? m->kv_heads / s->tensor : 1;
    s->ffn = m->ffn / s->tensor;
    s->experts = m->arch == MODEL_MIXTRAL ? m->experts / s->expert : 0;
    s->layer_params = layer_params(m);
    s->params = m->layers * s->layer_params + m->vocab * m->d_model * (gated(m) ? 2 : 1) +
                m->d_model;
    return 0;
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
    double attn = 4 * b * S * S * H * Dh / 2; /* causal */
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
    return ((double)s->params - expert) / split + expert / (split * s->expert);
}

void model_memory(const struct model *m, const struct model_shard *s,
                  const struct chip_params *chip, struct model_memory *mem)
{
    memset(mem, 0, sizeof *mem);
    double dpc = s->dev_per_chip, p_chip = chip_params(m, s);
    bool train = m->mode == MODEL_TRAIN;
    mem->params = p_chip * bytes(train ? m->weight_dtype : m->dtype);
    if (train) {
        mem->grads = p_chip * bytes(m->weight_dtype);
        mem->optimizer = p_chip * (bytes(m->mu_dtype) + bytes(m->weight_dtype));
        /* kept layers, and two layers' offloaded tensors on their way to or from the host */
        mem->activations = dpc * (double)s->tokens * kept_per_token(m, s, KEEP_DEVICE) *
                               (double)m->layers +
                           2.0 * model_offload_bytes_per_layer(m, s);
    }
    if (s->fsdp > 1 && m->mode != MODEL_DECODE)
        mem->weights_gathered = 2.0 * (double)s->layer_params / s->tensor * bytes(m->dtype);
    if (m->mode != MODEL_DECODE)
        mem->logits = dpc * (double)s->tokens * ((double)m->vocab / s->tensor) * 4.0 /
                      (double)(m->vocab_tiling > 0 ? m->vocab_tiling : 1);
    if (m->mode == MODEL_DECODE)
        mem->kv_cache = dpc * 2.0 * (double)m->layers * (double)s->kv_heads *
                        (double)m->head_dim * bytes(m->dtype) * (double)s->b *
                        (double)(m->kv_len + m->seq_len);
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

struct out {
    char *s;
    size_t n, cap;
    const struct model *m;
    const struct model_shard *sh;
    const struct chip_params *chip;
    const char *indent;
    char rope_extra[48]; /* rope_dim()'s text */
    bool grad_gather_early; /* the backward gathers its incoming gradient beside re_qkv */
};

static void emit(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void emit(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    xgrow(&o->s, &o->cap, o->n + strlen(o->indent) + (size_t)len + 2, 1);
    o->n += (size_t)sprintf(o->s + o->n, "%s", o->indent);
    va_start(ap, fmt);
    o->n += (size_t)vsnprintf(o->s + o->n, o->cap - o->n, fmt, ap);
    va_end(ap);
    o->s[o->n++] = '\n';
    o->s[o->n] = '\0';
}

static const char *dt(enum dtype d)
{
    return dtype_name(d);
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
static void matmul(struct out *o, const char *name, int64_t m, int64_t k, int64_t n,
                   const char *after)
{
    m = round_up(m, 8), k = round_up(k, 128), n = round_up(n, 128);
    emit(o, "- {op: matmul, name: %s, m: %lld, k: %lld, n: %lld, dtype: %s, block: auto%s%s}",
         name, (long long)m, (long long)k, (long long)n, dt(o->m->dtype), after ? ", after: " : "",
         after ? after : "");
}

/* A batched matmul (the experts' weights), padded and searched as matmul. */
static void einsum(struct out *o, const char *name, int64_t batch, int64_t m, int64_t k,
                   int64_t n)
{
    emit(o, "- {op: einsum, name: %s, batch: %lld, m: %lld, k: %lld, n: %lld, dtype: %s, "
            "block: auto}",
         name, (long long)batch, (long long)round_up(m, 8), (long long)round_up(k, 128),
         (long long)round_up(n, 128), dt(o->m->dtype));
}

static void fusion(struct out *o, const char *op, const char *name, int64_t rows, int64_t cols,
                   const char *extra)
{
    emit(o, "- {op: %s, name: %s, shape: [%lld, %lld], dtype: %s%s}", op, name, (long long)rows,
         (long long)cols, dt(o->m->dtype), extra ? extra : "");
}

/* rope's head_dim key (the rotation pairs within each head), in o's scratch. */
static const char *rope_dim(struct out *o, int64_t head_dim)
{
    snprintf(o->rope_extra, sizeof o->rope_extra, ", head_dim: %lld", (long long)head_dim);
    return o->rope_extra;
}

/* A collective over mesh axis 'axis' of 'bytes' per chip (skipped when the axis has 1 device). */
static void collective(struct out *o, const char *op, const char *name, const char *axis,
                       int size, double bytes_per_chip, const char *after)
{
    if (size <= 1 || bytes_per_chip < 1)
        return;
    emit(o, "- {op: %s, name: %s, bytes: %.0f, groups: [%s]%s%s}", op, name, bytes_per_chip, axis,
         after ? ", after: " : "", after ? after : "");
}

/* Tensor-parallel all-gather of the residual [T, D/N_t] -> [T, D], or the
 * reduce-scatter of a partial [T, D] back (both per chip). */
static void tp_after(struct out *o, const char *op, const char *name, const char *after)
{
    const struct model_shard *s = o->sh;
    double full = (double)s->tokens * (double)o->m->d_model * bytes(o->m->dtype) * s->dev_per_chip;
    collective(o, op, name, "tensor", s->tensor,
               strcmp(op, "all_gather") == 0 ? full / s->tensor : full, after);
}

static void tp(struct out *o, const char *op, const char *name)
{
    tp_after(o, op, name, NULL);
}

static void attention(struct out *o, const char *name, const char *mode)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t q = m->seq_len / s->sequence;
    bool splash = m->attention == MODEL_ATTN_SPLASH ||
                  (m->attention == MODEL_ATTN_AUTO && s->kv_heads != s->heads);
    if (splash)
        emit(o, "- {op: splash_attention, name: %s, batch: %lld, q_heads: %lld, kv_heads: %lld, "
                "q_seq_len: %lld, kv_seq_len: %lld, head_dim: %lld, dtype: %s, mode: %s,",
             name, (long long)s->b, (long long)s->heads, (long long)s->kv_heads, (long long)q,
             (long long)m->seq_len, (long long)m->head_dim, dt(m->dtype), mode);
    else
        emit(o, "- {op: flash_attention, name: %s, batch: %lld, heads: %lld, q_seq_len: %lld, "
                "kv_seq_len: %lld, head_dim: %lld, dtype: %s, mode: %s, causal: true,",
             name, (long long)s->b, (long long)s->heads, (long long)q, (long long)m->seq_len,
             (long long)m->head_dim, dt(m->dtype), mode);
    if (m->attention_block == 0) { /* searched, as the recipes tune them */
        emit(o, "   %sblock_sizes: auto}", splash ? "mask: {type: causal}, " : "");
        return;
    }
    int64_t bq = block_for(q, m->attention_block, 128);
    int64_t bk = block_for(m->seq_len, m->attention_block, 128);
    if (splash)
        emit(o, "   mask: {type: causal}, block_sizes: {block_q: %lld, block_kv: %lld, "
                "block_kv_compute: %lld, block_q_dkv: %lld, block_kv_dkv: %lld, "
                "block_kv_dkv_compute: %lld, block_q_dq: %lld, block_kv_dq: %lld}}",
             (long long)bq, (long long)bk, (long long)bk, (long long)bq, (long long)bk,
             (long long)bk, (long long)bq, (long long)bk);
    else
        emit(o, "   block_sizes: {block_q: %lld, block_k_major: %lld, block_k: %lld, "
                "block_q_major_dkv: %lld, block_k_major_dkv: %lld, block_k_dkv: %lld, "
                "block_q_dkv: %lld, block_k_major_dq: %lld, block_k_dq: %lld, block_q_dq: %lld}}",
             (long long)bq, (long long)bk, (long long)bk, (long long)bq, (long long)bk,
             (long long)bk, (long long)bq, (long long)bk, (long long)bk, (long long)bq);
}

static void mlp_run(struct out *o, const char *pre, bool down);

/* The MLP of a layer: gated (gate and up fused, SiLU x mul, down) or GPT's
 * GeLU; or Mixtral's routed experts between two all-to-alls. */
static void mlp_forward(struct out *o, const char *pre)
{
    mlp_run(o, pre, true);
}

/* Its first half: what the backward needs recomputed (the gate and up outputs). */
static void mlp_up(struct out *o, const char *pre)
{
    mlp_run(o, pre, false);
}

static void mlp_run(struct out *o, const char *pre, bool down)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = m->d_model, F = s->ffn;
    char nm[64];
    if (m->arch != MODEL_MIXTRAL) {
        snprintf(nm, sizeof nm, "%sup", pre);
        matmul(o, nm, T, D, (gated(m) ? 2 : 1) * F, NULL);
        snprintf(nm, sizeof nm, "%sact", pre);
        fusion(o, "elementwise", nm, T, F, gated(m) ? ", fn: silu, inputs: 2" : ", fn: gelu");
        if (!down)
            return;
        snprintf(nm, sizeof nm, "%sdown", pre);
        matmul(o, nm, T, F, D, NULL);
        return;
    }
    int64_t E = s->experts, routed = T * m->top_k, per = routed / (E ? E : 1);
    double a2a = (double)routed * (double)D * bytes(m->dtype) * s->dev_per_chip;
    snprintf(nm, sizeof nm, "%srouter", pre);
    matmul(o, nm, T, D, m->experts, NULL);
    snprintf(nm, sizeof nm, "%sdispatch", pre);
    collective(o, "all_to_all", nm, "expert", s->expert, a2a, NULL);
    snprintf(nm, sizeof nm, "%sexperts_up", pre);
    einsum(o, nm, E, per ? per : 1, D, 2 * F);
    snprintf(nm, sizeof nm, "%sexperts_act", pre);
    fusion(o, "elementwise", nm, routed, F, ", fn: silu, inputs: 2");
    if (!down)
        return;
    snprintf(nm, sizeof nm, "%sexperts_down", pre);
    einsum(o, nm, E, per ? per : 1, F, D);
    snprintf(nm, sizeof nm, "%scombine", pre);
    collective(o, "all_to_all", nm, "expert", s->expert, a2a, NULL);
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

static void name_op(char *nm, size_t n, const char *pre, const char *what)
{
    snprintf(nm, n, "%s%s", pre, what);
}

/* norm1, the QKV projection (gathering the residual over tensor first),
 * RoPE, the sequence-parallel gather of K and V. */
static void attn_inputs(struct out *o, const char *pre, const char *first_after, bool qkv)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = m->d_model, Dh = m->head_dim;
    char nm[64];
    const char *norm = m->arch == MODEL_GPT ? "layernorm" : "rmsnorm";
    /* the norms run on the residual as it is sharded, [T, D / N_t] (MaxText
     * constrains their input and output to activation_embed, over tensor; the
     * partitioner sums the statistics across the shards: [T] floats, a few
     * microseconds, left out), the gather feeds the matmul after them */
    name_op(nm, sizeof nm, pre, "norm1");
    emit(o, "- {op: %s, name: %s, shape: [%lld, %lld], dtype: %s%s%s}", norm, nm, (long long)T,
         (long long)(D / s->tensor), dt(m->dtype), first_after ? ", after: " : "",
         first_after ? first_after : "");
    if (!qkv)
        return;
    name_op(nm, sizeof nm, pre, "tp_ag1");
    tp(o, "all_gather", nm);
    bool early = o->grad_gather_early && s->tensor > 1;
    if (early) /* the next gather once this one is done, beside the qkv matmul */
        tp_after(o, "all_gather", "g_tp_ag2", "[re_tp_ag1]");
    name_op(nm, sizeof nm, pre, "qkv");
    matmul(o, nm, T, D, (s->heads + 2 * s->kv_heads) * Dh, early ? "[re_tp_ag1]" : NULL);
    if (m->arch != MODEL_GPT) {
        name_op(nm, sizeof nm, pre, "rope");
        fusion(o, "rope", nm, T, (s->heads + s->kv_heads) * Dh, rope_dim(o, Dh));
    }
    if (s->sequence > 1) {
        name_op(nm, sizeof nm, pre, "cp_kv");
        double kv = (double)T * 2.0 * (double)s->kv_heads * Dh * bytes(m->dtype) *
                    s->dev_per_chip;
        collective(o, "all_gather", nm, "sequence", s->sequence, kv, NULL);
    }
}

/* One layer's forward (or the part of it 'p' names), ops named with 'pre'
 * (the recomputation in the backward uses "re_"). */
static void layer_forward(struct out *o, const char *pre, const char *first_after,
                          struct layer_part p)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = m->d_model, Dh = m->head_dim;
    char nm[64];
    const char *norm = m->arch == MODEL_GPT ? "layernorm" : "rmsnorm";
    attn_inputs(o, pre, first_after, p.qkv);
    if (p.attn) {
        name_op(nm, sizeof nm, pre, "attn");
        attention(o, nm, "fwd");
    }
    if (p.out) {
        name_op(nm, sizeof nm, pre, "out");
        matmul(o, nm, T, s->heads * Dh, D, NULL);
        name_op(nm, sizeof nm, pre, "tp_rs1");
        tp(o, "reduce_scatter", nm);
        name_op(nm, sizeof nm, pre, "res1");
        if (o->grad_gather_early && p.up) {
            /* in the backward: the MLP's first gradient matmul (it needs only
             * the gathered gradient) beside this scatter, as XLA schedules
             * independent work between an async collective's start and done */
            matmul(o, "g_down_dgrad", T, D, s->ffn, "[g_tp_ag2]");
            fusion(o, "elementwise", nm, T, D / s->tensor, ", fn: add, after: [re_tp_rs1]");
        } else {
            fusion(o, "elementwise", nm, T, D / s->tensor, ", fn: add");
        }
    }
    name_op(nm, sizeof nm, pre, "norm2");
    fusion(o, norm, nm, T, D / s->tensor, NULL);
    if (p.up || p.down) {
        name_op(nm, sizeof nm, pre, "tp_ag2");
        tp(o, "all_gather", nm);
    }
    if (p.down) {
        mlp_forward(o, pre);
        name_op(nm, sizeof nm, pre, "tp_rs2");
        tp(o, "reduce_scatter", nm);
        name_op(nm, sizeof nm, pre, "res2");
        fusion(o, "elementwise", nm, T, D / s->tensor, ", fn: add");
    } else if (p.up) {
        mlp_up(o, pre);
    }
}

/* Per chip bytes of one layer's weights gathered (bf16) or its gradients
 * reduce-scattered (weight dtype), as the collective's per-device input. */
static double layer_gather_bytes(const struct out *o)
{
    const struct model_shard *s = o->sh;
    return (double)s->layer_params / s->tensor / s->fsdp * bytes(o->m->dtype);
}

static double layer_grad_bytes(const struct out *o)
{
    const struct model_shard *s = o->sh;
    return (double)s->layer_params / s->tensor * bytes(o->m->weight_dtype);
}

/* dgrad and wgrad of a forward matmul [m, k] x [k, n] (the dgrad 'after'
 * those ops, or the op before). */
static void matmul_backward_after(struct out *o, const char *name, int64_t m, int64_t k,
                                  int64_t n, const char *after)
{
    char nm[72];
    snprintf(nm, sizeof nm, "%s_dgrad", name);
    matmul(o, nm, m, n, k, after);
    snprintf(nm, sizeof nm, "%s_wgrad", name);
    matmul(o, nm, k, m, n, NULL);
}

static void matmul_backward(struct out *o, const char *name, int64_t m, int64_t k, int64_t n)
{
    matmul_backward_after(o, name, m, k, n, NULL);
}

/* The MLP's backward; g_down_dgrad waits for 'after' (or the op before), or
 * ran already ('dgrad_done'). */
static void mlp_backward(struct out *o, const char *after, bool dgrad_done)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = m->d_model, F = s->ffn;
    if (m->arch == MODEL_MIXTRAL) {
        int64_t E = s->experts, routed = T * m->top_k, per = routed / (E ? E : 1);
        double a2a = (double)routed * (double)D * bytes(m->dtype) * s->dev_per_chip;
        collective(o, "all_to_all", "g_dispatch", "expert", s->expert, a2a, NULL);
        einsum(o, "g_experts_dgrad", E, per ? per : 1, 3 * F, D);
        einsum(o, "g_experts_wgrad", E, per ? per : 1, 3 * F, D);
        fusion(o, "elementwise", "g_experts_act", routed, F, ", fn: mul, inputs: 3");
        collective(o, "all_to_all", "g_combine", "expert", s->expert, a2a, NULL);
        matmul_backward(o, "g_router", T, D, m->experts);
        return;
    }
    if (dgrad_done) /* g_down_dgrad ran beside the recomputation's scatter */
        matmul(o, "g_down_wgrad", F, T, D, "[re_act, g_tp_ag2]");
    else
        matmul_backward_after(o, "g_down", T, F, D, after);
    fusion(o, "elementwise", "g_act", T, F, gated(m) ? ", fn: mul, inputs: 3" : ", fn: gelu");
    matmul_backward(o, "g_up", T, D, (gated(m) ? 2 : 1) * F);
}

/* One layer's backward: recomputation per the remat policy, then the
 * gradients in reverse order, then the weight gradients reduce-scattered. */
static void layer_backward(struct out *o, const char *first_after)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = m->d_model, Dh = m->head_dim;
    int64_t qkv = (s->heads + 2 * s->kv_heads) * Dh;
    const char *norm = m->arch == MODEL_GPT ? "layernorm" : "rmsnorm";
    /* with qkv recomputed (and gathered over tensor first), the incoming
     * gradient is gathered once that gather is done, beside the qkv matmul:
     * it needs only the layer above's gradient (XLA's async all-gather), not
     * the recomputation it used to wait behind */
    struct layer_part re = recompute_part(m);
    bool early = !m->remat.none && re.qkv && m->arch != MODEL_MIXTRAL && s->tensor > 1;
    o->grad_gather_early = early;
    if (!m->remat.none)
        layer_forward(o, "re_", first_after, re);
    else
        emit(o, "- {op: elementwise, name: g_start, shape: [%lld, %lld], dtype: %s, fn: add%s%s}",
             (long long)T, (long long)(D / s->tensor), dt(m->dtype),
             first_after ? ", after: " : "", first_after ? first_after : "");
    o->grad_gather_early = false;
    if (!early)
        tp(o, "all_gather", "g_tp_ag2");
    mlp_backward(o, early ? "[g_tp_ag2]" : NULL, early && re.out && re.up);
    /* the gradient of the layer's input is scattered as soon as its dgrad is
     * done, beside the wgrad (XLA's async reduce-scatter: only the dgrad feeds
     * it); what follows waits for the scatter */
    tp_after(o, "reduce_scatter", "g_tp_rs2", m->arch == MODEL_MIXTRAL ? NULL : "[g_up_dgrad]");
    fusion(o, norm, "g_norm2", T, D / s->tensor, ", mode: bwd");
    tp(o, "all_gather", "g_tp_ag1");
    matmul_backward(o, "g_out", T, s->heads * Dh, D);
    attention(o, "g_attn", "bwd");
    if (m->arch != MODEL_GPT)
        fusion(o, "rope", "g_rope", T, (s->heads + s->kv_heads) * Dh, rope_dim(o, Dh));
    matmul_backward(o, "g_qkv", T, D, qkv);
    tp_after(o, "reduce_scatter", "g_tp_rs1", "[g_qkv_dgrad]");
    fusion(o, norm, "g_norm1", T, D / s->tensor, ", mode: bwd");
    collective(o, "reduce_scatter", "grad_rs", "fsdp", s->fsdp, layer_grad_bytes(o),
               "[g_norm1, g_qkv_wgrad]");
    /* the data-parallel sum of this layer's gradient shard, as soon as it is
     * reduced: it runs beside the backward of the layers below (over the DCN
     * when data spans the slices) */
    collective(o, "all_reduce", "grad_ar", "data", s->data, layer_grad_bytes(o) / s->fsdp,
               s->fsdp > 1 ? "[grad_rs]" : "[g_norm1, g_qkv_wgrad]");
}

/* A copy between HBM and host memory over the chip's PCIe link. */
static void host_copy(struct out *o, const char *name, double bytes, const char *direction,
                      const char *after)
{
    emit(o, "- {op: host_copy, name: %s, bytes: %.0f, direction: %s, after: %s}", name, bytes,
         direction, after);
}

/* The token embedding (a gather of rows); GPT adds its learned positions. */
static void embed(struct out *o)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    bool gpt = m->arch == MODEL_GPT;
    emit(o, "- {op: embedding, name: %s, rows: %lld, vocab: %lld, d: %lld, dtype: %s}",
         gpt ? "tokens" : "embed", (long long)s->tokens, (long long)m->vocab,
         (long long)m->d_model, dt(m->dtype));
    if (gpt) /* the op the first layer waits for is named 'embed' either way */
        fusion(o, "elementwise", "embed", s->tokens, m->d_model, ", fn: add");
}

/* Final norm, unembedding and loss, in vocab_tiling chunks of tokens. */
static void head(struct out *o, bool backward)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t tiles = m->vocab_tiling > 0 ? m->vocab_tiling : 1;
    int64_t T = s->tokens / tiles, V = m->vocab / s->tensor, D = m->d_model;
    const char *norm = m->arch == MODEL_GPT ? "layernorm" : "rmsnorm";
    /* after the last layer, not after what the layers left running (a host copy) */
    fusion(o, norm, "final_norm", s->tokens, D, ", after: [fwd.res2]");
    if (tiles > 1) {
        emit(o, "- repeat:");
        emit(o, "    name: vocab");
        emit(o, "    count: %lld", (long long)tiles);
        emit(o, "    ops:");
        o->indent = "      ";
    }
    matmul(o, "logits", T, D, V, NULL);
    fusion(o, "cross_entropy", "loss", T, V, NULL);
    if (backward) {
        fusion(o, "elementwise", "g_loss", T, V, ", fn: sub, inputs: 2");
        matmul_backward(o, "g_logits", T, D, V);
    }
    o->indent = "  ";
    if (backward)
        fusion(o, norm, "g_final_norm", s->tokens, D, ", mode: bwd");
}

/* What the first op of a layer waits for: the previous layer, and this
 * layer's weights (FSDP) and offloaded tensors (backward), fetched one layer
 * ahead -- by the op before the block for the first layer. */
static void layer_first_after(const struct out *o, bool backward, bool fsdp, bool offload,
                              char *buf, size_t n)
{
    const char *last = backward ? "prev.g_norm1" : "prev.res2";
    snprintf(buf, n, "[%s", last);
    if (fsdp)
        snprintf(buf + strlen(buf), n - strlen(buf), ", prev.wgather, %s",
                 backward ? "fwd.wgather" : "wg0");
    if (offload && backward)
        snprintf(buf + strlen(buf), n - strlen(buf), ", prev.h2d, h2d0");
    snprintf(buf + strlen(buf), n - strlen(buf), ", %s]", backward ? "g_final_norm" : "embed");
    (void)o;
}

static void layer_block(struct out *o, const char *name, bool backward)
{
    const struct model *m = o->m;
    emit(o, "- repeat:");
    emit(o, "    name: %s", name);
    emit(o, "    count: %lld", (long long)m->layers);
    emit(o, "    ops:");
    o->indent = "      ";
    bool fsdp = o->sh->fsdp > 1;
    double off = model_offload_bytes_per_layer(m, o->sh);
    /* the next layer's weights (and offloaded tensors), one layer ahead: once
     * this layer has started */
    if (fsdp)
        collective(o, "all_gather", "wgather", "fsdp", o->sh->fsdp, layer_gather_bytes(o),
                   backward ? "[prev.wgather, prev.g_norm1]" : "[prev.wgather, prev.res2]");
    if (off > 0 && backward)
        host_copy(o, "h2d", off, "to_device", "[prev.h2d, prev.g_norm1]");
    char first[160];
    layer_first_after(o, backward, fsdp, off > 0, first, sizeof first);
    if (backward)
        layer_backward(o, first);
    else
        layer_forward(o, "", first, (struct layer_part){true, true, true, true, true});
    if (off > 0 && !backward) /* what the policy offloads goes to the host as the layer ends */
        host_copy(o, "d2h", off, "to_host", "[res2]");
    o->indent = "  ";
}

static void train_step(struct out *o)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    embed(o);
    if (s->fsdp > 1)
        collective(o, "all_gather", "wg0", "fsdp", s->fsdp, layer_gather_bytes(o), "[]");
    layer_block(o, "fwd", false);
    head(o, true);
    double off = model_offload_bytes_per_layer(m, s);
    if (off > 0) /* the last layer's tensors come back first */
        host_copy(o, "h2d0", off, "to_device", "[fwd.d2h]");
    layer_block(o, "bwd", true);
    fusion(o, "elementwise", "g_embed", s->tokens, m->d_model, ", fn: add");
    /* the update waits for every layer's gradients and their data-parallel
     * sums (each layer's in the backward, then the rest: embedding, head) */
    double local = chip_params(m, s);
    const char *grads = s->fsdp > 1 ? "[bwd.grad_rs, g_embed]" : "[g_embed]";
    double rest = local * bytes(m->weight_dtype) - (double)m->layers * layer_grad_bytes(o) / s->fsdp;
    collective(o, "all_reduce", "grad_ar_rest", "data", s->data, rest, "[g_embed]");
    emit(o, "- {op: optimizer, name: adamw, algorithm: adamw, params: %.0f, param_dtype: %s, "
            "grad_dtype: %s, state_dtype: %s, after: %s}",
         local, dt(m->weight_dtype), dt(m->weight_dtype), dt(m->mu_dtype),
         s->data <= 1 ? grads : rest >= 1 ? "[bwd.grad_ar, grad_ar_rest]" : "[bwd.grad_ar]");
}

static void prefill_step(struct out *o)
{
    embed(o);
    if (o->sh->fsdp > 1)
        collective(o, "all_gather", "wg0", "fsdp", o->sh->fsdp, layer_gather_bytes(o), "[]");
    layer_block(o, "fwd", false);
    head(o, false);
}

/* A decode step: every sequence adds seq_len tokens (1, or several for
 * speculative or multi-token decode: every op runs the b x seq_len tokens, as
 * the FLOP count does) against its paged KV cache (ragged paged attention);
 * with tensor parallelism the attention output and the MLP output are
 * all-reduced (activations replicated, as vLLM TPU runs). */
static void decode_step(struct out *o)
{
    const struct model *m = o->m;
    const struct model_shard *s = o->sh;
    int64_t T = s->tokens, D = m->d_model, Dh = m->head_dim;
    double ar = (double)T * (double)D * bytes(m->dtype) * s->dev_per_chip;
    emit(o, "- repeat:");
    emit(o, "    name: layer");
    emit(o, "    count: %lld", (long long)m->layers);
    emit(o, "    ops:");
    o->indent = "      ";
    fusion(o, "rmsnorm", "norm1", T, D, NULL);
    matmul(o, "qkv", T, D, (s->heads + 2 * s->kv_heads) * Dh, NULL);
    fusion(o, "rope", "rope", T, (s->heads + s->kv_heads) * Dh, rope_dim(o, Dh));
    emit(o, "- {op: ragged_paged_attention, name: attn, q_heads: %lld, kv_heads: %lld, "
            "head_dim: %lld, dtype: %s, page_size: %lld, max_model_len: %lld,",
         (long long)s->heads, (long long)s->kv_heads, (long long)Dh, dt(m->dtype),
         (long long)m->page_size, (long long)(m->kv_len + m->seq_len));
    if (m->seq_len == 1)
        emit(o, "   decode: {batch: %lld, kv_len: %lld}}", (long long)s->b, (long long)m->kv_len);
    else /* the new tokens attend to the cache and (causally) to each other */
        emit(o, "   prefill: {batch: %lld, q_len: %lld, kv_len: %lld}}", (long long)s->b,
             (long long)m->seq_len, (long long)(m->kv_len + m->seq_len));
    matmul(o, "out", T, s->heads * Dh, D, NULL);
    collective(o, "all_reduce", "tp_ar1", "tensor", s->tensor, ar, NULL);
    fusion(o, "elementwise", "res1", T, D, ", fn: add");
    fusion(o, "rmsnorm", "norm2", T, D, NULL);
    mlp_forward(o, "");
    collective(o, "all_reduce", "tp_ar2", "tensor", s->tensor, ar, NULL);
    fusion(o, "elementwise", "res2", T, D, ", fn: add");
    o->indent = "  ";
    fusion(o, "rmsnorm", "final_norm", T, D, NULL);
    matmul(o, "logits", T, D, m->vocab / s->tensor, NULL);
}

char *model_workload_yaml(const struct model *m, const struct model_shard *s,
                          const struct chip_params *chip)
{
    struct out o = {.m = m, .sh = s, .chip = chip, .indent = "  "};
    emit(&o, "# one %s step, per chip", mode_names[m->mode]);
    if (m->mode == MODEL_TRAIN)
        train_step(&o);
    else if (m->mode == MODEL_PREFILL)
        prefill_step(&o);
    else
        decode_step(&o);
    return o.s;
}
