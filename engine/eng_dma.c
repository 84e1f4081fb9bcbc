/* engine/eng_dma.c -- local DMAs (HBM <-> VMEM), the per-core DMA engine, and
 * the trace helpers every runner uses. A DMA is a SimGrid transfer from the
 * chip's host to itself, whose route is the chip's HBM limiter link; it starts
 * after the chip's DMA latency, which the core's DMA engine actor waits out
 * (FIFO: every DMA has the same latency). The bottom of the engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "models/hbm.h"
#include "engine/engine.h"
#include "topology/plat_dir.h"
#include "topology/topo.h"

int eng_sim_chip(const struct eng_run *r, int me, int slice_chip)
{
    int n = r->sc->plan.sim.nchips;
    return me / n * n + topo_fold_rank(&r->sc->topo, &r->sc->plan.sim, slice_chip);
}

int eng_slice_chip(const struct eng_run *r, int sim_chip)
{
    return topo_unfold_rank(&r->sc->topo, &r->sc->plan.sim, sim_chip % r->sc->plan.sim.nchips);
}

int eng_slice_of(const struct eng_run *r, int sim_chip)
{
    return sim_chip / r->sc->plan.sim.nchips;
}

sg_host_t eng_port_enter(struct eng_run *r, int src, int slice_dst)
{
    const struct cfg_scenario *sc = r->sc;
    if (!r->hw.ports || slice_dst < 0)
        return NULL;
    int flip = plat_dir_flip(&sc->topo, &sc->plan.sim, sc->plan.sim_dirs, eng_slice_chip(r, src),
                             slice_dst);
    if (flip <= 0 || !r->hw.ports[src * 8 + flip]) {
        if (flip != 0 && !r->error) /* spmd_fold picks periods no transfer goes round */
            r->error = xasprintf("the fold %dx%dx%d cannot route chip %d's transfer to chip %d "
                                 "the way the torus does", sc->plan.sim.shape[0],
                                 sc->plan.sim.shape[1], sc->plan.sim.shape[2],
                                 eng_slice_chip(r, src), slice_dst);
        return NULL;
    }
    sg_host_t home = sg_actor_get_host(sg_actor_self());
    sg_actor_set_host(sg_actor_self(), r->hw.ports[src * 8 + flip]);
    return home;
}

void eng_port_leave(sg_host_t home)
{
    if (home)
        sg_actor_set_host(sg_actor_self(), home);
}

void eng_note_hbm(struct eng_run *r, int chip, double t0, double t1, double bytes)
{
    if (t1 <= t0 || bytes <= 0 || !trace_wants(r->trace, TRACE_STEPS))
        return; /* the rates feed only the "HBM GB/s" counter, a steps-level event */
    xgrow(&r->stats.rates, &r->stats.caprates, r->stats.nrates + 1, sizeof *r->stats.rates);
    r->stats.rates[r->stats.nrates++] = (struct eng_rate){chip, t0, t1, bytes / (t1 - t0)};
}

/* The hops of engine chip 'src''s transfer to 'dst' (chip 'slice_dst' of the
 * slice, or -1) in its slice: the fold's route, the way round the torus takes
 * it on a directed fold. Returns their count ('hops' has 'room'), or -1. */
static int route_of(const struct eng_run *r, int src, int dst, int slice_dst, struct topo_hop *hops,
                    int room)
{
    const struct topo *t = &r->sc->plan.sim;
    int base = src - src % t->nchips, a = src - base, b = dst - base;
    int flip = r->hw.ports && slice_dst >= 0
                   ? plat_dir_flip(&r->sc->topo, t, r->sc->plan.sim_dirs, eng_slice_chip(r, src),
                                   slice_dst)
                   : 0;
    if (flip > 0)
        return plat_dir_route(t, a, b, (unsigned)flip, hops); /* < each axis' length */
    if (topo_hops(t, a, b) > room)
        return -1;
    return topo_route(t, a, b, hops);
}

void eng_trace_route(struct eng_run *r, int src, int dst, int slice_dst, double t0, double t1,
                     uint64_t bytes, const char *name)
{
    const struct topo *t = &r->sc->plan.sim;
    if (!trace_wants(r->trace, TRACE_UNITS))
        return;
    char args[96] = ""; /* (only a steps-level trace writes a unit's args) */
    if (trace_wants(r->trace, TRACE_STEPS))
        snprintf(args, sizeof args, "\"bytes\": %llu, \"src_chip\": %d, \"dst_chip\": %d",
                 (unsigned long long)bytes, src, dst);
    if (slice_dst == ENG_DST_DCN || eng_slice_of(r, src) != eng_slice_of(r, dst)) {
        trace_unit(r->trace, src, ENG_TID_DCN, "dcn", name, name, t0, t1, (double)bytes, args);
        return;
    }
    int base = src - src % t->nchips;
    int room = t->shape[0] + t->shape[1] + t->shape[2];
    struct topo_hop buf[64];
    struct topo_hop *hops = room <= 64 ? buf : xcalloc((size_t)room, sizeof *hops);
    int n = route_of(r, src, dst, slice_dst, hops, room);
    for (int i = 0; i < n; i++)
        trace_unit(r->trace, base + hops[i].from, ENG_TID_ICI(hops[i].axis, hops[i].dir), "ici",
                   name, name, t0, t1, (double)bytes, args);
    if (hops != buf)
        free(hops);
}

void eng_wait_note(struct eng_task *task, const char *what)
{
    size_t n = what ? strlen(what) : 0; /* (no snprintf: a hot path) */
    n = n < ENG_NOTE_BYTES ? n : ENG_NOTE_BYTES - 1;
    memcpy(task->note, what ? what : "", n);
    task->note[n] = '\0';
}

sg_mailbox_t eng_task_mailbox(const struct eng_core *c, int opi)
{
    char name[64];
    snprintf(name, sizeof name, "dma.%d.%d", c->gid, opi);
    return sg_mailbox_by_name(name);
}

struct eng_dma *eng_dma_start(struct eng_task *task, bool in, uint64_t bytes, int operand)
{
    struct eng_core *c = task->core;
    struct eng_dma *d = xcalloc(1, sizeof *d);
    d->t_issue = eng_now();
    d->ready = d->t_issue + c->run->sc->chip.dma_issue_s;
    d->bytes = bytes;
    d->dst = task->done_mb;
    d->operand = operand;
    d->in = in;
    if (d->ready > d->t_issue && !c->engine_started) { /* started by the first DMA that waits */
        c->engine_started = true;
        char name[48];
        snprintf(name, sizeof name, "eng.%d", c->gid);
        sg_actor_t a = sg_actor_init(name, c->host);
        sg_actor_set_data(a, c);
        sg_actor_start(a, eng_dma_engine_main, 0, NULL);
        sg_actor_daemonize(a);
    }
    /* no detached comms: SimGrid 3.32 keeps those in one list that every
     * completion scans, quadratic in the DMAs in flight over the slice (and
     * so are comms waited by an actor other than their issuer). A request is
     * a queue entry; only a request to an engine that blocks with an empty
     * queue sends it a 0-byte wake-up (waited with the DMA): the DMAs issued
     * together (a pipeline's prologue, a step's inputs and output) make one. */
    if (d->ready > d->t_issue) {
        struct eng_dma **q = c->engine_q;
        if (c->engine_qhead > 0 && 2 * c->engine_qhead >= c->engine_qn) { /* drop the taken half */
            c->engine_qn -= c->engine_qhead;
            memmove(q, q + c->engine_qhead, c->engine_qn * sizeof *q);
            c->engine_qhead = 0;
        }
        xgrow(&c->engine_q, &c->engine_qcap, c->engine_qn + 1, sizeof *c->engine_q);
        c->engine_q[c->engine_qn++] = d;
        if (c->engine_idle) {
            c->engine_idle = false;
            d->post = sg_mailbox_put_async(c->engine, d, 0);
        }
    } else {
        d->post = sg_mailbox_put_async(d->dst, d, (long)bytes);
    }
    d->comm = sg_mailbox_get_async(task->done_mb, &d->got);
    return d;
}

void eng_dma_sync(struct eng_task *task, bool in, uint64_t bytes, int operand)
{
    double t = eng_now();
    struct eng_dma *d = xmalloc(sizeof *d);
    *d = (struct eng_dma){.t_issue = t, .ready = t + task->core->run->sc->chip.dma_issue_s,
                          .bytes = bytes, .dst = task->done_mb, .operand = operand, .in = in};
    eng_wait_note(task, "a local DMA");
    if (d->ready > d->t_issue)
        sg_actor_sleep_until(d->ready);
    d->post = sg_mailbox_put_async(d->dst, d, (long)bytes);
    d->comm = sg_mailbox_get_async(task->done_mb, &d->got);
    eng_dma_wait(task, d);
}

void eng_dma_stream_start(struct eng_task *task, double t_issue, int n, const bool *in,
                          const uint64_t *bytes, const int *operand, struct eng_dma **h)
{
    double ready = t_issue + task->core->run->sc->chip.dma_issue_s;
    if (ready > eng_now()) {
        eng_wait_note(task, "a local DMA");
        sg_actor_sleep_until(ready);
        eng_wait_note(task, NULL);
    }
    for (int i = 0; i < n; i++) { /* a put then its get: the mailbox pairs them in order */
        struct eng_dma *d = xmalloc(sizeof *d);
        *d = (struct eng_dma){.t_issue = t_issue, .ready = ready, .bytes = bytes[i],
                              .dst = task->done_mb, .operand = operand[i], .in = in[i]};
        d->post = sg_mailbox_put_async(d->dst, d, (long)bytes[i]);
        d->comm = sg_mailbox_get_async(task->done_mb, &d->got);
        h[i] = d;
    }
}

static void trace_dma(struct eng_task *task, const struct eng_dma *d, double end, bool blocked)
{
    struct eng_core *c = task->core;
    if (!trace_wants(c->run->trace, TRACE_UNITS))
        return;
    double model = d->t_issue + hbm_dma_time_s(&c->run->sc->chip, d->bytes);
    double t1 = blocked ? end : (model < end ? model : end);
    char args[96] = ""; /* kept by a trace of steps only (units merge spans) */
    if (trace_wants(c->run->trace, TRACE_STEPS))
        snprintf(args, sizeof args, "\"bytes\": %llu, \"operand\": %d",
                 (unsigned long long)d->bytes, d->operand);
    eng_unit(task, ENG_TID_DMA(c->core), "dma", d->in ? "HBM->VMEM" : "VMEM->HBM", d->t_issue,
             t1, (double)d->bytes, args);
    /* the counter spreads the bytes up to the wait (an upper bound of the
     * completion), so the sum of concurrent DMAs never exceeds the HBM */
    eng_note_hbm(c->run, c->chip, d->ready < end ? d->ready : d->t_issue, end, (double)d->bytes);
}

void eng_dma_wait(struct eng_task *task, struct eng_dma *d)
{
    eng_dma_wait_from(task, d, eng_now());
}

void eng_dma_wait_from(struct eng_task *task, struct eng_dma *d, double t0)
{
    eng_wait_note(task, "a local DMA");
    sg_comm_wait(d->comm);
    if (d->post) /* done: the transfer (or the engine's wake-up) was first. Waited, not
                    unref'd: SimGrid 3.32 keeps an unwaited comm on its issuer's activity
                    list, which grows with every DMA (an exact flash run: 0.7 -> 27 s) */
        sg_comm_wait(d->post);
    eng_wait_note(task, NULL);
    double t1 = eng_now();
    trace_dma(task, d, t1 > t0 ? t1 : t0, t1 > t0);
    if (d->in)
        task->flow_t = d->t_issue;
    free(d);
}

/* The DMA engine of one core: posts each request once its latency is over
 * (requests come in issue order and all have the same latency, so sleeping
 * until one is ready delays no other). It waits on its next request and on
 * the transfers it posted at once, so it owns every comm it starts. */
void eng_dma_engine_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct eng_core *c = sg_actor_self_get_data();
    xgrow(&c->engine_w, &c->engine_cap, 1, sizeof *c->engine_w);
    c->engine_n = 1; /* engine_w[0]: the next wake-up; then the transfers */
    void *got = NULL;
    c->engine_w[0] = sg_mailbox_get_async(c->engine, &got);
    for (;;) {
        while (c->engine_qhead < c->engine_qn) { /* the queue, in issue order */
            struct eng_dma *d = c->engine_q[c->engine_qhead++];
            if (d->ready > eng_now())
                sg_actor_sleep_until(d->ready);
            xgrow(&c->engine_w, &c->engine_cap, c->engine_n + 1, sizeof *c->engine_w);
            c->engine_w[c->engine_n++] = sg_mailbox_put_async(d->dst, d, (long)d->bytes);
        }
        c->engine_idle = true;
        ssize_t i = sg_comm_wait_any(c->engine_w, c->engine_n);
        c->engine_idle = false;
        if (i > 0)
            c->engine_w[i] = c->engine_w[--c->engine_n];
        else
            c->engine_w[0] = sg_mailbox_get_async(c->engine, &got);
    }
}

void eng_barrier_wait(struct eng_task *task, sg_bar_t b, const char *what)
{
    eng_wait_note(task, what);
    sg_barrier_wait(b);
    eng_wait_note(task, NULL);
}

void eng_stop_if_interrupted(void)
{
    if (interrupt_pending())
        sg_actor_kill_all();
}
