/* kernels/splash.c -- splash attention's fwd, dq and dkv pallas_calls (jax
 * .../splash_attention/splash_attention_kernel.py, cited "K Lnnn", commit cec06d1),
 * driven block by block by kernels/maskinfo.c: the k/v/mask index maps read data_next
 * and mask_next as _next_nonzero does, so a skipped step costs a grid step but no
 * compute and keeps (or prefetches) the next real block.  The batch is upstream's
 * vmap: a leading parallel grid dim.  The XLA ops around the backward kernels (di,
 * the fused kernel's dq sum) run as two extra calls.  Semantics: docs/pallas-semantics.md section 4. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel.h"
#include "kernels/maskinfo.h"
#include "kernels/tune.h"
#include "base/check.h"
#include "base/xalloc.h"

#define LANES 128  /* NUM_LANES, K L39 */
#define SUBLANES 8 /* NUM_SUBLANES, K L40 */

/* Ops of one jnp.floor_divide of int32 vectors: div, rem, sign, two compares, and,
 * subtract, select (jax numpy floor_divide for integers); div and rem counted as
 * one VPU op each. */
#define FLOOR_DIV_OPS 8.0

enum dir { D_FWD, D_DQ, D_DKV, NDIR };
enum call_kind { C_FWD, C_PREP, C_DKV, C_DQ, C_DQSUM };

/* Logical operands; callctx.at maps them to operand indices (-1: absent). */
/* clang-format off */
enum slot {
    S_Q, S_K, S_V, S_QSEG, S_KVSEG, S_LSE, S_DO, S_DI, S_MASK, S_QSEQ, S_O,
    S_M, S_L, S_OACC, S_OUT, S_LSE_OUT, S_DQACC, S_DKACC, S_DVACC, S_DQ, S_DK, S_DV,
    S_DI8, S_LSE8, S_DI1, S_LSE1, S_DQU, NSLOT
};

/* Host arrays of functional mode, shared by the calls that read or write them. */
enum arr {
    A_FAKE = -1, A_Q, A_K, A_V, A_DO, A_QSEG_L, A_KVSEG_S, A_QSEG_S, A_KVSEG_L, A_MASK0,
    A_QSEQ0 = A_MASK0 + NDIR, A_OUT = A_QSEQ0 + NDIR, A_LSE, A_DI8, A_LSE8, A_DI1, A_LSE1,
    A_DQ, A_DK, A_DV, A_DQU, NARR
};
/* clang-format on */

/* One direction's MaskInfo and block sizes. */
struct dirinfo {
    struct mask_info mi;
    int64_t bq, bkv, bkv_c;
    bool has_mask; /* partial mask blocks are an operand */
};

struct splash;

/* What one pallas_call's index maps and body see as 'user'. */
struct callctx {
    const struct splash *s;
    const struct dirinfo *d; /* NULL for the XLA glue calls */
    enum call_kind kind;
    int64_t width; /* the mask-driven grid axis */
    int at[NSLOT];
    int arr[PL_MAX_OPERANDS];
};

struct splash {
    struct op_splash p;    /* copy; p.masks borrowed from the op */
    struct mask **heads;   /* [q_heads], borrowed masks */
    const struct mask *fn; /* the single computable mask (in-kernel mask function) */
    bool mqa, seg, batched, fused, bwd, fwd, residuals;
    int gb;         /* 1 when grid dim 0 is the batch */
    int64_t ratio;  /* q heads per kv head */
    enum dtype mdt; /* MXU input type: f32 operands are rounded to bf16 */
    struct dirinfo d[NDIR];
    char names[KERN_MAX_CALLS][64];
    struct callctx cc[KERN_MAX_CALLS];
    float *arr[NARR];
    int nfake;
    float *fake[KERN_MAX_CALLS * PL_MAX_OPERANDS];
};

static const float MASK_VALUE = (float)(-0.7 * (double)FLT_MAX); /* DEFAULT_MASK_VALUE, K L38 */

/* ---------------------------------------------------------------- metadata */

/* upstream _next_nonzero (K L550-594): a single MaskInfo row serves every head. */
struct nz {
    int64_t next, m;
    bool run, nomask;
};

static struct nz next_nonzero(const struct mask_info *mi, int64_t h, int64_t i, int64_t j)
{
    int64_t row = mi->rows == 1 ? 0 : h;
    size_t at = ((size_t)row * (size_t)mi->nq + (size_t)i) * (size_t)mi->nk + (size_t)j;
    struct nz z;
    z.next = mi->data_next[at];
    z.run = mi->block_mask[at] > 0;
    z.nomask = !mi->mask_next || mi->block_mask[at] != 1;
    z.m = mi->mask_next ? mi->mask_next[at] : 0;
    return z;
}

static int64_t seg_id(const struct op_splash *p, int64_t pos)
{
    for (int i = 0; i < p->nseg; i++) {
        if (pos < p->seg[i])
            return i;
        pos -= p->seg[i];
    }
    return p->nseg;
}

static bool allowed(const struct splash *s, int64_t h, int64_t q, int64_t kv)
{
    if (!mask_at(s->heads[h], q, kv))
        return false;
    return !s->seg || seg_id(&s->p, q) == seg_id(&s->p, kv);
}

/* ---------------------------------------------------------------- index maps */

static const struct callctx *CC(const void *user)
{
    return user;
}

/* Batched operands get the vmapped batch index first. */
static int64_t *bpre(const struct splash *s, const int64_t *G, int64_t *out)
{
    if (!s->batched)
        return out;
    out[0] = G[0];
    return out + 1;
}

static struct nz fwd_nz(const struct callctx *c, const int64_t *G)
{
    const int64_t *g = G + c->s->gb;
    return next_nonzero(&c->d->mi, g[0], g[1], g[2]);
}

/* dkv grid (kv, h, q): _next_nonzero(h, q, kv, next_i=True). */
static struct nz dkv_nz(const struct callctx *c, const int64_t *G)
{
    const int64_t *g = G + c->s->gb;
    return next_nonzero(&c->d->mi, g[1], g[2], g[0]);
}

static void ix_hi0(const int64_t *G, const void *u, int64_t *b) /* q, out, do, lse: (h, i, 0) */
{
    const struct splash *s = CC(u)->s;
    const int64_t *g = G + s->gb;
    int64_t *o = bpre(s, G, b);
    o[0] = g[0], o[1] = g[1], o[2] = 0;
}

static void ix_h0i(const int64_t *G, const void *u, int64_t *b) /* dq's lse, di: (h, 0, i) */
{
    const struct splash *s = CC(u)->s;
    const int64_t *g = G + s->gb;
    int64_t *o = bpre(s, G, b);
    o[0] = g[0], o[1] = 0, o[2] = g[1];
}

static void kv_block(const struct splash *s, int64_t h, int64_t kv, int64_t *o)
{
    if (s->mqa) { /* MQA: k is [Skv, D], no head prefix */
        o[0] = kv, o[1] = 0;
    } else {
        o[0] = h / s->ratio, o[1] = kv, o[2] = 0;
    }
}

static void ix_kv_next(const int64_t *G, const void *u, int64_t *b) /* fwd/dq k, v */
{
    const struct callctx *c = CC(u);
    kv_block(c->s, G[c->s->gb], fwd_nz(c, G).next, bpre(c->s, G, b));
}

static void ix_i0_b(const int64_t *G, const void *u, int64_t *b) /* q_seg (bq, 128) */
{
    const struct splash *s = CC(u)->s;
    int64_t *o = bpre(s, G, b);
    o[0] = G[s->gb + 1], o[1] = 0;
}

static void ix_i0_u(const int64_t *G, const void *u, int64_t *b) /* q_sequence (bq, 128) */
{
    b[0] = G[CC(u)->s->gb + 1], b[1] = 0;
}

static void ix_kvseg_next(const int64_t *G, const void *u, int64_t *b) /* kv_seg (8, bkv) */
{
    const struct callctx *c = CC(u);
    int64_t *o = bpre(c->s, G, b);
    o[0] = 0, o[1] = fwd_nz(c, G).next;
}

static void ix_mask_next(const int64_t *G, const void *u, int64_t *b) /* fwd/dq mask */
{
    b[0] = fwd_nz(CC(u), G).m, b[1] = 0, b[2] = 0;
}

static void ix_fake(const int64_t *G, const void *u, int64_t *b) /* batched m/l/acc */
{
    int64_t *o = bpre(CC(u)->s, G, b);
    o[0] = 0, o[1] = 0;
}

static void ix_dkv_q(const int64_t *G, const void *u, int64_t *b) /* q, do: (h, next_i, 0) */
{
    const struct callctx *c = CC(u);
    int64_t *o = bpre(c->s, G, b);
    o[0] = G[c->s->gb + 1], o[1] = dkv_nz(c, G).next, o[2] = 0;
}

static void ix_dkv_kv(const int64_t *G, const void *u, int64_t *b) /* k, v, dk, dv */
{
    const struct splash *s = CC(u)->s;
    kv_block(s, G[s->gb + 1], G[s->gb], bpre(s, G, b));
}

static void ix_dkv_lse(const int64_t *G, const void *u, int64_t *b) /* (h, 0, next_i) */
{
    const struct callctx *c = CC(u);
    int64_t *o = bpre(c->s, G, b);
    o[0] = G[c->s->gb + 1], o[1] = 0, o[2] = dkv_nz(c, G).next;
}

static void ix_dkv_qseg(const int64_t *G, const void *u, int64_t *b) /* (8, bq) at (0, next_i) */
{
    const struct callctx *c = CC(u);
    int64_t *o = bpre(c->s, G, b);
    o[0] = 0, o[1] = dkv_nz(c, G).next;
}

static void ix_dkv_qseq(const int64_t *G, const void *u, int64_t *b)
{
    b[0] = 0, b[1] = dkv_nz(CC(u), G).next;
}

static void ix_dkv_kvseg(const int64_t *G, const void *u, int64_t *b) /* (bkv, 128) at (kv, 0) */
{
    const struct splash *s = CC(u)->s;
    int64_t *o = bpre(s, G, b);
    o[0] = G[s->gb], o[1] = 0;
}

static void ix_dkv_mask(const int64_t *G, const void *u, int64_t *b)
{
    b[0] = dkv_nz(CC(u), G).m, b[1] = 0, b[2] = 0;
}

static void ix_dkv_dqu(const int64_t *G, const void *u, int64_t *b) /* (kv, h, q, 0) */
{
    const struct splash *s = CC(u)->s;
    const int64_t *g = G + s->gb;
    int64_t *o = bpre(s, G, b);
    o[0] = g[0], o[1] = g[1], o[2] = g[2], o[3] = 0;
}

static void ix_sum_dqu(const int64_t *G, const void *u, int64_t *b) /* dq_sum grid (h, i, kv) */
{
    const struct splash *s = CC(u)->s;
    const int64_t *g = G + s->gb;
    int64_t *o = bpre(s, G, b);
    o[0] = g[2], o[1] = g[0], o[2] = g[1], o[3] = 0;
}

/* ---------------------------------------------------------------- per-step work */

static double mask_fn_ops(const struct mask *m)
{
    switch (m->kind) {
    case MASK_CAUSAL: /* q >= kv, or q + offset >= kv */
        return m->offset ? 2 : 1;
    case MASK_LOCAL: { /* (q + offset) - left <= kv, (q + offset) + right >= kv, & */
        if (m->left < 0 && m->right < 0)
            return 0; /* a constant all-true array */
        double n = m->offset ? 1 : 0;
        n += m->left >= 0 ? 2 : 0;
        n += m->right >= 0 ? 2 : 0;
        return n + (m->left >= 0 && m->right >= 0 ? 1 : 0);
    }
    case MASK_CHUNKED: /* q // c == kv // c, q >= kv, & */
        return 2 * FLOOR_DIV_OPS + 3;
    default:
        return 0;
    }
}

/* _apply_mask_and_soft_cap (K L596-693) on a (rows, cols) logits tile held in
 * VMEM; 'lanes': kv runs along lanes (fwd, dq), else along sublanes (dkv). */
static void mask_work(struct pl_ctx *ctx, const struct callctx *c, int64_t rows, int64_t cols,
                      bool lanes)
{
    const struct splash *s = c->s;
    double alu = 0, load = 0;
    int n = 0;
    if (c->d->has_mask) { /* mask block: int32 -> bool, | should_not_mask */
        load += 1, alu += 2, n++;
    }
    if (s->fn) { /* k_offset + iota, then the mask function on q_sequence */
        alu += 2 + mask_fn_ops(s->fn), n++;
        pl_vpu(ctx, lanes ? rows : SUBLANES, lanes ? LANES : cols, 0, 1, 0, 0, 0);
    }
    if (s->seg) { /* q_ids == kv_ids on the tiled id blocks */
        alu += 1, n++;
        pl_vpu(ctx, lanes ? rows : SUBLANES, lanes ? LANES : cols, 0, 1, 0, 0, 0);
        pl_vpu(ctx, lanes ? SUBLANES : rows, lanes ? cols : LANES, 0, 1, 0, 0, 0);
    }
    if (n) /* n - 1 logical_and, one where(mask, qk, mask_value); qk in and out */
        pl_vpu(ctx, rows, cols, alu + n, load + 1, 1, 0, 0);
}

/* One bkv_compute sub-block of flash_attention_kernel's body (K L756-827). */
static void fwd_sub_work(struct pl_ctx *ctx, const struct callctx *c)
{
    const struct splash *s = c->s;
    int64_t bq = c->d->bq, bc = c->d->bkv_c, D = s->p.head_dim;
    pl_mxu_feed(ctx, bq, D, 0, 1);     /* q into the MXU */
    pl_mxu_feed(ctx, bc, D, 0, 1);     /* k */
    pl_matmul(ctx, bq, D, bc, s->mdt); /* qk = q k^T, f32 result */
    pl_mxu_drain(ctx, bq, bc, 0, 1);   /* qk popped and stored: the tile exceeds the vregs */
    mask_work(ctx, c, bq, bc, true);
    pl_vpu(ctx, bq, bc, 1, 1, 0, 0, 0);    /* m_curr: max across the lane vregs */
    pl_vpu(ctx, bq, LANES, 1, 1, 0, 0, 1); /* cross-lane max; m_next = max(m_prev, m_curr) */
    pl_vpu(ctx, bq, bc, 1, 1, 1, 1, 0);    /* s_curr = exp(qk - m_next) */
    pl_vpu(ctx, bq, bc, 1, 1, 0, 0, 0);    /* row sum across the lane vregs */
    pl_vpu(ctx, bq, LANES, 3, 1, 2, 1, 1); /* cross-lane sum; alpha = exp(m_prev - m_next);
                                              l = l_curr + alpha l_prev; store m, l */
    pl_mxu_feed(ctx, bq, bc, 1, 1);        /* s_curr (f32) rounded into the MXU */
    pl_mxu_feed(ctx, bc, D, 1, 1);         /* v.astype(f32), rounded into the MXU */
    pl_matmul(ctx, bq, bc, D, s->mdt == DT_FP8 ? DT_BF16 : s->mdt); /* o_curr = s v */
    pl_vpu(ctx, bq, D, 2, 1, 1, 0, 0);                              /* o = alpha o + o_curr */
}

static void fwd_work(struct pl_ctx *ctx, const struct callctx *c, int64_t j, bool run)
{
    int64_t bq = c->d->bq, D = c->s->p.head_dim;
    if (j == 0) /* init: o = 0, m = mask_value, l = 0 */
        pl_vpu(ctx, bq, D, 0, 0, 1, 0, 0), pl_vpu(ctx, bq, LANES, 0, 0, 2, 0, 0);
    for (int64_t t = 0; run && t < c->d->bkv / c->d->bkv_c; t++)
        fwd_sub_work(ctx, c);
    if (j == c->width - 1) {
        pl_vpu(ctx, bq, LANES, 0, 1, 0, 1, 0); /* 1 / l */
        pl_vpu(ctx, bq, D, 2, 1, 1, 0, 0);     /* o * l_inv, cast */
        if (c->at[S_LSE_OUT] >= 0)             /* logsumexp = log(l) + m */
            pl_vpu(ctx, bq, LANES, 1, 2, 1, 1, 0);
        pl_vpu(ctx, bq, D, 0, 0, 1, 0, 0); /* zero o, m, l */
        pl_vpu(ctx, bq, LANES, 0, 0, 2, 0, 0);
    }
}

/* _flash_attention_dq_kernel's run() (K L1357-1406) on a (bq, bkv) block. */
static void dq_run_work(struct pl_ctx *ctx, const struct callctx *c)
{
    const struct splash *s = c->s;
    int64_t bq = c->d->bq, bkv = c->d->bkv, D = s->p.head_dim;
    pl_mxu_feed(ctx, bq, D, 0, 2);      /* q, do into the MXU */
    pl_mxu_feed(ctx, bkv, D, 0, 2);     /* k, v */
    pl_matmul(ctx, bq, D, bkv, s->mdt); /* qk */
    pl_mxu_drain(ctx, bq, bkv, 0, 1);
    mask_work(ctx, c, bq, bkv, true);
    pl_vpu(ctx, bq, LANES, 0, 2, 0, 0, 2); /* logsumexp, di: (1, bq) rows to (bq, 1) columns */
    pl_vpu(ctx, bq, bkv, 1, 1, 1, 1, 0);   /* p = exp(qk - logsumexp) */
    pl_matmul(ctx, bq, D, bkv, s->mdt);    /* dp = do v^T */
    pl_mxu_drain(ctx, bq, bkv, 0, 1);
    pl_vpu(ctx, bq, bkv, 3, 2, 1, 0, 0); /* ds = (dp - di) p, astype(k.dtype) */
    pl_matmul(ctx, bq, bkv, D, s->mdt);  /* ds k */
    pl_vpu(ctx, bq, D, 1, 1, 1, 0, 0);   /* dq_scratch += */
}

static void dq_work(struct pl_ctx *ctx, const struct callctx *c, int64_t j, bool run)
{
    int64_t bq = c->d->bq, D = c->s->p.head_dim;
    if (j == 0)
        pl_vpu(ctx, bq, D, 0, 0, 1, 0, 0);
    if (run)
        dq_run_work(ctx, c);
    if (j == c->width - 1) /* dq = dq_scratch.astype; dq_scratch = 0 */
        pl_vpu(ctx, bq, D, 1, 1, 2, 0, 0);
}

/* One bkv_compute sub-block of _flash_attention_dkv_kernel's body (K L1763-1836). */
static void dkv_sub_work(struct pl_ctx *ctx, const struct callctx *c)
{
    const struct splash *s = c->s;
    int64_t bq = c->d->bq, bc = c->d->bkv_c, D = s->p.head_dim;
    pl_mxu_feed(ctx, bq, D, 0, 2);     /* q, do into the MXU */
    pl_mxu_feed(ctx, bc, D, 0, 2);     /* k, v slices */
    pl_matmul(ctx, bc, D, bq, s->mdt); /* qk = k q^T: (bkv_c, bq) */
    pl_mxu_drain(ctx, bc, bq, 0, 1);
    mask_work(ctx, c, bc, bq, false);
    pl_vpu(ctx, bc, bq, 1, 1, 1, 1, 0); /* p = exp(qk - logsumexp[:1]) */
    pl_mxu_feed(ctx, bc, bq, 1, 1);     /* p.astype(do.dtype) */
    pl_matmul(ctx, bc, bq, D, s->mdt);  /* dv = p do */
    pl_vpu(ctx, bc, D, 1, 1, 1, 0, 0);  /* dv_scratch[slice] += */
    pl_matmul(ctx, bc, D, bq, s->mdt);  /* dp = v do^T */
    pl_mxu_drain(ctx, bc, bq, 0, 1);
    pl_vpu(ctx, bc, bq, 3, 2, 1, 0, 0); /* ds = (dp - di) p, astype */
    pl_matmul(ctx, bc, bq, D, s->mdt);  /* dk = ds q */
    pl_vpu(ctx, bc, D, 1, 1, 1, 0, 0);  /* dk_scratch[slice] += */
    if (!s->fused)
        return;
    pl_vpu(ctx, bc, bq, 1, 1, 1, 0, 1); /* ds.T through the XLU, astype(k.dtype) */
    pl_matmul(ctx, bq, bc, D, s->mdt);  /* dq = ds^T k */
    pl_vpu(ctx, bq, D, 1, 1, 1, 0, 0);  /* dq_scratch += dq, or dq_ref = dq */
}

static void dkv_work(struct pl_ctx *ctx, const struct callctx *c, bool init, bool run, bool write)
{
    const struct splash *s = c->s;
    int64_t bq = c->d->bq, bkv = c->d->bkv, D = s->p.head_dim;
    if (init) /* dk_scratch = dv_scratch = 0 */
        pl_vpu(ctx, bkv, D, 0, 0, 2, 0, 0);
    if (s->fused) /* dq_scratch (or dq_ref) = 0 every step */
        pl_vpu(ctx, bq, D, 0, 0, 1, 0, 0);
    for (int64_t t = 0; run && t < bkv / c->d->bkv_c; t++)
        dkv_sub_work(ctx, c);
    if (c->at[S_DQACC] >= 0) /* dq_ref = dq_scratch.astype, every step */
        pl_vpu(ctx, bq, D, 1, 1, 1, 0, 0);
    if (write) /* dk, dv = scratch.astype; scratch = 0 */
        pl_vpu(ctx, bkv, D, 2, 2, 4, 0, 0);
}

/* ---------------------------------------------------------------- functional math */

/* MXU operands: f32 values are rounded to bf16 unless float32 precision is
 * requested (docs/pallas/tpu/details.rst L262-264); upstream requests none. */
static float mx(float x)
{
    return pl_round(x, DT_BF16);
}

static float *buf(struct pl_ctx *ctx, const struct callctx *c, enum slot sl)
{
    return c->at[sl] >= 0 ? pl_buf(ctx, c->at[sl]) : NULL;
}

/* The mask of one logits element: row 'r', column 'col' of the block tile.
 * fwd/dq: r = q row, col = kv column; dkv: r = kv row, col = q column. */
struct tilemask {
    const float *mask, *qseq, *qseg, *kvseg;
    int64_t mask_ld, k_off;
    bool nomask, dkv;
    const struct mask *fn;
};

static bool tile_allowed(const struct tilemask *t, int64_t r, int64_t col)
{
    int64_t qi = t->dkv ? col : r, ki = t->dkv ? r : col;
    if (t->mask && !(t->mask[r * t->mask_ld + col] != 0.0f || t->nomask))
        return false;
    if (t->fn) {
        int64_t qpos = (int64_t)(t->dkv ? t->qseq[qi] : t->qseq[qi * LANES]);
        if (!mask_at(t->fn, qpos, t->k_off + ki))
            return false;
    }
    if (t->qseg) {
        float qs = t->dkv ? t->qseg[qi] : t->qseg[qi * LANES];
        float ks = t->dkv ? t->kvseg[ki * LANES] : t->kvseg[ki];
        if (qs != ks)
            return false;
    }
    return true;
}

static bool any_mask(const struct tilemask *t)
{
    return t->mask || t->fn || t->qseg;
}

static void tilemask_init(struct tilemask *t, struct pl_ctx *ctx, const struct callctx *c,
                          const struct nz *z, bool dkv)
{
    memset(t, 0, sizeof *t);
    t->mask = buf(ctx, c, S_MASK);
    t->mask_ld = dkv ? c->d->bq : c->d->bkv;
    t->nomask = z->nomask;
    t->fn = c->s->fn;
    t->qseq = t->fn ? buf(ctx, c, S_QSEQ) : NULL;
    t->qseg = buf(ctx, c, S_QSEG);
    t->kvseg = buf(ctx, c, S_KVSEG);
    t->dkv = dkv;
}

/* A copy of the 'n' values of 'a' as the MXU takes them; caller frees. */
static float *mx_copy(const float *a, int64_t n)
{
    float *c = xmalloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (int64_t e = 0; e < n; e++)
        c[e] = mx(a[e]);
    return c;
}

/* MXU-rounded copies of the blocks a body multiplies. */
struct mxin {
    float *q, *k, *v, *dO;
};

static void mxin_load(struct mxin *in, struct pl_ctx *ctx, const struct callctx *c, int64_t bq,
                      int64_t bkv)
{
    int64_t D = c->s->p.head_dim;
    in->q = mx_copy(buf(ctx, c, S_Q), bq * D);
    in->k = mx_copy(buf(ctx, c, S_K), bkv * D);
    in->v = mx_copy(buf(ctx, c, S_V), bkv * D);
    in->dO = c->at[S_DO] >= 0 ? mx_copy(buf(ctx, c, S_DO), bq * D) : NULL;
}

static void mxin_free(struct mxin *in)
{
    free(in->q);
    free(in->k);
    free(in->v);
    free(in->dO);
}

static float dot(const float *a, const float *b, int64_t n)
{
    float acc = 0;
    for (int64_t d = 0; d < n; d++)
        acc += a[d] * b[d];
    return acc;
}

static void fwd_sub_math(struct pl_ctx *ctx, const struct callctx *c, const struct tilemask *t,
                         const struct mxin *in, int64_t sub)
{
    int64_t bq = c->d->bq, bc = c->d->bkv_c, D = c->s->p.head_dim, k0 = sub * bc;
    float *m = buf(ctx, c, S_M), *l = buf(ctx, c, S_L), *o = buf(ctx, c, S_OACC);
    float *qk = xmalloc(sizeof(float) * (size_t)bc), *oc = xmalloc(sizeof(float) * (size_t)D);
    for (int64_t r = 0; r < bq; r++) {
        float mcur = -INFINITY;
        for (int64_t x = 0; x < bc; x++) {
            float a = dot(in->q + r * D, in->k + (k0 + x) * D, D);
            if (any_mask(t) && !tile_allowed(t, r, k0 + x))
                a = MASK_VALUE;
            qk[x] = a;
            mcur = fmaxf(mcur, a);
        }
        float mprev = m[r * LANES], mnext = fmaxf(mprev, mcur), lcur = 0;
        for (int64_t x = 0; x < bc; x++)
            lcur += qk[x] = expf(qk[x] - mnext);
        float alpha = expf(mprev - mnext), lnext = lcur + alpha * l[r * LANES];
        for (int64_t x = 0; x < LANES; x++)
            m[r * LANES + x] = mnext, l[r * LANES + x] = lnext;
        memset(oc, 0, sizeof(float) * (size_t)D);
        for (int64_t x = 0; x < bc; x++) { /* o_curr = s v, s rounded into the MXU */
            float sx = mx(qk[x]);
            const float *vx = in->v + (k0 + x) * D;
            for (int64_t d = 0; d < D; d++)
                oc[d] += sx * vx[d];
        }
        for (int64_t d = 0; d < D; d++)
            o[r * D + d] = alpha * o[r * D + d] + oc[d];
    }
    free(qk);
    free(oc);
}

static void fwd_math(struct pl_ctx *ctx, const struct callctx *c, int64_t j, const struct nz *z)
{
    int64_t bq = c->d->bq, D = c->s->p.head_dim;
    float *m = buf(ctx, c, S_M), *l = buf(ctx, c, S_L), *o = buf(ctx, c, S_OACC);
    if (j == 0) {
        for (int64_t e = 0; e < bq * LANES; e++)
            m[e] = MASK_VALUE, l[e] = 0;
        memset(o, 0, sizeof(float) * (size_t)(bq * D));
    }
    if (z->run) {
        struct tilemask t;
        struct mxin in;
        tilemask_init(&t, ctx, c, z, false);
        t.k_off = z->next * c->d->bkv; /* unshrunk kv index (K L781-787) */
        mxin_load(&in, ctx, c, bq, c->d->bkv);
        for (int64_t sub = 0; sub < c->d->bkv / c->d->bkv_c; sub++)
            fwd_sub_math(ctx, c, &t, &in, sub);
        mxin_free(&in);
    }
    if (j != c->width - 1)
        return;
    float *out = buf(ctx, c, S_OUT), *lse = buf(ctx, c, S_LSE_OUT);
    for (int64_t r = 0; r < bq; r++) {
        float linv = 1.0f / l[r * LANES];
        for (int64_t d = 0; d < D; d++)
            out[r * D + d] = o[r * D + d] * linv;
        for (int64_t x = 0; lse && x < LANES; x++)
            lse[r * LANES + x] = logf(l[r * LANES]) + m[r * LANES];
    }
    memset(m, 0, sizeof(float) * (size_t)(bq * LANES));
    memset(l, 0, sizeof(float) * (size_t)(bq * LANES));
    memset(o, 0, sizeof(float) * (size_t)(bq * D));
}

/* ds = (dp - di) p with p = exp(qk - logsumexp), both rounded into the MXU. */
static float bwd_ds(float qk, float lse, float dp, float di, float *p)
{
    float e = expf(qk - lse);
    *p = mx(e);
    return mx((dp - di) * e);
}

static void dq_math(struct pl_ctx *ctx, const struct callctx *c, int64_t j, const struct nz *z)
{
    int64_t bq = c->d->bq, bkv = c->d->bkv, D = c->s->p.head_dim;
    float *acc = buf(ctx, c, S_DQACC);
    if (j == 0)
        memset(acc, 0, sizeof(float) * (size_t)(bq * D));
    if (z->run) {
        const float *lse = buf(ctx, c, S_LSE), *di = buf(ctx, c, S_DI);
        struct tilemask t;
        struct mxin in;
        tilemask_init(&t, ctx, c, z, false);
        t.k_off = z->next * bkv;
        mxin_load(&in, ctx, c, bq, bkv);
        for (int64_t r = 0; r < bq; r++) {
            for (int64_t x = 0; x < bkv; x++) {
                float qk = dot(in.q + r * D, in.k + x * D, D), p;
                float dp = dot(in.dO + r * D, in.v + x * D, D);
                if (any_mask(&t) && !tile_allowed(&t, r, x))
                    qk = MASK_VALUE;
                float ds = bwd_ds(qk, lse[r], dp, di[r], &p);
                for (int64_t d = 0; d < D; d++)
                    acc[r * D + d] += ds * in.k[x * D + d];
            }
        }
        mxin_free(&in);
    }
    if (j == c->width - 1) {
        memcpy(buf(ctx, c, S_DQ), acc, sizeof(float) * (size_t)(bq * D));
        memset(acc, 0, sizeof(float) * (size_t)(bq * D));
    }
}

/* One sub-block of the dkv body: rows kv0.. of k/v against the q block. */
static void dkv_sub_math(struct pl_ctx *ctx, const struct callctx *c, const struct tilemask *t,
                         const struct mxin *in, int64_t kv0, float *dq)
{
    int64_t bq = c->d->bq, bc = c->d->bkv_c, D = c->s->p.head_dim;
    const float *lse = buf(ctx, c, S_LSE), *di = buf(ctx, c, S_DI);
    float *dk = buf(ctx, c, S_DKACC), *dv = buf(ctx, c, S_DVACC);
    for (int64_t r = kv0; r < kv0 + bc; r++) {
        const float *kr = in->k + r * D, *vr = in->v + r * D;
        for (int64_t x = 0; x < bq; x++) {
            float qk = dot(kr, in->q + x * D, D), dp = dot(vr, in->dO + x * D, D), p;
            if (any_mask(t) && !tile_allowed(t, r, x))
                qk = MASK_VALUE;
            float ds = bwd_ds(qk, lse[x], dp, di[x], &p);
            for (int64_t d = 0; d < D; d++) {
                dv[r * D + d] += p * in->dO[x * D + d];
                dk[r * D + d] += ds * in->q[x * D + d];
            }
            for (int64_t d = 0; dq && d < D; d++)
                dq[x * D + d] += ds * kr[d];
        }
    }
}

static void dkv_math(struct pl_ctx *ctx, const struct callctx *c, bool init, bool write,
                     const struct nz *z, int64_t kv)
{
    int64_t bq = c->d->bq, bkv = c->d->bkv, D = c->s->p.head_dim;
    float *dk = buf(ctx, c, S_DKACC), *dv = buf(ctx, c, S_DVACC);
    float *dqs = buf(ctx, c, S_DQACC), *dq = c->s->fused ? buf(ctx, c, S_DQ) : NULL;
    float *dqa = dqs ? dqs : dq; /* where the sub-blocks accumulate dq */
    if (init) {
        memset(dk, 0, sizeof(float) * (size_t)(bkv * D));
        memset(dv, 0, sizeof(float) * (size_t)(bkv * D));
    }
    if (dqa)
        memset(dqa, 0, sizeof(float) * (size_t)(bq * D));
    if (z->run) {
        struct tilemask t;
        struct mxin in;
        tilemask_init(&t, ctx, c, z, true);
        t.k_off = kv * bkv; /* tile rows count from the kv block's start */
        mxin_load(&in, ctx, c, bq, bkv);
        for (int64_t sub = 0; sub < bkv / c->d->bkv_c; sub++)
            dkv_sub_math(ctx, c, &t, &in, sub * c->d->bkv_c, dqa);
        mxin_free(&in);
    }
    if (dqs)
        memcpy(dq, dqs, sizeof(float) * (size_t)(bq * D));
    if (write) {
        memcpy(buf(ctx, c, S_DK), dk, sizeof(float) * (size_t)(bkv * D));
        memcpy(buf(ctx, c, S_DV), dv, sizeof(float) * (size_t)(bkv * D));
    }
}

/* ---------------------------------------------------------------- bodies */

static void fwd_body(struct pl_ctx *ctx, const int64_t *G, void *user)
{
    const struct callctx *c = user;
    int64_t j = G[c->s->gb + 2];
    struct nz z = fwd_nz(c, G);
    fwd_work(ctx, c, j, z.run);
    if (pl_functional(ctx))
        fwd_math(ctx, c, j, &z);
}

static void dq_body(struct pl_ctx *ctx, const int64_t *G, void *user)
{
    const struct callctx *c = user;
    int64_t j = G[c->s->gb + 2];
    struct nz z = fwd_nz(c, G);
    dq_work(ctx, c, j, z.run);
    if (pl_functional(ctx))
        dq_math(ctx, c, j, &z);
}

/* Accumulators start at q == 0 on the first q head of a kv head's group and are
 * written at the last q step of its last q head (K L1725-1760, L1847-1866). */
static void dkv_body(struct pl_ctx *ctx, const int64_t *G, void *user)
{
    const struct callctx *c = user;
    const struct splash *s = c->s;
    const int64_t *g = G + s->gb;
    int64_t kv = g[0], h = g[1], qi = g[2];
    int64_t hl = s->mqa ? h : h % s->ratio, hlast = s->mqa ? s->p.q_heads - 1 : s->ratio - 1;
    bool init = qi == 0 && hl == 0, write = qi == c->width - 1 && hl == hlast;
    struct nz z = dkv_nz(c, G);
    dkv_work(ctx, c, init, z.run, write);
    if (pl_functional(ctx))
        dkv_math(ctx, c, init, write, &z, kv);
}

/* XLA glue before the backward kernels (K L2299, L1571, L2123-2126):
 * di = sum(o * do, -1); logsumexp[..., 0] broadcast to 8 sublanes for dkv and
 * expanded to (1, Sq) for dq. */
static void prep_body(struct pl_ctx *ctx, const int64_t *G, void *user)
{
    const struct callctx *c = user;
    int64_t bq = c->d->bq, D = c->s->p.head_dim;
    (void)G;
    pl_vpu(ctx, bq, D, 3, 2, 0, 0, 0);        /* casts to f32, o * do */
    pl_vpu(ctx, bq, LANES, 1, 1, 0, 0, 1);    /* row sum; logsumexp[..., 0] */
    pl_vpu(ctx, SUBLANES, bq, 0, 0, 4, 0, 2); /* (8, bq) and (1, bq) layouts of di, lse */
    if (!pl_functional(ctx))
        return;
    const float *o = buf(ctx, c, S_O), *dO = buf(ctx, c, S_DO), *lse = buf(ctx, c, S_LSE);
    float *di8 = buf(ctx, c, S_DI8), *lse8 = buf(ctx, c, S_LSE8);
    float *di1 = buf(ctx, c, S_DI1), *lse1 = buf(ctx, c, S_LSE1);
    for (int64_t r = 0; r < bq; r++) {
        float di = 0;
        for (int64_t d = 0; d < D; d++)
            di += o[r * D + d] * dO[r * D + d];
        for (int64_t x = 0; x < SUBLANES; x++)
            di8[x * bq + r] = di, lse8[x * bq + r] = lse[r * LANES];
        if (di1)
            di1[r] = di, lse1[r] = lse[r * LANES];
    }
}

/* XLA glue after the fused kernel: dq = dq_unreduced.sum(axis=0) (K L2246-2248). */
static void dqsum_body(struct pl_ctx *ctx, const int64_t *G, void *user)
{
    const struct callctx *c = user;
    int64_t bq = c->d->bq, D = c->s->p.head_dim, kv = G[c->s->gb + 2];
    pl_vpu(ctx, bq, D, 2, 1, kv == c->width - 1 ? 2 : 1, 0, 0);
    if (!pl_functional(ctx))
        return;
    float *acc = pl_scratch_buf(ctx, 0), *in = buf(ctx, c, S_DQU), *out = buf(ctx, c, S_DQ);
    if (kv == 0)
        memset(acc, 0, sizeof(float) * (size_t)(bq * D));
    for (int64_t e = 0; e < bq * D; e++)
        acc[e] += in[e];
    if (kv == c->width - 1)
        memcpy(out, acc, sizeof(float) * (size_t)(bq * D));
}

/* ---------------------------------------------------------------- checks */

#define FAIL(...) (snprintf(err, n, __VA_ARGS__), -1)

static int check_heads(const struct op_splash *p, char *err, size_t n)
{
    if (p->kv_heads > 1 && p->q_heads % p->kv_heads != 0)
        return FAIL("In MHA, expected number of 'key' heads (%lld) to be a multiple of the "
                    "number of 'query' heads (%lld)",
                    (long long)p->kv_heads, (long long)p->q_heads);
    return 0;
}

/* _splash_attention_forward's checks (K L950-985). */
static int check_fwd(const struct splash *s, char *err, size_t n)
{
    const struct op_splash *p = &s->p;
    long long bkv = s->d[D_FWD].bkv, bc = s->d[D_FWD].bkv_c;
    if (check_heads(p, err, n))
        return -1;
    if (bkv % bc)
        return FAIL("bkv=%lld must be a multiple of bkv_compute=%lld.", bkv, bc);
    if (bc % LANES)
        return FAIL("bkv_compute=%lld must be a multiple of %d.", bc, LANES);
    if (s->seg && p->kv_seq_len != p->q_seq_len) /* the lengths describe q, of length Sq */
        return FAIL("Invalid shape for kv segment_ids: (%lld,). Expected: (%lld,)",
                    (long long)p->q_seq_len, (long long)p->kv_seq_len);
    return 0;
}

/* _splash_attention_bwd_dkv's checks (K L1900-1922). */
static int check_dkv(const struct splash *s, char *err, size_t n)
{
    const struct dirinfo *d = &s->d[D_DKV];
    long long bq = d->bq, bkv = d->bkv, bc = d->bkv_c;
    if (bq > s->p.q_seq_len)
        return FAIL("bq=%lld should not be greater than q_seq_len=%lld", bq,
                    (long long)s->p.q_seq_len);
    if (bkv > s->p.kv_seq_len)
        return FAIL("bkv=%lld should not be greater than kv_seq_len=%lld", bkv,
                    (long long)s->p.kv_seq_len);
    if (bc > bkv)
        return FAIL("bkv_compute=%lld should not be greater than bkv=%lld", bc, bkv);
    if (bkv % bc)
        return FAIL("bkv=%lld should be a multiple of bkv_compute=%lld", bkv, bc);
    return check_heads(&s->p, err, n);
}

/* _splash_attention_bwd_dq's checks (K L1444-1465). */
static int check_dq(const struct splash *s, char *err, size_t n)
{
    const struct dirinfo *d = &s->d[D_DQ];
    long long bq = d->bq, bkv = d->bkv;
    if (bq > s->p.q_seq_len)
        return FAIL("bq=%lld should not be greater than q_seq_len=%lld", bq,
                    (long long)s->p.q_seq_len);
    if (bkv > s->p.kv_seq_len)
        return FAIL("bkv=%lld should not be greater than kv_seq_len=%lld", bkv,
                    (long long)s->p.kv_seq_len);
    if (check_heads(&s->p, err, n))
        return -1;
    if (bkv % LANES)
        return FAIL("bkv=%lld must be a multiple of %d.", bkv, LANES);
    return 0;
}

static bool has_backward_blocks(const struct splash_block_sizes *b)
{
    bool dkv = b->block_q_dkv && b->block_kv_dkv; /* block_kv_dkv_compute defaults to it */
    return dkv && (b->use_fused_bwd_kernel || (b->block_q_dq && b->block_kv_dq));
}

/* The MaskInfo of one direction (_make_splash_attention, K L2544-2627). */
static int build_info(struct splash *s, enum dir dir, char *err, size_t n)
{
    struct dirinfo *d = &s->d[dir];
    struct maskinfo_params mp;
    maskinfo_params_init(&mp, (int)d->bq, (int)d->bkv);
    mp.is_dkv = dir == D_DKV;
    mp.shrink_grid = dir != D_DKV || !s->fused;
    mp.dynamic = s->p.dynamic;
    if (d->bq > INT32_MAX || d->bkv > INT32_MAX)
        return FAIL("block sizes must fit in int32");
    if (maskinfo_process(s->heads, (int)s->p.q_heads, &mp, &d->mi, err, n))
        return -1;
    d->has_mask = d->mi.num_partial > 0;
    return 0;
}

/* Refuses, before the MaskInfo of direction 'dir' is built, what the SMEM
 * check after it would refuse anyway: its arrays hold at least two bytes
 * (block_mask, data_next) per block of the shrunk grid, whose width has a
 * closed form for the computable and full masks (maskinfo_width; a
 * 1M-token mask would otherwise be built, in seconds and gigabytes, to be
 * refused). */
static int smem_floor(const struct splash *s, enum dir dir, const struct kern *k, char *err,
                      size_t n)
{
    static const char *const what[NDIR] = {[D_FWD] = "forward", [D_DQ] = "dq", [D_DKV] = "dkv"};
    const struct dirinfo *d = &s->d[dir];
    const struct mask *m = s->heads[0];
    bool shrink = dir != D_DKV || !s->fused;
    int64_t nq = d->bq > 0 ? m->q_len / d->bq : 0, nk = d->bkv > 0 ? m->kv_len / d->bkv : 0;
    int64_t w = s->p.dynamic || !shrink ? (dir == D_DKV ? nq : nk)
                                        : maskinfo_width(m, d->bq, d->bkv, dir == D_DKV);
    if (w < 0 || !k->chip->smem_bytes)
        return 0;
    int64_t rows = dir == D_DKV ? w : nq, cols = dir == D_DKV ? nk : w;
    uint64_t need = 2 * (uint64_t)rows * (uint64_t)cols; /* < 2^49: lengths < 2^25 */
    if (need <= k->chip->smem_bytes)
        return 0;
    return FAIL("the MaskInfo arrays of its %s pass need at least %llu bytes of SMEM (%lld x "
                "%lld blocks, two bytes each at the least), the chip has %llu (use larger "
                "blocks)",
                what[dir], (unsigned long long)need, (long long)rows, (long long)cols,
                (unsigned long long)k->chip->smem_bytes);
}

static int build_infos(struct splash *s, const struct kern *k, char *err, size_t n)
{
    const struct splash_block_sizes *b = &s->p.bs;
    s->d[D_FWD].bq = b->block_q, s->d[D_FWD].bkv = b->block_kv;
    s->d[D_FWD].bkv_c = b->block_kv_compute ? b->block_kv_compute : b->block_kv;
    s->d[D_DQ].bq = b->block_q_dq, s->d[D_DQ].bkv = s->d[D_DQ].bkv_c = b->block_kv_dq;
    s->d[D_DKV].bq = b->block_q_dkv, s->d[D_DKV].bkv = b->block_kv_dkv;
    s->d[D_DKV].bkv_c = b->block_kv_dkv_compute ? b->block_kv_dkv_compute : b->block_kv_dkv;
    bool bwd = has_backward_blocks(b), calls = s->bwd && bwd; /* (whose calls are checked) */
    if ((s->fwd && smem_floor(s, D_FWD, k, err, n)) ||
        (calls && !s->fused && smem_floor(s, D_DQ, k, err, n)) ||
        (calls && smem_floor(s, D_DKV, k, err, n)))
        return -1;
    if (build_info(s, D_FWD, err, n))
        return -1;
    if (!bwd)
        return 0;
    if (!s->fused && build_info(s, D_DQ, err, n))
        return -1;
    return build_info(s, D_DKV, err, n);
}

/* ---------------------------------------------------------------- calls */
/* operand tables read best one spec per line */
/* clang-format off */

/* One operand: 'rank' dims after the optional batch dim ('batched'). */
struct spec {
    enum slot sl;
    const char *name;
    enum pl_dir dir;
    enum dtype dt;
    int rank;
    int64_t shape[4], block[4];
    pl_index_fn *fn;
    bool batched;
    int arr;
};

static void add(struct splash *s, struct pl_call *call, struct callctx *c, const struct spec *sp)
{
    TPU_ASSERT(call->noperands < PL_MAX_OPERANDS, "too many operands");
    struct pl_operand *o = &call->operands[call->noperands];
    bool b = s->batched && sp->batched;
    *o = (struct pl_operand){.name = sp->name, .dir = sp->dir, .space = PL_VMEM, .dt = sp->dt,
                             .rank = sp->rank + b, .index = sp->fn};
    if (b)
        o->shape[0] = s->p.batch, o->block[0] = PL_SQUEEZED;
    for (int d = 0; d < sp->rank; d++)
        o->shape[d + b] = sp->shape[d], o->block[d + b] = sp->block[d];
    c->at[sp->sl] = call->noperands;
    c->arr[call->noperands] = sp->arr;
    call->noperands++;
}

/* A constant-index "fake" output (upstream's m/l/acc outputs): a trivial window
 * when unbatched; vmapped, it gets the batch index. */
static void add_fake(struct splash *s, struct pl_call *call, struct callctx *c, enum slot sl,
                     const char *name, int64_t rows, int64_t cols)
{
    struct spec sp = {sl, name, PL_OUT, DT_F32, 2, {rows, cols}, {rows, cols},
                      s->batched ? ix_fake : NULL, true, A_FAKE};
    add(s, call, c, &sp);
}

static void call_init(struct splash *s, struct pl_call *call, struct callctx *c, enum call_kind kind,
                      const struct dirinfo *d, const char *name)
{
    memset(call, 0, sizeof *call);
    memset(c, 0, sizeof *c);
    for (int i = 0; i < NSLOT; i++)
        c->at[i] = -1;
    c->s = s, c->d = d, c->kind = kind;
    call->name = name;
    call->user = c;
    if (s->batched) {
        call->ngrid = 1;
        call->grid[0] = s->p.batch, call->sem[0] = PL_PARALLEL;
    }
    if (d && kind != C_PREP && kind != C_DQSUM) { /* scalar prefetch, downcast sizes */
        const struct mask_info *mi = &d->mi;
        uint64_t cells = (uint64_t)mi->rows * (uint64_t)mi->nq * (uint64_t)mi->nk;
        call->smem_prefetch_bytes =
            cells * (uint64_t)(mi->block_mask_bytes + mi->data_next_bytes + mi->mask_next_bytes);
    }
}

static void grid_dim(struct pl_call *call, int64_t n, enum pl_dim_sem sem)
{
    call->grid[call->ngrid] = n;
    call->sem[call->ngrid++] = sem;
}

/* q, k, v (and do) of the fwd/dq kernels, and the k/v-side specs of dkv. */
static void add_qkv(struct splash *s, struct pl_call *call, struct callctx *c, int64_t bq,
                    int64_t bkv, pl_index_fn *qfn, pl_index_fn *kvfn)
{
    const struct op_splash *p = &s->p;
    int64_t D = p->head_dim;
    struct spec q = {S_Q, "q", PL_IN, p->dt, 3, {p->q_heads, p->q_seq_len, D},
                     {PL_SQUEEZED, bq, D}, qfn, true, A_Q};
    add(s, call, c, &q);
    struct spec k = {S_K, "k", PL_IN, p->dt, 3, {p->kv_heads, p->kv_seq_len, D},
                     {PL_SQUEEZED, bkv, D}, kvfn, true, A_K};
    if (s->mqa)
        k.rank = 2, k.shape[0] = p->kv_seq_len, k.shape[1] = D, k.block[0] = bkv, k.block[1] = D;
    add(s, call, c, &k);
    struct spec v = k;
    v.sl = S_V, v.name = "v", v.arr = A_V;
    add(s, call, c, &v);
}

/* Segment ids in the fwd/dq (lanes) or dkv layout. */
static void add_segs(struct splash *s, struct pl_call *call, struct callctx *c, enum dir dir)
{
    const struct op_splash *p = &s->p;
    const struct dirinfo *d = &s->d[dir];
    int64_t bq = d->bq, bkv = d->bkv, Q = p->q_seq_len, K = p->kv_seq_len;
    if (!s->seg)
        return;
    struct spec qs = {S_QSEG, "q_segment_ids", PL_IN, DT_INT32, 2, {Q, LANES}, {bq, LANES},
                      ix_i0_b, true, A_QSEG_L};
    struct spec ks = {S_KVSEG, "kv_segment_ids", PL_IN, DT_INT32, 2, {SUBLANES, K},
                      {SUBLANES, bkv}, ix_kvseg_next, true, A_KVSEG_S};
    if (dir == D_DKV) {
        qs = (struct spec){S_QSEG, "q_segment_ids", PL_IN, DT_INT32, 2, {SUBLANES, Q},
                           {SUBLANES, bq}, ix_dkv_qseg, true, A_QSEG_S};
        ks = (struct spec){S_KVSEG, "kv_segment_ids", PL_IN, DT_INT32, 2, {K, LANES},
                           {bkv, LANES}, ix_dkv_kvseg, true, A_KVSEG_L};
    }
    add(s, call, c, &qs);
    add(s, call, c, &ks);
}

/* The partial mask blocks (when there are any) and q_sequence (computable masks). */
static void add_mask_ops(struct splash *s, struct pl_call *call, struct callctx *c, enum dir dir)
{
    const struct dirinfo *d = &s->d[dir];
    int64_t bq = d->bq, bkv = d->bkv, Q = s->p.q_seq_len;
    bool t = dir == D_DKV;
    if (d->has_mask) { /* bool blocks reach Mosaic as int32 (pallas_call_registration L267) */
        struct spec m = {S_MASK, "mask", PL_IN, DT_INT32, 3, {d->mi.num_partial, bq, bkv},
                         {PL_SQUEEZED, bq, bkv}, t ? ix_dkv_mask : ix_mask_next, false,
                         A_MASK0 + (int)dir};
        if (t)
            m.shape[1] = m.block[1] = bkv, m.shape[2] = m.block[2] = bq;
        add(s, call, c, &m);
    }
    if (d->mi.computable) {
        struct spec qq = {S_QSEQ, "q_sequence", PL_IN, DT_INT32, 2, {Q, LANES}, {bq, LANES},
                          ix_i0_u, false, A_QSEQ0 + (int)dir};
        if (t)
            qq = (struct spec){S_QSEQ, "q_sequence", PL_IN, DT_INT32, 2, {SUBLANES, Q},
                               {SUBLANES, bq}, ix_dkv_qseq, false, A_QSEQ0 + (int)dir};
        add(s, call, c, &qq);
    }
}

static const char *kernel_name(struct splash *s, int ci, const char *phase, bool residuals)
{
    snprintf(s->names[ci], sizeof s->names[ci], "splash_%s_%s%s%s", s->mqa ? "mqa" : "mha",
             phase, s->seg ? "_segmented" : "", residuals ? "_residuals" : "_no_residuals");
    return s->names[ci];
}

/* The next call of 'k' and its context in '*c': the kernel 'phase' ("fwd",
 * "dkv", "dq"; named as upstream names its kernels) or, with 'phase' NULL,
 * the XLA op 'name'. */
static struct pl_call *next_call(struct splash *s, struct kern *k, enum call_kind kind,
                                 const struct dirinfo *d, const char *phase, bool residuals,
                                 const char *name, struct callctx **c)
{
    int ci = k->ncalls++;
    *c = &s->cc[ci];
    struct pl_call *call = &k->calls[ci];
    call_init(s, call, *c, kind, d, phase ? kernel_name(s, ci, phase, residuals) : name);
    return call;
}

/* _splash_attention_forward (K L986-1210): grid (Hq, Sq/bq, width), (P, A, A). */
static void build_fwd(struct splash *s, struct kern *k)
{
    const struct dirinfo *d = &s->d[D_FWD];
    const struct op_splash *p = &s->p;
    int64_t bq = d->bq, D = p->head_dim;
    struct callctx *c;
    struct pl_call *call = next_call(s, k, C_FWD, d, "fwd", s->residuals, NULL, &c);
    c->width = d->mi.nk;
    grid_dim(call, p->q_heads, PL_PARALLEL);
    grid_dim(call, p->q_seq_len / bq, PL_ARBITRARY);
    grid_dim(call, c->width, PL_ARBITRARY);
    add_qkv(s, call, c, bq, d->bkv, ix_hi0, ix_kv_next);
    add_segs(s, call, c, D_FWD);
    add_mask_ops(s, call, c, D_FWD);
    add_fake(s, call, c, S_M, "m_scratch", bq, LANES);
    add_fake(s, call, c, S_L, "l_scratch", bq, LANES);
    add_fake(s, call, c, S_OACC, "o_scratch", bq, D);
    struct spec o = {S_OUT, "out", PL_OUT, p->dt, 3, {p->q_heads, p->q_seq_len, D},
                     {PL_SQUEEZED, bq, D}, ix_hi0, true, A_OUT};
    add(s, call, c, &o);
    if (s->residuals) {
        struct spec l = {S_LSE_OUT, "logsumexp", PL_OUT, DT_F32, 3,
                         {p->q_heads, p->q_seq_len, LANES}, {PL_SQUEEZED, bq, LANES}, ix_hi0,
                         true, A_LSE};
        add(s, call, c, &l);
    }
    call->body = fwd_body;
}

/* The XLA ops between the fwd and the bwd kernels, as one parallel pass over
 * (h, q block): reads o, do and the (.., 128) logsumexp, writes di and
 * logsumexp in the (8, Sq) layout of dkv and the (1, Sq) layout of dq. */
static void build_prep(struct splash *s, struct kern *k)
{
    const struct op_splash *p = &s->p;
    int64_t bq = s->d[D_DKV].bq, D = p->head_dim, H = p->q_heads, Q = p->q_seq_len;
    struct callctx *c;
    struct pl_call *call = next_call(s, k, C_PREP, &s->d[D_DKV], NULL, false, "splash_bwd_di", &c);
    grid_dim(call, H, PL_PARALLEL);
    grid_dim(call, Q / bq, PL_PARALLEL);
    struct spec sp[] = {
        {S_O, "o", PL_IN, p->dt, 3, {H, Q, D}, {PL_SQUEEZED, bq, D}, ix_hi0, true, A_OUT},
        {S_DO, "do", PL_IN, p->dt, 3, {H, Q, D}, {PL_SQUEEZED, bq, D}, ix_hi0, true, A_DO},
        {S_LSE, "logsumexp", PL_IN, DT_F32, 3, {H, Q, LANES}, {PL_SQUEEZED, bq, LANES}, ix_hi0,
         true, A_LSE},
        {S_DI8, "di_dkv", PL_OUT, DT_F32, 3, {H, SUBLANES, Q}, {PL_SQUEEZED, SUBLANES, bq},
         ix_h0i, true, A_DI8},
        {S_LSE8, "logsumexp_dkv", PL_OUT, DT_F32, 3, {H, SUBLANES, Q},
         {PL_SQUEEZED, SUBLANES, bq}, ix_h0i, true, A_LSE8},
        {S_DI1, "di_dq", PL_OUT, DT_F32, 3, {H, 1, Q}, {PL_SQUEEZED, 1, bq}, ix_h0i, true, A_DI1},
        {S_LSE1, "logsumexp_dq", PL_OUT, DT_F32, 3, {H, 1, Q}, {PL_SQUEEZED, 1, bq}, ix_h0i, true,
         A_LSE1},
    };
    for (int i = 0; i < (s->fused ? 5 : 7); i++)
        add(s, call, c, &sp[i]);
    call->body = prep_body;
}

/* _splash_attention_bwd_dkv (K L1924-2253): grid (Skv/bkv, Hq, width_q), all arbitrary. */
static void build_dkv(struct splash *s, struct kern *k)
{
    const struct dirinfo *d = &s->d[D_DKV];
    const struct op_splash *p = &s->p;
    int64_t bq = d->bq, bkv = d->bkv, D = p->head_dim, H = p->q_heads, Q = p->q_seq_len;
    struct callctx *c;
    struct pl_call *call = next_call(s, k, C_DKV, d, "dkv", false, NULL, &c);
    c->width = d->mi.nq;
    grid_dim(call, p->kv_seq_len / bkv, PL_ARBITRARY);
    grid_dim(call, H, PL_ARBITRARY);
    grid_dim(call, c->width, PL_ARBITRARY);
    add_qkv(s, call, c, bq, bkv, ix_dkv_q, ix_dkv_kv);
    add_segs(s, call, c, D_DKV);
    struct spec sp[] = {
        {S_LSE, "logsumexp", PL_IN, DT_F32, 3, {H, SUBLANES, Q}, {PL_SQUEEZED, SUBLANES, bq},
         ix_dkv_lse, true, A_LSE8},
        {S_DO, "do", PL_IN, p->dt, 3, {H, Q, D}, {PL_SQUEEZED, bq, D}, ix_dkv_q, true, A_DO},
        {S_DI, "di", PL_IN, DT_F32, 3, {H, SUBLANES, Q}, {PL_SQUEEZED, SUBLANES, bq}, ix_dkv_lse,
         true, A_DI8},
    };
    for (int i = 0; i < 3; i++)
        add(s, call, c, &sp[i]);
    add_mask_ops(s, call, c, D_DKV);
    if (s->fused && bkv != d->bkv_c)
        add_fake(s, call, c, S_DQACC, "dq_scratch", bq, D);
    add_fake(s, call, c, S_DKACC, "dk_scratch", bkv, D);
    add_fake(s, call, c, S_DVACC, "dv_scratch", bkv, D);
    if (s->fused) {
        struct spec dq = {S_DQ, "dq_unreduced", PL_OUT, p->dt, 4,
                          {p->kv_seq_len / bkv, H, Q, D}, {PL_SQUEEZED, PL_SQUEEZED, bq, D},
                          ix_dkv_dqu, true, A_DQU};
        add(s, call, c, &dq);
    }
    struct spec dk = {S_DK, "dk", PL_OUT, p->dt, 0, {0}, {0}, ix_dkv_kv, true, A_DK};
    dk.rank = call->operands[c->at[S_K]].rank - (s->batched ? 1 : 0);
    memcpy(dk.shape, call->operands[c->at[S_K]].shape + (s->batched ? 1 : 0), sizeof dk.shape);
    memcpy(dk.block, call->operands[c->at[S_K]].block + (s->batched ? 1 : 0), sizeof dk.block);
    add(s, call, c, &dk);
    dk.sl = S_DV, dk.name = "dv", dk.arr = A_DV;
    add(s, call, c, &dk);
    call->body = dkv_body;
}

/* _splash_attention_bwd_dq (K L1466-1677): grid (Hq, Sq/bq, width), all arbitrary. */
static void build_dq(struct splash *s, struct kern *k)
{
    const struct dirinfo *d = &s->d[D_DQ];
    const struct op_splash *p = &s->p;
    int64_t bq = d->bq, D = p->head_dim, H = p->q_heads, Q = p->q_seq_len;
    struct callctx *c;
    struct pl_call *call = next_call(s, k, C_DQ, d, "dq", false, NULL, &c);
    c->width = d->mi.nk;
    grid_dim(call, H, PL_ARBITRARY);
    grid_dim(call, Q / bq, PL_ARBITRARY);
    grid_dim(call, c->width, PL_ARBITRARY);
    add_qkv(s, call, c, bq, d->bkv, ix_hi0, ix_kv_next);
    struct spec sp[] = {
        {S_LSE, "logsumexp", PL_IN, DT_F32, 3, {H, 1, Q}, {PL_SQUEEZED, 1, bq}, ix_h0i, true,
         A_LSE1},
        {S_DO, "do", PL_IN, p->dt, 3, {H, Q, D}, {PL_SQUEEZED, bq, D}, ix_hi0, true, A_DO},
        {S_DI, "di", PL_IN, DT_F32, 3, {H, 1, Q}, {PL_SQUEEZED, 1, bq}, ix_h0i, true, A_DI1},
    };
    add_segs(s, call, c, D_DQ); /* upstream's order: q, k, v, segment ids, lse, do, di, ... */
    for (int i = 0; i < 3; i++)
        add(s, call, c, &sp[i]);
    add_mask_ops(s, call, c, D_DQ);
    add_fake(s, call, c, S_DQACC, "dq_scratch", bq, D);
    struct spec dq = {S_DQ, "dq", PL_OUT, p->dt, 3, {H, Q, D}, {PL_SQUEEZED, bq, D}, ix_hi0, true,
                      A_DQ};
    add(s, call, c, &dq);
    call->body = dq_body;
}

/* The fused kernel's dq_unreduced.sum(axis=0), an XLA reduction: grid
 * (Hq, Sq/bq, Skv/bkv) reading (bq, D) slabs into an f32 accumulator. */
static void build_dqsum(struct splash *s, struct kern *k)
{
    const struct op_splash *p = &s->p;
    const struct dirinfo *d = &s->d[D_DKV];
    int64_t bq = d->bq, D = p->head_dim, H = p->q_heads, Q = p->q_seq_len;
    int64_t nkv = p->kv_seq_len / d->bkv;
    struct callctx *c;
    struct pl_call *call = next_call(s, k, C_DQSUM, d, NULL, false, "splash_dq_sum", &c);
    c->width = nkv;
    grid_dim(call, H, PL_PARALLEL);
    grid_dim(call, Q / bq, PL_PARALLEL);
    grid_dim(call, nkv, PL_ARBITRARY);
    struct spec in = {S_DQU, "dq_unreduced", PL_IN, p->dt, 4, {nkv, H, Q, D},
                      {PL_SQUEEZED, PL_SQUEEZED, bq, D}, ix_sum_dqu, true, A_DQU};
    struct spec out = {S_DQ, "dq", PL_OUT, p->dt, 3, {H, Q, D}, {PL_SQUEEZED, bq, D}, ix_hi0, true,
                       A_DQ};
    add(s, call, c, &in);
    add(s, call, c, &out);
    call->nscratch = 1;
    call->scratch[0] = (struct pl_scratch){.name = "acc", .space = PL_VMEM, .dt = DT_F32,
                                           .rank = 2, .shape = {bq, D}};
    call->body = dqsum_body;
}
/* clang-format on */

static int check_smem(const struct kern *k, char *err, size_t n)
{
    for (int i = 0; i < k->ncalls; i++)
        if (k->calls[i].smem_prefetch_bytes > k->chip->smem_bytes && k->chip->smem_bytes)
            return FAIL("%s: the MaskInfo arrays need %llu bytes of SMEM, the chip has %llu "
                        "(use larger blocks)",
                        k->calls[i].name, (unsigned long long)k->calls[i].smem_prefetch_bytes,
                        (unsigned long long)k->chip->smem_bytes);
    return 0;
}

static int splash_init(struct kern *k, char *err, size_t n)
{
    struct splash *s = xcalloc(1, sizeof *s);
    k->impl = s;
    s->p = k->op->u.splash;
    const struct op_splash *p = &s->p;
    const struct splash_block_sizes *b = &p->bs;
    if (b->use_fused_bwd_kernel && (b->block_q_dq || b->block_kv_dq))
        return FAIL("Block sizes for dq kernel are not needed with a fused kernel.");
    if (p->nmasks != 1 && p->nmasks != p->q_heads)
        return FAIL("expected 1 mask or one per q head (%lld), got %d", (long long)p->q_heads,
                    p->nmasks);
    if (p->dt == DT_INT8 || p->dt == DT_INT32)
        return FAIL("splash attention takes floating-point q, k, v, got %s", dtype_name(p->dt));
    for (int i = 0; i < p->nmasks; i++)
        if (p->masks[i]->q_len != p->q_seq_len || p->masks[i]->kv_len != p->kv_seq_len)
            return FAIL("mask %d is %lldx%lld, the attention is q_seq_len x kv_seq_len = "
                        "%lldx%lld",
                        i, (long long)p->masks[i]->q_len, (long long)p->masks[i]->kv_len,
                        (long long)p->q_seq_len, (long long)p->kv_seq_len);
    s->heads = xcalloc((size_t)p->q_heads, sizeof *s->heads);
    for (int64_t h = 0; h < p->q_heads; h++)
        s->heads[h] = p->masks[p->nmasks == 1 ? 0 : h];
    s->mqa = p->kv_heads == 1 && p->q_heads > 1;
    s->ratio = p->kv_heads >= 1 && p->q_heads % p->kv_heads == 0 ? p->q_heads / p->kv_heads : 1;
    s->seg = p->nseg > 0;
    s->batched = p->batch > 1, s->gb = s->batched ? 1 : 0;
    s->fused = b->use_fused_bwd_kernel;
    s->fwd = p->mode != ATTN_BWD, s->bwd = p->mode != ATTN_FWD;
    s->residuals = p->mode == ATTN_FWD_BWD; /* the custom_vjp fwd saves logsumexp */
    s->mdt = p->dt == DT_F32 ? DT_BF16 : p->dt;
    if (build_infos(s, k, err, n) || check_fwd(s, err, n))
        return -1;
    if (s->d[D_FWD].mi.computable)
        s->fn = s->heads[0];
    if (s->bwd && !has_backward_blocks(b))
        return FAIL("Need to specify backward blocks.");
    if (s->bwd && (check_dkv(s, err, n) || (!s->fused && check_dq(s, err, n))))
        return -1;
    if (s->fwd)
        build_fwd(s, k);
    if (s->bwd) {
        build_prep(s, k);
        build_dkv(s, k);
        if (s->fused)
            build_dqsum(s, k);
        else
            build_dq(s, k);
    }
    return check_smem(k, err, n);
}

/* ---------------------------------------------------------------- functional data */

static int64_t op_elems(const struct pl_operand *o)
{
    int64_t e = 1;
    for (int d = 0; d < o->rank; d++)
        e *= o->shape[d];
    return e;
}

/* The naive reference of one (batch row, q head): masked softmax attention in
 * double, and with 'dO' its gradient (dk, dv accumulated over the group). */
struct ref {
    double *o, *lse, *dq, *dk, *dv;
};

static void ref_head(const struct splash *s, int64_t b, int64_t h, const float *dO, struct ref *r)
{
    const struct op_splash *p = &s->p;
    int64_t Q = p->q_seq_len, K = p->kv_seq_len, D = p->head_dim, kh = s->mqa ? 0 : h / s->ratio;
    const float *q = s->arr[A_Q] + (b * p->q_heads + h) * Q * D;
    const float *k = s->arr[A_K] + (b * p->kv_heads + kh) * K * D;
    const float *v = s->arr[A_V] + (b * p->kv_heads + kh) * K * D;
    size_t qo = (size_t)((b * p->q_heads + h) * Q), ko = (size_t)((b * p->kv_heads + kh) * K);
    double *pr = xmalloc(sizeof(double) * (size_t)K);
    for (int64_t i = 0; i < Q; i++) {
        double mx_ = -INFINITY, sum = 0;
        for (int64_t j = 0; j < K; j++) {
            pr[j] = -INFINITY;
            if (!allowed(s, h, i, j))
                continue;
            double a = 0;
            for (int64_t d = 0; d < D; d++)
                a += (double)q[i * D + d] * k[j * D + d];
            pr[j] = a;
            mx_ = a > mx_ ? a : mx_;
        }
        for (int64_t j = 0; j < K; j++)
            sum += pr[j] = pr[j] == -INFINITY ? 0 : exp(pr[j] - mx_);
        double *o = r->o + (qo + (size_t)i) * (size_t)D;
        for (int64_t j = 0; j < K; j++)
            for (int64_t d = 0; pr[j] != 0 && d < D; d++)
                o[d] += pr[j] / sum * v[j * D + d];
        r->lse[qo + (size_t)i] = log(sum) + mx_;
        if (!dO)
            continue;
        const float *g = dO + (qo + (size_t)i) * (size_t)D;
        double di = 0;
        for (int64_t d = 0; d < D; d++)
            di += g[d] * o[d];
        for (int64_t j = 0; j < K; j++) {
            double pj = pr[j] / sum, dp = 0;
            if (pj == 0)
                continue;
            for (int64_t d = 0; d < D; d++)
                dp += (double)g[d] * v[j * D + d];
            double ds = pj * (dp - di);
            for (int64_t d = 0; d < D; d++) {
                r->dq[(qo + (size_t)i) * (size_t)D + (size_t)d] += ds * k[j * D + d];
                r->dk[(ko + (size_t)j) * (size_t)D + (size_t)d] += ds * q[i * D + d];
                r->dv[(ko + (size_t)j) * (size_t)D + (size_t)d] += pj * g[d];
            }
        }
    }
    free(pr);
}

static void ref_run(const struct splash *s, bool grads, struct ref *r)
{
    const struct op_splash *p = &s->p;
    size_t nq = (size_t)(p->batch * p->q_heads * p->q_seq_len);
    size_t nk = (size_t)(p->batch * p->kv_heads * p->kv_seq_len);
    size_t D = (size_t)p->head_dim;
    r->o = xcalloc(nq * D, sizeof(double));
    r->lse = xcalloc(nq, sizeof(double));
    r->dq = grads ? xcalloc(nq * D, sizeof(double)) : NULL;
    r->dk = grads ? xcalloc(nk * D, sizeof(double)) : NULL;
    r->dv = grads ? xcalloc(nk * D, sizeof(double)) : NULL;
    for (int64_t b = 0; b < p->batch; b++)
        for (int64_t h = 0; h < p->q_heads; h++)
            ref_head(s, b, h, grads ? s->arr[A_DO] : NULL, r);
}

static void ref_free(struct ref *r)
{
    free(r->o);
    free(r->lse);
    free(r->dq);
    free(r->dk);
    free(r->dv);
}

/* bwd mode without the fwd kernel: o and logsumexp come from the reference. */
static void fill_residuals(struct splash *s)
{
    const struct op_splash *p = &s->p;
    struct ref r;
    ref_run(s, false, &r);
    size_t nq = (size_t)(p->batch * p->q_heads * p->q_seq_len), D = (size_t)p->head_dim;
    for (size_t e = 0; e < nq * D; e++)
        s->arr[A_OUT][e] = pl_round((float)r.o[e], p->dt);
    for (size_t e = 0; e < nq; e++)
        for (int x = 0; x < LANES; x++)
            s->arr[A_LSE][e * LANES + (size_t)x] = (float)r.lse[e];
    ref_free(&r);
}

static void fill_mask(const struct dirinfo *d, float *a, int64_t n)
{
    for (int64_t e = 0; e < n; e++)
        a[e] = d->mi.partial_blocks[e] ? 1.0f : 0.0f;
}

/* Contents of host array 'id' of 'n' elements. */
static float *make_arr(const struct splash *s, int id, int64_t n, uint64_t seed)
{
    const struct op_splash *p = &s->p;
    enum dtype dt = p->dt;
    switch (id) {
    case A_Q:
    case A_K:
    case A_V:
    case A_DO:
        return kern_rand_array(seed + (uint64_t)id, n, dt, 1.0f);
    default:
        break;
    }
    float *a = xcalloc((size_t)n, sizeof(float));
    int64_t Q = p->q_seq_len, K = p->kv_seq_len;
    for (int64_t e = 0; e < n; e++) {
        if (id == A_QSEG_L)
            a[e] = (float)seg_id(p, e / LANES % Q);
        else if (id == A_KVSEG_S)
            a[e] = (float)seg_id(p, e % K);
        else if (id == A_QSEG_S)
            a[e] = (float)seg_id(p, e % Q);
        else if (id == A_KVSEG_L)
            a[e] = (float)seg_id(p, e / LANES % K);
        else if (id == A_QSEQ0 + D_FWD || id == A_QSEQ0 + D_DQ)
            a[e] = (float)(e / LANES);
        else if (id == A_QSEQ0 + D_DKV)
            a[e] = (float)(e % Q);
    }
    if (id >= A_MASK0 && id < A_MASK0 + NDIR)
        fill_mask(&s->d[id - A_MASK0], a, n);
    return a;
}

static void splash_data(struct kern *k, uint64_t seed)
{
    struct splash *s = k->impl;
    /* the seeded inputs first, so the reference sees them whatever the call order */
    static const int inputs[] = {A_Q, A_K, A_V, A_DO};
    const struct op_splash *p = &s->p;
    int64_t nq = p->batch * p->q_heads * p->q_seq_len * p->head_dim;
    int64_t nk = p->batch * p->kv_heads * p->kv_seq_len * p->head_dim;
    for (int i = 0; i < 4; i++)
        s->arr[inputs[i]] =
            make_arr(s, inputs[i], inputs[i] == A_K || inputs[i] == A_V ? nk : nq, seed);
    for (int ci = 0; ci < k->ncalls; ci++) {
        struct pl_call *call = &k->calls[ci];
        for (int i = 0; i < call->noperands; i++) {
            int id = s->cc[ci].arr[i];
            int64_t e = op_elems(&call->operands[i]);
            if (id == A_FAKE) {
                call->operands[i].data = s->fake[s->nfake++] = xcalloc((size_t)e, sizeof(float));
                continue;
            }
            if (!s->arr[id])
                s->arr[id] = make_arr(s, id, e, seed);
            call->operands[i].data = s->arr[id];
        }
    }
    if (!s->fwd)
        fill_residuals(s);
}

/* Largest |got - ref| over the largest |ref| of 'n' elements. */
static double rel_err(const float *got, const double *ref, size_t n)
{
    double worst = 0, scale = 1e-6;
    for (size_t e = 0; e < n; e++) {
        double d = fabs(got[e] - ref[e]);
        worst = d > worst ? d : worst;
        scale = fabs(ref[e]) > scale ? fabs(ref[e]) : scale;
    }
    return worst / scale;
}

static double splash_verify(const struct kern *k, bool *ok, char *msg, size_t n)
{
    const struct splash *s = k->impl;
    const struct op_splash *p = &s->p;
    struct ref r;
    ref_run(s, s->bwd, &r);
    size_t nq = (size_t)(p->batch * p->q_heads * p->q_seq_len) * (size_t)p->head_dim;
    size_t nk = (size_t)(p->batch * p->kv_heads * p->kv_seq_len) * (size_t)p->head_dim;
    /* bf16 rounding of the MXU operands (p, ds) and of the outputs */
    double tol = 2e-2, worst = 0;
    const char *names[] = {"out", "dq", "dk", "dv"};
    double errs[4] = {0};
    if (s->fwd)
        errs[0] = rel_err(s->arr[A_OUT], r.o, nq);
    if (s->bwd) {
        errs[1] = rel_err(s->arr[A_DQ], r.dq, nq);
        errs[2] = rel_err(s->arr[A_DK], r.dk, nk);
        errs[3] = rel_err(s->arr[A_DV], r.dv, nk);
    }
    int wi = 0;
    for (int i = 0; i < 4; i++)
        if (errs[i] > worst)
            worst = errs[i], wi = i;
    ref_free(&r);
    *ok = worst <= tol;
    if (!*ok)
        snprintf(msg, n,
                 "%s differs from naive masked attention by %.3g of its largest value "
                 "(tolerance %.3g)",
                 names[wi], worst, tol);
    return worst;
}

static void splash_fini(struct kern *k)
{
    struct splash *s = k->impl;
    if (!s)
        return;
    for (int d = 0; d < NDIR; d++)
        maskinfo_free(&s->d[d].mi);
    for (int i = 0; i < NARR; i++)
        free(s->arr[i]);
    for (int i = 0; i < s->nfake; i++)
        free(s->fake[i]);
    free(s->heads);
    free(s);
}

static void splash_params_fini(struct op *op)
{
    for (int i = 0; i < op->u.splash.nmasks; i++)
        mask_free(op->u.splash.masks[i]);
    free(op->u.splash.masks);
}

const struct kern_kind kern_splash_kind = {.init = splash_init, .data = splash_data,
                                          .verify = splash_verify, .fini = splash_fini,
                                          .params_fini = splash_params_fini};

/* ---- block_sizes: auto (kernels/tune.h) ---- */

static const char *const tune_names[] = {"block_q",      "block_kv",     "block_kv_compute",
                                         "block_q_dkv",  "block_kv_dkv", "block_kv_dkv_compute",
                                         "block_q_dq",   "block_kv_dq"};

static void tune_get(const struct op *op, int64_t *v)
{
    const struct splash_block_sizes *b = &op->u.splash.bs;
    const int64_t all[] = {b->block_q,     b->block_kv,     b->block_kv_compute,
                           b->block_q_dkv, b->block_kv_dkv, b->block_kv_dkv_compute,
                           b->block_q_dq,  b->block_kv_dq};
    memcpy(v, all, sizeof all);
}

static void tune_set(struct op *op, const int64_t *v)
{
    struct splash_block_sizes *b = &op->u.splash.bs;
    b->block_q = v[0], b->block_kv = v[1], b->block_kv_compute = v[2];
    b->block_q_dkv = v[3], b->block_kv_dkv = v[4], b->block_kv_dkv_compute = v[5];
    b->block_q_dq = v[6], b->block_kv_dq = v[7];
}

/* block_q and block_kv: powers of two from 128 to 2048 that divide the
 * sequences; block_kv_compute: 128, 256, 512 or block_kv, dividing it. The
 * backward kernels take the forward's blocks (dq's only when the op has dq
 * blocks: with the fused backward kernel it has none). */
static int tune_enumerate(const struct op *op, const struct chip_params *chip,
                          int64_t (*v)[TUNE_MAX_PARAMS], int max)
{
    (void)chip;
    const struct op_splash *p = &op->u.splash;
    int64_t bq[64], bkv[64];
    int nq = tune_divisors(p->q_seq_len, p->q_seq_len < 128 ? p->q_seq_len : 128, 2048, bq);
    int nk = tune_divisors(p->kv_seq_len, p->kv_seq_len < 128 ? p->kv_seq_len : 128, 2048, bkv);
    int n = 0;
    for (int a = 0; a < nq; a++)
        for (int b = 0; b < nk; b++) {
            int64_t minors[4];
            int nm = tune_compute_blocks(bkv[b], minors);
            for (int c = 0; c < nm && n < max; c++) {
                int64_t *x = v[n++];
                tune_get(op, x);
                x[0] = bq[a], x[1] = bkv[b], x[2] = minors[c];
                if (p->mode != ATTN_FWD) {
                    x[3] = bq[a], x[4] = bkv[b], x[5] = minors[c];
                    if (x[6] || x[7])
                        x[6] = bq[a], x[7] = bkv[b];
                }
            }
        }
    return n;
}

/* The body a floor charges every step that runs a block: the sub-blocks' work
 * alone, without the init and write-back of the first and last steps (they
 * only add VPU work). */
static void floor_body(struct pl_ctx *ctx, const int64_t *G, void *user)
{
    const struct callctx *c = user;
    (void)G;
    for (int64_t t = 0; c->kind == C_FWD && t < c->d->bkv / c->d->bkv_c; t++)
        fwd_sub_work(ctx, c);
    if (c->kind == C_DQ)
        dq_run_work(ctx, c);
    for (int64_t t = 0; c->kind == C_DKV && t < c->d->bkv / c->d->bkv_c; t++)
        dkv_sub_work(ctx, c);
}

/* Whether the step at 'G' of a mask-driven call runs a block (the bodies' z.run). */
static bool step_runs(const struct pl_call *call, const int64_t *G)
{
    const struct callctx *c = call->user;
    return (c->kind == C_DKV ? dkv_nz(c, G) : fwd_nz(c, G)).run;
}

/* A floor of tune_dry_bound without walking the grids with the bodies
 * (tune_floor_steps): a step that runs a block costs its sub-blocks' MXU and
 * VPU time at least; the glue calls' work, the HBM and the first and last
 * steps' extra work only add to the bound. */
static double tune_floor(const struct kern *k)
{
    double run_s[KERN_MAX_CALLS] = {0};
    for (int i = 0; i < k->ncalls; i++) {
        const struct callctx *c = k->calls[i].user;
        if (c->kind != C_FWD && c->kind != C_DQ && c->kind != C_DKV)
            continue;
        struct pl_call one = k->calls[i];
        one.body = floor_body;
        struct pl_work w;
        pl_step_work(&one, k->chip, 0, &w);
        run_s[i] = w.mxu_s + w.vpu_s;
    }
    return tune_floor_steps(k, run_s, step_runs);
}

/* Two ops search alike when all but their mask pointers are equal bytes and
 * their masks are equal (upstream's mask __eq__). */
static bool tune_same(const struct op *a, const struct op *b)
{
    struct op_splash x = a->u.splash, y = b->u.splash;
    if (x.nmasks != y.nmasks)
        return false;
    x.masks = y.masks = NULL;
    if (memcmp(&x, &y, sizeof x) != 0)
        return false;
    for (int i = 0; i < x.nmasks; i++)
        if (!mask_equal(a->u.splash.masks[i], b->u.splash.masks[i]))
            return false;
    return true;
}

static void tune_keep(struct op *key)
{
    struct op_splash *p = &key->u.splash;
    struct mask **m = xcalloc((size_t)p->nmasks, sizeof *m);
    for (int i = 0; i < p->nmasks; i++)
        m[i] = mask_copy(p->masks[i]);
    p->masks = m;
}

const struct kern_tune kern_splash_tune = {.key = "block_sizes", .nparams = 8,
                                           .names = tune_names, .get = tune_get, .set = tune_set,
                                           .enumerate = tune_enumerate, .bound = tune_dry_bound,
                                           .floor = tune_floor, .same = tune_same, .keep = tune_keep};
