/* sim/sim_coll.c -- Pallas' distributed primitives on SimGrid, and the
 * collectives of kernels/collective.c run with them.
 * A semaphore of a device is a mailbox with that device's actor as its
 * permanent receiver: a remote DMA is a transfer into it (it starts at once,
 * push-only, and lands on the receiver's HBM), a REGULAR signal a 0-byte
 * message (it costs the route's latency). Waiting takes messages until the
 * count is reached. DMAs issued together share one issue latency. Core 0 of
 * each chip runs the collective; one actor per part (one per axis) runs the
 * parts concurrently. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/collective.h"
#include "sim/sim_int.h"
#include "base/xalloc.h"

struct sim_coll {
    struct coll_plan plan;
    double *count;        /* per semaphore id */
    int nsems;
};

struct sem_msg {
    uint64_t amount;      /* bytes (DMA) or increment (REGULAR) */
};

/* A remote DMA: its transfer and what the trace needs once it is done. */
struct rdma {
    sg_comm_t comm;
    int src, dst;
    uint64_t bytes;
    double t_post;
};

struct pending {
    int dst, sem;
    uint64_t bytes;
    struct rdma *slot;
};

struct coll_actor {
    struct sim_ctx *x;
    struct pending pend[64];
    int npend;
    double ready;         /* when the pending DMAs may start */
};

static sg_mailbox_t sem_mb(int chip, int opi, int sem)
{
    char name[64];
    snprintf(name, sizeof name, "s.%d.%d.%d", chip, opi, sem);
    return sg_mailbox_by_name(name);
}

/* Posts the DMAs issued since the last blocking call, after their latency. */
static void flush(struct coll_actor *a)
{
    if (!a->npend)
        return;
    if (a->ready > simgrid_get_clock())
        sg_actor_sleep_until(a->ready);
    for (int i = 0; i < a->npend; i++) {
        struct pending *p = &a->pend[i];
        struct sem_msg *m = xmalloc(sizeof *m);
        m->amount = p->bytes;
        p->slot->t_post = simgrid_get_clock();
        p->slot->comm = sg_mailbox_put_async(sem_mb(p->dst, a->x->opi, p->sem), m, (long)p->bytes);
    }
    a->npend = 0;
}

static void *c_rdma(void *ex, int dst, uint64_t bytes, int sem)
{
    struct coll_actor *a = ex;
    struct sim_ctx *x = a->x;
    const struct chip_params *ch = &x->core->run->sc->chip;
    if (a->npend == 64)
        flush(a);
    if (a->npend == 0)
        a->ready = simgrid_get_clock() + ch->dma_issue_s;
    struct rdma *slot = xcalloc(1, sizeof *slot);
    *slot = (struct rdma){.src = x->core->chip, .dst = dst, .bytes = bytes};
    a->pend[a->npend++] = (struct pending){dst, sem, bytes, slot};
    x->st.dmas++;
    x->st.hbm_bytes += 2.0 * (double)bytes;
    if (dst != x->core->chip)
        x->core->run->res[x->opi].ici_bytes += (double)bytes;
    return slot;
}

static void c_wait_send(void *ex, void *h)
{
    struct coll_actor *a = ex;
    flush(a);
    struct rdma *d = h;
    struct sim_run *r = a->x->core->run;
    sim_wait_note(a->x->core, "a remote DMA send");
    sg_comm_wait(d->comm);
    sim_wait_note(a->x->core, NULL);
    double t1 = simgrid_get_clock();
    sim_trace_route(r, d->src, d->dst, d->t_post, t1, d->bytes, a->x->op->name);
    sim_note_hbm(r, d->src, d->t_post, t1, (double)d->bytes);
    sim_note_hbm(r, d->dst, d->t_post, t1, (double)d->bytes);
    free(d);
}

static void take(struct coll_actor *a, int sem, double amount, const char *what)
{
    struct sim_ctx *x = a->x;
    double *c = &x->coll->count[sem];
    flush(a);
    char note[200];
    while (*c < amount) {
        snprintf(note, sizeof note, "%s %d of op '%s' to reach %.0f (it holds %.0f)", what, sem,
                 x->op->name, amount, *c);
        sim_wait_note(x->core, note);
        struct sem_msg *m = sg_mailbox_get(sem_mb(x->core->chip, x->opi, sem));
        *c += (double)m->amount;
        free(m);
    }
    sim_wait_note(x->core, NULL);
    *c -= amount;
}

static void c_wait_recv(void *ex, int sem, uint64_t bytes)
{
    take(ex, sem, (double)bytes, "DMA semaphore");
}

static void c_signal(void *ex, int dst, int sem, int inc)
{
    struct coll_actor *a = ex;
    struct sem_msg *m = xmalloc(sizeof *m);
    m->amount = (uint64_t)inc;
    sg_comm_detach(sg_mailbox_put_init(sem_mb(dst, a->x->opi, sem), m, 0), free);
}

static void c_wait(void *ex, int sem, int value)
{
    take(ex, sem, value, "REGULAR semaphore");
}

/* The accumulate step: acc += recv as a pipelined HBM->VMEM->HBM kernel
 * over (512, 1024) blocks. */
struct add_kern {
    int64_t rows, cols, block_rows;
};

static void row_index(const int64_t *g, const void *user, int64_t *b)
{
    (void)user;
    b[0] = g[0], b[1] = 0;
}

static void add_body(struct pl_ctx *ctx, const int64_t *g, void *user)
{
    const struct add_kern *k = user;
    (void)g;
    pl_vpu(ctx, k->block_rows, k->cols, 1, 2, 1, 0, 0);
}

static void c_reduce(void *ex, uint64_t bytes, enum dtype dt)
{
    struct coll_actor *a = ex;
    flush(a);
    struct add_kern k = {.cols = 1024};
    k.rows = (int64_t)(bytes / (uint64_t)(k.cols * dtype_bytes(dt)));
    k.rows = k.rows < 1 ? 1 : k.rows;
    k.block_rows = k.rows < 512 ? k.rows : 512;
    struct pl_call c = {.name = "reduce", .ngrid = 1, .nops = 3, .body = add_body, .user = &k};
    c.grid[0] = (k.rows + k.block_rows - 1) / k.block_rows;
    static const char *const names[3] = {"acc", "recv", "out"};
    for (int i = 0; i < 3; i++)
        c.ops[i] = (struct pl_operand){.name = names[i], .dir = i < 2 ? PL_IN : PL_OUT,
                                       .space = PL_VMEM, .dt = dt, .rank = 2,
                                       .shape = {k.rows, k.cols}, .block = {k.block_rows, k.cols},
                                       .index = c.grid[0] > 1 ? row_index : NULL};
    const struct cfg_scenario *sc = a->x->core->run->sc;
    struct pl_exec pe = {&sim_pl_ops, a->x, sc->fidelity == CFG_FIDELITY_FAST};
    pl_run(&c, &sc->chip, 0, pl_num_steps(&c), &pe, &a->x->st);
}

static void c_local_copy(void *ex, uint64_t bytes)
{
    struct coll_actor *a = ex;
    flush(a);
    sim_dma_wait(a->x, sim_dma_local(a->x, true, 2 * bytes, -1));
}

static void c_delay(void *ex, double s)
{
    struct coll_actor *a = ex;
    flush(a);
    if (s > 0)
        sg_actor_sleep_for(s);
}

static const struct coll_exec_ops coll_ops = {c_rdma, c_wait_send, c_wait_recv, c_signal,
                                              c_wait,  c_reduce,    c_local_copy, c_delay};

/* One actor per part: its own DMA mailbox and statistics. */
struct part_actor {
    struct sim_ctx x;
    int part;
};

static void run_part(struct sim_ctx *x, int part)
{
    struct coll_actor a = {.x = x};
    const struct cfg_scenario *sc = x->core->run->sc;
    struct coll_ctx c = {&sc->topo, &sc->chip, x->op, x->core->chip, part, &coll_ops, &a,
                         sc->fidelity == CFG_FIDELITY_FAST};
    coll_run_part(&c, &x->coll->plan);
    flush(&a);
}

static void part_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct part_actor *p = sg_actor_self_get_data();
    run_part(&p->x, p->part);
}

static sg_mailbox_t part_mailbox(const struct sim_ctx *x, int part)
{
    char name[64];
    snprintf(name, sizeof name, "dma.%d.%d.p%d", x->core->gid, x->opi, part);
    return sg_mailbox_by_name(name);
}

static void merge_stats(struct pl_stats *into, const struct pl_stats *from)
{
    into->dmas += from->dmas;
    into->hbm_bytes += from->hbm_bytes;
    into->vpu_s += from->vpu_s;
    into->vpu_flops += from->vpu_flops;
    into->overhead_s += from->overhead_s;
    into->steps += from->steps;
    into->compute_steps += from->compute_steps;
    into->coalesced_runs += from->coalesced_runs;
}

/* Semaphores left non-zero at kernel exit crash a real program: report them. */
static void check_sems(struct sim_ctx *x)
{
    struct sim_run *r = x->core->run;
    for (int s = 0; s < x->coll->nsems; s++) {
        if (x->coll->count[s] != 0 && !r->error)
            r->error = xasprintf("chip %d: semaphore %d of op '%s' is %g at kernel exit "
                                 "(must be 0)",
                                 x->core->chip, s, x->op->name, x->coll->count[s]);
    }
}

void sim_op_collective(struct sim_ctx *x)
{
    struct sim_core *c = x->core;
    struct sim_run *r = c->run;
    const struct cfg_scenario *sc = r->sc;
    if (c->core != 0)
        return;
    struct sim_coll dev = {.nsems = coll_max_sems()};
    coll_plan(x->op, &sc->topo, &dev.plan);
    dev.count = xcalloc((size_t)dev.nsems, sizeof *dev.count);
    x->coll = &dev;
    for (int s = 0; s < dev.nsems; s++) /* push-only DMAs need a receiver from the start */
        sg_mailbox_set_receiver(sg_mailbox_get_name(sem_mb(c->chip, x->opi, s)));
    sim_wait_note(c, "the device barrier at kernel start");
    sg_barrier_wait(r->op_barrier[x->opi]);
    sim_wait_note(c, NULL);
    sg_actor_sleep_for(sc->chip.ici_collective_lat_s);
    r->res[x->opi].latency_s += sc->chip.ici_collective_lat_s;
    int n = dev.plan.nparts;
    struct part_actor *pa = xcalloc((size_t)n, sizeof *pa);
    sg_actor_t *act = xcalloc((size_t)n, sizeof *act);
    for (int p = 1; p < n; p++) {
        pa[p].x = (struct sim_ctx){.core = c, .op = x->op, .opi = x->opi, .coll = &dev,
                                   .flow_t = -1};
        pa[p].x.done_mb = part_mailbox(x, p);
        pa[p].part = p;
        char name[48];
        snprintf(name, sizeof name, "tc%d.op%d.part%d", c->gid, x->opi, p);
        act[p] = sg_actor_init(name, c->host);
        sg_actor_set_data(act[p], &pa[p]);
        sg_actor_ref(act[p]);
        sg_actor_start(act[p], part_main, 0, NULL);
    }
    run_part(x, 0);
    for (int p = 1; p < n; p++) {
        sg_actor_join(act[p], -1);
        sg_actor_unref(act[p]);
        merge_stats(&x->st, &pa[p].x.st);
    }
    check_sems(x);
    free(pa);
    free(act);
    free(dev.count);
}

/* ---- remote_copy: one make_async_remote_copy per device ---- */

int sim_remote_target(const struct cfg_scenario *sc, const struct op_remote_copy *r, int me)
{
    const struct topo *t = &sc->topo;
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

void sim_op_remote_copy(struct sim_ctx *x)
{
    struct sim_core *c = x->core;
    struct sim_run *r = c->run;
    const struct cfg_scenario *sc = r->sc;
    const struct op_remote_copy *rc = &x->op->u.rc;
    if (c->core != 0)
        return;
    struct sim_coll dev = {.nsems = 1};
    dev.count = xcalloc(1, sizeof *dev.count);
    x->coll = &dev;
    sg_mailbox_set_receiver(sg_mailbox_get_name(sem_mb(c->chip, x->opi, 0)));
    sim_wait_note(c, "the device barrier at kernel start");
    sg_barrier_wait(r->op_barrier[x->opi]);
    sim_wait_note(c, NULL);
    sg_actor_sleep_for(sc->chip.ici_collective_lat_s);
    struct coll_actor a = {.x = x};
    int dst = sim_remote_target(sc, rc, c->chip);
    c_wait_send(&a, c_rdma(&a, dst, rc->bytes, 0));
    if (rc->recv_bytes)
        c_wait_recv(&a, 0, rc->recv_bytes);
    check_sems(x);
    free(dev.count);
}

/* ---- collective matmul: all-gather of x along an axis feeding x @ y ----
 * Each device holds x [m, k] (its shard of the gathered rows) and y [k, n].
 * Overlapped (the scaling book's collective matmul): X steps; at each step the
 * chip computes the chunk it holds while core 0 pushes that chunk to the next
 * device of a bidirectional ring (half each way). Not overlapped: a bidirectional
 * all-gather first, then one matmul of [X m, k] x [k, n]. The matmuls are the
 * Pallas blocked matmul on every core of the chip (megacore split). */

static int64_t pick_block(int64_t dim, int64_t max, int64_t quantum)
{
    for (int64_t b = max; b >= quantum; b /= 2)
        if (dim % b == 0)
            return b;
    return dim;
}

static void cmm_matmul(struct sim_ctx *x, int64_t m, const struct op_collective_matmul *p)
{
    struct op mm = {.kind = OP_MATMUL, .name = x->op->name};
    mm.u.matmul = (struct op_matmul){.m = m, .k = p->k, .n = p->n, .dt = p->dt};
    mm.u.matmul.bm = pick_block(m, 512, 8);
    mm.u.matmul.bk = pick_block(p->k, 1024, 128);
    mm.u.matmul.bn = pick_block(p->n, 1024, 128);
    struct kern k;
    char err[512];
    if (kern_init(&k, &mm, &x->core->run->sc->chip, false, err, sizeof err) == 0)
        for (int i = 0; i < k.ncalls; i++)
            sim_run_pallas(x, &k.calls[i]);
    kern_fini(&k);
}

static void chip_sync(struct sim_ctx *x)
{
    struct sim_run *r = x->core->run;
    if (r->sc->chip.cores > 1 && r->sc->chip.megacore) {
        sim_wait_note(x->core, "the other core of its chip in a collective matmul");
        sg_barrier_wait(r->chip_barrier[x->core->chip]);
        sim_wait_note(x->core, NULL);
    }
}

void sim_op_collective_matmul(struct sim_ctx *x)
{
    struct sim_core *c = x->core;
    struct sim_run *r = c->run;
    const struct cfg_scenario *sc = r->sc;
    const struct op_collective_matmul *p = &x->op->u.cmm;
    if (c->core != 0 && !sc->chip.megacore)
        return;
    int X = sc->topo.shape[p->axis];
    uint64_t shard = (uint64_t)(p->m * p->k * dtype_bytes(p->dt));
    struct sim_coll dev = {.nsems = 2};
    dev.count = xcalloc(2, sizeof *dev.count);
    x->coll = &dev;
    struct coll_actor a = {.x = x};
    int co[TOPO_MAX_DIMS];
    topo_coords(&sc->topo, c->chip, co);
    int pos = co[p->axis], nb[2];
    co[p->axis] = (pos + 1) % X;
    nb[0] = topo_rank(&sc->topo, co);
    co[p->axis] = (pos + X - 1) % X;
    nb[1] = topo_rank(&sc->topo, co);
    if (c->core == 0) {
        for (int s = 0; s < 2; s++)
            sg_mailbox_set_receiver(sg_mailbox_get_name(sem_mb(c->chip, x->opi, s)));
        sim_wait_note(c, "the device barrier at kernel start");
        sg_barrier_wait(r->op_barrier[x->opi]);
        sg_actor_sleep_for(sc->chip.ici_collective_lat_s);
    }
    chip_sync(x);
    if (!p->overlap) {
        for (int s = 1; s < X && c->core == 0; s++) { /* bidirectional all-gather */
            c_delay(&a, sc->chip.ici_step_lat_s);
            void *h0 = c_rdma(&a, nb[0], shard / 2, 1), *h1 = c_rdma(&a, nb[1], shard / 2, 0);
            c_wait_send(&a, h0), c_wait_send(&a, h1);
            c_wait_recv(&a, 0, shard / 2), c_wait_recv(&a, 1, shard / 2);
        }
        chip_sync(x);
        cmm_matmul(x, p->m * X, p);
    } else {
        for (int s = 0; s < X; s++) {
            void *h[2] = {NULL, NULL};
            if (c->core == 0 && s + 1 < X) {
                c_delay(&a, sc->chip.ici_step_lat_s);
                h[0] = c_rdma(&a, nb[0], shard / 2, 1), h[1] = c_rdma(&a, nb[1], shard / 2, 0);
                flush(&a);
            }
            cmm_matmul(x, p->m, p);
            if (h[0]) {
                c_wait_send(&a, h[0]), c_wait_send(&a, h[1]);
                c_wait_recv(&a, 0, shard / 2), c_wait_recv(&a, 1, shard / 2);
            }
            chip_sync(x);
        }
    }
    if (c->core == 0)
        check_sems(x);
    free(dev.count);
}
