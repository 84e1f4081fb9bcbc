/* kernels/paged.c -- jax paged_attention: decode over a paged KV cache.
 * Paraphrases jax-ml/jax jax/experimental/pallas/ops/tpu/paged_attention/
 * paged_attention_kernel.py (docs/pallas-semantics.md section 5). One pallas_call:
 * grid (num_cores, B', Hkv') (P, A, A) with the sequence loop inline, or
 * (num_cores, B', Hkv', pages_per_seq/ppcb) (P, A, A, A); q, o, m, l are
 * BlockSpec'd (groups x D per (b, h)); k/v pages stay in HBM and each compute
 * block is ppcb page DMAs for k and ppcb for v (plus ppcb scale DMAs each when
 * int8), double-buffered by hand with the next block prefetched across (b, h).
 * Work model per block of bk = ppcb x page_size tokens: QK^T [groups x bk] and
 * PV [groups x D] as f32 matmuls (upstream casts q, k and v to f32), mask and
 * online softmax on the VPU/EUP, k/v cast (and dequantised) on the VPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel.h"
#include "base/diag.h"
#include "models/hbm.h"
#include "base/check.h"
#include "base/xalloc.h"

enum { Q, KP, VP, KS, VS };        /* operands, then o, m, l at g->io; KS/VS only when int8 */
enum { KBUF, VBUF, KSBUF, VSBUF }; /* scratch; the scales only when int8 */

/* upstream DEFAULT_MASK_VALUE = -0.7 * float32 max */
#define PG_MASK_VALUE (-0.7f * 3.40282347e38f)
#define PG_MAX_INT8 127.5f /* quantization_utils.MAX_INT8 */

struct pg {
    struct op_paged p; /* lengths borrowed from the op */
    int64_t groups, bk, nblk, ncores, b_step, h_step;
    bool quant, q_f32;     /* int8 pages; q launched as f32 (groups % 8 != 0) */
    enum dtype odt;        /* q and o dtype inside the kernel */
    int32_t *page_indices; /* [B * pages_per_seq], owned */
    int64_t total_pages;
    uint64_t page_bytes, scale_bytes; /* one page DMA of k (or v), of its scales */
    int per_slot;                     /* DMA handles of one slot for k (or v) */
    int io;                           /* operand index of o (m, l follow) */
    /* functional mode: host arrays, owned */
    float *q, *k, *v, *ks, *vs, *o, *m, *l;
};

/* Per-core state (upstream's mutable scalar prefetch and DMA semaphores). */
struct pg_state {
    bool started; /* init_flag == 0 */
    int buf;      /* buffer_index */
    void *h[];    /* [2 slots][k, v][per_slot] handles */
};

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* The (b, h) a grid point maps to: interleaved over cores (L152-161). */
static void pg_bh(const struct pg *g, const int64_t *gi, int64_t *b, int64_t *h)
{
    int64_t c = gi[0];
    *b = g->p.megacore_mode == MEGACORE_BATCH ? gi[1] * g->ncores + c : gi[1];
    *h = g->p.megacore_mode == MEGACORE_KV_HEAD ? gi[2] * g->ncores + c : gi[2];
}

/* q/o/m/l block index: the q_block_spec index maps (L490-521). */
static void pg_qmap(const int64_t *gi, const void *user, int64_t *bi)
{
    int64_t b, h;
    pg_bh(user, gi, &b, &h);
    bi[0] = b, bi[1] = h, bi[2] = 0, bi[3] = 0;
}

static void **pg_handles(struct pg_state *st, const struct pg *g, int slot, int kv)
{
    return &st->h[(slot * 2 + kv) * g->per_slot];
}

/* Functional mode: what the DMA of page 'page' of kv head 'h' brings into
 * slot 'slot', position 'p' of the k (kv = 0) or v buffer. */
static void pg_copy_page(struct pl_ctx *ctx, const struct pg *g, int kv, int64_t h, int64_t page,
                         int slot, int64_t p)
{
    int64_t ps = g->p.page_size, D = g->p.head_dim, ppcb = g->p.pages_per_compute_block;
    const float *src = (kv ? g->v : g->k) + (h * g->total_pages + page) * ps * D;
    float *dst = pl_scratch_buf(ctx, kv ? VBUF : KBUF) + ((slot * ppcb + p) * ps) * D;
    memcpy(dst, src, sizeof(float) * (size_t)(ps * D));
    if (!g->quant)
        return;
    const float *ssrc = (kv ? g->vs : g->ks) + (h * g->total_pages + page) * ps;
    float *sdst = pl_scratch_buf(ctx, kv ? VSBUF : KSBUF) + ((slot * ppcb + p) * ps) * D;
    for (int64_t r = 0; r < ps; r++) /* scales are broadcast to head_dim (L422) */
        for (int64_t d = 0; d < D; d++)
            sdst[r * D + d] = ssrc[r];
}

/* create_kv_async_copy_descriptors(b, h, i, slot).start() for k then v:
 * one DMA per page, then one per page of scales (MultiPageAsyncCopyDescriptor). */
static void pg_start(struct pl_ctx *ctx, const struct pg *g, struct pg_state *st, int64_t b,
                     int64_t h, int64_t i, int slot)
{
    int64_t ppcb = g->p.pages_per_compute_block;
    const int32_t *pages = g->page_indices + b * g->p.pages_per_seq + i * ppcb;
    for (int kv = 0; kv < 2; kv++) {
        void **hs = pg_handles(st, g, slot, kv);
        for (int64_t p = 0; p < ppcb; p++) {
            hs[p] = pl_dma_start(ctx, true, g->page_bytes);
            if (pl_functional(ctx))
                pg_copy_page(ctx, g, kv, h, pages[p], slot, p);
        }
        for (int64_t p = 0; g->quant && p < ppcb; p++)
            hs[ppcb + p] = pl_dma_start(ctx, true, g->scale_bytes);
    }
}

static void pg_wait(struct pl_ctx *ctx, const struct pg *g, struct pg_state *st, int slot, int kv)
{
    void **hs = pg_handles(st, g, slot, kv);
    for (int j = 0; j < g->per_slot; j++) {
        TPU_ASSERT(hs[j] != NULL, "paged_attention: wait for a page DMA never started");
        pl_dma_wait(ctx, hs[j]);
        hs[j] = NULL;
    }
}

/* compute_block_indices(b, h, i) (L164-194): (b, h, i) itself if block i is
 * inside the sequence, else the next kv head of this core, else the next
 * batch entry of this core with a nonzero length. False past the batch. */
static bool pg_next(const struct pg *g, int64_t c, int64_t b, int64_t h, int64_t i, int64_t *nb,
                    int64_t *nh, int64_t *ni)
{
    const int64_t *len = g->p.lengths;
    int64_t B = g->p.batch;
    if (i * g->bk < len[b]) {
        *nb = b, *nh = h, *ni = i;
    } else if (h + g->h_step < g->p.kv_heads) {
        *nb = b, *nh = h + g->h_step, *ni = 0;
    } else {
        int64_t x = b + g->b_step;
        while (x < B && len[x] == 0)
            x += g->b_step;
        *nb = x, *ni = 0;
        *nh = g->p.megacore_mode == MEGACORE_KV_HEAD ? c : 0;
    }
    return *nb < B;
}

/* The VPU/MXU work of one compute block (see the file comment). */
static void pg_block_work(struct pl_ctx *ctx, const struct pg *g, int part)
{
    int64_t G = g->groups, bk = g->bk, D = g->p.head_dim;
    double cvt_alu = g->quant ? 4 : 1, cvt_load = g->quant ? 2 : 1;
    /* part 0 follows the k wait, part 1 the v wait; both cast (dequantise) the pages */
    pl_vpu(ctx, bk, D, cvt_alu, cvt_load, 0, 0, 0);
    if (part == 0) {
        pl_matmul(ctx, G, D, bk, DT_F32);
        pl_vpu(ctx, G, bk, 7, 0, 0, 1, 0);  /* iota+offset, cmp, where, add, max, sub, sum; exp */
        pl_vpu(ctx, G, 128, 0, 0, 0, 0, 2); /* the two row reductions across lanes */
        pl_vpu(ctx, G, D, 6, 2, 2, 2, 0);   /* m, l (held as groups x D): max, alpha, beta, l */
    } else {
        pl_matmul(ctx, G, bk, D, DT_F32);
        pl_vpu(ctx, G, D, 6, 1, 1, 0, 0); /* o = (l_prev alpha o + beta o_curr) / l_next */
    }
}

static float pg_kval(const struct pg *g, const float *buf, const float *sbuf, int64_t e)
{
    return g->quant ? buf[e] * sbuf[e] / PG_MAX_INT8 : buf[e];
}

/* Functional mode: the block's numbers, as upstream's flash_attention body
 * (L261-287) computes them from the slot's pages. */
static void pg_block_data(struct pl_ctx *ctx, const struct pg *g, int64_t len, int64_t i, int slot)
{
    int64_t G = g->groups, bk = g->bk, D = g->p.head_dim, n = bk * D;
    const float *q = pl_buf(ctx, Q);
    const float *k = pl_scratch_buf(ctx, KBUF) + slot * n,
                *v = pl_scratch_buf(ctx, VBUF) + slot * n;
    const float *ks = g->quant ? pl_scratch_buf(ctx, KSBUF) + slot * n : NULL;
    const float *vs = g->quant ? pl_scratch_buf(ctx, VSBUF) + slot * n : NULL;
    float *o = pl_buf(ctx, g->io), *m = pl_buf(ctx, g->io + 1), *l = pl_buf(ctx, g->io + 2);
    float *s = xmalloc(sizeof(float) * (size_t)bk);
    for (int64_t r = 0; r < G; r++) {
        float mc = -INFINITY;
        for (int64_t t = 0; t < bk; t++) {
            float acc = 0;
            for (int64_t d = 0; d < D; d++)
                acc += q[r * D + d] * pg_kval(g, k, ks, t * D + d);
            s[t] = acc + (i * bk + t < len ? 0.0f : PG_MASK_VALUE);
            mc = s[t] > mc ? s[t] : mc;
        }
        float lc = 0;
        for (int64_t t = 0; t < bk; t++)
            lc += s[t] = expf(s[t] - mc);
        float mp = m[r], lp = l[r], mn = mp > mc ? mp : mc;
        float alpha = expf(mp - mn), beta = expf(mc - mn), ln = alpha * lp + beta * lc;
        m[r] = mn, l[r] = ln;
        for (int64_t d = 0; d < D; d++) {
            float oc = 0;
            for (int64_t t = 0; t < bk; t++)
                oc += s[t] * pg_kval(g, v, vs, t * D + d);
            o[r * D + d] = pl_round((lp * alpha * o[r * D + d] + beta * oc) / ln, g->odt);
        }
    }
    free(s);
}

/* m = -inf, l = 0, o = 0 for a new (b, h). */
static void pg_init(struct pl_ctx *ctx, const struct pg *g)
{
    pl_vpu(ctx, g->groups, g->p.head_dim, 0, 0, 3, 0, 0);
    if (!pl_functional(ctx))
        return;
    for (int64_t r = 0; r < g->groups; r++)
        pl_buf(ctx, g->io + 1)[r] = -INFINITY, pl_buf(ctx, g->io + 2)[r] = 0;
    memset(pl_buf(ctx, g->io), 0, sizeof(float) * (size_t)(g->groups * g->p.head_dim));
}

/* paged_flash_attention_kernel's body for block i of (b, h) (L227-287). */
static void pg_block(struct pl_ctx *ctx, const struct pg *g, int64_t c, int64_t b, int64_t h,
                     int64_t i, bool init)
{
    struct pg_state *st = pl_state(ctx);
    bool init_flag = !st->started;
    st->started = true;
    int slot = st->buf;
    int64_t nb, nh, ni;
    bool more = pg_next(g, c, b, h, i + 1, &nb, &nh, &ni);
    if (init_flag)
        pg_start(ctx, g, st, b, h, i, slot);
    if (init)
        pg_init(ctx, g);
    if (more) {
        pg_start(ctx, g, st, nb, nh, ni, 1 - slot);
        st->buf = 1 - slot;
    }
    pl_vpu(ctx, g->groups, g->p.head_dim, 1, 1, 0, 0, 0); /* q to f32 */
    pg_wait(ctx, g, st, slot, 0);
    pg_block_work(ctx, g, 0);
    pg_wait(ctx, g, st, slot, 1);
    pg_block_work(ctx, g, 1);
    if (pl_functional(ctx))
        pg_block_data(ctx, g, g->p.lengths[b], i, slot);
}

/* inline_seq_dim: one grid step per (b, h), a loop over its blocks (L290-363). */
static void pg_body_inline(struct pl_ctx *ctx, const int64_t *gi, void *user)
{
    const struct pg *g = user;
    int64_t b, h;
    pg_bh(g, gi, &b, &h);
    pg_init(ctx, g);
    int64_t n = cdiv(g->p.lengths[b], g->bk);
    for (int64_t i = 0; i < n; i++)
        pg_block(ctx, g, gi[0], b, h, i, false);
}

/* One grid step per block; steps past the length do nothing (L227). */
static void pg_body_steps(struct pl_ctx *ctx, const int64_t *gi, void *user)
{
    const struct pg *g = user;
    int64_t b, h, i = gi[3];
    pg_bh(g, gi, &b, &h);
    if (i * g->bk < g->p.lengths[b])
        pg_block(ctx, g, gi[0], b, h, i, i == 0);
}

/* upstream's argument checks (L440-483), then the simulator's own. */
static int pg_check(const struct kern *k, const struct pg *g, char *err, size_t n)
{
    const struct op_paged *p = &g->p;
    if (p->q_heads % p->kv_heads != 0) {
        return diag_fail(err, n,
                "Number of Q heads must be divisible by number of KV heads. Got %lld and %lld.",
                (long long)p->q_heads, (long long)p->kv_heads);
    }
    if (p->pages_per_seq % p->pages_per_compute_block != 0) {
        return diag_fail(err, n,
                "pages_per_compute_block must be divisible by pages per sequence. Got %lld and "
                "%lld.",
                (long long)p->pages_per_compute_block, (long long)p->pages_per_seq);
    }
    if (p->megacore_mode == MEGACORE_KV_HEAD && p->kv_heads % 2 != 0) {
        return diag_fail(err, n, "number of KV heads must be even when megacore_mode is 'kv_head'");
    }
    if (p->megacore_mode == MEGACORE_BATCH && p->batch % 2 != 0) {
        return diag_fail(err, n, "batch size must be even when megacore_mode is 'batch'");
    }
    if (p->megacore_mode != MEGACORE_NONE && !(k->chip->megacore && k->chip->cores == 2)) {
        return diag_fail(err, n,
                "megacore_mode '%s' needs a megacore chip (v4, v5p): on %s both core_index "
                "values run on one TensorCore and the second waits for a prefetch that was never "
                "issued (upstream: \"set this only if megacore is enabled, otherwise the kernel "
                "may hang\")",
                p->megacore_mode == MEGACORE_KV_HEAD ? "kv_head" : "batch", k->chip->name);
    }
    int64_t max_len = p->pages_per_seq * p->page_size;
    for (int64_t b = 0; b < p->batch; b++) {
        if (p->lengths[b] < 0 || p->lengths[b] > max_len) {
            return diag_fail(err, n,
                             "length %lld of sequence %lld is not in [0, pages_per_seq x "
                             "page_size = %lld]",
                             (long long)p->lengths[b], (long long)b, (long long)max_len);
        }
    }
    return 0;
}

/* Page table [B, pages_per_seq] over B x pages_per_seq pages (as upstream's
 * test): in order, or a seeded permutation. */
static void pg_pages(struct pg *g)
{
    int64_t n = g->p.batch * g->p.pages_per_seq;
    g->total_pages = n;
    g->page_indices = xcalloc((size_t)n, sizeof *g->page_indices);
    for (int64_t i = 0; i < n; i++)
        g->page_indices[i] = (int32_t)i;
    for (int64_t i = n - 1; g->p.shuffled_pages && i > 0; i--) {
        double u = (kern_rand(g->p.seed ^ 0x9a6e5ull, (uint64_t)i) + 1.0) / 2.0;
        int64_t j = (int64_t)(u * (double)(i + 1));
        j = j > i ? i : j;
        int32_t t = g->page_indices[i];
        g->page_indices[i] = g->page_indices[j], g->page_indices[j] = t;
    }
}

static void pg_operand(struct pl_operand *o, const char *name, enum pl_dir dir, enum dtype dt,
                       const struct pg *g, int64_t minor)
{
    int64_t B = g->p.batch, H = g->p.q_heads;
    *o =
        (struct pl_operand){.name = name, .dir = dir, .space = PL_VMEM, .dt = dt, .index = pg_qmap};
    if (g->q_f32) { /* q reshaped to [B, Hq, 1, D] (L486-505) */
        o->rank = 4;
        o->shape[0] = B, o->shape[1] = H, o->shape[2] = 1, o->shape[3] = minor;
        o->block[0] = PL_SQUEEZED, o->block[1] = g->groups, o->block[2] = PL_SQUEEZED;
        o->block[3] = minor;
    } else {
        o->rank = 3;
        o->shape[0] = B, o->shape[1] = H, o->shape[2] = minor;
        o->block[0] = PL_SQUEEZED, o->block[1] = g->groups, o->block[2] = minor;
    }
}

static void pg_pages_operand(struct pl_operand *o, const char *name, enum dtype dt,
                             const struct pg *g, int64_t minor)
{
    *o = (struct pl_operand){.name = name,
                             .dir = PL_IN,
                             .space = PL_ANY,
                             .dt = dt,
                             .rank = 4,
                             .shape = {g->p.kv_heads, g->total_pages, g->p.page_size, minor}};
}

static void pg_scratch(struct pl_scratch *s, const char *name, enum dtype dt, const struct pg *g)
{
    *s = (struct pl_scratch){
        .name = name,
        .space = PL_VMEM,
        .dt = dt,
        .rank = 4,
        .shape = {2, g->p.pages_per_compute_block, g->p.page_size, g->p.head_dim}};
}

/* The scalar prefetch: lengths, page_indices, and two scalars. */
static uint64_t pg_smem_bytes(const struct op_paged *p)
{
    return (uint64_t)(4 * p->batch + 4 * p->batch * p->pages_per_seq + 4 + 4);
}

static void pg_build(struct kern *k, struct pg *g)
{
    const struct op_paged *p = &g->p;
    struct pl_call *c = &k->calls[0];
    k->ncalls = 1;
    c->name = k->op->name;
    c->grid[0] = g->ncores;
    c->grid[1] = p->megacore_mode == MEGACORE_BATCH ? p->batch / g->ncores : p->batch;
    c->grid[2] = p->megacore_mode == MEGACORE_KV_HEAD ? p->kv_heads / g->ncores : p->kv_heads;
    c->grid[3] = g->nblk;
    c->ngrid = p->inline_seq_dim ? 3 : 4;
    c->sem[0] = PL_PARALLEL; /* the rest stay arbitrary */
    c->noperands = g->quant ? 8 : 6;
    int out = g->io;
    pg_operand(&c->operands[Q], "q", PL_IN, g->odt, g, p->head_dim);
    pg_pages_operand(&c->operands[KP], "k_pages", p->kv_dt, g, p->head_dim);
    pg_pages_operand(&c->operands[VP], "v_pages", p->kv_dt, g, p->head_dim);
    if (g->quant) {
        pg_pages_operand(&c->operands[KS], "k_scales_pages", p->dt, g, p->head_dim);
        pg_pages_operand(&c->operands[VS], "v_scales_pages", p->dt, g, p->head_dim);
    }
    pg_operand(&c->operands[out], "o", PL_OUT, g->odt, g, p->head_dim);
    pg_operand(&c->operands[out + 1], "m", PL_OUT, DT_F32, g, 1);
    pg_operand(&c->operands[out + 2], "l", PL_OUT, DT_F32, g, 1);
    c->nscratch = g->quant ? 4 : 2;
    pg_scratch(&c->scratch[KBUF], "k_pages buffer", p->kv_dt, g);
    pg_scratch(&c->scratch[VBUF], "v_pages buffer", p->kv_dt, g);
    if (g->quant) {
        pg_scratch(&c->scratch[KSBUF], "k_scales_pages buffer", p->dt, g);
        pg_scratch(&c->scratch[VSBUF], "v_scales_pages buffer", p->dt, g);
    }
    c->body = p->inline_seq_dim ? pg_body_inline : pg_body_steps;
    c->user = g;
    c->manual = true;
    /* lengths, page_indices, buffer_index, init_flag (L638-641) */
    c->smem_prefetch_bytes = pg_smem_bytes(p);
    c->state_bytes = sizeof(struct pg_state) + sizeof(void *) * (size_t)(4 * g->per_slot);
}

static int pg_init_kind(struct kern *k, char *err, size_t n)
{
    struct pg *g = xcalloc(1, sizeof *g);
    k->impl = g;
    g->p = k->op->u.paged;
    const struct op_paged *p = &g->p;
    if (pg_check(k, g, err, n) != 0)
        return -1;
    g->groups = p->q_heads / p->kv_heads;
    g->bk = p->page_size * p->pages_per_compute_block;
    g->nblk = p->pages_per_seq / p->pages_per_compute_block;
    g->ncores = p->megacore_mode == MEGACORE_NONE ? 1 : 2;
    g->b_step = p->megacore_mode == MEGACORE_BATCH ? g->ncores : 1;
    g->h_step = p->megacore_mode == MEGACORE_KV_HEAD ? g->ncores : 1;
    g->quant = p->kv_dt == DT_INT8;
    g->q_f32 = g->groups % 8 != 0;
    g->odt = g->q_f32 ? DT_F32 : p->dt;
    g->io = g->quant ? 5 : 3;
    g->per_slot = (int)(p->pages_per_compute_block * (g->quant ? 2 : 1));
    int64_t page[2] = {p->page_size, p->head_dim};
    g->page_bytes = hbm_dma_bytes(k->chip, p->kv_dt, 2, page);
    g->scale_bytes = hbm_dma_bytes(k->chip, p->dt, 2, page);
    /* the scalar prefetch is checked before the page table is built: a
     * table too large for SMEM can be terabytes of host memory */
    if (kern_check_smem(k, pg_smem_bytes(p), "lengths, page_indices", err, n) != 0)
        return -1;
    pg_pages(g);
    pg_build(k, g);
    return 0;
}

/* int8 pages as quantize_to_int8 makes them: per-row scale max|x| (in the q
 * dtype), weight rint(x * 127.5 / scale), saturated. */
static void pg_quantize(float *w, float *s, int64_t rows, int64_t D, enum dtype sdt)
{
    for (int64_t r = 0; r < rows; r++) {
        float mx = 0;
        for (int64_t d = 0; d < D; d++)
            mx = fabsf(w[r * D + d]) > mx ? fabsf(w[r * D + d]) : mx;
        s[r] = pl_round(mx > 0 ? mx : 1.0f, sdt);
        for (int64_t d = 0; d < D; d++)
            w[r * D + d] = pl_round(rintf(w[r * D + d] * (PG_MAX_INT8 / s[r])), DT_INT8);
    }
}

static void pg_data(struct kern *k, uint64_t seed)
{
    struct pg *g = k->impl;
    const struct op_paged *p = &g->p;
    int64_t nq = p->batch * p->q_heads * p->head_dim;
    int64_t rows = p->kv_heads * g->total_pages * p->page_size, nkv = rows * p->head_dim;
    enum dtype kdt = g->quant ? DT_F32 : p->kv_dt;
    g->q = kern_rand_array(seed, nq, p->dt, 1.0f);
    g->k = kern_rand_array(seed + 1, nkv, kdt, 1.0f);
    g->v = kern_rand_array(seed + 2, nkv, kdt, 1.0f);
    if (g->quant) {
        g->ks = xmalloc(sizeof(float) * (size_t)rows);
        g->vs = xmalloc(sizeof(float) * (size_t)rows);
        pg_quantize(g->k, g->ks, rows, p->head_dim, p->dt);
        pg_quantize(g->v, g->vs, rows, p->head_dim, p->dt);
    }
    g->o = xcalloc((size_t)nq, sizeof(float));
    g->m = xcalloc((size_t)(p->batch * p->q_heads), sizeof(float));
    g->l = xcalloc((size_t)(p->batch * p->q_heads), sizeof(float));
    struct pl_call *c = &k->calls[0];
    c->operands[Q].data = g->q, c->operands[KP].data = g->k, c->operands[VP].data = g->v;
    if (g->quant)
        c->operands[KS].data = g->ks, c->operands[VS].data = g->vs;
    int out = g->io;
    c->operands[out].data = g->o, c->operands[out + 1].data = g->m, c->operands[out + 2].data = g->l;
}

/* Token t of sequence b, kv head h, dim d, dequantised (f32). */
static double pg_ref_kv(const struct pg *g, const float *x, const float *s, int64_t b, int64_t h,
                        int64_t t, int64_t d)
{
    int64_t ps = g->p.page_size, D = g->p.head_dim;
    int64_t page = g->page_indices[b * g->p.pages_per_seq + t / ps];
    int64_t row = (h * g->total_pages + page) * ps + t % ps;
    return g->quant ? (double)(x[row * D + d] * s[row] / PG_MAX_INT8) : x[row * D + d];
}

/* Naive attention of one (b, q head) over the gathered pages; returns the worst error. */
static double pg_ref_row(const struct pg *g, int64_t b, int64_t hq, double *sc)
{
    int64_t D = g->p.head_dim, len = g->p.lengths[b], h = hq / g->groups;
    const float *q = g->q + (b * g->p.q_heads + hq) * D, *o = g->o + (b * g->p.q_heads + hq) * D;
    double mx = -INFINITY, sum = 0, worst = 0;
    for (int64_t t = 0; t < len; t++) {
        double a = 0;
        for (int64_t d = 0; d < D; d++)
            a += (double)q[d] * pg_ref_kv(g, g->k, g->ks, b, h, t, d);
        sc[t] = a;
        mx = a > mx ? a : mx;
    }
    for (int64_t t = 0; t < len; t++)
        sum += sc[t] = exp(sc[t] - mx);
    for (int64_t d = 0; d < D; d++) {
        double ref = 0;
        for (int64_t t = 0; t < len; t++)
            ref += sc[t] * pg_ref_kv(g, g->v, g->vs, b, h, t, d);
        ref = len > 0 ? ref / sum : 0.0;
        double e = fabs(o[d] - ref) / (fabs(ref) + 1.0);
        worst = e > worst ? e : worst;
    }
    return worst;
}

static double pg_verify(const struct kern *k, bool *ok, char *msg, size_t n)
{
    const struct pg *g = k->impl;
    const struct op_paged *p = &g->p;
    double tol = g->odt == DT_BF16 ? 2e-2 : 1e-4, worst = 0;
    double *sc = xmalloc(sizeof(double) * (size_t)(p->pages_per_seq * p->page_size + 1));
    int64_t wb = 0, wh = 0;
    for (int64_t b = 0; b < p->batch; b++) {
        /* a zero length leaves o as initialised (0) inline, unwritten otherwise */
        if (p->lengths[b] == 0 && !p->inline_seq_dim)
            continue;
        for (int64_t hq = 0; hq < p->q_heads; hq++) {
            double e = pg_ref_row(g, b, hq, sc);
            if (e > worst)
                worst = e, wb = b, wh = hq;
        }
    }
    free(sc);
    *ok = worst <= tol;
    if (!*ok)
        snprintf(msg, n,
                 "o differs from naive attention over the gathered pages by %.3g at batch %lld, "
                 "q head %lld (tolerance %.3g)",
                 worst, (long long)wb, (long long)wh, tol);
    return worst;
}

static void pg_fini(struct kern *k)
{
    struct pg *g = k->impl;
    if (!g)
        return;
    free(g->page_indices);
    free(g->q), free(g->k), free(g->v), free(g->ks), free(g->vs);
    free(g->o), free(g->m), free(g->l);
    free(g);
}

static void pg_params_fini(struct op *op)
{
    free(op->u.paged.lengths);
}

const struct kern_kind kern_paged_kind = {.init = pg_init_kind, .data = pg_data,
                                         .verify = pg_verify, .fini = pg_fini,
                                         .params_fini = pg_params_fini};
