/* sim/sim_ops.c -- the op bodies an actor runs: hbm_copy, ppermute and
 * pallas_call kernels (matmul), with the Pallas executor on SimGrid. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_int.h"
#include "base/xalloc.h"
#include "topology/topo.h"

static double now(void)
{
    return simgrid_get_clock();
}

/* ---- Pallas executor: DMAs, compute executions and overhead sleeps ---- */

static void *ex_dma_start(void *ex, bool in, uint64_t bytes, int operand)
{
    return sim_dma_local(ex, in, bytes, operand);
}

static void ex_dma_wait(void *ex, void *h)
{
    sim_dma_wait(ex, h);
}

static void ex_compute(void *ex, const struct pl_work *w, int64_t step, int64_t n)
{
    struct sim_ctx *x = ex;
    struct sim_core *c = x->core;
    double mxu = w->mxu_s * (double)n, vpu = w->vpu_s * (double)n;
    if (mxu + vpu <= 0)
        return;
    double t0 = now();
    if (x->flow_t >= 0) { /* an arrow from the DMA that brought the data to its consumer */
        trace_flow(c->run->trace, c->chip, SIM_TID_DMA(c->core), x->flow_t, c->chip,
                   mxu > 0 ? SIM_TID_MXU(c->core) : SIM_TID_VPU(c->core), t0);
        x->flow_t = -1;
    }
    sg_actor_execute((mxu + vpu) * sg_host_get_speed(c->host));
    char args[96];
    snprintf(args, sizeof args, "\"step\": %lld, \"steps\": %lld", (long long)step, (long long)n);
    if (mxu > 0)
        trace_span(c->run->trace, c->chip, SIM_TID_MXU(c->core), "mxu", x->op->name, t0, t0 + mxu,
                   args);
    if (vpu > 0)
        trace_span(c->run->trace, c->chip, SIM_TID_VPU(c->core), "vpu", x->op->name, t0 + mxu,
                   now(), args);
}

static void ex_delay(void *ex, double s)
{
    (void)ex;
    sim_stop_if_interrupted(); /* once per grid step */
    if (s > 0)
        sg_actor_sleep_for(s);
}

const struct pl_exec_ops sim_pl_ops = {ex_dma_start, ex_dma_wait, ex_compute, ex_delay};

void sim_run_pallas(struct sim_ctx *x, const struct pl_call *call)
{
    struct sim_core *c = x->core;
    const struct cfg_scenario *sc = c->run->sc;
    int ncores = sc->chip.megacore ? sc->chip.cores : 1;
    int core = sc->chip.megacore ? c->core : 0;
    int64_t b, e;
    pl_core_range(call, core, ncores, &b, &e);
    struct pl_exec ex = {&sim_pl_ops, x, sc->fidelity == CFG_FIDELITY_FAST};
    char name[48];
    snprintf(name, sizeof name, "VMEM TC%d (bytes)", c->core);
    trace_counter(c->run->trace, c->chip, name, now(), (double)pl_vmem_bytes(call, &sc->chip));
    pl_run(call, &sc->chip, b, e, &ex, &x->st);
    trace_counter(c->run->trace, c->chip, name, now(), 0);
}

/* Runs the op's pallas_calls in order; on a chip with several cores they
 * meet between calls, as consecutive kernels do. */
static void op_kernel(struct sim_ctx *x)
{
    struct sim_run *r = x->core->run;
    struct kern *k = r->kern_fn[x->opi].kind && x->core->chip == 0 ? &r->kern_fn[x->opi]
                                                                   : &r->kern[x->opi];
    for (int i = 0; i < k->ncalls; i++) {
        sg_actor_sleep_for(r->sc->chip.launch_s); /* every pallas_call is a kernel launch */
        if (i > 0 && r->sc->chip.cores > 1) {
            sim_wait_note(x->core, "the other core of its chip between two kernels");
            sg_barrier_wait(r->chip_barrier[x->core->chip]);
            sim_wait_note(x->core, NULL);
        }
        sim_run_pallas(x, &k->calls[i]);
    }
}

/* ---- hbm_copy: HBM -> VMEM -> HBM in chunks; chunk i+1 is read while
 * chunk i is written back, so one core's copy of B bytes in n chunks costs
 * (n + 1) DMA latencies + 2B / HBM bandwidth when nothing else runs. ---- */

static uint64_t chunk_len(uint64_t bytes, uint64_t chunk, uint64_t i, uint64_t n)
{
    return i + 1 < n ? chunk : bytes - chunk * (n - 1);
}

static void op_hbm_copy(struct sim_ctx *x)
{
    const struct cfg_scenario *sc = x->core->run->sc;
    const struct op_hbm_copy *p = &x->op->u.hbm_copy;
    uint64_t limit = x->op->vmem_limit_bytes ? x->op->vmem_limit_bytes : sc->chip.vmem_limit_bytes;
    uint64_t chunk = p->chunk_bytes ? p->chunk_bytes : limit / 2;
    uint64_t n = (p->bytes + chunk - 1) / chunk;
    sg_actor_sleep_for(sc->chip.launch_s);
    sim_dma_wait(x, sim_dma_local(x, true, chunk_len(p->bytes, chunk, 0, n), 0));
    for (uint64_t i = 0; i < n; i++) {
        struct sim_dma *wr = sim_dma_local(x, false, chunk_len(p->bytes, chunk, i, n), 1);
        struct sim_dma *rd =
            i + 1 < n ? sim_dma_local(x, true, chunk_len(p->bytes, chunk, i + 1, n), 0) : NULL;
        sim_dma_wait(x, wr);
        if (rd)
            sim_dma_wait(x, rd);
    }
    x->st.dmas += (int64_t)(2 * n);
    x->st.hbm_bytes += 2.0 * (double)p->bytes;
}

/* ---- ppermute: each chip pushes its buffer to the chip 'shift' away along
 * 'axis' (remote DMA into the neighbour's HBM). Core 0 of each chip does the
 * work; the op starts with a device barrier, as Pallas inserts one. ---- */

static char *inbox_name(int chip, int opi, char *buf, size_t n)
{
    snprintf(buf, n, "in.%d.%d", chip, opi);
    return buf;
}

static int ppermute_target(const struct topo *t, int rank, int axis, int shift)
{
    int c[TOPO_MAX_DIMS];
    topo_coords(t, rank, c);
    int L = t->shape[axis];
    c[axis] = ((c[axis] + shift) % L + L) % L;
    return topo_rank(t, c);
}

static void op_ppermute(struct sim_ctx *x)
{
    struct sim_core *c = x->core;
    struct sim_run *r = c->run;
    const struct cfg_scenario *sc = r->sc;
    const struct op_ppermute *p = &x->op->u.ppermute;
    if (c->core != 0)
        return;
    char name[48];
    sg_mailbox_set_receiver(inbox_name(c->chip, x->opi, name, sizeof name));
    sim_wait_note(c, "the device barrier at kernel start");
    sg_barrier_wait(r->op_barrier[x->opi]);
    sim_wait_note(c, NULL);
    sg_actor_sleep_for(sc->chip.ici_collective_lat_s);
    int dst = ppermute_target(&sc->topo, c->chip, p->axis, p->shift);
    sg_actor_sleep_for(sc->chip.dma_issue_s);
    double t0 = now();
    /* a copy to itself reads and writes the same HBM: twice the bytes on it */
    long wire = (long)(dst == c->chip ? 2 * p->bytes : p->bytes);
    sg_comm_t put = sg_mailbox_put_async(sg_mailbox_by_name(inbox_name(dst, x->opi, name,
                                                                       sizeof name)),
                                         x, wire);
    sim_wait_note(c, "its ppermute send");
    sg_comm_wait(put);
    sim_trace_route(r, c->chip, dst, t0, now(), p->bytes, x->op->name);
    sim_note_hbm(r, c->chip, t0, now(), (double)p->bytes);
    sim_note_hbm(r, dst, t0, now(), (double)p->bytes);
    sim_wait_note(c, "its ppermute receive");
    sg_mailbox_get(sg_mailbox_by_name(inbox_name(c->chip, x->opi, name, sizeof name)));
    sim_wait_note(c, NULL);
    x->st.dmas += 1;
    x->st.hbm_bytes += 2.0 * (double)p->bytes;
    if (dst != c->chip)
        r->res[x->opi].ici_bytes += (double)p->bytes;
    double lat = sc->chip.ici_collective_lat_s + sc->chip.dma_issue_s +
                 sc->chip.ici_hop_lat_s * topo_hops(&sc->topo, c->chip, dst);
    r->res[x->opi].latency_s += lat;
}

/* ---- dispatch and accounting ---- */

static void accumulate(struct sim_ctx *x, double t0, double t1)
{
    struct summary_op *o = &x->core->run->res[x->opi];
    if (o->cores == 0 || t0 < o->start_s)
        o->start_s = t0;
    if (t1 > o->end_s)
        o->end_s = t1;
    o->cores++;
    o->flops += x->st.flops;
    o->vpu_flops += x->st.vpu_flops;
    o->transcendentals += x->st.transcendentals;
    o->hbm_bytes += x->st.hbm_bytes;
    o->grid_steps += x->st.steps;
    o->compute_steps += x->st.compute_steps;
    o->dmas += x->st.dmas;
    o->coalesced_runs += x->st.coalesced_runs;
    o->mxu_s += x->st.mxu_s;
    o->vpu_s += x->st.vpu_s;
    o->overhead_s += x->st.overhead_s;
    if (x->st.vmem_bytes > o->vmem_peak_bytes)
        o->vmem_peak_bytes = x->st.vmem_bytes;
}

void sim_op_run(struct sim_ctx *x)
{
    double t0 = now();
    switch (x->op->kind) {
    case OP_HBM_COPY:
        op_hbm_copy(x);
        break;
    case OP_PPERMUTE:
        op_ppermute(x);
        break;
    case OP_ALL_GATHER:
    case OP_REDUCE_SCATTER:
    case OP_ALL_REDUCE:
    case OP_ALL_TO_ALL:
        sim_op_collective(x);
        break;
    case OP_REMOTE_COPY:
        sim_op_remote_copy(x);
        break;
    case OP_COLLECTIVE_MATMUL:
        sim_op_collective_matmul(x);
        break;
    default:
        op_kernel(x);
        break;
    }
    double t1 = now();
    struct sim_core *c = x->core;
    char args[64];
    snprintf(args, sizeof args, "\"grid_steps\": %lld", (long long)x->st.steps);
    trace_span(c->run->trace, c->chip, SIM_TID_TC(c->core), op_kind_name(x->op->kind),
               x->op->name, t0, t1, args);
    accumulate(x, t0, t1);
}
