/* kernels/pallas.c -- grid walk and the Pallas TPU pipeline schedule.
 * Per step s of a core's range [b, e) (docs/pallas-semantics.md section 1):
 *   overhead; for each input: if s+1<e and idx(s+1)!=idx(s) start DMA(s+1);
 *   for each input: if s==b or idx(s)!=idx(s-1) wait DMA(s);  body;
 *   for each output: if s==e-1 or idx(s+1)!=idx(s) start write-back;
 *   for each output: if s>b and idx(s)!=idx(s-1) wait the write-back of s-1.
 * Buffered(1) operands fetch at the step that needs them and wait at once.
 * Trivial windows (block = array, index map all zeros) move once. */
#include "kernels/pallas.h"
#include "kernels/pallas_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/hbm.h"
#include "models/mxu.h"
#include "base/check.h"
#include "base/diag.h"
#include "base/sat.h"
#include "base/xalloc.h"

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
        if (op->space == PL_VMEM) /* (products of user block sizes: saturate, never wrap) */
            total = sat_addu64(total, sat_mulu64(block_vmem_bytes(op, chip),
                                                 (uint64_t)buffer_count(op)));
    }
    for (int i = 0; i < call->nscratch; i++) {
        const struct pl_scratch *sc = &call->scratch[i];
        if (sc->space == PL_VMEM)
            total = sat_addu64(total, hbm_vmem_bytes(chip, sc->dt, sc->rank, sc->shape));
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
            return diag_fail(err, n, "operand '%s': block dim %d is %lld, must be in [1, %lld]",
                             op->name, d, (long long)b, (long long)op->shape[d]);
        }
    }
    if (r == 1) {
        int64_t b = op->block[0], bits = 8 * dtype_bytes(op->dt);
        if (b == op->shape[0] || b % 1024 == 0 || (is_pow2(b) && b >= 128 * (32 / bits)))
            return 0;
        return diag_fail(err, n,
                "operand '%s': rank-1 block %lld must equal the array dim %lld, be a multiple "
                "of 1024, or a power of 2 >= %lld",
                op->name, (long long)b, (long long)op->shape[0], (long long)(128 * (32 / bits)));
    }
    static const int64_t tile[2] = {8, 128};
    for (int k = 0; k < 2; k++) {
        int d = r - 2 + k;
        if (op->block[d] == PL_SQUEEZED)
            continue;
        if (op->block[d] % tile[k] != 0 && op->block[d] != op->shape[d]) {
            return diag_fail(err, n,
                    "operand '%s': block shape's last two dims must be divisible by (8, 128) "
                    "or equal the array dims; dim %d is %lld of %lld",
                    op->name, d, (long long)op->block[d], (long long)op->shape[d]);
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
    char tot[32] = "2^64 bytes or more";
    if (total < UINT64_MAX)
        snprintf(tot, sizeof tot, "%llu bytes", (unsigned long long)total);
    int len = snprintf(err, n, "VMEM footprint %s exceeds the scoped limit %llu bytes:", tot,
                       (unsigned long long)limit);
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

/* Each array the call reads or writes (all but SMEM's scalars) fits the HBM: its bytes are a
 * product of user dims, computed saturating. (A chip without a capacity -- the unit tests'
 * synthetic ones; a preset always has one -- is not checked.) */
static int check_hbm(const struct pl_call *call, const struct chip_params *chip, char *err,
                     size_t n)
{
    for (int i = 0; i < call->noperands && chip->hbm_bytes > 0; i++) {
        const struct pl_operand *op = &call->operands[i];
        if (op->space == PL_SMEM)
            continue;
        uint64_t bytes = (uint64_t)dtype_bytes(op->dt);
        for (int d = 0; d < op->rank; d++)
            bytes = sat_mulu64(bytes, (uint64_t)op->shape[d]);
        if (bytes <= chip->hbm_bytes)
            continue;
        char b[32] = "2^64 or more";
        if (bytes < UINT64_MAX)
            snprintf(b, sizeof b, "%llu", (unsigned long long)bytes);
        return diag_fail(err, n,
                         "operand '%s' takes %s bytes, more than the chip's HBM (%llu bytes)",
                         op->name, b, (unsigned long long)chip->hbm_bytes);
    }
    return 0;
}

int pl_check(const struct pl_call *call, const struct chip_params *chip, char *err, size_t n)
{
    bool seen_arbitrary = false;
    for (int i = 0; i < call->ngrid; i++) {
        if (call->grid[i] < 1) {
            return diag_fail(err, n, "grid dim %d is %lld, must be >= 1", i,
                             (long long)call->grid[i]);
        }
        if (call->sem[i] == PL_PARALLEL && seen_arbitrary) {
            return diag_fail(err, n,
                             "dimensions with parallel semantics must form a prefix of the grid");
        }
        seen_arbitrary |= call->sem[i] != PL_PARALLEL;
    }
    for (int i = 0; i < call->noperands; i++) {
        const struct pl_operand *op = &call->operands[i];
        if (op->space != PL_VMEM)
            continue;
        if (op->buffers < 0 || op->buffers > 2) {
            return diag_fail(err, n, "operand '%s': a top-level pallas_call takes Buffered(1) or "
                             "Buffered(2), got %d buffers", op->name, op->buffers);
        }
        if (check_block(op, err, n))
            return -1;
    }
    if (check_vmem(call, chip, err, n))
        return -1;
    return check_hbm(call, chip, err, n);
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

bool pl_same_idx(const int64_t *a, const int64_t *b)
{
    return memcmp(a, b, sizeof(int64_t) * PL_MAX_RANK) == 0;
}

void *pl_start_dma(const struct pl_exec *x, struct pl_stats *st, bool in, uint64_t bytes,
                   uint64_t raw, int op)
{
    st->dmas++;
    st->hbm_bytes += (double)bytes;
    st->useful_bytes += (double)raw;
    return x->ops->dma_start(x->ex, in, bytes, op);
}

/* A DMA waited on at once. */
void pl_sync_dma(const struct pl_exec *x, struct pl_stats *st, bool in, uint64_t bytes,
                 uint64_t raw, int op)
{
    if (!x->ops->dma_sync) {
        x->ops->dma_wait(x->ex, pl_start_dma(x, st, in, bytes, raw, op));
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
        os[i].cur = pl_start_dma(x, st, true, os[i].bytes, os[i].raw, i);
        if (op->data)
            copy_block(op, os[i].idx_cur, c->bufs[i][0], true);
    }
}

/* Decides what step 's' of [b, e) does; fills 'p' (without the body's work). */
void pl_plan_step(struct pl_ctx *c, struct opstate *os, int64_t s, int64_t b, int64_t e,
                  struct plan *p)
{
    const struct pl_call *call = c->call;
    memset(p, 0, sizeof *p);
    for (int i = 0; i < call->noperands; i++) {
        struct opstate *o = &os[i];
        if (!o->piped || o->trivial)
            continue;
        bool changed_prev = s == b || !pl_same_idx(o->idx_cur, o->idx_prev);
        bool changes_next = s + 1 >= e || !pl_same_idx(o->idx_next, o->idx_cur);
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

void pl_run_body(struct pl_ctx *c, int64_t s, struct pl_work *w)
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
void pl_wait_inputs(struct opstate *os, int noperands, uint32_t mask, const struct pl_exec *x)
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
        void *h = pl_start_dma(x, st, true, os[i].bytes, os[i].raw, i);
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
        os[i].pending = pl_start_dma(x, st, true, os[i].bytes, os[i].raw, i);
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
        os[i].pending = pl_start_dma(x, st, false, os[i].bytes, os[i].raw, i);
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
void pl_advance_idx(struct pl_ctx *c, struct opstate *os, int64_t s, int64_t e)
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

void pl_account(struct pl_stats *st, const struct pl_work *w, double n, double o_s)
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
    pl_wait_inputs(os, c->call->noperands, p->wait, x); /* one call: operands may share a handle */
    fetch_single(c, os, p, x, st);
    x->ops->compute(x->ex, &p->w, s, 1);
    pl_account(st, &p->w, 1, c->chip->step_overhead_s);
}

void pl_exact_step(struct pl_ctx *c, struct opstate *os, const struct plan *p, int64_t s)
{
    exact_step(c, os, p, s, c->x, c->st);
    outputs(c, os, p, c->x, c->st);
    advance_bufs(c, os, p);
}

/* A step whose body issues DMAs itself: the body runs after the pipeline's
 * waits, and its compute is executed in pieces between its DMA calls. */
static void live_step(struct pl_ctx *c, struct opstate *os, const struct plan *p, int64_t s)
{
    const struct pl_exec *x = c->x;
    x->ops->delay(x->ex, c->chip->step_overhead_s);
    fetch_next(c, os, p, x, c->st);
    pl_wait_inputs(os, c->call->noperands, p->wait, x); /* one call: operands may share a handle */
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
                pl_sync_dma(x, st, false, os[i].bytes, os[i].raw, i);
                return;
            }
            os[i].pending = pl_start_dma(x, st, false, os[i].bytes, os[i].raw, i);
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
        pl_sync_dma(x, st, true, os[i].bytes, os[i].raw, i);
    }
}

/* Every step planned and executed in turn (exact fidelity, functional and
 * manual calls). */
static void run_steps(struct pl_ctx *c, struct opstate *os, int64_t b, int64_t e)
{
    struct plan p;
    for (int64_t s = b; s < e; s++) {
        pl_plan_step(c, os, s, b, e, &p);
        p.s = s;
        if (c->call->manual) {
            live_step(c, os, &p, s);
            outputs(c, os, &p, c->x, c->st);
            advance_bufs(c, os, &p);
        } else {
            pl_run_body(c, s, &p.w);
            pl_exact_step(c, os, &p, s);
        }
        pl_advance_idx(c, os, s, e);
        c->st->steps++;
    }
}

void pl_sums_take(struct pl_stats *st, struct pl_sums *saved)
{
    *saved = (struct pl_sums){st->hbm_bytes, st->flops, st->vpu_flops, st->transcendentals,
                              st->mxu_s, st->vpu_s, st->overhead_s, st->useful_bytes};
    st->hbm_bytes = st->flops = st->vpu_flops = st->transcendentals = st->useful_bytes = 0;
    st->mxu_s = st->vpu_s = st->overhead_s = 0;
}

void pl_sums_add(struct pl_stats *st, const struct pl_sums *to)
{
    st->hbm_bytes = to->hbm_bytes + st->hbm_bytes, st->flops = to->flops + st->flops;
    st->vpu_flops = to->vpu_flops + st->vpu_flops;
    st->transcendentals = to->transcendentals + st->transcendentals;
    st->mxu_s = to->mxu_s + st->mxu_s, st->vpu_s = to->vpu_s + st->vpu_s;
    st->overhead_s = to->overhead_s + st->overhead_s;
    st->useful_bytes = to->useful_bytes + st->useful_bytes;
}

/* The pipeline over [b, e): scalar prefetch, the first blocks, the steps
 * (coalesced in fast fidelity), the last write-backs. */
static void walk(struct pl_ctx *c, struct opstate *os, int64_t b, int64_t e, bool coalesce)
{
    const struct pl_call *call = c->call;
    if (call->smem_prefetch_bytes) /* scalar prefetch: copied whole to SMEM first */
        pl_sync_dma(c->x, c->st, true, call->smem_prefetch_bytes, call->smem_prefetch_bytes, -1);
    trivial_inputs(c, os, c->x, c->st);
    prologue(c, os, c->x, c->st);
    if (coalesce)
        pl_run_grouped(c, os, b, e);
    else
        run_steps(c, os, b, e);
    epilogue(c, os, c->x, c->st);
}

static void run(const struct pl_call *call, const struct chip_params *chip, int64_t b, int64_t e,
                const struct pl_exec *x, struct pl_stats *st)
{
    struct pl_ctx c = {.call = call, .chip = chip, .x = x, .st = st, .begin = b};
    /* on the heap: this runs on an actor's small stack (engine/sim.c) */
    struct opstate *os = xcalloc((size_t)(call->noperands > 0 ? call->noperands : 1), sizeof *os);
    if (call->functional)
        ctx_alloc(&c);
    c.state = call->state_bytes ? xcalloc(1, call->state_bytes) : NULL;
    st->vmem_bytes = pl_vmem_bytes(call, chip);
    init_states(&c, os, b, e);
    bool fast = x->coalesce && !call->functional && !call->manual;
    if (!(fast && call->stream && pl_run_stream(&c, os, b, e))) {
        walk(&c, os, b, e, fast);
        for (int64_t r = 1; r < call->repeat; r++) { /* the repeats, each its own pipeline */
            if (c.state)
                memset(c.state, 0, call->state_bytes);
            init_states(&c, os, b, e);
            walk(&c, os, b, e, fast);
        }
    }
    ctx_free(&c);
    free(c.state);
    free(os);
}

void pl_run(const struct pl_call *call, const struct chip_params *chip, int64_t b, int64_t e,
            const struct pl_exec *x, struct pl_stats *st)
{
    if (b >= e)
        return;
    struct pl_sums saved;
    pl_sums_take(st, &saved);
    run(call, chip, b, e, x, st);
    pl_sums_add(st, &saved);
}

void pl_step_work(const struct pl_call *call, const struct chip_params *chip, int64_t step,
                  struct pl_work *w)
{
    TPU_ASSERT(!call->manual && !call->functional, "pallas_call '%s': no step work of a manual "
               "or functional call", call->name);
    struct pl_ctx c = {.call = call, .chip = chip};
    c.state = call->state_bytes ? xcalloc(1, call->state_bytes) : NULL;
    pl_run_body(&c, step, w);
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
    pl_matmuls(ctx, 1, m, k, n, dt);
}

void pl_matmuls(struct pl_ctx *ctx, int64_t count, int64_t m, int64_t k, int64_t n, enum dtype dt)
{
    pl_vpu_flush(ctx);
    close_matmul(ctx);
    struct pl_work *w = &ctx->work;
    w->io = w->feed;
    memset(&w->feed, 0, sizeof w->feed);
    w->mm_s = mxu_chain_time_s(ctx->chip, count, m, k, n, dt);
    w->flops += (double)count * mxu_flops(m, k, n);
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

void pl_scalar(struct pl_ctx *ctx, double bundles)
{
    double s = bundles / ctx->chip->clock_hz;
    ctx->work.vpu_s += s;
    ctx->st->scalar_s += s;
}

void pl_flush(struct pl_ctx *ctx)
{
    if (!ctx->live)
        return;
    close_work(ctx);
    if (ctx->work.mxu_s + ctx->work.vpu_s > 0)
        ctx->x->ops->compute(ctx->x->ex, &ctx->work, ctx->step, 1);
    pl_account(ctx->st, &ctx->work, 1, 0);
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
    return pl_start_dma(ctx->x, ctx->st, in, bytes, useful, -1);
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
