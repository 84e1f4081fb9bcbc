/* kernels/ragged3.c -- ragged paged attention v3 (vLLM TPU's kernel):
 * mixed prefill and decode over a paged KV cache whose K and V are packed
 * per head into one page array, with the new tokens' K/V written into the
 * cache by the kernel itself. Paraphrases vllm-project/tpu-inference
 * tpu_inference/kernels/ragged_paged_attention/v3/kernel.py at commit
 * b8692ff (docs/reference.md, "Ragged paged attention v3").
 *
 * Not a grid over head and q blocks as v2 (kernels/ragged.c): two
 * pallas_calls of grid (1,) ("arbitrary": one core), the decode-only
 * sequences (q_len 1, which vLLM's runner moves to the front of the batch)
 * and then the others ("mixed"). Each walks its sequences, their q blocks of
 * bq_sz tokens (all KV heads at once) and, per q block, the kv blocks of
 * bkv_sz tokens up to the causal end of the block: each kv block is one DMA
 * per page of only the tokens the sequence has in the cache, plus one DMA
 * of the new tokens' K/V, double buffered with the next block prefetched
 * across q blocks and sequences; the new tokens go back to their cache pages
 * from VMEM (one DMA per page touched) on the last q block. The work of a kv
 * block runs in chunks of bkv_csz tokens (the whole chunk, masked past
 * kv_len) and q chunks of bq_csz tokens, per KV head: QK^T on
 * bq_csz x q heads per kv head rows, the softmax on the VPU/EUP, PV in f32. */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel.h"
#include "base/diag.h"
#include "models/hbm.h"
#include "base/xalloc.h"

enum { Q, KVNEW, CACHE, O }; /* operands */
enum { BKV, BQ, BO, LBUF, MBUF, ACC }; /* scratch */
enum { DEC, MIX }; /* the two calls: RpaCase.DECODE, RpaCase.MIXED */

/* (bq_sz, bkv_sz, bq_csz, bkv_csz) */
struct r3_blocks {
    int64_t bq, bkv, bqc, bkvc;
};

struct r3;
struct r3_call {
    const struct r3 *g;
    struct r3_blocks b;
    int64_t bkv_p;  /* pages per kv block */
    int64_t first, n; /* its sequences: order[first .. first + n) */
    bool causal;
};

struct r3 {
    struct op_ragged p;
    int64_t S, T, pps, kvp, qp;  /* sequences, tokens, pages per sequence, packings */
    int64_t kvh, ratio_p, Dp, stride; /* kv heads, q heads per kv head (aligned), head dim,
                                         packed K+V rows per token */
    int64_t *order, *cu;          /* decodes first; cu_q_lens of that order */
    uint64_t row_bytes;           /* one token's K+V row */
    struct r3_call call[2];
};

struct r3_state {
    int64_t bq_sem, bkv_sem, bo_sem;
    int nbkv[2], nupd[2], nbq[2], nbo[2]; /* live handles per slot */
    int64_t upd_seq[2], upd_off[2], upd_sz[2];
    int64_t bkv_off[2], bkv_new[2];     /* what the fetch in a slot returns */
    void *h[];                          /* [bkv 2 x (P+1)][upd 2 x (P+1)][bq 2][bo 2] */
};

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static int64_t align_to(int64_t x, int64_t a)
{
    return cdiv(x, a) * a;
}

static int64_t next_pow2(int64_t x)
{
    int64_t v = 1;
    while (v < x)
        v *= 2;
    return v;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* ------------------------------------------------------------ DMAs */

struct r3_run {
    struct pl_ctx *ctx;
    const struct r3 *g;
    const struct r3_call *c;
    struct r3_state *st;
};

static void **r3_slot(const struct r3_run *r, int kind, int64_t slot)
{
    int64_t P = r->c->bkv_p + 1;
    switch (kind) {
    case 0:
        return &r->st->h[slot * P];
    case 1:
        return &r->st->h[2 * P + slot * P];
    case 2:
        return &r->st->h[4 * P + slot];
    default:
        return &r->st->h[4 * P + 2 + slot];
    }
}

static void r3_wait_all(const struct r3_run *r, int kind, int64_t slot, int *n)
{
    void **h = r3_slot(r, kind, slot);
    for (int i = 0; i < *n; i++) {
        pl_dma_wait(r->ctx, h[i]);
        h[i] = NULL;
    }
    *n = 0;
}

/* 'tokens' K+V rows of the cache layout (whole 32-bit words, head_dim
 * aligned to 128: the packing leaves no padding). */
static uint64_t r3_kv_bytes(const struct r3 *g, const struct chip_params *chip, int64_t tokens)
{
    int64_t dims[2] = {tokens * g->stride, g->Dp};
    return hbm_dma_bytes(chip, DT_F32, 2, dims);
}

/* q or o of 'tokens' tokens: [kv heads, tokens, q heads per kv head / packing] words. */
static uint64_t r3_q_bytes(const struct r3 *g, const struct chip_params *chip, int64_t tokens)
{
    int64_t dims[3] = {g->kvh, tokens * g->ratio_p / g->qp, g->Dp};
    return hbm_dma_bytes(chip, DT_F32, 3, dims);
}

static void r3_wait_update(const struct r3_run *r, int64_t slot)
{
    r3_wait_all(r, 1, slot, &r->st->nupd[slot]);
}

/* The scalar core's work to fetch one kv block: SGLang-JAX's measurement of
 * its copy of this kernel on TPU7x (sgl-project/sglang-jax pull request 1647,
 * 2026-09-11: a fetch of bkv_p = 16 pages and the new tokens' K/V, 17 DMAs,
 * "about 160 bundles of scalar bookkeeping") a bundle a cycle; per page slot
 * of the unrolled loop and the new tokens' DMA, each computing its size, page
 * index and addresses whether or not it copies anything. */
#define R3_FETCH_BUNDLES 160.0
#define R3_FETCH_SLOTS 17.0

double r3_fetch_bundles(int64_t bkv_p)
{
    return R3_FETCH_BUNDLES * (double)(bkv_p + 1) / R3_FETCH_SLOTS;
}

/* _fetch_bkv(start): the cached tokens of kv block 'bkv' page by page (a
 * page past them copies nothing and is not issued), then the new tokens;
 * first the scalar bookkeeping of the block's bkv_p + 1 copies. */
static void r3_fetch_bkv(const struct r3_run *r, int64_t seq, int64_t bkv, int64_t slot)
{
    const struct r3 *g = r->g;
    const struct r3_call *c = r->c;
    int64_t ps = g->p.page_size, q_len = g->cu[seq + 1] - g->cu[seq];
    int64_t kv_left = g->p.kv_lens[g->order[seq]] - bkv * c->b.bkv;
    int64_t from_cache = g->p.no_kv_update ? kv_left : max64(kv_left - q_len, 0);
    int64_t sz_cache = min64(from_cache, c->b.bkv);
    int64_t sz_new = min64(c->b.bkv - sz_cache, kv_left - from_cache);
    r3_wait_update(r, slot); /* the buffer is free once its update left */
    pl_scalar(r->ctx, r3_fetch_bundles(c->bkv_p));
    void **h = r3_slot(r, 0, slot);
    int n = 0;
    for (int64_t i = 0; i < c->bkv_p; i++) {
        int64_t sz = min64(max64(from_cache - i * ps, 0), ps);
        if (sz > 0) {
            uint64_t b = r3_kv_bytes(g, pl_chip(r->ctx), sz);
            h[n++] = pl_dma_start_useful(r->ctx, true, b, (uint64_t)sz * g->row_bytes);
        }
    }
    if (sz_new > 0) {
        uint64_t b = r3_kv_bytes(g, pl_chip(r->ctx), sz_new);
        h[n++] = pl_dma_start_useful(r->ctx, true, b, (uint64_t)sz_new * g->row_bytes);
    }
    r->st->nbkv[slot] = n;
    r->st->bkv_off[slot] = bkv * c->b.bkv + sz_cache;
    r->st->bkv_new[slot] = sz_new;
}

/* _update_kv_cache(start): the new tokens from VMEM to their pages. */
static void r3_update(const struct r3_run *r, int64_t slot, int64_t off, int64_t sz)
{
    int64_t ps = r->g->p.page_size, ignore = off % ps;
    void **h = r3_slot(r, 1, slot);
    int n = 0;
    for (int64_t p = off / ps; p < cdiv(off + sz, ps); p++) {
        int64_t part = min64(ps - ignore, sz);
        uint64_t b = r3_kv_bytes(r->g, pl_chip(r->ctx), part);
        h[n++] = pl_dma_start_useful(r->ctx, false, b, (uint64_t)part * r->g->row_bytes);
        sz -= part, ignore = 0;
    }
    r->st->nupd[slot] = n;
}

static void r3_fetch_bq(const struct r3_run *r, int64_t seq, int64_t bq, int64_t slot)
{
    const struct r3 *g = r->g;
    int64_t start = g->cu[seq] + bq * r->c->b.bq;
    int64_t sz = min64(r->c->b.bq, g->cu[seq + 1] - start);
    uint64_t b = r3_q_bytes(g, pl_chip(r->ctx), sz);
    r3_slot(r, 2, slot)[0] = pl_dma_start_useful(r->ctx, true, b, b);
    r->st->nbq[slot] = 1;
}

static void r3_send_bo(const struct r3_run *r, int64_t seq, int64_t bo, int64_t slot)
{
    const struct r3 *g = r->g;
    int64_t start = g->cu[seq] + bo * r->c->b.bq;
    int64_t sz = min64(r->c->b.bq, g->cu[seq + 1] - start);
    uint64_t b = r3_q_bytes(g, pl_chip(r->ctx), sz);
    r3_slot(r, 3, slot)[0] = pl_dma_start_useful(r->ctx, false, b, b);
    r->st->nbo[slot] = 1;
}

/* ------------------------------------------------------------ work */

/* One chunk: bkv_csz kv tokens against 'rows' q rows, for every KV head
 * (load_bkv, load_bq, flash_attention_step1_qk_softmax, _step2_pv). */
static void r3_chunk(const struct r3_run *r, int64_t rows)
{
    const struct r3 *g = r->g;
    int64_t cols = r->c->b.bkvc, D = g->Dp;
    bool causal = r->c->causal, sw = g->p.sliding_window > 0, cap = g->p.soft_cap > 0;
    /* kv words: one strided load, unpacked by 2 shifts and 2 narrowing casts
     * (f32 pages: two loads) */
    double unpack_alu = g->kvp > 1 ? 4 : 0, unpack_load = g->kvp > 1 ? 1 : 2;
    /* scale; soft cap; k span (iota, add), kv mask (cmp, and), v mask on v's
     * [cols, D] below; causal: q span (iota, div, add), cmp, and; window:
     * add, cmp, and; select; row max is XLU; exp(s - m): sub + EUP */
    double alu = 1 + (cap ? 2 : 0) + 4 + (causal ? 5 : 0) + (sw ? 3 : 0) + 1 + 1;
    double eup = 1 + (cap ? 1 : 0);
    for (int64_t h = 0; h < g->kvh; h++) {
        pl_vpu(r->ctx, cols, D, unpack_alu, unpack_load, 0, 0, 0);
        pl_vpu(r->ctx, cols, D, 3, 0, 0, 0, 0);       /* v = where(v_span < kv_len, v, 0) */
        pl_vpu(r->ctx, rows, D, 0, 1, 0, 0, 0);       /* load_bq */
        pl_matmul(r->ctx, rows, D, cols, g->p.kv_dt); /* q . k^T, q in the kv dtype */
        pl_vpu(r->ctx, rows, cols, alu, 0, 0, eup, 0);
        pl_vpu(r->ctx, rows, 128, 0, 0, 0, 0, 2);     /* row max, row sum */
        pl_matmul(r->ctx, rows, cols, D, DT_F32);     /* p (f32) . v */
        pl_vpu(r->ctx, rows, 128, 8, 2, 2, 1, 0);     /* m, l: max, exp(m_prev - m), l update */
        pl_vpu(r->ctx, rows, D, 2, 1, 1, 0, 0);       /* acc = exp_m_diff * acc + pv */
    }
}

/* The kv blocks of q block 'bq' of sequence 'seq' (compute_with_bq). */
static void r3_bq(const struct r3_run *r, int64_t seq, int64_t bq, int64_t num_bq, int64_t abq)
{
    const struct r3 *g = r->g;
    const struct r3_call *c = r->c;
    struct r3_state *st = r->st;
    int64_t end = c->first + c->n, kv_len = g->p.kv_lens[g->order[seq]];
    int64_t q_len = g->cu[seq + 1] - g->cu[seq], gap = kv_len - q_len, sw = g->p.sliding_window;
    int64_t processed_q = gap + bq * abq, abqc = min64(c->b.bqc, abq);
    int64_t start_bkv = sw ? max64(processed_q - sw, 0) / c->b.bkv : 0;
    int64_t eff = c->causal ? min64(kv_len, processed_q + abq) : kv_len;
    int64_t end_bkv = cdiv(eff, c->b.bkv);
    int64_t bq_sem = st->bq_sem;
    int64_t nseq = bq + 1 == num_bq ? seq + 1 : seq, nbq = bq + 1 == num_bq ? 0 : bq + 1;
    if (nseq < end) {
        st->bq_sem = 1 - bq_sem;
        r3_fetch_bq(r, nseq, nbq, st->bq_sem);
    }
    for (int64_t bkv = start_bkv; bkv < end_bkv; bkv++) {
        int64_t slot = st->bkv_sem;
        /* get_next_bkv_ids */
        bool last_bkv = bkv + 1 == end_bkv;
        int64_t nbq2 = last_bkv ? bq + 1 : bq;
        bool last_bq = nbq2 == num_bq;
        int64_t nseq2 = last_bq ? seq + 1 : seq, nbkv = bkv + 1;
        if (last_bkv)
            nbkv = sw ? max64(gap + (bq + 1) * abq - sw, 0) / c->b.bkv : 0;
        if (last_bq && nseq2 < end && sw) {
            int64_t nl = g->p.kv_lens[g->order[nseq2]] - (g->cu[nseq2 + 1] - g->cu[nseq2]);
            nbkv = max64(nl - sw, 0) / c->b.bkv;
        } else if (last_bq) {
            nbkv = 0;
        }
        if (nseq2 < end) {
            st->bkv_sem = 1 - slot;
            r3_fetch_bkv(r, nseq2, nbkv, st->bkv_sem);
        }
        if (bkv == start_bkv)
            r3_wait_all(r, 2, bq_sem, &st->nbq[bq_sem]);
        r3_wait_all(r, 0, slot, &st->nbkv[slot]);
        if (!g->p.no_kv_update && st->bkv_new[slot] > 0 && bq == num_bq - 1)
            r3_update(r, slot, st->bkv_off[slot], st->bkv_new[slot]);
        int64_t eff_b = max64(min64(eff - bkv * c->b.bkv, c->b.bkv), 0);
        for (int64_t l = 0; l < cdiv(eff_b, c->b.bkvc); l++)
            for (int64_t q0 = 0; q0 < abq; q0 += abqc)
                r3_chunk(r, abqc * g->ratio_p);
    }
    /* out = acc * reciprocal(l), cast and stored to the output buffer */
    pl_vpu(r->ctx, g->kvh * abq * g->ratio_p, g->Dp, 2, 2, 1, 0, 0);
    int64_t bo_sem = st->bo_sem;
    st->bo_sem = 1 - bo_sem;
    r3_wait_all(r, 3, bo_sem, &st->nbo[bo_sem]);
    r3_send_bo(r, seq, bq, bo_sem);
}

/* _ragged_paged_attention_kernel: the loop over the call's sequences. */
static void r3_body(struct pl_ctx *ctx, const int64_t *gi, void *user)
{
    (void)gi;
    const struct r3_call *c = user;
    const struct r3 *g = c->g;
    struct r3_run r = {ctx, g, c, pl_state(ctx)};
    int64_t end = c->first + c->n, sw = g->p.sliding_window;
    for (int64_t seq = c->first; seq < end; seq++) {
        int64_t q_len = g->cu[seq + 1] - g->cu[seq];
        int64_t abq = c->causal ? c->b.bq : 1, num_bq = cdiv(q_len, abq);
        if (seq == c->first) { /* prologue */
            int64_t gap = g->p.kv_lens[g->order[seq]] - q_len;
            r3_fetch_bq(&r, seq, 0, 0);
            r3_fetch_bkv(&r, seq, sw ? max64(gap - sw, 0) / c->b.bkv : 0, 0);
        }
        for (int64_t bq = 0; bq < num_bq; bq++)
            r3_bq(&r, seq, bq, num_bq, abq);
    }
    for (int64_t i = 0; i < 2 && c->n > 0; i++) { /* epilogue */
        r3_wait_all(&r, 3, i, &r.st->nbo[i]);
        r3_wait_update(&r, i);
    }
}

/* ------------------------------------------------------------ setup */

/* get_default_block_sizes (v5/v6 and v7/v8 rows; bkv_p = bkv_sz / page_size). */
static int r3_defaults(const struct r3 *g, const struct chip_params *chip, bool decode,
                       struct r3_blocks *b, char *err, size_t n)
{
    int gen = chip->generation;
    if (gen < 5 || gen > 8)
        return diag_fail(err, n, "Unsupported tpu_version=%d.", gen);
    int64_t kvh2 = next_pow2(align_to(2 * g->kvh, g->kvp));
    int64_t r = next_pow2(g->p.q_heads / g->p.kv_heads);
    int64_t max_q = next_pow2(g->T), max_kv = g->pps * g->p.page_size, ps = g->p.page_size;
    int64_t peak = (16ll << 20) * g->kvp / 4 / g->Dp / kvh2;
    if (decode) {
        b->bq = b->bqc = 1;
        b->bkv = b->bkvc = min64(peak, max_kv);
    } else if (gen <= 6) {
        b->bq = min64(1024 / r, max_q / 2), b->bkv = min64(1024, max_kv);
        b->bqc = min64(512 / r, max_q), b->bkvc = min64(512, align_to(max_kv / 2, ps));
    } else {
        b->bq = min64(2048 / r, max_q / 2), b->bkv = min64(2048, max_kv / 2);
        b->bqc = min64(1024 / r, max_q / 2), b->bkvc = min64(512, align_to(max_kv / 2, ps));
    }
    b->bq = max64(1, b->bq), b->bqc = max64(1, b->bqc);
    b->bkv = align_to(b->bkv, ps), b->bkvc = align_to(b->bkvc, ps);
    return 0;
}

/* _validate_block_sizes. */
static int r3_check_blocks(const struct r3_blocks *b, int64_t ps, const char *prefix, char *err,
                           size_t n)
{
    if (!(b->bqc > 0 && b->bq % b->bqc == 0))
        return diag_fail(err, n,
                         "%s bq_csz=%lld and bq_sz=%lld must satisfy (0 < bq_csz and bq_sz "
                         "%% bq_csz == 0).",
                         prefix, (long long)b->bqc, (long long)b->bq);
    if (!(b->bkvc > 0 && b->bkv % b->bkvc == 0))
        return diag_fail(err, n,
                         "%s bkv_csz=%lld and bkv_sz=%lld must satisfy (0 < bkv_csz and "
                         "bkv_sz %% bkv_csz == 0).",
                         prefix, (long long)b->bkvc, (long long)b->bkv);
    if (b->bkv % ps != 0)
        return diag_fail(err, n, "%s bkv_sz=%lld must be divisible by page_size=%lld.", prefix,
                         (long long)b->bkv, (long long)ps);
    if (b->bkvc % ps != 0)
        return diag_fail(err, n, "%s bkv_csz=%lld must be divisible by page_size=%lld.", prefix,
                         (long long)b->bkvc, (long long)ps);
    return 0;
}

/* static_validate_inputs and dynamic_validate_inputs. */
static int r3_check(const struct r3 *g, char *err, size_t n)
{
    const struct op_ragged *p = &g->p;
    if (p->q_heads % p->kv_heads != 0)
        return diag_fail(err, n,
                         "Expected actual_num_q_heads=%lld to be divisible by "
                         "actual_num_kv_heads=%lld.",
                         (long long)p->q_heads, (long long)p->kv_heads);
    if (p->kv_dt == DT_INT8 || p->kv_dt == DT_INT32)
        return diag_fail(err, n, "Expected kv_cache.dtype=%s to be a floating point.",
                         dtype_name(p->kv_dt));
    if (p->page_size % g->kvp != 0)
        return diag_fail(err, n, "page_size=%lld must be divisible by kv_packing=%lld.",
                         (long long)p->page_size, (long long)g->kvp);
    for (int i = 0; i < p->nseqs; i++) {
        if (!(p->q_lens[i] > 0 && p->q_lens[i] <= p->kv_lens[i]))
            return diag_fail(err, n, "Require 0 < q_len=%lld <= kv_len=%lld at sequence %d.",
                             (long long)p->q_lens[i], (long long)p->kv_lens[i], i);
        if (cdiv(p->kv_lens[i], p->page_size) > g->pps)
            return diag_fail(err, n,
                             "Require page_cnt=%lld <= pages_per_seq=%lld at sequence %d where "
                             "kv_len=%lld and page_size=%lld.",
                             (long long)cdiv(p->kv_lens[i], p->page_size), (long long)g->pps, i,
                             (long long)p->kv_lens[i], (long long)p->page_size);
    }
    return 0;
}

/* Decodes (q_len 1) first, in their order, then the others: the runner's
 * _reorder_batch, which makes request_distribution (d, d, S). */
static void r3_order(struct r3 *g)
{
    int64_t k = 0;
    g->order = xcalloc((size_t)g->S, sizeof *g->order);
    g->cu = xcalloc((size_t)g->S + 1, sizeof *g->cu);
    for (int pass = 0; pass < 2; pass++)
        for (int64_t s = 0; s < g->S; s++)
            if ((g->p.q_lens[s] == 1) == (pass == 0))
                g->order[k++] = s;
    for (int64_t s = 0; s < g->S; s++)
        g->cu[s + 1] = g->cu[s] + g->p.q_lens[g->order[s]];
    int64_t nd = 0;
    while (nd < g->S && g->p.q_lens[g->order[nd]] == 1)
        nd++;
    g->call[DEC].first = 0, g->call[DEC].n = nd;
    g->call[MIX].first = nd, g->call[MIX].n = g->S - nd;
    g->call[MIX].causal = true;
}

/* get_smem_estimate_bytes. */
static uint64_t r3_smem_bytes(const struct r3 *g)
{
    int64_t bits = align_to(g->S, 128) * 32 + align_to(g->S * g->pps, 128) * 32 +
                   align_to(g->S + 1, 128) * 32 + 4 * 128 * 32;
    return (uint64_t)cdiv(bits, 8);
}

static void r3_build(struct kern *k, struct r3 *g, int which)
{
    const struct op_ragged *p = &g->p;
    struct r3_call *rc = &g->call[which];
    rc->g = g;
    struct pl_call *c = &k->calls[which];
    enum dtype odt = p->dt; /* out_dtype: the q dtype (f32 stays f32) */
    int64_t rows = rc->b.bq * g->ratio_p, pages = g->S * g->pps * p->page_size;
    c->name = k->op->name;
    c->ngrid = 1, c->grid[0] = 1;
    c->noperands = 4;
    c->operands[Q] = (struct pl_operand){.name = "q", .dir = PL_IN, .space = PL_ANY,
                                         .dt = p->dt, .rank = 3,
                                         .shape = {g->kvh, g->T * g->ratio_p, g->Dp}};
    c->operands[KVNEW] = (struct pl_operand){.name = "kv", .dir = PL_IN, .space = PL_ANY,
                                             .dt = p->kv_dt, .rank = 3,
                                             .shape = {g->T, g->stride * g->kvp, g->Dp}};
    c->operands[CACHE] = (struct pl_operand){.name = "kv_cache", .dir = PL_IN, .space = PL_ANY,
                                             .dt = p->kv_dt, .rank = 3,
                                             .shape = {pages, g->stride * g->kvp, g->Dp}};
    c->operands[O] = c->operands[Q];
    c->operands[O].name = "o", c->operands[O].dir = PL_OUT;
    /* has_bank_conflicts: an even stride of 32-bit rows gets one more */
    int64_t bstride = g->stride + (g->stride % 2 == 0 ? 1 : 0);
    c->nscratch = 6;
    c->scratch[BKV] = (struct pl_scratch){.name = "bkv_x2", .space = PL_VMEM, .dt = DT_F32,
                                          .rank = 3, .shape = {2, rc->b.bkv * bstride, g->Dp}};
    c->scratch[BQ] = (struct pl_scratch){.name = "bq_x2", .space = PL_VMEM, .dt = DT_F32,
                                         .rank = 3,
                                         .shape = {2 * g->kvh, rows / g->qp, g->Dp}};
    c->scratch[BO] = c->scratch[BQ];
    c->scratch[BO].name = "bo_x2";
    c->scratch[LBUF] = (struct pl_scratch){.name = "l", .space = PL_VMEM, .dt = odt, .rank = 3,
                                           .shape = {g->kvh, rows, 128}};
    c->scratch[MBUF] = c->scratch[LBUF];
    c->scratch[MBUF].name = "m";
    c->scratch[ACC] = (struct pl_scratch){.name = "acc", .space = PL_VMEM, .dt = odt,
                                          .rank = 3, .shape = {g->kvh, rows, g->Dp}};
    c->body = r3_body;
    c->user = rc;
    c->manual = true;
    c->smem_prefetch_bytes = r3_smem_bytes(g);
    c->vmem_limit_bytes = k->op->vmem_limit_bytes ? k->op->vmem_limit_bytes
                                                  : k->chip->vmem_bytes;
    c->state_bytes = sizeof(struct r3_state) + sizeof(void *) * (size_t)(4 * (rc->bkv_p + 1) + 4);
}

static int r3_blocks_of(struct r3 *g, const struct chip_params *chip, int which, char *err,
                        size_t n)
{
    const int64_t *given = which == DEC ? g->p.d_block_sizes : g->p.m_block_sizes;
    struct r3_blocks *b = &g->call[which].b;
    if (!given[0]) { /* the defaults are not validated (a bq_csz above bq_sz is cut to it) */
        if (r3_defaults(g, chip, which == DEC, b, err, n) != 0)
            return -1;
    } else {
        b->bq = given[0], b->bkv = given[1], b->bqc = given[2], b->bkvc = given[3];
        if (r3_check_blocks(b, g->p.page_size, which == DEC ? "decode" : "mixed", err, n) != 0)
            return -1;
    }
    g->call[which].bkv_p = b->bkv / g->p.page_size;
    return 0;
}

static int r3_init(struct kern *k, char *err, size_t n)
{
    struct r3 *g = xcalloc(1, sizeof *g);
    k->impl = g;
    g->p = k->op->u.ragged;
    const struct op_ragged *p = &g->p;
    if (k->functional)
        return diag_fail(err, n, "ragged_paged_attention_v3: functional mode is not modelled "
                                 "(ragged_paged_attention, RPA v2, has it)");
    g->S = p->nseqs;
    g->pps = cdiv(p->max_model_len, p->page_size);
    g->kvp = 4 / dtype_bytes(p->kv_dt), g->qp = 4 / dtype_bytes(p->dt);
    if (r3_check(g, err, n) != 0)
        return -1;
    g->kvh = p->kv_heads;
    g->ratio_p = align_to(p->q_heads / p->kv_heads, g->qp);
    g->Dp = align_to(p->head_dim, 128);
    g->stride = align_to(2 * g->kvh, g->kvp) / g->kvp;
    g->row_bytes = (uint64_t)(g->stride * g->Dp * 4);
    r3_order(g);
    int64_t total = g->cu[g->S];
    g->T = p->max_num_batched_tokens ? p->max_num_batched_tokens : total;
    if (total > g->T)
        return diag_fail(err, n, "Total q tokens %lld must be <= max_num_tokens=%lld.",
                         (long long)total, (long long)g->T);
    if (r3_blocks_of(g, k->chip, DEC, err, n) != 0 || r3_blocks_of(g, k->chip, MIX, err, n) != 0)
        return -1;
    if (kern_check_smem(k, r3_smem_bytes(g), "kv_lens, page_indices, cu_q_lens", err, n) != 0)
        return -1;
    k->ncalls = 2;
    r3_build(k, g, DEC);
    r3_build(k, g, MIX);
    return 0;
}

static void r3_fini(struct kern *k)
{
    struct r3 *g = k->impl;
    if (!g)
        return;
    free(g->order), free(g->cu);
    free(g);
}

static void r3_params_fini(struct op *op)
{
    free(op->u.ragged.q_lens);
    free(op->u.ragged.kv_lens);
}

const struct kern_kind kern_ragged3_kind = {.init = r3_init, .fini = r3_fini,
                                            .params_fini = r3_params_fini};
