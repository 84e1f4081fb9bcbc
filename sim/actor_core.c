/* sim/actor_core.c -- TensorCore actors, DMA engines and local DMAs.
 * A core actor walks the workload in groups: an op plus the following ops
 * marked overlap: true run concurrently (extra actors on the same core),
 * then every core meets at a barrier. A DMA is a SimGrid transfer from the
 * chip's host to itself, whose route is the chip's HBM limiter link; it
 * starts after the chip's DMA latency, which the core's DMA engine actor
 * waits out (FIFO: every DMA has the same latency). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_int.h"
#include "base/xalloc.h"
#include "topology/topo.h"

void sim_note_hbm(struct sim_run *r, int chip, double t0, double t1, double bytes)
{
    if (t1 <= t0 || bytes <= 0)
        return;
    xgrow(&r->rates, &r->caprates, r->nrates + 1, sizeof *r->rates);
    r->rates[r->nrates++] = (struct sim_rate){chip, t0, t1, bytes / (t1 - t0)};
}

void sim_trace_route(struct sim_run *r, int src, int dst, double t0, double t1, uint64_t bytes,
                     const char *name)
{
    const struct topo *t = &r->sc->topo;
    int n = topo_hops(t, src, dst);
    if (n == 0)
        return;
    struct topo_hop *hops = xcalloc((size_t)n, sizeof *hops);
    topo_route(t, src, dst, hops);
    char args[96];
    snprintf(args, sizeof args, "\"bytes\": %llu, \"src_chip\": %d, \"dst_chip\": %d",
             (unsigned long long)bytes, src, dst);
    for (int i = 0; i < n; i++)
        trace_span(r->trace, hops[i].from, SIM_TID_ICI(hops[i].axis, hops[i].dir), "ici", name,
                   t0, t1, args);
    free(hops);
}

void sim_wait_note(struct sim_core *c, const char *what)
{
    snprintf(c->waiting, sizeof c->waiting, "%s", what ? what : "");
}

static sg_mailbox_t ctx_mailbox(const struct sim_core *c, int opi)
{
    char name[64];
    snprintf(name, sizeof name, "dma.%d.%d", c->gid, opi);
    return sg_mailbox_by_name(name);
}

struct sim_dma *sim_dma_local(struct sim_ctx *x, bool in, uint64_t bytes, int operand)
{
    struct sim_core *c = x->core;
    struct sim_dma *d = xcalloc(1, sizeof *d);
    d->t_issue = simgrid_get_clock();
    d->ready = d->t_issue + c->run->sc->chip.dma_issue_s;
    d->bytes = bytes;
    d->dst = x->done_mb;
    d->operand = operand;
    d->in = in;
    sg_comm_t req;
    if (d->ready > d->t_issue)
        req = sg_mailbox_put_init(c->engine, d, 0);
    else
        req = sg_mailbox_put_init(d->dst, d, (long)bytes);
    sg_comm_detach(req, NULL);
    d->comm = sg_mailbox_get_async(x->done_mb, &d->got);
    return d;
}

static void trace_dma(struct sim_ctx *x, const struct sim_dma *d, double end, bool blocked)
{
    struct sim_core *c = x->core;
    const struct chip_params *ch = &c->run->sc->chip;
    double model = d->ready + (double)d->bytes / ch->hbm_bw_Bps;
    double t1 = blocked ? end : (model < end ? model : end);
    char args[96];
    snprintf(args, sizeof args, "\"bytes\": %llu, \"operand\": %d",
             (unsigned long long)d->bytes, d->operand);
    trace_span(c->run->trace, c->chip, SIM_TID_DMA(c->core), "dma",
               d->in ? "HBM->VMEM" : "VMEM->HBM", d->t_issue, t1, args);
    /* the counter spreads the bytes up to the wait (an upper bound of the
     * completion), so the sum of concurrent DMAs never exceeds the HBM */
    sim_note_hbm(c->run, c->chip, d->ready < end ? d->ready : d->t_issue, end,
                 (double)d->bytes);
}

void sim_dma_wait(struct sim_ctx *x, struct sim_dma *d)
{
    double t0 = simgrid_get_clock();
    sim_wait_note(x->core, "a local DMA");
    sg_comm_wait(d->comm);
    sim_wait_note(x->core, NULL);
    double t1 = simgrid_get_clock();
    trace_dma(x, d, t1, t1 > t0);
    if (d->in)
        x->flow_t = d->t_issue;
    free(d);
}

/* The DMA engine of one core: posts each request once its latency is over. */
void sim_engine_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct sim_core *c = sg_actor_self_get_data();
    for (;;) {
        struct sim_dma *d = sg_mailbox_get(c->engine);
        if (d->ready > simgrid_get_clock())
            sg_actor_sleep_until(d->ready);
        sg_comm_detach(sg_mailbox_put_init(d->dst, d, (long)d->bytes), NULL);
    }
}

/* Runs one op of the workload in its own actor (for overlap: true). */
static void op_actor_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct sim_ctx *x = sg_actor_self_get_data();
    sim_op_run(x);
}

static void run_group(struct sim_core *c, int first, int last)
{
    struct sim_run *r = c->run;
    int n = last - first;
    struct sim_ctx *ctx = xcalloc((size_t)n, sizeof *ctx);
    sg_actor_t *helpers = xcalloc((size_t)n, sizeof *helpers);
    for (int i = 0; i < n; i++) {
        ctx[i] = (struct sim_ctx){.core = c, .op = &r->sc->ops[first + i], .opi = first + i,
                                  .flow_t = -1};
        ctx[i].done_mb = ctx_mailbox(c, first + i);
    }
    for (int i = 1; i < n; i++) {
        char name[48];
        snprintf(name, sizeof name, "tc%d.op%d", c->gid, first + i);
        helpers[i] = sg_actor_init(name, c->host);
        sg_actor_set_data(helpers[i], &ctx[i]);
        sg_actor_ref(helpers[i]);
        sg_actor_start(helpers[i], op_actor_main, 0, NULL);
    }
    sim_op_run(&ctx[0]);
    for (int i = 1; i < n; i++) {
        sg_actor_join(helpers[i], -1);
        sg_actor_unref(helpers[i]);
    }
    free(helpers);
    free(ctx);
}

void sim_core_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct sim_core *c = sg_actor_self_get_data();
    const struct cfg_scenario *sc = c->run->sc;
    for (int i = 0; i < sc->nops;) {
        int j = i + 1;
        while (j < sc->nops && sc->ops[j].overlap)
            j++;
        sim_stop_if_interrupted();
        sim_wait_note(c, "the barrier between ops");
        sg_barrier_wait(c->run->barrier);
        sim_wait_note(c, NULL);
        run_group(c, i, j);
        i = j;
    }
    sim_wait_note(c, "the barrier at the end");
    sg_barrier_wait(c->run->barrier);
    sim_wait_note(c, NULL);
    c->done = true;
}
