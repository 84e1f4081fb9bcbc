/* engine/eng_core.c -- the program on each chip (workload/graph.h gives its order and
 * dependencies). A TensorCore runs one kernel at a time: its compute stream
 * (eng_core_main, one actor per core) runs the compute ops in program order,
 * each once what it waits for is done. Collectives, remote copies and copies
 * are asynchronous, like XLA's start/done pairs: the chip's async stream
 * (eng_async_main) walks the same program and starts each async op, in
 * program order, as soon as what it waits for is done (and the previous
 * instance of the same op finished); the op then runs in actors of its own
 * beside the compute, sharing the HBM and the links through SimGrid. An op
 * instance is done on a chip when every core of the chip finished it; the
 * cores of a chip share a condition variable that every completion wakes.
 * Each op runs through its row's runner (config/op_table.h) and is accounted
 * for per instance. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fmt.h"
#include "base/xalloc.h"
#include "engine/engine.h"

/* ---- completion of op instances ---- */

static bool bit(const uint8_t *bits, int64_t i)
{
    return (bits[i >> 3] >> (i & 7)) & 1;
}

/* True if instance 'inst' of op 'op' finished on every core of 'chip'. */
static bool done_on_chip(const struct eng_run *r, int chip, int op, int64_t inst)
{
    int cores = r->sc->chip.cores;
    int64_t b = r->prog.inst_off[op] + inst;
    for (int k = 0; k < cores; k++)
        if (!bit(r->hw.cores[chip * cores + k].done_bits, b))
            return false;
    return true;
}

/* The first of 'w' not finished on 'chip', or -1. */
static int pending(const struct eng_run *r, int chip, const struct graph_waits *w)
{
    for (int i = 0; i < w->n; i++)
        if (!done_on_chip(r, chip, w->op[i], w->inst[i]))
            return i;
    return -1;
}

/* Blocks the calling actor until every instance of 'w' finished on 'chip'. */
static void wait_for(struct eng_run *r, int chip, const struct graph_waits *w, char *note,
                     const char *who)
{
    struct eng_chip *ch = &r->hw.chips[chip];
    sg_mutex_lock(ch->mutex);
    for (int i; (i = pending(r, chip, w)) >= 0;) {
        /* "WHO waiting for op 'NAME' (instance N) to finish", cut to the note */
        char buf[2 * ENG_NOTE_BYTES + 64], *end = buf + ENG_NOTE_BYTES - 1;
        char *p = fmt_str(fmt_str(buf, who, end), " waiting for op '", end);
        p = fmt_str(fmt_str(p, r->sc->ops[w->op[i]].name, end), "' (instance ", end);
        p = fmt_str(fmt_i64(p, (long long)w->inst[i]), ") to finish", end + 24);
        *(p < end ? p : end) = '\0';
        memcpy(note, buf, (size_t)((p < end ? p : end) - buf) + 1);
        sg_cond_wait(ch->changed, ch->mutex);
    }
    note[0] = '\0';
    sg_mutex_unlock(ch->mutex);
}

/* Marks instance 'inst' of 'op' finished on core 'c' and wakes its chip. */
static void mark_done(struct eng_core *c, int op, int64_t inst)
{
    struct eng_run *r = c->run;
    struct eng_chip *ch = &r->hw.chips[c->chip];
    int64_t b = r->prog.inst_off[op] + inst;
    sg_mutex_lock(ch->mutex);
    c->done_bits[b >> 3] |= (uint8_t)(1u << (b & 7));
    sg_cond_notify_all(ch->changed);
    sg_mutex_unlock(ch->mutex);
}

/* ', "op_name": "NAME"' at 'p' (before 'end'), JSON-escaped: '"' and '\\'
 * behind a backslash, bytes above 0x7f as '?' (loading kept control
 * characters out). */
static void trace_op_name(char *p, const char *name, const char *end)
{
    p = fmt_lit(p, ", \"op_name\": \"");
    for (const char *s = name; *s && p + 4 < end; s++) {
        if (*s == '"' || *s == '\\')
            *p++ = '\\';
        *p++ = (unsigned char)*s > 0x7f ? '?' : *s;
    }
    p[0] = '"', p[1] = '\0';
}

/* ---- accounting ---- */

static void accumulate(struct eng_task *task, double t0, double t1)
{
    struct eng_run *r = task->core->run;
    struct summary_op *o = &r->stats.res[task->opi];
    if (o->cores == 0 || t0 < o->start_s)
        o->start_s = t0;
    if (t1 > o->end_s)
        o->end_s = t1;
    int64_t b = r->prog.inst_off[task->opi] + task->inst;
    if (t1 - t0 > r->stats.inst_dur[b])
        r->stats.inst_dur[b] = t1 - t0;
    if (task->core->chip == 0) {
        int cores = r->sc->chip.cores;
        struct summary_core_work *w = &r->stats.core_op[task->opi * cores + task->core->core];
        w->time_s += t1 - t0;
        w->mxu_s += task->st.mxu_s, w->vpu_s += task->st.vpu_s;
        w->overhead_s += task->st.overhead_s, w->hbm_bytes += task->st.hbm_bytes;
        if (r->stats.chip0_t1[b] == 0 || t0 < r->stats.chip0_t0[b])
            r->stats.chip0_t0[b] = t0;
        if (t1 > r->stats.chip0_t1[b])
            r->stats.chip0_t1[b] = t1;
    }
    o->cores++;
    o->flops += task->st.flops;
    o->vpu_flops += task->st.vpu_flops;
    o->transcendentals += task->st.transcendentals;
    o->hbm_bytes += task->st.hbm_bytes;
    o->useful_bytes += task->st.useful_bytes;
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

/* A kernel ends later by the TensorCore time the reductions beside it took
 * (eng_tc_reduce), including those taken while it pays. */
static void pay_tc_debt(struct eng_core *c)
{
    while (c->tc_debt_s > 0) {
        double d = c->tc_debt_s;
        c->tc_debt_s = 0;
        sg_actor_sleep_for(d);
    }
    c->computing = false;
}

void eng_tc_reduce(struct eng_core *c, double s)
{
    if (c->computing && s > 0)
        c->tc_debt_s += s;
}

void eng_task_run(struct eng_task *task)
{
    double t0 = eng_now();
    const struct op_row *row = op_row(task->op->kind);
    eng_standin_task_start(task);
    eng_memo_task_start(task);
    struct eng_core *c = task->core;
    c->computing |= !row->async;
    eng_runner(task->op->kind)(task);
    if (!row->async) /* (the chip is still shared while it pays: eng_memo_chip_shared) */
        pay_tc_debt(c);
    eng_memo_task_end(task);
    eng_standin_task_end(task);
    double t1 = eng_now();
    char args[128 + 2 * OP_MAX_OP_NAME], *p = fmt_i64(fmt_lit(args, "\"grid_steps\": "),
                                                       (long long)task->st.steps);
    p = fmt_i64(fmt_lit(p, ", \"instance\": "), (long long)task->inst);
    p = fmt_str(fmt_lit(p, ", \"category\": \""), row->category, args + 120);
    p[0] = '"', p[1] = '\0';
    if (task->op->op_name)
        trace_op_name(p + 1, task->op->op_name, args + sizeof args);
    trace_span(c->run->trace, c->chip, row->async ? ENG_TID_ASYNC(c->core) : ENG_TID_TC(c->core),
               row->name, task->op->name, t0, t1, args);
    accumulate(task, t0, t1);
}

/* Arrows, on chip 0's trace, from the end of each op an op instance waited
 * for (its after: list) to its start. */
static void trace_deps(struct eng_core *c, int op, const struct graph_waits *w)
{
    struct eng_run *r = c->run;
    if (c->chip != 0 || c->core != 0 || !r->sc->graph.node[op].has_after)
        return;
    int to = op_row(r->sc->ops[op].kind)->async ? ENG_TID_ASYNC(0) : ENG_TID_TC(0);
    for (int i = 0; i < w->n; i++) {
        int from = op_row(r->sc->ops[w->op[i]].kind)->async ? ENG_TID_ASYNC(0) : ENG_TID_TC(0);
        trace_flow(r->trace, TRACE_OPS, "after", 0, from,
                   r->stats.chip0_t1[r->prog.inst_off[w->op[i]] + w->inst[i]], 0, to, eng_now());
    }
}

static void task_init(struct eng_task *task, struct eng_core *c, int op, int64_t inst)
{
    *task = (struct eng_task){
        .core = c, .op = &c->run->sc->ops[op], .opi = op, .inst = inst, .flow_t = -1};
    task->note = op_row(task->op->kind)->async ? c->async_waiting : c->waiting;
    task->done_mb = eng_task_mailbox(c, op);
}

/* ---- the compute stream of one core ---- */

static void visit_compute(void *ctx, int op, int64_t inst, const struct graph_waits *waits)
{
    struct eng_core *c = ctx;
    if (op_row(c->run->sc->ops[op].kind)->async)
        return;
    eng_stop_if_interrupted();
    wait_for(c->run, c->chip, waits, c->waiting, "its compute stream");
    trace_deps(c, op, waits);
    struct eng_task task;
    task_init(&task, c, op, inst);
    eng_task_run(&task);
    mark_done(c, op, inst);
}

void eng_core_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct eng_core *c = sg_actor_self_get_data();
    graph_walk(&c->run->sc->graph, visit_compute, c);
    c->done = true;
}

/* ---- the async stream of one chip ---- */

static void async_task_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct eng_task *task = sg_actor_self_get_data();
    eng_task_run(task);
    task->core->async_running--;
    mark_done(task->core, task->opi, task->inst);
    free(task);
}

static void visit_async(void *ctx, int op, int64_t inst, const struct graph_waits *waits)
{
    struct eng_core *c0 = ctx;
    struct eng_run *r = c0->run;
    if (!op_row(r->sc->ops[op].kind)->async)
        return;
    eng_stop_if_interrupted();
    struct graph_waits s = *waits;
    if (inst > 0 && s.n < GRAPH_MAX_WAITS) { /* one instance of an op at a time */
        s.op[s.n] = op;
        s.inst[s.n++] = inst - 1;
    }
    wait_for(r, c0->chip, &s, r->hw.chips[c0->chip].waiting, "its async stream");
    trace_deps(c0, op, waits);
    int cores = r->sc->chip.cores;
    const struct op_row *row = op_row(r->sc->ops[op].kind);
    for (int k = 0; k < cores; k++) {
        struct eng_core *c = &r->hw.cores[c0->chip * cores + k];
        if (k > 0 && row->core0) { /* its runner returns at once: no actor for it */
            struct eng_task task;
            task_init(&task, c, op, inst);
            eng_task_run(&task);
            mark_done(c, op, inst);
            continue;
        }
        struct eng_task *task = xmalloc(sizeof *task);
        task_init(task, c, op, inst);
        c->async_running++;
        char name[64];
        char *p = fmt_i64(fmt_lit(name, "tc"), c->gid);
        *fmt_i64(fmt_lit(fmt_i64(fmt_lit(p, ".op"), op), "."), (long long)inst) = '\0';
        sg_actor_t a = sg_actor_init(name, c->host);
        sg_actor_set_data(a, task);
        sg_actor_start(a, async_task_main, 0, NULL);
    }
}

void eng_async_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct eng_core *c = sg_actor_self_get_data();
    graph_walk(&c->run->sc->graph, visit_async, c);
    c->run->hw.chips[c->chip].async_done = true;
}
