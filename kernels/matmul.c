/* kernels/matmul.c -- the Pallas TPU blocked matmul (docs/pallas/tpu/matmul).
 * grid (m/bm, n/bn, k/bk), semantics (parallel, parallel, arbitrary);
 * x block (bm, bk) at (i, k), y block (bk, bn) at (k, j), o block (bm, bn)
 * at (i, j); an f32 (bm, bn) VMEM accumulator zeroed at k == 0 and stored
 * (cast) at the last k. int8 inputs give an int32 output. A batched matmul
 * (einsum 'bmk,bkn->bmn', 'batch' > 0) adds a leading parallel grid dim b
 * and a leading squeezed block dim to x, y and o, each indexed by b; with a
 * batch block 'bb' > 1 the leading block dim is bb elements and a step runs
 * their bb dots back to back, one MXU chain (pl_matmuls). bb > 1 is searched
 * (block: auto) only for a dot of at most one systolic pass of rows (m up to
 * mxu_dim) taken whole (bm, bk, bn = m, k, n): a tiny dot per element, as a
 * decode step's attention einsums over a dense KV cache (2 H/K query rows
 * against every slot's cache), where one element a step would pay a grid
 * step and a fill/drain for a few hundred cycles of work.
 * rhs_dtype: int8 is weight-only int8 (JetStream's WeightOnlyPerChannelQuantizedLinear):
 * y comes from HBM as int8, each y block is loaded and cast to dtype (one VPU op per
 * element, issued beside the systolic pass that takes it: pl_mxu_feed), and the result is multiplied by the per-column scales at the
 * last k (one op per output element, folded into the cast-and-store). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel.h"
#include "kernels/tune.h"
#include "base/xalloc.h"
#include "models/hbm.h"

enum { X, Y, O };

struct mm {
    struct op_matmul p;
    float *x, *y, *o; /* functional mode: host arrays */
};

/* Grid and block dims before (i, j, k): 1 with a batch dim, else 0. */
static int lead(const void *user)
{
    return ((const struct mm *)user)->p.batch > 0;
}

static void x_index(const int64_t *g, const void *user, int64_t *b)
{
    int l = lead(user);
    b[0] = g[0], b[l] = g[l], b[l + 1] = g[l + 2];
}

static void y_index(const int64_t *g, const void *user, int64_t *b)
{
    int l = lead(user);
    b[0] = g[0], b[l] = g[l + 2], b[l + 1] = g[l + 1];
}

static void o_index(const int64_t *g, const void *user, int64_t *b)
{
    int l = lead(user);
    b[0] = g[0], b[l] = g[l], b[l + 1] = g[l + 1];
}

/* Batch elements a step takes. */
static int64_t bbs(const struct op_matmul *p)
{
    return p->batch > 0 && p->bb > 1 ? p->bb : 1;
}

static void body_data(struct pl_ctx *ctx, const struct op_matmul *p, bool first, bool last)
{
    int64_t mk = p->bm * p->bk, kn = p->bk * p->bn, mn = p->bm * p->bn;
    for (int64_t e = 0; e < bbs(p); e++) {
        float *x = (float *)pl_buf(ctx, X) + e * mk, *y = (float *)pl_buf(ctx, Y) + e * kn;
        float *o = (float *)pl_buf(ctx, O) + e * mn;
        float *acc = (float *)pl_scratch_buf(ctx, 0) + e * mn;
        if (first)
            memset(acc, 0, sizeof(float) * (size_t)mn);
        for (int64_t i = 0; i < p->bm; i++)
            for (int64_t kk = 0; kk < p->bk; kk++) {
                float xv = x[i * p->bk + kk];
                for (int64_t j = 0; j < p->bn; j++)
                    acc[i * p->bn + j] += xv * y[kk * p->bn + j];
            }
        if (last)
            memcpy(o, acc, sizeof(float) * (size_t)mn);
    }
}

/* Whether y is weight-only int8 beside x in dt. */
static bool rhs_int8(const struct op_matmul *p)
{
    return p->rhs_dt == DT_INT8 && p->dt != DT_INT8;
}

static void body(struct pl_ctx *ctx, const int64_t *g, void *user)
{
    const struct mm *mm = user;
    const struct op_matmul *p = &mm->p;
    int64_t kk = g[lead(user) + 2];
    bool first = kk == 0, last = kk == p->k / p->bk - 1;
    int64_t bb = bbs(p);
    if (first) /* acc[...] = 0 */
        pl_vpu(ctx, bb * p->bm, p->bn, 0, 0, 1, 0, 0);
    if (rhs_int8(p)) /* y.astype(dt): loaded, cast and pushed in the MXU's bundles */
        pl_mxu_feed(ctx, bb * p->bk, p->bn, 1, 1);
    pl_matmuls(ctx, bb, p->bm, p->bk, p->bn, p->dt);
    pl_vpu(ctx, bb * p->bm, p->bn, 1, 1, 1, 0, 0); /* acc += dot */
    if (last) /* o = (acc [* scales]).astype(o.dtype) */
        pl_vpu(ctx, bb * p->bm, p->bn, rhs_int8(p) ? 2 : 1, 1, 1, 0, 0);
    if (pl_functional(ctx))
        body_data(ctx, p, first, last);
}

static void operand(struct pl_operand *o, const char *name, enum pl_dir dir, enum dtype dt,
                    const struct op_matmul *p, int64_t r, int64_t c, int64_t br, int64_t bc,
                    pl_index_fn *fn)
{
    *o = (struct pl_operand){.name = name, .dir = dir, .space = PL_VMEM, .dt = dt, .rank = 2,
                             .shape = {r, c}, .block = {br, bc}, .index = fn};
    if (p->batch) { /* a leading batch dim: squeezed, or bb elements */
        o->rank = 3;
        o->shape[0] = p->batch, o->shape[1] = r, o->shape[2] = c;
        o->block[0] = bbs(p) > 1 ? bbs(p) : PL_SQUEEZED, o->block[1] = br, o->block[2] = bc;
    }
}

static int check_div(char *err, size_t n, const char *dim, int64_t d, const char *blk, int64_t b)
{
    if (b >= 1 && b <= d && d % b == 0)
        return 0;
    if (b < 1 || b > d)
        snprintf(err, n, "%s=%lld should be in [1, %s=%lld]", blk, (long long)b, dim, (long long)d);
    else
        snprintf(err, n, "%s=%lld should be divisible by %s=%lld", dim, (long long)d, blk,
                 (long long)b);
    return -1;
}

static int mm_init(struct kern *k, char *err, size_t n)
{
    struct mm *mm = xcalloc(1, sizeof *mm);
    k->impl = mm;
    mm->p = k->op->u.matmul;
    const struct op_matmul *p = &mm->p;
    if (check_div(err, n, "m", p->m, "bm", p->bm) || check_div(err, n, "k", p->k, "bk", p->bk) ||
        check_div(err, n, "n", p->n, "bn", p->bn) ||
        (bbs(p) > 1 && check_div(err, n, "batch", p->batch, "bb", p->bb)))
        return -1;
    enum dtype odt = p->dt == DT_INT8 ? DT_INT32 : p->dt;
    struct pl_call *c = &k->calls[0];
    k->ncalls = 1;
    c->name = k->op->name;
    int l = p->batch > 0;
    c->ngrid = 3 + l;
    c->grid[0] = p->batch / bbs(p);
    c->grid[l] = p->m / p->bm, c->grid[l + 1] = p->n / p->bn, c->grid[l + 2] = p->k / p->bk;
    c->sem[0] = c->sem[l] = c->sem[l + 1] = PL_PARALLEL, c->sem[l + 2] = PL_ARBITRARY;
    c->noperands = 3;
    operand(&c->operands[X], "x", PL_IN, p->dt, p, p->m, p->k, p->bm, p->bk, x_index);
    operand(&c->operands[Y], "y", PL_IN, rhs_int8(p) ? DT_INT8 : p->dt, p, p->k, p->n, p->bk,
            p->bn, y_index);
    operand(&c->operands[O], "o", PL_OUT, odt, p, p->m, p->n, p->bm, p->bn, o_index);
    c->nscratch = 1;
    c->scratch[0] = (struct pl_scratch){.name = "acc", .space = PL_VMEM, .dt = DT_F32, .rank = 2,
                                        .shape = {bbs(p) * p->bm, p->bn}};
    c->body = body;
    c->user = mm;
    return 0;
}

static void mm_data(struct kern *k, uint64_t seed)
{
    struct mm *mm = k->impl;
    const struct op_matmul *p = &mm->p;
    float scale = p->dt == DT_INT8 ? 127.0f : 1.0f;
    int64_t b = p->batch ? p->batch : 1;
    mm->x = kern_rand_array(seed, b * p->m * p->k, p->dt, scale);
    mm->y = kern_rand_array(seed + 1, b * p->k * p->n, p->dt, scale);
    mm->o = xcalloc((size_t)(b * p->m * p->n), sizeof(float));
    k->calls[0].operands[X].data = mm->x;
    k->calls[0].operands[Y].data = mm->y;
    k->calls[0].operands[O].data = mm->o;
}

/* The f32 accumulator's error bound for a dot of 'k' products summed in
 * order: gamma_(k+1) = (k + 1) u / (1 - (k + 1) u), u = 2^-24, times the sum
 * of the products' magnitudes (Higham, Accuracy and Stability of Numerical
 * Algorithms, 3.1: each product and each add rounds once). */
static double acc_gamma(int64_t k)
{
    double ku = (double)(k + 1) * 0x1p-24;
    return ku < 1 ? ku / (1 - ku) : INFINITY;
}

/* An element passes when it is within the output dtype's rounding of the
 * f64 reference (relative to |ref| + 1: bf16 1e-2, f32 1e-5, int32 exact)
 * plus what summing K products in f32 may lose: a fixed tolerance refused
 * correct f32 matmuls from K = 1024 on. Returns the worst relative error. */
static double mm_verify(const struct kern *k, bool *ok, char *msg, size_t n)
{
    const struct mm *mm = k->impl;
    const struct op_matmul *p = &mm->p;
    enum dtype odt = k->calls[0].operands[O].dt;
    double worst = 0, rel = odt == DT_BF16 ? 1e-2 : odt == DT_F32 ? 1e-5 : 0;
    double gamma = acc_gamma(p->k), over = 0, bad_e = 0, bad_tol = 0;
    for (int64_t b = 0; b < (p->batch ? p->batch : 1); b++) {
        const float *x = mm->x + b * p->m * p->k, *y = mm->y + b * p->k * p->n;
        const float *o = mm->o + b * p->m * p->n;
        for (int64_t i = 0; i < p->m; i++)
            for (int64_t j = 0; j < p->n; j++) {
                double ref = 0, mag = 0;
                for (int64_t kk = 0; kk < p->k; kk++) {
                    double v = (double)x[i * p->k + kk] * y[kk * p->n + j];
                    ref += v, mag += fabs(v);
                }
                double err = fabs(o[i * p->n + j] - ref), e = err / (fabs(ref) + 1.0);
                double tol = rel * (fabs(ref) + 1.0) + gamma * mag;
                worst = e > worst ? e : worst;
                if (err > tol && (tol <= 0 || err / tol > over))
                    over = tol > 0 ? err / tol : INFINITY, bad_e = err, bad_tol = tol;
            }
    }
    *ok = over == 0;
    if (!*ok)
        snprintf(msg, n, "o differs from the reference matmul by %.3g (tolerance %.3g there: "
                         "%.3g relative and the f32 sum of %lld products)",
                 bad_e, bad_tol, rel, (long long)p->k);
    return worst;
}

static void mm_fini(struct kern *k)
{
    struct mm *mm = k->impl;
    if (!mm)
        return;
    free(mm->x);
    free(mm->y);
    free(mm->o);
    free(mm);
}

const struct kern_kind kern_matmul_kind = {.init = mm_init, .data = mm_data, .verify = mm_verify,
                                          .fini = mm_fini};

/* ---- block: auto (kernels/tune.h) ---- */

static const char *const tune_names[] = {"bm", "bk", "bn"};

static void tune_get(const struct op *op, int64_t *v)
{
    v[0] = op->u.matmul.bm, v[1] = op->u.matmul.bk, v[2] = op->u.matmul.bn;
}

static void tune_set(struct op *op, const int64_t *v)
{
    op->u.matmul.bm = v[0], op->u.matmul.bk = v[1], op->u.matmul.bn = v[2];
}

/* Powers of two that divide bm and bn (and the whole dim), from the smallest
 * block the tile rule allows: bm from 8 sublanes, bn from 128 lanes; bk every
 * multiple of 128 dividing k (the Pallas TPU rule: a block's last two dims
 * divisible by 8 and 128), so a contraction such as Llama 3's vocabulary,
 * 128256 = 2^8 x 3 x 167, is not cut into 501 accumulator passes of 256. */
static int tune_enumerate(const struct op *op, const struct chip_params *chip,
                          int64_t (*v)[TUNE_MAX_PARAMS], int max)
{
    (void)chip;
    const struct op_matmul *p = &op->u.matmul;
    int64_t bm[64], bk[64], bn[64];
    int nm = tune_divisors(p->m, p->m < 8 ? p->m : 8, p->m, bm);
    int nk = tune_multiples(p->k, 128, bk);
    int nn = tune_divisors(p->n, p->n < 128 ? p->n : 128, p->n, bn);
    int n = 0;
    for (int a = 0; a < nm; a++)
        for (int b = 0; b < nk; b++)
            for (int c = 0; c < nn && n < max; c++) {
                v[n][0] = bm[a], v[n][1] = bk[b], v[n][2] = bn[c];
                n++;
            }
    return n;
}

static double work_s(const struct pl_work *w)
{
    return w->mxu_s + w->vpu_s;
}

static uint64_t block_bytes(const struct chip_params *chip, const struct pl_operand *o)
{
    int64_t dims[PL_MAX_RANK];
    for (int d = 0; d < o->rank; d++)
        dims[d] = o->block[d] == PL_SQUEEZED ? 1 : o->block[d];
    return hbm_dma_bytes(chip, o->dt, o->rank, dims);
}

/* Per core: the step overheads and compute of its (i, j) blocks, each the
 * first, middle and last k steps; per chip: the bytes the skip rule moves
 * (x and y every step unless the k grid is 1, o once per (i, j)). The grid
 * ends in (i, j, k); dims before them (a batch) multiply the (i, j) blocks. */
static double tune_bound(const struct kern *k)
{
    const struct chip_params *chip = k->chip;
    const struct pl_call *c = &k->calls[0];
    int64_t gn = c->grid[c->ngrid - 2], gk = c->grid[c->ngrid - 1];
    struct pl_work w0, w1, wl;
    pl_step_work(c, chip, 0, &w0);
    pl_step_work(c, chip, gk > 2 ? 1 : 0, &w1);
    pl_step_work(c, chip, gk - 1, &wl);
    double per_ij = (double)gk * chip->step_overhead_s + work_s(&w0) +
                    (gk > 2 ? (double)(gk - 2) * work_s(&w1) : 0) + (gk > 1 ? work_s(&wl) : 0);
    int split = chip->megacore ? chip->cores : 1, copies = chip->megacore ? 1 : chip->cores;
    double busy = 0, bytes = 0;
    for (int core = 0; core < split; core++) {
        int64_t b, e;
        pl_core_range(c, core, split, &b, &e);
        int64_t steps = e - b, ij = steps / gk;
        double t = (double)ij * per_ij;
        busy = t > busy ? t : busy;
        double xs = gk > 1 ? (double)steps : (double)(ij / gn > 0 ? ij / gn : 1);
        double ys = gk > 1 || gn > 1 ? (double)steps : 1.0;
        bytes += copies * (xs * (double)block_bytes(chip, &c->operands[X]) +
                           ys * (double)block_bytes(chip, &c->operands[Y]) +
                           (double)ij * (double)block_bytes(chip, &c->operands[O]));
    }
    double hbm = hbm_busy_s(chip, bytes);
    return chip->launch_s + (busy > hbm ? busy : hbm);
}

const struct kern_tune kern_matmul_tune = {.key = "block", .nparams = 3, .names = tune_names,
                                           .get = tune_get, .set = tune_set,
                                           .enumerate = tune_enumerate, .bound = tune_bound};

/* einsum: the matmul's blocks and then bb, the batch elements of a step. */
static const char *const einsum_tune_names[] = {"bm", "bk", "bn", "bb"};

static void einsum_tune_get(const struct op *op, int64_t *v)
{
    tune_get(op, v);
    v[3] = op->u.matmul.bb > 1 ? op->u.matmul.bb : 1;
}

static void einsum_tune_set(struct op *op, const int64_t *v)
{
    tune_set(op, v);
    op->u.matmul.bb = v[3];
}

/* The matmul's candidates with bb = 1; a dot of at most mxu_dim rows also
 * whole (bm, bk, bn = m, k, n) with each power of 2 bb dividing the batch. */
static int einsum_tune_enumerate(const struct op *op, const struct chip_params *chip,
                                 int64_t (*v)[TUNE_MAX_PARAMS], int max)
{
    const struct op_matmul *p = &op->u.matmul;
    int n = tune_enumerate(op, chip, v, max);
    for (int i = 0; i < n; i++)
        v[i][3] = 1;
    if (p->m > chip->mxu_dim)
        return n;
    for (int64_t bb = 2; bb <= p->batch && n < max; bb *= 2)
        if (p->batch % bb == 0) {
            v[n][0] = p->m, v[n][1] = p->k, v[n][2] = p->n, v[n][3] = bb;
            n++;
        }
    return n;
}

const struct kern_tune kern_einsum_tune = {.key = "block", .nparams = 4,
                                           .names = einsum_tune_names, .get = einsum_tune_get,
                                           .set = einsum_tune_set,
                                           .enumerate = einsum_tune_enumerate,
                                           .bound = tune_bound};
