/* engine/timeline.c -- categories, critical path and iteration times of chip 0's
 * timeline (see engine/timeline.h). */
#include "engine/timeline.h"

#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "config/op_table.h"

/* ---- time by category: a sweep over interval end points ---- */

struct edge {
    double t;
    int delta; /* +1 start, -1 end */
    int kind;  /* 0 compute, 1 collective, 2 copy */
};

static int cmp_edge(const void *a, const void *b)
{
    const struct edge *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->delta - y->delta; /* ends before starts at the same time */
}

static int stream_of(const struct op *op)
{
    const struct op_row *row = op_row(op->kind);
    if (!row->async)
        return 0;
    return strcmp(row->category, "copy") == 0 ? 2 : 1;
}

static enum summary_cat compute_cat(const struct op *op)
{
    const char *c = op_row(op->kind)->category;
    if (!strcmp(c, "matmul") || op->kind == OP_COLLECTIVE_MATMUL)
        return CAT_MATMUL;
    if (!strcmp(c, "attention"))
        return CAT_ATTENTION;
    if (!strcmp(c, "fusion"))
        return CAT_FUSION;
    return CAT_COMPUTE_OTHER;
}

static void categories(const struct cfg_scenario *sc, const struct timeline_times *tt,
                       struct summary *s)
{
    size_t n = 0, cap = 0;
    struct edge *e = NULL;
    for (int i = 0; i < sc->nops; i++) {
        int kind = stream_of(&sc->ops[i]);
        for (int64_t k = 0; k < sc->graph.node[i].instances; k++) {
            int64_t b = tt->off[i] + k;
            if (tt->t1[b] <= tt->t0[b])
                continue;
            if (kind == 0)
                s->cat_s[compute_cat(&sc->ops[i])] += tt->t1[b] - tt->t0[b];
            xgrow(&e, &cap, n + 2, sizeof *e);
            e[n++] = (struct edge){tt->t0[b], +1, kind};
            e[n++] = (struct edge){tt->t1[b], -1, kind};
        }
    }
    if (n > 1) /* (qsort takes no NULL: a run that finished nothing has no edges) */
        qsort(e, n, sizeof *e, cmp_edge);
    int active[3] = {0, 0, 0};
    double t = 0;
    for (size_t k = 0; k < n; k++) {
        double dt = e[k].t - t;
        if (!active[0] && active[1])
            s->cat_s[CAT_COLLECTIVE_EXPOSED] += dt;
        else if (active[1])
            s->cat_s[CAT_COLLECTIVE_HIDDEN] += dt;
        if (!active[0] && !active[1] && active[2])
            s->cat_s[CAT_COPY_EXPOSED] += dt;
        else if (active[2])
            s->cat_s[CAT_COPY_HIDDEN] += dt;
        if (!active[0] && !active[1] && !active[2])
            s->cat_s[CAT_IDLE] += dt;
        t = e[k].t;
        active[e[k].kind] += e[k].delta;
    }
    if (s->total_time_s > t)
        s->cat_s[CAT_IDLE] += s->total_time_s - t;
    free(e);
}

/* ---- the critical path: each instance's binding predecessor ---- */

struct path_walk {
    const struct cfg_scenario *sc;
    const struct timeline_times *tt;
    int64_t *pred;      /* per instance entry: the entry whose end started it, or -1 */
    int64_t last_compute;
};

/* Among the candidates, the one that ended last, no later than 'start'. */
static void consider(struct path_walk *p, int64_t self, int64_t cand)
{
    const struct timeline_times *tt = p->tt;
    if (cand < 0 || tt->t1[cand] > tt->t0[self] + 1e-12)
        return;
    if (p->pred[self] < 0 || tt->t1[cand] > tt->t1[p->pred[self]])
        p->pred[self] = cand;
}

static void visit(void *ctx, int op, int64_t inst, const struct graph_waits *w)
{
    struct path_walk *p = ctx;
    int64_t self = p->tt->off[op] + inst;
    p->pred[self] = -1;
    for (int i = 0; i < w->n; i++)
        consider(p, self, p->tt->off[w->op[i]] + w->inst[i]);
    if (stream_of(&p->sc->ops[op]) == 0) {
        consider(p, self, p->last_compute);
        p->last_compute = self;
    } else if (inst > 0) {
        consider(p, self, self - 1);
    }
}

static int op_of(const struct cfg_scenario *sc, const struct timeline_times *tt, int64_t b)
{
    int lo = 0, hi = sc->nops - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (tt->off[mid] <= b)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Aggregates the path (entries from first to last) per op, in order of first appearance. */
static void path_ops(const struct cfg_scenario *sc, const struct timeline_times *tt,
                     const int64_t *chain, int64_t n, struct summary *s)
{
    int *slot = xcalloc((size_t)sc->nops + 1, sizeof *slot);
    for (int i = 0; i < sc->nops; i++)
        slot[i] = -1;
    s->path = xcalloc((size_t)(n < sc->nops ? n : sc->nops) + 1, sizeof *s->path);
    for (int64_t k = 0; k < n; k++) {
        int op = op_of(sc, tt, chain[k]);
        if (slot[op] < 0) {
            slot[op] = s->npath++;
            s->path[slot[op]].name = xstrdup(sc->ops[op].name);
            s->path[slot[op]].op = op;
        }
        s->path[slot[op]].instances++;
        s->path[slot[op]].time_s += tt->t1[chain[k]] - tt->t0[chain[k]];
    }
    free(slot);
}

static void critical_path(const struct cfg_scenario *sc, const struct timeline_times *tt,
                          int64_t total, struct summary *s)
{
    struct path_walk p = {sc, tt, xcalloc((size_t)total + 1, sizeof *p.pred), -1};
    graph_walk(&sc->graph, visit, &p);
    int64_t last = -1;
    for (int64_t b = 0; b < total; b++)
        if (tt->t1[b] > tt->t0[b] && (last < 0 || tt->t1[b] > tt->t1[last]))
            last = b;
    int64_t n = 0;
    for (int64_t b = last; b >= 0; b = p.pred[b])
        n++;
    int64_t *chain = xcalloc((size_t)n + 1, sizeof *chain);
    int64_t k = n;
    for (int64_t b = last; b >= 0; b = p.pred[b])
        chain[--k] = b;
    path_ops(sc, tt, chain, n, s);
    free(chain);
    free(p.pred);
}

/* ---- iterations of repeat blocks ---- */

static void block_times(const struct cfg_scenario *sc, const struct timeline_times *tt,
                        struct summary *s)
{
    const struct graph *g = &sc->graph;
    s->nblocks = g->nblocks;
    s->blocks = xcalloc((size_t)g->nblocks + 1, sizeof *s->blocks);
    for (int k = 0; k < g->nblocks; k++) {
        struct summary_block *b = &s->blocks[k];
        b->name = xstrdup(g->block[k].name);
        b->count = g->block[k].count;
        b->niter = 1; /* this block's iterations in all: its count times its parents' */
        for (int p = k; p >= 0; p = g->block[p].parent)
            b->niter *= g->block[p].count;
        b->start_s = xcalloc((size_t)b->niter + 1, sizeof *b->start_s);
        b->end_s = xcalloc((size_t)b->niter + 1, sizeof *b->end_s);
        for (int i = g->block[k].first; i < g->block[k].end; i++) {
            int64_t per = g->node[i].instances / b->niter; /* instances per iteration */
            for (int64_t m = 0; m < g->node[i].instances; m++) {
                int64_t e = tt->off[i] + m, it = m / per;
                if (tt->t1[e] <= tt->t0[e])
                    continue;
                if (b->end_s[it] == 0 || tt->t0[e] < b->start_s[it])
                    b->start_s[it] = tt->t0[e];
                if (tt->t1[e] > b->end_s[it])
                    b->end_s[it] = tt->t1[e];
            }
        }
    }
}

void timeline_fill(const struct cfg_scenario *sc, const struct timeline_times *tt,
                   struct summary *s)
{
    int64_t total = sc->nops ? tt->off[sc->nops - 1] + sc->graph.node[sc->nops - 1].instances : 0;
    s->timeline = true;
    categories(sc, tt, s);
    critical_path(sc, tt, total, s);
    block_times(sc, tt, s);
}
