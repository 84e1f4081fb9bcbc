/* engine/eng_coll.c -- Pallas' distributed primitives on SimGrid, and the
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

#include "base/fmt.h"
#include "base/xalloc.h"
#include "config/cfg_xla_flags.h"
#include "kernels/collective.h"
#include "models/hbm.h"
#include "kernels/kernel.h"
#include "engine/engine.h"

struct sim_coll {
    struct coll_plan plan;
    struct topo group;     /* for a collective over mesh axes: this chip's group */
    const struct topo *topo; /* the torus the algorithm runs on (the slice or 'group') */
    int slice_chip;        /* this chip in the slice */
    double *count; /* per semaphore id */
    int nsems;
};

struct sem_msg {
    uint64_t amount; /* bytes (DMA) or increment (REGULAR) */
};

/* A remote DMA: its transfer and what the trace needs once it is done. Over
 * the DCN the transfer starts from the sender's NIC host (the posting actor
 * steps onto it for the post: a comm's route is fixed when it starts) to the
 * receiver's NIC host, where an anchor actor holds the semaphore mailboxes. */
struct remote_dma {
    sg_comm_t comm;
    int src, dst;
    int slice_dst; /* its chip of the slice (-1 over the DCN) */
    uint64_t bytes;
    double t_post;
    bool dcn;
};

struct pending {
    int dst, sem;
    int slice_dst; /* the chip of the slice it goes to (its route's direction) */
    uint64_t bytes;
    struct remote_dma *slot;
};

/* Fixed costs (delay) are not slept at once: they add up in 'wake', and
 * the next thing the actor does that others see (post DMAs, signal, block)
 * happens at that time, so a ring step's handshake, the fixed costs of a
 * coalesced pass and the DMA issue latency are one sleep instead of three
 * (the same instants, up to the rounding of their sum). */
struct coll_actor {
    struct eng_task *task;
    struct pending pend[64];
    int npend;
    double ready; /* when the pending DMAs may start */
    double wake;  /* the delays taken so far end then (0: none pending) */
};

/* Semaphore 'sem' of op 'opi' on engine chip 'chip': the mailbox "s.CHIP.OP.SEM",
 * looked up once per run (eng_program.sem_mb). A lookup from an actor is a
 * simcall (a switch to SimGrid's maestro and back, a cache miss on the actor's
 * stack with thousands of actors): eng_coll_prepare makes those of the
 * collectives from the maestro before the run, and each one is kept for the
 * owner, its senders and the op's later instances. */
static sg_mailbox_t sem_mb(struct eng_run *r, int chip, int opi, int sem)
{
    sg_mailbox_t **t = &r->prog.sem_mb[opi];
    if (!*t)
        *t = xcalloc((size_t)cfg_engine_chips(r->sc) * (size_t)coll_max_sems(), sizeof **t);
    sg_mailbox_t *mb = &(*t)[(size_t)chip * (size_t)coll_max_sems() + (size_t)sem];
    if (!*mb) {
        char name[64], *p = name; /* "s.CHIP.OP.SEM" */
        *p++ = 's', *p++ = '.';
        p = fmt_u64(p, (unsigned)chip), *p++ = '.';
        p = fmt_u64(p, (unsigned)opi), *p++ = '.';
        p = fmt_u64(p, (unsigned)sem), *p = '\0';
        *mb = sg_mailbox_by_name(name);
    }
    return *mb;
}

/* Semaphore 'sem' of chip 'dst'. */
static sg_mailbox_t dst_mb(struct coll_actor *a, int dst, int sem)
{
    return sem_mb(a->task->core->run, dst, a->task->opi, sem);
}

/* This chip's own semaphore 'sem'. */
static sg_mailbox_t own_mb(struct eng_task *task, int sem)
{
    return sem_mb(task->core->run, task->core->chip, task->opi, sem);
}

/* The time the next visible action may happen: now, or after pending delays. */
static double start_time(const struct coll_actor *a)
{
    double now = eng_now();
    return a->wake > now ? a->wake : now;
}

/* Sleeps out the pending delays. */
static void wake_up(struct coll_actor *a)
{
    if (a->wake > eng_now())
        sg_actor_sleep_until(a->wake);
    a->wake = 0;
}

/* Posts the DMAs issued since the last blocking call, after their latency. */
static void flush(struct coll_actor *a)
{
    if (!a->npend)
        return;
    if (a->ready > eng_now())
        sg_actor_sleep_until(a->ready);
    a->wake = 0; /* ready was counted from it */
    struct eng_core *core = a->task->core;
    struct eng_run *r = core->run;
    double t0 = eng_now();
    /* pass 1: those on a detour around a down link (faults:), after the others */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < a->npend; i++) {
            struct pending *p = &a->pend[i];
            bool detour = r->sc->faults.n && !p->slot->dcn &&
                          eng_fault_detours(r, core->chip, p->dst);
            if (detour != (pass == 1))
                continue;
            struct sem_msg *m = xmalloc(sizeof *m);
            m->amount = p->bytes;
            p->slot->t_post = t0;
            if (detour) {
                p->slot->comm = eng_fault_put(r, core->chip, p->dst, dst_mb(a, p->dst, p->sem),
                                              m, p->bytes, t0);
                continue;
            }
            if (p->slot->dcn) /* from the NIC host: no actor there to create and keep */
                sg_actor_set_host(sg_actor_self(), r->hw.chips[core->chip].nic);
            sg_host_t home = p->slot->dcn ? NULL : eng_port_enter(r, core->chip, p->slice_dst);
            p->slot->comm = sg_mailbox_put_async(dst_mb(a, p->dst, p->sem), m, (long)p->bytes);
            if (p->slot->dcn)
                sg_actor_set_host(sg_actor_self(), core->host);
            eng_port_leave(home);
        }
    }
    a->npend = 0;
}

/* Before anything that blocks: the pending DMAs are posted, the delays over. */
static void settle(struct coll_actor *a)
{
    flush(a);
    wake_up(a);
}

/* A remote DMA to chip 'dst' of the slice, which the engine's chip
 * eng_sim_chip(dst) plays. */
/* The engine's chip that plays rank 'rank' of the collective's torus. */
static int sim_chip_of(const struct eng_task *task, int rank, int *slice_chip)
{
    struct eng_run *r = task->core->run;
    const struct sim_coll *dev = task->coll;
    int me = task->core->chip;
    /* remote_copy and collective matmul: ranks are slice chips */
    *slice_chip = dev->topo ? coll_chip(task->op, &r->sc->topo, dev->slice_chip, rank) : rank;
    return eng_sim_chip(r, me, *slice_chip);
}

/* A remote DMA to rank 'dst' of the collective's torus. */
static void *cx_rdma(void *ex, int dst, uint64_t bytes, int sem)
{
    struct coll_actor *a = ex;
    struct eng_task *task = a->task;
    struct eng_run *r = task->core->run;
    const struct chip_params *ch = &r->sc->chip;
    int me = task->coll->topo ? coll_rank(task->op, &r->sc->topo, task->coll->slice_chip)
                              : eng_slice_chip(r, task->core->chip);
    bool remote = dst != me;
    int slice_dst;
    dst = sim_chip_of(task, dst, &slice_dst);
    if (a->npend == 64)
        flush(a);
    if (a->npend == 0)
        a->ready = start_time(a) + ch->dma_issue_s;
    struct remote_dma *slot = xcalloc(1, sizeof *slot);
    *slot = (struct remote_dma){.src = task->core->chip, .dst = dst, .slice_dst = slice_dst,
                                .bytes = bytes};
    a->pend[a->npend++] = (struct pending){dst, sem, slice_dst, bytes, slot};
    task->st.dmas++;
    task->st.hbm_bytes += 2.0 * (double)bytes;
    task->st.useful_bytes += 2.0 * (double)bytes;
    if (remote)
        r->stats.res[task->opi].ici_bytes += (double)bytes;
    return slot;
}

/* A remote DMA over the DCN to this device's place in slice 'dst_slice'
 * (of the simulated slices: a ring step of the whole ring lands modulo them,
 * engine/spmd.h). */
static void *cx_rdma_dcn(void *ex, int dst_slice, uint64_t bytes, int sem)
{
    struct coll_actor *a = ex;
    struct eng_task *task = a->task;
    struct eng_run *r = task->core->run;
    int n = r->sc->plan.sim.nchips;
    dst_slice = eng_fault_real_slice(r, eng_slice_of(r, task->core->chip), dst_slice) %
                cfg_sim_slices(r->sc);
    int dst = dst_slice * n + task->core->chip % n;
    if (a->npend == 64)
        flush(a);
    if (a->npend == 0)
        a->ready = start_time(a) + r->sc->chip.dma_issue_s;
    struct remote_dma *slot = xcalloc(1, sizeof *slot);
    *slot = (struct remote_dma){.src = task->core->chip, .dst = dst, .slice_dst = ENG_DST_DCN,
                                .bytes = bytes, .dcn = true};
    a->pend[a->npend++] = (struct pending){dst, sem, ENG_DST_DCN, bytes, slot};
    task->st.dmas++;
    task->st.hbm_bytes += 2.0 * (double)bytes;
    r->stats.res[task->opi].dcn_bytes += (double)bytes;
    return slot;
}

static void cx_wait_send(void *ex, void *h)
{
    struct coll_actor *a = ex;
    settle(a);
    struct remote_dma *d = h;
    struct eng_run *r = a->task->core->run;
    eng_wait_note(a->task, d->dcn ? "a DCN send" : "a remote DMA send");
    sg_comm_wait(d->comm);
    eng_wait_note(a->task, NULL);
    double t1 = eng_now();
    eng_trace_route(r, d->src, d->dst, d->slice_dst, d->t_post, t1, d->bytes, a->task->op->name);
    eng_note_hbm(r, d->src, d->t_post, t1, (double)d->bytes);
    eng_note_hbm(r, d->dst, d->t_post, t1, (double)d->bytes);
    free(d);
}

/* The note "WHAT SEM of op 'NAME' to reach AMOUNT (it holds COUNT)". */
static void wait_note(struct eng_task *task, const char *what, int sem, double amount,
                      double count)
{
    /* the strings are cut beyond the note's length, the numbers need 64 bytes */
    char buf[2 * ENG_NOTE_BYTES + 64];
    char *p = buf, *end = buf + 2 * ENG_NOTE_BYTES;
    p = fmt_str(p, what, end);
    *p++ = ' ';
    p = fmt_u64(p, (unsigned)sem);
    p = fmt_str(p, " of op '", end);
    p = fmt_str(p, task->op->name, end);
    p = fmt_str(p, "' to reach ", end + 16);
    p = fmt_u64(p, (unsigned long long)amount);
    p = fmt_str(p, " (it holds ", end + 32);
    p = fmt_u64(p, (unsigned long long)count);
    *p++ = ')', *p = '\0';
    eng_wait_note(task, buf); /* as snprintf: the first ENG_NOTE_BYTES - 1 bytes */
}

static void take(struct coll_actor *a, int sem, double amount, const char *what)
{
    struct eng_task *task = a->task;
    double *c = &task->coll->count[sem];
    settle(a);
    while (*c < amount) { /* counts are whole numbers of bytes or increments */
        wait_note(task, what, sem, amount, *c);
        struct sem_msg *m = sg_mailbox_get(own_mb(task, sem));
        *c += (double)m->amount;
        free(m);
    }
    eng_wait_note(task, NULL);
    *c -= amount;
}

static void cx_wait_recv(void *ex, int sem, uint64_t bytes)
{
    take(ex, sem, (double)bytes, "DMA semaphore");
}

static void cx_signal(void *ex, int dst, int sem, int inc)
{
    struct coll_actor *a = ex;
    wake_up(a);
    int slice_dst;
    struct eng_run *r = a->task->core->run;
    dst = sim_chip_of(a->task, dst, &slice_dst);
    struct sem_msg *m = xmalloc(sizeof *m);
    m->amount = (uint64_t)inc;
    sg_host_t home = eng_port_enter(r, a->task->core->chip, slice_dst);
    sg_comm_detach(sg_mailbox_put_init(dst_mb(a, dst, sem), m, 0), free);
    eng_port_leave(home);
}

static void cx_wait(void *ex, int sem, int value)
{
    take(ex, sem, value, "REGULAR semaphore");
}

/* Without SparseCore offload (xla_tpu_enable_sparse_core_collective_offload_*,
 * false by default before v7) XLA fuses a reduction's steps into the
 * TensorCore's program: each step's VPU reads the local and the received
 * chunk from HBM and writes the sum, 3 x 'bytes' at the chip's HBM rate,
 * TensorCore time the kernel beside it loses (docs/reference.md,
 * "Reductions on the TensorCore"). */
static void tc_reduce(struct eng_task *task, uint64_t bytes, int times)
{
    const struct cfg_scenario *sc = task->core->run->sc;
    if (cfg_xla_sc_offload(&sc->xla, sc->chip.generation, op_row(task->op->kind)->name))
        return;
    if (task->op->kind != OP_REDUCE_SCATTER && task->op->kind != OP_ALL_REDUCE)
        return;
    eng_tc_reduce(task->core, 3.0 * (double)bytes * times / hbm_bw_Bps(&sc->chip));
}

/* The accumulate step of a reduction (kernels/collective.c builds it), 'times'
 * back to back as one call (its repeat: fast fidelity prices them in one go). */
static void cx_reduce(void *ex, uint64_t bytes, enum dtype dt, int times)
{
    struct coll_actor *a = ex;
    settle(a);
    tc_reduce(a->task, bytes, times);
    struct coll_reduce shape;
    struct pl_call *call = xmalloc(sizeof *call); /* 4.7 KB: not on the actor's small stack */
    coll_reduce_call(&shape, bytes, dt, call);
    call->repeat = times;
    eng_run_pallas_steps(a->task, call, 0, pl_num_steps(call));
    free(call);
}

static void cx_local_copy(void *ex, uint64_t bytes)
{
    struct coll_actor *a = ex;
    settle(a);
    eng_dma_sync(a->task, true, 2 * bytes, -1);
}

static void cx_delay(void *ex, double s)
{
    struct coll_actor *a = ex;
    flush(a);
    if (s > 0)
        a->wake = start_time(a) + s;
}

static bool cx_shared(void *ex)
{
    struct coll_actor *a = ex;
    return eng_memo_chip_shared(a->task);
}

static const struct coll_exec_ops coll_ops = {.rdma = cx_rdma,
                                              .wait_send = cx_wait_send,
                                              .wait_recv = cx_wait_recv,
                                              .signal = cx_signal,
                                              .wait = cx_wait,
                                              .reduce = cx_reduce,
                                              .local_copy = cx_local_copy,
                                              .delay = cx_delay,
                                              .rdma_dcn = cx_rdma_dcn,
                                              .shared = cx_shared};

/* One actor per part: its own DMA mailbox and statistics. */
struct part_actor {
    struct eng_task task;
    int part;
};

static void run_part(struct eng_task *task, int part)
{
    struct coll_actor a = {.task = task};
    const struct cfg_scenario *sc = task->core->run->sc;
    const struct sim_coll *dev = task->coll;
    int slice, nslices = eng_fault_slices(task->core->run,
                                          eng_slice_of(task->core->run, task->core->chip), &slice);
    struct coll_ctx c = {dev->topo,
                         &sc->chip,
                         task->op,
                         coll_rank(task->op, &sc->topo, dev->slice_chip),
                         part,
                         &coll_ops,
                         &a,
                         sc->fidelity == CFG_FIDELITY_FAST,
                         slice,
                         nslices,
                         sc->dcn.lat_s,
                         cfg_faults_links(&sc->faults)};
    coll_run_part(&c, &task->coll->plan);
    settle(&a);
}

static void part_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct part_actor *p = sg_actor_self_get_data();
    run_part(&p->task, p->part);
}

static sg_mailbox_t part_mailbox(const struct eng_task *task, int part)
{
    char name[64];
    snprintf(name, sizeof name, "dma.%d.%d.p%d", task->core->gid, task->opi, part);
    return sg_mailbox_by_name(name);
}

static void merge_stats(struct pl_stats *into, const struct pl_stats *from)
{
    into->dmas += from->dmas;
    into->hbm_bytes += from->hbm_bytes;
    into->useful_bytes += from->useful_bytes;
    into->vpu_s += from->vpu_s;
    into->vpu_flops += from->vpu_flops;
    into->overhead_s += from->overhead_s;
    into->steps += from->steps;
    into->compute_steps += from->compute_steps;
    into->coalesced_runs += from->coalesced_runs;
}

/* Semaphores left non-zero at kernel exit crash a real program: report them. */
static void check_sems(struct eng_task *task)
{
    struct eng_run *r = task->core->run;
    for (int s = 0; s < task->coll->nsems; s++) {
        if (task->coll->count[s] != 0 && !r->error)
            r->error = xasprintf("chip %d: semaphore %d of op '%s' is %g at kernel exit "
                                 "(must be 0)",
                                 task->core->chip, s, task->op->name, task->coll->count[s]);
    }
}

/* The anchor of a collective's DCN semaphores on one chip: an actor on its
 * receiving NIC host that is their mailboxes' permanent receiver, so that DCN
 * transfers run NIC to NIC and start at once; the chip's actors take the
 * landed messages as from any semaphore. It lives until the op ends. */
struct dcn_anchor {
    struct eng_run *r;
    int chip, opi;
    const struct coll_plan *plan;
    sg_sem_t ready, quit;
};

static void anchor_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct dcn_anchor *an = sg_actor_self_get_data();
    for (int p = 0; p < an->plan->nparts; p++)
        for (int q = 0; q < an->plan->parts[p].nphases; q++)
            for (int d = 0; d < 2 && an->plan->parts[p].phases[q].axis == COLL_AXIS_DCN; d++)
                sg_mailbox_set_receiver(
                    sg_mailbox_get_name(sem_mb(an->r, an->chip, an->opi, coll_sem_id(p, q, d, false))));
    sg_sem_release(an->ready);
    sg_sem_acquire(an->quit); /* the op's end: what waits on a semaphore frees it */
    sg_sem_destroy(an->quit);
    free(an);
}

static struct dcn_anchor *anchor_start(struct eng_task *task, const struct coll_plan *plan)
{
    struct eng_core *c = task->core;
    struct dcn_anchor *an = xmalloc(sizeof *an);
    *an = (struct dcn_anchor){c->run, c->chip, task->opi, plan, sg_sem_init(0), sg_sem_init(0)};
    char name[48];
    snprintf(name, sizeof name, "dcn-anchor%d.op%d", c->chip, task->opi);
    sg_actor_t act = sg_actor_init(name, c->run->hw.chips[c->chip].nic_rx);
    sg_actor_set_data(act, an);
    sg_actor_start(act, anchor_main, 0, NULL);
    sg_actor_daemonize(act);
    sg_sem_acquire(an->ready);
    return an;
}

static void anchor_stop(struct dcn_anchor *an)
{
    sg_sem_destroy(an->ready);
    sg_sem_release(an->quit); /* the anchor frees 'an' */
}

/* A collective over a chip's devices too (chip_devices: v7's two TensorCores, each a JAX
 * device, holding the same 'bytes'): before the chips' part of a reduction the devices swap
 * halves over the die-to-die link and add the half they got; after the chips' part of a
 * gather they swap the reduced halves back. The link between the dies is priced as
 * tpusim prices every transfer that stays on a chip: a DMA through the chip's HBM (the
 * swap both ways reads and writes 'bytes' in all, a local copy of 'bytes'), after a ring
 * step's handshake; the two devices' adds as one reduction of 'bytes' over that HBM. */
static void chip_devices_phase(struct eng_task *task, bool reduce)
{
    const struct op_collective *p = &task->op->u.coll;
    struct coll_actor a = {.task = task};
    cx_delay(&a, task->core->run->sc->chip.ici_step_lat_s);
    cx_local_copy(&a, p->bytes);
    if (reduce)
        cx_reduce(&a, p->bytes, p->dt, 1);
    settle(&a);
}

/* The plan of collective 'op' on engine chip 'chip': its torus (the slice or its group)
 * and parts ('dev' gets them). */
static void plan_chip(struct eng_run *r, const struct op *op, int chip, struct sim_coll *dev)
{
    const struct cfg_scenario *sc = r->sc;
    *dev = (struct sim_coll){.nsems = coll_max_sems(), .slice_chip = eng_slice_chip(r, chip)};
    dev->topo = coll_topo(op, &sc->topo, dev->slice_chip, &dev->group);
    int eff, nslices = eng_fault_slices(r, eng_slice_of(r, chip), &eff);
    coll_plan_slices(op, dev->topo, sc->dcn.slices > 1 ? nslices : sc->dcn.slices, &dev->plan);
}

/* Semaphore 's' (0 to 3: the two directions' DMA semaphores, then the REGULAR ones) of
 * phase 'q' of part 'p': its id, or -1 when the phase does not use it. */
static int plan_sem(const struct coll_plan *plan, int p, int q, int s)
{
    if (s >= 2 && plan->parts[p].phases[q].kind != COLL_PSUM)
        return -1;
    return coll_sem_id(p, q, s & 1, s >= 2);
}

void eng_coll_prepare(struct eng_run *r)
{
    const struct cfg_scenario *sc = r->sc;
    for (int i = 0; i < sc->nops; i++) {
        if (eng_runner(sc->ops[i].kind) != eng_run_collective)
            continue;
        for (int chip = 0; chip < cfg_engine_chips(sc); chip++) {
            struct sim_coll dev;
            plan_chip(r, &sc->ops[i], chip, &dev);
            for (int p = 0; p < dev.plan.nparts; p++)
                for (int q = 0; q < dev.plan.parts[p].nphases; q++)
                    for (int s = 0; s < 4; s++)
                        if (plan_sem(&dev.plan, p, q, s) >= 0)
                            sem_mb(r, chip, i, plan_sem(&dev.plan, p, q, s));
        }
    }
}

void eng_run_collective(struct eng_task *task)
{
    struct eng_core *c = task->core;
    struct eng_run *r = c->run;
    const struct cfg_scenario *sc = r->sc;
    if (c->core != 0 || eng_standin_run(task))
        return;
    struct sim_coll dev;
    plan_chip(r, task->op, c->chip, &dev);
    dev.count = xcalloc((size_t)dev.nsems, sizeof *dev.count);
    task->coll = &dev;
    /* push-only DMAs need a receiver from the start: the semaphores the plan uses */
    for (int p = 0; p < dev.plan.nparts; p++)
        for (int q = 0; q < dev.plan.parts[p].nphases; q++)
            for (int s = 0; s < 4; s++)
                if (plan_sem(&dev.plan, p, q, s) >= 0)
                    sg_mailbox_set_receiver(
                        sg_mailbox_get_name(own_mb(task, plan_sem(&dev.plan, p, q, s))));
    struct dcn_anchor *anchor = coll_plan_dcn(&dev.plan) ? anchor_start(task, &dev.plan) : NULL;
    eng_barrier_wait(task, r->prog.op_barrier[task->opi], "the device barrier at kernel start");
    sg_actor_sleep_for(sc->chip.ici_collective_lat_s);
    r->stats.res[task->opi].latency_s += sc->chip.ici_collective_lat_s;
    bool devs = task->op->u.coll.chip_devices > 1 && task->op->kind != OP_ALL_TO_ALL;
    if (devs && task->op->kind != OP_ALL_GATHER)
        chip_devices_phase(task, true);
    int n = dev.plan.nparts;
    struct part_actor *pa = xcalloc((size_t)n, sizeof *pa);
    sg_actor_t *act = xcalloc((size_t)n, sizeof *act);
    for (int p = 1; p < n; p++) {
        pa[p].task = (struct eng_task){.core = c,
                                       .op = task->op,
                                       .opi = task->opi,
                                       .inst = task->inst,
                                       .note = task->note,
                                       .coll = &dev,
                                       .flow_t = -1};
        pa[p].task.done_mb = part_mailbox(task, p);
        pa[p].part = p;
        char name[48];
        snprintf(name, sizeof name, "tc%d.op%d.part%d", c->gid, task->opi, p);
        act[p] = sg_actor_init(name, c->host);
        sg_actor_set_data(act[p], &pa[p]);
        sg_actor_ref(act[p]);
        sg_actor_start(act[p], part_main, 0, NULL);
    }
    run_part(task, 0);
    for (int p = 1; p < n; p++) {
        sg_actor_join(act[p], -1);
        sg_actor_unref(act[p]);
        merge_stats(&task->st, &pa[p].task.st);
    }
    check_sems(task);
    if (devs && task->op->kind != OP_REDUCE_SCATTER)
        chip_devices_phase(task, false);
    if (anchor)
        anchor_stop(anchor);
    free(pa);
    free(act);
    free(dev.count);
}

/* ---- remote_copy: one make_async_remote_copy per device ---- */

void eng_run_remote_copy(struct eng_task *task)
{
    struct eng_core *c = task->core;
    struct eng_run *r = c->run;
    const struct cfg_scenario *sc = r->sc;
    const struct op_remote_copy *rc = &task->op->u.remote_copy;
    if (c->core != 0)
        return;
    struct sim_coll dev = {.nsems = 1};
    dev.count = xcalloc(1, sizeof *dev.count);
    task->coll = &dev;
    sg_mailbox_set_receiver(sg_mailbox_get_name(sem_mb(r, c->chip, task->opi, 0)));
    eng_barrier_wait(task, r->prog.op_barrier[task->opi], "the device barrier at kernel start");
    sg_actor_sleep_for(sc->chip.ici_collective_lat_s);
    struct coll_actor a = {.task = task};
    int dst = coll_remote_target(&sc->topo, rc, eng_slice_chip(r, c->chip));
    cx_wait_send(&a, cx_rdma(&a, dst, rc->bytes, 0));
    if (rc->recv_bytes)
        cx_wait_recv(&a, 0, rc->recv_bytes);
    check_sems(task);
    free(dev.count);
}

/* ---- collective matmul: all-gather of x along an axis feeding x @ y ----
 * Each device holds x [m, k] (its shard of the gathered rows) and y [k, n].
 * Overlapped (the scaling book's collective matmul): X steps; at each step the
 * chip computes the chunk it holds while core 0 pushes that chunk to the next
 * device of a bidirectional ring (half each way). Not overlapped: a bidirectional
 * all-gather first, then one matmul of [X m, k] x [k, n]. The matmuls are the
 * Pallas blocked matmul on every core of the chip (megacore split). */

static void stats_diff(const struct pl_stats *a, const struct pl_stats *b, struct pl_stats *d)
{
    *d = (struct pl_stats){.steps = b->steps - a->steps,
                           .compute_steps = b->compute_steps - a->compute_steps,
                           .dmas = b->dmas - a->dmas, .hbm_bytes = b->hbm_bytes - a->hbm_bytes,
                           .useful_bytes = b->useful_bytes - a->useful_bytes,
                           .flops = b->flops - a->flops, .vpu_flops = b->vpu_flops - a->vpu_flops,
                           .transcendentals = b->transcendentals - a->transcendentals,
                           .mxu_s = b->mxu_s - a->mxu_s, .vpu_s = b->vpu_s - a->vpu_s,
                           .overhead_s = b->overhead_s - a->overhead_s,
                           .coalesced_runs = b->coalesced_runs - a->coalesced_runs};
}

static void stats_add(struct pl_stats *s, const struct pl_stats *d)
{
    s->steps += d->steps, s->compute_steps += d->compute_steps, s->dmas += d->dmas;
    s->hbm_bytes += d->hbm_bytes, s->useful_bytes += d->useful_bytes, s->flops += d->flops;
    s->vpu_flops += d->vpu_flops, s->transcendentals += d->transcendentals;
    s->mxu_s += d->mxu_s, s->vpu_s += d->vpu_s, s->overhead_s += d->overhead_s;
    s->coalesced_runs += d->coalesced_runs;
}

/* The chunk matmul's memo of this op and core ('whole': the sequential form's), or NULL
 * when kernel memos are off (exact fidelity, --no-kernel-memo, a trace of steps). */
static struct eng_chunk_memo *chunk_memo(struct eng_task *task, bool whole)
{
    struct eng_run *r = task->core->run;
    const struct cfg_scenario *sc = r->sc;
    if (!sc->kernel_memo || sc->fidelity != CFG_FIDELITY_FAST || sc->trace_level >= TRACE_STEPS)
        return NULL;
    return &r->prog.chunk_memo[((size_t)task->opi * (size_t)sc->chip.cores +
                                (size_t)task->core->core) * 2 + whole];
}

/* One chunk's matmul: the Pallas blocked matmul on every core of the chip. In fast
 * fidelity the first run of the op's chunk on a core is measured (beside the ring's
 * transfers) and the later ones take its time and work without their steps: a chunk
 * matmul is the same every step, layer and chip (its HBM traffic is then not beside the
 * transfers'). */
static void chunk_matmul(struct eng_task *task, int64_t m, bool whole)
{
    struct eng_chunk_memo *memo = chunk_memo(task, whole);
    if (memo && memo->measured) {
        sg_actor_sleep_for(memo->dur_s);
        stats_add(&task->st, &memo->work);
        progress_add(task->core->run->progress, memo->work.steps);
        task->steps_shown = task->st.steps;
        return;
    }
    double t0 = eng_now();
    struct pl_stats s0 = task->st;
    struct op mm;
    coll_matmul_op(task->op, m, &mm);
    struct kern k;
    char err[512];
    if (kern_init(&k, op_row(OP_MATMUL)->kern, &mm, &task->core->run->sc->chip, false, err,
                  sizeof err) == 0)
        for (int i = 0; i < k.ncalls; i++)
            eng_run_pallas(task, &k.calls[i], NULL);
    kern_fini(&k);
    if (memo) {
        memo->measured = true;
        memo->dur_s = eng_now() - t0;
        stats_diff(&s0, &task->st, &memo->work);
    }
}

static void chip_sync(struct eng_task *task)
{
    struct eng_run *r = task->core->run;
    if (r->sc->chip.cores > 1 && r->sc->chip.megacore) {
        eng_barrier_wait(task, r->hw.chip_barrier[task->core->chip],
                         "the other core of its chip in a collective matmul");
    }
}

void eng_run_collective_matmul(struct eng_task *task)
{
    struct eng_core *c = task->core;
    struct eng_run *r = c->run;
    const struct cfg_scenario *sc = r->sc;
    const struct op_collective_matmul *p = &task->op->u.coll_matmul;
    if (c->core != 0 && !sc->chip.megacore)
        return;
    int X = coll_matmul_ring(task->op, &sc->topo);
    /* what a step passes on: x's shard, or the running sum of an output block (at least
     * bf16: the blocks of int8 or fp8 matmuls are dequantized before they are summed) */
    int eb = dtype_bytes(p->dt) < 2 && p->scatter ? 2 : dtype_bytes(p->dt);
    uint64_t shard = (uint64_t)(p->m * (p->scatter ? p->n : p->k) * eb);
    struct sim_coll dev = {.nsems = 2};
    dev.count = xcalloc(2, sizeof *dev.count);
    task->coll = &dev;
    struct coll_actor a = {.task = task};
    int me = eng_slice_chip(r, c->chip), nb[2];
    nb[0] = coll_matmul_neighbour(task->op, &sc->topo, me, 1);
    nb[1] = coll_matmul_neighbour(task->op, &sc->topo, me, -1);
    if (c->core == 0) {
        for (int s = 0; s < 2; s++)
            sg_mailbox_set_receiver(sg_mailbox_get_name(sem_mb(r, c->chip, task->opi, s)));
        eng_barrier_wait(task, r->prog.op_barrier[task->opi], "the device barrier at kernel start");
        sg_actor_sleep_for(sc->chip.ici_collective_lat_s);
    }
    chip_sync(task);
    if (!p->overlap) {
        for (int s = 1; s < X && c->core == 0; s++) { /* bidirectional all-gather */
            cx_delay(&a, sc->chip.ici_step_lat_s);
            void *h0 = cx_rdma(&a, nb[0], shard / 2, 1), *h1 = cx_rdma(&a, nb[1], shard / 2, 0);
            cx_wait_send(&a, h0), cx_wait_send(&a, h1);
            cx_wait_recv(&a, 0, shard / 2), cx_wait_recv(&a, 1, shard / 2);
        }
        chip_sync(task);
        chunk_matmul(task, p->m * X, true);
    } else {
        for (int s = 0; s < X; s++) {
            void *h[2] = {NULL, NULL};
            if (c->core == 0 && s + 1 < X) {
                cx_delay(&a, sc->chip.ici_step_lat_s);
                h[0] = cx_rdma(&a, nb[0], shard / 2, 1), h[1] = cx_rdma(&a, nb[1], shard / 2, 0);
                flush(&a);
            }
            chunk_matmul(task, p->m, false);
            if (h[0]) {
                cx_wait_send(&a, h[0]), cx_wait_send(&a, h[1]);
                cx_wait_recv(&a, 0, shard / 2), cx_wait_recv(&a, 1, shard / 2);
            }
            chip_sync(task);
        }
    }
    if (c->core == 0)
        check_sems(task);
    free(dev.count);
}
