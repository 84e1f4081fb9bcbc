/* kernels/pcall.c -- the generic pallas_call (kernels/pcall.h): one struct
 * pl_call built from the spec the scenario wrote, run on the same pipeline
 * as the built-in kernels (kernels/pallas.c: the skip rule, double
 * buffering, megacore split of the parallel prefix, the VMEM budget).
 *
 * Pricing of the body primitives, per grid step, with the helpers the
 * built-in kernels use (docs/reference.md, "Your own kernel"):
 *   a ref (operand block or scratch) read by a primitive is loaded: one vreg
 *     load per vreg of its rows packed by dtype (rows x bytes / 4);
 *   dot: each ref operand is loaded and pushed into the MXU (pl_mxu_feed,
 *     issued with the systolic pass), an operand of another dtype than the
 *     dot's is cast on the way (1 ALU op per element); pl_matmul(M, K, N);
 *     'acc' adds the result to a ref (load, add, store: serial, as
 *     acc += dot is counted by the built-in matmul); 'into' drains it to a
 *     ref (cast unless f32, store: pl_mxu_drain);
 *   element-wise functions: the ALU and EUP counts per element of the XLA
 *     forms (kernels/xla.c), on the broadcast result tile;
 *   reductions: over the last axis, the vregs of a row are combined on the
 *     ALU and the last vreg reduced across lanes on the XLU (as flash's row
 *     max/sum); over the rows, the same across sublanes;
 *   cast: 1 ALU op per element; zero: a store;
 *   storing a result into a ref: a cast unless the dtypes agree, a store;
 *   VPU work issues as one group (its busiest slot) until a dot or a 'sync'.
 * The work form adds per step: MXU flops / the dtype's per-core peak, and
 * VPU ops, transcendentals and XLU ops as ALU, EUP and XLU ops over 128-lane
 * rows. */
#include "kernels/pcall.h"

#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/sat.h"
#include "base/xalloc.h"
#include "kernels/kernel.h"
#include "kernels/pallas_int.h"
#include "kernels/xla.h"
#include "models/mxu.h"
#include "models/vpu.h"

struct pcall_run {
    const struct pc_spec *s;
    int spec_of[PL_MAX_OPERANDS]; /* pl_call operand -> spec operand */
};

void pc_view(int rank, const int64_t *dims, int64_t *rows, int64_t *cols)
{
    int64_t r = 1, c = 1;
    int last = -1;
    for (int d = 0; d < rank; d++)
        if (dims[d] != PL_SQUEEZED)
            last = d;
    for (int d = 0; d < rank; d++) {
        if (dims[d] == PL_SQUEEZED)
            continue;
        if (d == last)
            c = dims[d];
        else
            r = sat_mul64(r, dims[d]);
    }
    *rows = r, *cols = c;
}

/* ---- index maps: one trampoline per pl_call operand slot ---- */

static void index_of(int slot, const int64_t *g, const void *user, int64_t *b)
{
    const struct pcall_run *run = user;
    const struct pc_operand *o = &run->s->operands[run->spec_of[slot]];
    for (int d = 0; d < o->rank; d++)
        b[d] = pc_eval(&o->index[d], g);
}

#define PC_TRAMP(i)                                                                                \
    static void idx_##i(const int64_t *g, const void *u, int64_t *b)                               \
    {                                                                                              \
        index_of(i, g, u, b);                                                                      \
    }
PC_TRAMP(0) PC_TRAMP(1) PC_TRAMP(2) PC_TRAMP(3) PC_TRAMP(4) PC_TRAMP(5) PC_TRAMP(6) PC_TRAMP(7)
PC_TRAMP(8) PC_TRAMP(9) PC_TRAMP(10) PC_TRAMP(11) PC_TRAMP(12) PC_TRAMP(13) PC_TRAMP(14)
PC_TRAMP(15) PC_TRAMP(16) PC_TRAMP(17) PC_TRAMP(18) PC_TRAMP(19) PC_TRAMP(20) PC_TRAMP(21)
PC_TRAMP(22) PC_TRAMP(23)
static pl_index_fn *const tramps[PL_MAX_OPERANDS] = {
    idx_0,  idx_1,  idx_2,  idx_3,  idx_4,  idx_5,  idx_6,  idx_7,  idx_8,  idx_9,  idx_10, idx_11,
    idx_12, idx_13, idx_14, idx_15, idx_16, idx_17, idx_18, idx_19, idx_20, idx_21, idx_22, idx_23};

/* ---- the body ---- */

static int64_t packed(int64_t rows, enum dtype dt)
{
    return (rows * dtype_bytes(dt) + 3) / 4;
}

/* Each helper below prices 'r' repetitions of its item at once: the VPU
 * counts are per element and add linearly, so r times the count is r
 * items (a repeat costs no more host time than one item). */
static void load(struct pl_ctx *ctx, const struct pc_value *v, double r)
{
    if (v->ref)
        pl_vpu(ctx, packed(v->rows, v->dt), v->cols, 0, r, 0, 0, 0);
}

/* A result of 'dt' (rows, cols) in vregs stored into ref 'r'. */
static void store(struct pl_ctx *ctx, const struct pc_value *v, int64_t rows, int64_t cols,
                  enum dtype dt, double r)
{
    if (dt != v->dt)
        pl_vpu(ctx, rows, cols, r, 0, 0, 0, 0);
    pl_vpu(ctx, packed(rows, v->dt), cols, 0, 0, r, 0, 0);
}

static void feed(struct pl_ctx *ctx, const struct pc_value *v, enum dtype dt, double r)
{
    if (v->ref)
        pl_mxu_feed(ctx, packed(v->rows, v->dt), v->cols, 0, r);
    if (v->dt != dt) /* cast on the vregs of the wider dtype */
        pl_mxu_feed(ctx, packed(v->rows, dtype_bytes(v->dt) > dtype_bytes(dt) ? v->dt : dt),
                    v->cols, r, 0);
}

/* r identical matmuls: r times the feed and the pass (their overlap,
 * max(MXU, feed), scales with them), r accumulations or drains. */
static void run_dot(struct pl_ctx *ctx, const struct pc_spec *s, const struct pc_item *it,
                    double r)
{
    const struct pc_value *a = &s->values[it->args[0]], *b = &s->values[it->args[1]];
    int64_t m = a->rows, k = a->cols, n = it->transpose_b ? b->rows : b->cols;
    feed(ctx, a, it->dt, r);
    feed(ctx, b, it->dt, r);
    pl_matmul(ctx, m, k, n, it->dt);
    ctx->work.mm_s *= r;
    ctx->work.flops += (r - 1) * mxu_flops(m, k, n);
    if (it->acc >= 0) /* acc += dot */
        pl_vpu(ctx, m, n, r, r, r, 0, 0);
    if (it->into >= 0) {
        const struct pc_value *v = &s->values[it->into];
        pl_mxu_drain(ctx, m, n, v->dt != DT_F32 ? r : 0, 0);
        pl_mxu_drain(ctx, packed(m, v->dt), n, 0, r);
    }
}

static void run_fn(struct pl_ctx *ctx, const struct pc_spec *s, const struct pc_item *it,
                   double r)
{
    int64_t rows = 1, cols = 1;
    for (int i = 0; i < it->nargs; i++) {
        const struct pc_value *v = &s->values[it->args[i]];
        load(ctx, v, r);
        rows = v->rows > rows ? v->rows : rows;
        cols = v->cols > cols ? v->cols : cols;
    }
    double alu, eup;
    xla_fn_cost((enum xla_fn)it->fn, &alu, &eup);
    pl_vpu(ctx, rows, cols, r * alu, 0, 0, r * eup, 0);
    if (it->into >= 0)
        store(ctx, &s->values[it->into], rows, cols, DT_F32, r);
}

static void run_reduce(struct pl_ctx *ctx, const struct pc_spec *s, const struct pc_item *it,
                       double r)
{
    const struct pc_value *v = &s->values[it->args[0]];
    const struct chip_params *chip = pl_chip(ctx);
    load(ctx, v, r);
    if (it->axis == 1) {
        double nv = (double)((v->cols + chip->vpu_lanes - 1) / chip->vpu_lanes);
        pl_vpu(ctx, v->rows, v->cols, r * (1.0 - 1.0 / nv), 0, 0, 0, 0);
        pl_vpu(ctx, v->rows, chip->vpu_lanes, 0, 0, 0, 0, r);
    } else {
        double ns = (double)((v->rows + chip->vpu_sublanes - 1) / chip->vpu_sublanes);
        pl_vpu(ctx, v->rows, v->cols, r * (1.0 - 1.0 / ns), 0, 0, 0, 0);
        pl_vpu(ctx, chip->vpu_sublanes, v->cols, 0, 0, 0, 0, r);
    }
    if (it->into >= 0)
        store(ctx, &s->values[it->into], it->axis == 1 ? v->rows : 1,
              it->axis == 1 ? 1 : v->cols, DT_F32, r);
}

static int64_t lane_rows(double ops, int64_t lanes)
{
    return (int64_t)((ops + (double)lanes - 1) / (double)lanes);
}

static void run_work(struct pl_ctx *ctx, const struct pc_item *it, double r)
{
    const struct chip_params *chip = pl_chip(ctx);
    for (int d = 0; d < DT_COUNT; d++) {
        if (it->mxu_flops[d] <= 0)
            continue;
        ctx->work.mxu_s += r * it->mxu_flops[d] / chip->peak_flops[d];
        ctx->work.flops += r * it->mxu_flops[d];
    }
    int64_t lanes = chip->vpu_lanes;
    if (it->vpu_ops > 0)
        pl_vpu(ctx, lane_rows(it->vpu_ops, lanes), lanes, r, 0, 0, 0, 0);
    if (it->transcendentals > 0)
        pl_vpu(ctx, lane_rows(it->transcendentals, lanes), lanes, 0, 0, 0, r, 0);
    if (it->xlu_ops > 0)
        pl_vpu(ctx, lane_rows(it->xlu_ops, lanes), lanes, 0, 0, 0, 0, r);
}

static void run_item(struct pl_ctx *ctx, const struct pc_spec *s, const struct pc_item *it)
{
    const struct pc_value *a = it->nargs ? &s->values[it->args[0]] : NULL;
    double r = (double)it->repeat;
    switch (it->prim) {
    case PC_DOT:
        run_dot(ctx, s, it, r);
        break;
    case PC_FN:
        run_fn(ctx, s, it, r);
        break;
    case PC_REDUCE:
        run_reduce(ctx, s, it, r);
        break;
    case PC_CAST:
        load(ctx, a, r);
        pl_vpu(ctx, a->rows, a->cols, r, 0, 0, 0, 0);
        if (it->into >= 0)
            store(ctx, &s->values[it->into], a->rows, a->cols, it->dt, r);
        break;
    case PC_ZERO:
        store(ctx, &s->values[it->into], s->values[it->into].rows, s->values[it->into].cols,
              s->values[it->into].dt, r);
        break;
    case PC_SYNC:
        pl_vpu_flush(ctx);
        break;
    case PC_WORK:
        run_work(ctx, it, r);
        break;
    }
}

static void body(struct pl_ctx *ctx, const int64_t *g, void *user)
{
    const struct pc_spec *s = ((const struct pcall_run *)user)->s;
    for (int i = 0; i < s->nitems; i++) {
        const struct pc_item *it = &s->items[i];
        if (!it->has_when || pc_cond_true(&it->when, g))
            run_item(ctx, s, it);
    }
}

/* ---- checks ---- */

static int check_operand(const struct pc_spec *s, const struct pc_operand *o, char *err, size_t n)
{
    for (int d = 0; d < o->rank && !o->prefetch; d++) {
        int64_t b = o->block[d] == PL_SQUEEZED ? 1 : o->block[d];
        if (o->shape[d] % b != 0)
            return diag_fail(err, n,
                             "operand '%s': block dim %d (%lld) does not divide the array dim "
                             "(%lld): pallas_call takes blocks that tile the array",
                             o->name, d, (long long)b, (long long)o->shape[d]);
        int64_t lo, hi, nb = o->shape[d] / b;
        pc_range(&o->index[d], s->grid, s->ngrid, &lo, &hi);
        if (lo < 0 || hi >= nb)
            return diag_fail(err, n,
                             "operand '%s': index_map dim %d takes block indices from %lld to "
                             "%lld over the grid, the array has blocks 0 to %lld",
                             o->name, d, (long long)lo, (long long)hi, (long long)(nb - 1));
    }
    return 0;
}

/* Every MXU dtype the body uses is one the chip's MXU takes (as
 * walk_mxu_dtype rules for the built-ins' dtype keys) and has a rate. */
static int check_rates(const struct pc_spec *s, const struct chip_params *chip, char *err,
                       size_t n)
{
    for (int i = 0; i < s->nitems; i++) {
        const struct pc_item *it = &s->items[i];
        for (int d = 0; d < DT_COUNT; d++) {
            bool used = it->prim == PC_DOT ? it->dt == (enum dtype)d : it->mxu_flops[d] > 0;
            if (used && (!(chip->peak_flops[d] > 0) ||
                         (!chip->hypothetical && !chip->mxu_dtype[d] && chip->mxu_dtype[DT_BF16])))
                return diag_fail(err, n,
                                 "body item %d: the %s MXU takes no %s (chip: {base: %s, "
                                 "hypothetical: true} allows it; or cast the blocks)",
                                 i, chip->name, dtype_name((enum dtype)d), chip->name);
        }
    }
    return 0;
}

int pc_check(const struct pc_spec *s, char *err, size_t n)
{
    int64_t steps = 1;
    for (int i = 0; i < s->ngrid; i++)
        steps = sat_mul64(steps, s->grid[i]);
    if (steps > PC_MAX_STEPS)
        return diag_fail(err, n, "the grid has %lld steps, more than the %lld a pallas_call may "
                         "have (resource guard)", (long long)steps, (long long)PC_MAX_STEPS);
    for (int i = 0; i < s->noperands; i++)
        if (check_operand(s, &s->operands[i], err, n))
            return -1;
    return 0;
}

/* ---- the call ---- */

static bool zero_map(const struct pc_operand *o)
{
    for (int d = 0; d < o->rank; d++) {
        if (o->index[d].c)
            return false;
        for (int i = 0; i < PL_MAX_GRID; i++)
            if (o->index[d].coef[i])
                return false;
    }
    return true;
}

static uint64_t array_bytes(const struct pc_operand *o)
{
    uint64_t b = (uint64_t)dtype_bytes(o->dt);
    for (int d = 0; d < o->rank; d++)
        b = sat_mulu64(b, (uint64_t)o->shape[d]);
    return b;
}

static void add_operand(struct pl_call *c, struct pcall_run *run, int j)
{
    const struct pc_operand *o = &run->s->operands[j];
    int i = c->noperands++;
    run->spec_of[i] = j;
    struct pl_operand *p = &c->operands[i];
    *p = (struct pl_operand){.name = o->name, .dir = o->dir, .space = o->space, .dt = o->dt,
                             .rank = o->rank, .buffers = o->buffers};
    memcpy(p->shape, o->shape, sizeof p->shape);
    memcpy(p->block, o->block, sizeof p->block);
    p->index = zero_map(o) ? NULL : tramps[i];
}

static int pc_init(struct kern *k, char *err, size_t n)
{
    const struct pc_spec *s = k->op->u.pcall.spec;
    if (k->functional)
        return diag_fail(err, n, "pallas_call has no functional mode: its body describes cost, "
                                 "not values");
    if (pc_check(s, err, n) || check_rates(s, k->chip, err, n))
        return -1;
    struct pcall_run *run = xcalloc(1, sizeof *run);
    k->impl = run;
    run->s = s;
    struct pl_call *c = &k->calls[0];
    k->ncalls = 1;
    c->name = k->op->name;
    c->ngrid = s->ngrid;
    memcpy(c->grid, s->grid, sizeof c->grid);
    memcpy(c->sem, s->sem, sizeof c->sem);
    uint64_t prefetch = 0;
    for (int j = 0; j < s->noperands; j++) {
        if (s->operands[j].prefetch)
            prefetch = sat_addu64(prefetch, array_bytes(&s->operands[j]));
        else
            add_operand(c, run, j);
    }
    if (prefetch && kern_check_smem(k, prefetch, "num_scalar_prefetch operands", err, n))
        return -1;
    c->smem_prefetch_bytes = prefetch;
    c->nscratch = s->nscratch;
    for (int i = 0; i < s->nscratch; i++) {
        const struct pc_scratch *sc = &s->scratch[i];
        c->scratch[i] = (struct pl_scratch){.name = sc->name, .space = sc->space, .dt = sc->dt,
                                            .rank = sc->rank};
        memcpy(c->scratch[i].shape, sc->shape, sizeof sc->shape);
    }
    c->body = body;
    c->user = run;
    return 0;
}

static void pc_fini(struct kern *k)
{
    free(k->impl);
}

static void pc_params_fini(struct op *op)
{
    free(op->u.pcall.spec);
    op->u.pcall.spec = NULL;
}

const struct kern_kind kern_pcall_kind = {.init = pc_init, .fini = pc_fini,
                                          .params_fini = pc_params_fini};
