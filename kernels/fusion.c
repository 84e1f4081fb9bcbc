/* kernels/fusion.c -- XLA loop fusions as pallas_calls (kernels/fusion.h)
 * and the 'fusion' op kind, whose one loop is its YAML description.
 * Views of the space S (rank r), each keeping S's tiled layout:
 *   flat  one row (r <= 1): blocks of 'bc' elements, grid (C/bc);
 *   rows  [R, C] (C = S[r-1]): blocks (br, bc), grid (R/br, C/bc);
 *   cols  a reduction along a = r-2, [P, A, C]: blocks (br of A, bc),
 *         grid (P, C/bc, A/br), A innermost;
 *   lead  a reduction along a < r-2, [P, A, Q, C] (Q = S[a+1:r-1]): blocks
 *         (br of Q, bc) of one slice of A, grid (P, Q/br, C/bc, A). */
#include "kernels/fusion.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/xalloc.h"

enum view { V_FLAT, V_ROWS, V_COLS, V_LEAD };

/* One index of a block: 0, the row block i, the column block j, the P index
 * p, the A index x (lead), i or j modulo 'mod', or the flat p*nrb + i and
 * p*ncb + j. */
enum ix { IX_0, IX_I, IX_J, IX_P, IX_X, IX_I_MOD, IX_PI, IX_PJ };

struct fop {
    enum fusion_rel rel;
    int nix;
    enum ix ix[4];
    int64_t mod;
    int64_t vr, vc; /* the tile it occupies in vregs: rows x cols of 32-bit values */
};

/* One built loop: what its body and index maps read (the call's 'user'). */
struct fl {
    struct fusion_loop l;
    enum view view;
    int64_t P, A, R, C;            /* R: the dim blocked by br (rows; cols: A; lead: Q) */
    int64_t br, bc;                /* block rows and cols (flat: elements) */
    int64_t nrb, ncb;              /* row and column blocks */
    int nred;                      /* reduced outputs */
    bool stat_col;                 /* per-row values ([R]) kept as a column [R, 1], so that a
                                    * block of rows may be any multiple of 8 (choose_blocks) */
    struct fop op[2 * FUSION_MAX]; /* inputs, then outputs */
};

static const char *const in_names[FUSION_MAX] = {"in0", "in1", "in2", "in3",
                                                 "in4", "in5", "in6", "in7"};
static const char *const out_names[FUSION_MAX] = {"out0", "out1", "out2", "out3",
                                                  "out4", "out5", "out6", "out7"};

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static int64_t prod(const int64_t *d, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= d[i];
    return p;
}

void fusion_loop_init(struct fusion_loop *l, const struct op_array *space)
{
    memset(l, 0, sizeof *l);
    l->space = *space;
    l->reduce_axis = -1;
}

void fusion_add_in(struct fusion_loop *l, const struct op_array *a, enum fusion_rel rel,
                   const char *name)
{
    l->in_rel[l->nin] = rel;
    l->in_name[l->nin] = name;
    l->in[l->nin++] = *a;
}

void fusion_add_out(struct fusion_loop *l, const struct op_array *a, enum fusion_rel rel,
                    const char *name)
{
    l->out_rel[l->nout] = rel;
    l->out_name[l->nout] = name;
    l->out[l->nout++] = *a;
}

void fusion_shape_str(const struct op_array *a, char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < a->rank && len < n; i++)
        len +=
            (size_t)snprintf(buf + len, n - len, "%s%lld", i ? ", " : "", (long long)a->shape[i]);
    if (len < n)
        snprintf(buf + len, n - len, "]");
}

static bool is_reduced(const struct op_array *s, const struct op_array *a, int axis)
{
    if (axis < 0 || a->rank != s->rank - 1)
        return false;
    for (int i = 0, j = 0; i < s->rank; i++)
        if (i != axis && a->shape[j++] != s->shape[i])
            return false;
    return true;
}

/* The first dim of 'a' that is not a leading 1. */
static int first_kept(const struct op_array *a)
{
    int k = 0;
    while (k < a->rank && a->shape[k] == 1)
        k++;
    return k;
}

enum fusion_rel fusion_relation(const struct op_array *s, const struct op_array *a, int reduce_axis,
                                bool output)
{
    if (output && is_reduced(s, a, reduce_axis))
        return FUSION_REDUCED;
    if (a->rank > s->rank)
        return FUSION_BAD;
    int off = s->rank - a->rank;
    bool all_one = true, all_eq = true;
    for (int i = 0; i < a->rank; i++) {
        int64_t d = a->shape[i], sd = s->shape[off + i];
        if (d != sd && d != 1)
            return FUSION_BAD;
        all_one &= d == 1;
        all_eq &= d == sd;
    }
    if (output)
        return all_eq && off == 0 ? FUSION_SAME : FUSION_BAD;
    if (all_eq && off == 0)
        return FUSION_SAME;
    if (all_one)
        return FUSION_SCALAR;
    if (all_eq)
        return FUSION_TILE;
    bool suffix = true;
    for (int i = first_kept(a); i < a->rank; i++)
        suffix &= a->shape[i] == s->shape[off + i];
    if (suffix)
        return FUSION_TILE;
    bool row = off == 0 && a->shape[a->rank - 1] == 1;
    for (int i = 0; row && i < a->rank - 1; i++)
        row = a->shape[i] == s->shape[i];
    return row ? FUSION_ROW : FUSION_UNSUPPORTED;
}

/* ---- geometry: the view and every array's relation ---- */

static bool has_group(const struct fusion_loop *l)
{
    for (int i = 0; i < l->nin; i++)
        if (l->in_rel[i] == FUSION_GROUP)
            return true;
    return false;
}

static void set_view(struct fl *f)
{
    const struct op_array *s = &f->l.space;
    int r = s->rank, a = f->l.reduce_axis;
    f->C = r > 0 ? s->shape[r - 1] : 1;
    if (a >= 0 && a < r - 1) {
        f->view = a == r - 2 ? V_COLS : V_LEAD;
        f->P = prod(s->shape, 0, a);
        f->A = s->shape[a];
        f->R = a == r - 2 ? f->A : prod(s->shape, a + 1, r - 1);
        return;
    }
    f->R = r > 1 ? prod(s->shape, 0, r - 1) : 1;
    f->view = f->R > 1 || f->l.whole_rows || has_group(&f->l) ? V_ROWS : V_FLAT;
}

/* Whether the loop's view can read array 'a' as 'rel'; if not, says why in 'why'. */
static bool readable(const struct fl *f, const struct op_array *a, enum fusion_rel rel, char *why,
                     size_t n)
{
    const char *no = NULL;
    int r = f->l.space.rank, axis = f->l.reduce_axis, kept = a->rank - first_kept(a);
    if (rel == FUSION_BAD || rel == FUSION_UNSUPPORTED)
        no = "a loop reads no broadcast with a 1 between kept dims";
    else if (rel == FUSION_GROUP && f->view != V_ROWS)
        no = "a row group needs a loop over rows";
    else if (rel == FUSION_ROW && f->view == V_LEAD)
        no = "a reduction over a leading axis reads no value per row";
    else if ((f->view == V_COLS || f->view == V_LEAD) && rel == FUSION_TILE &&
             kept > r - axis - 1 && kept != r - axis)
        no = "a reduction reads suffixes that start after or at the reduced axis";
    if (no)
        snprintf(why, n, "%s", no);
    return no == NULL;
}

/* Classifies every array; returns the first unreadable one (inputs first,
 * outputs from FUSION_MAX) or -1. */
static int classify(struct fl *f, char *why, size_t n)
{
    const struct fusion_loop *l = &f->l;
    f->nred = 0;
    for (int k = 0; k < l->nin + l->nout; k++) {
        bool out = k >= l->nin;
        int i = out ? k - l->nin : k;
        const struct op_array *a = out ? &l->out[i] : &l->in[i];
        enum fusion_rel rel = out ? l->out_rel[i] : l->in_rel[i];
        if (rel == FUSION_AUTO)
            rel = fusion_relation(&l->space, a, l->reduce_axis, out);
        f->op[k].rel = rel;
        f->nred += rel == FUSION_REDUCED;
        if (!readable(f, a, rel, why, n))
            return out ? FUSION_MAX + i : i;
    }
    return -1;
}

/* ---- layout: each operand's array, block and index map for (br, bc) ---- */

/* The grid coordinates: row block i, column block j, P index p, A index x. */
static void coords(const struct fl *f, const int64_t *g, int64_t *c)
{
    int64_t i = 0, j = 0, p = 0, x = 0;
    switch (f->view) {
    case V_FLAT:
        j = g[0];
        break;
    case V_ROWS:
        i = g[0], j = f->ncb > 1 ? g[1] : 0;
        break;
    case V_COLS:
        p = g[0], j = g[1], i = g[2];
        break;
    case V_LEAD:
        p = g[0], i = g[1], j = g[2], x = g[3];
        break;
    }
    c[0] = i, c[1] = j, c[2] = p, c[3] = x;
}

static void index_of(const struct fl *f, int o, const int64_t *g, int64_t *b)
{
    int64_t c[4];
    coords(f, g, c);
    const struct fop *op = &f->op[o];
    for (int k = 0; k < op->nix; k++) {
        switch (op->ix[k]) {
        case IX_0:
            b[k] = 0;
            break;
        case IX_I:
        case IX_J:
        case IX_P:
        case IX_X:
            b[k] = c[op->ix[k] - IX_I];
            break;
        case IX_I_MOD:
            b[k] = c[0] % op->mod;
            break;
        case IX_PI:
            b[k] = c[2] * f->nrb + c[0];
            break;
        case IX_PJ:
            b[k] = c[2] * f->ncb + c[1];
            break;
        }
    }
}

/* One index map per operand slot: index maps do not know their operand. */
#define IDX(n)                                                                                     \
    static void idx##n(const int64_t *g, const void *u, int64_t *b)                                \
    {                                                                                              \
        index_of(u, n, g, b);                                                                      \
    }
IDX(0)
IDX(1)
IDX(2)
IDX(3)
IDX(4)
IDX(5)
IDX(6)
IDX(7)
IDX(8)
IDX(9)
IDX(10)
IDX(11)
IDX(12)
IDX(13)
IDX(14)
IDX(15)
static pl_index_fn *const idx_fns[2 * FUSION_MAX] = {idx0,  idx1,  idx2,  idx3, idx4,  idx5,
                                                     idx6,  idx7,  idx8,  idx9, idx10, idx11,
                                                     idx12, idx13, idx14, idx15};

/* An operand laid out as 'rank' dims 'shape' in blocks 'block' indexed by
 * 'ix', occupying a (vr, vc) vreg tile. A block covering the whole array is
 * a trivial window (no index map: moved once). */
struct lay {
    int rank;
    int64_t shape[4], block[4];
    enum ix ix[4];
    int64_t mod, vr, vc;
};

static void lay(struct lay *y, int rank, const int64_t *shape, const int64_t *block,
                const enum ix *ix, int64_t vr, int64_t vc)
{
    memset(y, 0, sizeof *y);
    y->rank = rank;
    memcpy(y->shape, shape, sizeof(int64_t) * (size_t)rank);
    memcpy(y->block, block, sizeof(int64_t) * (size_t)rank);
    memcpy(y->ix, ix, sizeof(enum ix) * (size_t)rank);
    y->vr = vr, y->vc = vc;
}

#define LAY(y, vr, vc, shp, blk, ...)                                                              \
    lay(y, (int)(sizeof(int64_t[]){shp} / sizeof(int64_t)), (int64_t[]){shp}, (int64_t[]){blk},    \
        (enum ix[]){__VA_ARGS__}, vr, vc)
#define D(...) __VA_ARGS__

/* A suffix of the space along rows (rows, lead): [C] or [Rs, C]. */
static int lay_tile(const struct fl *f, const struct op_array *a, struct lay *y, char *err,
                    size_t n)
{
    int64_t rs = a->rank > 1 ? prod(a->shape, 0, a->rank - 1) : 1, C = f->C, br = f->br;
    if (rs == 1)
        LAY(y, 1, f->bc, D(C), D(f->bc), IX_J);
    else if (br % rs == 0)
        LAY(y, rs, f->bc, D(rs, C), D(rs, f->bc), IX_0, IX_J);
    else if (rs % br == 0)
        LAY(y, br, f->bc, D(rs, C), D(br, f->bc), IX_I_MOD, IX_J), y->mod = rs / br;
    else {
        char sh[96];
        fusion_shape_str(a, sh, sizeof sh);
        return diag_fail(err, n,
                "a block of %lld rows cannot read the %s input, which repeats every %lld rows: "
                "the block must divide %lld or be a multiple of it",
                (long long)br, sh, (long long)rs, (long long)rs);
    }
    return 0;
}

static int lay_rows(const struct fl *f, const struct op_array *a, enum fusion_rel rel,
                    struct lay *y, char *err, size_t n)
{
    int64_t R = f->R, C = f->C, br = f->br, bc = f->bc;
    int64_t c = a->rank > 0 ? a->shape[a->rank - 1] : 1; /* (a scalar: rank 0) */
    switch (rel) {
    case FUSION_SAME:
        LAY(y, br, bc, D(R, C), D(br, bc), IX_I, IX_J);
        return 0;
    case FUSION_TILE:
        return lay_tile(f, a, y, err, n);
    case FUSION_GROUP:
        LAY(y, br, c, D(R, c), D(br, c), IX_I, IX_0);
        return 0;
    case FUSION_ROW:
    case FUSION_REDUCED:
        if (f->stat_col)
            LAY(y, br, 1, D(R, 1), D(br, 1), IX_I, IX_0);
        else
            LAY(y, br, 1, D(R), D(br), IX_I);
        return 0;
    default:
        LAY(y, 1, 1, D(1), D(1), IX_0);
        return 0;
    }
}

static int lay_cols(const struct fl *f, const struct op_array *a, enum fusion_rel rel,
                    struct lay *y, char *err, size_t n)
{
    int64_t P = f->P, A = f->A, C = f->C, br = f->br, bc = f->bc;
    switch (rel) {
    case FUSION_SAME:
        LAY(y, br, bc, D(P, A, C), D(PL_SQUEEZED, br, bc), IX_P, IX_I, IX_J);
        return 0;
    case FUSION_TILE:
        if (a->rank - first_kept(a) == 2) /* [A, C]: repeated along P */
            LAY(y, br, bc, D(A, C), D(br, bc), IX_I, IX_J);
        else
            LAY(y, 1, bc, D(C), D(bc), IX_J);
        return 0;
    case FUSION_ROW:
        if (A % br != 0) {
            return diag_fail(err, n,
                             "a block of %lld rows must divide the reduced axis (%lld) to read "
                             "one value per row",
                             (long long)br, (long long)A);
        }
        LAY(y, br, 1, D(P * A), D(br), IX_PI);
        return 0;
    case FUSION_REDUCED:
        if (P > 1 && C % bc != 0) {
            return diag_fail(err, n,
                             "a block of %lld columns must divide %lld to write the reduction "
                             "of each of the %lld leading rows",
                             (long long)bc, (long long)C, (long long)P);
        }
        LAY(y, 1, bc, D(P * C), D(bc), IX_PJ);
        return 0;
    default:
        LAY(y, 1, 1, D(1), D(1), IX_0);
        return 0;
    }
}

static int lay_lead(const struct fl *f, const struct op_array *a, enum fusion_rel rel,
                    struct lay *y, char *err, size_t n)
{
    int64_t P = f->P, A = f->A, Q = f->R, C = f->C, br = f->br, bc = f->bc;
    int covers_a = a->rank - first_kept(a) == f->l.space.rank - f->l.reduce_axis;
    switch (rel) {
    case FUSION_SAME:
        LAY(y, br, bc, D(P, A, Q, C), D(PL_SQUEEZED, PL_SQUEEZED, br, bc), IX_P, IX_X, IX_I, IX_J);
        return 0;
    case FUSION_TILE:
        if (!covers_a)
            return lay_tile(f, a, y, err, n);
        LAY(y, br, bc, D(A, Q, C), D(PL_SQUEEZED, br, bc), IX_X, IX_I, IX_J);
        return 0;
    case FUSION_REDUCED:
        LAY(y, br, bc, D(P, Q, C), D(PL_SQUEEZED, br, bc), IX_P, IX_I, IX_J);
        return 0;
    default:
        LAY(y, 1, 1, D(1), D(1), IX_0);
        return 0;
    }
}

static int lay_flat(const struct fl *f, enum fusion_rel rel, struct lay *y)
{
    if (rel == FUSION_SAME || rel == FUSION_TILE)
        LAY(y, cdiv(f->bc, 128), 128, D(f->C), D(f->bc), IX_J);
    else
        LAY(y, 1, 1, D(1), D(1), IX_0);
    return 0;
}

static bool covers(const struct lay *y)
{
    for (int d = 0; d < y->rank; d++)
        if ((y->block[d] == PL_SQUEEZED ? 1 : y->block[d]) != y->shape[d])
            return false;
    return true;
}

static void counts(struct fl *f)
{
    f->nrb = f->view == V_FLAT ? 1 : cdiv(f->R, f->br);
    f->ncb = cdiv(f->C, f->bc);
}

/* Lays out every operand of 'f' into 'c' for the current (br, bc). */
static int layout(struct fl *f, struct pl_call *c, char *err, size_t n)
{
    const struct fusion_loop *l = &f->l;
    counts(f);
    c->noperands = l->nin + l->nout;
    for (int k = 0; k < c->noperands; k++) {
        bool out = k >= l->nin;
        int i = out ? k - l->nin : k;
        const struct op_array *a = out ? &l->out[i] : &l->in[i];
        struct fop *fo = &f->op[k];
        struct lay y;
        int rc = f->view == V_ROWS   ? lay_rows(f, a, fo->rel, &y, err, n)
                 : f->view == V_COLS ? lay_cols(f, a, fo->rel, &y, err, n)
                 : f->view == V_LEAD ? lay_lead(f, a, fo->rel, &y, err, n)
                                     : lay_flat(f, fo->rel, &y);
        if (rc != 0)
            return -1;
        if (fo->rel == FUSION_GROUP && f->ncb > 1) {
            return diag_fail(err, n, "a row group needs blocks of whole rows");
        }
        fo->nix = y.rank, fo->mod = y.mod, fo->vr = y.vr, fo->vc = y.vc;
        memcpy(fo->ix, y.ix, sizeof fo->ix);
        const char *name = out ? l->out_name[i] : l->in_name[i];
        struct pl_operand *o = &c->operands[k];
        *o = (struct pl_operand){.name = name  ? name
                                         : out ? out_names[i]
                                               : in_names[i],
                                 .dir = out ? PL_OUT : PL_IN,
                                 .space = PL_VMEM,
                                 .dt = a->dt,
                                 .rank = y.rank,
                                 .index = covers(&y) ? NULL : idx_fns[k]};
        memcpy(o->shape, y.shape, sizeof y.shape);
        memcpy(o->block, y.block, sizeof y.block);
    }
    return 0;
}

/* ---- grid and body ---- */

static void grid(const struct fl *f, struct pl_call *c)
{
    static const int dims[] = {[V_FLAT] = 1, [V_ROWS] = 2, [V_COLS] = 3, [V_LEAD] = 4};
    int64_t g[4][4] = {[V_FLAT] = {f->ncb},
                       [V_ROWS] = {f->nrb, f->ncb},
                       [V_COLS] = {f->P, f->ncb, f->nrb},
                       [V_LEAD] = {f->P, f->nrb, f->ncb, f->A}};
    c->ngrid = f->view == V_ROWS && f->ncb == 1 ? 1 : dims[f->view];
    for (int d = 0; d < c->ngrid; d++) {
        c->grid[d] = g[f->view][d];
        c->sem[d] = PL_PARALLEL;
    }
    if (f->nred && !(f->view == V_ROWS && c->ngrid == 1)) /* the reduced dim, innermost */
        c->sem[c->ngrid - 1] = PL_ARBITRARY;
}

static void body(struct pl_ctx *ctx, const int64_t *g, void *user)
{
    const struct fl *f = user;
    const struct fusion_loop *l = &f->l;
    if (l->dma_only)
        return;
    int64_t c[4];
    coords(f, g, c);
    bool last = f->view == V_FLAT || f->view == V_ROWS ? c[1] == f->ncb - 1
                : f->view == V_COLS                    ? c[0] == f->nrb - 1
                                                       : c[3] == f->A - 1;
    for (int k = 0; k < l->nin; k++)
        pl_vpu(ctx, f->op[k].vr, f->op[k].vc, 0, 1, 0, 0, 0);
    if (f->view == V_FLAT)
        pl_vpu(ctx, cdiv(f->bc, 128), 128, l->alu, 0, 0, l->eup, l->xlu);
    else
        pl_vpu(ctx, f->br, f->bc, l->alu, 0, 0, l->eup, l->xlu);
    if (last && f->view == V_ROWS) /* per row: one cross-lane reduce per reduced output */
        pl_vpu(ctx, f->br, 1, l->row_alu, 0, 0, l->row_eup, l->row_xlu + f->nred);
    else if (last && f->view == V_COLS) /* 8 sublanes to 1 */
        pl_vpu(ctx, 8, f->bc, 0, 0, 0, 0, f->nred);
    else if (last && f->view == V_FLAT) /* the last vreg to one value */
        pl_vpu(ctx, 8, 128, 0, 0, 0, 0, f->nred);
    for (int k = l->nin; k < l->nin + l->nout; k++)
        if (last || f->op[k].rel != FUSION_REDUCED)
            pl_vpu(ctx, f->op[k].vr, f->op[k].vc, 0, 0, 1, 0, 0);
}

/* ---- blocks ---- */

/* Lays out (br, bc) and checks the block rules with no VMEM limit; the
 * footprint goes to '*bytes'. */
static int try_blocks(struct fl *f, const struct chip_params *chip, struct pl_call *c, int64_t br,
                      int64_t bc, uint64_t *bytes, char *err, size_t n)
{
    f->br = br, f->bc = bc;
    if (layout(f, c, err, n) != 0)
        return -1;
    grid(f, c);
    struct chip_params unlimited = *chip;
    unlimited.vmem_limit_bytes = UINT64_MAX;
    if (pl_check(c, &unlimited, err, n) != 0)
        return -1;
    *bytes = pl_vmem_bytes(c, chip);
    return 0;
}

static bool is_pow2(int64_t x)
{
    return x > 0 && (x & (x - 1)) == 0;
}

static void sort_desc(int64_t *a, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && a[j] > a[j - 1]; j--) {
            int64_t t = a[j];
            a[j] = a[j - 1], a[j - 1] = t;
        }
}

/* Block candidates along a dim of 'len', largest first: 'len', powers of
 * two from 'unit', and (rows) powers of two times the rows of tiled inputs. */
static int candidates(const struct fl *f, int64_t len, int64_t unit, bool rows, int64_t *out,
                      int max)
{
    int n = 0;
    out[n++] = len;
    for (int64_t p = unit; p < len && n < max; p *= 2)
        out[n++] = p;
    for (int k = 0; rows && k < f->l.nin; k++) {
        const struct op_array *a = &f->l.in[k];
        int64_t rs = a->rank > 1 ? prod(a->shape, 0, a->rank - 1) : 1;
        for (int64_t m = rs; f->op[k].rel == FUSION_TILE && !is_pow2(rs) && m < len && n < max;
             m *= 2)
            out[n++] = m;
    }
    sort_desc(out, n);
    return n;
}

/* Column candidates, largest first: 'len' and its divisors that are
 * multiples of 128; or ('pow2') the powers of two times 128 below 'len'
 * that do not divide it (the last block padded). */
static int col_candidates(int64_t len, bool pow2, int64_t *out, int max)
{
    int n = 0;
    if (!pow2) {
        out[n++] = len;
        for (int64_t d = 2; d <= len / 128 && n < max; d++)
            if (len % d == 0 && (len / d) % 128 == 0)
                out[n++] = len / d;
        return n;
    }
    int64_t p = 128;
    while (p * 2 < len)
        p *= 2;
    for (; p >= 128 && n < max; p /= 2)
        if (len % p != 0)
            out[n++] = p;
    return n;
}

#define NCAND 160

/* The largest candidate of 'cand' (rows if 'rows', else cols, the other
 * fixed) that is valid and fits 'budget'; else the smallest valid one; else
 * the first. */
static int64_t pick(struct fl *f, const struct chip_params *chip, struct pl_call *c,
                    const int64_t *cand, int nc, bool rows, int64_t other, uint64_t budget,
                    bool *fits)
{
    int64_t small = 0;
    char err[256];
    *fits = false;
    for (int i = 0; i < nc; i++) {
        uint64_t bytes;
        int64_t br = rows ? cand[i] : other, bc = rows ? other : cand[i];
        if (try_blocks(f, chip, c, br, bc, &bytes, err, sizeof err) != 0)
            continue;
        if (bytes <= budget) {
            *fits = true;
            return cand[i];
        }
        small = cand[i];
    }
    return small ? small : cand[0];
}

/* The smallest row candidate that is valid with whole rows (the first if none is). */
static int64_t smallest(struct fl *f, const struct chip_params *chip, struct pl_call *c,
                        const int64_t *cand, int nc)
{
    char err[256];
    uint64_t bytes;
    for (int i = nc - 1; i >= 0; i--)
        if (try_blocks(f, chip, c, cand[i], f->C, &bytes, err, sizeof err) == 0)
            return cand[i];
    return cand[0];
}

static int choose_blocks(struct fl *f, const struct kern *k, struct pl_call *c, char *err, size_t n)
{
    const struct chip_params *chip = k->chip;
    uint64_t limit = k->op->vmem_limit_bytes ? k->op->vmem_limit_bytes : chip->vmem_limit_bytes;
    uint64_t budget = limit / 2, bytes;
    int64_t rc[NCAND], cc[NCAND];
    bool fits;
    if (f->view == V_FLAT) {
        int ncol = candidates(f, f->C, 1024, false, cc, NCAND);
        int64_t b = f->l.block ? f->l.block : pick(f, chip, c, cc, ncol, false, 1, budget, &fits);
        return try_blocks(f, chip, c, 1, b, &bytes, err, n);
    }
    int nr = candidates(f, f->R, 1, true, rc, NCAND);
    int64_t br = f->l.block ? f->l.block : smallest(f, chip, c, rc, nr), bc = f->C;
    if (!f->l.whole_rows && !has_group(&f->l)) { /* dividing blocks first, then padded ones */
        bc = pick(f, chip, c, cc, col_candidates(f->C, false, cc, NCAND), false, br, budget, &fits);
        int np = fits ? 0 : col_candidates(f->C, true, cc, NCAND);
        if (np)
            bc = pick(f, chip, c, cc, np, false, br, budget, &fits);
    }
    if (!f->l.block)
        br = pick(f, chip, c, rc, nr, true, bc, budget, &fits);
    if (try_blocks(f, chip, c, br, bc, &bytes, err, n) != 0)
        return -1;
    /* An XLA loop can always be tiled: when whole rows in the smallest block a 1-D
     * per-row output allows (128 rows: its lanes) still exceed the VMEM the loop may use
     * (a norm of d_model 12288 on v4's 16 MiB), the rows' values are kept as a column
     * and the block splits down to 8 rows, as XLA tiles its loops. */
    uint64_t may = k->op->vmem_limit_bytes || chip->vmem_bytes < limit ? limit : chip->vmem_bytes;
    if (bytes > may && f->view == V_ROWS && !f->l.block && !f->stat_col) {
        f->stat_col = true;
        return choose_blocks(f, k, c, err, n);
    }
    /* XLA's own fusions are not held to a pallas_call's scoped VMEM limit:
     * when the smallest legal blocks still exceed it (whole rows of a wide
     * norm), the loop may use the chip's VMEM (beyond it: the scoped limit's error) */
    if (!k->op->vmem_limit_bytes && bytes > limit && bytes <= chip->vmem_bytes)
        c->vmem_limit_bytes = chip->vmem_bytes;
    return 0;
}

/* ---- build ---- */

static int build_one(struct fl *f, const struct kern *k, struct pl_call *c, char *err, size_t n)
{
    if (f->l.nin + f->l.nout > 2 * FUSION_MAX || f->l.nout < 1) {
        return diag_fail(err, n, "a loop fusion has 1 to %d outputs and at most %d inputs",
                         FUSION_MAX,
                         FUSION_MAX);
    }
    set_view(f);
    char why[160];
    int bad = classify(f, why, sizeof why);
    if (bad >= 0) {
        bool out = bad >= FUSION_MAX;
        const struct op_array *a = out ? &f->l.out[bad - FUSION_MAX] : &f->l.in[bad];
        char sh[96], sp[96];
        fusion_shape_str(a, sh, sizeof sh);
        fusion_shape_str(&f->l.space, sp, sizeof sp);
        return diag_fail(err, n, "%s %d %s cannot be read by a loop over %s: %s",
                         out ? "output" : "input",
                         out ? bad - FUSION_MAX : bad, sh, sp, why);
    }
    if (choose_blocks(f, k, c, err, n) != 0)
        return -1;
    c->name = f->l.name ? f->l.name : k->op->name;
    c->body = body;
    c->user = f;
    return 0;
}

int fusion_build(struct kern *k, const struct fusion_loop *loops, int n, char *err, size_t errn)
{
    if (n > KERN_MAX_CALLS) {
        snprintf(err, errn, "more than %d loops", KERN_MAX_CALLS);
        return -1;
    }
    struct fl *fls = xcalloc((size_t)n, sizeof *fls);
    k->impl = fls;
    for (int i = 0; i < n; i++) {
        fls[i].l = loops[i];
        if (build_one(&fls[i], k, &k->calls[i], err, errn) != 0)
            return -1;
        k->ncalls++;
    }
    return 0;
}

void fusion_fini(struct kern *k)
{
    free(k->impl);
    k->impl = NULL;
}

/* ---- the 'fusion' kind ---- */

int fusion_reject_functional(const struct kern *k, char *err, size_t n)
{
    if (!k->op->functional)
        return 0;
    return diag_fail(err, n,
                     "functional: true is not modelled for XLA ops (they report work, not values)");
}

/* The loop of a 'fusion' op: over out[0], or over in[0] when it reduces. */
static void op_loop(const struct op_fusion *p, struct fusion_loop *l)
{
    fusion_loop_init(l, p->reduce_axis >= 0 ? &p->in[0] : &p->out[0]);
    l->reduce_axis = p->reduce_axis;
    l->alu = p->vpu_ops;
    l->eup = p->transcendentals;
    l->block = p->block;
    for (int i = 0; i < p->nin; i++)
        fusion_add_in(l, &p->in[i], FUSION_AUTO, NULL);
    for (int i = 0; i < p->nout; i++)
        fusion_add_out(l, &p->out[i], FUSION_AUTO, NULL);
}

int fusion_check_op(const struct op_fusion *p, bool *out, int *index, char *want, size_t n)
{
    struct fl *f = xcalloc(1, sizeof *f);
    op_loop(p, &f->l);
    set_view(f);
    char why[160], sp[96], sh[96];
    int bad = classify(f, why, sizeof why);
    for (int i = 0; bad < 0 && p->reduce_axis >= 0 && i < p->nout; i++)
        if (f->op[p->nin + i].rel != FUSION_REDUCED)
            bad = FUSION_MAX + i;
    *out = bad >= FUSION_MAX;
    *index = *out ? bad - FUSION_MAX : bad;
    fusion_shape_str(&f->l.space, sp, sizeof sp);
    enum fusion_rel rel = bad >= 0 ? f->op[*out ? p->nin + *index : bad].rel : FUSION_SAME;
    free(f);
    if (bad < 0)
        return 0;
    if (*out && p->reduce_axis >= 0) {
        struct op_array r = p->in[0];
        for (int i = p->reduce_axis; i < r.rank - 1; i++)
            r.shape[i] = r.shape[i + 1];
        r.rank--;
        fusion_shape_str(&r, sh, sizeof sh);
        snprintf(want, n, "%s (inputs.0 %s without axis %d: the output of the reduction)", sh, sp,
                 p->reduce_axis);
    } else if (*out) {
        snprintf(want, n, "%s (the shape of outputs.0: the outputs of a loop fusion share it)", sp);
    } else if (rel == FUSION_BAD) {
        snprintf(want, n, "a shape that broadcasts to the loop's %s", sp);
    } else {
        snprintf(want, n, "%s, a suffix of it, one value per row [..., 1] or a scalar (%s)", sp,
                 why);
    }
    return -1;
}

static int fusion_init(struct kern *k, char *err, size_t n)
{
    if (fusion_reject_functional(k, err, n) != 0)
        return -1;
    struct fusion_loop l;
    op_loop(&k->op->u.fusion, &l);
    return fusion_build(k, &l, 1, err, n);
}

const struct kern_kind kern_fusion_kind = {.init = fusion_init, .fini = fusion_fini};
