/* kernels/transpose.c -- the transpose of the last two dims, [..., m, n] ->
 * [..., n, m], as the tiled loop XLA emits: grid (B, m/bm, n/bn), all
 * parallel (B: the leading dims); x block (bm, bn) at (b, i, j), y block
 * (bn, bm) at (b, j, i); the body loads each vreg of the x tile, transposes
 * it through the XLU (1 XLU op per vreg) and stores the y tile. Both edges
 * are 'block' (default: the largest power of two times 128 whose footprint
 * fits half the scoped VMEM limit), or the whole dim when it is not a
 * multiple of 128 or is smaller. */
#include <stdio.h>
#include <stdlib.h>

#include "base/xalloc.h"
#include "base/diag.h"
#include "kernels/fusion.h"
#include "kernels/xla.h"

struct tp {
    int64_t b, m, n, bm, bn;
};

static void x_index(const int64_t *g, const void *user, int64_t *b)
{
    (void)user;
    b[0] = g[0], b[1] = g[1], b[2] = g[2];
}

static void y_index(const int64_t *g, const void *user, int64_t *b)
{
    (void)user;
    b[0] = g[0], b[1] = g[2], b[2] = g[1];
}

static void body(struct pl_ctx *ctx, const int64_t *g, void *user)
{
    const struct tp *t = user;
    (void)g;
    pl_vpu(ctx, t->bm, t->bn, 0, 1, 0, 0, 1);
    pl_vpu(ctx, t->bn, t->bm, 0, 0, 1, 0, 0);
}

static int64_t edge(int64_t dim, int64_t tile)
{
    return dim % 128 == 0 && tile < dim ? tile : dim;
}

/* x [b, m, n] in (bm, bn) blocks, or ('swap') y [b, n, m] in (bn, bm) blocks. */
static void operand(struct pl_operand *o, const char *name, enum pl_dir dir, enum dtype dt,
                    const struct tp *t, bool swap)
{
    int64_t r = swap ? t->n : t->m, c = swap ? t->m : t->n;
    int64_t br = swap ? t->bn : t->bm, bc = swap ? t->bm : t->bn;
    *o = (struct pl_operand){.name = name,
                             .dir = dir,
                             .space = PL_VMEM,
                             .dt = dt,
                             .rank = 3,
                             .shape = {t->b, r, c},
                             .block = {PL_SQUEEZED, br, bc},
                             .index = swap ? y_index : x_index};
}

static void layout(struct tp *t, struct pl_call *c, enum dtype dt, int64_t tile)
{
    t->bm = edge(t->m, tile), t->bn = edge(t->n, tile);
    c->ngrid = 3;
    c->grid[0] = t->b, c->grid[1] = (t->m + t->bm - 1) / t->bm;
    c->grid[2] = (t->n + t->bn - 1) / t->bn;
    c->sem[0] = c->sem[1] = c->sem[2] = PL_PARALLEL;
    c->noperands = 2;
    operand(&c->operands[0], "x", PL_IN, dt, t, false);
    operand(&c->operands[1], "y", PL_OUT, dt, t, true);
}

static int tp_init(struct kern *k, char *err, size_t n)
{
    const struct op_xla *p = &k->op->u.xla;
    const char *key;
    char want[160];
    if (fusion_reject_functional(k, err, n) != 0)
        return -1;
    if (xla_check(k->op, &key, want, sizeof want) != 0) {
        return diag_fail(err, n, "%s: expected %s", key, want);
    }
    struct tp *t = xcalloc(1, sizeof *t);
    k->impl = t;
    int r = p->x.rank;
    t->b = 1;
    for (int i = 0; i < r - 2; i++)
        t->b *= p->x.shape[i];
    t->m = p->x.shape[r - 2], t->n = p->x.shape[r - 1];
    struct pl_call *c = &k->calls[0];
    k->ncalls = 1;
    c->name = k->op->name;
    c->body = body;
    c->user = t;
    uint64_t limit = k->op->vmem_limit_bytes ? k->op->vmem_limit_bytes : k->chip->vmem_limit_bytes;
    int64_t tile = 128;
    while (tile < t->m || tile < t->n)
        tile *= 2;
    if (p->block)
        tile = p->block;
    else /* halve until the footprint fits half the limit */
        for (layout(t, c, p->x.dt, tile); tile > 128 && pl_vmem_bytes(c, k->chip) > limit / 2;)
            layout(t, c, p->x.dt, tile /= 2);
    layout(t, c, p->x.dt, tile);
    return 0;
}

static void tp_fini(struct kern *k)
{
    free(k->impl);
}

const struct kern_kind kern_transpose_kind = {.init = tp_init, .fini = tp_fini};
