/* kernels/flash.c -- the Pallas TPU flash attention of jax
 * jax/experimental/pallas/ops/tpu/flash_attention.py @ cec06d1 ("FA" below):
 * forward (_flash_attention_impl L589-793), the di precompute of the VJP
 * (L273-275), backward dkv (L796-1143) and dq (L1146-1478). Grids, BlockSpecs,
 * causal index-map remaps, scratch and error messages follow upstream (see
 * docs/pallas-semantics.md section 3). Each grid step reports the
 * matmuls and the VPU/EUP/XLU work of the ops upstream's body traces; in
 * functional mode the bodies compute the same online softmax on their VMEM
 * blocks and verify compares with naive float64 attention and its gradient. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel.h"
#include "base/diag.h"
#include "kernels/tune.h"
#include "base/xalloc.h"

#define MIN_BLOCK 128 /* MIN_BLOCK_SIZE (FA L321) */
#define LANES 128     /* NUM_LANES (FA L30) */
#define SUBLANES 8    /* NUM_SUBLANES (FA L31) */
/* DEFAULT_MASK_VALUE (FA L29): a Python float, rounded to f32 when added. */
#define MASK_VALUE ((float)(-0.7 * (double)FLT_MAX))
/* The di precompute is an XLA fusion, modelled as a pipelined loop over row
 * blocks of at most this many rows and this much VMEM (an assumption). */
#define PREP_MAX_ROWS 1024
#define PREP_MAX_VMEM (4u << 20)

/* Operand roles of each call; the slot of a role is -1 when absent. */
enum fwd_role { F_Q, F_K, F_V, F_AB, F_QS, F_KS, F_O, F_L, F_M, F_COUNT };
/* dkv outputs dk, dv; dq outputs dq, ds (ds only with a bias). */
enum bwd_role { B_Q, B_K, B_V, B_AB, B_QS, B_KS, B_L, B_M, B_DO, B_DI, B_OUT0, B_OUT1, B_COUNT };
enum prep_role { PRE_O, PRE_DO, PRE_LIN, PRE_MIN, PRE_DI, PRE_DIQ, PRE_L, PRE_M, PRE_COUNT };

/* Functional mode: host (HBM) arrays, row-major. */
struct flash_arrays {
    float *q, *k, *v, *ab, *qs, *ks; /* inputs; qs [B,Sq,128], ks [B,8,Skv] */
    float *o, *lres, *mres;          /* forward output and residuals [B,H,Sq,128] */
    float *do_;                      /* backward input dO */
    float *di, *diq, *l, *m;         /* di precompute outputs (diq: dq's di, if distinct) */
    float *dq, *dk, *dv, *ds;        /* backward outputs */
};

struct flash {
    struct op_flash p;
    bool seg, single, residuals, fwd, bwd;
    int64_t nk;        /* forward kv steps: kv_seq_len / block_k_major */
    int64_t prep_rows; /* rows per step of the di precompute */
    int fx[F_COUNT], kx[B_COUNT], qx[B_COUNT], px[PRE_COUNT];
    int cfwd, cprep, cdkv, cdq; /* call slots, -1 if absent */
    char names[4][96];
    struct flash_arrays a;
};

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* below_or_on_diag (FA L325-328): the block's bottom-left corner is on or
 * below the diagonal, with upstream's strict '>'. */
static bool on_diag(int64_t r, int64_t r_blk, int64_t c, int64_t c_blk)
{
    return (r + 1) * r_blk - 1 > c * c_blk;
}

/* ---- upstream's checks ---- */

/* BlockSizes.__post_init__ verify_major_minor (FA L73-83). */
static int major_minor(char *err, size_t n, const char *pre, const char *suf, int64_t major,
                       int64_t minor)
{
    if (minor > major) {
        return diag_fail(err, n, "%s%s=%lld should be smaller than %s_major%s=%lld", pre, suf,
                         (long long)minor, pre, suf, (long long)major);
    }
    if (major % minor != 0) {
        return diag_fail(err, n, "%s%s=%lld should divide %s_major%s=%lld", pre, suf,
                         (long long)minor, pre,
                         suf, (long long)major);
    }
    return 0;
}

/* _verify_block (FA L1707-1715). */
static int verify_block(char *err, size_t n, const char *block_name, const char *dim_name,
                        int64_t block, int64_t dim, bool divide)
{
    if (block > dim) {
        return diag_fail(err, n, "%s=%lld should be smaller or equal to %s=%lld", block_name,
                         (long long)block, dim_name, (long long)dim);
    }
    if (divide && dim % block != 0) {
        return diag_fail(err, n, "%s=%lld should be divisible by %s=%lld", dim_name, (long long)dim,
                         block_name, (long long)block);
    }
    return 0;
}

static int check_post_init(const struct flash_block_sizes *b, char *err, size_t n)
{
    if (!b->block_q || !b->block_k_major || !b->block_k || !b->block_b) {
        /* upstream fails with a TypeError comparing None; no message to copy */
        return diag_fail(err, n,
                         "block_q, block_k_major, block_k and block_b must be set "
                         "(only backward block sizes may be None)");
    }
    if (major_minor(err, n, "block_k", "", b->block_k_major, b->block_k))
        return -1;
    if (b->block_q_major_dkv && b->block_q_dkv &&
        major_minor(err, n, "block_q", "_dkv", b->block_q_major_dkv, b->block_q_dkv))
        return -1;
    if (b->block_k_major_dkv && b->block_k_dkv &&
        major_minor(err, n, "block_k", "_dkv", b->block_k_major_dkv, b->block_k_dkv))
        return -1;
    if (b->block_k_major_dq && b->block_k_dq &&
        major_minor(err, n, "block_k", "_dq", b->block_k_major_dq, b->block_k_dq))
        return -1;
    return 0;
}

/* The forward's _verify_block calls (FA L606-609), then the NotImplementedErrors
 * raised while tracing the kernel, in trace order (L413-417, L442-446, L455-463;
 * the single-step kernel L519-524 only has the segment-id one). */
static int check_fwd(const struct flash *f, char *err, size_t n)
{
    const struct op_flash *p = &f->p;
    const struct flash_block_sizes *b = &p->bs;
    if (verify_block(err, n, "block_q", "q_seq_len", b->block_q, p->q_seq_len, false) ||
        verify_block(err, n, "block_k_major", "kv_seq_len", b->block_k_major, p->kv_seq_len,
                     true) ||
        verify_block(err, n, "block_k", "kv_seq_len", b->block_k, p->kv_seq_len, true) ||
        verify_block(err, n, "block_b", "batch", b->block_b, p->batch, false))
        return -1;
    if (f->seg && b->block_k % LANES != 0) {
        return diag_fail(err, n, "kv block size must be a multiple of %d", LANES);
    }
    if (f->single)
        return 0;
    if (b->block_k % MIN_BLOCK != 0) {
        return diag_fail(err, n, "block_k=%lld should be a multiple of %d", (long long)b->block_k,
                         MIN_BLOCK);
    }
    if (p->head_dim % MIN_BLOCK != 0 && p->head_dim / MIN_BLOCK > 0) {
        return diag_fail(err, n, "head_dim=%lld should be a multiple of %d if larger",
                         (long long)p->head_dim, MIN_BLOCK);
    }
    return 0;
}

/* The bwd kernels' traces: segment ids need a kv block multiple of 128 (dq
 * L1201-1206; dkv L861-865 raises it without a message), and m, 1/l and di are
 * tiled block_k // 128 times against the (block_q, block_k) logits (L894-899,
 * L1227-1232), which fails to broadcast unless block_k is a multiple of 128. */
static int check_bwd_kernel(const struct flash *f, char *err, size_t n, const char *name,
                            int64_t bq, int64_t bk, bool dkv)
{
    if (f->seg && bk % LANES != 0) {
        if (dkv)
            snprintf(err, n,
                     "NotImplementedError (no message; raised by the dkv kernel: "
                     "%s=%lld is not a multiple of %d with segment ids)",
                     name, (long long)bk, LANES);
        else
            snprintf(err, n, "kv block size must be a multiple of %d", LANES);
        return -1;
    }
    if (bk % MIN_BLOCK != 0) {
        snprintf(
            err, n, "Incompatible shapes for broadcasting: shapes=[(%lld, %lld), (%lld, %lld)]",
            (long long)bq, (long long)bk, (long long)bq, (long long)(bk / MIN_BLOCK * MIN_BLOCK));
        return -1;
    }
    return 0;
}

/* _flash_attention_bwd (L267-271), then dkv (L963-966) and dq (L1308-1310;
 * upstream names kv_seq_len "block_k" in the last one). */
static int check_bwd(const struct flash *f, char *err, size_t n)
{
    const struct op_flash *p = &f->p;
    const struct flash_block_sizes *b = &p->bs;
    if (!b->block_q_major_dkv || !b->block_k_major_dkv || !b->block_q_dkv || !b->block_k_dkv ||
        !b->block_k_major_dq || !b->block_k_dq || !b->block_q_dq) {
        return diag_fail(err, n,
                "Program is being differentiated, but not all backward blocks are specified");
    }
    int64_t sq = p->q_seq_len, skv = p->kv_seq_len;
    if (verify_block(err, n, "block_q_major_dkv", "q_seq_len", b->block_q_major_dkv, sq, true) ||
        verify_block(err, n, "block_q_dkv", "q_seq_len", b->block_q_dkv, sq, true) ||
        verify_block(err, n, "block_k_major_dkv", "kv_seq_len", b->block_k_major_dkv, skv, true) ||
        verify_block(err, n, "block_k_dkv", "kv_seq_len", b->block_k_dkv, skv, true) ||
        check_bwd_kernel(f, err, n, "block_k_dkv", b->block_q_dkv, b->block_k_dkv, true))
        return -1;
    if (verify_block(err, n, "block_q_dq", "q_seq_len", b->block_q_dq, sq, true) ||
        verify_block(err, n, "block_k_major_dq", "kv_seq_len", b->block_k_major_dq, skv, true) ||
        verify_block(err, n, "block_k_dq", "block_k", b->block_k_dq, skv, true) ||
        check_bwd_kernel(f, err, n, "block_k_dq", b->block_q_dq, b->block_k_dq, false))
        return -1;
    return 0;
}

/* ---- index maps (grid indices -> block indices) ---- */

/* fwd grid (b, h, qi, kj). */
static int64_t fwd_kv_block(const struct flash *f, const int64_t *g)
{
    const struct flash_block_sizes *b = &f->p.bs;
    if (!f->p.causal || on_diag(g[2], b->block_q, g[3], b->block_k_major))
        return g[3];
    return 0; /* skipped: prefetch block 0, the next q row's first (L622-633) */
}

static void fwd_q_index(const int64_t *g, const void *u, int64_t *b) /* q, o, l, m */
{
    (void)u;
    b[0] = g[0], b[1] = g[1], b[2] = g[2], b[3] = 0;
}

static void fwd_kv_index(const int64_t *g, const void *u, int64_t *b)
{
    b[0] = g[0], b[1] = g[1], b[2] = fwd_kv_block(u, g), b[3] = 0;
}

/* L635-654: a skipped ab block maps to (qi+1, 0), or (0, 0) on the last q
 * row counted with floor division q_seq_len // block_q. */
static void fwd_ab_index(const int64_t *g, const void *u, int64_t *b)
{
    const struct flash *f = u;
    const struct flash_block_sizes *s = &f->p.bs;
    b[0] = g[0], b[1] = g[1], b[2] = g[2], b[3] = g[3];
    if (f->p.causal && !on_diag(g[2], s->block_q, g[3], s->block_k_major)) {
        b[2] = g[2] == f->p.q_seq_len / s->block_q - 1 ? 0 : g[2] + 1;
        b[3] = 0;
    }
}

static void fwd_qs_index(const int64_t *g, const void *u, int64_t *b)
{
    (void)u;
    b[0] = g[0], b[1] = g[2], b[2] = 0;
}

static void fwd_ks_index(const int64_t *g, const void *u, int64_t *b)
{
    b[0] = g[0], b[1] = 0, b[2] = fwd_kv_block(u, g);
}

/* dkv grid (b, h, kj, qi): q, do, di and q_seg stay at q block 0 when skipped
 * (L983-996, L1037-1051); l, m and ab are not remapped. */
static int64_t dkv_q_block(const struct flash *f, const int64_t *g)
{
    const struct flash_block_sizes *b = &f->p.bs;
    if (!f->p.causal || on_diag(g[3], b->block_q_major_dkv, g[2], b->block_k_major_dkv))
        return g[3];
    return 0;
}

static void dkv_qo_index(const int64_t *g, const void *u, int64_t *b) /* q, do, di */
{
    b[0] = g[0], b[1] = g[1], b[2] = dkv_q_block(u, g), b[3] = 0;
}

static void dkv_kv_index(const int64_t *g, const void *u, int64_t *b) /* k, v, dk, dv */
{
    (void)u;
    b[0] = g[0], b[1] = g[1], b[2] = g[2], b[3] = 0;
}

static void dkv_lm_index(const int64_t *g, const void *u, int64_t *b)
{
    (void)u;
    b[0] = g[0], b[1] = g[1], b[2] = g[3], b[3] = 0;
}

static void dkv_ab_index(const int64_t *g, const void *u, int64_t *b)
{
    (void)u;
    b[0] = g[0], b[1] = g[1], b[2] = g[3], b[3] = g[2];
}

static void dkv_qs_index(const int64_t *g, const void *u, int64_t *b)
{
    b[0] = g[0], b[1] = dkv_q_block(u, g), b[2] = 0;
}

static void dkv_ks_index(const int64_t *g, const void *u, int64_t *b)
{
    (void)u;
    b[0] = g[0], b[1] = 0, b[2] = g[2];
}

/* dq grid (b, h, qi, kj): k, v and kv_seg go to kv block 0 when skipped
 * (L1331-1344, L1380-1396); l, m, di and ab are not remapped. */
static int64_t dq_kv_block(const struct flash *f, const int64_t *g)
{
    const struct flash_block_sizes *b = &f->p.bs;
    if (!f->p.causal || on_diag(g[2], b->block_q_dq, g[3], b->block_k_major_dq))
        return g[3];
    return 0;
}

static void dq_kv_index(const int64_t *g, const void *u, int64_t *b)
{
    b[0] = g[0], b[1] = g[1], b[2] = dq_kv_block(u, g), b[3] = 0;
}

static void dq_ab_index(const int64_t *g, const void *u, int64_t *b) /* ab, ds */
{
    (void)u;
    b[0] = g[0], b[1] = g[1], b[2] = g[2], b[3] = g[3];
}

static void dq_ks_index(const int64_t *g, const void *u, int64_t *b)
{
    b[0] = g[0], b[1] = 0, b[2] = dq_kv_block(u, g);
}

/* ---- call construction ---- */

static int add_op(struct pl_call *c, const char *name, enum pl_dir dir, enum dtype dt, int rank,
                  const int64_t *shape, const int64_t *block, pl_index_fn *fn)
{
    int i = c->noperands++;
    struct pl_operand *o = &c->operands[i];
    *o = (struct pl_operand){
        .name = name, .dir = dir, .space = PL_VMEM, .dt = dt, .rank = rank, .index = fn};
    memcpy(o->shape, shape, sizeof(int64_t) * (size_t)rank);
    memcpy(o->block, block, sizeof(int64_t) * (size_t)rank);
    return i;
}

static void add_scratch(struct pl_call *c, const char *name, int rank, const int64_t *shape)
{
    struct pl_scratch *s = &c->scratch[c->nscratch++];
    *s = (struct pl_scratch){.name = name, .space = PL_VMEM, .dt = DT_F32, .rank = rank};
    memcpy(s->shape, shape, sizeof(int64_t) * (size_t)rank);
}

/* A 3- or 4-dim grid whose last axis is the reduction: (P, P, P[, A]). */
static void call_init(struct pl_call *c, const char *name, int ngrid, const int64_t *grid,
                      pl_body_fn *body, struct flash *f)
{
    memset(c, 0, sizeof *c);
    c->name = name;
    c->ngrid = ngrid;
    for (int i = 0; i < ngrid; i++) {
        c->grid[i] = grid[i];
        c->sem[i] = i < 3 ? PL_PARALLEL : PL_ARBITRARY;
    }
    c->body = body;
    c->user = f;
}

static void fill(int *ix, int n)
{
    for (int i = 0; i < n; i++)
        ix[i] = -1;
}

static pl_body_fn fwd_body, prep_body, dkv_body, dq_body;

/* _flash_attention_impl (L611-788). */
static void build_fwd(struct flash *f, struct pl_call *c)
{
    const struct op_flash *p = &f->p;
    int64_t B = p->batch, H = p->heads, Sq = p->q_seq_len, Skv = p->kv_seq_len, D = p->head_dim;
    int64_t bb = p->bs.block_b, bq = p->bs.block_q, bkM = p->bs.block_k_major;
    enum dtype dt = p->dt;
    call_init(c, f->names[0], 4, (int64_t[]){cdiv(B, bb), H, cdiv(Sq, bq), Skv / bkM}, fwd_body, f);
    int *x = f->fx;
    fill(x, F_COUNT);
    x[F_Q] = add_op(c, "q", PL_IN, dt, 4, (int64_t[]){B, H, Sq, D}, (int64_t[]){bb, 1, bq, D},
                    fwd_q_index);
    x[F_K] = add_op(c, "k", PL_IN, dt, 4, (int64_t[]){B, H, Skv, D}, (int64_t[]){bb, 1, bkM, D},
                    fwd_kv_index);
    x[F_V] = add_op(c, "v", PL_IN, dt, 4, (int64_t[]){B, H, Skv, D}, (int64_t[]){bb, 1, bkM, D},
                    fwd_kv_index);
    if (p->bias)
        x[F_AB] = add_op(c, "ab", PL_IN, dt, 4, (int64_t[]){B, H, Sq, Skv},
                         (int64_t[]){bb, 1, bq, bkM}, fwd_ab_index);
    if (f->seg) {
        x[F_QS] = add_op(c, "q_segment_ids", PL_IN, DT_INT32, 3, (int64_t[]){B, Sq, LANES},
                         (int64_t[]){bb, bq, LANES}, fwd_qs_index);
        x[F_KS] = add_op(c, "kv_segment_ids", PL_IN, DT_INT32, 3, (int64_t[]){B, SUBLANES, Skv},
                         (int64_t[]){bb, SUBLANES, bkM}, fwd_ks_index);
    }
    x[F_O] = add_op(c, "o", PL_OUT, dt, 4, (int64_t[]){B, H, Sq, D}, (int64_t[]){bb, 1, bq, D},
                    fwd_q_index);
    if (f->residuals) {
        x[F_L] = add_op(c, "l", PL_OUT, DT_F32, 4, (int64_t[]){B, H, Sq, MIN_BLOCK},
                        (int64_t[]){bb, 1, bq, MIN_BLOCK}, fwd_q_index);
        x[F_M] = add_op(c, "m", PL_OUT, DT_F32, 4, (int64_t[]){B, H, Sq, MIN_BLOCK},
                        (int64_t[]){bb, 1, bq, MIN_BLOCK}, fwd_q_index);
    }
    if (!f->single) { /* L674-680 */
        add_scratch(c, "m", 4, (int64_t[]){bb, 1, bq, MIN_BLOCK});
        add_scratch(c, "l", 4, (int64_t[]){bb, 1, bq, MIN_BLOCK});
        add_scratch(c, "acc", 4, (int64_t[]){bb, 1, bq, D});
    }
}

/* Rows per step of the di precompute: block_q_dq doubled while it divides
 * q_seq_len and the step's blocks fit PREP_MAX_VMEM. */
static int64_t prep_rows(const struct op_flash *p)
{
    int64_t bkM = p->bs.block_k_major_dq, r = p->bs.block_q_dq;
    int64_t lanes = 5 * LANES + (bkM != LANES ? bkM : 0); /* l, m in; di, l, m (, di_dq) out */
    int64_t d = cdiv(p->head_dim, LANES) * LANES;
    while (p->q_seq_len % (2 * r) == 0 && 2 * r <= PREP_MAX_ROWS &&
           2 * (2 * r) * (lanes * 4 + 2 * d * dtype_bytes(p->dt)) <= (int64_t)PREP_MAX_VMEM)
        r *= 2;
    return r;
}

/* di = sum(o * do, -1) (L273-275) and the broadcasts of l, m and di to 128
 * lanes (dkv L968-972) and of di to block_k_major_dq lanes (dq L1312-1316);
 * XLA CSEs dq's broadcast with dkv's when block_k_major_dq is 128. */
static void build_prep(struct flash *f, struct pl_call *c)
{
    const struct op_flash *p = &f->p;
    int64_t B = p->batch, H = p->heads, Sq = p->q_seq_len, D = p->head_dim;
    int64_t r = f->prep_rows = prep_rows(p), bkM = p->bs.block_k_major_dq;
    call_init(c, f->names[1], 3, (int64_t[]){B, H, Sq / r}, prep_body, f);
    int *x = f->px;
    fill(x, PRE_COUNT);
    const int64_t *s4 = (int64_t[]){B, H, Sq, D}, *b4 = (int64_t[]){1, 1, r, D};
    const int64_t *sl = (int64_t[]){B, H, Sq, LANES}, *bl = (int64_t[]){1, 1, r, LANES};
    x[PRE_O] = add_op(c, "o", PL_IN, p->dt, 4, s4, b4, fwd_q_index);
    x[PRE_DO] = add_op(c, "do", PL_IN, p->dt, 4, s4, b4, fwd_q_index);
    x[PRE_LIN] = add_op(c, "l_residual", PL_IN, DT_F32, 4, sl, bl, fwd_q_index);
    x[PRE_MIN] = add_op(c, "m_residual", PL_IN, DT_F32, 4, sl, bl, fwd_q_index);
    x[PRE_DI] = add_op(c, "di", PL_OUT, DT_F32, 4, sl, bl, fwd_q_index);
    if (bkM != LANES)
        x[PRE_DIQ] = add_op(c, "di_dq", PL_OUT, DT_F32, 4, (int64_t[]){B, H, Sq, bkM},
                            (int64_t[]){1, 1, r, bkM}, fwd_q_index);
    x[PRE_L] = add_op(c, "l", PL_OUT, DT_F32, 4, sl, bl, fwd_q_index);
    x[PRE_M] = add_op(c, "m", PL_OUT, DT_F32, 4, sl, bl, fwd_q_index);
}

/* The inputs dkv and dq share (L1081-1092, L1422-1433), with their blocks
 * and index maps: q-like (q, do, di), kv-like (k, v), l/m, ab, q_seg, kv_seg. */
struct bwd_maps {
    int64_t bq, bkM, di_lanes;
    pl_index_fn *qo, *kv, *lm, *ab, *qs, *ks;
};

static void add_bwd_inputs(const struct flash *f, struct pl_call *c, int *x,
                           const struct bwd_maps *mp)
{
    const struct op_flash *p = &f->p;
    int64_t B = p->batch, H = p->heads, Sq = p->q_seq_len, Skv = p->kv_seq_len, D = p->head_dim;
    int64_t bq = mp->bq, bkM = mp->bkM;
    enum dtype dt = p->dt;
    const int64_t *sq = (int64_t[]){B, H, Sq, D}, *bqs = (int64_t[]){1, 1, bq, D};
    const int64_t *skv = (int64_t[]){B, H, Skv, D}, *bkv = (int64_t[]){1, 1, bkM, D};
    const int64_t *sl = (int64_t[]){B, H, Sq, MIN_BLOCK}, *bl = (int64_t[]){1, 1, bq, MIN_BLOCK};
    fill(x, B_COUNT);
    x[B_Q] = add_op(c, "q", PL_IN, dt, 4, sq, bqs, mp->qo);
    x[B_K] = add_op(c, "k", PL_IN, dt, 4, skv, bkv, mp->kv);
    x[B_V] = add_op(c, "v", PL_IN, dt, 4, skv, bkv, mp->kv);
    if (p->bias)
        x[B_AB] = add_op(c, "ab", PL_IN, dt, 4, (int64_t[]){B, H, Sq, Skv},
                         (int64_t[]){1, 1, bq, bkM}, mp->ab);
    if (f->seg) {
        x[B_QS] = add_op(c, "q_segment_ids", PL_IN, DT_INT32, 3, (int64_t[]){B, Sq, LANES},
                         (int64_t[]){1, bq, LANES}, mp->qs);
        x[B_KS] = add_op(c, "kv_segment_ids", PL_IN, DT_INT32, 3, (int64_t[]){B, SUBLANES, Skv},
                         (int64_t[]){1, SUBLANES, bkM}, mp->ks);
    }
    x[B_L] = add_op(c, "l", PL_IN, DT_F32, 4, sl, bl, mp->lm);
    x[B_M] = add_op(c, "m", PL_IN, DT_F32, 4, sl, bl, mp->lm);
    x[B_DO] = add_op(c, "do", PL_IN, dt, 4, sq, bqs, mp->qo);
    x[B_DI] = add_op(c, "di", PL_IN, DT_F32, 4, (int64_t[]){B, H, Sq, mp->di_lanes}, bl, mp->qo);
}

/* _flash_attention_bwd_dkv (L974-1140). */
static void build_dkv(struct flash *f, struct pl_call *c)
{
    const struct op_flash *p = &f->p;
    int64_t B = p->batch, H = p->heads, Skv = p->kv_seq_len, D = p->head_dim;
    int64_t bqM = p->bs.block_q_major_dkv, bkM = p->bs.block_k_major_dkv;
    call_init(c, f->names[2], 4, (int64_t[]){B, H, Skv / bkM, p->q_seq_len / bqM}, dkv_body, f);
    struct bwd_maps mp = {bqM,          bkM,          MIN_BLOCK,    dkv_qo_index, dkv_kv_index,
                          dkv_lm_index, dkv_ab_index, dkv_qs_index, dkv_ks_index};
    add_bwd_inputs(f, c, f->kx, &mp);
    const int64_t *s = (int64_t[]){B, H, Skv, D}, *b = (int64_t[]){1, 1, bkM, D};
    f->kx[B_OUT0] = add_op(c, "dk", PL_OUT, p->dt, 4, s, b, dkv_kv_index);
    f->kx[B_OUT1] = add_op(c, "dv", PL_OUT, p->dt, 4, s, b, dkv_kv_index);
    add_scratch(c, "dk", 2, (int64_t[]){bkM, D}); /* L1105-1108 */
    add_scratch(c, "dv", 2, (int64_t[]){bkM, D});
}

/* _flash_attention_bwd_dq (L1318-1475). */
static void build_dq(struct flash *f, struct pl_call *c)
{
    const struct op_flash *p = &f->p;
    int64_t B = p->batch, H = p->heads, Sq = p->q_seq_len, Skv = p->kv_seq_len, D = p->head_dim;
    int64_t bqM = p->bs.block_q_dq, bkM = p->bs.block_k_major_dq;
    call_init(c, f->names[3], 4, (int64_t[]){B, H, Sq / bqM, Skv / bkM}, dq_body, f);
    struct bwd_maps mp = {bqM,         bkM,         bkM,          fwd_q_index, dq_kv_index,
                          fwd_q_index, dq_ab_index, fwd_qs_index, dq_ks_index};
    add_bwd_inputs(f, c, f->qx, &mp);
    f->qx[B_OUT0] = add_op(c, "dq", PL_OUT, p->dt, 4, (int64_t[]){B, H, Sq, D},
                           (int64_t[]){1, 1, bqM, D}, fwd_q_index);
    if (p->bias) /* ds, the gradient of ab (L1435-1443) */
        f->qx[B_OUT1] = add_op(c, "ds", PL_OUT, p->dt, 4, (int64_t[]){B, H, Sq, Skv},
                               (int64_t[]){1, 1, bqM, bkM}, dq_ab_index);
    add_scratch(c, "dq", 2, (int64_t[]){bqM, D}); /* L1444 */
}

/* ---- per-step work (the ops upstream's bodies trace) ----
 * pl_vpu counts per element of an f32 (rows, cols) tile; a tile of a packed
 * dtype occupies fewer vregs (rows scaled by its width). Exp and reciprocal
 * go to the EUP; a division is a reciprocal and a multiply. Row max/sum
 * combine the tile's vregs of a row on the VALU, then reduce across lanes
 * on the XLU. Groups of independent ops end with pl_vpu_flush. */

static int64_t packed_rows(int64_t rows, enum dtype dt)
{
    return cdiv(rows * dtype_bytes(dt), 4);
}

static void vld(struct pl_ctx *ctx, int64_t rows, int64_t cols, enum dtype dt)
{
    pl_vpu(ctx, packed_rows(rows, dt), cols, 0, 1, 0, 0, 0);
}

static void vst(struct pl_ctx *ctx, int64_t rows, int64_t cols, enum dtype dt)
{
    pl_vpu(ctx, packed_rows(rows, dt), cols, 0, 0, 1, 0, 0);
}

/* A (rows, cols) operand tile of 'dt' loaded and pushed into the MXU. */
static void vfeed(struct pl_ctx *ctx, int64_t rows, int64_t cols, enum dtype dt)
{
    pl_mxu_feed(ctx, packed_rows(rows, dt), cols, 0, 1);
}

/* jnp.max / jnp.sum over the last axis of a (rows, cols) f32 tile. */
static void work_row_reduce(struct pl_ctx *ctx, int64_t rows, int64_t cols)
{
    double nv = (double)cdiv(cols, LANES);
    pl_vpu(ctx, rows, cols, 1.0 - 1.0 / nv, 0, 0, 0, 0);
    pl_vpu(ctx, rows, LANES, 0, 0, 0, 0, 1);
}

/* Bias add, scale and masks of a (rows, cols) logits tile (L399-437). */
static void work_logits(struct pl_ctx *ctx, const struct flash *f, int64_t rows, int64_t cols)
{
    const struct op_flash *p = &f->p;
    double alu = 0;
    if (p->bias) { /* ab.astype(f32); s += ab */
        vld(ctx, rows, cols, p->dt);
        alu += 2;
    }
    if (p->sm_scale != 1.0)
        alu += 1;
    if (f->seg) { /* q ids (rows, 128) tiled, kv ids (1, cols); equal */
        vld(ctx, rows, LANES, DT_INT32);
        vld(ctx, 1, cols, DT_INT32);
        alu += 1;
    }
    if (p->causal) /* two iotas, their offsets, col <= row */
        alu += 5;
    if (f->seg && p->causal) /* logical_and */
        alu += 1;
    if (f->seg || p->causal) /* s + where(mask, 0, mask_value) */
        alu += 2;
    pl_vpu(ctx, rows, cols, alu, 0, 0, 0, 0);
}

/* One block_k sub-block of the forward online softmax (L388-473). */
static void work_fwd_sub(struct pl_ctx *ctx, const struct flash *f, int64_t bq, int64_t bk)
{
    int64_t D = f->p.head_dim;
    enum dtype dt = f->p.dt;
    vfeed(ctx, bq, D, dt);
    vfeed(ctx, bk, D, dt);
    pl_matmul(ctx, bq, D, bk, dt); /* s = q k^T, f32 */
    work_logits(ctx, f, bq, bk);
    work_row_reduce(ctx, bq, bk); /* m_curr */
    pl_vpu_flush(ctx);
    pl_vpu(ctx, bq, MIN_BLOCK, 1, 2, 0, 0, 0); /* load m_prev, l_prev; m_next */
    pl_vpu(ctx, bq, bk, 1, 0, 0, 1, 0);        /* p = exp(s - m_next) */
    pl_vpu(ctx, bq, MIN_BLOCK, 2, 0, 0, 1, 0); /* alpha = exp(m_prev - m_next); l_corr */
    work_row_reduce(ctx, bq, bk);              /* sum(p) */
    /* l_next = sum + l_corr; store l, m; 1/l_next, ==0, select; l_corr * inv */
    pl_vpu(ctx, bq, MIN_BLOCK, 4, 0, 2, 1, 0);
    pl_vpu(ctx, bq, D, 1, 1, 1, 0, 0); /* acc *= l_corr * inv */
    pl_vpu_flush(ctx);
    pl_mxu_feed(ctx, bq, bk, 1, 0); /* p.astype(v.dtype) */
    vfeed(ctx, bk, D, dt);
    pl_matmul(ctx, bq, bk, D, dt);     /* o_curr = p v */
    pl_vpu(ctx, bq, D, 2, 1, 1, 0, 0); /* acc += o_curr * inv */
}

/* The single-step kernel (block_k == kv_seq_len, L484-557). */
static void work_fwd_single(struct pl_ctx *ctx, const struct flash *f, int64_t bq, int64_t bk)
{
    int64_t D = f->p.head_dim;
    enum dtype dt = f->p.dt;
    vfeed(ctx, bq, D, dt);
    vfeed(ctx, bk, D, dt);
    pl_matmul(ctx, bq, D, bk, dt);
    work_logits(ctx, f, bq, bk);
    work_row_reduce(ctx, bq, bk); /* m */
    pl_vpu_flush(ctx);
    pl_vpu(ctx, bq, bk, 1, 0, 0, 1, 0); /* p = exp(s - m) */
    work_row_reduce(ctx, bq, bk);       /* l */
    pl_vpu_flush(ctx);
    pl_vpu(ctx, bq, bk, 2, 0, 0, 1, 0); /* p /= l; p.astype(v.dtype) */
    if (f->residuals)
        vst(ctx, 2 * bq, MIN_BLOCK, DT_F32); /* m, l broadcast to 128 lanes */
    pl_vpu_flush(ctx);
    vfeed(ctx, bk, D, dt);
    pl_matmul(ctx, bq, bk, D, dt);
    pl_mxu_drain(ctx, bq, D, 1, 0);                  /* astype(o.dtype) */
    pl_mxu_drain(ctx, packed_rows(bq, dt), D, 0, 1); /* stored */
}

/* The per-step work of the multi-step forward for one batch row of the block. */
static void work_fwd(struct pl_ctx *ctx, const struct flash *f, bool run, bool first, bool last)
{
    const struct flash_block_sizes *b = &f->p.bs;
    int64_t bq = b->block_q, D = f->p.head_dim;
    if (first) /* start_new_sequence (L368-376) */
        vst(ctx, 2 * bq + bq * cdiv(D, LANES), LANES, DT_F32);
    for (int64_t s = 0; run && s < b->block_k_major; s += b->block_k)
        work_fwd_sub(ctx, f, bq, b->block_k);
    if (last) { /* store_output (L475-481) */
        pl_vpu(ctx, bq, D, 1, 1, 0, 0, 0);
        vst(ctx, bq, D, f->p.dt);
        if (f->residuals)
            pl_vpu(ctx, 2 * bq, MIN_BLOCK, 0, 1, 1, 0, 0);
    }
}

/* p = exp(s - m) * (1 / l), recomputed in both backward kernels (L894-899, L1227-1232). */
static void work_bwd_p(struct pl_ctx *ctx, const struct flash *f, int64_t bq, int64_t bk)
{
    int64_t D = f->p.head_dim;
    enum dtype dt = f->p.dt;
    vfeed(ctx, bq, D, dt);               /* q */
    vfeed(ctx, 2 * bk, D, dt);           /* k, v */
    vld(ctx, 3 * bq, MIN_BLOCK, DT_F32); /* l, m, di */
    vfeed(ctx, bq, D, dt);               /* do */
    pl_matmul(ctx, bq, D, bk, dt);       /* logits = q k^T */
    work_logits(ctx, f, bq, bk);
    pl_vpu(ctx, bq, bk, 1, 0, 0, 1, 0);        /* exp(logits - m) */
    pl_vpu(ctx, bq, MIN_BLOCK, 0, 0, 0, 1, 0); /* 1 / l */
    pl_vpu(ctx, bq, bk, 1, 0, 0, 0, 0);        /* p * (1 / l) */
}

/* ds = (dp - di) * p [* sm_scale] on the (bq, bk) tile. */
static double ds_alu(const struct flash *f)
{
    return f->p.sm_scale != 1.0 ? 3 : 2;
}

/* One (block_q_dkv, block_k_dkv) sub-block of dkv (L831-921). */
static void work_dkv_sub(struct pl_ctx *ctx, const struct flash *f, int64_t bq, int64_t bk)
{
    int64_t D = f->p.head_dim;
    enum dtype dt = f->p.dt;
    work_bwd_p(ctx, f, bq, bk);
    pl_vpu(ctx, bq, bk, 1, 0, 0, 0, 1); /* p.T.astype(do.dtype): cast, XLU transpose */
    pl_vpu_flush(ctx);
    pl_matmul(ctx, bk, bq, D, dt);                  /* dv = p^T do */
    pl_vpu(ctx, bk, D, 1, 1, 1, 0, 0);              /* dv_scratch += dv */
    pl_matmul(ctx, bq, D, bk, dt);                  /* dp = do v^T */
    pl_vpu(ctx, bq, bk, ds_alu(f) + 1, 0, 0, 0, 1); /* ds; ds.T.astype */
    pl_vpu_flush(ctx);
    pl_matmul(ctx, bk, bq, D, dt);     /* dk = ds^T q */
    pl_vpu(ctx, bk, D, 1, 1, 1, 0, 0); /* dk_scratch += dk */
}

/* One block_k_dq sub-block of dq (L1177-1261). */
static void work_dq_sub(struct pl_ctx *ctx, const struct flash *f, int64_t bq, int64_t bk)
{
    int64_t D = f->p.head_dim;
    enum dtype dt = f->p.dt;
    work_bwd_p(ctx, f, bq, bk);
    pl_vpu_flush(ctx);
    pl_matmul(ctx, bq, D, bk, dt);                  /* dp = do v^T */
    pl_vpu(ctx, bq, bk, ds_alu(f) + 1, 0, 0, 0, 0); /* ds; ds.astype(k.dtype) */
    if (f->p.bias) {                                /* ds_tile_ref[...] = ds.astype */
        pl_vpu(ctx, bq, bk, 1, 0, 0, 0, 0);
        vst(ctx, bq, bk, dt);
    }
    pl_vpu_flush(ctx);
    pl_matmul(ctx, bq, bk, D, dt);     /* dq = ds k */
    pl_vpu(ctx, bq, D, 1, 1, 1, 0, 0); /* dq_scratch += */
}

/* ---- functional mode: the kernels' arithmetic on VMEM blocks ---- */

/* A sub-block of logits: q rows and k rows (D floats each), ab rows with
 * stride ab_stride, segment ids (qs with stride 128), global positions. */
struct tile {
    const float *q, *k, *ab, *qs, *ks;
    int64_t ab_stride, qpos0, kpos0;
};

/* s = (q.k + ab) * sm_scale, plus mask_value where masked (L395-437), in f32. */
static float tile_logit(const struct flash *f, const struct tile *t, int64_t r, int64_t c)
{
    int64_t D = f->p.head_dim;
    const float *q = t->q + r * D, *k = t->k + c * D;
    float s = 0;
    for (int64_t d = 0; d < D; d++)
        s += q[d] * k[d];
    if (t->ab)
        s += t->ab[r * t->ab_stride + c];
    if (f->p.sm_scale != 1.0)
        s *= (float)f->p.sm_scale;
    bool keep = !t->qs || t->qs[r * LANES] == t->ks[c];
    if (f->p.causal)
        keep = keep && t->kpos0 + c <= t->qpos0 + r;
    return keep ? s : s + MASK_VALUE;
}

static void set_lanes(float *row, float x)
{
    for (int i = 0; i < LANES; i++)
        row[i] = x;
}

/* One row of one sub-block of the online softmax (L388-473): updates the m, l
 * scratch rows and the normalised accumulator acc[D]. 'tmp' holds cols + D. */
static void fwd_row(const struct flash *f, const struct tile *t, const float *v, int64_t r,
                    int64_t cols, float *ml[2], float *acc, float *tmp)
{
    int64_t D = f->p.head_dim;
    float *p = tmp, *oc = tmp + cols, m_prev = ml[0][r * LANES], l_prev = ml[1][r * LANES];
    float m_cur = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; c++) {
        p[c] = tile_logit(f, t, r, c);
        m_cur = fmaxf(m_cur, p[c]);
    }
    float m_next = fmaxf(m_prev, m_cur);
    for (int64_t c = 0; c < cols; c++)
        sum += p[c] = expf(p[c] - m_next);
    float l_corr = expf(m_prev - m_next) * l_prev, l_next = sum + l_corr;
    set_lanes(ml[0] + r * LANES, m_next);
    set_lanes(ml[1] + r * LANES, l_next);
    float inv = l_next == 0.0f ? 1.0f : 1.0f / l_next;
    memset(oc, 0, sizeof(float) * (size_t)D);
    for (int64_t c = 0; c < cols; c++) {
        float pb = pl_round(p[c], f->p.dt);
        for (int64_t d = 0; d < D; d++)
            oc[d] += pb * v[c * D + d];
    }
    for (int64_t d = 0; d < D; d++) {
        acc[r * D + d] *= l_corr * inv;
        acc[r * D + d] += oc[d] * inv;
    }
}

/* One row of the single-step kernel (L507-557): o, and m, l if kept. */
static void single_row(const struct flash *f, const struct tile *t, const float *v, int64_t r,
                       int64_t cols, float *o, float *m, float *l, float *tmp)
{
    int64_t D = f->p.head_dim;
    float mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; c++) {
        tmp[c] = tile_logit(f, t, r, c);
        mx = fmaxf(mx, tmp[c]);
    }
    for (int64_t c = 0; c < cols; c++)
        sum += tmp[c] = expf(tmp[c] - mx);
    if (m)
        set_lanes(m + r * LANES, mx), set_lanes(l + r * LANES, sum);
    for (int64_t d = 0; d < D; d++)
        o[r * D + d] = 0;
    for (int64_t c = 0; c < cols; c++) {
        float pb = pl_round(tmp[c] / sum, f->p.dt);
        for (int64_t d = 0; d < D; d++)
            o[r * D + d] += pb * v[c * D + d];
    }
}

static const float *buf_or_null(struct pl_ctx *ctx, int slot)
{
    return slot >= 0 ? pl_buf(ctx, slot) : NULL;
}

/* The logits tile of batch row 'bi' of the forward block at grid 'g'. */
static struct tile fwd_tile(struct pl_ctx *ctx, const struct flash *f, const int64_t *g, int64_t bi)
{
    const int *x = f->fx;
    int64_t D = f->p.head_dim, bq = f->p.bs.block_q, bkM = f->p.bs.block_k_major;
    const float *ab = buf_or_null(ctx, x[F_AB]), *qs = buf_or_null(ctx, x[F_QS]);
    const float *ks = buf_or_null(ctx, x[F_KS]);
    return (struct tile){pl_buf(ctx, x[F_Q]) + bi * bq * D,
                         pl_buf(ctx, x[F_K]) + bi * bkM * D,
                         ab ? ab + bi * bq * bkM : NULL,
                         qs ? qs + bi * bq * LANES : NULL,
                         ks ? ks + bi * SUBLANES * bkM : NULL,
                         bkM,
                         g[2] * bq,
                         g[3] * bkM};
}

/* The forward body's arithmetic for batch row 'bi' of the block. */
static void fwd_data(struct pl_ctx *ctx, const struct flash *f, const int64_t *g, int64_t bi,
                     bool run, bool first, bool last)
{
    const struct flash_block_sizes *b = &f->p.bs;
    const int *x = f->fx;
    int64_t D = f->p.head_dim, bq = b->block_q, bkM = b->block_k_major;
    struct tile t = fwd_tile(ctx, f, g, bi);
    const float *v = pl_buf(ctx, x[F_V]) + bi * bkM * D;
    float *o = pl_buf(ctx, x[F_O]) + bi * bq * D, *tmp = pl_state(ctx);
    float *lo = x[F_L] >= 0 ? pl_buf(ctx, x[F_L]) + bi * bq * LANES : NULL;
    float *mo = x[F_M] >= 0 ? pl_buf(ctx, x[F_M]) + bi * bq * LANES : NULL;
    for (int64_t r = 0; f->single && r < bq; r++)
        single_row(f, &t, v, r, bkM, o, mo, lo, tmp);
    if (f->single)
        return;
    float *ml[2] = {pl_scratch_buf(ctx, 0) + bi * bq * LANES,
                    pl_scratch_buf(ctx, 1) + bi * bq * LANES};
    float *acc = pl_scratch_buf(ctx, 2) + bi * bq * D;
    for (int64_t r = 0; first && r < bq; r++)
        set_lanes(ml[0] + r * LANES, -INFINITY), set_lanes(ml[1] + r * LANES, 0);
    if (first)
        memset(acc, 0, sizeof(float) * (size_t)(bq * D));
    for (int64_t s = 0; run && s < bkM; s += b->block_k) {
        struct tile ts = t;
        ts.k += s * D, ts.ab = t.ab ? t.ab + s : NULL, ts.ks = t.ks ? t.ks + s : NULL;
        ts.kpos0 += s;
        for (int64_t r = 0; r < bq; r++)
            fwd_row(f, &ts, v + s * D, r, b->block_k, ml, acc, tmp);
    }
    if (last) { /* o; l and m when the residuals are outputs */
        memcpy(o, acc, sizeof(float) * (size_t)(bq * D));
        if (lo)
            memcpy(lo, ml[1], sizeof(float) * (size_t)(bq * LANES)),
                memcpy(mo, ml[0], sizeof(float) * (size_t)(bq * LANES));
    }
}

static void fwd_body(struct pl_ctx *ctx, const int64_t *g, void *user)
{
    const struct flash *f = user;
    const struct flash_block_sizes *b = &f->p.bs;
    bool run = !f->p.causal || on_diag(g[2], b->block_q, g[3], b->block_k_major);
    bool first = g[3] == 0, last = g[3] == f->nk - 1;
    for (int64_t bi = 0; bi < b->block_b; bi++) {
        if (f->single)
            work_fwd_single(ctx, f, b->block_q, f->p.kv_seq_len);
        else
            work_fwd(ctx, f, run, first, last);
        if (pl_functional(ctx))
            fwd_data(ctx, f, g, bi, f->single || run, first, last);
    }
}

/* di = sum(o * do, -1) and the lane broadcasts, for one (rows, D) block. */
static void prep_body(struct pl_ctx *ctx, const int64_t *g, void *user)
{
    const struct flash *f = user;
    int64_t r = f->prep_rows, D = f->p.head_dim, bkM = f->p.bs.block_k_major_dq;
    const int *x = f->px;
    (void)g;
    vld(ctx, 2 * r, D, f->p.dt);              /* o, do */
    pl_vpu(ctx, r, D, 3, 0, 0, 0, 0);         /* two casts to f32, multiply */
    work_row_reduce(ctx, r, D);               /* sum over head_dim */
    pl_vpu(ctx, 2 * r, LANES, 0, 1, 0, 0, 1); /* l, m lane 0 broadcast */
    vst(ctx, 3 * r, LANES, DT_F32);           /* di, l, m */
    if (x[PRE_DIQ] >= 0)
        vst(ctx, r, bkM, DT_F32);
    if (!pl_functional(ctx))
        return;
    const float *o = pl_buf(ctx, x[PRE_O]), *dO = pl_buf(ctx, x[PRE_DO]);
    const float *li = pl_buf(ctx, x[PRE_LIN]), *mi = pl_buf(ctx, x[PRE_MIN]);
    float *di = pl_buf(ctx, x[PRE_DI]), *diq = x[PRE_DIQ] >= 0 ? pl_buf(ctx, x[PRE_DIQ]) : NULL;
    for (int64_t i = 0; i < r; i++) {
        float s = 0;
        for (int64_t d = 0; d < D; d++)
            s += o[i * D + d] * dO[i * D + d];
        set_lanes(di + i * LANES, s);
        for (int64_t c = 0; diq && c < bkM; c++)
            diq[i * bkM + c] = s;
        set_lanes(pl_buf(ctx, x[PRE_L]) + i * LANES, li[i * LANES]);
        set_lanes(pl_buf(ctx, x[PRE_M]) + i * LANES, mi[i * LANES]);
    }
}

/* The blocks a backward body reads (rows of the q-like blocks start at q0). */
struct bwd_view {
    struct tile t;
    const float *v, *l, *m, *dO, *di;
};

static void bwd_view(struct pl_ctx *ctx, const int *x, int64_t bkM, struct bwd_view *w)
{
    const float *ab = buf_or_null(ctx, x[B_AB]);
    w->t = (struct tile){pl_buf(ctx, x[B_Q]),
                         pl_buf(ctx, x[B_K]),
                         ab,
                         buf_or_null(ctx, x[B_QS]),
                         buf_or_null(ctx, x[B_KS]),
                         bkM,
                         0,
                         0};
    w->v = pl_buf(ctx, x[B_V]), w->l = pl_buf(ctx, x[B_L]), w->m = pl_buf(ctx, x[B_M]);
    w->dO = pl_buf(ctx, x[B_DO]), w->di = pl_buf(ctx, x[B_DI]);
}

/* Moves a view to the sub-block at rows q0, cols k0 (global q position qpos0). */
static struct bwd_view sub_view(const struct flash *f, const struct bwd_view *w, int64_t q0,
                                int64_t k0, int64_t qpos0, int64_t kpos0)
{
    int64_t D = f->p.head_dim;
    struct bwd_view s = *w;
    s.t.q += q0 * D, s.dO += q0 * D, s.v += k0 * D, s.t.k += k0 * D;
    s.l += q0 * LANES, s.m += q0 * LANES, s.di += q0 * LANES;
    s.t.ab = w->t.ab ? w->t.ab + q0 * w->t.ab_stride + k0 : NULL;
    s.t.qs = w->t.qs ? w->t.qs + q0 * LANES : NULL;
    s.t.ks = w->t.ks ? w->t.ks + k0 : NULL;
    s.t.qpos0 = qpos0, s.t.kpos0 = kpos0;
    return s;
}

/* p (L894-899) and ds (L908-914) of element (r, c) of a sub-block. */
static float bwd_ds(const struct flash *f, const struct bwd_view *s, int64_t r, int64_t c, float *p)
{
    int64_t D = f->p.head_dim;
    *p = expf(tile_logit(f, &s->t, r, c) - s->m[r * LANES]) * (1.0f / s->l[r * LANES]);
    float dp = 0;
    for (int64_t d = 0; d < D; d++)
        dp += s->dO[r * D + d] * s->v[c * D + d];
    float ds = (dp - s->di[r * LANES]) * *p;
    return f->p.sm_scale != 1.0 ? ds * (float)f->p.sm_scale : ds;
}

/* dv += p^T do and dk += ds^T q over one (bq, bk) sub-block; dk, dv rows at k0. */
static void dkv_sub(const struct flash *f, const struct bwd_view *s, int64_t bq, int64_t bk,
                    float *dk, float *dv)
{
    int64_t D = f->p.head_dim;
    enum dtype dt = f->p.dt;
    for (int64_t r = 0; r < bq; r++)
        for (int64_t c = 0; c < bk; c++) {
            float p, ds = bwd_ds(f, s, r, c, &p);
            float pb = pl_round(p, dt), dsb = pl_round(ds, dt);
            for (int64_t d = 0; d < D; d++) {
                dv[c * D + d] += pb * s->dO[r * D + d];
                dk[c * D + d] += dsb * s->t.q[r * D + d];
            }
        }
}

static void dkv_data(struct pl_ctx *ctx, const struct flash *f, const int64_t *g, bool run,
                     bool first, bool last)
{
    const struct flash_block_sizes *b = &f->p.bs;
    int64_t D = f->p.head_dim, bqM = b->block_q_major_dkv, bkM = b->block_k_major_dkv;
    float *dk = pl_scratch_buf(ctx, 0), *dv = pl_scratch_buf(ctx, 1);
    size_t bytes = sizeof(float) * (size_t)(bkM * D);
    if (first)
        memset(dk, 0, bytes), memset(dv, 0, bytes);
    struct bwd_view w;
    bwd_view(ctx, f->kx, bkM, &w);
    for (int64_t q0 = 0; run && q0 < bqM; q0 += b->block_q_dkv)
        for (int64_t k0 = 0; k0 < bkM; k0 += b->block_k_dkv) {
            struct bwd_view s = sub_view(f, &w, q0, k0, g[3] * bqM + q0, g[2] * bkM + k0);
            dkv_sub(f, &s, b->block_q_dkv, b->block_k_dkv, dk + k0 * D, dv + k0 * D);
        }
    if (last) {
        memcpy(pl_buf(ctx, f->kx[B_OUT0]), dk, bytes);
        memcpy(pl_buf(ctx, f->kx[B_OUT1]), dv, bytes);
    }
}

static void dkv_body(struct pl_ctx *ctx, const int64_t *g, void *user)
{
    const struct flash *f = user;
    const struct flash_block_sizes *b = &f->p.bs;
    int64_t bqM = b->block_q_major_dkv, bkM = b->block_k_major_dkv, D = f->p.head_dim;
    bool run = !f->p.causal || on_diag(g[3], bqM, g[2], bkM);
    bool first = g[3] == 0, last = g[3] == f->p.q_seq_len / bqM - 1;
    if (first) /* zero dk, dv scratch (L825-828) */
        vst(ctx, 2 * bkM, D, DT_F32);
    for (int64_t q0 = 0; run && q0 < bqM; q0 += b->block_q_dkv)
        for (int64_t k0 = 0; k0 < bkM; k0 += b->block_k_dkv)
            work_dkv_sub(ctx, f, b->block_q_dkv, b->block_k_dkv);
    if (last) { /* end_of_q_sequence (L935-938) */
        pl_vpu(ctx, 2 * bkM, D, 1, 1, 0, 0, 0);
        vst(ctx, 2 * bkM, D, f->p.dt);
    }
    if (pl_functional(ctx))
        dkv_data(ctx, f, g, run, first, last);
}

/* dq += ds k over one (bqM, bk) sub-block; ds written to the ds block if any. */
static void dq_sub(const struct flash *f, const struct bwd_view *s, int64_t bq, int64_t bk,
                   float *dq, float *ds_out, int64_t ds_stride)
{
    int64_t D = f->p.head_dim;
    for (int64_t r = 0; r < bq; r++)
        for (int64_t c = 0; c < bk; c++) {
            float p, ds = bwd_ds(f, s, r, c, &p);
            if (ds_out)
                ds_out[r * ds_stride + c] = ds;
            float dsb = pl_round(ds, f->p.dt);
            for (int64_t d = 0; d < D; d++)
                dq[r * D + d] += dsb * s->t.k[c * D + d];
        }
}

static void dq_data(struct pl_ctx *ctx, const struct flash *f, const int64_t *g, bool run,
                    bool first, bool last)
{
    const struct flash_block_sizes *b = &f->p.bs;
    int64_t D = f->p.head_dim, bqM = b->block_q_dq, bkM = b->block_k_major_dq;
    float *dq = pl_scratch_buf(ctx, 0);
    float *ds = f->qx[B_OUT1] >= 0 ? pl_buf(ctx, f->qx[B_OUT1]) : NULL;
    size_t bytes = sizeof(float) * (size_t)(bqM * D);
    if (first)
        memset(dq, 0, bytes);
    if (!run && ds) /* zero_out_ds (L1276-1279) */
        memset(ds, 0, sizeof(float) * (size_t)(bqM * bkM));
    struct bwd_view w;
    bwd_view(ctx, f->qx, bkM, &w);
    for (int64_t k0 = 0; run && k0 < bkM; k0 += b->block_k_dq) {
        struct bwd_view s = sub_view(f, &w, 0, k0, g[2] * bqM, g[3] * bkM + k0);
        dq_sub(f, &s, bqM, b->block_k_dq, dq, ds ? ds + k0 : NULL, bkM);
    }
    if (last) {
        memcpy(pl_buf(ctx, f->qx[B_OUT0]), dq, bytes);
        memset(dq, 0, bytes);
    }
}

static void dq_body(struct pl_ctx *ctx, const int64_t *g, void *user)
{
    const struct flash *f = user;
    const struct flash_block_sizes *b = &f->p.bs;
    int64_t bqM = b->block_q_dq, bkM = b->block_k_major_dq, D = f->p.head_dim;
    bool run = !f->p.causal || on_diag(g[2], bqM, g[3], bkM);
    bool first = g[3] == 0, last = g[3] == f->p.kv_seq_len / bkM - 1;
    if (first) /* zero dq scratch (L1173-1175) */
        vst(ctx, bqM, D, DT_F32);
    for (int64_t k0 = 0; run && k0 < bkM; k0 += b->block_k_dq)
        work_dq_sub(ctx, f, bqM, b->block_k_dq);
    if (!run && f->p.bias)
        vst(ctx, bqM, bkM, f->p.dt);
    if (last) { /* end_of_kv_sequence (L1281-1284) */
        pl_vpu(ctx, bqM, D, 1, 1, 0, 0, 0);
        vst(ctx, bqM, D, f->p.dt);
        vst(ctx, bqM, D, DT_F32);
    }
    if (pl_functional(ctx))
        dq_data(ctx, f, g, run, first, last);
}

/* ---- kind interface ---- */

static void name_calls(struct flash *f, const struct op *op)
{
    const char *base = op->name ? op->name : "flash_attention";
    static const char *const sfx[4] = {"fwd", "di", "dkv", "dq"};
    for (int i = 0; i < 4; i++)
        snprintf(f->names[i], sizeof f->names[i], "%.80s.%s", base, sfx[i]);
}

static int fl_init(struct kern *k, char *err, size_t n)
{
    struct flash *f = xcalloc(1, sizeof *f);
    k->impl = f;
    f->p = k->op->u.flash;
    f->seg = f->p.nseg_q > 0;
    f->fwd = f->p.mode != ATTN_BWD;
    f->bwd = f->p.mode != ATTN_FWD;
    f->residuals = f->p.mode == ATTN_FWD_BWD;
    f->single = f->p.bs.block_k == f->p.kv_seq_len;
    if (check_post_init(&f->p.bs, err, n) || check_fwd(f, err, n) ||
        (f->bwd && check_bwd(f, err, n)))
        return -1;
    f->nk = f->p.kv_seq_len / f->p.bs.block_k_major;
    f->cfwd = f->cprep = f->cdkv = f->cdq = -1;
    name_calls(f, k->op);
    if (f->fwd)
        build_fwd(f, &k->calls[f->cfwd = k->ncalls++]);
    if (f->bwd) {
        build_prep(f, &k->calls[f->cprep = k->ncalls++]);
        build_dkv(f, &k->calls[f->cdkv = k->ncalls++]);
        build_dq(f, &k->calls[f->cdq = k->ncalls++]);
    }
    /* functional row buffer of the forward: logits of one row and o_curr */
    size_t row = (size_t)(f->single ? f->p.kv_seq_len : f->p.bs.block_k) + (size_t)f->p.head_dim;
    if (k->functional && f->fwd)
        k->calls[f->cfwd].state_bytes = sizeof(float) * row;
    return 0;
}

/* ---- naive float64 reference ---- */

struct ref {
    double *p;                 /* [Sq, Skv] softmax */
    double *o, *l, *m;         /* [Sq, D], [Sq], [Sq] */
    double *dq, *dk, *dv, *ds; /* [Sq, D], [Skv, D], [Skv, D], [Sq, Skv] */
};

static int64_t off4(const struct op_flash *p, int64_t b, int64_t h, int64_t s, int64_t len,
                    int64_t w)
{
    return ((b * p->heads + h) * len + s) * w;
}

static bool ref_keep(const struct flash *f, int64_t b, int64_t i, int64_t j)
{
    const struct op_flash *p = &f->p;
    bool keep = !f->seg || f->a.qs[(b * p->q_seq_len + i) * LANES] ==
                               f->a.ks[b * SUBLANES * p->kv_seq_len + j];
    return keep && (!p->causal || j <= i);
}

/* Masked logits equal mask_value exactly in f32 (|s| is far below its ulp). */
static double ref_logit(const struct flash *f, int64_t b, int64_t h, int64_t i, int64_t j)
{
    const struct op_flash *p = &f->p;
    if (!ref_keep(f, b, i, j))
        return MASK_VALUE;
    const float *q = f->a.q + off4(p, b, h, i, p->q_seq_len, p->head_dim);
    const float *k = f->a.k + off4(p, b, h, j, p->kv_seq_len, p->head_dim);
    double s = 0;
    for (int64_t d = 0; d < p->head_dim; d++)
        s += (double)q[d] * k[d];
    if (p->bias)
        s += f->a.ab[off4(p, b, h, i, p->q_seq_len, p->kv_seq_len) + j];
    return s * p->sm_scale;
}

static void ref_forward(const struct flash *f, int64_t b, int64_t h, struct ref *r)
{
    const struct op_flash *p = &f->p;
    int64_t Skv = p->kv_seq_len, D = p->head_dim;
    const float *v = f->a.v + off4(p, b, h, 0, Skv, D);
    for (int64_t i = 0; i < p->q_seq_len; i++) {
        double *pr = r->p + i * Skv, mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < Skv; j++)
            mx = fmax(mx, pr[j] = ref_logit(f, b, h, i, j));
        for (int64_t j = 0; j < Skv; j++)
            sum += pr[j] = exp(pr[j] - mx);
        r->m[i] = mx, r->l[i] = sum;
        for (int64_t d = 0; d < D; d++)
            r->o[i * D + d] = 0;
        for (int64_t j = 0; j < Skv; j++) {
            pr[j] /= sum;
            for (int64_t d = 0; d < D; d++)
                r->o[i * D + d] += pr[j] * v[j * D + d];
        }
    }
}

/* The analytic gradient for row i: dS = P (dP - rowsum(P dP)), scaled. */
static void ref_backward_row(const struct flash *f, int64_t b, int64_t h, int64_t i, struct ref *r)
{
    const struct op_flash *p = &f->p;
    int64_t Skv = p->kv_seq_len, D = p->head_dim;
    const float *q = f->a.q + off4(p, b, h, i, p->q_seq_len, D);
    const float *dO = f->a.do_ + off4(p, b, h, i, p->q_seq_len, D);
    const float *k = f->a.k + off4(p, b, h, 0, Skv, D), *v = f->a.v + off4(p, b, h, 0, Skv, D);
    double *pr = r->p + i * Skv, *ds = r->ds + i * Skv, di = 0;
    for (int64_t j = 0; j < Skv; j++) {
        double dp = 0;
        for (int64_t d = 0; d < D; d++)
            dp += (double)dO[d] * v[j * D + d];
        ds[j] = dp;
        di += pr[j] * dp;
    }
    for (int64_t j = 0; j < Skv; j++) {
        ds[j] = ref_keep(f, b, i, j) ? pr[j] * (ds[j] - di) * p->sm_scale : 0;
        for (int64_t d = 0; d < D; d++) {
            r->dq[i * D + d] += ds[j] * k[j * D + d];
            r->dk[j * D + d] += ds[j] * q[d];
            r->dv[j * D + d] += pr[j] * dO[d];
        }
    }
}

static void ref_backward(const struct flash *f, int64_t b, int64_t h, struct ref *r)
{
    const struct op_flash *p = &f->p;
    size_t nq = (size_t)(p->q_seq_len * p->head_dim), nk = (size_t)(p->kv_seq_len * p->head_dim);
    memset(r->dq, 0, sizeof(double) * nq);
    memset(r->dk, 0, sizeof(double) * nk);
    memset(r->dv, 0, sizeof(double) * nk);
    for (int64_t i = 0; i < p->q_seq_len; i++)
        ref_backward_row(f, b, h, i, r);
}

static void ref_alloc(const struct op_flash *p, struct ref *r)
{
    size_t sq = (size_t)p->q_seq_len, skv = (size_t)p->kv_seq_len, d = (size_t)p->head_dim;
    r->p = xcalloc(sq * skv, sizeof(double));
    r->ds = xcalloc(sq * skv, sizeof(double));
    r->o = xcalloc(sq * d, sizeof(double));
    r->dq = xcalloc(sq * d, sizeof(double));
    r->dk = xcalloc(skv * d, sizeof(double));
    r->dv = xcalloc(skv * d, sizeof(double));
    r->l = xcalloc(sq, sizeof(double));
    r->m = xcalloc(sq, sizeof(double));
}

static void ref_free(struct ref *r)
{
    free(r->p), free(r->ds), free(r->o), free(r->dq), free(r->dk), free(r->dv);
    free(r->l), free(r->m);
}

/* ---- data and verify ---- */

/* Segment ids from lengths, broadcast as upstream does (L732-747):
 * q ids [B, Sq, 128], kv ids [B, 8, Skv]; segment s has id s + 1. */
static float *seg_array(int64_t B, int64_t rep, int64_t len, const int64_t *lens, int nseg,
                        bool lanes)
{
    float *a = xcalloc((size_t)(B * rep * len), sizeof(float));
    for (int64_t b = 0; b < B; b++) {
        int64_t pos = 0;
        for (int s = 0; s < nseg; s++)
            for (int64_t i = 0; i < lens[s]; i++, pos++)
                for (int64_t r = 0; r < rep; r++) {
                    int64_t at = lanes ? (b * len + pos) * rep + r : (b * rep + r) * len + pos;
                    a[at] = (float)(s + 1);
                }
    }
    return a;
}

/* Mode bwd: the forward's o (rounded to dtype), l and m come from the reference. */
static void host_forward(struct flash *f)
{
    const struct op_flash *p = &f->p;
    int64_t Sq = p->q_seq_len, D = p->head_dim;
    struct ref r;
    ref_alloc(p, &r);
    for (int64_t b = 0; b < p->batch; b++)
        for (int64_t h = 0; h < p->heads; h++) {
            ref_forward(f, b, h, &r);
            for (int64_t i = 0; i < Sq; i++) {
                for (int64_t d = 0; d < D; d++)
                    f->a.o[off4(p, b, h, i, Sq, D) + d] = pl_round((float)r.o[i * D + d], p->dt);
                set_lanes(f->a.lres + off4(p, b, h, i, Sq, LANES), (float)r.l[i]);
                set_lanes(f->a.mres + off4(p, b, h, i, Sq, LANES), (float)r.m[i]);
            }
        }
    ref_free(&r);
}

static void bind(struct pl_call *c, const int *x, int role, float *data)
{
    if (x[role] >= 0)
        c->operands[x[role]].data = data;
}

static void bind_fwd(struct kern *k, struct flash *f)
{
    struct pl_call *c = &k->calls[f->cfwd];
    struct flash_arrays *a = &f->a;
    float *in[F_COUNT] = {a->q, a->k, a->v, a->ab, a->qs, a->ks, a->o, a->lres, a->mres};
    for (int i = 0; i < F_COUNT; i++)
        bind(c, f->fx, i, in[i]);
}

static void bind_bwd(struct kern *k, struct flash *f)
{
    struct flash_arrays *a = &f->a;
    float *pre[PRE_COUNT] = {a->o, a->do_, a->lres, a->mres, a->di, a->diq, a->l, a->m};
    for (int i = 0; i < PRE_COUNT; i++)
        bind(&k->calls[f->cprep], f->px, i, pre[i]);
    float *kv[B_COUNT] = {a->q, a->k, a->v,   a->ab, a->qs, a->ks,
                          a->l, a->m, a->do_, a->di, a->dk, a->dv};
    for (int i = 0; i < B_COUNT; i++)
        bind(&k->calls[f->cdkv], f->kx, i, kv[i]);
    float *dq[B_COUNT] = {a->q,  a->k, a->v, a->ab,  a->qs,
                          a->ks, a->l, a->m, a->do_, a->diq ? a->diq : a->di,
                          a->dq, a->ds};
    for (int i = 0; i < B_COUNT; i++)
        bind(&k->calls[f->cdq], f->qx, i, dq[i]);
}

static float *zeros(int64_t n)
{
    return xcalloc((size_t)n, sizeof(float));
}

static void fl_data(struct kern *k, uint64_t seed)
{
    struct flash *f = k->impl;
    const struct op_flash *p = &f->p;
    struct flash_arrays *a = &f->a;
    int64_t B = p->batch, H = p->heads, Sq = p->q_seq_len, Skv = p->kv_seq_len, D = p->head_dim;
    int64_t nq = B * H * Sq;
    a->q = kern_rand_array(seed, nq * D, p->dt, 1.0f);
    a->k = kern_rand_array(seed + 1, B * H * Skv * D, p->dt, 1.0f);
    a->v = kern_rand_array(seed + 2, B * H * Skv * D, p->dt, 1.0f);
    if (p->bias)
        a->ab = kern_rand_array(seed + 3, nq * Skv, p->dt, 1.0f);
    if (f->seg) {
        a->qs = seg_array(B, LANES, Sq, p->seg_q, p->nseg_q, true);
        a->ks = seg_array(B, SUBLANES, Skv, p->seg_kv, p->nseg_kv, false);
    }
    a->o = zeros(nq * D);
    if (f->bwd || f->residuals)
        a->lres = zeros(nq * LANES), a->mres = zeros(nq * LANES);
    if (f->fwd)
        bind_fwd(k, f);
    if (!f->bwd)
        return;
    a->do_ = kern_rand_array(seed + 4, nq * D, p->dt, 1.0f);
    a->di = zeros(nq * LANES), a->l = zeros(nq * LANES), a->m = zeros(nq * LANES);
    if (f->px[PRE_DIQ] >= 0)
        a->diq = zeros(nq * p->bs.block_k_major_dq);
    a->dq = zeros(nq * D), a->dk = zeros(B * H * Skv * D), a->dv = zeros(B * H * Skv * D);
    if (p->bias)
        a->ds = zeros(nq * Skv);
    if (!f->fwd)
        host_forward(f);
    bind_bwd(k, f);
}

/* Worst |got - ref| over an array, relative to its largest |ref|. */
struct cmp {
    const char *name;
    double diff, ref;
};

static void cmp_add(struct cmp *c, const float *got, int64_t stride, const double *ref, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        c->diff = fmax(c->diff, fabs((double)got[i * stride] - ref[i]));
        c->ref = fmax(c->ref, fabs(ref[i]));
    }
}

enum { C_O, C_L, C_M, C_DQ, C_DK, C_DV, C_DS, C_COUNT };

static void compare_head(const struct flash *f, int64_t b, int64_t h, const struct ref *r,
                         struct cmp *c)
{
    const struct op_flash *p = &f->p;
    const struct flash_arrays *a = &f->a;
    int64_t Sq = p->q_seq_len, Skv = p->kv_seq_len, D = p->head_dim;
    if (f->fwd)
        cmp_add(&c[C_O], a->o + off4(p, b, h, 0, Sq, D), 1, r->o, Sq * D);
    if (f->residuals) {
        cmp_add(&c[C_L], a->lres + off4(p, b, h, 0, Sq, LANES), LANES, r->l, Sq);
        cmp_add(&c[C_M], a->mres + off4(p, b, h, 0, Sq, LANES), LANES, r->m, Sq);
    }
    if (!f->bwd)
        return;
    cmp_add(&c[C_DQ], a->dq + off4(p, b, h, 0, Sq, D), 1, r->dq, Sq * D);
    cmp_add(&c[C_DK], a->dk + off4(p, b, h, 0, Skv, D), 1, r->dk, Skv * D);
    cmp_add(&c[C_DV], a->dv + off4(p, b, h, 0, Skv, D), 1, r->dv, Skv * D);
    if (p->bias)
        cmp_add(&c[C_DS], a->ds + off4(p, b, h, 0, Sq, Skv), 1, r->ds, Sq * Skv);
}

/* Tolerances relative to each array's largest magnitude: bf16 rounds the
 * inputs, p before p.v, ds before ds.k and every output (2^-8 relative each);
 * f32 keeps f32 throughout (exp and accumulation order only). */
static double tolerance(enum dtype dt)
{
    return dt == DT_F32 ? 1e-4 : 2e-2;
}

static double fl_verify(const struct kern *k, bool *ok, char *msg, size_t n)
{
    const struct flash *f = k->impl;
    const struct op_flash *p = &f->p;
    struct cmp c[C_COUNT] = {{"o", 0, 0},  {"l", 0, 0},  {"m", 0, 0}, {"dq", 0, 0},
                             {"dk", 0, 0}, {"dv", 0, 0}, {"ds", 0, 0}};
    struct ref r;
    ref_alloc(p, &r);
    for (int64_t b = 0; b < p->batch; b++)
        for (int64_t h = 0; h < p->heads; h++) {
            ref_forward(f, b, h, &r);
            if (f->bwd)
                ref_backward(f, b, h, &r);
            compare_head(f, b, h, &r, c);
        }
    ref_free(&r);
    double worst = 0, tol = tolerance(p->dt);
    int wi = 0;
    for (int i = 0; i < C_COUNT; i++) {
        double e = c[i].ref > 0 ? c[i].diff / c[i].ref : c[i].diff;
        if (e > worst)
            worst = e, wi = i;
    }
    *ok = worst <= tol;
    if (!*ok)
        snprintf(msg, n,
                 "%s differs from the naive attention reference by %.3g of its largest "
                 "magnitude (tolerance %.3g)",
                 c[wi].name, worst, tol);
    return worst;
}

static void fl_fini(struct kern *k)
{
    struct flash *f = k->impl;
    if (!f)
        return;
    struct flash_arrays *a = &f->a;
    float *all[] = {a->q,   a->k,  a->v,   a->ab, a->qs, a->ks, a->o,  a->lres, a->mres,
                    a->do_, a->di, a->diq, a->l,  a->m,  a->dq, a->dk, a->dv,   a->ds};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
    free(f);
    k->impl = NULL;
}

const struct kern_kind kern_flash_kind = {.init = fl_init, .data = fl_data, .verify = fl_verify,
                                         .fini = fl_fini};

/* ---- block_sizes: auto (kernels/tune.h) ---- */

static const char *const tune_names[] = {
    "block_q",          "block_k_major",     "block_k",     "block_b",
    "block_q_major_dkv", "block_k_major_dkv", "block_k_dkv", "block_q_dkv",
    "block_k_major_dq",  "block_k_dq",        "block_q_dq"};

static void tune_get(const struct op *op, int64_t *v)
{
    const struct flash_block_sizes *b = &op->u.flash.bs;
    const int64_t all[] = {b->block_q,          b->block_k_major,     b->block_k,
                           b->block_b,          b->block_q_major_dkv, b->block_k_major_dkv,
                           b->block_k_dkv,      b->block_q_dkv,       b->block_k_major_dq,
                           b->block_k_dq,       b->block_q_dq};
    memcpy(v, all, sizeof all);
}

static void tune_set(struct op *op, const int64_t *v)
{
    struct flash_block_sizes *b = &op->u.flash.bs;
    *b = (struct flash_block_sizes){v[0], v[1], v[2], v[3], v[4], v[5],
                                    v[6], v[7], v[8], v[9], v[10]};
}

/* block_q and block_k_major: powers of two from 128 that divide the sequence
 * (and the whole sequence); block_k: 128, 256, 512 or block_k_major, dividing
 * it; block_b 1. The backward kernels take the forward's blocks (dkv and dq
 * with q blocks of block_q, kv blocks of block_k_major and block_k). */
static int tune_enumerate(const struct op *op, const struct chip_params *chip,
                          int64_t (*v)[TUNE_MAX_PARAMS], int max)
{
    (void)chip;
    const struct op_flash *p = &op->u.flash;
    int64_t bq[64], bkm[64];
    int nq = tune_divisors(p->q_seq_len, p->q_seq_len < 128 ? p->q_seq_len : 128, p->q_seq_len, bq);
    int nk = tune_divisors(p->kv_seq_len, p->kv_seq_len < 128 ? p->kv_seq_len : 128,
                           p->kv_seq_len, bkm);
    int n = 0;
    for (int a = 0; a < nq; a++)
        for (int b = 0; b < nk; b++) {
            int64_t minors[4];
            int nm = tune_compute_blocks(bkm[b], minors);
            for (int c = 0; c < nm && n < max; c++) {
                int64_t bk = minors[c];
                int64_t *x = v[n++];
                tune_get(op, x);
                x[0] = bq[a], x[1] = bkm[b], x[2] = bk, x[3] = 1;
                if (p->mode != ATTN_FWD) {
                    x[4] = x[7] = x[10] = bq[a];
                    x[5] = x[8] = bkm[b];
                    x[6] = x[9] = bk;
                }
            }
        }
    return n;
}

/* The bodies a floor charges every step that runs a block: the sub-blocks'
 * work alone (the first and last steps' stores, the skipped steps' zeroing,
 * only add to it). */
static void floor_fwd(struct pl_ctx *ctx, const int64_t *g, void *user)
{
    const struct flash *f = user;
    const struct flash_block_sizes *b = &f->p.bs;
    (void)g;
    for (int64_t bi = 0; bi < b->block_b; bi++) {
        if (f->single)
            work_fwd_single(ctx, f, b->block_q, f->p.kv_seq_len);
        for (int64_t s = 0; !f->single && s < b->block_k_major; s += b->block_k)
            work_fwd_sub(ctx, f, b->block_q, b->block_k);
    }
}

static void floor_dkv(struct pl_ctx *ctx, const int64_t *g, void *user)
{
    const struct flash *f = user;
    const struct flash_block_sizes *b = &f->p.bs;
    (void)g;
    for (int64_t q0 = 0; q0 < b->block_q_major_dkv; q0 += b->block_q_dkv)
        for (int64_t k0 = 0; k0 < b->block_k_major_dkv; k0 += b->block_k_dkv)
            work_dkv_sub(ctx, f, b->block_q_dkv, b->block_k_dkv);
}

static void floor_dq(struct pl_ctx *ctx, const int64_t *g, void *user)
{
    const struct flash *f = user;
    const struct flash_block_sizes *b = &f->p.bs;
    (void)g;
    for (int64_t k0 = 0; k0 < b->block_k_major_dq; k0 += b->block_k_dq)
        work_dq_sub(ctx, f, b->block_q_dq, b->block_k_dq);
}

/* Whether the step at 'g' runs a block (the bodies' 'run'; the single-step
 * forward runs every step). */
static bool step_runs(const struct pl_call *c, const int64_t *g)
{
    const struct flash *f = c->user;
    const struct flash_block_sizes *b = &f->p.bs;
    if (!f->p.causal)
        return true;
    if (c->body == fwd_body)
        return f->single || on_diag(g[2], b->block_q, g[3], b->block_k_major);
    if (c->body == dkv_body)
        return on_diag(g[3], b->block_q_major_dkv, g[2], b->block_k_major_dkv);
    return on_diag(g[2], b->block_q_dq, g[3], b->block_k_major_dq); /* dq */
}

/* A floor of tune_dry_bound without walking the grids with the bodies
 * (tune_floor_steps): a step that runs a block costs its sub-blocks' MXU and
 * VPU time at least; the di precompute's work, the HBM and the first and last
 * steps' extra work only add to the bound. */
static double tune_floor(const struct kern *k)
{
    double run_s[KERN_MAX_CALLS] = {0};
    for (int i = 0; i < k->ncalls; i++) {
        struct pl_call one = k->calls[i];
        one.body = one.body == fwd_body   ? floor_fwd
                   : one.body == dkv_body ? floor_dkv
                   : one.body == dq_body  ? floor_dq
                                          : NULL;
        if (!one.body)
            continue;
        struct pl_work w;
        pl_step_work(&one, k->chip, 0, &w);
        run_s[i] = w.mxu_s + w.vpu_s;
    }
    return tune_floor_steps(k, run_s, step_runs);
}

const struct kern_tune kern_flash_tune = {.key = "block_sizes", .nparams = 11,
                                          .names = tune_names, .get = tune_get, .set = tune_set,
                                          .enumerate = tune_enumerate, .bound = tune_dry_bound,
                                          .floor = tune_floor};
