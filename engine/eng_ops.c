/* engine/eng_ops.c -- the runners of the Pallas kernels (their pallas_calls in
 * order), hbm_copy, host_copy and ppermute. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/copy.h"
#include "models/ici.h"
#include "engine/engine.h"
#include "topology/plat_xml.h"
#include "topology/topo.h"

/* A sub-kernel of an op of several pallas_calls: a span on the core's
 * compute track (inside the op's) and, on chip 0, its time and work. */
static void note_call(struct eng_task *task, int i, const struct pl_call *call, double t0,
                      const struct pl_stats *st0)
{
    struct eng_core *c = task->core;
    struct eng_run *r = c->run;
    trace_span(r->trace, c->chip, ENG_TID_TC(c->core), "pallas_call", call->name, t0, eng_now(),
               NULL);
    if (c->chip != 0 || i >= KERN_MAX_CALLS)
        return;
    int cores = r->sc->chip.cores;
    size_t sub = ((size_t)task->opi * KERN_MAX_CALLS + (size_t)i) * (size_t)cores + c->core;
    struct summary_core_work *w = &r->stats.core_sub[sub];
    w->time_s += eng_now() - t0;
    w->mxu_s += task->st.mxu_s - st0->mxu_s, w->vpu_s += task->st.vpu_s - st0->vpu_s;
    w->overhead_s += task->st.overhead_s - st0->overhead_s;
    w->hbm_bytes += task->st.hbm_bytes - st0->hbm_bytes;
}

/* Runs the op's pallas_calls in order; on a chip with several cores they
 * meet between calls, as consecutive kernels do. */
void eng_run_kernel(struct eng_task *task)
{
    struct eng_run *r = task->core->run;
    bool fn = r->prog.kern_fn[task->opi].kind && task->core->chip == 0;
    struct kern *k = fn ? &r->prog.kern_fn[task->opi] : &r->prog.kern[task->opi];
    int cores = r->sc->chip.cores;
    for (int i = 0; i < k->ncalls; i++) {
        double t0 = eng_now();
        struct pl_stats st0 = task->st;
        sg_actor_sleep_for(r->sc->chip.launch_s); /* every pallas_call is a kernel launch */
        /* a megacore kernel starts on both cores once the previous one ended on
         * both (the compute streams already wait for that; the barrier puts both
         * in the call before either looks for a kernel memo, engine/eng_memo.c) */
        if ((i > 0 || r->sc->chip.megacore) && r->sc->chip.cores > 1)
            eng_barrier_wait(task, r->hw.chip_barrier[task->core->chip],
                             "the other core of its chip between two kernels");
        eng_run_pallas(task, &k->calls[i],
                       fn ? NULL : &r->prog.scripts[task->opi][i * cores + task->core->core]);
        if (k->ncalls > 1)
            note_call(task, i, &k->calls[i], t0, &st0);
    }
}

/* ---- hbm_copy: HBM -> VMEM -> HBM in chunks; chunk i+1 is read while
 * chunk i is written back, so one core's copy of B bytes in n chunks costs
 * (n + 1) DMA latencies + 2B / HBM bandwidth when nothing else runs. ---- */

static uint64_t chunk_len(uint64_t bytes, uint64_t chunk, uint64_t i, uint64_t n)
{
    return i + 1 < n ? chunk : bytes - chunk * (n - 1);
}

void eng_run_hbm_copy(struct eng_task *task)
{
    const struct cfg_scenario *sc = task->core->run->sc;
    const struct op_hbm_copy *p = &task->op->u.hbm_copy;
    uint64_t chunk = copy_chunk_bytes(task->op, &sc->chip);
    uint64_t n = copy_chunks(task->op, &sc->chip);
    sg_actor_sleep_for(sc->chip.copy_s);
    eng_dma_wait(task, eng_dma_start(task, true, chunk_len(p->bytes, chunk, 0, n), 0));
    for (uint64_t i = 0; i < n; i++) {
        struct eng_dma *wr = eng_dma_start(task, false, chunk_len(p->bytes, chunk, i, n), 1);
        struct eng_dma *rd =
            i + 1 < n ? eng_dma_start(task, true, chunk_len(p->bytes, chunk, i + 1, n), 0) : NULL;
        eng_dma_wait(task, wr);
        if (rd)
            eng_dma_wait(task, rd);
        progress_add(task->core->run->progress, 1);
    }
    task->st.dmas += (int64_t)(2 * n);
    task->st.hbm_bytes += 2.0 * (double)p->bytes;
    task->st.useful_bytes += 2.0 * (double)p->bytes;
}

/* ---- host_copy: B bytes between the chip's HBM and host memory over its
 * PCIe link. After the DMA latency the bytes cross the PCIe link of their
 * direction (an execution of B on that direction's PCIe host, shared fairly
 * with the chip's other copies the same way) and the HBM (a transfer of B
 * through the chip's HBM link, shared with its kernels' DMAs) together; the
 * copy ends when both have: alone, latency + B / min(PCIe, HBM). Core 0 of
 * the chip does the work. ---- */

void eng_run_host_copy(struct eng_task *task)
{
    struct eng_core *c = task->core;
    struct eng_run *r = c->run;
    const struct op_host_copy *p = &task->op->u.host_copy;
    if (c->core != 0)
        return;
    sg_actor_sleep_for(r->sc->chip.dma_issue_s);
    double t0 = eng_now();
    char host[48];
    bool down = p->dir == HOST_TO_DEVICE;
    sg_exec_t link = sg_actor_exec_init((double)p->bytes);
    sg_exec_set_host(link, sg_host_by_name(plat_pcie_host_name(c->chip, down, host, sizeof host)));
    sg_exec_start(link);
    void *got = NULL;
    sg_comm_t put = sg_mailbox_put_async(task->done_mb, task, (long)p->bytes);
    sg_comm_t get = sg_mailbox_get_async(task->done_mb, &got);
    eng_wait_note(task, down ? "its copy from host memory" : "its copy to host memory");
    sg_exec_wait(link);
    sg_comm_wait(get);
    sg_comm_wait(put);
    eng_wait_note(task, NULL);
    char args[64];
    snprintf(args, sizeof args, "\"bytes\": %llu", (unsigned long long)p->bytes);
    trace_unit(r->trace, c->chip, ENG_TID_PCIE(down), "pcie", task->op->name, task->op->name, t0,
               eng_now(), (double)p->bytes, args);
    eng_note_hbm(r, c->chip, t0, eng_now(), (double)p->bytes);
    task->st.dmas += 1;
    task->st.hbm_bytes += (double)p->bytes;
    task->st.useful_bytes += (double)p->bytes;
    r->stats.res[task->opi].latency_s += r->sc->chip.dma_issue_s;
    r->stats.res[task->opi].pcie_bytes += (double)p->bytes;
}

/* ---- ppermute: each chip pushes its buffer to the chip 'shift' away along
 * 'axis' (remote DMA into the neighbour's HBM). Core 0 of each chip does the
 * work; the op starts with a device barrier, as Pallas inserts one. ---- */

static char *inbox_name(int chip, int opi, char *buf, size_t n)
{
    snprintf(buf, n, "in.%d.%d", chip, opi);
    return buf;
}

void eng_run_ppermute(struct eng_task *task)
{
    struct eng_core *c = task->core;
    struct eng_run *r = c->run;
    const struct cfg_scenario *sc = r->sc;
    const struct op_ppermute *p = &task->op->u.ppermute;
    if (c->core != 0)
        return;
    char name[48];
    sg_mailbox_set_receiver(inbox_name(c->chip, task->opi, name, sizeof name));
    eng_barrier_wait(task, r->prog.op_barrier[task->opi], "the device barrier at kernel start");
    sg_actor_sleep_for(sc->chip.ici_collective_lat_s);
    int me = eng_slice_chip(r, c->chip);
    int to = copy_ppermute_target(&sc->topo, me, p->axis, p->shift);
    int dst = eng_sim_chip(r, c->chip, to);
    sg_actor_sleep_for(sc->chip.dma_issue_s);
    double t0 = eng_now();
    /* a copy to itself reads and writes the same HBM: twice the bytes on it */
    long wire = (long)(to == me ? 2 * p->bytes : p->bytes);
    sg_host_t home = eng_port_enter(r, c->chip, to);
    sg_comm_t put = eng_fault_put(r, c->chip, dst,
                                  sg_mailbox_by_name(inbox_name(dst, task->opi, name, sizeof name)),
                                  task, (uint64_t)wire, t0);
    eng_port_leave(home);
    eng_wait_note(task, "its ppermute send");
    sg_comm_wait(put);
    eng_trace_route(r, c->chip, dst, to, t0, eng_now(), p->bytes, task->op->name);
    eng_note_hbm(r, c->chip, t0, eng_now(), (double)p->bytes);
    eng_note_hbm(r, dst, t0, eng_now(), (double)p->bytes);
    eng_wait_note(task, "its ppermute receive");
    sg_mailbox_get(sg_mailbox_by_name(inbox_name(c->chip, task->opi, name, sizeof name)));
    eng_wait_note(task, NULL);
    task->st.dmas += 1;
    task->st.hbm_bytes += 2.0 * (double)p->bytes;
    task->st.useful_bytes += 2.0 * (double)p->bytes;
    if (to != me)
        r->stats.res[task->opi].ici_bytes += (double)p->bytes;
    r->stats.res[task->opi].latency_s +=
        ici_transfer_latency_s(&sc->chip, topo_hops(&sc->topo, me, to));
}
