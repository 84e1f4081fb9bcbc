/* kernels/xla.c -- the named XLA forms as the loop fusions XLA emits for
 * them (kernels/fusion.h). Counts are per element of the loop (VPU ALU ops,
 * EUP transcendentals, XLU ops) and per row once a row is reduced; every
 * loop also loads each input vreg and stores each output vreg. Notation:
 * x is [R, D] (R = the product of the leading dims), stats are f32.
 *   elementwise  n inputs -> 1 output, all 'shape': fn's counts x (n - 1)
 *                for a binary fn (it folds); a unary fn of n inputs gates,
 *                fn(x0) * x1 * ... (a gated MLP's silu(gate) * up): its
 *                counts + (n - 1) ALU.
 *   rmsnorm fwd  x, scale[D] -> y: x^2, +, *r, *scale = 4 ALU; per row
 *                mean, +eps (2 ALU), rsqrt (1 EUP), a cross-lane sum (1 XLU).
 *   rmsnorm bwd  loop 1 x, dy, scale -> dx, rstd[R]: 8 ALU; per row 5 ALU,
 *                1 EUP, 2 XLU; loop 2 x, dy, rstd -> dscale[D] (a sum over
 *                the rows): 3 ALU.
 *   layernorm    fwd x, scale, bias -> y: 7 ALU; per row 5 ALU, 1 EUP, 2 XLU.
 *                bwd loop 1 x, dy, scale -> dx, mean[R], rstd[R]: 13 ALU; per
 *                row 7 ALU, 1 EUP, 4 XLU; loop 2 x, dy, mean, rstd -> dscale,
 *                dbias (sums over the rows): 5 ALU.
 *   softmax      fwd x -> y: max, -, exp (ALU + EUP), +, *1/s = 5 ALU, 1 EUP;
 *                per row 1 EUP (1/s), 2 XLU. bwd y, dy -> dx: 4 ALU; 1 XLU.
 *   rope         x [T, H, Dh] (or [B, S, H, Dh], or [T, H*Dh] with head_dim,
 *                default 128) as [T, H*Dh], cos, sin [T, Dh] read once per
 *                row -> y: 3 ALU, 1 XLU (rotate half).
 *   cross_entropy logits [T, V] -> loss[T] f32 in two passes: max (1 ALU);
 *                logsumexp with the label's logit picked by compare+select
 *                (logits, max, labels int32 -> loss): 6 ALU, 1 EUP; per row
 *                3 ALU, 1 EUP (log), 2 XLU.
 *   embedding    ids int32 [rows] and the gathered rows [rows, d] -> [rows, d]:
 *                DMA only (a block of rows is one DMA).
 *   optimizer    over 'params' elements: adamw p, g, mu, nu -> p, mu, nu:
 *                15 ALU, 2 EUP (sqrt, 1/x); sgd p, g -> p: 2 ALU; adafactor
 *                (factored, no momentum, update clipping) three passes:
 *                g -> g^2 row/col sums (3 ALU), g -> RMS of the update (5 ALU,
 *                1 EUP), p, g -> p (8 ALU, 1 EUP); its factored state is
 *                O(rows + cols) and not counted.
 *   copy         x -> y: loads and stores only. */
#include "kernels/xla.h"

#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "kernels/fusion.h"

const char *const xla_fn_names[XLA_FN_COUNT + 1] = {
    "add", "sub", "mul",  "div",   "max",  "min",     "neg",  "abs",  "relu", "square",
    "exp", "log", "tanh", "rsqrt", "sqrt", "sigmoid", "silu", "gelu", NULL};
const char *const xla_mode_names[] = {"fwd", "bwd", NULL};
const char *const xla_algo_names[] = {"adamw", "sgd", "adafactor", NULL};

/* Per element: ALU ops and transcendentals. exp and log scale by log2(e)
 * around the EUP's exp2/log2; div is a reciprocal (EUP) and a multiply;
 * sigmoid is -x, exp, +1, 1/x; silu x * sigmoid(x); gelu the tanh form
 * 0.5 x (1 + tanh(c (x + 0.044715 x^3))). */
static const struct {
    int arity;
    double alu, eup;
} fns[XLA_FN_COUNT] = {
    [XLA_ADD] = {2, 1, 0},     [XLA_SUB] = {2, 1, 0},   [XLA_MUL] = {2, 1, 0},
    [XLA_DIV] = {2, 1, 1},     [XLA_MAX] = {2, 1, 0},   [XLA_MIN] = {2, 1, 0},
    [XLA_NEG] = {1, 1, 0},     [XLA_ABS] = {1, 1, 0},   [XLA_RELU] = {1, 1, 0},
    [XLA_SQUARE] = {1, 1, 0},  [XLA_EXP] = {1, 1, 1},   [XLA_LOG] = {1, 1, 1},
    [XLA_TANH] = {1, 0, 1},    [XLA_RSQRT] = {1, 0, 1}, [XLA_SQRT] = {1, 0, 1},
    [XLA_SIGMOID] = {1, 3, 2}, [XLA_SILU] = {1, 4, 2},  [XLA_GELU] = {1, 8, 1},
};

int xla_fn_arity(enum xla_fn fn)
{
    return fns[fn].arity;
}

void xla_fn_cost(enum xla_fn fn, double *alu, double *eup)
{
    *alu = fns[fn].alu, *eup = fns[fn].eup;
}

static struct op_array arr1(int64_t n, enum dtype dt)
{
    return (struct op_array){.rank = 1, .shape = {n}, .dt = dt};
}

static struct op_array arr2(int64_t r, int64_t c, enum dtype dt)
{
    return (struct op_array){.rank = 2, .shape = {r, c}, .dt = dt};
}

/* x as [R, D]. */
static struct op_array rows_of(const struct op_array *x)
{
    int64_t r = 1;
    for (int i = 0; i < x->rank - 1; i++)
        r *= x->shape[i];
    return arr2(r, x->rank ? x->shape[x->rank - 1] : 1, x->dt);
}

static void work(struct fusion_loop *l, double alu, double eup, double xlu)
{
    l->alu = alu, l->eup = eup, l->xlu = xlu;
}

static void row_work(struct fusion_loop *l, double alu, double eup, double xlu)
{
    l->row_alu = alu, l->row_eup = eup, l->row_xlu = xlu;
    l->whole_rows = true;
}

/* A loop over 'space' with the op's block. */
static void loop(struct fusion_loop *l, const struct op *op, const struct op_array *space,
                 const char *name)
{
    fusion_loop_init(l, space);
    l->name = name;
    l->block = op->u.xla.block;
}

static int elementwise(const struct op *op, struct fusion_loop *l)
{
    const struct op_xla *p = &op->u.xla;
    int n = p->inputs ? p->inputs : fns[p->fn].arity;
    bool fold = fns[p->fn].arity == 2;
    double times = fold ? n - 1 : 1, gates = fold ? 0 : n - 1;
    loop(l, op, &p->x, NULL);
    for (int i = 0; i < n; i++)
        fusion_add_in(l, &p->x, FUSION_SAME, NULL);
    fusion_add_out(l, &p->x, FUSION_SAME, "y");
    work(l, fns[p->fn].alu * times + gates, fns[p->fn].eup * times, 0);
    return 1;
}

static int copy(const struct op *op, struct fusion_loop *l)
{
    loop(l, op, &op->u.xla.x, NULL);
    fusion_add_in(l, &op->u.xla.x, FUSION_SAME, "x");
    fusion_add_out(l, &op->u.xla.x, FUSION_SAME, "y");
    return 1;
}

/* The second loop of a norm's backward: sums over the rows into [D] f32. */
static void norm_sums(const struct op *op, struct fusion_loop *l, const struct op_array *x,
                      bool mean)
{
    struct op_array st = arr1(x->shape[0], DT_F32), dv = arr1(x->shape[1], DT_F32);
    loop(l, op, x, mean ? "dscale_dbias" : "dscale");
    l->reduce_axis = 0;
    fusion_add_in(l, x, FUSION_SAME, "x");
    fusion_add_in(l, x, FUSION_SAME, "dy");
    if (mean)
        fusion_add_in(l, &st, FUSION_ROW, "mean");
    fusion_add_in(l, &st, FUSION_ROW, "rstd");
    fusion_add_out(l, &dv, FUSION_REDUCED, "dscale");
    if (mean)
        fusion_add_out(l, &dv, FUSION_REDUCED, "dbias");
    work(l, mean ? 5 : 3, 0, 0);
}

static int norm(const struct op *op, struct fusion_loop *l, bool layer)
{
    const struct op_xla *p = &op->u.xla;
    struct op_array x = rows_of(&p->x), sc = arr1(x.shape[1], x.dt), st = arr1(x.shape[0], DT_F32);
    bool bwd = p->mode == XLA_BWD;
    loop(l, op, &x, bwd ? "dx" : NULL);
    fusion_add_in(l, &x, FUSION_SAME, "x");
    if (bwd)
        fusion_add_in(l, &x, FUSION_SAME, "dy");
    fusion_add_in(l, &sc, FUSION_TILE, "scale");
    if (layer && !bwd)
        fusion_add_in(l, &sc, FUSION_TILE, "bias");
    fusion_add_out(l, &x, FUSION_SAME, bwd ? "dx" : "y");
    if (!bwd) {
        work(l, layer ? 7 : 4, 0, 0);
        row_work(l, layer ? 5 : 2, 1, layer ? 2 : 1);
        return 1;
    }
    if (layer)
        fusion_add_out(l, &st, FUSION_ROW, "mean");
    fusion_add_out(l, &st, FUSION_ROW, "rstd");
    work(l, layer ? 13 : 8, 0, 0);
    row_work(l, layer ? 7 : 5, 1, layer ? 4 : 2);
    norm_sums(op, l + 1, &x, layer);
    return 2;
}

static int softmax(const struct op *op, struct fusion_loop *l)
{
    const struct op_xla *p = &op->u.xla;
    struct op_array x = rows_of(&p->x);
    bool bwd = p->mode == XLA_BWD;
    loop(l, op, &x, NULL);
    fusion_add_in(l, &x, FUSION_SAME, bwd ? "y" : "x");
    if (bwd)
        fusion_add_in(l, &x, FUSION_SAME, "dy");
    fusion_add_out(l, &x, FUSION_SAME, bwd ? "dx" : "y");
    work(l, bwd ? 4 : 5, bwd ? 0 : 1, 0);
    row_work(l, 0, bwd ? 0 : 1, bwd ? 1 : 2);
    return 1;
}

/* rope's head_dim: the last dim of [.., heads, head_dim], else 'head_dim' or 128. */
static int64_t rope_head_dim(const struct op_xla *p)
{
    return p->x.rank > 2 ? p->x.shape[p->x.rank - 1] : p->head_dim ? p->head_dim : 128;
}

static int rope(const struct op *op, struct fusion_loop *l)
{
    const struct op_array *x = &op->u.xla.x;
    int r = x->rank;
    int64_t t = x->shape[0] * (r == 4 ? x->shape[1] : 1);
    int64_t width = r == 2 ? x->shape[1] : x->shape[r - 2] * x->shape[r - 1];
    struct op_array s = arr2(t, width, x->dt);
    struct op_array tab = arr2(t, rope_head_dim(&op->u.xla), x->dt);
    loop(l, op, &s, NULL);
    fusion_add_in(l, &s, FUSION_SAME, "x");
    fusion_add_in(l, &tab, FUSION_GROUP, "cos");
    fusion_add_in(l, &tab, FUSION_GROUP, "sin");
    fusion_add_out(l, &s, FUSION_SAME, "y");
    work(l, 3, 0, 1);
    return 1;
}

static int cross_entropy(const struct op *op, struct fusion_loop *l)
{
    struct op_array x = rows_of(&op->u.xla.x), t = arr1(x.shape[0], DT_F32);
    struct op_array labels = arr1(x.shape[0], DT_INT32);
    loop(&l[0], op, &x, "max");
    l[0].reduce_axis = 1;
    fusion_add_in(&l[0], &x, FUSION_SAME, "logits");
    fusion_add_out(&l[0], &t, FUSION_REDUCED, "max");
    work(&l[0], 1, 0, 0);
    loop(&l[1], op, &x, "logsumexp");
    l[1].reduce_axis = 1;
    fusion_add_in(&l[1], &x, FUSION_SAME, "logits");
    fusion_add_in(&l[1], &t, FUSION_ROW, "max");
    fusion_add_in(&l[1], &labels, FUSION_ROW, "labels");
    fusion_add_out(&l[1], &t, FUSION_REDUCED, "loss");
    work(&l[1], 6, 1, 0);
    l[1].row_alu = 3, l[1].row_eup = 1, l[1].row_xlu = 1; /* + 1 XLU for the output's sum */
    return 2;
}

static int embedding(const struct op *op, struct fusion_loop *l)
{
    const struct op_xla *p = &op->u.xla;
    struct op_array rows = arr2(p->rows, p->d, p->x.dt), ids = arr1(p->rows, DT_INT32);
    loop(l, op, &rows, NULL);
    fusion_add_in(l, &ids, FUSION_ROW, "ids");
    fusion_add_in(l, &rows, FUSION_SAME, "table");
    fusion_add_out(l, &rows, FUSION_SAME, "out");
    l->dma_only = true;
    return 1;
}

static int optimizer(const struct op *op, struct fusion_loop *l)
{
    const struct op_xla *p = &op->u.xla;
    struct op_array prm = arr1(p->params, p->param_dt), g = arr1(p->params, p->grad_dt);
    struct op_array s = arr1(p->params, p->state_dt), sum = {.rank = 0, .dt = DT_F32};
    if (p->algo == XLA_ADAFACTOR) {
        const char *names[2] = {"sq_sums", "update_rms"};
        for (int i = 0; i < 2; i++) {
            loop(&l[i], op, &g, names[i]);
            l[i].reduce_axis = 0;
            fusion_add_in(&l[i], &g, FUSION_SAME, "grad");
            fusion_add_out(&l[i], &sum, FUSION_REDUCED, "sum");
            work(&l[i], i ? 5 : 3, i, 0);
        }
        loop(&l[2], op, &prm, "apply");
        fusion_add_in(&l[2], &prm, FUSION_SAME, "param");
        fusion_add_in(&l[2], &g, FUSION_SAME, "grad");
        fusion_add_out(&l[2], &prm, FUSION_SAME, "param");
        work(&l[2], 8, 1, 0);
        return 3;
    }
    bool adam = p->algo == XLA_ADAMW;
    loop(l, op, &prm, NULL);
    fusion_add_in(l, &prm, FUSION_SAME, "param");
    fusion_add_in(l, &g, FUSION_SAME, "grad");
    if (adam) {
        fusion_add_in(l, &s, FUSION_SAME, "mu");
        fusion_add_in(l, &s, FUSION_SAME, "nu");
    }
    fusion_add_out(l, &prm, FUSION_SAME, "param");
    if (adam) {
        fusion_add_out(l, &s, FUSION_SAME, "mu");
        fusion_add_out(l, &s, FUSION_SAME, "nu");
    }
    work(l, adam ? 15 : 2, adam ? 2 : 0, 0);
    return 1;
}

/* The loops of 'op' into 'l' (room for KERN_MAX_CALLS); returns how many. */
static int expand(const struct op *op, struct fusion_loop *l)
{
    switch (op->kind) {
    case OP_ELEMENTWISE:
        return elementwise(op, l);
    case OP_RMSNORM:
        return norm(op, l, false);
    case OP_LAYERNORM:
        return norm(op, l, true);
    case OP_SOFTMAX:
        return softmax(op, l);
    case OP_ROPE:
        return rope(op, l);
    case OP_CROSS_ENTROPY:
        return cross_entropy(op, l);
    case OP_EMBEDDING:
        return embedding(op, l);
    case OP_OPTIMIZER:
        return optimizer(op, l);
    default:
        return copy(op, l);
    }
}

int xla_check(const struct op *op, const char **key, char *want, size_t n)
{
    const struct op_xla *p = &op->u.xla;
    int r = p->x.rank, min = 0, max = OP_MAX_RANK;
    const char *what = "a shape";
    switch (op->kind) {
    case OP_RMSNORM:
    case OP_LAYERNORM:
    case OP_SOFTMAX:
        min = 1, what = "a shape [..., d] (1 or more dims)";
        break;
    case OP_ROPE:
        min = 2, max = 4;
        what = "a shape [tokens, heads * head_dim], [tokens, heads, head_dim] or [batch, seq, "
               "heads, head_dim]";
        break;
    case OP_CROSS_ENTROPY:
        min = 2, what = "a shape [tokens, vocab] (2 or more dims)";
        break;
    case OP_TRANSPOSE:
        min = 2, what = "a shape [..., m, n] (2 or more dims)";
        break;
    default:
        break;
    }
    *key = "shape";
    if (r < min || r > max) {
        snprintf(want, n, "%s", what);
        return -1;
    }
    if (op->kind == OP_ELEMENTWISE && fns[p->fn].arity == 2 && p->inputs == 1) {
        *key = "inputs";
        snprintf(want, n, "2 or more (%s folds over its inputs)", xla_fn_names[p->fn]);
        return -1;
    }
    int64_t dh = op->kind == OP_ROPE ? rope_head_dim(p) : 1;
    if (op->kind == OP_ROPE && (r > 2 ? p->head_dim && p->head_dim != dh : p->x.shape[1] % dh)) {
        *key = "head_dim";
        if (r > 2)
            snprintf(want, n, "%lld, the last dim of shape (or no head_dim)", (long long)dh);
        else
            snprintf(want, n, "a divisor of the shape's %lld", (long long)p->x.shape[1]);
        return -1;
    }
    return 0;
}

static int xla_init(struct kern *k, char *err, size_t n)
{
    if (fusion_reject_functional(k, err, n) != 0)
        return -1;
    const char *key;
    char want[160];
    if (xla_check(k->op, &key, want, sizeof want) != 0) {
        return diag_fail(err, n, "%s: expected %s", key, want);
    }
    struct fusion_loop loops[KERN_MAX_CALLS];
    int nl = expand(k->op, loops);
    return fusion_build(k, loops, nl, err, n);
}

const struct kern_kind kern_xla_kind = {.init = xla_init, .fini = fusion_fini};
