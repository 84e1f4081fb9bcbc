/* engine/eng_memo.c -- kernel memos (see engine/engine.h): a replay of a
 * pallas_call's script, quiet or beside the same collectives as far along
 * (its overlap), is measured once, with the unit spans it put on the trace,
 * and later replays of the same script in the same overlap take that time
 * without issuing its DMAs and executions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "engine/engine.h"

#define ENG_OVERLAP_MAX 4        /* collectives an overlap lists (more: no memo) */
#define ENG_OVERLAP_TOL_S 1e-9   /* start offsets that match: the time error it allows */

/* The async collectives running on a chip (engine/engine.h: a memo's "overlap"). */
struct eng_overlap {
    int n, nlisted;              /* running, and listed below (fewer: no memo until none runs) */
    int op[ENG_OVERLAP_MAX];
    double t0[ENG_OVERLAP_MAX];  /* when each started */
};

struct eng_memo_state {
    struct eng_memo **memos;     /* per op, per call x core (as eng_program.scripts), or NULL
                                    when off */
    int *chip_tasks;             /* per chip: op instances running on it */
    int *chip_colls;             /* per chip: async collectives running on its cores */
    int xchip_tasks;             /* op instances running that move data between chips */
    struct eng_overlap *overlap; /* per chip: the async collectives running on it */
    int *coll_running;           /* per op: its async collective instances running, all chips */
    uint64_t epoch;              /* counts starts of op instances other than compute-stream
                                    kernels */
    uint64_t epoch_before;       /* the epoch before the first such start at epoch_t */
    double epoch_t;              /* when the last such start was */
    sg_sem_t *memo_sem;          /* per core: released to wake its memo sleep */
    int *asleep, nasleep;        /* the cores in a memo sleep, woken at each such start */
    int *asleep_at;              /* per core: its place in 'asleep', or -1 */
    sg_link_t *hbm;              /* per chip: its HBM limiter link (resolved on first use) */
    int *hbm_holders;            /* per chip: memos sleeping on it that hold HBM bandwidth */
    double *hbm_base_Bps;        /* per chip: its limiter's bandwidth without their holds */
    double *hbm_held_Bps;        /* per chip: what they hold */
};

/* One unit span of a measured replay, times from its start. */
struct memo_ev {
    int tid;
    const char *cat, *name; /* static strings or the op's name (lives as long as the run) */
    double t0, t1, bytes; /* (no args: memos run without a trace of steps, the one that shows them) */
};

struct eng_memo {
    bool measured;
    bool measuring;         /* one task measures; the others replay meanwhile */
    double dur_s;
    uint64_t epoch0;        /* while measuring: the epoch at its start */
    double t0;              /* while measuring: its start */
    uint64_t ends;          /* measurements ended (their followers go on) */
    int *fol, nfol;         /* cores that started it at that instant and wait for its end */
    size_t capfol;
    struct memo_ev *ev;
    size_t nev, cap;
    struct eng_overlap ov;  /* the overlap it is for, t0 holding the offsets (start - t0) */
    struct eng_memo *next;  /* the script's memos of other overlaps (the slot's first: none) */
};

#define MEMO_OVERLAPS_MAX 16 /* memos of one script beside collectives (more run for real) */
#define ENG_HOLD_MAX 0.9     /* a memo beside collectives holds less than this share of
                                the HBM left, or runs for real */

static size_t slots(const struct eng_run *r, int op)
{
    return (size_t)(r->prog.kern[op].ncalls * r->sc->chip.cores);
}

/* The memos, their overlaps and the sleeping cores' semaphores. */
static void memo_alloc(struct eng_run *r)
{
    const struct cfg_scenario *sc = r->sc;
    struct eng_memo_state *ms = r->memo;
    int ncores = cfg_engine_chips(sc) * sc->chip.cores;
    ms->memo_sem = xcalloc((size_t)ncores, sizeof *ms->memo_sem);
    ms->asleep = xcalloc((size_t)ncores, sizeof *ms->asleep);
    ms->asleep_at = xcalloc((size_t)ncores, sizeof *ms->asleep_at);
    for (int i = 0; i < ncores; i++) {
        ms->memo_sem[i] = sg_sem_init(0);
        ms->asleep_at[i] = -1;
    }
    ms->memos = xcalloc((size_t)sc->nops, sizeof *ms->memos);
    ms->hbm = xcalloc((size_t)cfg_engine_chips(sc), sizeof *ms->hbm);
    ms->hbm_holders = xcalloc((size_t)cfg_engine_chips(sc), sizeof *ms->hbm_holders);
    ms->hbm_base_Bps = xcalloc((size_t)cfg_engine_chips(sc), sizeof *ms->hbm_base_Bps);
    ms->hbm_held_Bps = xcalloc((size_t)cfg_engine_chips(sc), sizeof *ms->hbm_held_Bps);
    ms->overlap = xcalloc((size_t)cfg_engine_chips(sc), sizeof *ms->overlap);
    ms->coll_running = xcalloc((size_t)sc->nops, sizeof *ms->coll_running);
    for (int i = 0; i < sc->nops; i++)
        if (r->prog.kern[i].ncalls)
            ms->memos[i] = xcalloc(slots(r, i), sizeof *ms->memos[i]);
}

void eng_memo_init(struct eng_run *r, bool on)
{
    const struct cfg_scenario *sc = r->sc;
    r->memo = xcalloc(1, sizeof *r->memo);
    r->memo->chip_tasks = xcalloc((size_t)cfg_engine_chips(sc), sizeof *r->memo->chip_tasks);
    r->memo->chip_colls = xcalloc((size_t)cfg_engine_chips(sc), sizeof *r->memo->chip_colls);
    /* fast fidelity, no step-level trace (its flow arrows and HBM counter
     * need the replay's own activities). The cores of a chip run each kernel
     * together: a megacore pair splits it, and the two devices of a v7 chip
     * each run all of it, starting at the same instant (they run the same
     * program on the same resources, and meet between the calls of an op,
     * eng_run_kernel), so a memo measured with both running stands for both
     * again (tests/run_e2e.sh checks v7 stacks against runs without memos). */
    if (on && sc->fidelity == CFG_FIDELITY_FAST && !trace_wants(r->trace, TRACE_STEPS))
        memo_alloc(r);
}

static void memos_free(struct eng_run *r)
{
    struct eng_memo **memos = r->memo->memos;
    for (int i = 0; memos && i < r->sc->nops; i++) {
        for (size_t j = 0; memos[i] && j < slots(r, i); j++) {
            free(memos[i][j].ev), free(memos[i][j].fol);
            for (struct eng_memo *m = memos[i][j].next, *nx; m; m = nx) {
                nx = m->next;
                free(m->ev), free(m->fol), free(m);
            }
        }
        free(memos[i]);
    }
    free(memos);
}

void eng_memo_fini(struct eng_run *r)
{
    struct eng_memo_state *ms = r->memo;
    if (!ms)
        return;
    memos_free(r);
    free(ms->chip_tasks);
    free(ms->chip_colls);
    free(ms->overlap), free(ms->coll_running);
    free(ms->hbm), free(ms->hbm_holders), free(ms->hbm_base_Bps), free(ms->hbm_held_Bps);
    int ncores = ms->memo_sem ? cfg_engine_chips(r->sc) * r->sc->chip.cores : 0;
    for (int i = 0; i < ncores; i++)
        sg_sem_destroy(ms->memo_sem[i]);
    free(ms->memo_sem);
    free(ms->asleep);
    free(ms->asleep_at);
    free(ms);
    r->memo = NULL;
}

/* A compute-stream kernel: what memos stand for, and what does not disturb
 * another chip's memo. */
static bool plain_kernel(const struct eng_task *task)
{
    const struct op_row *row = op_row(task->op->kind);
    return row->kern && !row->async;
}

/* An async collective that runs on its chip's cores (not a second core's
 * instance of a core-0 collective, which ends at once). */
static bool overlaps(const struct eng_task *task)
{
    const struct op_row *row = op_row(task->op->kind);
    return row->async && row->reach && (!row->core0 || task->core->core == 0);
}

static void overlap_add(struct eng_memo_state *ms, const struct eng_task *task)
{
    struct eng_overlap *o = &ms->overlap[task->core->chip];
    ms->coll_running[task->opi]++;
    if (o->n++ == o->nlisted && o->nlisted < ENG_OVERLAP_MAX) {
        o->op[o->nlisted] = task->opi;
        o->t0[o->nlisted++] = eng_now();
    }
}

static void overlap_drop(struct eng_memo_state *ms, const struct eng_task *task)
{
    struct eng_overlap *o = &ms->overlap[task->core->chip];
    ms->coll_running[task->opi]--;
    o->n--;
    for (int i = 0; i < o->nlisted; i++)
        if (o->op[i] == task->opi) { /* (one instance of an op at a time) */
            for (int j = i + 1; j < o->nlisted; j++)
                o->op[j - 1] = o->op[j], o->t0[j - 1] = o->t0[j];
            o->nlisted--;
            return;
        }
}

void eng_memo_task_start(struct eng_task *task)
{
    struct eng_memo_state *ms = task->core->run->memo;
    ms->chip_tasks[task->core->chip]++;
    if (op_row(task->op->kind)->reach)
        ms->xchip_tasks++;
    if (overlaps(task))
        ms->chip_colls[task->core->chip]++;
    if (ms->overlap && overlaps(task))
        overlap_add(ms, task);
    if (plain_kernel(task))
        return;
    if (ms->epoch_t != eng_now())
        ms->epoch_before = ms->epoch, ms->epoch_t = eng_now();
    ms->epoch++;
    for (int i = 0; i < ms->nasleep; i++) { /* wake every memo sleep */
        sg_sem_release(ms->memo_sem[ms->asleep[i]]);
        ms->asleep_at[ms->asleep[i]] = -1;
    }
    ms->nasleep = 0;
}

void eng_memo_task_end(struct eng_task *task)
{
    struct eng_memo_state *ms = task->core->run->memo;
    ms->chip_tasks[task->core->chip]--;
    if (op_row(task->op->kind)->reach)
        ms->xchip_tasks--;
    if (overlaps(task))
        ms->chip_colls[task->core->chip]--;
    if (ms->overlap && overlaps(task))
        overlap_drop(ms, task);
}

bool eng_memo_chip_shared(const struct eng_task *task)
{
    return task->core->run->memo->chip_tasks[task->core->chip] > 1;
}

bool eng_memo_chip_colls(const struct eng_task *task)
{
    return task->core->run->memo->chip_colls[task->core->chip] > 0;
}

/* The chip's overlap now, as offsets, into '*o'; false if no memo may be
 * used: the chip runs something besides this kernel (on each of its cores:
 * a megacore pair meets at a barrier before each call; a core with no grid
 * steps of the call ends its share at once, before or after this check) and
 * its collectives, or a collective runs elsewhere that does not run on it. */
static bool overlap_now(const struct eng_task *task, struct eng_overlap *o)
{
    const struct eng_run *r = task->core->run;
    int chip = task->core->chip;
    *o = r->memo->overlap[chip];
    int others = r->memo->chip_tasks[chip] - o->n;
    if (o->n != o->nlisted || (others != r->sc->chip.cores && others != task->busy_cores))
        return false;
    int xchip = 0;
    for (int i = 0; i < o->n; i++) {
        xchip += r->memo->coll_running[o->op[i]];
        o->t0[i] = eng_now() - o->t0[i];
    }
    return xchip == r->memo->xchip_tasks;
}

static bool same_overlap(const struct eng_overlap *a, const struct eng_overlap *b)
{
    if (a->n != b->n)
        return false;
    for (int i = 0; i < a->n; i++) {
        int j = 0;
        while (j < b->n && (b->op[j] != a->op[i] || fabs(b->t0[j] - a->t0[i]) > ENG_OVERLAP_TOL_S))
            j++;
        if (j == b->n)
            return false;
    }
    return true;
}

/* The memo of call x core 'slot' of 'op' for overlap 'o' (offsets), or NULL;
 * made if 'make' (and the script has fewer than MEMO_OVERLAPS_MAX). */
static struct eng_memo *memo_of(struct eng_run *r, int op, int slot, const struct eng_overlap *o,
                                bool make)
{
    struct eng_memo *m = &r->memo->memos[op][slot];
    if (o->n == 0)
        return m;
    int k = 0;
    for (; m->next; m = m->next, k++)
        if (same_overlap(&m->next->ov, o))
            return m->next;
    if (!make || k >= MEMO_OVERLAPS_MAX)
        return NULL;
    m->next = xcalloc(1, sizeof *m->next);
    m->next->ov = *o;
    return m->next;
}

/* The memo 'task' may use for 'slot' now, or NULL (see overlap_now); the
 * overlap into '*o'. */
static struct eng_memo *memo_now(struct eng_task *task, int slot, bool make,
                                 struct eng_overlap *o)
{
    struct eng_run *r = task->core->run;
    if (!r->memo->memos || !r->memo->memos[task->opi] || !overlap_now(task, o))
        return NULL;
    return memo_of(r, task->opi, slot, o, make);
}

/* True when every core's memo of the call of 'slot' is measured: the cores
 * of a chip take memos together or not at all (a core running for real
 * beside one that sleeps would have the HBM to itself). */
static bool call_measured(struct eng_run *r, int op, int slot, const struct eng_overlap *o)
{
    int cores = r->sc->chip.cores, first = slot - slot % cores;
    for (int k = 0; k < cores; k++) {
        const struct eng_memo *m = memo_of(r, op, first + k, o, false);
        if (!m || !m->measured)
            return false;
    }
    return true;
}

/* True when every core's memo of the call of 'slot' is being measured by
 * a run that started at 't0' (a megacore pair follows a pair that started
 * together, each core its own core's measurement). */
static bool pair_measuring(struct eng_run *r, int op, int slot, const struct eng_overlap *o,
                           double t0)
{
    int cores = r->sc->chip.cores, first = slot - slot % cores;
    for (int k = 0; k < cores; k++) {
        const struct eng_memo *m = memo_of(r, op, first + k, o, false);
        if (!m || !m->measuring || m->t0 != t0)
            return false;
    }
    return true;
}

static void asleep_add(struct eng_memo_state *ms, int gid)
{
    ms->asleep_at[gid] = ms->nasleep;
    ms->asleep[ms->nasleep++] = gid;
}

/* Takes 'gid' off the list of memo sleeps (if an op start has not). */
static void asleep_drop(struct eng_memo_state *ms, int gid)
{
    int at = ms->asleep_at[gid];
    if (at < 0)
        return;
    int last = ms->asleep[--ms->nasleep];
    ms->asleep[at] = last, ms->asleep_at[last] = at;
    ms->asleep_at[gid] = -1;
}

/* Core 'gid' sleeps until 'end' unless an op instance starts meanwhile
 * (eng_memo_task_start wakes it); false if one started at once. */
static bool memo_sleep(struct eng_memo_state *ms, int gid, double end)
{
    double t0 = eng_now();
    uint64_t e0 = ms->epoch;
    while (ms->epoch == e0 && eng_now() < end) {
        asleep_add(ms, gid);
        bool timeout = sg_sem_acquire_timeout(ms->memo_sem[gid], end - eng_now()) != 0;
        asleep_drop(ms, gid);
        if (timeout)
            break;
    }
    if (ms->epoch != e0 && eng_now() <= t0)
        return false;
    if (eng_now() < end)
        sg_actor_sleep_until(end);
    return true;
}

/* Core 'gid' waits for the measurement of 'm', started at this instant on
 * another chip, to end; false if an op instance started at once (the core
 * runs for real). An op starting later leaves it waiting: it takes the
 * measured run's time, as a memo would. */
static bool follow(struct eng_task *task, struct eng_memo *m)
{
    struct eng_memo_state *ms = task->core->run->memo;
    int gid = task->core->gid;
    double t0 = eng_now();
    eng_wait_note(task, "the first run of its kernel, on another chip");
    uint64_t e0 = ms->epoch, ends = m->ends;
    xgrow(&m->fol, &m->capfol, (size_t)m->nfol + 1, sizeof *m->fol);
    m->fol[m->nfol++] = gid;
    for (;;) {
        if (eng_now() <= t0) /* an op starting at this instant sends it to the real run */
            asleep_add(ms, gid);
        sg_sem_acquire(ms->memo_sem[gid]); /* (a token left by an earlier wake: loops) */
        asleep_drop(ms, gid);
        if (m->ends != ends) {
            eng_wait_note(task, NULL);
            return true; /* eng_memo_end took it off the followers */
        }
        if (ms->epoch != e0 && eng_now() <= t0) {
            for (int i = 0; i < m->nfol; i++)
                if (m->fol[i] == gid)
                    m->fol[i] = m->fol[--m->nfol];
            eng_wait_note(task, NULL);
            return false;
        }
    }
}

/* The HBM limiter link of the chip of core 'c': its DMAs' route (eng_dma.c). */
static sg_link_t hbm_link(struct eng_core *c)
{
    struct eng_memo_state *ms = c->run->memo;
    if (!ms->hbm[c->chip]) {
        xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
        sg_host_get_route(c->host, c->host, links);
        if (xbt_dynar_length(links) == 1)
            ms->hbm[c->chip] = xbt_dynar_get_as(links, 0, sg_link_t);
        xbt_dynar_free(&links);
    }
    return ms->hbm[c->chip];
}

/* Sets the HBM limiter of the chip of 'c' to its bandwidth without the
 * memos' holds less what they hold now. (Nothing else changes the link
 * meanwhile: a chip fault, which sets it, turns memos off, engine/sim.c.) */
static void hbm_apply(struct eng_core *c)
{
    struct eng_memo_state *ms = c->run->memo;
    int k = c->chip;
    sg_link_set_bandwidth(ms->hbm[k], ms->hbm_holders[k] ? ms->hbm_base_Bps[k] - ms->hbm_held_Bps[k]
                                                          : ms->hbm_base_Bps[k]);
}

/* Holds 'Bps' of the HBM of the chip of 'c' (the bandwidth the transfers
 * sharing it get is less by that much); false (nothing held) if the link is
 * not found or 'Bps' is not below ENG_HOLD_MAX of what is left of it. */
static bool hbm_hold(struct eng_core *c, double Bps)
{
    struct eng_memo_state *ms = c->run->memo;
    int k = c->chip;
    sg_link_t l = hbm_link(c);
    if (!l)
        return false;
    double left = sg_link_get_bandwidth(l);
    if (Bps >= left * ENG_HOLD_MAX)
        return false;
    if (!ms->hbm_holders[k]++)
        ms->hbm_base_Bps[k] = left, ms->hbm_held_Bps[k] = 0;
    ms->hbm_held_Bps[k] += Bps;
    hbm_apply(c);
    return true;
}

/* Gives back what hbm_hold held (the link's own bandwidth exactly, once no
 * memo holds any). */
static void hbm_release(struct eng_core *c, double Bps)
{
    struct eng_memo_state *ms = c->run->memo;
    ms->hbm_held_Bps[c->chip] -= Bps;
    ms->hbm_holders[c->chip]--;
    hbm_apply(c);
}

/* A memo's sleep beside collectives, holding the HBM bandwidth its
 * measured run used on average (its bytes over its time), so that the
 * collectives beside it share the HBM as they would with its DMAs. */
static bool memo_sleep_beside(struct eng_core *c, const struct pl_script *script,
                              const struct eng_memo *m, double end)
{
    struct pl_stats st = {0};
    pl_script_stats(script, &st);
    double Bps = m->dur_s > 0 ? st.hbm_bytes / m->dur_s : 0;
    if (Bps > 0 && !hbm_hold(c, Bps))
        return false;
    bool slept = memo_sleep(c->run->memo, c->gid, end);
    if (Bps > 0)
        hbm_release(c, Bps);
    return slept;
}

bool eng_memo_run(struct eng_task *task, int slot, const struct pl_script *script)
{
    struct eng_core *c = task->core;
    struct eng_overlap o;
    struct eng_memo *m = memo_now(task, slot, false, &o);
    if (!m)
        return false;
    double t0 = eng_now();
    if (call_measured(c->run, task->opi, slot, &o)) {
        eng_stop_if_interrupted();
        if (!(o.n > 0 ? memo_sleep_beside(c, script, m, t0 + m->dur_s)
                      : memo_sleep(c->run->memo, c->gid, t0 + m->dur_s)))
            return false;
    } else if (o.n > 0 || (c->run->sc->chip.cores > 1 && !c->run->sc->chip.megacore) ||
               !pair_measuring(c->run, task->opi, slot, &o, t0) || !follow(task, m)) {
        /* (beside collectives every chip runs it for real, so that the HBM
         * traffic the collectives meet is the same on every chip; a v7
         * chip's two devices do not follow: a trace's DMA activity moved by
         * 5 ns there, not understood) */
        return false;
    }
    for (size_t i = 0; i < m->nev; i++) {
        const struct memo_ev *e = &m->ev[i];
        trace_unit(c->run->trace, c->chip, e->tid, e->cat, e->name, task->op->name, t0 + e->t0,
                   t0 + e->t1, e->bytes, NULL);
    }
    int64_t steps0 = task->st.steps;
    pl_script_stats(script, &task->st);
    progress_add(c->run->progress, task->st.steps - steps0);
    task->steps_shown = task->st.steps;
    c->run->stats.memo_hits++;
    return true;
}

void eng_memo_begin(struct eng_task *task, int slot)
{
    struct eng_overlap o;
    struct eng_memo *m = memo_now(task, slot, true, &o);
    if (!m || m->measured || m->measuring)
        return;
    m->measuring = true;
    m->nev = 0;
    m->nfol = 0;
    m->epoch0 = task->core->run->memo->epoch;
    m->t0 = eng_now();
    task->capture = m;
    task->capture_t0 = m->t0;
}

void eng_memo_end(struct eng_task *task)
{
    struct eng_memo *m = task->capture;
    task->capture = NULL;
    if (!m)
        return;
    struct eng_memo_state *ms = task->core->run->memo;
    m->measuring = false;
    m->ends++;
    for (int i = 0; i < m->nfol; i++) { /* the cores that waited for it go on */
        asleep_drop(ms, m->fol[i]);
        sg_sem_release(ms->memo_sem[m->fol[i]]);
    }
    m->nfol = 0;
    /* a start at this very instant (another chip ending the same kernel a moment
     * of the actors' order before this one, and going on) met none of the run's
     * activities: the run was quiet (row 41's forward kernels, every layer) */
    uint64_t before_now = ms->epoch_t == eng_now() ? ms->epoch_before : ms->epoch;
    if (m->epoch0 != before_now)
        return; /* something else started meanwhile: not a quiet run */
    m->dur_s = eng_now() - task->capture_t0;
    m->measured = true;
    task->core->run->stats.memo_measured++;
}

void eng_unit(struct eng_task *task, int tid, const char *cat, const char *name, double t0,
              double t1, double bytes, const char *args)
{
    struct eng_core *c = task->core;
    trace_unit(c->run->trace, c->chip, tid, cat, name, task->op->name, t0, t1, bytes, args);
    struct eng_memo *m = task->capture;
    if (!m || !trace_wants(c->run->trace, TRACE_UNITS))
        return; /* (the spans of a trace that keeps none are not kept either) */
    xgrow(&m->ev, &m->cap, m->nev + 1, sizeof *m->ev);
    struct memo_ev *e = &m->ev[m->nev++];
    *e = (struct memo_ev){.tid = tid, .cat = cat, .name = name, .t0 = t0 - task->capture_t0,
                          .t1 = t1 - task->capture_t0, .bytes = bytes};
}
