/* engine/spmd_quiet.c -- which op instances must have ended before another
 * starts, and which cannot start before it ends (see engine/spmd.h,
 * spmd_quiet). Edges, from what the engine guarantees (engine/eng_core.c):
 * an instance starts once every instance it waits for is done; a core's
 * compute stream runs the compute ops one at a time in program order; an
 * async op's instance waits for its previous instance. */
#include "engine/spmd.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/xalloc.h"
#include "config/op_table.h"

/* Programs above these sizes are not searched (no stand-ins: every chip of
 * their all-to-alls' axes is simulated, as before). */
#define QUIET_MAX_INSTANCES 1000000
#define QUIET_MAX_EDGES 8000000

struct hb {
    const struct cfg_scenario *sc;
    int64_t *off;       /* per op: its first instance's number */
    int64_t n;          /* instances */
    int64_t *from, *to; /* edges: 'from' ends before 'to' starts */
    size_t ne, cap;
    int64_t last_compute; /* the compute stream's last instance, -1 */
    bool too_big;
    /* adjacency (CSR) both ways, built after the walk */
    int64_t *out_at, *out, *in_at, *in;
};

static void edge(struct hb *h, int64_t a, int64_t b)
{
    if (h->too_big || a < 0)
        return;
    if (h->ne == QUIET_MAX_EDGES) {
        h->too_big = true;
        return;
    }
    if (h->ne == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 1024;
        h->from = xrealloc(h->from, h->cap * sizeof *h->from);
        h->to = xrealloc(h->to, h->cap * sizeof *h->to);
    }
    h->from[h->ne] = a, h->to[h->ne++] = b;
}

static void visit(void *ctx, int op, int64_t inst, const struct graph_waits *w)
{
    struct hb *h = ctx;
    int64_t id = h->off[op] + inst;
    for (int i = 0; i < w->n; i++)
        edge(h, h->off[w->op[i]] + w->inst[i], id);
    if (op_row(h->sc->ops[op].kind)->async) {
        if (inst > 0)
            edge(h, id - 1, id);
    } else {
        edge(h, h->last_compute, id);
        h->last_compute = id;
    }
}

/* One direction's CSR of the edges: at[v]..at[v+1] index adj. */
static void csr(int64_t n, size_t ne, const int64_t *key, const int64_t *val, int64_t **at,
                int64_t **adj)
{
    *at = xcalloc((size_t)n + 1, sizeof **at);
    *adj = xcalloc(ne + 1, sizeof **adj);
    for (size_t e = 0; e < ne; e++)
        (*at)[key[e] + 1]++;
    for (int64_t v = 0; v < n; v++)
        (*at)[v + 1] += (*at)[v];
    int64_t *fill = xcalloc((size_t)n + 1, sizeof *fill);
    for (size_t e = 0; e < ne; e++)
        (*adj)[(*at)[key[e]] + fill[key[e]]++] = val[e];
    free(fill);
}

struct spmd_hb *spmd_hb_new(const struct cfg_scenario *sc)
{
    if (sc->graph.instances > QUIET_MAX_INSTANCES || sc->graph.nops != sc->nops)
        return NULL;
    struct hb *h = xcalloc(1, sizeof *h);
    h->sc = sc;
    h->off = xcalloc((size_t)sc->nops + 1, sizeof *h->off);
    for (int i = 0; i < sc->nops; i++)
        h->off[i + 1] = h->off[i] + sc->graph.node[i].instances;
    h->n = h->off[sc->nops];
    h->last_compute = -1;
    graph_walk(&sc->graph, visit, h);
    if (!h->too_big) {
        csr(h->n, h->ne, h->from, h->to, &h->out_at, &h->out);
        csr(h->n, h->ne, h->to, h->from, &h->in_at, &h->in);
    }
    free(h->from), free(h->to);
    h->from = h->to = NULL;
    return (struct spmd_hb *)h;
}

void spmd_hb_free(struct spmd_hb *p)
{
    struct hb *h = (struct hb *)p;
    if (!h)
        return;
    free(h->off);
    free(h->out_at), free(h->out), free(h->in_at), free(h->in);
    free(h);
}

/* Instances reachable from 'start' along 'at'/'adj' (not counting it), marked in 'seen'. */
static int64_t reach(const struct hb *h, int64_t start, const int64_t *at, const int64_t *adj,
                     uint8_t *seen, int64_t *queue)
{
    int64_t head = 0, tail = 0, count = 0;
    queue[tail++] = start;
    while (head < tail) {
        int64_t v = queue[head++];
        for (int64_t k = at[v]; k < at[v + 1]; k++)
            if (!seen[adj[k]]) {
                seen[adj[k]] = 1;
                queue[tail++] = adj[k];
                count++;
            }
    }
    (void)h;
    return count;
}

bool spmd_hb_alone(const struct spmd_hb *p, int op)
{
    const struct hb *h = (const struct hb *)p;
    if (!h || h->too_big)
        return false;
    uint8_t *seen = xcalloc((size_t)h->n, 1);
    int64_t *queue = xcalloc((size_t)h->n, sizeof *queue);
    bool ok = true;
    for (int64_t id = h->off[op]; ok && id < h->off[op + 1]; id++) {
        for (int64_t v = 0; v < h->n; v++)
            seen[v] = 0;
        seen[id] = 1;
        int64_t before = reach(h, id, h->in_at, h->in, seen, queue);
        int64_t after = reach(h, id, h->out_at, h->out, seen, queue);
        ok = before + after == h->n - 1; /* (a cycle would count twice: none, the walk orders) */
    }
    free(seen);
    free(queue);
    return ok;
}
