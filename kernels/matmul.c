/* kernels/matmul.c -- blocked matmul as a pallas_call, with functional mode. */
#include "kernels/matmul.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/xalloc.h"

enum { X, Y, O };

static void x_index(const int64_t *g, const void *user, int64_t *b)
{
    (void)user;
    b[0] = g[0], b[1] = g[2];
}

static void y_index(const int64_t *g, const void *user, int64_t *b)
{
    (void)user;
    b[0] = g[2], b[1] = g[1];
}

static void o_index(const int64_t *g, const void *user, int64_t *b)
{
    (void)user;
    b[0] = g[0], b[1] = g[1];
}

static void body_data(struct pl_ctx *ctx, const struct kern_matmul *km, bool first, bool last)
{
    const struct op_matmul *p = &km->p;
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
        for (int64_t e = 0; e < p->bm * p->bn; e++)
            o[e] = acc[e];
}

static void body(struct pl_ctx *ctx, const int64_t *g, void *user)
{
    const struct kern_matmul *km = user;
    const struct op_matmul *p = &km->p;
    int64_t nk = p->k / p->bk;
    bool first = g[2] == 0, last = g[2] == nk - 1;
    if (first) /* acc[...] = 0 */
        pl_vpu(ctx, p->bm, p->bn, 0, 0, 1, 0, 0);
    pl_matmul(ctx, p->bm, p->bk, p->bn, p->dt);
    pl_vpu(ctx, p->bm, p->bn, 1, 1, 1, 0, 0); /* acc += dot */
    if (last) /* o = acc.astype(o.dtype) */
        pl_vpu(ctx, p->bm, p->bn, 1, 1, 1, 0, 0);
    if (pl_functional(ctx))
        body_data(ctx, km, first, last);
}

static void operand(struct pl_operand *o, const char *name, enum pl_dir dir, enum dtype dt,
                    int64_t r, int64_t c, int64_t br, int64_t bc, pl_index_fn *fn)
{
    *o = (struct pl_operand){.name = name, .dir = dir, .space = PL_VMEM, .dt = dt, .rank = 2,
                             .shape = {r, c}, .block = {br, bc}, .index = fn};
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

int kern_matmul_init(struct kern_matmul *km, const struct op *op, const struct chip_params *chip,
                     char *err, size_t n)
{
    memset(km, 0, sizeof *km);
    km->p = op->u.matmul;
    const struct op_matmul *p = &km->p;
    if (check_div(err, n, "m", p->m, "bm", p->bm) || check_div(err, n, "k", p->k, "bk", p->bk) ||
        check_div(err, n, "n", p->n, "bn", p->bn))
        return -1;
    enum dtype odt = p->dt == DT_INT8 ? DT_INT32 : p->dt;
    struct pl_call *c = &km->call;
    c->name = op->name;
    c->ngrid = 3;
    c->grid[0] = p->m / p->bm, c->grid[1] = p->n / p->bn, c->grid[2] = p->k / p->bk;
    c->sem[0] = c->sem[1] = PL_PARALLEL, c->sem[2] = PL_ARBITRARY;
    c->nops = 3;
    operand(&c->ops[X], "x", PL_IN, p->dt, p->m, p->k, p->bm, p->bk, x_index);
    operand(&c->ops[Y], "y", PL_IN, p->dt, p->k, p->n, p->bk, p->bn, y_index);
    operand(&c->ops[O], "o", PL_OUT, odt, p->m, p->n, p->bm, p->bn, o_index);
    c->nscratch = 1;
    c->scratch[0] = (struct pl_scratch){.name = "acc", .space = PL_VMEM, .dt = DT_F32, .rank = 2,
                                        .shape = {p->bm, p->bn}};
    c->body = body;
    c->user = km;
    c->vmem_limit_bytes = op->vmem_limit_bytes;
    c->functional = op->functional;
    return pl_check(c, chip, err, n);
}

float kern_rand(uint64_t seed, uint64_t i)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static float *rand_array(uint64_t seed, int64_t n, enum dtype dt)
{
    float *a = xmalloc(sizeof(float) * (size_t)n);
    float scale = dt == DT_INT8 ? 127.0f : 1.0f;
    for (int64_t i = 0; i < n; i++)
        a[i] = pl_round(kern_rand(seed, (uint64_t)i) * scale, dt);
    return a;
}

void kern_matmul_data(struct kern_matmul *km, uint64_t seed)
{
    const struct op_matmul *p = &km->p;
    km->x = rand_array(seed, p->m * p->k, p->dt);
    km->y = rand_array(seed + 1, p->k * p->n, p->dt);
    km->o = xcalloc((size_t)(p->m * p->n), sizeof(float));
    km->call.ops[X].data = km->x;
    km->call.ops[Y].data = km->y;
    km->call.ops[O].data = km->o;
}

double kern_matmul_verify(const struct kern_matmul *km, bool *ok)
{
    const struct op_matmul *p = &km->p;
    enum dtype odt = km->call.ops[O].dt;
    double worst = 0, tol = odt == DT_BF16 ? 1e-2 : odt == DT_F32 ? 1e-5 : 0;
    for (int64_t i = 0; i < p->m; i++)
        for (int64_t j = 0; j < p->n; j++) {
            double ref = 0;
            for (int64_t k = 0; k < p->k; k++)
                ref += (double)km->x[i * p->k + k] * km->y[k * p->n + j];
            double got = km->o[i * p->n + j];
            double e = fabs(got - ref) / (fabs(ref) + 1.0);
            worst = e > worst ? e : worst;
        }
    *ok = worst <= tol;
    return worst;
}

void kern_matmul_fini(struct kern_matmul *km)
{
    free(km->x);
    free(km->y);
    free(km->o);
    km->x = km->y = km->o = NULL;
}
