/* kernels/ragged.c -- jax ragged_paged_attention (RPA v2): mixed prefill and
 * decode over a paged KV cache with K and V interleaved on the head axis.
 * Paraphrases jax-ml/jax jax/experimental/pallas/ops/tpu/ragged_paged_attention/
 * kernel.py (docs/pallas-semantics.md section 5). grid (Hq / q_heads_per_blk, cdiv(T, bq)),
 * (A, A); q and o BlockSpec'd (bq, q_heads_per_blk, D); each kv block is
 * num_kv_pages_per_block page DMAs [page_size, 2 x kv_heads_per_blk, D], always
 * all of them (past the sequence's end the page slot 0 is copied again), double
 * buffered by hand with the next block prefetched across sequences, q blocks
 * and head blocks. Work model per kv block and kv head: QK^T [bq*ratio x nkv] in
 * the q dtype, PV [bq*ratio x D] in f32 (s is f32), kv unpack, NaN mask,
 * causal/window mask, soft cap and online softmax on the VPU/EUP; every row of
 * the q block is computed for every sequence it overlaps (stores are masked). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel.h"
#include "base/diag.h"
#include "models/hbm.h"
#include "base/check.h"
#include "base/xalloc.h"

enum { Q, KV, O };                  /* operands */
enum { KVBUF, LBUF, MBUF, ACCBUF }; /* scratch */

#define RG_MASK_VALUE (-0.7f * 3.40282347e38f) /* DEFAULT_MASK_VALUE */
#define RG_INT8_SCALE (1.0f / 127.0f)          /* k_scale = v_scale for int8 pages */

struct rg {
    struct op_ragged p;          /* q_lens, kv_lens borrowed from the op */
    int64_t S, T, pps, nkvp, bq; /* sequences, tokens, pages_per_seq, block sizes */
    int64_t nkv;                 /* kv tokens per block */
    int64_t qh_blk, comb_blk, kvh_blk, ratio, nhb, nqb;
    int64_t *cu;           /* cu_q_lens [S + 1], owned */
    int32_t *page_indices; /* [S, pps], owned */
    int64_t total_pages;
    uint64_t page_bytes; /* one page DMA */
    float kv_scale;      /* int8 pages: k_scale = v_scale; else 0 (None) */
    float *q, *kv, *o;   /* functional mode, owned */
};

struct rg_state {
    int64_t seq, buf; /* seq_buf_idx in SMEM */
    void *h[];        /* [2 slots][nkvp] */
};

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static void rg_qmap(const int64_t *gi, const void *user, int64_t *bi)
{
    (void)user;
    bi[0] = gi[1], bi[1] = gi[0], bi[2] = 0;
}

/* Functional mode: the DMA of page 'page' (combined heads of head block
 * 'hb') into position 'p' of slot 'slot'. */
static void rg_copy_page(struct pl_ctx *ctx, const struct rg *g, int64_t hb, int64_t page,
                         int64_t slot, int64_t p)
{
    int64_t ps = g->p.page_size, D = g->p.head_dim, comb = 2 * g->p.kv_heads;
    float *dst = pl_scratch_buf(ctx, KVBUF) + ((slot * g->nkvp + p) * ps) * g->comb_blk * D;
    for (int64_t r = 0; r < ps; r++) {
        const float *src = g->kv + ((page * ps + r) * comb + hb * g->comb_blk) * D;
        memcpy(dst + r * g->comb_blk * D, src, sizeof(float) * (size_t)(g->comb_blk * D));
    }
}

/* create_kv_async_copy_descriptors(...).start() (L338-356, L35-65): always
 * nkvp page copies; page slots at or past the sequence's last page become 0. */
static void rg_start(struct pl_ctx *ctx, const struct rg *g, struct rg_state *st, int64_t hb,
                     int64_t seq, int64_t kvb, int64_t slot)
{
    int64_t end = cdiv(g->p.kv_lens[seq], g->p.page_size);
    end = end < g->pps ? end : g->pps;
    for (int64_t p = 0; p < g->nkvp; p++) {
        int64_t idx = kvb * g->nkvp + p;
        /* the data of the page: its tokens of the sequence (none for a slot
         * past the last page, which fetches page 0 again), without padding */
        int64_t tokens = idx < end ? g->p.kv_lens[seq] - idx * g->p.page_size : 0;
        tokens = tokens < g->p.page_size ? tokens : g->p.page_size;
        uint64_t useful =
            (uint64_t)tokens * (uint64_t)(g->comb_blk * g->p.head_dim) * (uint64_t)dtype_bytes(g->p.kv_dt);
        idx = idx < end ? idx : 0;
        st->h[slot * g->nkvp + p] = pl_dma_start_useful(ctx, true, g->page_bytes, useful);
        if (pl_functional(ctx))
            rg_copy_page(ctx, g, hb, g->page_indices[seq * g->pps + idx], slot, p);
    }
}

static void rg_wait(struct pl_ctx *ctx, const struct rg *g, struct rg_state *st, int64_t slot)
{
    for (int64_t p = 0; p < g->nkvp; p++) {
        void **h = &st->h[slot * g->nkvp + p];
        TPU_ASSERT(*h != NULL, "ragged_paged_attention: wait for a kv DMA never started");
        pl_dma_wait(ctx, *h);
        *h = NULL;
    }
}

/* get_next_prefetch_ids (L424-452): the kv block after (hb, seq, kvb). */
static void rg_next(const struct rg *g, int64_t hb, int64_t seq, int64_t kvb, int64_t q_end,
                    int64_t q_len_end, int64_t *nhb, int64_t *nseq, int64_t *nkvb)
{
    bool last_kv = (kvb + 1) * g->nkv >= g->p.kv_lens[seq];
    *nkvb = last_kv ? 0 : kvb + 1;
    *nseq = last_kv && q_end <= q_len_end ? seq + 1 : seq;
    *nhb = hb;
    if (*nseq == g->S)
        *nseq = 0, *nhb = hb + 1;
}

/* The VPU/MXU work of one kv block for its kv_heads_per_blk heads. */
static void rg_block_work(struct pl_ctx *ctx, const struct rg *g)
{
    int64_t rows = g->bq * g->ratio, nkv = g->nkv, D = g->p.head_dim;
    /* q . k in the q dtype (int8 pages are scaled and cast to it); f32 if either is f32 */
    enum dtype qdt = g->p.dt == DT_F32 || g->p.kv_dt == DT_F32 ? DT_F32 : g->p.dt;
    double unpack_load = g->p.kv_dt == DT_F32 ? 2 : 1; /* packed k|v words below 32 bits */
    double sm_alu = 10 + (g->p.sliding_window ? 3 : 0) + (g->p.soft_cap > 0 ? 2 : 0);
    double sm_eup = 1 + (g->p.soft_cap > 0 ? 1 : 0);
    for (int64_t h = 0; h < g->kvh_blk; h++) {
        pl_vpu(ctx, nkv, D, 3, unpack_load, 0, 0, 0); /* strided_load_kv */
        if (g->kv_scale > 0)
            pl_vpu(ctx, nkv, D, 6, 0, 0, 0, 0); /* k, v * scale, cast */
        pl_vpu(ctx, nkv, D, 4, 0, 0, 0, 0);     /* kv_mask: iota, cmp, 2 selects */
        pl_vpu(ctx, rows, D, 0, 1, 0, 0, 0);    /* fold q */
        pl_matmul(ctx, rows, D, nkv, qdt);
        /* scale, row/col ids, causal (window) compare, soft cap, mask add, max, sub, sum; exp */
        pl_vpu(ctx, rows, nkv, sm_alu, 0, 0, sm_eup, 0);
        pl_vpu(ctx, rows, 128, 0, 0, 0, 0, 2);
        pl_matmul(ctx, rows, nkv, D, DT_F32);
        pl_vpu(ctx, rows, 128, 12, 2, 2, 2, 0); /* m, l with init and masked stores */
        pl_vpu(ctx, rows, D, 6, 1, 1, 0, 0);    /* acc update, masked store */
    }
}

static float rg_kv(const struct rg *g, float x)
{
    return g->kv_scale > 0 ? pl_round(x * g->kv_scale, g->p.dt) : x;
}

/* Functional mode: flash_attention() (L454-589) for kv head 'h' of the block
 * in 'slot', sequence rows [q_start, q_end) of the q block starting at 'qs'. */
static void rg_head_data(struct pl_ctx *ctx, const struct rg *g, int64_t slot, int64_t h,
                         int64_t seq, int64_t kvb, int64_t qs, float *s)
{
    int64_t D = g->p.head_dim, nkv = g->nkv, R = g->ratio, cb = g->comb_blk;
    int64_t q_start = g->cu[seq], q_end = g->cu[seq + 1], q_len = q_end - q_start;
    int64_t kv_len = g->p.kv_lens[seq], kv0 = kvb * nkv;
    int64_t lo = q_start - qs > 0 ? q_start - qs : 0, hi = q_end - qs < g->bq ? q_end - qs : g->bq;
    const float *kvb_ = pl_scratch_buf(ctx, KVBUF) + slot * nkv * cb * D;
    const float *q = pl_buf(ctx, Q);
    float *l = pl_scratch_buf(ctx, LBUF) + h * g->bq * R * 128;
    float *m = pl_scratch_buf(ctx, MBUF) + h * g->bq * R * 128;
    float *acc = pl_scratch_buf(ctx, ACCBUF);
    for (int64_t tok = lo; tok < hi; tok++) { /* other rows are computed, not stored */
        for (int64_t j = 0; j < R; j++) {
            int64_t row = tok * R + j, hq = h * R + j;
            int64_t qpos = kv_len - q_len + qs - q_start + tok;
            const float *qr = q + (tok * g->qh_blk + hq) * D;
            float mc = -INFINITY;
            for (int64_t t = 0; t < nkv; t++) {
                const float *k = kvb_ + (t * cb + 2 * h) * D;
                bool valid = t < kv_len - kv0; /* kv_mask: NaNs past kv_len become 0 */
                float a = 0;
                for (int64_t d = 0; d < D && valid; d++)
                    a += qr[d] * rg_kv(g, k[d]);
                a *= (float)g->p.sm_scale;
                bool masked = qpos < kv0 + t;
                if (g->p.sliding_window)
                    masked |= qpos - g->p.sliding_window >= kv0 + t;
                if (g->p.soft_cap > 0)
                    a = (float)g->p.soft_cap * tanhf(a / (float)g->p.soft_cap);
                s[t] = a + (masked ? RG_MASK_VALUE : 0.0f);
                mc = s[t] > mc ? s[t] : mc;
            }
            float lc = 0;
            for (int64_t t = 0; t < nkv; t++)
                lc += s[t] = expf(s[t] - mc);
            float mp = kvb == 0 ? -INFINITY : m[row * 128], lp = kvb == 0 ? 0 : l[row * 128];
            float mn = mp > mc ? mp : mc, alpha = expf(mp - mn), beta = expf(mc - mn);
            float la = alpha * lp, ln = la + beta * lc;
            ln = ln == 0.0f ? 1.0f : ln;
            m[row * 128] = mn, l[row * 128] = ln;
            float *o = acc + (tok * g->qh_blk + hq) * D;
            for (int64_t d = 0; d < D; d++) {
                float pv = 0;
                for (int64_t t = 0; t < nkv; t++) {
                    const float *v = kvb_ + (t * cb + 2 * h + 1) * D;
                    pv += t < kv_len - kv0 ? s[t] * rg_kv(g, v[d]) : 0.0f;
                }
                o[d] = ((kvb == 0 ? 0.0f : la * o[d]) + beta * pv) / ln;
            }
        }
    }
}

/* The kv blocks of one sequence in this q block (L591-662); returns the buffer index. */
static int64_t rg_seq(struct pl_ctx *ctx, const struct rg *g, struct rg_state *st, int64_t hb,
                      int64_t qb, int64_t seq, int64_t buf)
{
    int64_t q_end = g->cu[seq + 1], q_len_end = (qb + 1) * g->bq;
    float *s = pl_functional(ctx) ? xmalloc(sizeof(float) * (size_t)g->nkv) : NULL;
    for (int64_t kvb = 0; kvb * g->nkv < g->p.kv_lens[seq]; kvb++) {
        int64_t nhb, nseq, nkvb;
        rg_next(g, hb, seq, kvb, q_end, q_len_end, &nhb, &nseq, &nkvb);
        if (nhb < g->nhb)
            rg_start(ctx, g, st, nhb, nseq, nkvb, 1 - buf);
        rg_wait(ctx, g, st, buf);
        rg_block_work(ctx, g);
        for (int64_t h = 0; s && h < g->kvh_blk; h++)
            rg_head_data(ctx, g, buf, h, seq, kvb, qb * g->bq, s);
        buf = 1 - buf;
    }
    free(s);
    return buf;
}

/* ragged_paged_attention_kernel (L290-675) for grid point (hb, qb). */
static void rg_body(struct pl_ctx *ctx, const int64_t *gi, void *user)
{
    const struct rg *g = user;
    struct rg_state *st = pl_state(ctx);
    int64_t hb = gi[0], qb = gi[1], q_len_start = qb * g->bq, q_len_end = q_len_start + g->bq;
    if (hb + qb == 0)
        rg_start(ctx, g, st, hb, st->seq, 0, st->buf);
    int64_t seq = st->seq, buf = st->buf;
    bool done = false;
    while (!done && q_len_start < g->cu[g->S] && seq < g->S) {
        int64_t q_end = g->cu[seq + 1];
        buf = rg_seq(ctx, g, st, hb, qb, seq, buf);
        done = q_end >= q_len_end;
        seq = q_end <= q_len_end ? seq + 1 : seq;
    }
    st->seq = seq < g->S ? seq : 0;
    st->buf = buf;
    pl_vpu(ctx, g->bq * g->qh_blk, g->p.head_dim, 1, 1, 1, 0, 0); /* o = acc.astype */
    if (pl_functional(ctx)) {
        float *o = pl_buf(ctx, O);
        const float *acc = pl_scratch_buf(ctx, ACCBUF);
        for (int64_t e = 0; e < g->bq * g->qh_blk * g->p.head_dim; e++)
            o[e] = pl_round(acc[e], g->p.dt);
    }
}

static int64_t rg_packing(enum dtype dt)
{
    return 4 / dtype_bytes(dt);
}

static bool rg_tiled(int64_t x, int64_t packing)
{
    if (x % packing != 0)
        return false;
    x /= packing;
    return x == 1 || x == 2 || x == 4 || x == 8 || x % 8 == 0;
}

/* get_min_heads_per_blk (L683-715). */
static int rg_heads(struct rg *g, char *err, size_t n)
{
    int64_t comb = 2 * g->p.kv_heads, kvp = rg_packing(g->p.kv_dt);
    if (!rg_tiled(comb, kvp)) {
        return diag_fail(err, n,
                         "Not implemented: num_combined_kv_heads=%lld can not be XLA fully tiled.",
                         (long long)comb);
    }
    int64_t min_comb = comb % (8 * kvp) == 0 ? 8 * kvp : comb;
    int64_t min_q = min_comb / 2 * g->ratio;
    if (rg_tiled(min_q, rg_packing(g->p.dt)))
        g->qh_blk = min_q, g->comb_blk = min_comb;
    else
        g->qh_blk = g->p.q_heads, g->comb_blk = comb;
    g->kvh_blk = g->comb_blk / 2;
    g->nhb = g->p.q_heads / g->qh_blk;
    return 0;
}

/* static_validate_inputs and dynamic_validate_inputs (L152-287). */
static int rg_check(const struct rg *g, char *err, size_t n)
{
    const struct op_ragged *p = &g->p;
    if (p->q_heads % p->kv_heads != 0) {
        return diag_fail(err, n, "num_q_heads=%lld must be divisible by num_kv_heads=%lld",
                         (long long)p->q_heads, (long long)p->kv_heads);
    }
    if (p->sliding_window < 0) {
        return diag_fail(err, n, "sliding_window=%lld must be positive.",
                         (long long)p->sliding_window);
    }
    if (p->num_kv_pages_per_block && !(p->num_kv_pages_per_block <= g->pps)) {
        return diag_fail(err, n, "num_kv_pages_per_block=%lld must be in range (0, %lld].",
                         (long long)p->num_kv_pages_per_block, (long long)g->pps);
    }
    for (int i = 0; i < p->nseqs; i++) {
        if (p->kv_lens[i] > g->pps * p->page_size) {
            return diag_fail(err, n,
                    "pages_per_seq=%lld must be greater or equal to min_pages_per_seq=%lld given "
                    "max_kv_len=%lld and page_size=%lld.",
                    (long long)g->pps, (long long)cdiv(p->kv_lens[i], p->page_size),
                    (long long)p->kv_lens[i], (long long)p->page_size);
        }
        if (p->q_lens[i] > p->kv_lens[i]) {
            return diag_fail(err, n,
                             "q_len=%lld must be less or equal to kv_len=%lld at sequence %d.",
                             (long long)p->q_lens[i], (long long)p->kv_lens[i], i);
        }
        if (p->kv_lens[i] < 1 || p->q_lens[i] < 0) {
            return diag_fail(err, n,
                             "sequence %d has kv_len=%lld: the kernel prefetches block 0 of every "
                             "sequence, so a sequence needs kv_len >= 1 (and q_len >= 0)",
                             i, (long long)p->kv_lens[i]);
        }
    }
    return 0;
}

/* Page table: each sequence gets cdiv(kv_len, page_size) pages, in order or
 * a seeded permutation of all of them; unused slots hold page 0. */
static void rg_pages(struct rg *g)
{
    int64_t ps = g->p.page_size, n = 0;
    g->page_indices = xcalloc((size_t)(g->S * g->pps), sizeof *g->page_indices);
    for (int64_t s = 0; s < g->S; s++)
        n += cdiv(g->p.kv_lens[s], ps);
    int32_t *perm = xmalloc(sizeof *perm * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        perm[i] = (int32_t)i;
    for (int64_t i = n - 1; g->p.shuffled_pages && i > 0; i--) {
        double u = (kern_rand(g->p.seed ^ 0x7a6e5ull, (uint64_t)i) + 1.0) / 2.0;
        int64_t j = (int64_t)(u * (double)(i + 1));
        j = j > i ? i : j;
        int32_t t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    for (int64_t s = 0, next = 0; s < g->S; s++)
        for (int64_t i = 0; i < cdiv(g->p.kv_lens[s], ps); i++)
            g->page_indices[s * g->pps + i] = perm[next++];
    g->total_pages = n > 0 ? n : 1;
    free(perm);
}

/* Block sizes: given, or get_tuned_block_sizes' defaults (untuned path):
 * (the chip's rpa_kv_pages_per_block: 128, v4 32; 32 queries), clipped to
 * (pages_per_seq, T). A size left unset takes its default even when the
 * other is given (issue 31.5: one given size used to be dropped too). */
static void rg_blocks(struct rg *g, const struct chip_params *chip)
{
    g->nkvp = g->p.num_kv_pages_per_block, g->bq = g->p.num_queries_per_block;
    if (!g->nkvp) {
        g->nkvp = chip->rpa_kv_pages_per_block;
        g->nkvp = g->nkvp < g->pps ? g->nkvp : g->pps;
    }
    if (!g->bq)
        g->bq = 32 < g->T ? 32 : g->T;
    g->nkv = g->nkvp * g->p.page_size;
    g->nqb = cdiv(g->T, g->bq);
}

/* kv_lens, page_indices, cu_q_lens, seq_buf_idx, num_seqs (L864-870). */
static uint64_t rg_smem_bytes(const struct rg *g)
{
    return (uint64_t)(4 * g->S + 4 * g->S * g->pps + 4 * (g->S + 1) + 8 + 4);
}

static void rg_build(struct kern *k, struct rg *g)
{
    const struct op_ragged *p = &g->p;
    int64_t D = p->head_dim;
    struct pl_call *c = &k->calls[0];
    k->ncalls = 1;
    c->name = k->op->name;
    c->ngrid = 2;
    c->grid[0] = g->nhb, c->grid[1] = g->nqb; /* both arbitrary */
    c->noperands = 3;
    c->operands[Q] = (struct pl_operand){.name = "q",
                                    .dir = PL_IN,
                                    .space = PL_VMEM,
                                    .dt = p->dt,
                                    .rank = 3,
                                    .shape = {g->T, p->q_heads, D},
                                    .block = {g->bq, g->qh_blk, D},
                                    .index = rg_qmap};
    c->operands[KV] = (struct pl_operand){.name = "kv_pages",
                                     .dir = PL_IN,
                                     .space = PL_ANY,
                                     .dt = p->kv_dt,
                                     .rank = 4,
                                     .shape = {g->total_pages, p->page_size, 2 * p->kv_heads, D}};
    c->operands[O] = c->operands[Q];
    c->operands[O].name = "o", c->operands[O].dir = PL_OUT;
    c->nscratch = 4;
    c->scratch[KVBUF] = (struct pl_scratch){.name = "kv_bufs",
                                            .space = PL_VMEM,
                                            .dt = p->kv_dt,
                                            .rank = 5,
                                            .shape = {2, g->nkvp, p->page_size, g->comb_blk, D}};
    c->scratch[LBUF] = (struct pl_scratch){.name = "l",
                                           .space = PL_VMEM,
                                           .dt = DT_F32,
                                           .rank = 3,
                                           .shape = {g->kvh_blk, g->bq * g->ratio, 128}};
    c->scratch[MBUF] = c->scratch[LBUF];
    c->scratch[MBUF].name = "m";
    c->scratch[ACCBUF] = (struct pl_scratch){
        .name = "acc", .space = PL_VMEM, .dt = DT_F32, .rank = 3, .shape = {g->bq, g->qh_blk, D}};
    c->body = rg_body;
    c->user = g;
    c->manual = true;
    c->smem_prefetch_bytes = rg_smem_bytes(g);
    c->state_bytes = sizeof(struct rg_state) + sizeof(void *) * (size_t)(2 * g->nkvp);
}

/* A default num_kv_pages_per_block whose buffers exceed the scoped VMEM
 * limit (the op's or the chip's) is halved until they fit, as jax's tuned
 * table picks smaller blocks for long contexts (issue 31.5: the 8k decode
 * of the shipped Llama-3-8B on v6e needed 34.6 MB of 32 MiB at the untuned
 * 64 pages). A given size is kept: too large, it is refused as upstream
 * would. */
static void rg_fit_vmem(struct kern *k, struct rg *g)
{
    struct pl_call *c = &k->calls[0];
    uint64_t limit = k->op->vmem_limit_bytes ? k->op->vmem_limit_bytes
                                             : k->chip->vmem_limit_bytes;
    while (!g->p.num_kv_pages_per_block && g->nkvp > 1 && pl_vmem_bytes(c, k->chip) > limit) {
        g->nkvp /= 2;
        g->nkv = g->nkvp * g->p.page_size;
        rg_build(k, g);
    }
}

static int rg_init(struct kern *k, char *err, size_t n)
{
    struct rg *g = xcalloc(1, sizeof *g);
    k->impl = g;
    g->p = k->op->u.ragged;
    if (g->p.sm_scale <= 0)
        g->p.sm_scale = 1.0; /* upstream's default */
    const struct op_ragged *p = &g->p;
    g->S = p->nseqs;
    g->pps = cdiv(p->max_model_len, p->page_size);
    if (rg_check(g, err, n) != 0)
        return -1;
    g->ratio = p->q_heads / p->kv_heads;
    if (rg_heads(g, err, n) != 0)
        return -1;
    g->cu = xcalloc((size_t)g->S + 1, sizeof *g->cu);
    for (int64_t s = 0; s < g->S; s++)
        g->cu[s + 1] = g->cu[s] + p->q_lens[s];
    g->T = p->max_num_batched_tokens ? p->max_num_batched_tokens
                                     : (g->cu[g->S] > 0 ? g->cu[g->S] : 1);
    if (g->T < g->cu[g->S]) {
        return diag_fail(err, n,
                "Total q tokens %lld must be less or equal to max_num_batched_tokens=%lld.",
                (long long)g->cu[g->S], (long long)g->T);
    }
    rg_blocks(g, k->chip);
    g->kv_scale = p->kv_dt == DT_INT8 ? RG_INT8_SCALE : 0.0f;
    int64_t page[3] = {p->page_size, g->comb_blk, p->head_dim};
    g->page_bytes = hbm_dma_bytes(k->chip, p->kv_dt, 3, page);
    /* checked before the page table is built (see kernels/paged.c) */
    if (kern_check_smem(k, rg_smem_bytes(g), "kv_lens, page_indices, cu_q_lens", err, n) != 0)
        return -1;
    rg_pages(g);
    rg_build(k, g);
    rg_fit_vmem(k, g);
    return 0;
}

/* Pages hold seeded values; the tail of each sequence's last page is NaN
 * (int8: 127), as upstream's test pads it, so the kernel's kv mask is exercised. */
static void rg_data(struct kern *k, uint64_t seed)
{
    struct rg *g = k->impl;
    const struct op_ragged *p = &g->p;
    int64_t D = p->head_dim, ps = p->page_size, comb = 2 * p->kv_heads;
    int64_t nq = g->T * p->q_heads * D, nkv = g->total_pages * ps * comb * D;
    bool quant = p->kv_dt == DT_INT8;
    g->q = kern_rand_array(seed, nq, p->dt, 1.0f);
    g->kv = kern_rand_array(seed + 1, nkv, p->kv_dt, quant ? 127.0f : 1.0f);
    for (int64_t s = 0; s < g->S; s++) {
        int64_t len = p->kv_lens[s], last = cdiv(len, ps) - 1;
        int32_t page = g->page_indices[s * g->pps + last];
        for (int64_t r = len - last * ps; r < ps; r++)
            for (int64_t e = 0; e < comb * D; e++)
                g->kv[(page * ps + r) * comb * D + e] = quant ? 127.0f : NAN;
    }
    g->o = xcalloc((size_t)nq, sizeof(float));
    k->calls[0].operands[Q].data = g->q;
    k->calls[0].operands[KV].data = g->kv;
    k->calls[0].operands[O].data = g->o;
}

static double rg_ref_kv(const struct rg *g, int64_t s, int64_t t, int64_t comb_head, int64_t d)
{
    int64_t ps = g->p.page_size, comb = 2 * g->p.kv_heads;
    int64_t page = g->page_indices[s * g->pps + t / ps];
    return rg_kv(g, g->kv[((page * ps + t % ps) * comb + comb_head) * g->p.head_dim + d]);
}

/* Naive attention (ref_ragged_paged_attention) for token 'j' of sequence
 * 's', q head 'hq'; returns the worst error of its output row. */
static double rg_ref_row(const struct rg *g, int64_t s, int64_t j, int64_t hq, double *sc)
{
    int64_t D = g->p.head_dim, kv_len = g->p.kv_lens[s], q_len = g->p.q_lens[s];
    int64_t pos = kv_len - q_len + j, h = hq / g->ratio, tok = g->cu[s] + j;
    const float *q = g->q + (tok * g->p.q_heads + hq) * D,
                *o = g->o + (tok * g->p.q_heads + hq) * D;
    double mx = -INFINITY, sum = 0, worst = 0;
    for (int64_t t = 0; t < kv_len; t++) {
        bool masked = pos < t || (g->p.sliding_window && pos - g->p.sliding_window >= t);
        double a = 0;
        for (int64_t d = 0; d < D; d++)
            a += (double)q[d] * rg_ref_kv(g, s, t, 2 * h, d);
        a *= g->p.sm_scale;
        if (g->p.soft_cap > 0)
            a = g->p.soft_cap * tanh(a / g->p.soft_cap);
        sc[t] = masked ? -INFINITY : a;
        mx = sc[t] > mx ? sc[t] : mx;
    }
    for (int64_t t = 0; t < kv_len; t++)
        sum += sc[t] = exp(sc[t] - mx);
    for (int64_t d = 0; d < D; d++) {
        double ref = 0;
        for (int64_t t = 0; t < kv_len; t++)
            ref += sc[t] > 0 ? sc[t] * rg_ref_kv(g, s, t, 2 * h + 1, d) : 0.0;
        ref /= sum;
        double e = fabs(o[d] - ref) / (fabs(ref) + 1.0);
        worst = isnan(e) ? INFINITY : e > worst ? e : worst;
    }
    return worst;
}

static double rg_verify(const struct kern *k, bool *ok, char *msg, size_t n)
{
    const struct rg *g = k->impl;
    double tol = g->p.dt == DT_BF16 ? 1e-2 : 1e-4, worst = 0;
    double *sc = xmalloc(sizeof(double) * (size_t)(g->pps * g->p.page_size + 1));
    int64_t ws = 0, wj = 0, wh = 0;
    for (int64_t s = 0; s < g->S; s++)
        for (int64_t j = 0; j < g->p.q_lens[s]; j++)
            for (int64_t hq = 0; hq < g->p.q_heads; hq++) {
                double e = rg_ref_row(g, s, j, hq, sc);
                if (e > worst)
                    worst = e, ws = s, wj = j, wh = hq;
            }
    free(sc);
    *ok = worst <= tol;
    if (!*ok)
        snprintf(msg, n,
                 "o differs from naive attention over the gathered pages by %.3g at sequence "
                 "%lld, token %lld, q head %lld (tolerance %.3g)",
                 worst, (long long)ws, (long long)wj, (long long)wh, tol);
    return worst;
}

static void rg_fini(struct kern *k)
{
    struct rg *g = k->impl;
    if (!g)
        return;
    free(g->cu), free(g->page_indices);
    free(g->q), free(g->kv), free(g->o);
    free(g);
}

static void rg_params_fini(struct op *op)
{
    free(op->u.ragged.q_lens);
    free(op->u.ragged.kv_lens);
}

const struct kern_kind kern_ragged_kind = {.init = rg_init, .data = rg_data, .verify = rg_verify,
                                          .fini = rg_fini, .params_fini = rg_params_fini};
