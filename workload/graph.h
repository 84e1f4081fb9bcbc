/* workload/graph.h -- the workload as a program: ops with dependencies, in
 * repeated blocks. The loader describes what the document says (a draft:
 * ops and `repeat:` blocks in document order, each op's name and `after:`
 * references); graph_finish resolves the names per scope, orders each block's
 * items so that every op comes after what it waits for (document order where
 * the document allows it; a cycle is an error), and gives each op its
 * dependencies in a form the engine resolves per iteration. Loading costs
 * grow with the ops written, not with the repeat counts. Uses base/ only.
 *
 * Names: an op's name is unique in its block's body; `after: [x]` looks x up
 * in the op's own body, then in the enclosing ones; `after: [blk.x]` is op x
 * of the repeat block named blk (its last iteration, seen from outside);
 * `after: [prev.x]` is x in the previous iteration of the innermost repeat
 * (nothing to wait for in the first). Without `after`, an op waits for the
 * op before it in program order; with `overlap: true`, for what that op
 * waited for (it starts alongside it). */
#ifndef TPUSIM_WORKLOAD_GRAPH_H
#define TPUSIM_WORKLOAD_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "base/diag.h"

#define GRAPH_MAX_DEPTH 8             /* nested repeat blocks */
#define GRAPH_MAX_INSTANCES 100000000 /* op instances a program may run */

/* ---- the draft the loader fills, in document order ---- */
struct graph_ref {
    char *text;          /* owned: "x", "blk.x", "prev.x" */
    struct diag_loc loc; /* where it is written ('file' borrowed) */
    char *path;          /* owned: its key path, for messages */
};

struct graph_draft_op {
    int block;           /* innermost enclosing block, -1 at top level */
    char *name;          /* owned: the op's own name (the document's or a default) */
    bool named;          /* the document named it */
    struct diag_loc loc; /* of its name (or of the op) */
    char *path;          /* owned: its key path ("workload.3.repeat.ops.1") */
    int nafter;
    struct graph_ref *after; /* owned; NULL when the op has no after: */
    bool has_after;
    bool overlap;
};

struct graph_draft_block {
    int parent; /* -1 at top level */
    char *name; /* owned */
    int64_t count;
    struct diag_loc loc;
};

struct graph_draft {
    int nops, nblocks;
    struct graph_draft_op *op;       /* owned */
    struct graph_draft_block *block; /* owned */
    int capops, capblocks;
};

/* Adds a block inside 'parent' (-1: top level); returns its index. */
int graph_draft_block(struct graph_draft *d, int parent, const char *name, int64_t count,
                      const struct diag_loc *loc);
/* Adds an op inside 'block'; returns its index. The draft takes nothing from the
 * caller: it copies 'name' and 'path'. */
int graph_draft_op(struct graph_draft *d, int block, const char *name, bool named,
                   const struct diag_loc *loc, const char *path, bool overlap);
/* Says op 'op' has an after: list (maybe empty: then it waits for nothing). */
void graph_draft_has_after(struct graph_draft *d, int op);
/* Adds `after` reference 'text' (at 'loc', key path 'path') to op 'op'. */
void graph_draft_after(struct graph_draft *d, int op, const char *text, const struct diag_loc *loc,
                       const char *path);
void graph_draft_fini(struct graph_draft *d);

/* ---- the program ---- */
struct graph_dep {
    int op;     /* the op waited for (program index) */
    int shared; /* outer block levels the two share: those iterations are the waiter's */
    bool prev;  /* the previous iteration of the innermost shared block */
};

struct graph_block {
    char *name; /* owned: qualified ("layers", "layers.inner") */
    int parent; /* -1 */
    int depth;  /* 1 for a top-level block */
    int64_t count;
    int first, end; /* its ops, [first, end) in program order */
};

struct graph_node {
    int block;                  /* innermost enclosing block, -1 */
    int depth;                  /* enclosing blocks */
    int chain[GRAPH_MAX_DEPTH]; /* enclosing blocks, outermost first */
    int64_t instances;          /* how many times it runs: the product of the enclosing counts */
    bool has_after;             /* 'deps' replace the implicit dependency */
    bool overlap;
    int ndeps;
    struct graph_dep *deps; /* owned */
    char *qname;            /* owned: qualified name ("layers.qkv") */
};

struct graph {
    int nops;
    struct graph_node *node; /* owned, in program order */
    int nblocks;
    struct graph_block *block; /* owned; a parent comes before its children */
    int64_t instances;         /* op instances the program runs */
};

/* Resolves and orders draft 'd' into 'g'. 'order' (room for d->nops) gets, for
 * each program index, the document index of the op. Returns 0, or -1 with
 * "file:line:col: key.path: ..." messages (unknown or duplicate names, a
 * cycle, prev. outside a repeat) in 'diag'. */
int graph_finish(const struct graph_draft *d, struct graph *g, int *order, struct diag *diag);
void graph_fini(struct graph *g);

/* The instance number of op 'i' at iteration vector 'it' (one entry per
 * enclosing block, outermost first). */
int64_t graph_instance(const struct graph *g, int i, const int64_t *it);
/* The instance of dependency 'dep' of op 'i' at iteration vector 'it', or -1
 * when there is nothing to wait for (prev. in a first iteration). */
int64_t graph_dep_instance(const struct graph *g, int i, const struct graph_dep *dep,
                           const int64_t *it);

/* ---- walking the program ---- */
#define GRAPH_MAX_WAITS 64 /* op instances one instance waits for */

/* What an op instance waits for (its explicit or implicit dependencies). */
struct graph_waits {
    int n;
    int op[GRAPH_MAX_WAITS];
    int64_t inst[GRAPH_MAX_WAITS];
};

/* Called for every op instance in program order. */
typedef void graph_visit_fn(void *ctx, int op, int64_t inst, const struct graph_waits *w);

/* Visits every op instance of 'g' in program order with what it waits for:
 * its after: list resolved for that iteration, or the instance visited just
 * before it (or, with overlap: true, what that one waited for). */
void graph_walk(const struct graph *g, graph_visit_fn *visit, void *ctx);

#endif
