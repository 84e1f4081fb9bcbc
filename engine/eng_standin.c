/* engine/eng_standin.c -- all-to-alls stood in by their lone runs (see
 * engine/spmd.h and engine/engine.h). Before SimGrid starts, each stand-in
 * op (a distinct one once) runs alone on every chip of the slice in a forked
 * child; its time and its work per chip come back. In the folded run the op
 * meets the other chips at its device barrier, as a collective does, then
 * takes that time and adds that work. Every chip of such a slice is alike,
 * and the barrier starts the op at one instant everywhere: when nothing else
 * runs on any chip meanwhile (its links and HBM are its own), its time is
 * its lone run's, to the rounding of SimGrid's clock. If something does, the
 * run says so (a warning: the stand-in did not share the links or the HBM). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/xalloc.h"
#include "engine/engine.h"
#include "engine/sim.h"
#include "engine/sim_child.h"
#include "engine/spmd.h"

/* One stand-in: its lone run's time and one chip's work (core 0's). */
struct eng_standin {
    bool on;
    double dur_s;          /* from the device barrier to the end */
    struct pl_stats st;    /* one chip's */
    double ici_bytes, latency_s; /* one chip's */
    bool disturbed;        /* another op ran while it stood in */
};

struct eng_standin_state {
    struct eng_standin *op; /* per op */
    int nops;
    int running;            /* op instances running, every chip and core */
    int *op_running;        /* per op */
    int active;             /* the op standing in now (its chips asleep), or -1 */
    double active_end;      /* when their sleep ends */
};

/* What the child sends back: its code and the op's summary figures. */
struct lone_res {
    int rc;
    double time_s, flops, vpu_flops, transcendentals, hbm_bytes, useful_bytes, ici_bytes;
    double mxu_s, vpu_s, overhead_s, latency_s;
    int64_t steps, compute_steps, dmas, coalesced_runs;
    uint64_t vmem_bytes;
    char err[512];
};

struct lone_args {
    const struct cfg_scenario *sc;
    const struct sim_opts *o;
    int op;
};

/* In the child: op 'op' alone on every chip of the slice, no trace. */
static void lone_body(void *arg, void *out)
{
    const struct lone_args *a = arg;
    struct lone_res *res = out;
    const struct cfg_scenario *sc = a->sc;
    struct cfg_scenario lone = *sc; /* shallow: the child exits without freeing it */
    struct op op = sc->ops[a->op];
    op.overlap = false;
    lone.ops = &op, lone.nops = 1, lone.src = &sc->src[a->op];
    lone.model = NULL, lone.serve = NULL, lone.program_json = NULL;
    memset(&lone.faults, 0, sizeof lone.faults);
    lone.all_chips = true;
    lone.plan.sim = lone.topo, lone.plan.sim_mult = 1, lone.plan.tuned = NULL;
    lone.plan.sim_dirs = 0; /* every chip: the TORUS cluster */
    struct diag *d = diag_new();
    struct graph_draft dr = {0};
    graph_draft_op(&dr, -1, op.name, true, &lone.src->loc, lone.src->path, false);
    int order[1];
    res->rc = graph_finish(&dr, &lone.graph, order, d) == 0 ? 0 : 2;
    if (res->rc == 0) {
        struct sim_opts so = {.sg_argc = a->o->sg_argc, .sg_argv = a->o->sg_argv,
                              .trace_set = true, .trace = TRACE_NONE,
                              .max_steps = a->o->max_steps,
                              .max_memory_bytes = a->o->max_memory_bytes, .max_trace_events = 1};
        struct summary s = {0};
        res->rc = sim_run(&lone, &so, &s, d);
        if (res->rc == 0 && s.nops == 1) {
            const struct summary_op *o = &s.ops[0];
            res->time_s = o->time_s, res->flops = o->flops, res->vpu_flops = o->vpu_flops;
            res->transcendentals = o->transcendentals, res->hbm_bytes = o->hbm_bytes;
            res->useful_bytes = o->useful_bytes, res->ici_bytes = o->ici_bytes;
            res->mxu_s = o->mxu_s, res->vpu_s = o->vpu_s, res->overhead_s = o->overhead_s;
            res->latency_s = o->latency_s, res->steps = o->grid_steps;
            res->compute_steps = o->compute_steps, res->dmas = o->dmas;
            res->coalesced_runs = o->coalesced_runs, res->vmem_bytes = o->vmem_peak_bytes;
        }
        summary_fini(&s);
        graph_fini(&lone.graph);
    }
    graph_draft_fini(&dr);
    if (diag_count(d))
        snprintf(res->err, sizeof res->err, "%s", diag_message(d, 0));
    diag_free(d); /* the child frees what it made: valgrind checks the child's leaks too */
}

/* The figures of a lone run turned into one chip's work: the summary's sums
 * over the slice's N chips divided by N; its units' busy times (per core
 * of an instance: sums over the N x C cores divided by N x C) times C, on
 * core 0; its latency (the sum over the chips divided by N) as it is. */
static void per_chip(const struct cfg_scenario *sc, const struct lone_res *l,
                     struct eng_standin *s)
{
    double n = sc->topo.nchips, c = sc->chip.cores;
    s->dur_s = l->time_s;
    s->st = (struct pl_stats){.steps = l->steps / sc->topo.nchips,
                              .compute_steps = l->compute_steps / sc->topo.nchips,
                              .dmas = l->dmas / sc->topo.nchips,
                              .hbm_bytes = l->hbm_bytes / n,
                              .useful_bytes = l->useful_bytes / n,
                              .flops = l->flops / n,
                              .vpu_flops = l->vpu_flops / n,
                              .transcendentals = l->transcendentals / n,
                              .mxu_s = l->mxu_s * c,
                              .vpu_s = l->vpu_s * c,
                              .overhead_s = l->overhead_s * c,
                              .vmem_bytes = l->vmem_bytes,
                              .coalesced_runs = l->coalesced_runs / sc->topo.nchips};
    s->ici_bytes = l->ici_bytes / n;
    s->latency_s = l->latency_s;
}

/* ---- lone runs kept between runs (sim_opts.standin_dir) ----
 * A lone run depends on the op and on the scenario's chip, slice, mesh,
 * options and SimGrid flags alone (lone_body), so a sweep's points that
 * share those (the planner's remat policies of one mesh, batch and slice)
 * share it. Its key is those inputs' bytes, pointers as they are: static
 * strings (the xla flags' sync names) are equal pointers in every point, as
 * the points fork from one process; a heap pointer could be equal in two
 * points for different contents, so none may decide a lone run's time: the
 * op's names are cleared and ops with replica groups (heap arrays) are never
 * kept. A new pointer field in these structs must be cleared here too. A file
 * holds the key and the result, and is used only when its key is the same
 * byte for byte. */

struct key_buf {
    unsigned char *b;
    size_t n, cap;
};

static void key_add(struct key_buf *k, const void *p, size_t n)
{
    xgrow(&k->b, &k->cap, k->n + n, 1);
    memcpy(k->b + k->n, p, n);
    k->n += n;
}

/* The inputs of op 'i''s lone run, as bytes. */
static void lone_key(const struct cfg_scenario *sc, const struct sim_opts *o, int i,
                     struct key_buf *k)
{
    static const char magic[8] = "tpusimS1";
    key_add(k, magic, sizeof magic);
    struct op op = sc->ops[i];
    op.name = op.op_name = NULL, op.overlap = false;
    key_add(k, &op, sizeof op);
    key_add(k, &sc->chip, sizeof sc->chip);
    key_add(k, &sc->topo, sizeof sc->topo);
    key_add(k, &sc->dcn, sizeof sc->dcn);
    key_add(k, &sc->has_mesh, sizeof sc->has_mesh);
    key_add(k, &sc->mesh, sizeof sc->mesh);
    key_add(k, &sc->kernel_memo, sizeof sc->kernel_memo);
    key_add(k, &sc->fidelity, sizeof sc->fidelity);
    key_add(k, &sc->trace_level, sizeof sc->trace_level);
    key_add(k, &sc->trace_level_set, sizeof sc->trace_level_set);
    key_add(k, &sc->seed, sizeof sc->seed);
    key_add(k, &sc->max_steps, sizeof sc->max_steps);
    key_add(k, &sc->xla, sizeof sc->xla);
    key_add(k, &sc->plan.sim_slices, sizeof sc->plan.sim_slices);
    key_add(k, &o->max_steps, sizeof o->max_steps);
    key_add(k, &o->max_memory_bytes, sizeof o->max_memory_bytes);
    for (int a = 0; a < o->sg_argc; a++)
        key_add(k, o->sg_argv[a], strlen(o->sg_argv[a]) + 1);
}

/* FNV-1a of the key: the file's name. */
static char *key_path(const char *dir, const struct key_buf *k)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t j = 0; j < k->n; j++)
        h = (h ^ k->b[j]) * 1099511628211ull;
    return xasprintf("%s/lone-%016llx.bin", dir, (unsigned long long)h);
}

/* The kept result of the lone run with key 'k' into '*res'; false if none. */
static bool lone_find(const char *path, const struct key_buf *k, struct lone_res *res)
{
    size_t len = 0;
    char *f = fs_read_all(path, k->n + sizeof *res + 1, &len);
    bool ok = f && len == k->n + sizeof *res && memcmp(f, k->b, k->n) == 0;
    if (ok)
        memcpy(res, f + k->n, sizeof *res);
    free(f);
    return ok;
}

/* Keeps a lone run's result (a failure to write only loses the reuse). */
static void lone_keep(const char *path, const struct key_buf *k, const struct lone_res *res)
{
    unsigned char *f = xmalloc(k->n + sizeof *res);
    memcpy(f, k->b, k->n);
    memcpy(f + k->n, res, sizeof *res);
    (void)fs_write_all(path, f, k->n + sizeof *res);
    free(f);
}

/* Op 'i''s lone run into '*res' (kept or found again in o->standin_dir); 0 or the
 * child's code. */
static int lone_run(const struct cfg_scenario *sc, const struct sim_opts *o, int i,
                    struct lone_res *res)
{
    struct key_buf k = {0};
    char *path = NULL;
    if (o->standin_dir && sc->ops[i].u.coll.nreplica == 0) { /* (no heap arrays in the key) */
        lone_key(sc, o, i, &k);
        path = key_path(o->standin_dir, &k);
        if (lone_find(path, &k, res)) {
            free(path);
            free(k.b);
            return 0;
        }
    }
    struct lone_args a = {sc, o, i};
    int rc = sim_child_run(lone_body, &a, res, sizeof *res, "stand-in's lone run", res->err,
                           sizeof res->err);
    if (rc == 0 && res->rc != 0)
        rc = res->rc;
    if (rc == 0 && path)
        lone_keep(path, &k, res);
    free(path);
    free(k.b);
    return rc;
}

/* An op whose lone run is op 'j''s (the same all-to-all under another name). */
static bool same_op(const struct op *a, const struct op *b)
{
    return a->kind == b->kind && memcmp(&a->u.coll, &b->u.coll, sizeof a->u.coll) == 0;
}

int eng_standin_measure(const struct cfg_scenario *sc, const struct sim_opts *o,
                        struct eng_standin_state **out, struct diag *d)
{
    *out = NULL;
    struct eng_standin_state *ss = NULL;
    for (int i = 0; i < sc->nops; i++) {
        if (!spmd_standin(sc, i))
            continue;
        if (!ss) {
            ss = xcalloc(1, sizeof *ss);
            ss->op = xcalloc((size_t)sc->nops, sizeof *ss->op);
            ss->op_running = xcalloc((size_t)sc->nops, sizeof *ss->op_running);
            ss->nops = sc->nops;
            ss->active = -1;
            *out = ss;
        }
        int j = 0;
        while (j < i && !(ss->op[j].on && same_op(&sc->ops[j], &sc->ops[i])))
            j++;
        if (j < i) {
            ss->op[i] = ss->op[j];
            continue;
        }
        struct lone_res *res = xcalloc(1, sizeof *res);
        int rc = lone_run(sc, o, i, res);
        if (rc != 0) {
            diag_error(d, NULL, sc->ops[i].name, "its lone run on every chip (a stand-in: "
                       "engine/spmd.h) failed: %s", res->err[0] ? res->err : "?");
            free(res);
            return rc;
        }
        ss->op[i].on = true;
        per_chip(sc, res, &ss->op[i]);
        free(res);
    }
    return 0;
}

void eng_standin_free(struct eng_standin_state *ss)
{
    if (!ss)
        return;
    free(ss->op);
    free(ss->op_running);
    free(ss);
}

void eng_standin_task_start(struct eng_task *task)
{
    struct eng_standin_state *ss = task->core->run->standin;
    if (!ss)
        return;
    ss->running++;
    ss->op_running[task->opi]++;
    if (ss->active >= 0 && ss->active != task->opi && eng_now() < ss->active_end)
        ss->op[ss->active].disturbed = true;
}

void eng_standin_task_end(struct eng_task *task)
{
    struct eng_standin_state *ss = task->core->run->standin;
    if (!ss)
        return;
    ss->running--;
    ss->op_running[task->opi]--;
}

bool eng_standin_run(struct eng_task *task)
{
    struct eng_run *r = task->core->run;
    struct eng_standin_state *ss = r->standin;
    if (!ss || !ss->op[task->opi].on)
        return false;
    struct eng_standin *s = &ss->op[task->opi];
    eng_barrier_wait(task, r->prog.op_barrier[task->opi], "the device barrier at kernel start");
    /* at the barrier's instant every chip's instance of it runs: anything else is beside it */
    if (ss->running != ss->op_running[task->opi] ||
        (ss->active >= 0 && ss->active != task->opi && eng_now() < ss->active_end))
        s->disturbed = true;
    ss->active = task->opi;
    ss->active_end = eng_now() + s->dur_s;
    sg_actor_sleep_for(s->dur_s);
    struct pl_stats *st = &task->st;
    st->steps += s->st.steps, st->compute_steps += s->st.compute_steps, st->dmas += s->st.dmas;
    st->hbm_bytes += s->st.hbm_bytes, st->useful_bytes += s->st.useful_bytes;
    st->flops += s->st.flops, st->vpu_flops += s->st.vpu_flops;
    st->transcendentals += s->st.transcendentals;
    st->mxu_s += s->st.mxu_s, st->vpu_s += s->st.vpu_s, st->overhead_s += s->st.overhead_s;
    st->coalesced_runs += s->st.coalesced_runs;
    if (s->st.vmem_bytes > st->vmem_bytes)
        st->vmem_bytes = s->st.vmem_bytes;
    r->stats.res[task->opi].ici_bytes += s->ici_bytes;
    r->stats.res[task->opi].latency_s += s->latency_s;
    return true;
}

void eng_standin_report(const struct eng_run *r, FILE *to)
{
    const struct eng_standin_state *ss = r->standin;
    for (int i = 0; ss && to && i < ss->nops; i++)
        if (ss->op[i].disturbed)
            fprintf(to, "warning: op '%s' ran as a stand-in (its lone run on every chip, "
                        "engine/spmd.h) while other ops ran: its time is approximate "
                        "(options.all_chips: true simulates it with every chip)\n",
                    r->sc->ops[i].name);
}

bool eng_standin_alone(const struct cfg_scenario *sc, const struct eng_standin_state *ss)
{
    struct spmd_hb *hb = spmd_hb_new(sc);
    bool alone = hb != NULL;
    for (int i = 0; alone && ss && i < ss->nops; i++)
        alone = !ss->op[i].on || spmd_hb_alone(hb, i);
    spmd_hb_free(hb);
    return alone;
}

int eng_standin_disturbed(const struct eng_run *r)
{
    int n = 0;
    for (int i = 0; r->standin && i < r->standin->nops; i++)
        n += r->standin->op[i].disturbed;
    return n;
}

int eng_standin_count(const struct eng_run *r)
{
    int n = 0;
    for (int i = 0; r->standin && i < r->standin->nops; i++)
        n += r->standin->op[i].on;
    return n;
}
