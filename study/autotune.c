/* study/autotune.c -- the `block: auto` stage (see study/autotune.h): candidates
 * from kernels/tune.h, timed in forked children through sim_run, cached. */
#include "study/autotune.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "config/op_table.h"
#include "engine/outputs.h"
#include "engine/sim_child.h"
#include "engine/sim.h"
#include "outputs/progress.h"

struct entry {
    enum op_kind kind;
    struct op key; /* the op with its blocks zeroed, no name */
    struct chip_params chip;
    enum cfg_fidelity fidelity;
    struct tune_choice choice;
};

struct autotune_cache {
    int n, cap;
    struct entry *e;
    struct autotune_stats st;
};

struct autotune_cache *autotune_cache_new(void)
{
    return xcalloc(1, sizeof(struct autotune_cache));
}

void autotune_cache_free(struct autotune_cache *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++) {
        const struct op_row *row = op_row(c->e[i].kind);
        if (row->tune->keep && row->kern && row->kern->params_fini)
            row->kern->params_fini(&c->e[i].key); /* the copies 'keep' made */
    }
    free(c->e);
    free(c);
}

void autotune_stats(const struct autotune_cache *c, struct autotune_stats *st)
{
    *st = c->st;
}

/* ---------------- the cache ---------------- */

/* What decides an op's search: its kind and parameters but not its blocks. */
static void make_key(const struct kern_tune *t, const struct op *op, struct op *key)
{
    int64_t zero[TUNE_MAX_PARAMS] = {0};
    memset(key, 0, sizeof *key);
    key->kind = op->kind;
    key->vmem_limit_bytes = op->vmem_limit_bytes;
    memcpy(&key->u, &op->u, sizeof key->u);
    t->set(key, zero);
}

static bool same_params(const struct op *a, const struct op *b)
{
    const struct kern_tune *t = op_row(a->kind)->tune;
    return t->same ? t->same(a, b) : memcmp(&a->u, &b->u, sizeof a->u) == 0;
}

static struct entry *lookup(struct autotune_cache *c, const struct op *key,
                            const struct cfg_scenario *sc)
{
    for (int i = 0; i < c->n; i++) {
        struct entry *e = &c->e[i];
        if (e->kind == key->kind && e->fidelity == sc->fidelity &&
            e->key.vmem_limit_bytes == key->vmem_limit_bytes && same_params(&e->key, key) &&
            memcmp(&e->chip, &sc->chip, sizeof sc->chip) == 0)
            return e;
    }
    return NULL;
}

static void remember(struct autotune_cache *c, const struct op *key, const struct cfg_scenario *sc,
                     const struct tune_choice *ch)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 8;
        c->e = xrealloc(c->e, sizeof *c->e * (size_t)c->cap);
    }
    struct entry *e = &c->e[c->n++];
    memset(e, 0, sizeof *e);
    e->kind = key->kind;
    e->key = *key;
    const struct kern_tune *t = op_row(key->kind)->tune;
    if (t->keep)
        t->keep(&e->key); /* the op's masks go with its scenario; the cache outlives it */
    e->chip = sc->chip;
    e->fidelity = sc->fidelity;
    e->choice = *ch;
}

/* ---------------- one run of candidates, in a child ---------------- */

#define RUN_MAX TUNE_MAX_TIMED

struct run_result {
    int rc;
    int n;
    double time_s[RUN_MAX];
    char bound[RUN_MAX][16];
    char err[512];
};

/* The scenario the child runs: one chip of the scenario's kind, and the
 * candidates as consecutive ops (each waits for the one before). Its ops
 * are shallow copies of 'op': what they own belongs to the scenario. */
static int build_run(const struct cfg_scenario *sc, int opi, const struct kern_tune *t,
                     const struct tune_point *pts, const int *which, int n,
                     struct cfg_scenario *r, struct diag *d)
{
    memset(r, 0, sizeof *r);
    r->name = xstrdup("autotune");
    r->file = xstrdup(sc->file ? sc->file : "");
    r->chip = sc->chip;
    int shape[TOPO_MAX_DIMS] = {1, 1, 1};
    bool wrap[TOPO_MAX_DIMS] = {false, false, false};
    topo_init(&r->topo, 1, shape, wrap);
    r->plan.sim = r->topo;
    r->plan.sim_mult = 1;
    r->fidelity = sc->fidelity;
    r->seed = sc->seed;
    r->max_steps = sc->max_steps;
    r->ops = xcalloc((size_t)n, sizeof *r->ops);
    r->src = xcalloc((size_t)n, sizeof *r->src);
    r->nops = n;
    struct graph_draft dr = {0};
    for (int i = 0; i < n; i++) {
        struct op *op = &r->ops[i];
        *op = sc->ops[opi];
        op->name = xasprintf("candidate%d", which[i]);
        op->overlap = op->functional = op->autotune = false;
        t->set(op, pts[which[i]].v);
        r->src[i] = sc->src[opi];
        graph_draft_op(&dr, -1, op->name, true, &sc->src[opi].loc, sc->src[opi].path, false);
    }
    int *order = xcalloc((size_t)n, sizeof *order);
    int rc = graph_finish(&dr, &r->graph, order, d);
    free(order);
    graph_draft_fini(&dr);
    return rc;
}

static void free_run(struct cfg_scenario *r)
{
    for (int i = 0; i < r->nops; i++)
        free(r->ops[i].name);
    free(r->ops);
    free(r->src);
    graph_fini(&r->graph);
    free(r->name);
    free(r->file);
}

static void child(const struct cfg_scenario *sc, int opi, const struct kern_tune *t,
                  const struct tune_point *pts, const int *which, int n,
                  const struct autotune_opts *o, struct run_result *res)
{
    struct diag *d = diag_new();
    struct cfg_scenario r;
    res->rc = 1;
    if (build_run(sc, opi, t, pts, which, n, &r, d) == 0) {
        struct sim_opts so = {.sg_argc = o->sg_argc, .sg_argv = o->sg_argv,
                              .max_trace_events = 1};
        struct summary s = {0};
        res->rc = sim_run(&r, &so, &s, d);
        for (int i = 0; i < s.nops && i < n; i++) {
            res->time_s[i] = s.ops[i].time_s;
            snprintf(res->bound[i], sizeof res->bound[i], "%s", bound_name(s.ops[i].bound));
        }
        res->n = s.nops < n ? s.nops : n;
        summary_fini(&s);
    }
    free_run(&r);
    if (diag_count(d))
        snprintf(res->err, sizeof res->err, "%s", diag_message(d, 0));
    diag_free(d);
}

/* What the child times: candidates 'which' (n of them) of op 'opi'. */
struct child_args {
    const struct cfg_scenario *sc;
    int opi;
    const struct kern_tune *t;
    const struct tune_point *pts;
    const int *which;
    int n;
    const struct autotune_opts *o;
};

static void child_body(void *arg, void *out)
{
    const struct child_args *a = arg;
    child(a->sc, a->opi, a->t, a->pts, a->which, a->n, a->o, out);
}

/* Times candidates 'which' (n of them) in a forked child. Returns its code. */
static int time_candidates(const struct cfg_scenario *sc, int opi, const struct kern_tune *t,
                           const struct tune_point *pts, const int *which, int n,
                           const struct autotune_opts *o, struct run_result *res)
{
    memset(res, 0, sizeof *res);
    struct child_args a = {sc, opi, t, pts, which, n, o};
    int rc = sim_child_run(child_body, &a, res, sizeof *res, "candidate run", res->err,
                           sizeof res->err);
    if (rc != 0)
        res->rc = rc;
    return res->rc;
}

/* ---------------- the search of one op ---------------- */

struct search {
    const struct cfg_scenario *sc;
    int opi;
    const struct kern_tune *t;
    struct tune_point *pts; /* those handed out, in the order they were timed */
    int npts;
    int best; /* index into pts, -1 */
    double best_s;
    struct tune_choice *ch;
};

/* Times pts[from, npts) and folds the results into the search. */
static int run_phase(struct search *s, int from, const struct autotune_opts *o, struct diag *d)
{
    struct run_result res;
    struct tune_choice *ch = s->ch;
    int n = s->npts - from, which[TUNE_MAX_TIMED];
    for (int i = 0; i < n; i++)
        which[i] = from + i;
    int rc = time_candidates(s->sc, s->opi, s->t, s->pts, which, n, o, &res);
    ch->runs++;
    if (rc != 0 || res.n != n) {
        const struct cfg_op_src *src = &s->sc->src[s->opi];
        diag_error(d, &src->loc, src->path, "%s: %s: auto: timing the candidates failed: %s",
                   op_kind_name(s->sc->ops[s->opi].kind), s->t->key,
                   res.err[0] ? res.err : "no result");
        return rc ? rc : 1;
    }
    for (int i = 0; i < n; i++) {
        const struct tune_point *p = &s->pts[which[i]];
        if (ch->ntimed < TUNE_MAX_TIMED) {
            memcpy(ch->timed[ch->ntimed], p->v, sizeof ch->timed[0]);
            ch->timed_s[ch->ntimed++] = res.time_s[i];
        }
        if (p->dflt)
            ch->default_s = res.time_s[i];
        /* ties: the candidate first in bound order (smaller bound, then listing
         * order); times within 1e-12 relative are ties (rounding of SimGrid's
         * shares depends on the order its actions were created, not on the blocks) */
        double tie = 1e-12 * s->best_s;
        if (s->best < 0 || res.time_s[i] < s->best_s - tie ||
            (res.time_s[i] <= s->best_s + tie && tune_point_before(p, &s->pts[s->best]))) {
            s->best = which[i], s->best_s = res.time_s[i];
            snprintf(ch->bound, sizeof ch->bound, "%s", res.bound[i]);
        }
    }
    return 0;
}

/* The first 'n' candidates in bound order. */
static void first_phase(struct search *s, struct tune_order *ord, int n)
{
    while (s->npts < n && tune_order_next(ord, INFINITY, &s->pts[s->npts]))
        s->npts++;
}

/* The candidates beyond the first that could still beat the best time (their
 * bound is below it), the default first, at most 'n'. */
static void second_phase(struct search *s, struct tune_order *ord, int n)
{
    int from = s->npts;
    bool dflt_timed = false;
    for (int i = 0; i < from; i++)
        dflt_timed |= s->pts[i].dflt;
    struct tune_point p;
    if (!dflt_timed && tune_order_default(ord, s->best_s, &p))
        s->pts[s->npts++] = p;
    while (s->npts - from < n && tune_order_next(ord, s->best_s, &p))
        if (!p.dflt)
            s->pts[s->npts++] = p;
}

static int search(const struct cfg_scenario *sc, int opi, const struct kern_tune *t,
                  const struct autotune_opts *o, struct tune_choice *ch, struct diag *d)
{
    const struct op *op = &sc->ops[opi];
    int n = o->n > 0 ? o->n : AUTOTUNE_N;
    n = n > TUNE_MAX_TIMED / 2 ? TUNE_MAX_TIMED / 2 : n;
    struct search s = {.sc = sc, .opi = opi, .t = t, .best = -1, .ch = ch};
    s.pts = xcalloc(2 * (size_t)n + 1, sizeof *s.pts);
    char err[1400] = "";
    struct tune_order *ord =
        tune_order_new(t, op_row(op->kind)->kern, op, &sc->chip, &ch->tried, err, sizeof err);
    int nr = tune_order_feasible(ord);
    ch->feasible = nr < TUNE_MAX_ENUM ? nr : TUNE_MAX_ENUM;
    int rc = 0;
    if (nr == 0) {
        diag_error(d, &sc->src[opi].loc, sc->src[opi].path, "%s: %s: auto: %s",
                   op_kind_name(op->kind), t->key, err);
        rc = 2;
    }
    if (rc == 0) {
        first_phase(&s, ord, n);
        rc = run_phase(&s, 0, o, d);
    }
    int from = s.npts;
    if (rc == 0)
        second_phase(&s, ord, n);
    if (rc == 0 && s.npts > from)
        rc = run_phase(&s, from, o, d);
    ch->bounds = tune_order_bounds(ord);
    if (rc == 0) {
        memcpy(ch->v, s.pts[s.best].v, sizeof ch->v);
        ch->time_s = s.best_s;
        ch->bound_s = s.pts[s.best].bound_s;
    }
    tune_order_free(ord);
    free(s.pts);
    return rc;
}

int autotune_resolve(struct cfg_scenario *sc, struct autotune_cache *c,
                     const struct autotune_opts *o, struct diag *d)
{
    static const struct autotune_opts none = {0};
    o = o ? o : &none;
    double t0 = progress_now_s();
    int rc = 0;
    for (int i = 0; i < sc->nops && rc == 0; i++) {
        struct op *op = &sc->ops[i];
        const struct kern_tune *t = op_row(op->kind)->tune;
        if (!op->autotune || !t)
            continue;
        if (!sc->plan.tuned)
            sc->plan.tuned = xcalloc((size_t)sc->nops, sizeof *sc->plan.tuned);
        struct tune_choice *ch = &sc->plan.tuned[i];
        struct op key;
        make_key(t, op, &key);
        const struct entry *e = lookup(c, &key, sc);
        if (e) {
            *ch = e->choice;
            ch->cached = true;
        } else {
            memset(ch, 0, sizeof *ch);
            ch->default_s = -1;
            ch->nparams = t->nparams;
            ch->names = t->names;
            rc = search(sc, i, t, o, ch, d);
            c->st.searches++;
            c->st.runs += ch->runs;
            c->st.bounds += ch->bounds;
            c->st.feasible += ch->feasible;
            if (rc == 0)
                remember(c, &key, sc, ch);
        }
        if (rc == 0) {
            ch->tuned = true;
            t->set(op, ch->v);
            c->st.ops++;
        }
    }
    c->st.wall_s += progress_now_s() - t0;
    return rc;
}

void autotune_print(const struct cfg_scenario *sc, FILE *out)
{
    for (int i = 0; sc->plan.tuned && i < sc->nops; i++) {
        if (!sc->plan.tuned[i].tuned)
            continue;
        struct summary_auto a;
        outputs_auto_summary(&sc->plan.tuned[i], &a);
        summary_print_auto(sc->ops[i].name, &a, out);
    }
}
