/* engine/eng_pallas.c -- the Pallas executor on SimGrid: a pallas_call's DMAs
 * become local DMAs (engine/eng_dma.c), its compute one execution per step (or
 * per coalesced run of steps) on the core, its step overhead a sleep; a
 * replay on a quiet chip may be a kernel memo's (engine/eng_memo.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "engine/engine.h"
#include "models/ici.h"

static void *ex_dma_start(void *ex, bool in, uint64_t bytes, int operand)
{
    return eng_dma_start(ex, in, bytes, operand);
}

static void ex_dma_wait(void *ex, void *h)
{
    eng_dma_wait(ex, h);
}

static void ex_dma_sync(void *ex, bool in, uint64_t bytes, int operand)
{
    eng_dma_sync(ex, in, bytes, operand);
}

static void ex_compute(void *ex, const struct pl_work *w, int64_t step, int64_t n)
{
    struct eng_task *task = ex;
    struct eng_core *c = task->core;
    double mxu = w->mxu_s * (double)n, vpu = w->vpu_s * (double)n;
    if (mxu + vpu <= 0)
        return;
    double t0 = eng_now();
    if (task->flow_t >= 0) { /* an arrow from the DMA that brought the data to its consumer */
        trace_flow(c->run->trace, TRACE_STEPS, "dma->compute", c->chip, ENG_TID_DMA(c->core),
                   task->flow_t, c->chip, mxu > 0 ? ENG_TID_MXU(c->core) : ENG_TID_VPU(c->core),
                   t0);
        task->flow_t = -1;
    }
    /* the work at the nominal speed (pstate 0): a slow chip's pstate runs it longer */
    sg_actor_execute((mxu + vpu) * sg_host_get_pstate_speed(c->host, 0));
    if (!trace_wants(c->run->trace, TRACE_UNITS))
        return;
    char args[96] = ""; /* kept by a trace of steps only (units merge spans) */
    if (trace_wants(c->run->trace, TRACE_STEPS))
        snprintf(args, sizeof args, "\"step\": %lld, \"steps\": %lld", (long long)step,
                 (long long)n);
    const char *name = task->op->name;
    if (mxu > 0)
        eng_unit(task, ENG_TID_MXU(c->core), "mxu", name, t0, t0 + mxu, 0, args);
    if (vpu > 0)
        eng_unit(task, ENG_TID_VPU(c->core), "vpu", name, t0 + mxu, eng_now(), 0, args);
}

/* Once per grid step (or run of steps): the progress line, an interrupt. */
static void step_begins(struct eng_task *task)
{
    progress_add(task->core->run->progress, task->st.steps - task->steps_shown);
    task->steps_shown = task->st.steps;
    eng_stop_if_interrupted();
}

static void ex_delay(void *ex, double s)
{
    step_begins(ex);
    if (s > 0)
        sg_actor_sleep_for(s);
}

/* A whole stream with two sleeps, not four: the first delay runs into the
 * DMAs' latency, and the DMAs are waited before the middle delay is over
 * (the wait ends at the later of the two), the last delay after it. */
static void ex_stream(void *ex, int n, const bool *in, const uint64_t *bytes, const int *operand,
                      const struct pl_work *w, int64_t step, int64_t nsteps, double pre_s,
                      double mid_s, double post_s)
{
    struct eng_task *task = ex;
    struct eng_dma *d[PL_MAX_OPERANDS];
    TPU_ASSERT(n <= PL_MAX_OPERANDS, "a stream of %d DMAs", n);
    step_begins(task);
    eng_dma_stream_start(task, eng_now() + pre_s, n, in, bytes, operand, d);
    ex_compute(ex, w, step, nsteps);
    double deadline = eng_now() + mid_s;
    for (int i = 0; i < n; i++)
        eng_dma_wait_from(task, d[i], deadline);
    double end = (eng_now() > deadline ? eng_now() : deadline) + post_s;
    if (end > eng_now())
        sg_actor_sleep_until(end);
}

const struct pl_exec_ops eng_pallas_ops = {.dma_start = ex_dma_start, .dma_wait = ex_dma_wait,
                                           .compute = ex_compute, .delay = ex_delay,
                                           .dma_sync = ex_dma_sync, .stream = ex_stream};

/* A kernel whose compute covers its DMAs at the HBM's full rate but not at what the
 * HBM leaves it beside its chip's collectives (their transfers on every link both
 * ways): beside them, some of its steps turn DMA-bound. Fast fidelity's runs of
 * steps (one DMA per operand for the whole run, kernels/pallas_fast.c) overlap
 * all the run's DMAs with all its compute; step by step, each step's fetch
 * waits behind the next step's prefetch on the shared HBM and the DMAs idle
 * while a compute-bound step runs. A v5e 16x16 matmul (blocks 512 x 1024 x
 * 1024: 3 MiB a step, 6.4 us of compute; 819 GB/s alone, 477 GB/s beside an
 * all-gather) took 3.10 ms coalesced beside a weight gather against 3.75 ms
 * step by step (tests/unit/test_coll.c); multislice_v5e_dp 1.25 % short. */
static bool near_hbm_bound(const struct pl_script *s, const struct chip_params *ch)
{
    struct pl_stats st = {0};
    pl_script_stats(s, &st);
    double work_s = st.mxu_s + st.vpu_s + st.overhead_s;
    double full_Bps = ch->hbm_bw_Bps * ch->hbm_efficiency;
    double left_Bps = full_Bps - 2.0 * ch->ici_links * ici_link_Bps(ch);
    return work_s >= st.hbm_bytes / full_Bps &&
           (left_Bps <= 0 || work_s < st.hbm_bytes / left_Bps);
}

/* The cores of a chip that have grid steps of 'call' (a parallel prefix with
 * fewer points than cores leaves some idle). */
static int busy_cores(const struct pl_call *call, int ncores)
{
    int n = 0;
    for (int k = 0; k < ncores; k++) {
        int64_t b, e;
        pl_core_range(call, k, ncores, &b, &e);
        n += b < e;
    }
    return n;
}

void eng_run_pallas(struct eng_task *task, const struct pl_call *call, struct pl_script **script)
{
    struct eng_core *c = task->core;
    const struct cfg_scenario *sc = c->run->sc;
    int ncores = sc->chip.megacore ? sc->chip.cores : 1;
    int core = sc->chip.megacore ? c->core : 0;
    int64_t b, e;
    pl_core_range(call, core, ncores, &b, &e);
    task->busy_cores = busy_cores(call, ncores);
    static const char *const vmem[] = {"VMEM TC0 (bytes)", "VMEM TC1 (bytes)", "VMEM TC2 (bytes)",
                                       "VMEM TC3 (bytes)", "VMEM TC4 (bytes)", "VMEM TC5 (bytes)",
                                       "VMEM TC6 (bytes)", "VMEM TC7 (bytes)"}; /* (up to 8 cores) */
    TPU_ASSERT(c->core < 8, "core %d", c->core);
    const char *name = vmem[c->core];
    trace_counter(c->run->trace, TRACE_UNITS, c->chip, name, eng_now(),
                  (double)pl_vmem_bytes(call, &sc->chip));
    bool fast = sc->fidelity == CFG_FIDELITY_FAST;
    /* exact fidelity: a script would hold every step (and the walk is cheap
     * beside the step's own activities) */
    if (script && fast && pl_scriptable(call)) {
        if (!*script)
            *script = pl_record(call, &sc->chip, b, e, fast);
        int slot = (int)(script - c->run->prog.scripts[task->opi]);
        if (!eng_memo_run(task, slot, *script)) {
            /* beside collectives a near-bound kernel runs (and is measured) step by
             * step; its memo's later runs in the same overlap take that time */
            bool steps = eng_memo_chip_colls(task) && near_hbm_bound(*script, &sc->chip);
            struct pl_exec ex = {&eng_pallas_ops, task, !steps};
            eng_memo_begin(task, slot);
            if (steps)
                pl_run(call, &sc->chip, b, e, &ex, &task->st);
            else
                pl_replay(*script, &ex, &task->st);
            eng_memo_end(task);
        }
    } else {
        eng_run_pallas_steps(task, call, b, e);
    }
    trace_counter(c->run->trace, TRACE_UNITS, c->chip, name, eng_now(), 0);
}

void eng_run_pallas_steps(struct eng_task *task, const struct pl_call *call, int64_t begin,
                          int64_t end)
{
    const struct cfg_scenario *sc = task->core->run->sc;
    struct pl_exec ex = {&eng_pallas_ops, task, sc->fidelity == CFG_FIDELITY_FAST};
    pl_run(call, &sc->chip, begin, end, &ex, &task->st);
}

