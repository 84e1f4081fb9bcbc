/* workload/graph.c -- the workload program: scoped names, dependencies, order
 * (see workload/graph.h). Uses base/ only. */
#include "workload/graph.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sat.h"
#include "base/xalloc.h"

/* ---------------- the draft ---------------- */

int graph_draft_block(struct graph_draft *d, int parent, const char *name, int64_t count,
                      const struct diag_loc *loc)
{
    if (d->nblocks == d->capblocks) {
        d->capblocks = d->capblocks ? 2 * d->capblocks : 8;
        d->block = xrealloc(d->block, sizeof *d->block * (size_t)d->capblocks);
    }
    d->block[d->nblocks] = (struct graph_draft_block){parent, xstrdup(name), count, *loc};
    return d->nblocks++;
}

int graph_draft_op(struct graph_draft *d, int block, const char *name, bool named,
                   const struct diag_loc *loc, const char *path, bool overlap)
{
    if (d->nops == d->capops) {
        d->capops = d->capops ? 2 * d->capops : 16;
        d->op = xrealloc(d->op, sizeof *d->op * (size_t)d->capops);
    }
    d->op[d->nops] = (struct graph_draft_op){.block = block,
                                             .name = xstrdup(name),
                                             .named = named,
                                             .loc = *loc,
                                             .path = xstrdup(path),
                                             .overlap = overlap};
    return d->nops++;
}

void graph_draft_has_after(struct graph_draft *d, int op)
{
    d->op[op].has_after = true;
}

void graph_draft_after(struct graph_draft *d, int op, const char *text, const struct diag_loc *loc,
                       const char *path)
{
    struct graph_draft_op *o = &d->op[op];
    int c = o->nafter;
    if ((c & (c - 1)) == 0) /* room for a power of two: doubles */
        o->after = xrealloc(o->after, sizeof *o->after * (size_t)(c ? 2 * c : 1));
    o->after[o->nafter++] = (struct graph_ref){xstrdup(text), *loc, xstrdup(path)};
    o->has_after = true;
}

void graph_draft_fini(struct graph_draft *d)
{
    for (int i = 0; i < d->nops; i++) {
        for (int k = 0; k < d->op[i].nafter; k++) {
            free(d->op[i].after[k].text);
            free(d->op[i].after[k].path);
        }
        free(d->op[i].after);
        free(d->op[i].name);
        free(d->op[i].path);
    }
    for (int b = 0; b < d->nblocks; b++)
        free(d->block[b].name);
    free(d->op);
    free(d->block);
    memset(d, 0, sizeof *d);
}

/* ---------------- scopes: the items of each body ---------------- */

/* An item of a body: an op (>= 0) or a block (-1 - index). */
struct scope {
    int n, cap;
    int *item;
};

struct build {
    const struct graph_draft *d;
    struct diag *diag;
    struct scope *scope;     /* [nblocks + 1]: scope b + 1, top level at 0 */
    int *depth;              /* per block */
    int *chain;              /* per op: GRAPH_MAX_DEPTH enclosing blocks, outermost first */
    int *nchain;             /* per op */
    int *first_doc;          /* per block: document index of its first op */
    int *op_pos, *block_pos; /* position of each op / block among its scope's items */
    int **edge, *nedge;      /* per scope: edges (from, to) between item positions */
    struct graph_dep **deps; /* per op (document indices in .op) */
    int *ndeps;
    int errors;
    /* every item's name, by scope: open-addressed slots of (scope, item),
     * so that duplicates and after: names are found in constant time */
    struct name_slot *names;
    size_t names_cap;
};

struct name_slot {
    int scope, item; /* item INT_MIN: empty */
};

static void scope_add(struct scope *s, int item)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->item = xrealloc(s->item, sizeof *s->item * (size_t)s->cap);
    }
    s->item[s->n++] = item;
}

static const char *item_name(const struct build *b, int item)
{
    return item >= 0 ? b->d->op[item].name : b->d->block[-1 - item].name;
}

static int err(struct build *b, const struct diag_loc *loc, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Reports a message at 'loc' and 'path'; returns -1. */
static int err(struct build *b, const struct diag_loc *loc, const char *path, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(b->diag, loc, path, "%s", msg);
    b->errors++;
    return -1;
}

/* Fills the scopes (items in document order), depths and op chains. */
static int build_scopes(struct build *b)
{
    const struct graph_draft *d = b->d;
    for (int k = 0; k < d->nblocks; k++) {
        int p = d->block[k].parent;
        b->depth[k] = p < 0 ? 1 : b->depth[p] + 1;
        if (b->depth[k] > GRAPH_MAX_DEPTH)
            return err(b, &d->block[k].loc, "repeat", "expected at most %d nested repeat blocks",
                       GRAPH_MAX_DEPTH);
    }
    /* blocks and ops interleave in document order: a block sits where its
     * first item is, so add each block when its first op (or child) appears */
    for (int k = 0; k < d->nblocks; k++)
        b->first_doc[k] = d->nops;
    for (int i = d->nops - 1; i >= 0; i--)
        for (int k = d->op[i].block; k >= 0; k = d->block[k].parent)
            b->first_doc[k] = i;
    for (int i = 0; i < d->nops; i++) {
        int n = 0, chain[GRAPH_MAX_DEPTH];
        for (int k = d->op[i].block; k >= 0; k = d->block[k].parent)
            chain[n++] = k;
        for (int l = 0; l < n; l++)
            b->chain[i * GRAPH_MAX_DEPTH + l] = chain[n - 1 - l];
        b->nchain[i] = n;
        /* the blocks this op opens: those whose first op it is */
        for (int l = 0; l < n; l++) {
            int k = chain[n - 1 - l];
            if (b->first_doc[k] != i)
                continue;
            b->block_pos[k] = b->scope[d->block[k].parent + 1].n;
            scope_add(&b->scope[d->block[k].parent + 1], -1 - k);
        }
        b->op_pos[i] = b->scope[d->op[i].block + 1].n;
        scope_add(&b->scope[d->op[i].block + 1], i);
    }
    for (int k = 0; k < d->nblocks; k++)
        if (b->first_doc[k] == d->nops)
            return err(b, &d->block[k].loc, "repeat", "expected a repeat block with ops");
    return 0;
}

static uint32_t name_hash(int scope, const char *name, size_t len)
{
    uint32_t h = 2166136261u ^ (uint32_t)scope; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)name[i]) * 16777619u;
    return h;
}

/* The slot of 'name' (its first 'len' bytes) in scope 's': its own, or the
 * empty one where it would go. */
static struct name_slot *name_slot(const struct build *b, int s, const char *name, size_t len)
{
    size_t mask = b->names_cap - 1;
    for (size_t h = name_hash(s, name, len) & mask;; h = (h + 1) & mask) {
        struct name_slot *sl = &b->names[h];
        if (sl->item == INT_MIN)
            return sl;
        const char *n = item_name(b, sl->item);
        if (sl->scope == s && strlen(n) == len && strncmp(n, name, len) == 0)
            return sl;
    }
}

/* Indexes every item's name and reports duplicates within each body (ops and
 * blocks share it): the later item, once. */
static void check_duplicates(struct build *b)
{
    size_t items = (size_t)b->d->nops + (size_t)b->d->nblocks;
    b->names_cap = 64;
    while (b->names_cap < 2 * items + 2)
        b->names_cap *= 2;
    b->names = xmalloc(sizeof *b->names * b->names_cap);
    for (size_t i = 0; i < b->names_cap; i++)
        b->names[i] = (struct name_slot){0, INT_MIN};
    for (int s = 0; s <= b->d->nblocks; s++) {
        const struct scope *sc = &b->scope[s];
        for (int i = 0; i < sc->n; i++) {
            int it = sc->item[i];
            const char *name = item_name(b, it);
            struct name_slot *sl = name_slot(b, s, name, strlen(name));
            if (sl->item == INT_MIN) {
                *sl = (struct name_slot){s, it};
                continue;
            }
            const struct diag_loc *loc = it >= 0 ? &b->d->op[it].loc : &b->d->block[-1 - it].loc;
            const char *path = it >= 0 ? b->d->op[it].path : "repeat.name";
            err(b, loc, path,
                "duplicate name '%s' (names are unique in a block's body and "
                "at the top level)",
                name);
        }
    }
}

/* ---------------- name resolution ---------------- */

/* The item named 'name' in scope 's' (block s - 1), or INT_MIN. */
static int find_in(const struct build *b, int s, const char *name, size_t len)
{
    return name_slot(b, s, name, len)->item;
}

/* Did-you-mean hints for the first unknown names only (each looks at every
 * visible name; diag_print shows the first 20 messages). */
#define HINTS_MAX 20

/* The closest visible name to 'word' from scope 's', for a did-you-mean hint. */
static const char *closest(const struct build *b, int s, const char *word)
{
    const char *best = NULL;
    size_t lw = strlen(word);
    for (int sc = s;; sc = b->d->block[sc - 1].parent + 1) {
        for (int i = 0; i < b->scope[sc].n; i++) {
            const char *n = item_name(b, b->scope[sc].item[i]);
            size_t ln = strlen(n), common = 0;
            while (common < ln && common < lw && n[common] == word[common])
                common++;
            if (!best && common * 2 >= (lw > ln ? lw : ln) && common > 0)
                best = n;
        }
        if (sc == 0)
            break;
    }
    return best;
}

/* Resolves 'text' seen from op 'o'; returns the op's document index, or -1. */
static int resolve(struct build *b, int o, const struct graph_ref *r, bool *prev)
{
    const struct graph_draft *d = b->d;
    const char *t = r->text;
    int scope = d->op[o].block + 1;
    *prev = strncmp(t, "prev.", 5) == 0;
    if (*prev) {
        t += 5;
        if (scope == 0)
            return err(b, &r->loc, r->path,
                       "'%s': prev. names an op of the previous "
                       "iteration, but this op is not inside a repeat block",
                       r->text);
    }
    const char *dot = strchr(t, '.');
    size_t len = dot ? (size_t)(dot - t) : strlen(t);
    int item = INT_MIN;
    for (int s = scope;; s = d->block[s - 1].parent + 1) {
        item = find_in(b, s, t, len);
        if (item != INT_MIN || *prev || s == 0)
            break;
    }
    while (item != INT_MIN && item < 0 && dot) { /* blk.x: into the block's body */
        t = dot + 1;
        dot = strchr(t, '.');
        len = dot ? (size_t)(dot - t) : strlen(t);
        item = find_in(b, -item, t, len);
    }
    if (item == INT_MIN && *prev && scope > 0) { /* prev.x with x outside the body */
        for (int s = d->block[scope - 1].parent + 1;; s = d->block[s - 1].parent + 1) {
            if (find_in(b, s, t, len) != INT_MIN)
                return err(b, &r->loc, r->path, "'%s': prev. names an op of this op's own "
                           "repeat body", r->text);
            if (s == 0)
                break;
        }
    }
    if (item == INT_MIN || dot) {
        const char *hint = b->errors < HINTS_MAX ? closest(b, scope, r->text) : NULL;
        return hint
                   ? err(b, &r->loc, r->path, "unknown op '%s' (did you mean '%s'?)", r->text, hint)
                   : err(b, &r->loc, r->path, "unknown op '%s'", r->text);
    }
    if (item < 0)
        return err(b, &r->loc, r->path,
                   "'%s' is a repeat block; name one of its ops, like "
                   "'%s.<op>'",
                   r->text, r->text);
    if (item == o && !*prev)
        return err(b, &r->loc, r->path, "'%s' is the op itself", r->text);
    return item;
}

static int shared_levels(const struct build *b, int i, int j)
{
    int n = 0;
    while (n < b->nchain[i] && n < b->nchain[j] &&
           b->chain[i * GRAPH_MAX_DEPTH + n] == b->chain[j * GRAPH_MAX_DEPTH + n])
        n++;
    return n;
}

static void resolve_all(struct build *b)
{
    const struct graph_draft *d = b->d;
    for (int o = 0; o < d->nops; o++) {
        b->deps[o] = xcalloc((size_t)d->op[o].nafter + 1, sizeof **b->deps);
        for (int k = 0; k < d->op[o].nafter; k++) {
            bool prev;
            int j = resolve(b, o, &d->op[o].after[k], &prev);
            if (j < 0)
                continue;
            int shared = shared_levels(b, o, j);
            if (prev && shared < b->nchain[o]) {
                err(b, &d->op[o].after[k].loc, d->op[o].after[k].path,
                    "'%s': prev. names an "
                    "op of this op's own repeat body",
                    d->op[o].after[k].text);
                continue;
            }
            b->deps[o][b->ndeps[o]++] = (struct graph_dep){j, shared, prev};
        }
    }
}

/* ---------------- order: each body sorted so every op follows what it waits for ----------------
 */

/* The position, among the items of its scope at level 'level', of the item
 * that holds op 'i' (the op itself at its own level). */
static int pos_at(const struct build *b, int i, int level)
{
    return level < b->nchain[i] ? b->block_pos[b->chain[i * GRAPH_MAX_DEPTH + level]]
                                : b->op_pos[i];
}

/* Every dependency becomes an edge between two items of the scope where the
 * waiter and the op waited for meet (prev. ones point back a whole iteration:
 * no edge). */
static void collect_edges(struct build *b)
{
    for (int o = 0; o < b->d->nops; o++) {
        for (int k = 0; k < b->ndeps[o]; k++) {
            const struct graph_dep *dep = &b->deps[o][k];
            if (dep->prev)
                continue;
            int level = dep->shared;
            int s = level ? b->chain[o * GRAPH_MAX_DEPTH + level - 1] + 1 : 0;
            int from = pos_at(b, dep->op, level), to = pos_at(b, o, level);
            if (from == to)
                continue;
            int c = b->nedge[s];
            if ((c & (c - 1)) == 0) /* room for a power of two: doubles */
                b->edge[s] = xrealloc(b->edge[s], sizeof **b->edge * 2 * (size_t)(c ? 2 * c : 1));
            b->edge[s][2 * b->nedge[s]] = from;
            b->edge[s][2 * b->nedge[s] + 1] = to;
            b->nedge[s]++;
        }
    }
}

/* Edges of scope 's': before[k] counts the items item k waits for; 'succ'
 * lists each item's waiters. */
static void scope_edges(const struct build *b, int s, int *before, int **succ, int *nsucc)
{
    for (int e = 0; e < b->nedge[s]; e++) {
        int from = b->edge[s][2 * e], to = b->edge[s][2 * e + 1];
        int c = nsucc[from];
        if ((c & (c - 1)) == 0) /* room for a power of two: doubles */
            succ[from] = xrealloc(succ[from], sizeof **succ * (size_t)(c ? 2 * c : 1));
        succ[from][nsucc[from]++] = to;
        before[to]++;
    }
}

/* A cycle among the items not placed (before[] > 0): reported at one of its ops. */
static void report_cycle(struct build *b, const struct scope *sc, const int *before)
{
    for (int k = 0; k < sc->n; k++) {
        if (before[k] == 0)
            continue;
        int it = sc->item[k];
        int op = it >= 0 ? it : b->first_doc[-1 - it];
        const struct graph_draft_op *o = &b->d->op[op];
        const struct graph_ref *r = o->nafter ? &o->after[0] : NULL;
        err(b, r ? &r->loc : &o->loc, r ? r->path : o->path,
            "'%s' is part of a dependency cycle (an op waits, directly or through others, "
            "for itself)",
            item_name(b, it));
        return;
    }
}

/* A min-heap of item positions (the ready items of a scope). */
struct heap {
    int *v, n;
};

static void heap_push(struct heap *h, int x)
{
    int i = h->n++;
    for (; i > 0 && h->v[(i - 1) / 2] > x; i = (i - 1) / 2)
        h->v[i] = h->v[(i - 1) / 2];
    h->v[i] = x;
}

static int heap_pop(struct heap *h)
{
    int top = h->v[0], x = h->v[--h->n], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->v[c + 1] < h->v[c])
            c++;
        if (h->v[c] >= x)
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    h->v[i] = x;
    return top;
}

/* Sorts scope 's' in place: Kahn's algorithm, taking the earliest item in
 * document order among those whose dependencies are placed (a heap of the
 * ready ones: O(E + N log N)). */
static void sort_scope(struct build *b, int s)
{
    struct scope *sc = &b->scope[s];
    int n = sc->n;
    int *before = xcalloc((size_t)n + 1, sizeof *before);
    int **succ = xcalloc((size_t)n + 1, sizeof *succ);
    int *nsucc = xcalloc((size_t)n + 1, sizeof *nsucc);
    int *out = xcalloc((size_t)n + 1, sizeof *out);
    struct heap ready = {xcalloc((size_t)n + 1, sizeof(int)), 0};
    scope_edges(b, s, before, succ, nsucc);
    for (int k = 0; k < n; k++)
        if (before[k] == 0)
            heap_push(&ready, k);
    int nout = 0;
    while (ready.n > 0) {
        int k = heap_pop(&ready);
        out[nout++] = sc->item[k];
        for (int e = 0; e < nsucc[k]; e++)
            if (--before[succ[k][e]] == 0)
                heap_push(&ready, succ[k][e]);
    }
    if (nout < n)
        report_cycle(b, sc, before);
    else
        memcpy(sc->item, out, sizeof *out * (size_t)n);
    for (int k = 0; k < n; k++)
        free(succ[k]);
    free(succ);
    free(nsucc);
    free(before);
    free(out);
    free(ready.v);
}

/* Lays out scope 's' in program order: ops into 'order', blocks as ranges. */
static void emit(const struct build *b, int s, struct graph *g, int *order, int *pos)
{
    const struct scope *sc = &b->scope[s];
    for (int k = 0; k < sc->n; k++) {
        int it = sc->item[k];
        if (it >= 0) {
            order[(*pos)++] = it;
            continue;
        }
        int blk = -1 - it;
        g->block[blk].first = *pos;
        emit(b, blk + 1, g, order, pos);
        g->block[blk].end = *pos;
    }
}

/* ---------------- the program ---------------- */

static char *qualified(const struct graph_draft *d, int block, const char *name)
{
    char *q = xstrdup(name);
    for (int k = block; k >= 0; k = d->block[k].parent) {
        char *n = xasprintf("%s.%s", d->block[k].name, q);
        free(q);
        q = n;
    }
    return q;
}

static void fill_blocks(const struct build *b, struct graph *g)
{
    const struct graph_draft *d = b->d;
    for (int k = 0; k < d->nblocks; k++) {
        struct graph_block *gb = &g->block[k];
        gb->name = d->block[k].parent < 0 ? xstrdup(d->block[k].name)
                                          : qualified(d, d->block[k].parent, d->block[k].name);
        gb->parent = d->block[k].parent;
        gb->depth = b->depth[k];
        gb->count = d->block[k].count;
    }
}

static int fill_nodes(struct build *b, struct graph *g, const int *order)
{
    const struct graph_draft *d = b->d;
    int *where = xcalloc((size_t)d->nops + 1, sizeof *where); /* document -> program */
    for (int p = 0; p < d->nops; p++)
        where[order[p]] = p;
    for (int p = 0; p < d->nops; p++) {
        int o = order[p];
        struct graph_node *n = &g->node[p];
        n->block = d->op[o].block;
        n->depth = b->nchain[o];
        n->instances = 1;
        for (int l = 0; l < n->depth; l++) {
            n->chain[l] = b->chain[o * GRAPH_MAX_DEPTH + l];
            n->instances = sat_mul64(n->instances, g->block[n->chain[l]].count);
        }
        n->has_after = d->op[o].has_after;
        n->overlap = d->op[o].overlap;
        n->qname = qualified(d, d->op[o].block, d->op[o].name);
        n->ndeps = b->ndeps[o];
        n->deps = b->deps[o];
        b->deps[o] = NULL;
        for (int k = 0; k < n->ndeps; k++)
            n->deps[k].op = where[n->deps[k].op];
        g->instances = sat_add64(g->instances, n->instances);
        if (n->instances > GRAPH_MAX_INSTANCES || g->instances > GRAPH_MAX_INSTANCES)
            err(b, &d->op[o].loc, d->op[o].path,
                "the workload would run more than %d op "
                "instances (repeat counts multiply)",
                GRAPH_MAX_INSTANCES);
    }
    free(where);
    return b->errors ? -1 : 0;
}

static void build_fini(struct build *b)
{
    for (int s = 0; s <= b->d->nblocks; s++) {
        free(b->scope[s].item);
        free(b->edge[s]);
    }
    free(b->edge);
    free(b->nedge);
    free(b->op_pos);
    free(b->block_pos);
    for (int o = 0; o < b->d->nops; o++)
        free(b->deps[o]);
    free(b->scope);
    free(b->depth);
    free(b->chain);
    free(b->nchain);
    free(b->first_doc);
    free(b->deps);
    free(b->ndeps);
    free(b->names);
}

int graph_finish(const struct graph_draft *d, struct graph *g, int *order, struct diag *diag)
{
    memset(g, 0, sizeof *g);
    size_t no = (size_t)d->nops + 1, nb = (size_t)d->nblocks + 1;
    struct build b = {.d = d, .diag = diag};
    b.scope = xcalloc(nb, sizeof *b.scope);
    b.depth = xcalloc(nb, sizeof *b.depth);
    b.chain = xcalloc(no * GRAPH_MAX_DEPTH, sizeof *b.chain);
    b.nchain = xcalloc(no, sizeof *b.nchain);
    b.first_doc = xcalloc(nb, sizeof *b.first_doc);
    b.deps = xcalloc(no, sizeof *b.deps);
    b.ndeps = xcalloc(no, sizeof *b.ndeps);
    b.op_pos = xcalloc(no, sizeof *b.op_pos);
    b.block_pos = xcalloc(nb, sizeof *b.block_pos);
    b.edge = xcalloc(nb, sizeof *b.edge);
    b.nedge = xcalloc(nb, sizeof *b.nedge);
    if (build_scopes(&b) == 0) {
        check_duplicates(&b);
        resolve_all(&b);
    }
    if (!b.errors)
        collect_edges(&b);
    for (int s = 0; !b.errors && s <= d->nblocks; s++)
        sort_scope(&b, s);
    if (!b.errors) {
        g->nops = d->nops;
        g->nblocks = d->nblocks;
        g->node = xcalloc(no, sizeof *g->node);
        g->block = xcalloc(nb, sizeof *g->block);
        int pos = 0;
        emit(&b, 0, g, order, &pos);
        fill_blocks(&b, g);
        fill_nodes(&b, g, order);
    }
    int rc = b.errors ? -1 : 0;
    build_fini(&b);
    if (rc)
        graph_fini(g);
    return rc;
}

void graph_fini(struct graph *g)
{
    for (int i = 0; g->node && i < g->nops; i++) {
        free(g->node[i].deps);
        free(g->node[i].qname);
    }
    for (int k = 0; g->block && k < g->nblocks; k++)
        free(g->block[k].name);
    free(g->node);
    free(g->block);
    memset(g, 0, sizeof *g);
}

/* ---------------- instances ---------------- */

int64_t graph_instance(const struct graph *g, int i, const int64_t *it)
{
    const struct graph_node *n = &g->node[i];
    int64_t inst = 0;
    for (int l = 0; l < n->depth; l++)
        inst = inst * g->block[n->chain[l]].count + it[l];
    return inst;
}

int64_t graph_dep_instance(const struct graph *g, int i, const struct graph_dep *dep,
                           const int64_t *it)
{
    (void)i;
    const struct graph_node *n = &g->node[dep->op];
    int64_t v[GRAPH_MAX_DEPTH] = {0};
    for (int l = 0; l < n->depth; l++)
        v[l] = l < dep->shared ? it[l] : g->block[n->chain[l]].count - 1;
    if (dep->prev && --v[dep->shared - 1] < 0)
        return -1;
    return graph_instance(g, dep->op, v);
}

/* ---------------- walking ---------------- */

struct walk_state {
    const struct graph *g;
    graph_visit_fn *visit;
    void *ctx;
    int64_t it[GRAPH_MAX_DEPTH];
    bool have_prev;
    int prev_op;
    int64_t prev_inst;
    struct graph_waits prev_waits;
};

static void add_wait(struct graph_waits *s, int op, int64_t inst)
{
    if (inst < 0 || s->n == GRAPH_MAX_WAITS)
        return;
    s->op[s->n] = op;
    s->inst[s->n++] = inst;
}

static void waits_of(const struct walk_state *w, int i, struct graph_waits *s)
{
    const struct graph_node *n = &w->g->node[i];
    s->n = 0;
    if (n->has_after) {
        for (int k = 0; k < n->ndeps; k++)
            add_wait(s, n->deps[k].op, graph_dep_instance(w->g, i, &n->deps[k], w->it));
    } else if (n->overlap) {
        *s = w->prev_waits;
    } else if (w->have_prev) {
        add_wait(s, w->prev_op, w->prev_inst);
    }
}

static void walk_range(struct walk_state *w, int blk, int first, int end)
{
    const struct graph *g = w->g;
    int depth = blk < 0 ? 0 : g->block[blk].depth;
    for (int i = first; i < end;) {
        const struct graph_node *n = &g->node[i];
        if (n->depth > depth) { /* the op opens a nested block: run it 'count' times */
            int b = n->chain[depth];
            for (int64_t k = 0; k < g->block[b].count; k++) {
                w->it[depth] = k;
                walk_range(w, b, g->block[b].first, g->block[b].end);
            }
            i = g->block[b].end;
            continue;
        }
        int64_t inst = graph_instance(g, i, w->it);
        struct graph_waits s;
        waits_of(w, i, &s);
        w->visit(w->ctx, i, inst, &s);
        w->prev_waits = s;
        w->prev_op = i;
        w->prev_inst = inst;
        w->have_prev = true;
        i++;
    }
}

void graph_walk(const struct graph *g, graph_visit_fn *visit, void *ctx)
{
    struct walk_state w = {.g = g, .visit = visit, .ctx = ctx};
    walk_range(&w, -1, 0, g->nops);
}
