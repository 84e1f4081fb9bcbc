/* kernels/matmul.c -- the Pallas TPU blocked matmul (docs/pallas/tpu/matmul).
 * grid (m/bm, n/bn, k/bk), semantics (parallel, parallel, arbitrary);
 * x block (bm, bk) at (i, k), y block (bk, bn) at (k, j), o block (bm, bn)
 * at (i, j); an f32 (bm, bn) VMEM accumulator zeroed at k == 0 and stored
 * (cast) at the last k. int8 inputs give an int32 output. A batched matmul
 * (einsum 'bmk,bkn->bmn', 'batch' > 0) adds a leading parallel grid dim b
 * and a leading squeezed block dim to x, y and o, each indexed by b. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel.h"
#include "base/xalloc.h"

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

static void body_data(struct pl_ctx *ctx, const struct op_matmul *p, bool first, bool last)
{
    float *x = pl_buf(ctx, X), *y = pl_buf(ctx, Y), *o = pl_buf(ctx, O);
    float *acc = pl_scratch_buf(ctx, 0);
    if (first)
        memset(acc, 0, sizeof(float) * (size_t)(p->bm * p->bn));
    for (int64_t i = 0; i < p->bm; i++)
        for (int64_t kk = 0; kk < p->bk; kk++) {
            float xv = x[i * p->bk + kk];
            for (int64_t j = 0; j < p->bn; j++)
                acc[i * p->bn + j] += xv * y[kk * p->bn + j];
        }
    if (last)
        memcpy(o, acc, sizeof(float) * (size_t)(p->bm * p->bn));
}

static void body(struct pl_ctx *ctx, const int64_t *g, void *user)
{
    const struct mm *mm = user;
    const struct op_matmul *p = &mm->p;
    int64_t kk = g[lead(user) + 2];
    bool first = kk == 0, last = kk == p->k / p->bk - 1;
    if (first) /* acc[...] = 0 */
        pl_vpu(ctx, p->bm, p->bn, 0, 0, 1, 0, 0);
    pl_matmul(ctx, p->bm, p->bk, p->bn, p->dt);
    pl_vpu(ctx, p->bm, p->bn, 1, 1, 1, 0, 0); /* acc += dot */
    if (last)                                  /* o = acc.astype(o.dtype) */
        pl_vpu(ctx, p->bm, p->bn, 1, 1, 1, 0, 0);
    if (pl_functional(ctx))
        body_data(ctx, p, first, last);
}

static void operand(struct pl_operand *o, const char *name, enum pl_dir dir, enum dtype dt,
                    int64_t batch, int64_t r, int64_t c, int64_t br, int64_t bc, pl_index_fn *fn)
{
    *o = (struct pl_operand){.name = name, .dir = dir, .space = PL_VMEM, .dt = dt, .rank = 2,
                             .shape = {r, c}, .block = {br, bc}, .index = fn};
    if (batch) { /* a leading squeezed batch dim */
        o->rank = 3;
        o->shape[0] = batch, o->shape[1] = r, o->shape[2] = c;
        o->block[0] = PL_SQUEEZED, o->block[1] = br, o->block[2] = bc;
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
        check_div(err, n, "n", p->n, "bn", p->bn))
        return -1;
    enum dtype odt = p->dt == DT_INT8 ? DT_INT32 : p->dt;
    struct pl_call *c = &k->calls[0];
    k->ncalls = 1;
    c->name = k->op->name;
    int l = p->batch > 0;
    c->ngrid = 3 + l;
    c->grid[0] = p->batch;
    c->grid[l] = p->m / p->bm, c->grid[l + 1] = p->n / p->bn, c->grid[l + 2] = p->k / p->bk;
    c->sem[0] = c->sem[l] = c->sem[l + 1] = PL_PARALLEL, c->sem[l + 2] = PL_ARBITRARY;
    c->noperands = 3;
    operand(&c->operands[X], "x", PL_IN, p->dt, p->batch, p->m, p->k, p->bm, p->bk, x_index);
    operand(&c->operands[Y], "y", PL_IN, p->dt, p->batch, p->k, p->n, p->bk, p->bn, y_index);
    operand(&c->operands[O], "o", PL_OUT, odt, p->batch, p->m, p->n, p->bm, p->bn, o_index);
    c->nscratch = 1;
    c->scratch[0] = (struct pl_scratch){.name = "acc", .space = PL_VMEM, .dt = DT_F32, .rank = 2,
                                        .shape = {p->bm, p->bn}};
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

static double mm_verify(const struct kern *k, bool *ok, char *msg, size_t n)
{
    const struct mm *mm = k->impl;
    const struct op_matmul *p = &mm->p;
    enum dtype odt = k->calls[0].operands[O].dt;
    double worst = 0, tol = odt == DT_BF16 ? 1e-2 : odt == DT_F32 ? 1e-5 : 0;
    for (int64_t b = 0; b < (p->batch ? p->batch : 1); b++) {
        const float *x = mm->x + b * p->m * p->k, *y = mm->y + b * p->k * p->n;
        const float *o = mm->o + b * p->m * p->n;
        for (int64_t i = 0; i < p->m; i++)
            for (int64_t j = 0; j < p->n; j++) {
                double ref = 0;
                for (int64_t kk = 0; kk < p->k; kk++)
                    ref += (double)x[i * p->k + kk] * y[kk * p->n + j];
                double e = fabs(o[i * p->n + j] - ref) / (fabs(ref) + 1.0);
                worst = e > worst ? e : worst;
            }
    }
    *ok = worst <= tol;
    if (!*ok)
        snprintf(msg, n, "o differs from the reference matmul by %.3g (tolerance %.3g)", worst,
                 tol);
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
