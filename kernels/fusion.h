/* kernels/fusion.h -- an XLA loop fusion as the pipelined loop XLA emits: a
 * pallas_call whose grid walks the loop's shape (its "space") in blocks of
 * rows, DMAs every input block HBM->VMEM and every output block back, and
 * whose body reports its vector work (models/vpu.h) per block. The space is
 * viewed as [rows, cols] (cols: its last dim; a 1-D space as flat elements);
 * a reduction along the last axis keeps the rows and drops the cols (cross-
 * lane: one XLU reduce per 8 rows), one along another axis walks that axis
 * innermost as an "arbitrary" grid dim (the second-to-last: one XLU sublane
 * reduce per output vreg at the end; a leading one: plain adds). How each
 * array is read follows from its shape (numpy broadcasting): the space's
 * shape; a suffix of it (a [d] scale: repeated along the rows, read once when
 * it fits one block); one value per row ([.., 1], stored flat); a scalar.
 * The named forms (kernels/xla.c) and 'fusion' (kernels/fusion.c) build
 * their loops here. */
#ifndef TPUSIM_KERNELS_FUSION_H
#define TPUSIM_KERNELS_FUSION_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/kernel.h"

#define FUSION_MAX OP_FUSION_MAX_IO

enum fusion_rel {
    FUSION_AUTO,       /* classify by shape (fusion_relation) */
    FUSION_SAME,       /* the space's shape */
    FUSION_TILE,       /* a suffix of it: repeated along the leading dims */
    FUSION_ROW,        /* one value per row (the space with a last dim of 1), stored flat */
    FUSION_GROUP,      /* [rows, c]: one group of c values per row, reused along the row */
    FUSION_SCALAR,     /* one value */
    FUSION_REDUCED,    /* an output: the space without reduce_axis */
    FUSION_BAD,        /* not broadcastable to the space */
    FUSION_UNSUPPORTED /* broadcastable, but not the way a loop reads it */
};

/* One loop; the work counts are per element of the space, the row counts
 * per row of the space once its last column block is done. */
struct fusion_loop {
    const char *name;      /* the call's name; NULL: the op's */
    struct op_array space; /* the shape the loop walks (dtype unused) */
    int nin, nout;
    struct op_array in[FUSION_MAX], out[FUSION_MAX];
    const char *in_name[FUSION_MAX], *out_name[FUSION_MAX];  /* NULL: in0.., out0.. */
    enum fusion_rel in_rel[FUSION_MAX], out_rel[FUSION_MAX]; /* FUSION_AUTO: by shape */
    int reduce_axis;                                         /* -1: none */
    double alu, eup, xlu;             /* VPU ALU ops, transcendentals, XLU ops per element */
    double row_alu, row_eup, row_xlu; /* per row (after in-loop row reductions) */
    bool whole_rows; /* in-loop reductions along the last axis: blocks span whole rows */
    bool dma_only;   /* no vector work (a gather) */
    int64_t block;   /* rows per block (elements for a 1-D space); 0: auto */
};

/* A loop over 'space' with no arrays, no work, no reduction, auto block. */
void fusion_loop_init(struct fusion_loop *l, const struct op_array *space);
/* Adds input or output 'a' to 'l' read as 'rel' (FUSION_AUTO: by shape),
 * named 'name' (may be NULL). */
void fusion_add_in(struct fusion_loop *l, const struct op_array *a, enum fusion_rel rel,
                   const char *name);
void fusion_add_out(struct fusion_loop *l, const struct op_array *a, enum fusion_rel rel,
                    const char *name);

/* How array 'a' relates to 'space' by numpy broadcasting; 'reduce_axis' >= 0
 * also allows the space without that axis (FUSION_REDUCED) for an 'output'. */
enum fusion_rel fusion_relation(const struct op_array *space, const struct op_array *a,
                                int reduce_axis, bool output);
/* Checks that the loop of 'fusion' op 'p' can read every array: returns 0,
 * or -1 with the first that it cannot in '*out' (an output), '*index' and
 * what its shape should be in 'want'. */
int fusion_check_op(const struct op_fusion *p, bool *out, int *index, char *want, size_t n);
/* Writes "[4096, 4096]" into 'buf'. */
void fusion_shape_str(const struct op_array *a, char *buf, size_t n);

/* Builds one pallas_call per loop of 'loops' into 'k', with blocks chosen
 * from the scoped VMEM limit where a loop's block is 0: whole rows when they
 * fit, then the largest power-of-two number of rows (elements for a 1-D
 * loop) whose footprint fits half the limit. Sets k->impl (the kind's fini
 * must call fusion_fini). Returns 0, or -1 with the reason in 'err'. */
int fusion_build(struct kern *k, const struct fusion_loop *loops, int n, char *err, size_t errn);
void fusion_fini(struct kern *k);
/* XLA ops report work, not values: returns 0, or -1 with the reason in 'err'
 * when 'k' was asked for functional mode. */
int fusion_reject_functional(const struct kern *k, char *err, size_t n);

#endif
