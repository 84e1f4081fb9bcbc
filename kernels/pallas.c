/* kernels/pallas.c -- grid walk and the Pallas TPU pipeline schedule.
 * Per step s of a core's range [b, e) (docs/pallas-semantics.md section 1):
 *   overhead; for each input: if s+1<e and idx(s+1)!=idx(s) start DMA(s+1);
 *   for each input: if s==b or idx(s)!=idx(s-1) wait DMA(s);  body;
 *   for each output: if s==e-1 or idx(s+1)!=idx(s) start write-back;
 *   for each output: if s>b and idx(s)!=idx(s-1) wait the write-back of s-1.
 * Buffered(1) operands fetch at the step that needs them and wait at once.
 * Trivial windows (block = array, index map all zeros) move once. */
#include "kernels/pallas.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/hbm.h"
#include "models/mxu.h"
#include "base/check.h"
#include "base/xalloc.h"

struct pl_ctx {
    const struct pl_call *call;
    const struct chip_params *chip;
    const struct pl_exec *x;
    struct pl_stats *st;
    bool live; /* the body runs at its place in simulated time (manual DMAs) */
    bool mm_open; /* work.mm_s holds a matmul (pl_mxu_drain may follow) */
    struct pl_work work;
    int64_t step;
    float *bufs[PL_MAX_OPERANDS][2];
    int slot[PL_MAX_OPERANDS];
    float *scratch[PL_MAX_OPERANDS];
    void *state;
    int64_t begin; /* first step of this core's range */
};

/* One operand's pipeline state on this core. */
struct opstate {
    int64_t idx_prev[PL_MAX_RANK], idx_cur[PL_MAX_RANK], idx_next[PL_MAX_RANK];
    void *cur;      /* DMA handle of the current block (inputs) */
    void *pending;  /* write-back awaiting its wait (outputs) */
    uint64_t bytes; /* DMA bytes of one block */
    uint64_t raw;   /* of which data: the block's elements x dtype size (no tile padding) */
    bool trivial, single, piped;
};

/* The decisions of one step, compared to coalesce runs. */
struct plan {
    int64_t s; /* flat step index */
    uint32_t fetch, wait, out_start, out_wait;
    uint64_t fetch_bytes, out_bytes;
    uint64_t fetch_raw, out_raw; /* of which data (opstate.raw) */
    struct pl_work w;
};

int64_t pl_num_steps(const struct pl_call *call)
{
    int64_t n = 1;
    for (int i = 0; i < call->ngrid; i++)
        if (__builtin_mul_overflow(n, call->grid[i], &n))
            return INT64_MAX; /* saturates: the guards refuse it */
    return n;
}

static void unflatten(const struct pl_call *call, int64_t s, int64_t *idx)
{
    for (int i = call->ngrid - 1; i >= 0; i--) {
        idx[i] = s % call->grid[i];
        s /= call->grid[i];
    }
}

static int64_t block_dim(const struct pl_operand *op, int d)
{
    return op->block[d] == PL_SQUEEZED ? 1 : op->block[d];
}

static void block_index(const struct pl_call *call, const struct pl_operand *op, int64_t s,
                        int64_t *out)
{
    memset(out, 0, sizeof(int64_t) * PL_MAX_RANK);
    if (!op->index)
        return;
    int64_t g[PL_MAX_GRID];
    unflatten(call, s, g);
    op->index(g, call->user, out);
}

static bool is_trivial(const struct pl_operand *op)
{
    if (op->index)
        return false;
    for (int d = 0; d < op->rank; d++)
        if (block_dim(op, d) != op->shape[d])
            return false;
    return true;
}

static int buffer_count(const struct pl_operand *op)
{
    if (is_trivial(op))
        return 1;
    return op->buffers ? op->buffers : 2;
}

/* Block dims as the kernel sees them (squeezed dims dropped). */
static int kernel_dims(const struct pl_operand *op, int64_t *dims)
{
    int n = 0;
    for (int d = 0; d < op->rank; d++)
        if (op->block[d] != PL_SQUEEZED)
            dims[n++] = op->block[d];
    if (n == 0)
        dims[n++] = 1;
    return n;
}

static uint64_t block_vmem_bytes(const struct pl_operand *op, const struct chip_params *chip)
{
    int64_t dims[PL_MAX_RANK];
    int n = kernel_dims(op, dims);
    return hbm_vmem_bytes(chip, op->dt, n, dims);
}

uint64_t pl_vmem_bytes(const struct pl_call *call, const struct chip_params *chip)
{
    uint64_t total = 0;
    for (int i = 0; i < call->noperands; i++) {
        const struct pl_operand *op = &call->operands[i];
        if (op->space == PL_VMEM)
            total += block_vmem_bytes(op, chip) * (uint64_t)buffer_count(op);
    }
    for (int i = 0; i < call->nscratch; i++) {
        const struct pl_scratch *sc = &call->scratch[i];
        if (sc->space == PL_VMEM)
            total += hbm_vmem_bytes(chip, sc->dt, sc->rank, sc->shape);
    }
    return total;
}

static bool is_pow2(int64_t x)
{
    return x > 0 && (x & (x - 1)) == 0;
}

/* Pallas' block-shape rule (grid_blockspec.md L70-78, details.rst L75-79). */
static int check_block(const struct pl_operand *op, char *err, size_t n)
{
    int r = op->rank;
    for (int d = 0; d < r; d++) {
        int64_t b = block_dim(op, d);
        if (b < 1 || b > op->shape[d]) {
            snprintf(err, n, "operand '%s': block dim %d is %lld, must be in [1, %lld]",
                     op->name, d, (long long)b, (long long)op->shape[d]);
            return -1;
        }
    }
    if (r == 1) {
        int64_t b = op->block[0], bits = 8 * dtype_bytes(op->dt);
        if (b == op->shape[0] || b % 1024 == 0 || (is_pow2(b) && b >= 128 * (32 / bits)))
            return 0;
        snprintf(err, n,
                 "operand '%s': rank-1 block %lld must equal the array dim %lld, be a multiple "
                 "of 1024, or a power of 2 >= %lld",
                 op->name, (long long)b, (long long)op->shape[0], (long long)(128 * (32 / bits)));
        return -1;
    }
    static const int64_t tile[2] = {8, 128};
    for (int k = 0; k < 2; k++) {
        int d = r - 2 + k;
        if (op->block[d] == PL_SQUEEZED)
            continue;
        if (op->block[d] % tile[k] != 0 && op->block[d] != op->shape[d]) {
            snprintf(err, n,
                     "operand '%s': block shape's last two dims must be divisible by (8, 128) "
                     "or equal the array dims; dim %d is %lld of %lld",
                     op->name, d, (long long)op->block[d], (long long)op->shape[d]);
            return -1;
        }
    }
    return 0;
}

static int check_vmem(const struct pl_call *call, const struct chip_params *chip, char *err,
                      size_t n)
{
    uint64_t limit = call->vmem_limit_bytes ? call->vmem_limit_bytes : chip->vmem_limit_bytes;
    uint64_t total = pl_vmem_bytes(call, chip);
    if (total <= limit)
        return 0;
    int len = snprintf(err, n, "VMEM footprint %llu bytes exceeds the scoped limit %llu bytes:",
                       (unsigned long long)total, (unsigned long long)limit);
    for (int i = 0; i < call->noperands && len > 0 && (size_t)len < n; i++) {
        const struct pl_operand *op = &call->operands[i];
        if (op->space != PL_VMEM)
            continue;
        len += snprintf(err + len, n - (size_t)len, " %s %d x %llu;", op->name,
                        buffer_count(op), (unsigned long long)block_vmem_bytes(op, chip));
    }
    for (int i = 0; i < call->nscratch && len > 0 && (size_t)len < n; i++) {
        const struct pl_scratch *sc = &call->scratch[i];
        if (sc->space == PL_VMEM)
            len += snprintf(err + len, n - (size_t)len, " scratch %s %llu;", sc->name,
                            (unsigned long long)hbm_vmem_bytes(chip, sc->dt, sc->rank, sc->shape));
    }
    if (len > 0 && (size_t)len < n)
        snprintf(err + len, n - (size_t)len, " (raise vmem_limit_bytes, up to %llu)",
                 (unsigned long long)chip->vmem_bytes);
    return -1;
}

int pl_check(const struct pl_call *call, const struct chip_params *chip, char *err, size_t n)
{
    bool seen_arbitrary = false;
    for (int i = 0; i < call->ngrid; i++) {
        if (call->grid[i] < 1) {
            snprintf(err, n, "grid dim %d is %lld, must be >= 1", i, (long long)call->grid[i]);
            return -1;
        }
        if (call->sem[i] == PL_PARALLEL && seen_arbitrary) {
            snprintf(err, n, "dimensions with parallel semantics must form a prefix of the grid");
            return -1;
        }
        seen_arbitrary |= call->sem[i] != PL_PARALLEL;
    }
    for (int i = 0; i < call->noperands; i++) {
        const struct pl_operand *op = &call->operands[i];
        if (op->space != PL_VMEM)
            continue;
        if (op->buffers < 0 || op->buffers > 2) {
            snprintf(err, n, "operand '%s': a top-level pallas_call takes Buffered(1) or "
                             "Buffered(2), got %d buffers", op->name, op->buffers);
            return -1;
        }
        if (check_block(op, err, n))
            return -1;
    }
    return check_vmem(call, chip, err, n);
}

void pl_core_range(const struct pl_call *call, int core, int ncores, int64_t *begin,
                   int64_t *end)
{
    int64_t total = pl_num_steps(call), par = 1;
    int i = 0;
    for (; i < call->ngrid && call->sem[i] == PL_PARALLEL; i++)
        par *= call->grid[i];
    if (ncores <= 1 || i == 0) {
        *begin = core == 0 ? 0 : total;
        *end = total;
        return;
    }
    int64_t inner = total / par, per = (par + ncores - 1) / ncores;
    int64_t b = core * per * inner, e = (core + 1) * per * inner;
    *begin = b < total ? b : total;
    *end = e < total ? e : total;
}

/* ---- functional mode: host copies between HBM arrays and VMEM buffers ---- */

static int64_t block_elems(const struct pl_operand *op)
{
    int64_t n = 1;
    for (int d = 0; d < op->rank; d++)
        n *= block_dim(op, d);
    return n;
}

/* Copies the block at 'idx' between op->data and 'buf' (in: HBM->buf). Elements
 * outside the array read as 0 and are dropped on write (edge blocks). */
static void copy_block(const struct pl_operand *op, const int64_t *idx, float *buf, bool in)
{
    int64_t n = block_elems(op), pos[PL_MAX_RANK] = {0};
    for (int64_t e = 0; e < n; e++) {
        int64_t off = 0;
        bool inside = true;
        for (int d = 0; d < op->rank; d++) {
            int64_t g = idx[d] * block_dim(op, d) + pos[d];
            inside &= g < op->shape[d];
            off = off * op->shape[d] + g;
        }
        if (in)
            buf[e] = inside ? op->data[off] : 0.0f;
        else if (inside)
            op->data[off] = pl_round(buf[e], op->dt);
        for (int d = op->rank - 1; d >= 0; d--) {
            if (++pos[d] < block_dim(op, d))
                break;
            pos[d] = 0;
        }
    }
}

static void ctx_alloc(struct pl_ctx *c)
{
    const struct pl_call *call = c->call;
    for (int i = 0; i < call->noperands; i++) {
        const struct pl_operand *op = &call->operands[i];
        if (op->space != PL_VMEM || !op->data)
            continue;
        for (int k = 0; k < buffer_count(op); k++)
            c->bufs[i][k] = xcalloc((size_t)block_elems(op), sizeof(float));
    }
    for (int i = 0; i < call->nscratch; i++) {
        int64_t n = 1;
        for (int d = 0; d < call->scratch[i].rank; d++)
            n *= call->scratch[i].shape[d];
        c->scratch[i] = xcalloc((size_t)n, sizeof(float));
    }
}

static void ctx_free(struct pl_ctx *c)
{
    for (int i = 0; i < PL_MAX_OPERANDS; i++) {
        free(c->bufs[i][0]);
        free(c->bufs[i][1]);
        free(c->scratch[i]);
    }
}

/* ---- the schedule ---- */

static bool same_idx(const int64_t *a, const int64_t *b)
{
    return memcmp(a, b, sizeof(int64_t) * PL_MAX_RANK) == 0;
}

static void *start_dma(const struct pl_exec *x, struct pl_stats *st, bool in, uint64_t bytes,
                       uint64_t raw, int op)
{
    st->dmas++;
    st->hbm_bytes += (double)bytes;
    st->useful_bytes += (double)raw;
    return x->ops->dma_start(x->ex, in, bytes, op);
}

/* A DMA waited on at once. */
static void sync_dma(const struct pl_exec *x, struct pl_stats *st, bool in, uint64_t bytes,
                     uint64_t raw, int op)
{
    if (!x->ops->dma_sync) {
        x->ops->dma_wait(x->ex, start_dma(x, st, in, bytes, raw, op));
        return;
    }
    st->dmas++;
    st->hbm_bytes += (double)bytes;
    st->useful_bytes += (double)raw;
    x->ops->dma_sync(x->ex, in, bytes, op);
}

static void init_states(struct pl_ctx *c, struct opstate *os, int64_t b, int64_t e)
{
    const struct pl_call *call = c->call;
    for (int i = 0; i < call->noperands; i++) {
        const struct pl_operand *op = &call->operands[i];
        struct opstate *o = &os[i];
        memset(o, 0, sizeof *o);
        o->piped = op->space == PL_VMEM;
        if (!o->piped)
            continue;
        int64_t dims[PL_MAX_RANK];
        for (int d = 0; d < op->rank; d++)
            dims[d] = block_dim(op, d);
        o->bytes = hbm_dma_bytes(c->chip, op->dt, op->rank, dims);
        o->raw = (uint64_t)dtype_bytes(op->dt);
        for (int d = 0; d < op->rank; d++)
            o->raw *= (uint64_t)dims[d];
        o->trivial = is_trivial(op);
        o->single = !o->trivial && buffer_count(op) == 1;
        block_index(call, op, b, o->idx_cur);
        if (b + 1 < e)
            block_index(call, op, b + 1, o->idx_next);
        else
            memcpy(o->idx_next, o->idx_cur, sizeof o->idx_next);
    }
}

static void prologue(struct pl_ctx *c, struct opstate *os, const struct pl_exec *x,
                     struct pl_stats *st)
{
    const struct pl_call *call = c->call;
    for (int i = 0; i < call->noperands; i++) {
        const struct pl_operand *op = &call->operands[i];
        if (!os[i].piped || op->dir != PL_IN || os[i].single || os[i].trivial)
            continue;
        os[i].cur = start_dma(x, st, true, os[i].bytes, os[i].raw, i);
        if (op->data)
            copy_block(op, os[i].idx_cur, c->bufs[i][0], true);
    }
}

/* Decides what step 's' of [b, e) does; fills 'p' (without the body's work). */
static void plan_step(struct pl_ctx *c, struct opstate *os, int64_t s, int64_t b, int64_t e,
                      struct plan *p)
{
    const struct pl_call *call = c->call;
    memset(p, 0, sizeof *p);
    for (int i = 0; i < call->noperands; i++) {
        struct opstate *o = &os[i];
        if (!o->piped || o->trivial)
            continue;
        bool changed_prev = s == b || !same_idx(o->idx_cur, o->idx_prev);
        bool changes_next = s + 1 >= e || !same_idx(o->idx_next, o->idx_cur);
        if (call->operands[i].dir == PL_IN) {
            if (o->single) {
                if (changed_prev)
                    p->fetch |= 1u << i, p->wait |= 1u << i;
                continue;
            }
            if (s + 1 < e && changes_next) {
                p->fetch |= 1u << i;
                p->fetch_bytes += o->bytes, p->fetch_raw += o->raw;
            }
            if (changed_prev)
                p->wait |= 1u << i;
        } else {
            if (changes_next) {
                p->out_start |= 1u << i;
                p->out_bytes += o->bytes, p->out_raw += o->raw;
            }
            if (s > b && changed_prev)
                p->out_wait |= 1u << i;
        }
    }
}

static void close_work(struct pl_ctx *ctx);

static void run_body(struct pl_ctx *c, int64_t s, struct pl_work *w)
{
    int64_t g[PL_MAX_GRID];
    unflatten(c->call, s, g);
    memset(&c->work, 0, sizeof c->work);
    c->step = s;
    c->call->body(c, g, c->call->user);
    close_work(c);
    *w = c->work;
}

/* Waits each input DMA named in 'mask' once (operands may share a handle). */
static void wait_inputs(struct opstate *os, int noperands, uint32_t mask, const struct pl_exec *x)
{
    void *done[PL_MAX_OPERANDS];
    int nd = 0;
    for (int i = 0; i < noperands; i++) {
        if (!(mask & (1u << i)) || !os[i].cur)
            continue;
        bool seen = false;
        for (int k = 0; k < nd; k++)
            seen |= done[k] == os[i].cur;
        if (!seen) {
            x->ops->dma_wait(x->ex, os[i].cur);
            done[nd++] = os[i].cur;
        }
        os[i].cur = NULL;
    }
}

/* Buffered(1) inputs: fetch now and wait at once (synchronous). */
static void fetch_single(struct pl_ctx *c, struct opstate *os, const struct plan *p,
                         const struct pl_exec *x, struct pl_stats *st)
{
    for (int i = 0; i < c->call->noperands; i++) {
        if (!os[i].single || !(p->fetch & (1u << i)) || c->call->operands[i].dir != PL_IN)
            continue;
        void *h = start_dma(x, st, true, os[i].bytes, os[i].raw, i);
        x->ops->dma_wait(x->ex, h);
        if (c->call->operands[i].data)
            copy_block(&c->call->operands[i], os[i].idx_cur, c->bufs[i][0], true);
    }
}

static void fetch_next(struct pl_ctx *c, struct opstate *os, const struct plan *p,
                       const struct pl_exec *x, struct pl_stats *st)
{
    const struct pl_call *call = c->call;
    for (int i = 0; i < call->noperands; i++) {
        if (os[i].single || !(p->fetch & (1u << i)))
            continue;
        os[i].pending = start_dma(x, st, true, os[i].bytes, os[i].raw, i);
        if (call->operands[i].data)
            copy_block(&call->operands[i], os[i].idx_next, c->bufs[i][1 - c->slot[i]], true);
    }
}

static void outputs(struct pl_ctx *c, struct opstate *os, const struct plan *p,
                    const struct pl_exec *x, struct pl_stats *st)
{
    const struct pl_call *call = c->call;
    void *prev[PL_MAX_OPERANDS] = {0};
    for (int i = 0; i < call->noperands; i++) {
        if (!(p->out_start & (1u << i)))
            continue;
        if (call->operands[i].data)
            copy_block(&call->operands[i], os[i].idx_cur, c->bufs[i][c->slot[i]], false);
        prev[i] = os[i].pending;
        os[i].pending = start_dma(x, st, false, os[i].bytes, os[i].raw, i);
    }
    for (int i = 0; i < call->noperands; i++) {
        void *h = (p->out_start & (1u << i)) ? prev[i] : os[i].pending;
        if (!(p->out_wait & (1u << i)) || !h)
            continue;
        x->ops->dma_wait(x->ex, h);
        if (!(p->out_start & (1u << i)))
            os[i].pending = NULL;
    }
}

/* Flips buffers after an executed step: the fetched block becomes current. */
static void advance_bufs(struct pl_ctx *c, struct opstate *os, const struct plan *p)
{
    const struct pl_call *call = c->call;
    for (int i = 0; i < call->noperands; i++) {
        struct opstate *o = &os[i];
        if (!o->piped || o->trivial)
            continue;
        if (call->operands[i].dir == PL_IN && (p->fetch & (1u << i)) && !o->single) {
            o->cur = o->pending;
            o->pending = NULL;
            c->slot[i] = 1 - c->slot[i];
        } else if (call->operands[i].dir == PL_OUT && (p->out_start & (1u << i)) &&
                   buffer_count(&call->operands[i]) == 2) {
            c->slot[i] = 1 - c->slot[i];
        }
    }
}

/* Moves every operand's block indices one step on. */
static void advance_idx(struct pl_ctx *c, struct opstate *os, int64_t s, int64_t e)
{
    const struct pl_call *call = c->call;
    for (int i = 0; i < call->noperands; i++) {
        struct opstate *o = &os[i];
        if (!o->piped || o->trivial)
            continue;
        memcpy(o->idx_prev, o->idx_cur, sizeof o->idx_prev);
        memcpy(o->idx_cur, o->idx_next, sizeof o->idx_cur);
        if (s + 2 < e)
            block_index(call, &call->operands[i], s + 2, o->idx_next);
    }
}

static void account(struct pl_stats *st, const struct pl_work *w, double n, double o_s)
{
    if (w->flops > 0)
        st->compute_steps += (int64_t)n;
    st->flops += w->flops * n;
    st->vpu_flops += w->vpu_flops * n;
    st->transcendentals += w->transcendentals * n;
    st->mxu_s += w->mxu_s * n;
    st->vpu_s += w->vpu_s * n;
    st->overhead_s += o_s * n;
}

static void exact_step(struct pl_ctx *c, struct opstate *os, const struct plan *p, int64_t s,
                       const struct pl_exec *x, struct pl_stats *st)
{
    x->ops->delay(x->ex, c->chip->step_overhead_s);
    fetch_next(c, os, p, x, st);
    wait_inputs(os, c->call->noperands, p->wait, x); /* one call: operands may share a handle */
    fetch_single(c, os, p, x, st);
    x->ops->compute(x->ex, &p->w, s, 1);
    account(st, &p->w, 1, c->chip->step_overhead_s);
}

/* A step whose body issues DMAs itself: the body runs after the pipeline's
 * waits, and its compute is executed in pieces between its DMA calls. */
static void live_step(struct pl_ctx *c, struct opstate *os, const struct plan *p, int64_t s)
{
    const struct pl_exec *x = c->x;
    x->ops->delay(x->ex, c->chip->step_overhead_s);
    fetch_next(c, os, p, x, c->st);
    wait_inputs(os, c->call->noperands, p->wait, x); /* one call: operands may share a handle */
    fetch_single(c, os, p, x, c->st);
    int64_t g[PL_MAX_GRID];
    unflatten(c->call, s, g);
    memset(&c->work, 0, sizeof c->work);
    c->step = s;
    c->live = true;
    int64_t before = c->st->compute_steps;
    c->call->body(c, g, c->call->user);
    pl_flush(c);
    c->live = false;
    if (c->st->compute_steps > before + 1) /* several flushes in one step count once */
        c->st->compute_steps = before + 1;
    c->st->overhead_s += c->chip->step_overhead_s;
}

static bool work_equal(const struct pl_work *a, const struct pl_work *b)
{
    return a->mxu_s == b->mxu_s && a->vpu_s == b->vpu_s && a->flops == b->flops &&
           a->vpu_flops == b->vpu_flops && a->transcendentals == b->transcendentals;
}

/* A steady-state step: it fetches exactly what it waits on, writes nothing. */
static bool steady(const struct plan *p, const struct opstate *os, int noperands)
{
    for (int i = 0; i < noperands; i++)
        if (os[i].single && (p->wait & (1u << i)))
            return false;
    return p->out_start == p->out_wait && p->fetch == p->wait;
}

static bool same_plan(const struct plan *a, const struct plan *b)
{
    return a->fetch == b->fetch && a->wait == b->wait && a->fetch_bytes == b->fetch_bytes &&
           a->out_start == b->out_start && a->out_bytes == b->out_bytes &&
           work_equal(&a->w, &b->w);
}

/* Runs steps [s0, s0+n) of identical plan 'p' as one input DMA, one compute
 * and, when every step writes its output back, one write-back DMA for the
 * first n-1 write-backs; the last one is started as the exact step would, and
 * waited on by the next step. */
/* What a run of n steps of plan 'p' takes step by step beyond the one-step
 * version, at the HBM's own rate. Step by step, with two buffers, step s
 * issues the fetch of step s + 1 after its overhead o and computes (c) once
 * the fetch issued a step earlier has landed (DMA latency l, transfer d): the
 * period P obeys P = max(o, o + l + d - P) + c, so P = max(o + c,
 * (o + c + l + d) / 2), and at least d. The run's one DMA pays l once:
 * max(n (o + c), o + l + n d). Latency-bound steps (paged decode's small DMAs,
 * a causal backward's) so come out early; the difference delays the run's
 * DMAs. */
static double lost_latency_s(const struct pl_ctx *c, const struct plan *p, int64_t n)
{
    const struct chip_params *chip = c->chip;
    double work = chip->step_overhead_s + p->w.mxu_s + p->w.vpu_s;
    double d = hbm_busy_s(chip, (double)(p->fetch_bytes + p->out_bytes));
    double lat = chip->dma_issue_s, steps = (double)n;
    double period = fmax(fmax(work, (work + lat + d) / 2), d);
    double one = fmax(steps * work, chip->step_overhead_s + lat + steps * d);
    return fmax(steps * period - one, 0);
}

static void bulk_steps(struct pl_ctx *c, struct opstate *os, const struct plan *p, int64_t s0,
                       int64_t n, const struct pl_exec *x, struct pl_stats *st)
{
    double o = c->chip->step_overhead_s;
    int noperands = c->call->noperands;
    x->ops->delay(x->ex, o + lost_latency_s(c, p, n));
    /* one DMA per operand, as the steps issue them: SimGrid shares HBM per
     * transfer, so one merged DMA would get one share where the steps' DMAs
     * get one each beside concurrent write-backs */
    void *h[PL_MAX_OPERANDS] = {0}, *hw[PL_MAX_OPERANDS] = {0};
    int64_t started = st->dmas;
    for (int i = 0; i < noperands; i++) {
        if (p->fetch & (1u << i))
            h[i] = start_dma(x, st, true, os[i].bytes * (uint64_t)n, os[i].raw * (uint64_t)n, i);
        if ((p->out_start & (1u << i)) && n > 1)
            hw[i] = start_dma(x, st, false, os[i].bytes * (uint64_t)(n - 1),
                               os[i].raw * (uint64_t)(n - 1), i);
    }
    started = st->dmas - started;
    int per_step = __builtin_popcount(p->fetch) + __builtin_popcount(p->out_start);
    st->dmas += (int64_t)per_step * n - started - __builtin_popcount(p->out_start);
    wait_inputs(os, noperands, p->wait, x);
    x->ops->compute(x->ex, &p->w, s0, n);
    if (n > 1)
        x->ops->delay(x->ex, o * (double)(n - 1));
    /* as outputs(): the last step starts its write-back, then waits for the
     * one before it (the run's, or the write-back started before the run) */
    void *prev[PL_MAX_OPERANDS] = {0};
    for (int i = 0; i < noperands; i++) {
        if (p->fetch & (1u << i))
            os[i].cur = h[i];
        if ((p->out_wait & (1u << i)) && os[i].pending)
            prev[i] = os[i].pending, os[i].pending = NULL;
        if (p->out_start & (1u << i))
            os[i].pending = start_dma(x, st, false, os[i].bytes, os[i].raw, i);
    }
    for (int i = 0; i < noperands; i++) {
        if (prev[i])
            x->ops->dma_wait(x->ex, prev[i]);
        if (hw[i])
            x->ops->dma_wait(x->ex, hw[i]);
    }
    account(st, &p->w, (double)n, o);
    st->coalesced_runs++;
}

static void epilogue(struct pl_ctx *c, struct opstate *os, const struct pl_exec *x,
                     struct pl_stats *st)
{
    const struct pl_call *call = c->call;
    int starts = 0, pending = 0; /* one write-back and nothing else to wait: a sync DMA */
    for (int i = 0; i < call->noperands; i++) {
        if (call->operands[i].dir != PL_OUT)
            continue;
        if (os[i].piped && os[i].trivial)
            starts++;
        else if (os[i].pending)
            pending++;
    }
    for (int i = 0; i < call->noperands; i++) {
        if (os[i].piped && os[i].trivial && call->operands[i].dir == PL_OUT) {
            if (call->operands[i].data)
                copy_block(&call->operands[i], os[i].idx_cur, c->bufs[i][0], false);
            if (starts == 1 && !pending && !os[i].pending) {
                sync_dma(x, st, false, os[i].bytes, os[i].raw, i);
                return;
            }
            os[i].pending = start_dma(x, st, false, os[i].bytes, os[i].raw, i);
        }
    }
    for (int i = 0; i < call->noperands; i++)
        if (call->operands[i].dir == PL_OUT && os[i].pending)
            x->ops->dma_wait(x->ex, os[i].pending);
}

/* Trivial-window inputs move once, before step 0, single-buffered. */
static void trivial_inputs(struct pl_ctx *c, struct opstate *os, const struct pl_exec *x,
                           struct pl_stats *st)
{
    for (int i = 0; i < c->call->noperands; i++) {
        if (!os[i].piped || !os[i].trivial || c->call->operands[i].dir != PL_IN)
            continue;
        if (c->call->operands[i].data)
            copy_block(&c->call->operands[i], os[i].idx_cur, c->bufs[i][0], true);
        sync_dma(x, st, true, os[i].bytes, os[i].raw, i);
    }
}

/* ---- step execution, with runs of identical steady steps coalesced ---- */

struct stepper {
    struct plan run;
    int64_t run_start, run_len;
    bool coalesce; /* runs may be coalesced (fast fidelity, not functional or manual) */
};

/* Steps of a run that are bandwidth-bound (compute shorter than a DMA's latency
 * and transfer) and few are executed one by one: such a run sits between
 * compute-bound steps (a causal backward's masked blocks), and how its DMAs
 * share the HBM with their neighbours' is not the one merged DMA's. */
#define PL_SHORT_RUN 16

static void flush_run(struct pl_ctx *c, struct opstate *os, struct stepper *sp)
{
    const struct plan *p = &sp->run;
    const struct chip_params *chip = c->chip;
    double work = chip->step_overhead_s + p->w.mxu_s + p->w.vpu_s;
    double dma = chip->dma_issue_s + hbm_busy_s(chip, (double)(p->fetch_bytes + p->out_bytes));
    if (sp->run_len > PL_SHORT_RUN || work >= dma) {
        bulk_steps(c, os, p, sp->run_start, sp->run_len, c->x, c->st);
    } else {
        for (int64_t k = 0; k < sp->run_len; k++) {
            exact_step(c, os, p, sp->run_start + k, c->x, c->st);
            outputs(c, os, p, c->x, c->st);
            advance_bufs(c, os, p);
        }
    }
    sp->run_len = 0;
}

/* Executes step 'p' (of index 'p->s'), or adds it to the current run. */
static void feed(struct pl_ctx *c, struct opstate *os, struct stepper *sp, const struct plan *p)
{
    const struct pl_exec *x = c->x;
    bool ok = sp->coalesce && p->s > c->begin && steady(p, os, c->call->noperands);
    if (sp->run_len > 0 && !(ok && same_plan(p, &sp->run)))
        flush_run(c, os, sp);
    if (ok) {
        if (sp->run_len++ == 0) {
            sp->run = *p;
            sp->run_start = p->s;
        }
    } else {
        exact_step(c, os, p, p->s, x, c->st);
        outputs(c, os, p, x, c->st);
        advance_bufs(c, os, p);
    }
}

static void feed_end(struct pl_ctx *c, struct opstate *os, struct stepper *sp)
{
    if (sp->run_len > 0)
        flush_run(c, os, sp);
}

/* Every step planned and executed in turn (exact fidelity, functional and
 * manual calls). */
static void run_steps(struct pl_ctx *c, struct opstate *os, int64_t b, int64_t e)
{
    struct stepper sp = {0};
    struct plan p;
    for (int64_t s = b; s < e; s++) {
        plan_step(c, os, s, b, e, &p);
        p.s = s;
        if (c->call->manual) {
            live_step(c, os, &p, s);
            outputs(c, os, &p, c->x, c->st);
            advance_bufs(c, os, &p);
        } else {
            run_body(c, s, &p.w);
            feed(c, os, &sp, &p);
        }
        advance_idx(c, os, s, e);
        c->st->steps++;
    }
    feed_end(c, os, &sp);
}

/* A group: the steps from one output write-back to the next. */
struct group {
    struct plan *p;
    size_t n, cap;
};

static bool same_group(const struct group *a, const struct group *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (!same_plan(&a->p[i], &b->p[i]) || a->p[i].out_wait != b->p[i].out_wait)
            return false;
    return true;
}

/* Runs 'r' more repeats of group 'g' (just executed) as one input DMA and
 * one write-back DMA per operand and one execution: exact when the repeats
 * are compute-bound or bandwidth-bound throughout, as for runs of steps. */
static void bulk_groups(struct pl_ctx *c, struct opstate *os, const struct group *g, int64_t r)
{
    const struct pl_exec *x = c->x;
    int noperands = c->call->noperands;
    const struct plan *first = &g->p[0], *last = &g->p[g->n - 1];
    uint64_t in[PL_MAX_OPERANDS] = {0}, out[PL_MAX_OPERANDS] = {0};
    uint64_t in_raw[PL_MAX_OPERANDS] = {0}, out_raw[PL_MAX_OPERANDS] = {0};
    int64_t per = 0, busy = 0;
    struct pl_work w = {0};
    for (size_t i = 0; i < g->n; i++) {
        const struct plan *p = &g->p[i];
        for (int k = 0; k < noperands; k++) {
            in[k] += (p->fetch & (1u << k)) ? os[k].bytes : 0;
            out[k] += (p->out_start & (1u << k)) ? os[k].bytes : 0;
            in_raw[k] += (p->fetch & (1u << k)) ? os[k].raw : 0;
            out_raw[k] += (p->out_start & (1u << k)) ? os[k].raw : 0;
        }
        per += __builtin_popcount(p->fetch) + __builtin_popcount(p->out_start);
        busy += p->w.flops > 0;
        w.mxu_s += p->w.mxu_s, w.vpu_s += p->w.vpu_s, w.flops += p->w.flops;
        w.vpu_flops += p->w.vpu_flops, w.transcendentals += p->w.transcendentals;
    }
    double o = c->chip->step_overhead_s;
    int64_t steps = r * (int64_t)g->n;
    x->ops->delay(x->ex, o);
    void *h[PL_MAX_OPERANDS] = {0}, *hw[PL_MAX_OPERANDS] = {0}; /* per operand: see bulk_steps */
    int64_t started = c->st->dmas;
    for (int k = 0; k < noperands; k++) {
        bool lw = last->out_start & (1u << k);
        uint64_t lastw = lw ? os[k].bytes : 0, lastw_raw = lw ? os[k].raw : 0;
        if (in[k])
            h[k] = start_dma(x, c->st, true, in[k] * (uint64_t)r, in_raw[k] * (uint64_t)r, k);
        if (out[k] * (uint64_t)r > lastw)
            hw[k] = start_dma(x, c->st, false, out[k] * (uint64_t)r - lastw,
                              out_raw[k] * (uint64_t)r - lastw_raw, k);
    }
    started = c->st->dmas - started;
    wait_inputs(os, noperands, first->wait, x);
    x->ops->compute(x->ex, &w, first->s + (int64_t)g->n, r);
    x->ops->delay(x->ex, o * (double)(steps - 1));
    for (int i = 0; i < noperands; i++)
        if ((first->out_wait & (1u << i)) && os[i].pending) {
            x->ops->dma_wait(x->ex, os[i].pending);
            os[i].pending = NULL;
        }
    for (int i = 0; i < noperands; i++) { /* the last write-back, then the one before it */
        if (last->fetch & (1u << i))
            os[i].cur = h[i];
        if (last->out_start & (1u << i))
            os[i].pending = start_dma(x, c->st, false, os[i].bytes, os[i].raw, i);
    }
    for (int i = 0; i < noperands; i++) {
        if (hw[i])
            x->ops->dma_wait(x->ex, hw[i]);
        if (h[i] && !(last->fetch & (1u << i))) /* fetched and used within the group */
            x->ops->dma_wait(x->ex, h[i]);
    }
    struct pl_stats *st = c->st;
    st->dmas += per * r - started - __builtin_popcount(last->out_start);
    account(st, &w, (double)r, o * (double)g->n);
    st->compute_steps += busy * r - (w.flops > 0 ? r : 0);
    st->coalesced_runs++;
}

/* Whether every step of 'g' is on one side: compute at least its DMAs' time
 * at the HBM's rate, or at most. A folded group overlaps all its DMAs with all
 * its compute, which is the steps' time only then: where compute-bound and
 * bandwidth-bound steps alternate, each pays its own larger part. */
static bool one_sided(const struct pl_ctx *c, const struct group *g)
{
    int side = 0;
    for (size_t i = 0; i < g->n; i++) {
        const struct plan *p = &g->p[i];
        double dma = hbm_busy_s(c->chip, (double)(p->fetch_bytes + p->out_bytes));
        double work = p->w.mxu_s + p->w.vpu_s;
        int s = work > dma ? 1 : work < dma ? -1 : 0;
        if (s && side && s != side)
            return false;
        side = s ? s : side;
    }
    return true;
}

static void group_push(struct group *g, const struct plan *p)
{
    xgrow(&g->p, &g->cap, g->n + 1, sizeof *g->p);
    g->p[g->n++] = *p;
}

static void feed_group(struct pl_ctx *c, struct opstate *os, struct stepper *sp,
                       const struct group *g)
{
    for (size_t i = 0; i < g->n; i++)
        feed(c, os, sp, &g->p[i]);
    feed_end(c, os, sp);
}

/* Fidelity fast: steps are planned a group at a time; a group identical to
 * the one before is not executed but counted, and a series of them runs as
 * one (bulk_groups). Other groups run step by step, runs coalesced. */
static void run_grouped(struct pl_ctx *c, struct opstate *os, int64_t b, int64_t e)
{
    struct group cur = {0}, prev = {0};
    struct stepper sp = {.coalesce = true};
    int64_t repeats = 0;
    struct plan p;
    for (int64_t s = b; s < e; s++) {
        plan_step(c, os, s, b, e, &p);
        p.s = s;
        run_body(c, s, &p.w);
        advance_idx(c, os, s, e);
        c->st->steps++;
        group_push(&cur, &p);
        if (!p.out_start && s + 1 < e)
            continue;
        if (prev.n && same_group(&cur, &prev) && one_sided(c, &prev)) {
            repeats++;
        } else {
            if (repeats)
                bulk_groups(c, os, &prev, repeats);
            repeats = 0;
            feed_group(c, os, &sp, &cur);
            struct group t = prev;
            prev = cur;
            cur = t;
        }
        cur.n = 0;
    }
    if (repeats)
        bulk_groups(c, os, &prev, repeats);
    free(cur.p);
    free(prev.p);
}

/* The sums of a run are taken from zero and added to the caller's at its end,
 * so a replayed script (pl_replay) adds exactly what the run would have. */
struct sums {
    double hbm_bytes, flops, vpu_flops, transcendentals, mxu_s, vpu_s, overhead_s;
    double useful_bytes;
};

static void sums_take(struct pl_stats *st, struct sums *saved)
{
    *saved = (struct sums){st->hbm_bytes, st->flops, st->vpu_flops, st->transcendentals,
                           st->mxu_s, st->vpu_s, st->overhead_s, st->useful_bytes};
    st->hbm_bytes = st->flops = st->vpu_flops = st->transcendentals = st->useful_bytes = 0;
    st->mxu_s = st->vpu_s = st->overhead_s = 0;
}

static void sums_add(struct pl_stats *st, const struct sums *to)
{
    st->hbm_bytes = to->hbm_bytes + st->hbm_bytes, st->flops = to->flops + st->flops;
    st->vpu_flops = to->vpu_flops + st->vpu_flops;
    st->transcendentals = to->transcendentals + st->transcendentals;
    st->mxu_s = to->mxu_s + st->mxu_s, st->vpu_s = to->vpu_s + st->vpu_s;
    st->overhead_s = to->overhead_s + st->overhead_s;
    st->useful_bytes = to->useful_bytes + st->useful_bytes;
}

static void run(const struct pl_call *call, const struct chip_params *chip, int64_t b, int64_t e,
                const struct pl_exec *x, struct pl_stats *st);

void pl_run(const struct pl_call *call, const struct chip_params *chip, int64_t b, int64_t e,
            const struct pl_exec *x, struct pl_stats *st)
{
    if (b >= e)
        return;
    struct sums saved;
    sums_take(st, &saved);
    run(call, chip, b, e, x, st);
    sums_add(st, &saved);
}

/* ---- a bandwidth-bound stream as a whole (fast fidelity) ---- */

/* A stream call whose steps are bandwidth-bound, with every operand
 * double-buffered in VMEM and moving every step. */
static bool streamable(const struct pl_ctx *c, const struct opstate *os, int64_t n,
                       const struct pl_work *w)
{
    const struct pl_call *call = c->call;
    if (!call->stream || call->ngrid != 1 || n < 2 || call->smem_prefetch_bytes)
        return false;
    uint64_t bytes = 0;
    for (int i = 0; i < call->noperands; i++) {
        if (!os[i].piped || os[i].trivial || os[i].single || same_idx(os[i].idx_cur, os[i].idx_next))
            return false;
        bytes += os[i].bytes;
    }
    double work = c->chip->step_overhead_s + w->mxu_s + w->vpu_s;
    return work < hbm_busy_s(c->chip, (double)bytes);
}

/* A one-step stream whose operands all move once (a small reduction): its
 * inputs arrive one after the other, then the step's overhead o and compute c,
 * then the write-back, each DMA l + b_i/B: sum(l + b_i/B) + o + c. Fast
 * fidelity runs it as the overhead, the other DMAs' latencies, the compute
 * and one DMA of all the bytes: the same sum. */
static bool single_stream(const struct pl_ctx *c, const struct opstate *os, int64_t n)
{
    const struct pl_call *call = c->call;
    if (!call->stream || n != 1 || call->smem_prefetch_bytes || call->noperands < 1)
        return false;
    for (int i = 0; i < call->noperands; i++)
        if (!os[i].piped || !os[i].trivial)
            return false;
    return true;
}

static void run_single_stream(struct pl_ctx *c, const struct opstate *os, int64_t b,
                              const struct pl_work *w)
{
    const struct pl_exec *x = c->x;
    int n = c->call->noperands;
    uint64_t bytes = 0, raw = 0;
    for (int i = 0; i < n; i++)
        bytes += os[i].bytes, raw += os[i].raw;
    x->ops->delay(x->ex, c->chip->step_overhead_s + (n - 1) * c->chip->dma_issue_s);
    x->ops->compute(x->ex, w, b, 1);
    sync_dma(x, c->st, true, bytes, raw, -1);
    c->st->dmas += n - 1;
    account(c->st, w, 1, c->chip->step_overhead_s);
    c->st->steps++;
}

/* Steps [b, b+n) of a bandwidth-bound stream, whole. Step by step, the HBM
 * never idles once the first blocks are in: the pipeline takes the first
 * step's overhead, the DMA latency, the n steps' transfers (d each: every
 * block in and out), then the last block's compute and its write-back's
 * latency: o + l + n d + c + l. Here: o, one DMA per operand for all its
 * blocks (l + n d together, each its share of the HBM as the steps' DMAs
 * are) beside the steps' compute and overheads, then c + l. */
static void run_stream(struct pl_ctx *c, struct opstate *os, int64_t b, int64_t n,
                       const struct pl_work *w)
{
    const struct pl_exec *x = c->x;
    const struct pl_call *call = c->call;
    double o = c->chip->step_overhead_s;
    double mid = o * (double)(n - 1), post = w->mxu_s + w->vpu_s + c->chip->dma_issue_s;
    if (x->ops->stream) {
        bool in[PL_MAX_OPERANDS];
        uint64_t bytes[PL_MAX_OPERANDS];
        int opi[PL_MAX_OPERANDS];
        for (int i = 0; i < call->noperands; i++) {
            in[i] = call->operands[i].dir == PL_IN, bytes[i] = os[i].bytes * (uint64_t)n;
            opi[i] = i;
            c->st->hbm_bytes += (double)bytes[i];
            c->st->useful_bytes += (double)(os[i].raw * (uint64_t)n);
        }
        x->ops->stream(x->ex, call->noperands, in, bytes, opi, w, b, n, o, mid, post);
    } else {
        void *h[PL_MAX_OPERANDS];
        x->ops->delay(x->ex, o);
        for (int i = 0; i < call->noperands; i++)
            h[i] = start_dma(x, c->st, call->operands[i].dir == PL_IN, os[i].bytes * (uint64_t)n,
                             os[i].raw * (uint64_t)n, i);
        c->st->dmas -= call->noperands;
        x->ops->compute(x->ex, w, b, n);
        x->ops->delay(x->ex, mid);
        for (int i = 0; i < call->noperands; i++)
            x->ops->dma_wait(x->ex, h[i]);
        x->ops->delay(x->ex, post);
    }
    c->st->dmas += (int64_t)call->noperands * n;
    account(c->st, w, (double)n, o);
    c->st->steps += n;
    c->st->coalesced_runs++;
}

static void run(const struct pl_call *call, const struct chip_params *chip, int64_t b, int64_t e,
                const struct pl_exec *x, struct pl_stats *st)
{
    struct pl_ctx c = {.call = call, .chip = chip, .x = x, .st = st, .begin = b};
    /* on the heap: this runs on an actor's small stack (sim/sim.c) */
    struct opstate *os = xcalloc((size_t)(call->noperands > 0 ? call->noperands : 1), sizeof *os);
    if (call->functional)
        ctx_alloc(&c);
    c.state = call->state_bytes ? xcalloc(1, call->state_bytes) : NULL;
    st->vmem_bytes = pl_vmem_bytes(call, chip);
    init_states(&c, os, b, e);
    if (x->coalesce && call->stream && !call->functional && !call->manual) {
        struct pl_work w;
        run_body(&c, b, &w);
        bool whole = streamable(&c, os, e - b, &w), single = single_stream(&c, os, e - b);
        if (whole)
            run_stream(&c, os, b, e - b, &w);
        else if (single)
            run_single_stream(&c, os, b, &w);
        if (whole || single) {
            free(c.state);
            free(os);
            return;
        }
    }
    if (call->smem_prefetch_bytes) /* scalar prefetch: copied whole to SMEM first */
        sync_dma(x, st, true, call->smem_prefetch_bytes, call->smem_prefetch_bytes, -1);
    trivial_inputs(&c, os, x, st);
    prologue(&c, os, x, st);
    bool may_coalesce = x->coalesce && !call->functional && !call->manual;
    if (may_coalesce)
        run_grouped(&c, os, b, e);
    else
        run_steps(&c, os, b, e);
    epilogue(&c, os, x, st);
    ctx_free(&c);
    free(c.state);
    free(os);
}

void pl_step_work(const struct pl_call *call, const struct chip_params *chip, int64_t step,
                  struct pl_work *w)
{
    TPU_ASSERT(!call->manual && !call->functional, "pallas_call '%s': no step work of a manual "
               "or functional call", call->name);
    struct pl_ctx c = {.call = call, .chip = chip};
    c.state = call->state_bytes ? xcalloc(1, call->state_bytes) : NULL;
    run_body(&c, step, w);
    free(c.state);
}

/* The dry run's executor: handles are never NULL, nothing takes time. */
static void *dry_dma_start(void *ex, bool in, uint64_t bytes, int operand)
{
    (void)in, (void)bytes, (void)operand;
    return ex;
}

static void dry_dma_wait(void *ex, void *h)
{
    (void)ex, (void)h;
}

static void dry_compute(void *ex, const struct pl_work *w, int64_t step, int64_t n)
{
    (void)ex, (void)w, (void)step, (void)n;
}

static void dry_delay(void *ex, double s)
{
    (void)ex, (void)s;
}

void pl_dry_run(const struct pl_call *call, const struct chip_params *chip, int64_t begin,
                int64_t end, struct pl_stats *st)
{
    static const struct pl_exec_ops ops = {.dma_start = dry_dma_start, .dma_wait = dry_dma_wait,
                                           .compute = dry_compute, .delay = dry_delay};
    int token;
    struct pl_exec x = {&ops, &token, true};
    pl_run(call, chip, begin, end, &x, st);
}

/* ---- body helpers ---- */

/* The open matmul with its feed and drain: the MXU's time, and on the VPU
 * what of their slot time the systolic pass does not cover. */
static void close_matmul(struct pl_ctx *ctx)
{
    struct pl_work *w = &ctx->work;
    double io_s = vpu_time_s(ctx->chip, &w->io);
    w->mxu_s += w->mm_s;
    if (io_s > w->mm_s)
        w->vpu_s += io_s - w->mm_s;
    w->mm_s = 0;
    memset(&w->io, 0, sizeof w->io);
}

void pl_matmul(struct pl_ctx *ctx, int64_t m, int64_t k, int64_t n, enum dtype dt)
{
    pl_vpu_flush(ctx);
    close_matmul(ctx);
    struct pl_work *w = &ctx->work;
    w->io = w->feed;
    memset(&w->feed, 0, sizeof w->feed);
    w->mm_s = mxu_time_s(ctx->chip, m, k, n, dt);
    w->flops += mxu_flops(m, k, n);
    ctx->mm_open = true;
}

static void count_vpu(struct pl_ctx *ctx, int64_t rows, int64_t cols, double alu, double eup)
{
    double elems = (double)rows * (double)cols;
    ctx->work.vpu_flops += alu * elems;
    ctx->work.transcendentals += eup * elems;
}

void pl_mxu_feed(struct pl_ctx *ctx, int64_t rows, int64_t cols, double alu, double load)
{
    vpu_add(&ctx->work.feed, ctx->chip, rows, cols, alu, load, 0, 0, 0);
    count_vpu(ctx, rows, cols, alu, 0);
}

void pl_mxu_drain(struct pl_ctx *ctx, int64_t rows, int64_t cols, double alu, double store)
{
    TPU_ASSERT(ctx->mm_open, "pallas_call '%s': pl_mxu_drain without a matmul before it",
               ctx->call->name);
    vpu_add(&ctx->work.io, ctx->chip, rows, cols, alu, 0, store, 0, 0);
    count_vpu(ctx, rows, cols, alu, 0);
}

/* Ends a step's (or a manual body's piece of) work: the open matmul closes,
 * a feed no matmul took is serial VPU work. */
static void close_work(struct pl_ctx *ctx)
{
    struct pl_work *w = &ctx->work;
    close_matmul(ctx);
    vpu_merge(&w->vops, &w->feed);
    memset(&w->feed, 0, sizeof w->feed);
    pl_vpu_flush(ctx);
    ctx->mm_open = false;
}

void pl_vpu(struct pl_ctx *ctx, int64_t rows, int64_t cols, double alu, double load,
            double store, double eup, double xlu)
{
    vpu_add(&ctx->work.vops, ctx->chip, rows, cols, alu, load, store, eup, xlu);
    count_vpu(ctx, rows, cols, alu, eup);
}

void pl_flush(struct pl_ctx *ctx)
{
    if (!ctx->live)
        return;
    close_work(ctx);
    if (ctx->work.mxu_s + ctx->work.vpu_s > 0)
        ctx->x->ops->compute(ctx->x->ex, &ctx->work, ctx->step, 1);
    account(ctx->st, &ctx->work, 1, 0);
    memset(&ctx->work, 0, sizeof ctx->work);
}

void *pl_dma_start(struct pl_ctx *ctx, bool in, uint64_t bytes)
{
    return pl_dma_start_useful(ctx, in, bytes, bytes);
}

void *pl_dma_start_useful(struct pl_ctx *ctx, bool in, uint64_t bytes, uint64_t useful)
{
    TPU_ASSERT(ctx->live, "pallas_call '%s': manual DMA from a body not marked manual",
               ctx->call->name);
    pl_flush(ctx);
    return start_dma(ctx->x, ctx->st, in, bytes, useful, -1);
}

void pl_dma_wait(struct pl_ctx *ctx, void *handle)
{
    pl_flush(ctx);
    ctx->x->ops->dma_wait(ctx->x->ex, handle);
}

void pl_vpu_flush(struct pl_ctx *ctx)
{
    ctx->work.vpu_s += vpu_time_s(ctx->chip, &ctx->work.vops);
    memset(&ctx->work.vops, 0, sizeof ctx->work.vops);
}

float *pl_buf(struct pl_ctx *ctx, int i)
{
    return ctx->bufs[i][ctx->slot[i]];
}

float *pl_scratch_buf(struct pl_ctx *ctx, int i)
{
    return ctx->scratch[i];
}

void *pl_state(struct pl_ctx *ctx)
{
    return ctx->state;
}

bool pl_functional(const struct pl_ctx *ctx)
{
    return ctx->call->functional;
}

const struct chip_params *pl_chip(const struct pl_ctx *ctx)
{
    return ctx->chip;
}

int64_t pl_step(const struct pl_ctx *ctx)
{
    return ctx->step;
}

float pl_round(float x, enum dtype dt)
{
    switch (dt) {
    case DT_BF16: {
        uint32_t u;
        memcpy(&u, &x, sizeof u);
        u += 0x7fffu + ((u >> 16) & 1u);
        u &= 0xffff0000u;
        memcpy(&x, &u, sizeof u);
        return x;
    }
    case DT_INT8: {
        float r = x < 0 ? -(float)(int)(-x + 0.5f) : (float)(int)(x + 0.5f);
        return r > 127 ? 127 : r < -128 ? -128 : r;
    }
    case DT_INT32:
        return x < 0 ? -(float)(int64_t)(-x + 0.5f) : (float)(int64_t)(x + 0.5f);
    case DT_FP8:
    case DT_F32:
    case DT_COUNT:
        break;
    }
    return x;
}

/* ---- scripts: record an executor's calls, replay them ---- */

enum rec_kind { REC_DMA_START, REC_DMA_WAIT, REC_COMPUTE, REC_DELAY };

struct rec {
    uint8_t kind;
    bool in;
    int operand;
    int64_t handle;   /* DMA_START: the handle it makes; DMA_WAIT: the one it waits */
    int64_t steps;    /* st->steps before the call (the progress line reads it) */
    uint64_t bytes;
    int64_t step, n;  /* COMPUTE */
    double seconds;   /* DELAY */
    struct pl_work w; /* COMPUTE */
};

struct pl_script {
    struct rec *r;
    size_t n, cap;
    int64_t nhandles;
    struct pl_stats st; /* what the run adds */
};

struct recorder {
    struct pl_script *s;
    const struct pl_stats *st;
};

static struct rec *rec_push(struct recorder *rc, enum rec_kind kind)
{
    struct pl_script *s = rc->s;
    xgrow(&s->r, &s->cap, s->n + 1, sizeof *s->r);
    struct rec *r = &s->r[s->n++];
    memset(r, 0, sizeof *r);
    r->kind = (uint8_t)kind;
    r->steps = rc->st->steps;
    return r;
}

static void *rec_dma_start(void *ex, bool in, uint64_t bytes, int operand)
{
    struct recorder *rc = ex;
    struct rec *r = rec_push(rc, REC_DMA_START);
    r->in = in, r->bytes = bytes, r->operand = operand;
    r->handle = rc->s->nhandles++;
    return (void *)(intptr_t)(r->handle + 1); /* never NULL */
}

static void rec_dma_wait(void *ex, void *h)
{
    rec_push(ex, REC_DMA_WAIT)->handle = (int64_t)(intptr_t)h - 1;
}

static void rec_compute(void *ex, const struct pl_work *w, int64_t step, int64_t n)
{
    struct rec *r = rec_push(ex, REC_COMPUTE);
    r->w = *w, r->step = step, r->n = n;
}

static void rec_delay(void *ex, double s)
{
    rec_push(ex, REC_DELAY)->seconds = s;
}

/* A recorder that only counts (pl_script_length). */
static void *cnt_dma_start(void *ex, bool in, uint64_t bytes, int operand)
{
    (void)in, (void)bytes, (void)operand;
    return (void *)(intptr_t)++*(int64_t *)ex; /* never NULL */
}

static void cnt_dma_wait(void *ex, void *h)
{
    (void)h;
    ++*(int64_t *)ex;
}

static void cnt_compute(void *ex, const struct pl_work *w, int64_t step, int64_t n)
{
    (void)w, (void)step, (void)n;
    ++*(int64_t *)ex;
}

static void cnt_delay(void *ex, double s)
{
    (void)s;
    ++*(int64_t *)ex;
}

int64_t pl_script_length(const struct pl_call *call, const struct chip_params *chip,
                         int64_t begin, int64_t end, bool coalesce)
{
    static const struct pl_exec_ops ops = {.dma_start = cnt_dma_start, .dma_wait = cnt_dma_wait,
                                           .compute = cnt_compute, .delay = cnt_delay};
    int64_t n = 0;
    struct pl_exec x = {&ops, &n, coalesce};
    struct pl_stats st = {0};
    pl_run(call, chip, begin, end, &x, &st);
    return n;
}

bool pl_scriptable(const struct pl_call *call)
{
    return !call->functional && !call->manual;
}

struct pl_script *pl_record(const struct pl_call *call, const struct chip_params *chip,
                            int64_t begin, int64_t end, bool coalesce)
{
    TPU_ASSERT(pl_scriptable(call), "pallas_call '%s': a functional or manual call cannot be "
               "recorded", call->name);
    static const struct pl_exec_ops ops = {.dma_start = rec_dma_start, .dma_wait = rec_dma_wait,
                                           .compute = rec_compute, .delay = rec_delay};
    struct pl_script *s = xcalloc(1, sizeof *s);
    struct recorder rc = {s, &s->st};
    struct pl_exec x = {&ops, &rc, coalesce};
    pl_run(call, chip, begin, end, &x, &s->st);
    return s;
}

static void add_stats(struct pl_stats *to, const struct pl_stats *d)
{
    to->compute_steps += d->compute_steps;
    to->dmas += d->dmas;
    to->coalesced_runs += d->coalesced_runs;
    struct sums saved;
    sums_take(to, &saved);
    to->hbm_bytes = d->hbm_bytes, to->flops = d->flops, to->vpu_flops = d->vpu_flops;
    to->transcendentals = d->transcendentals;
    to->mxu_s = d->mxu_s, to->vpu_s = d->vpu_s, to->overhead_s = d->overhead_s;
    to->useful_bytes = d->useful_bytes;
    sums_add(to, &saved);
}

void pl_replay(const struct pl_script *s, const struct pl_exec *x, struct pl_stats *st)
{
    if (!s->n && !s->st.steps)
        return;
    void **h = xcalloc((size_t)s->nhandles + 1, sizeof *h);
    int64_t steps0 = st->steps;
    st->vmem_bytes = s->st.vmem_bytes;
    for (size_t i = 0; i < s->n; i++) {
        const struct rec *r = &s->r[i];
        st->steps = steps0 + r->steps;
        switch ((enum rec_kind)r->kind) {
        case REC_DMA_START:
            h[r->handle] = x->ops->dma_start(x->ex, r->in, r->bytes, r->operand);
            break;
        case REC_DMA_WAIT:
            x->ops->dma_wait(x->ex, h[r->handle]);
            break;
        case REC_COMPUTE:
            x->ops->compute(x->ex, &r->w, r->step, r->n);
            break;
        case REC_DELAY:
            x->ops->delay(x->ex, r->seconds);
            break;
        }
    }
    st->steps = steps0 + s->st.steps;
    add_stats(st, &s->st);
    free(h);
}

void pl_script_stats(const struct pl_script *s, struct pl_stats *st)
{
    if (!s->n && !s->st.steps)
        return;
    st->vmem_bytes = s->st.vmem_bytes;
    st->steps += s->st.steps;
    add_stats(st, &s->st);
}

void pl_script_free(struct pl_script *s)
{
    if (s) {
        free(s->r);
        free(s);
    }
}
