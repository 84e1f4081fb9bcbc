/* kernels/pcall.h -- a generic pallas_call written in the scenario: its grid,
 * BlockSpecs (block shapes and affine index maps), scratch, dimension
 * semantics, scalar prefetch, and a body given either as per-step work
 * counts or as a short list of primitives on blocks (dot, element-wise
 * functions, reductions, casts, stores) that tpusim prices with the same
 * helpers as its built-in kernels (kernels/pallas.h: pl_matmul, pl_vpu,
 * pl_mxu_feed, pl_mxu_drain). The config loader (config/cfg_pcall.c) fills a
 * struct pc_spec; kern_pcall_kind (kernels/pcall.c) turns it into one
 * struct pl_call, which runs on the same pipeline as every built-in kernel.
 * The expression parser here is pure C (no YAML) so that tests can call it. */
#ifndef TPUSIM_KERNELS_PCALL_H
#define TPUSIM_KERNELS_PCALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/ops.h"
#include "kernels/pallas.h"

#define PC_NAME_MAX 32
#define PC_MAX_ITEMS 64      /* body primitives or work entries */
#define PC_MAX_VALUES 96     /* operands + scratch + named temporaries */
#define PC_EXPR_MAX_CHARS 256
/* Largest magnitude of a coefficient, a constant or any partial result of an
 * expression (and of a block index it yields over the grid): 2^40. */
#define PC_EXPR_MAX ((int64_t)1 << 40)
/* Most grid steps a pallas_call may have (the grid's product). */
#define PC_MAX_STEPS ((int64_t)1 << 30)

/* c + sum coef[i] * g[i] over the grid indices g. */
struct pc_affine {
    int64_t coef[PL_MAX_GRID];
    int64_t c;
};

enum pc_cmp { PC_EQ, PC_NE, PC_LT, PC_LE, PC_GT, PC_GE };

/* 'e' cmp 0 (the parser moves the right side over). */
struct pc_cond {
    struct pc_affine e;
    enum pc_cmp cmp;
};

/* Parses 's' as an affine expression of the names 'names[0..n)' (the grid
 * indices, in order) with integers, +, -, * (one side constant) and
 * parentheses. Returns 0, or -1 with what is wrong in 'why' ("'x' is not a
 * grid index (i, j, k)", "division is not affine", ...). */
int pc_parse_affine(const char *s, const char *const *names, int n, struct pc_affine *out,
                    char *why, size_t wn);
/* Parses "A op B" (op one of == != < <= > >=), A and B affine. */
int pc_parse_cond(const char *s, const char *const *names, int n, struct pc_cond *out, char *why,
                  size_t wn);
int64_t pc_eval(const struct pc_affine *a, const int64_t *g);
bool pc_cond_true(const struct pc_cond *c, const int64_t *g);
/* The least and greatest value of 'a' over the grid 'grid[0..n)' (an affine
 * function takes them at corners). */
void pc_range(const struct pc_affine *a, const int64_t *grid, int n, int64_t *lo, int64_t *hi);

/* ---- the spec ---- */

struct pc_operand {
    char name[PC_NAME_MAX];
    enum pl_dir dir;
    enum pl_space space;
    enum dtype dt;
    int rank;
    int64_t shape[PL_MAX_RANK];
    int64_t block[PL_MAX_RANK]; /* PL_SQUEEZED for None */
    struct pc_affine index[PL_MAX_RANK];
    bool has_index;  /* false: the index map is all zeros (a trivial window if block = shape) */
    int buffers;     /* 0 (default 2), 1 or 2 */
    bool prefetch;   /* a scalar-prefetch operand (SMEM, whole, before step 0) */
};

struct pc_scratch {
    char name[PC_NAME_MAX];
    enum pl_space space;
    enum dtype dt;
    int rank;
    int64_t shape[PL_MAX_RANK];
};

/* Body primitives. */
enum pc_prim {
    PC_DOT,      /* a[M,K] . b[K,N] (b[N,K] with transpose_b): the MXU */
    PC_FN,       /* an element-wise function (enum xla_fn) of 1 or 2 values */
    PC_REDUCE,   /* sum, max or min over one axis */
    PC_CAST,     /* to another dtype */
    PC_ZERO,     /* a ref filled with a constant (a store) */
    PC_SYNC,     /* ends a group of VPU ops issued together */
    PC_WORK,     /* per-step counts: MXU flops per dtype, VPU ops, transcendentals, XLU ops */
};

enum pc_reduce { PC_SUM, PC_MAX, PC_MIN };

/* A value: an operand (0..noperands), a scratch buffer, or a temporary. */
struct pc_value {
    char name[PC_NAME_MAX];
    int64_t rows, cols; /* the block as the body sees it: (prod of all but the last dim, last) */
    enum dtype dt;
    bool ref;           /* a VMEM/SMEM buffer: read by a load, written by a store */
    bool hbm;           /* an operand in memory space any: the body cannot touch it */
};

struct pc_item {
    enum pc_prim prim;
    int nargs;
    int args[2];        /* values */
    int fn;             /* PC_FN: enum xla_fn; PC_REDUCE: enum pc_reduce */
    int axis;           /* PC_REDUCE: 0 (rows) or 1 (cols) */
    bool transpose_b;   /* PC_DOT */
    enum dtype dt;      /* PC_DOT: the MXU dtype; PC_CAST: the target */
    int acc;            /* PC_DOT: a ref acc += result (-1: none) */
    int into;           /* a ref the result is stored into (-1: none) */
    int as;             /* the temporary it defines (-1: none) */
    int64_t repeat;     /* times per step (default 1) */
    bool has_when;
    struct pc_cond when;
    /* PC_WORK */
    double mxu_flops[DT_COUNT], vpu_ops, transcendentals, xlu_ops;
};

struct pc_spec {
    int ngrid;
    int64_t grid[PL_MAX_GRID];
    char grid_names[PL_MAX_GRID][PC_NAME_MAX];
    enum pl_dim_sem sem[PL_MAX_GRID];
    int num_scalar_prefetch;
    int noperands;      /* inputs (prefetch first) then outputs */
    struct pc_operand operands[PL_MAX_OPERANDS];
    int nscratch;
    struct pc_scratch scratch[PL_MAX_OPERANDS];
    int nvalues;        /* operands, then scratch, then temporaries */
    struct pc_value values[PC_MAX_VALUES];
    int nitems;
    struct pc_item items[PC_MAX_ITEMS];
};

/* The kernel-side view of operand or scratch dims: (rows, cols). */
void pc_view(int rank, const int64_t *dims, int64_t *rows, int64_t *cols);
/* Checks what the loader cannot see item by item: block indices in range
 * over the whole grid, block shapes that divide, the step count. Returns 0,
 * or -1 with the reason in 'err'. */
int pc_check(const struct pc_spec *s, char *err, size_t n);

#endif
