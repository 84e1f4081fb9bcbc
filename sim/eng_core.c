/* sim/eng_core.c -- TensorCore actors. A core actor walks the workload in
 * groups: an op plus the following ops marked overlap: true run concurrently
 * (extra actors on the same core), then every core meets at a barrier. Each
 * op runs through its row's runner (sim/op_table.h) and is accounted for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "sim/engine.h"

static double now(void)
{
    return simgrid_get_clock();
}

static void accumulate(struct eng_task *task, double t0, double t1)
{
    struct summary_op *o = &task->core->run->res[task->opi];
    if (o->cores == 0 || t0 < o->start_s)
        o->start_s = t0;
    if (t1 > o->end_s)
        o->end_s = t1;
    o->cores++;
    o->flops += task->st.flops;
    o->vpu_flops += task->st.vpu_flops;
    o->transcendentals += task->st.transcendentals;
    o->hbm_bytes += task->st.hbm_bytes;
    o->grid_steps += task->st.steps;
    o->compute_steps += task->st.compute_steps;
    o->dmas += task->st.dmas;
    o->coalesced_runs += task->st.coalesced_runs;
    o->mxu_s += task->st.mxu_s;
    o->vpu_s += task->st.vpu_s;
    o->overhead_s += task->st.overhead_s;
    if (task->st.vmem_bytes > o->vmem_peak_bytes)
        o->vmem_peak_bytes = task->st.vmem_bytes;
}

void eng_task_run(struct eng_task *task)
{
    double t0 = now();
    op_row(task->op->kind)->run(task);
    double t1 = now();
    struct eng_core *c = task->core;
    char args[64];
    snprintf(args, sizeof args, "\"grid_steps\": %lld", (long long)task->st.steps);
    trace_span(c->run->trace, c->chip, ENG_TID_TC(c->core), op_kind_name(task->op->kind),
               task->op->name, t0, t1, args);
    accumulate(task, t0, t1);
}

/* Runs one op of the workload in its own actor (for overlap: true). */
static void op_actor_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct eng_task *task = sg_actor_self_get_data();
    eng_task_run(task);
}

static void run_group(struct eng_core *c, int first, int last)
{
    struct eng_run *r = c->run;
    int n = last - first;
    struct eng_task *ctx = xcalloc((size_t)n, sizeof *ctx);
    sg_actor_t *helpers = xcalloc((size_t)n, sizeof *helpers);
    for (int i = 0; i < n; i++) {
        ctx[i] = (struct eng_task){.core = c, .op = &r->sc->ops[first + i], .opi = first + i,
                                  .flow_t = -1};
        ctx[i].done_mb = eng_task_mailbox(c, first + i);
    }
    for (int i = 1; i < n; i++) {
        char name[48];
        snprintf(name, sizeof name, "tc%d.op%d", c->gid, first + i);
        helpers[i] = sg_actor_init(name, c->host);
        sg_actor_set_data(helpers[i], &ctx[i]);
        sg_actor_ref(helpers[i]);
        sg_actor_start(helpers[i], op_actor_main, 0, NULL);
    }
    eng_task_run(&ctx[0]);
    for (int i = 1; i < n; i++) {
        sg_actor_join(helpers[i], -1);
        sg_actor_unref(helpers[i]);
    }
    free(helpers);
    free(ctx);
}

void eng_core_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct eng_core *c = sg_actor_self_get_data();
    const struct cfg_scenario *sc = c->run->sc;
    for (int i = 0; i < sc->nops;) {
        int j = i + 1;
        while (j < sc->nops && sc->ops[j].overlap)
            j++;
        eng_stop_if_interrupted();
        eng_barrier_wait(c, c->run->barrier, "the barrier between ops");
        run_group(c, i, j);
        i = j;
    }
    eng_barrier_wait(c, c->run->barrier, "the barrier at the end");
    c->done = true;
}
