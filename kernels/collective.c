/* kernels/collective.c -- ring, line and direct collectives on remote DMAs.
 * A ring step: the step's semaphore handshake (ici.step_latency), push to the
 * neighbours, wait for the pushes, wait for what the neighbours pushed here,
 * reduce it if the collective reduces. Sizes and dependencies are what the
 * upstream kernels do; the data itself is not moved. */
#include "kernels/collective.h"

#include <stdio.h>
#include <string.h>

enum { RIGHT = 0, LEFT = 1 };

int coll_max_sems(void)
{
    return COLL_MAX_PARTS * COLL_MAX_PHASES * 4;
}

int coll_sem_id(int part, int phase, int dir, bool regular)
{
    return ((part * COLL_MAX_PHASES + phase) * 2 + dir) * 2 + (regular ? 1 : 0);
}

int coll_check(const struct op *op, const struct topo *topo, char *err, size_t n)
{
    const struct op_collective *c = &op->u.coll;
    for (int i = 0; i < c->naxes; i++) {
        if (c->axes[i] >= topo->ndims) {
            snprintf(err, n, "axis %d does not exist (the topology has %d axes)", c->axes[i],
                     topo->ndims);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (c->axes[j] == c->axes[i]) {
                snprintf(err, n, "axis %d is listed twice", c->axes[i]);
                return -1;
            }
    }
    return 0;
}

static int axis_len(const struct topo *t, int axis)
{
    return t->shape[axis];
}

/* Part p of 'nparts' visits the op's axes starting from axis p; sizes follow
 * the data. */
static void plan_part(const struct op *op, const struct topo *t, int p, int nparts,
                      struct coll_part *part)
{
    const struct op_collective *c = &op->u.coll;
    int n = c->naxes;
    uint64_t bytes = c->bytes / (uint64_t)nparts;
    bool bidi = c->algo != COLL_ALGO_UNI;
    memset(part, 0, sizeof *part);
    for (int q = 0; q < n; q++) {
        int axis = c->axes[(p + q) % n];
        struct coll_phase *ph = &part->phases[part->nphases++];
        ph->axis = axis;
        ph->bidi = bidi;
        switch (op->kind) {
        case OP_ALL_GATHER:
            ph->kind = COLL_AG;
            ph->bytes = bytes;
            bytes *= (uint64_t)axis_len(t, axis);
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
            ph->kind = c->algo == COLL_ALGO_RING_PSUM ? COLL_PSUM : COLL_RS;
            ph->bytes = bytes;
            if (ph->kind == COLL_RS)
                bytes /= (uint64_t)axis_len(t, axis);
            break;
        }
    }
    if (op->kind == OP_ALL_REDUCE && c->algo != COLL_ALGO_RING_PSUM) {
        for (int q = n - 1; q >= 0; q--) { /* all-gather back in reverse axis order */
            struct coll_phase *ph = &part->phases[part->nphases++];
            ph->kind = COLL_AG;
            ph->axis = part->phases[q].axis;
            ph->bidi = bidi;
            ph->bytes = bytes;
            bytes *= (uint64_t)axis_len(t, ph->axis);
        }
    }
}

/* An all-gather or reduce-scatter over axes of which one does not wrap runs
 * as one ring through all the group's chips, i.e. the axes one after the
 * other: without wraparound the group has no bidirectional ring per axis to
 * split the data over (the scaling book: a slice without wraparound takes
 * about twice the time of a torus), and a line's pass costs what a
 * unidirectional ring does. Over wrapped axes (and for all-reduce, which
 * XLA reduces over the axes concurrently: C34) each axis carries a part. */
static int plan_nparts(const struct op *op, const struct topo *t)
{
    const struct op_collective *c = &op->u.coll;
    if (op->kind == OP_ALL_TO_ALL)
        return 1;
    if (op->kind == OP_ALL_GATHER || op->kind == OP_REDUCE_SCATTER)
        for (int i = 0; i < c->naxes; i++)
            if (!t->wrap[c->axes[i]])
                return 1;
    return c->naxes;
}

void coll_plan(const struct op *op, const struct topo *t, struct coll_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->nparts = plan_nparts(op, t);
    for (int p = 0; p < plan->nparts; p++)
        plan_part(op, t, p, plan->nparts, &plan->parts[p]);
}

/* ---- one phase on one axis ---- */

struct ring {
    const struct coll_ctx *c;
    const struct coll_phase *ph;
    int part, phase;
    int X, pos;          /* axis length, my coordinate */
    int nb[2];           /* right and left neighbours (chip ranks), -1 at a line's end */
    bool wrap;
};

static int peer_at(const struct coll_ctx *c, int axis, int coord)
{
    int co[TOPO_MAX_DIMS];
    topo_coords(c->topo, c->me, co);
    co[axis] = coord;
    return topo_rank(c->topo, co);
}

static void ring_init(struct ring *r, const struct coll_ctx *c, const struct coll_phase *ph,
                      int phase)
{
    int co[TOPO_MAX_DIMS];
    topo_coords(c->topo, c->me, co);
    r->c = c, r->ph = ph, r->part = c->part, r->phase = phase;
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
            h[d] = c->ops->rdma(c->ex, r->nb[d], out[d], sem(r, d == RIGHT ? LEFT : RIGHT));
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
        c->ops->reduce(c->ex, got, c->op->u.coll.dt);
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
    } else if (ph->bidi) {
        out[RIGHT] = out[LEFT] = in[RIGHT] = in[LEFT] = chunk / 2;
        out[RIGHT] += chunk % 2, in[LEFT] += chunk % 2;
    } else {
        out[RIGHT] = in[LEFT] = chunk;
    }
}

/* Fidelity fast: the X-1 steps of a phase as one step moving the sum of
 * their bytes each way, plus the fixed costs of the steps it stands for
 * (handshake, DMA issue and hop latency of the X-2 others). In the
 * bandwidth-bound limit this is the ring's time: every step of a symmetric
 * ring moves the same bytes over the same links, and a line's busiest link
 * carries X-1 chunks either way. */
static void coalesced_pass(const struct ring *r, uint64_t chunk, bool reduce)
{
    const struct coll_ctx *c = r->c;
    uint64_t out[2] = {0, 0}, in[2] = {0, 0}, o[2], i[2];
    for (int s = 1; s < r->X; s++) {
        step_sizes(r, s, chunk, o, i);
        for (int d = 0; d < 2; d++)
            out[d] += o[d], in[d] += i[d];
    }
    double fixed = c->chip->ici_step_lat_s + c->chip->ici_hop_lat_s + c->chip->dma_issue_s;
    c->ops->delay(c->ex, fixed * (r->X - 2));
    step(r, out, in, reduce);
}

static void ring_pass(const struct ring *r, bool reduce)
{
    const struct coll_phase *ph = r->ph;
    uint64_t chunk = ph->kind == COLL_RS ? ph->bytes / (uint64_t)r->X : ph->bytes;
    if (r->c->coalesce && r->X > 2) {
        coalesced_pass(r, chunk, reduce);
        return;
    }
    for (int s = 1; s < r->X; s++) {
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
        void *h = c->ops->rdma(c->ex, right, r->ph->bytes, sem(r, LEFT));
        c->ops->reduce(c->ex, r->ph->bytes, c->op->u.coll.dt);
        c->ops->wait_send(c->ex, h);
        c->ops->wait_recv(c->ex, sem(r, LEFT), r->ph->bytes);
    }
}

/* all_to_all along one axis: a push of bytes/X to every other device. */
static void a2a_pass(const struct ring *r)
{
    const struct coll_ctx *c = r->c;
    uint64_t piece = r->ph->bytes / (uint64_t)r->X;
    void *h[64];
    c->ops->delay(c->ex, c->chip->ici_step_lat_s);
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

void coll_run_part(const struct coll_ctx *c, const struct coll_plan *plan)
{
    const struct coll_part *part = &plan->parts[c->part];
    for (int q = 0; q < part->nphases; q++) {
        const struct coll_phase *ph = &part->phases[q];
        struct ring r;
        ring_init(&r, c, ph, q);
        if (r.X < 2)
            continue;
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
