/* kernels/collective.c -- ring, line and direct collectives on remote DMAs.
 * A ring step: the step's semaphore handshake (ici.step_latency), push to the
 * neighbours, wait for the pushes, wait for what the neighbours pushed here,
 * reduce it if the collective reduces. Sizes and dependencies are what the
 * upstream kernels do; the data itself is not moved. */
#include "kernels/collective.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/sat.h"
#include "kernels/copy.h"
#include "models/ici.h"

enum { RIGHT = 0, LEFT = 1 };

int coll_max_sems(void)
{
    return COLL_MAX_PARTS * COLL_MAX_PHASES * 4;
}

int coll_sem_id(int part, int phase, int dir, bool regular)
{
    return ((part * COLL_MAX_PHASES + phase) * 2 + dir) * 2 + (regular ? 1 : 0);
}

const struct topo *coll_topo(const struct op *op, const struct topo *topo, int chip,
                             struct topo *group)
{
    const struct op_collective *c = &op->u.coll;
    (void)chip;
    if (c->nreplica) { /* one ring through the group's chips */
        int shape[1] = {c->replica_size};
        bool wrap[1] = {true};
        topo_init(group, 1, shape, wrap);
        return group;
    }
    if (!c->grouped)
        return topo;
    mesh_group(&c->mesh, topo, c->group_axes, c->ngroup, group);
    return group;
}

int coll_rank(const struct op *op, const struct topo *topo, int chip)
{
    const struct op_collective *c = &op->u.coll;
    if (c->nreplica)
        return c->replica_pos[chip] % c->replica_size;
    return c->grouped ? mesh_group_rank(&c->mesh, topo, c->group_axes, c->ngroup, chip) : chip;
}

int coll_chip(const struct op *op, const struct topo *topo, int chip, int rank)
{
    const struct op_collective *c = &op->u.coll;
    if (c->nreplica)
        return c->replica[c->replica_pos[chip] / c->replica_size * c->replica_size + rank];
    return c->grouped ? mesh_group_chip(&c->mesh, topo, c->group_axes, c->ngroup, chip, rank)
                      : rank;
}

/* The algorithm table (the rows are kernels/ops.h's COLL_ALGOS list). */
struct coll_algo_row {
    const char *name;
    unsigned kinds; /* COLL_FOR_* */
    bool bidi;      /* ring phases use both directions */
    bool psum;      /* all-reduce: one ring psum pass */
};
#define COLL_ALGO_ROW(e, nm, k, bi, ps) [e] = {nm, k, bi, ps},
static const struct coll_algo_row algo_rows[] = {COLL_ALGOS(COLL_ALGO_ROW)};
#undef COLL_ALGO_ROW
_Static_assert(sizeof algo_rows / sizeof algo_rows[0] == COLL_ALGO_COUNT,
               "one row per collective algorithm");
#define COLL_ALGO_NAME(e, nm, ...) nm,
const char *const coll_algo_names[] = {COLL_ALGOS(COLL_ALGO_NAME) NULL};
#undef COLL_ALGO_NAME

static unsigned kind_bit(enum op_kind k)
{
    return k == OP_ALL_GATHER       ? COLL_FOR_AG
           : k == OP_REDUCE_SCATTER ? COLL_FOR_RS
           : k == OP_ALL_REDUCE     ? COLL_FOR_AR
                                    : COLL_FOR_A2A;
}

/* A collective's data fits the HBM: an all-gather's output (its bytes times the
 * chips of its group, a product of user numbers: checked), the others' input. */
static int fits_hbm(const struct op *op, const struct chip_params *chip, uint64_t group_chips,
                    char *err, size_t n)
{
    uint64_t b = op->u.coll.bytes;
    bool gather = op->kind == OP_ALL_GATHER;
    uint64_t need = gather ? sat_mulu64(b, group_chips) : b;
    if (need <= chip->hbm_bytes)
        return 0;
    if (!gather)
        snprintf(err, n, "%llu bytes exceed the chip's HBM (%llu bytes)", (unsigned long long)b,
                 (unsigned long long)chip->hbm_bytes);
    else if (need == UINT64_MAX)
        snprintf(err, n, "the gathered bytes (%llu bytes x %llu chips) exceed 2^64 and the "
                         "chip's HBM (%llu bytes)", (unsigned long long)b,
                 (unsigned long long)group_chips, (unsigned long long)chip->hbm_bytes);
    else
        snprintf(err, n, "the gathered %llu bytes (bytes x %llu chips) exceed the chip's HBM "
                         "(%llu bytes)", (unsigned long long)need, (unsigned long long)group_chips,
                 (unsigned long long)chip->hbm_bytes);
    return -1;
}

int coll_check(const struct op *op, const struct chip_params *chip, const struct topo *slice,
               char *err, size_t n)
{
    const struct coll_algo_row *a = &algo_rows[op->u.coll.algo];
    if (!(a->kinds & kind_bit(op->kind))) {
        return diag_fail(err, n, "algorithm %s does not apply to %s (it is for %s)", a->name,
                op->kind == OP_ALL_GATHER       ? "all_gather"
                : op->kind == OP_REDUCE_SCATTER ? "reduce_scatter"
                : op->kind == OP_ALL_REDUCE     ? "all_reduce"
                : "all_to_all",
                a->kinds == COLL_FOR_AR ? "all_reduce"
                                        : "all_gather, reduce_scatter and all_reduce");
    }
    struct topo group;
    const struct topo *topo = coll_topo(op, slice, 0, &group);
    const struct op_collective *c = &op->u.coll;
    uint64_t group_chips = 1;
    for (int i = 0; i < c->naxes; i++) {
        if (c->axes[i] >= topo->ndims) {
            return diag_fail(err, n, "axis %d does not exist (the topology has %d axes)",
                             c->axes[i],
                             topo->ndims);
        }
        for (int j = 0; j < i; j++)
            if (c->axes[j] == c->axes[i]) {
                return diag_fail(err, n, "axis %d is listed twice", c->axes[i]);
            }
        group_chips *= (uint64_t)topo->shape[c->axes[i]];
    }
    if (c->chip_devices > 1 && (chip->megacore || c->chip_devices != chip->cores)) {
        return diag_fail(err, n, "chip_devices: %d needs a chip whose %d TensorCores are each a "
                         "JAX device (v7: 2), got %s with %d%s", c->chip_devices,
                         c->chip_devices, chip->name, chip->cores,
                         chip->megacore ? " as one device (megacore)" : "");
    }
    if (c->chip_devices > 1 && op->kind == OP_ALL_TO_ALL)
        return diag_fail(err, n, "chip_devices applies to all_gather, reduce_scatter and "
                                 "all_reduce, not all_to_all");
    return fits_hbm(op, chip, group_chips, err, n);
}

static int axis_len(const struct topo *t, int axis)
{
    return t->shape[axis];
}

/* Part p of 'nparts' visits the op's axes starting from axis p; sizes follow
 * the data. */
static void add_dcn(struct coll_part *part, enum coll_phase_kind kind, uint64_t bytes)
{
    part->phases[part->nphases++] =
        (struct coll_phase){.kind = kind, .axis = COLL_AXIS_DCN, .bytes = bytes};
}

/* The order in which part p of 'nparts' visits the op's axes: from axis p on.
 * One part alone (a gather or scatter over an axis without wraparound) takes
 * the axes in the order that costs least: a pass over X chips costs (X - 1)
 * chunks on a line or a one-way ring but (X - 1) / 2 on a bidirectional ring,
 * and the chunk grows by X per all-gather phase (shrinks per reduce-scatter
 * phase), so the all-gather runs its lines first and its rings last, the
 * reduce-scatter the other way round (its mirror image). On a ring of 8 and a
 * pair (16 chips, shard S): pair then ring S + 7 S = 8 S at the one-way rate,
 * against 3.5 S + 8 S = 11.5 S the other way. */
static void axis_order(const struct op *op, const struct topo *t, int p, int nparts, int *order)
{
    const struct op_collective *c = &op->u.coll;
    int n = c->naxes, k = 0;
    bool bidi = algo_rows[c->algo].bidi;
    if (nparts > 1 || (op->kind != OP_ALL_GATHER && op->kind != OP_REDUCE_SCATTER)) {
        for (int q = 0; q < n; q++)
            order[q] = c->axes[(p + q) % n];
        return;
    }
    bool lines_first = op->kind == OP_ALL_GATHER;
    for (int pass = 0; pass < 2; pass++) /* pass 0: the axes that go first */
        for (int q = 0; q < n; q++) {
            bool line = !(t->wrap[c->axes[q]] && bidi);
            if ((line == lines_first) == (pass == 0))
                order[k++] = c->axes[q];
        }
}

static void plan_part(const struct op *op, const struct topo *t, int nslices, int p, int nparts,
                      struct coll_part *part)
{
    const struct op_collective *c = &op->u.coll;
    int n = c->naxes, order[3];
    axis_order(op, t, p, nparts, order);
    uint64_t bytes = c->bytes / (uint64_t)nparts;
    bool bidi = algo_rows[c->algo].bidi;
    bool dcn = c->dcn && nslices > 1;
    memset(part, 0, sizeof *part);
    if (dcn && op->kind == OP_ALL_GATHER) { /* the shards across the slices first */
        add_dcn(part, COLL_AG, bytes);
        bytes = sat_mulu64(bytes, (uint64_t)nslices);
    }
    for (int q = 0; q < n; q++) {
        int axis = order[q];
        struct coll_phase *ph = &part->phases[part->nphases++];
        ph->axis = axis;
        ph->bidi = bidi;
        switch (op->kind) {
        case OP_ALL_GATHER:
            ph->kind = COLL_AG;
            ph->bytes = bytes;
            bytes = sat_mulu64(bytes, (uint64_t)axis_len(t, axis));
            break;
        case OP_REDUCE_SCATTER:
            ph->kind = COLL_RS;
            ph->bytes = bytes;
            bytes /= (uint64_t)axis_len(t, axis);
            break;
        case OP_ALL_TO_ALL:
            ph->kind = COLL_A2A;
            ph->bytes = bytes;
            break;
        default: /* all_reduce */
            ph->kind = algo_rows[c->algo].psum ? COLL_PSUM : COLL_RS;
            ph->bytes = bytes;
            if (ph->kind == COLL_RS)
                bytes /= (uint64_t)axis_len(t, axis);
            break;
        }
    }
    if (dcn && op->kind != OP_ALL_GATHER) { /* the shard across the slices */
        add_dcn(part, COLL_RS, bytes);
        if (op->kind == OP_ALL_REDUCE)
            add_dcn(part, COLL_AG, bytes / (uint64_t)nslices);
    }
    if (op->kind == OP_ALL_REDUCE && !algo_rows[c->algo].psum) {
        for (int q = n - 1; q >= 0; q--) { /* all-gather back in reverse axis order */
            struct coll_phase *ph = &part->phases[part->nphases++];
            ph->kind = COLL_AG;
            ph->axis = part->phases[q].axis;
            ph->bidi = bidi;
            ph->bytes = bytes;
            bytes = sat_mulu64(bytes, (uint64_t)axis_len(t, ph->axis));
        }
    }
}

/* An all-gather or reduce-scatter over axes of which one does not wrap runs
 * as one ring through all the group's chips, i.e. the axes one after the
 * other: without wraparound the group has no bidirectional ring per axis to
 * split the data over (the scaling book: a slice without wraparound takes
 * about twice the time of a torus), and a line's pass costs what a
 * unidirectional ring does. Over wrapped axes (and for all-reduce, which
 * XLA reduces over the axes concurrently: C34) each axis carries a part.
 * An axis of 2 chips does not force one part: its line moves a chunk each
 * way over the pair's link per step, as a ring of 2 would, so it loses
 * nothing by carrying a part beside the other axes. A 2x2 is then gathered
 * over both axes' links at once, as a bidirectional ring of 4 round the
 * square does (jax's _TRAY_2x2_RING_ORDER); the one published v7 2x2x1
 * all-gather reaches 178.8 GB/s into each chip, two links' worth
 * (AI-Hypercomputer/accelerator-microbenchmarks, docs/reference.md). */
static int plan_nparts(const struct op *op, const struct topo *t)
{
    const struct op_collective *c = &op->u.coll;
    if (op->kind == OP_ALL_TO_ALL)
        return 1;
    if (op->kind == OP_ALL_GATHER || op->kind == OP_REDUCE_SCATTER)
        for (int i = 0; i < c->naxes; i++)
            if (!t->wrap[c->axes[i]] && t->shape[c->axes[i]] > 2)
                return 1;
    return c->naxes > 0 ? c->naxes : 1; /* axes: [dcn] alone is one part */
}

void coll_plan_slices(const struct op *op, const struct topo *t, int nslices,
                      struct coll_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->nparts = plan_nparts(op, t);
    for (int p = 0; p < plan->nparts; p++)
        plan_part(op, t, nslices, p, plan->nparts, &plan->parts[p]);
}

void coll_plan(const struct op *op, const struct topo *t, struct coll_plan *plan)
{
    coll_plan_slices(op, t, 1, plan);
}

bool coll_plan_dcn(const struct coll_plan *plan)
{
    for (int p = 0; p < plan->nparts; p++)
        for (int q = 0; q < plan->parts[p].nphases; q++)
            if (plan->parts[p].phases[q].axis == COLL_AXIS_DCN)
                return true;
    return false;
}

/* ---- one phase on one axis ---- */

struct ring {
    const struct coll_ctx *c;
    const struct coll_phase *ph;
    int part, phase;
    int X, pos;          /* axis length, my coordinate */
    int nb[2];           /* right and left neighbours (chip ranks), -1 at a line's end */
    bool wrap;
    bool dcn;            /* across the slices: ranks are slices, transfers go over the DCN */
    bool coalesce;       /* fast fidelity's one-step pass (coalesced_pass) */
    bool lump;           /* ... whose reductions go to the executor as one call */
};

static int peer_at(const struct coll_ctx *c, int axis, int coord)
{
    int co[TOPO_MAX_DIMS];
    topo_coords(c->topo, c->me, co);
    co[axis] = coord;
    return topo_rank(c->topo, co);
}

/* A DCN phase: a ring over the slices (no direction splits: both would share
 * the one NIC). A pair is a ring of 2, each pushing to its right and taking
 * from its left (as a line of 2 the same bytes, but labelled alike on both:
 * with one slice simulated for all, its push lands on its own semaphores,
 * engine/spmd.h). */
static void ring_init_dcn(struct ring *r, const struct coll_ctx *c, const struct coll_phase *ph,
                          int phase)
{
    *r = (struct ring){.c = c, .ph = ph, .part = c->part, .phase = phase, .dcn = true};
    r->X = c->nslices, r->pos = c->slice;
    r->wrap = r->X >= 2;
    r->nb[RIGHT] = r->wrap || r->pos + 1 < r->X ? (r->pos + 1) % r->X : -1;
    r->nb[LEFT] = r->wrap || r->pos > 0 ? (r->pos + r->X - 1) % r->X : -1;
}

static void ring_init(struct ring *r, const struct coll_ctx *c, const struct coll_phase *ph,
                      int phase)
{
    if (ph->axis == COLL_AXIS_DCN) {
        ring_init_dcn(r, c, ph, phase);
        return;
    }
    int co[TOPO_MAX_DIMS];
    topo_coords(c->topo, c->me, co);
    r->c = c, r->ph = ph, r->part = c->part, r->phase = phase, r->dcn = false;
    r->X = c->topo->shape[ph->axis];
    r->pos = co[ph->axis];
    r->wrap = c->topo->wrap[ph->axis];
    r->nb[RIGHT] = r->wrap || r->pos + 1 < r->X ? peer_at(c, ph->axis, (r->pos + 1) % r->X) : -1;
    r->nb[LEFT] = r->wrap || r->pos > 0 ? peer_at(c, ph->axis, (r->pos + r->X - 1) % r->X) : -1;
}

static int sem(const struct ring *r, int dir)
{
    return coll_sem_id(r->part, r->phase, dir, false);
}

/* One step: push 'out[d]' bytes each way, then take 'in[d]' bytes from each way. */
static void step(const struct ring *r, const uint64_t out[2], const uint64_t in[2], bool reduce)
{
    const struct coll_ctx *c = r->c;
    void *h[2] = {NULL, NULL};
    c->ops->delay(c->ex, c->chip->ici_step_lat_s);
    for (int d = 0; d < 2; d++) /* my push to the right lands on its LEFT-coming sem */
        if (out[d] && r->nb[d] >= 0)
            h[d] = (r->dcn ? c->ops->rdma_dcn : c->ops->rdma)(c->ex, r->nb[d], out[d],
                                                             sem(r, d == RIGHT ? LEFT : RIGHT));
    for (int d = 0; d < 2; d++)
        if (h[d])
            c->ops->wait_send(c->ex, h[d]);
    uint64_t got = 0;
    for (int d = 0; d < 2; d++)
        if (in[d]) {
            c->ops->wait_recv(c->ex, sem(r, d), in[d]);
            got += in[d];
        }
    if (reduce && got)
        c->ops->reduce(c->ex, got, c->op->u.coll.dt, 1);
}

/* Line schedule (all-gather direction): at step s (1-based) device c pushes
 * right iff s <= c + 1 and it has a right neighbour; gets from the left iff
 * c >= 1 and s <= c; symmetrically to the left. A reduce-scatter runs the
 * same pattern backwards in time. */
static void line_sizes(const struct ring *r, int s, uint64_t b, bool reverse, uint64_t out[2],
                       uint64_t in[2])
{
    int c = r->pos, X = r->X;
    if (reverse)
        s = X - s;
    out[RIGHT] = (c + 1 < X && s <= c + 1) ? b : 0;
    in[LEFT] = (c >= 1 && s <= c) ? b : 0;
    out[LEFT] = (c >= 1 && s <= X - c) ? b : 0;
    in[RIGHT] = (c + 1 < X && s <= X - 1 - c) ? b : 0;
}

static void step_sizes(const struct ring *r, int s, uint64_t chunk, uint64_t out[2],
                       uint64_t in[2])
{
    const struct coll_phase *ph = r->ph;
    out[0] = out[1] = in[0] = in[1] = 0;
    if (!r->wrap) {
        line_sizes(r, s, chunk, ph->kind == COLL_RS, out, in);
    } else if (ph->bidi && !r->dcn) {
        out[RIGHT] = out[LEFT] = in[RIGHT] = in[LEFT] = chunk / 2;
        out[RIGHT] += chunk % 2, in[LEFT] += chunk % 2;
    } else {
        out[RIGHT] = in[LEFT] = chunk;
    }
}

/* Fidelity fast: steps s0..X-1 of a phase (all X-1 from s0 = 1) as one step
 * moving the sum of their bytes each way, plus the fixed costs of the steps
 * it stands for (handshake, DMA issue and hop latency of the others). In the
 * bandwidth-bound limit this is the ring's time: every step of a symmetric
 * ring moves the same bytes over the same links, and a line's busiest link
 * carries X-1 chunks either way. */
static void coalesced_pass(const struct ring *r, uint64_t chunk, bool reduce, int s0)
{
    const struct coll_ctx *c = r->c;
    uint64_t out[2] = {0, 0}, in[2] = {0, 0}, o[2], i[2];
    for (int s = s0; s < r->X; s++) {
        step_sizes(r, s, chunk, o, i);
        for (int d = 0; d < 2; d++)
            out[d] += o[d], in[d] += i[d];
    }
    double hop = r->dcn ? c->dcn_lat_s : c->chip->ici_hop_lat_s;
    double fixed = ici_ring_step_fixed_s(c->chip, hop);
    c->ops->delay(c->ex, fixed * (r->X - 1 - s0));
    step(r, out, in, false);
    /* a reduction per step, of what that step received, as exact runs them:
     * each step's chunk is reduced before it is passed on, so each has its
     * own pipeline fill and drain on the chain (one reduction of the sum paid
     * them once: a 1 MiB reduce-scatter over a ring of 16 v5e chips 19.6 %
     * short). A ring's steps receive the same bytes: when the parts are
     * alike (coll_parts_alike) their X - 1 reductions go to the executor as one
     * call, priced in one go (every chip simulated, one call per step made a
     * 16x16x16 all-reduce 5x slower to run). */
    uint64_t got = 0;
    int times = 0;
    for (int s = s0; reduce && s < r->X; s++) {
        step_sizes(r, s, chunk, o, i);
        if (!(i[0] + i[1]))
            continue;
        if (times && (i[0] + i[1] != got || !r->lump)) { /* the ones so far, then on */
            c->ops->reduce(c->ex, got, c->op->u.coll.dt, times);
            times = 0;
        }
        got = i[0] + i[1], times++;
    }
    if (times)
        c->ops->reduce(c->ex, got, c->op->u.coll.dt, times);
}

/* A reducing pass is coalesced only from the step on which nothing else runs
 * on the device: each step's reduction reads two blocks and writes one for
 * every byte received (3 HBM bytes a byte), between that step's transfers
 * and the next's. The one-step pass moves all the transfers first and
 * reduces at the end, so the HBM traffic of the reductions lands after the
 * kernel beside the pass instead of spread under it: the kernel ran as if
 * alone and the collective ended early (the Llama-3-8B v5e 16x16 step's
 * gradient reduce-scatter beside its backward: 1.3 % short; a 4-chip ring
 * beside an HBM-bound add, 7.6 %: tests/unit/test_coll.c). Alone, the two
 * take the same time (the bandwidth-bound argument above). A gathering pass
 * moves data only, which the links bound: it stays one step. */
static void ring_pass(const struct ring *r, bool reduce)
{
    const struct coll_phase *ph = r->ph;
    const struct coll_ctx *c = r->c;
    uint64_t chunk = ph->kind == COLL_RS ? ph->bytes / (uint64_t)r->X : ph->bytes;
    for (int s = 1; s < r->X; s++) {
        if (r->coalesce && !(reduce && c->ops->shared && c->ops->shared(c->ex))) {
            coalesced_pass(r, chunk, reduce, s);
            return;
        }
        uint64_t out[2], in[2];
        step_sizes(r, s, chunk, out, in);
        step(r, out, in, reduce);
    }
}

/* Upstream's ring psum: N steps passing the whole buffer right, with the
 * capacity handshake (signal the left neighbour, wait for the right one's). */
static void psum_pass(const struct ring *r)
{
    const struct coll_ctx *c = r->c;
    int cap = coll_sem_id(r->part, r->phase, 0, true);
    int right = r->nb[RIGHT] >= 0 ? r->nb[RIGHT] : peer_at(c, r->ph->axis, 0);
    int left = r->nb[LEFT] >= 0 ? r->nb[LEFT] : peer_at(c, r->ph->axis, r->X - 1);
    for (int s = 0; s < r->X; s++) {
        c->ops->delay(c->ex, c->chip->ici_step_lat_s);
        c->ops->signal(c->ex, left, cap, 1);
        c->ops->wait(c->ex, cap, 1);
        if (r->ph->bytes == 0) /* no push of nothing (see step) */
            continue;
        void *h = c->ops->rdma(c->ex, right, r->ph->bytes, sem(r, LEFT));
        c->ops->reduce(c->ex, r->ph->bytes, c->op->u.coll.dt, 1);
        c->ops->wait_send(c->ex, h);
        c->ops->wait_recv(c->ex, sem(r, LEFT), r->ph->bytes);
    }
}

/* all_to_all along one axis: a push of bytes/X to every other device (none
 * when that rounds to nothing: a push of 0 bytes would post a semaphore
 * message that no wait takes, as step skips them). */
static void a2a_pass(const struct ring *r)
{
    const struct coll_ctx *c = r->c;
    uint64_t piece = r->ph->bytes / (uint64_t)r->X;
    void *h[64];
    c->ops->delay(c->ex, c->chip->ici_step_lat_s);
    if (piece == 0)
        return;
    for (int k0 = 1; k0 < r->X; k0 += 64) { /* in batches of 64 pushes */
        int nh = 0;
        for (int k = k0; k < r->X && nh < 64; k++) {
            int dst = peer_at(c, r->ph->axis, (r->pos + k) % r->X);
            h[nh++] = c->ops->rdma(c->ex, dst, piece, sem(r, LEFT));
        }
        for (int k = 0; k < nh; k++)
            c->ops->wait_send(c->ex, h[k]);
    }
    c->ops->wait_recv(c->ex, sem(r, LEFT), piece * (uint64_t)(r->X - 1));
}

/* The ring length of 'ph' on torus 't' (the slices' for a DCN phase). */
static int phase_len(const struct topo *t, int nslices, const struct coll_phase *ph)
{
    return ph->axis == COLL_AXIS_DCN ? nslices : t->shape[ph->axis];
}

static bool phase_wraps(const struct topo *t, const struct coll_phase *ph)
{
    return ph->axis == COLL_AXIS_DCN || t->wrap[ph->axis];
}

/* Parts alike run their reductions side by side in lockstep, each part's
 * with the same share of the HBM at every instant, so a pass's reductions
 * priced in one go (a stream of all their blocks, with all their fills and
 * drains: kernels/pallas_fast.c, run_stream) end when the per-step ones
 * would, to the rounding of the sums. Parts of different lengths do not
 * reduce in lockstep (one reduces while another transfers or reduces
 * unevenly): lumped, their times moved by up to 4 % (a v5e 4x16
 * reduce-scatter of 16 MiB), so they reduce step by step. */
bool coll_parts_alike(const struct coll_plan *plan, const struct topo *t, int nslices)
{
    const struct coll_part *p0 = &plan->parts[0];
    for (int p = 1; p < plan->nparts; p++) {
        const struct coll_part *p1 = &plan->parts[p];
        if (p1->nphases != p0->nphases)
            return false;
        for (int q = 0; q < p0->nphases; q++) {
            const struct coll_phase *a = &p0->phases[q], *b = &p1->phases[q];
            if (a->kind != b->kind || a->bytes != b->bytes || a->bidi != b->bidi ||
                (a->axis == COLL_AXIS_DCN) != (b->axis == COLL_AXIS_DCN) ||
                phase_len(t, nslices, a) != phase_len(t, nslices, b) ||
                phase_wraps(t, a) != phase_wraps(t, b))
                return false;
        }
    }
    return true;
}

void coll_run_part(const struct coll_ctx *c, const struct coll_plan *plan)
{
    const struct coll_part *part = &plan->parts[c->part];
    bool lump = c->coalesce && coll_parts_alike(plan, c->topo, c->nslices);
    for (int q = 0; q < part->nphases; q++) {
        const struct coll_phase *ph = &part->phases[q];
        struct ring r;
        ring_init(&r, c, ph, q);
        if (r.X < 2)
            continue;
        /* A line's pass is coalesced only when no other part runs beside it:
         * its steps form a chain (a chip sends on once it has received), and the
         * one-step pass would hold the links from the start that the chain
         * leaves to the other parts' phases early on (a 2x4 line all-reduce:
         * 4.6 % faster than the chain). Alone, its busiest link sets the time
         * either way. A line's reduce-scatter is not coalesced at all: its
         * chips reduce beside the transfers still coming in, which neither one
         * reduction of the sum (a 1 MiB one on a 4-chip v6e line 2.5 % short)
         * nor one per step after the transfers (2.5 % long) stands for. A ring
         * through explicit replica_groups is not coalesced either: its hops are
         * routes of several links, whose latencies the pass's fixed costs (one
         * hop a step) would miss. Nor is an ICI pass while a link of the slice is
         * down or degraded (faults:): the steps then no longer load the links
         * alike (a detour shares another row's links at the steps that row's
         * pass uses them, a slow link holds up the steps that cross it and the
         * chain behind them), and the sum of their times is not the time of
         * the one step carrying their sum (a v5e 4x4 line all-gather with a
         * link down: 1.49 against 1.69 ms; a 16x16 ring, 4.1 against 9.5 ms:
         * tests/unit/test_coll.c). */
        r.coalesce = c->coalesce && r.X > 2 && !c->op->u.coll.nreplica &&
                     (r.dcn || !c->ici_faults) &&
                     (r.wrap || (plan->nparts == 1 && ph->kind != COLL_RS));
        r.lump = lump;
        if (ph->kind == COLL_AG && q == 0 && c->op->kind == OP_ALL_GATHER)
            c->ops->local_copy(c->ex, ph->bytes); /* own shard into the output */
        switch (ph->kind) {
        case COLL_AG:
            ring_pass(&r, false);
            break;
        case COLL_RS:
            ring_pass(&r, true);
            break;
        case COLL_PSUM:
            psum_pass(&r);
            break;
        case COLL_A2A:
            a2a_pass(&r);
            break;
        }
    }
}

/* ---- collective_matmul and remote_copy: rules and targets ---- */

/* x gathered [X m, k], y [k, n] and the output [X m, n] fit the HBM (products of user
 * numbers: saturating). */
static int matmul_fits_hbm(const struct op_collective_matmul *p, const struct chip_params *chip,
                           uint64_t X, char *err, size_t n)
{
    uint64_t m = (uint64_t)p->m, k = (uint64_t)p->k, nn = (uint64_t)p->n;
    uint64_t rows = sat_mulu64(X, m);
    uint64_t elems = sat_addu64(sat_addu64(sat_mulu64(rows, k), sat_mulu64(k, nn)),
                                sat_mulu64(rows, nn));
    uint64_t bytes = sat_mulu64(elems, (uint64_t)dtype_bytes(p->dt));
    if (bytes <= chip->hbm_bytes)
        return 0;
    char b[32] = "2^64 or more";
    if (bytes < UINT64_MAX)
        snprintf(b, sizeof b, "%llu", (unsigned long long)bytes);
    return diag_fail(err, n,
                     "x gathered ([%llu x %llu, %llu]), y ([%llu, %llu]) and the output ([%llu x "
                     "%llu, %llu]) take %s bytes, more than the chip's HBM (%llu bytes)",
                     (unsigned long long)X, (unsigned long long)m, (unsigned long long)k,
                     (unsigned long long)k, (unsigned long long)nn, (unsigned long long)X,
                     (unsigned long long)m, (unsigned long long)nn, b,
                     (unsigned long long)chip->hbm_bytes);
}

int coll_matmul_ring(const struct op *op, const struct topo *topo)
{
    const struct op_collective_matmul *p = &op->u.coll_matmul;
    struct topo g;
    if (!p->g.grouped)
        return topo->shape[p->axis];
    return mesh_group(&p->g.mesh, topo, p->g.group_axes, p->g.ngroup, &g) == 0 ? g.nchips : 1;
}

int coll_matmul_neighbour(const struct op *op, const struct topo *topo, int chip, int step)
{
    const struct op_collective_matmul *p = &op->u.coll_matmul;
    int X = coll_matmul_ring(op, topo);
    if (p->g.grouped) {
        int r = mesh_group_rank(&p->g.mesh, topo, p->g.group_axes, p->g.ngroup, chip);
        return mesh_group_chip(&p->g.mesh, topo, p->g.group_axes, p->g.ngroup, chip,
                               ((r + step) % X + X) % X);
    }
    int co[TOPO_MAX_DIMS];
    topo_coords(topo, chip, co);
    co[p->axis] = ((co[p->axis] + step) % X + X) % X;
    return topo_rank(topo, co);
}

int coll_check_matmul(const struct op *op, const struct chip_params *chip,
                      const struct topo *topo, char *err, size_t n)
{
    const struct op_collective_matmul *p = &op->u.coll_matmul;
    if (!p->g.grouped && p->axis >= topo->ndims) {
        return diag_fail(err, n, "axis %d does not exist (the topology has %d axes)", p->axis,
                         topo->ndims);
    }
    if (p->g.grouped && p->g.dcn)
        return diag_fail(err, n, "groups: a collective matmul runs within a slice (its mesh "
                                 "axes span the DCN)");
    if (p->m % 8 || p->k % 128 || p->n % 128) {
        return diag_fail(err, n,
                         "m must be a multiple of 8 and k, n multiples of 128 (got %lld, %lld, "
                         "%lld)", (long long)p->m, (long long)p->k, (long long)p->n);
    }
    return matmul_fits_hbm(p, chip, (uint64_t)coll_matmul_ring(op, topo), err, n);
}

int coll_remote_target(const struct topo *t, const struct op_remote_copy *r, int me)
{
    if (r->id_kind == 2)
        return r->logical >= 0 && r->logical < t->nchips ? (int)r->logical : -1;
    if (r->ncoords != t->ndims)
        return -1;
    int c[TOPO_MAX_DIMS];
    topo_coords(t, me, c);
    for (int i = 0; i < t->ndims; i++) {
        int v = r->id_kind == 0 ? c[i] + r->coords[i] : r->coords[i];
        if (r->id_kind == 0)
            v = ((v % t->shape[i]) + t->shape[i]) % t->shape[i];
        if (v < 0 || v >= t->shape[i])
            return -1;
        c[i] = v;
    }
    return topo_rank(t, c);
}

static void outside_mesh(const struct topo *t, const struct op_remote_copy *r, char *err,
                         size_t n)
{
    if (r->id_kind == 2) {
        snprintf(err, n, "device id %lld is outside the mesh of %d chips (LOGICAL ids are "
                         "0..%d)", (long long)r->logical, t->nchips, t->nchips - 1);
        return;
    }
    char id[64] = "", shape[64] = "";
    for (int i = 0; i < t->ndims; i++) {
        snprintf(id + strlen(id), sizeof id - strlen(id), "%s%d", i ? ", " : "", r->coords[i]);
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%d", i ? ", " : "",
                 t->shape[i]);
    }
    snprintf(err, n, "device id (%s) is outside the mesh [%s]", id, shape);
}

/* On v5e every hop offset of a remote DMA must be a power of 2. */
static int check_pow2_route(const struct chip_params *chip, const struct topo *t, int me,
                            int dst, char *err, size_t n)
{
    int a[TOPO_MAX_DIMS], b[TOPO_MAX_DIMS];
    topo_coords(t, me, a);
    topo_coords(t, dst, b);
    for (int i = 0; chip->routing == ICI_ROUTE_POW2 && i < t->ndims; i++) {
        int off = abs(topo_axis_delta(t, i, a[i], b[i]));
        if (off && !copy_is_pow2(off)) {
            return diag_fail(err, n, "%s can only route to power-of-2 offsets; chip %d -> chip %d "
                             "is %d hops on axis %d", chip->name, me, dst, off, i);
        }
    }
    return 0;
}

int coll_check_remote_copy(const struct op *op, const struct chip_params *chip,
                           const struct topo *topo, char *err, size_t n)
{
    const struct op_remote_copy *r = &op->u.remote_copy;
    if (r->id_kind != 2 && r->ncoords != topo->ndims) {
        return diag_fail(err, n, "device id has %d coordinates, the mesh has %d axes", r->ncoords,
                         topo->ndims);
    }
    for (int me = 0; me < topo->nchips; me++) {
        int dst = coll_remote_target(topo, r, me);
        if (dst < 0) {
            outside_mesh(topo, r, err, n);
            return -1;
        }
        if (check_pow2_route(chip, topo, me, dst, err, n) != 0)
            return -1;
    }
    return 0;
}

/* The largest multiple of 'quantum' up to 'max' that divides 'dim' (every multiple, not
 * only max's halvings: k = 1280 takes 640, not 256), or 'dim' when none does. */
static int64_t pick_block(int64_t dim, int64_t max, int64_t quantum)
{
    for (int64_t b = max - max % quantum; b >= quantum; b -= quantum)
        if (dim % b == 0)
            return b;
    return dim;
}

void coll_matmul_op(const struct op *op, int64_t m, struct op *mm)
{
    const struct op_collective_matmul *p = &op->u.coll_matmul;
    *mm = (struct op){.kind = OP_MATMUL, .name = op->name};
    mm->u.matmul = (struct op_matmul){.m = m, .k = p->k, .n = p->n, .dt = p->dt};
    mm->u.matmul.bm = pick_block(m, 512, 8);
    mm->u.matmul.bk = pick_block(p->k, 1024, 128);
    mm->u.matmul.bn = pick_block(p->n, 1024, 128);
}

/* ---- the accumulate step of reductions ---- */

static void row_index(const int64_t *g, const void *user, int64_t *b)
{
    (void)user;
    b[0] = g[0], b[1] = 0;
}

static void add_body(struct pl_ctx *ctx, const int64_t *g, void *user)
{
    const struct coll_reduce *k = user;
    (void)g;
    pl_vpu(ctx, k->block_rows, k->cols, 1, 2, 1, 0, 0);
}

void coll_reduce_call(struct coll_reduce *k, uint64_t bytes, enum dtype dt, struct pl_call *c)
{
    *k = (struct coll_reduce){.cols = 1024};
    k->rows = (int64_t)(bytes / (uint64_t)(k->cols * dtype_bytes(dt)));
    k->rows = k->rows < 1 ? 1 : k->rows;
    k->block_rows = k->rows < 512 ? k->rows : 512;
    *c = (struct pl_call){.name = "reduce", .ngrid = 1, .noperands = 3, .body = add_body, .user = k,
                          .stream = true};
    c->grid[0] = (k->rows + k->block_rows - 1) / k->block_rows;
    static const char *const names[3] = {"acc", "recv", "out"};
    for (int i = 0; i < 3; i++)
        c->operands[i] = (struct pl_operand){.name = names[i], .dir = i < 2 ? PL_IN : PL_OUT,
                                        .space = PL_VMEM, .dt = dt, .rank = 2,
                                        .shape = {k->rows, k->cols},
                                        .block = {k->block_rows, k->cols},
                                        .index = c->grid[0] > 1 ? row_index : NULL};
}

/* ---- reach: how far the transfers go, for SPMD folding ---- */

/* Shortest hops between coordinates 'off' apart on axis 'a'. */
static int axis_hops(const struct topo *t, int a, int off)
{
    int L = t->shape[a];
    off = ((off % L) + L) % L;
    return t->wrap[a] && L - off < off ? L - off : off;
}

int coll_reach(const struct op *op, const struct topo *topo, int *hops, int *period)
{
    const struct op_collective *c = &op->u.coll;
    if (c->nreplica) /* explicit groups: no translation maps them onto each other in general */
        return -1;
    if (c->grouped) {
        mesh_reach(&c->mesh, topo, c->group_axes, c->ngroup, hops, period);
        if (op->kind == OP_ALL_TO_ALL) /* direct pushes to every member: never folded */
            for (int a = 0; a < topo->ndims; a++)
                hops[a] = hops[a] ? topo->shape[a] : 0;
        return 0;
    }
    for (int i = 0; i < c->naxes; i++) {
        int a = c->axes[i];
        int h = op->kind == OP_ALL_TO_ALL ? topo->shape[a] : 1;
        hops[a] = h > hops[a] ? h : hops[a];
    }
    return 0;
}

int coll_reach_matmul(const struct op *op, const struct topo *topo, int *hops, int *period)
{
    const struct op_collective_matmul *p = &op->u.coll_matmul;
    if (p->g.grouped) {
        mesh_reach(&p->g.mesh, topo, p->g.group_axes, p->g.ngroup, hops, period);
        return 0;
    }
    int a = p->axis;
    hops[a] = hops[a] > 1 ? hops[a] : 1;
    return 0;
}

int coll_reach_remote_copy(const struct op *op, const struct topo *topo, int *hops,
                           int *period)
{
    (void)period;
    const struct op_remote_copy *r = &op->u.remote_copy;
    if (r->id_kind != 0)
        return -1;
    for (int a = 0; a < r->ncoords && a < topo->ndims; a++) {
        int h = axis_hops(topo, a, r->coords[a]);
        hops[a] = h > hops[a] ? h : hops[a];
    }
    return 0;
}
