/* workload/hlo_fuse.h -- XLA's fusion and reduce-scatter creation, planned
 * for a module dumped before them (workload/hlo_fuse.c). Uses workload/hlo.h. */
#ifndef TPUSIM_WORKLOAD_HLO_FUSE_H
#define TPUSIM_WORKLOAD_HLO_FUSE_H

#include <stdbool.h>

#include "workload/hlo.h"

/* Per instruction of one computation. */
struct hlo_fuse {
    bool *fused;      /* runs inside its reader(s): no op, no HBM result */
    bool *free_slice; /* the dynamic-slice of an all-reduce made a reduce-scatter */
    double *in_bytes; /* what it reads from HBM (fused operands: their own reads) */
    bool *sunk;       /* a loop-invariant fusible value sunk into this while body
                       * (hlo_fuse_sink): its readers read in_bytes[i] for it */
    bool fusing;      /* planned with fusion (a module before XLA's) */
    int *users;       /* its readers (the computation's result counts one) */
};

/* Whether 'm' holds no fusion (dumped before XLA's fusion passes). */
bool hlo_unfused(const struct hlo_module *m);
/* The plan of 'c' into 'f' (fusing only when 'fuse'); free with hlo_fuse_free. */
void hlo_fuse_plan(const struct hlo_comp *c, bool fuse, struct hlo_fuse *f);
void hlo_fuse_free(struct hlo_fuse *f);
/* The dynamic-slice (index in 'c') that is all-reduce 'ar''s one reader,
 * slicing its operand 0, or -1. */
int hlo_fuse_scatter_slice(const struct hlo_comp *c, int ar);

/* Whether all-gather 'ag' of a while body 'c' gathers what is sliced out of
 * the loop's parameters only (XLA's collective pipeliner issues it one
 * iteration ahead). */
bool hlo_fuse_pipelined(const struct hlo_comp *c, int ag);

/* XLA's while-loop fusible sinking: what a reader of element 'x' of
 * computation 'c' (a while's initial tuple element) reads from HBM per
 * iteration once it is sunk into the body and fused there: the small
 * operands of a broadcast, constants, iotas and elementwise ops over such
 * (at most 8 deep); -1 when 'x' is no such value. */
double hlo_fuse_sinkable(const struct hlo_comp *c, int x);
/* Whether while body 'body' passes element k of its parameter back
 * unchanged (a loop invariant: ROOT tuple(..., get-tuple-element(p), index=k, ...)). */
bool hlo_fuse_invariant(const struct hlo_comp *body, int k);
/* Element k of the body's parameter (its get-tuple-elements) is read as
 * 'sunk[k]' bytes when sunk[k] >= 0 (n elements); readers' reads redone. */
void hlo_fuse_sink(const struct hlo_comp *c, const double *sunk, int n, struct hlo_fuse *f);

#endif
