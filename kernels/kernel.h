/* kernels/kernel.h -- an op turned into a sequence of pallas_calls.
 * Each Pallas-based op kind (matmul, flash attention, splash, paged) has a
 * struct kern_kind in kernels/<kind>.c (declared in kernels/ops.h, named by
 * the op table's row); engine/ runs k->calls[0..ncalls) in order
 * on every core (megacore-split by their parallel dims), then, in functional
 * mode, asks the kind to verify its outputs against a naive reference. */
#ifndef TPUSIM_KERNELS_KERNEL_H
#define TPUSIM_KERNELS_KERNEL_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/ops.h"
#include "kernels/pallas.h"

#define KERN_MAX_CALLS 8

struct kern;

struct kern_kind {
    /* Builds the calls of 'op' on 'chip' into 'k' (k->op, k->chip are set).
     * Checks upstream's rules; returns 0, or -1 with upstream's message in 'err'. */
    int (*init)(struct kern *k, char *err, size_t n);
    /* Functional mode: allocates host arrays with seeded inputs and binds them
     * to the calls' operands. */
    void (*data)(struct kern *k, uint64_t seed);
    /* Functional mode: compares outputs with a naive reference; returns the
     * worst error and sets '*ok' against the kind's tolerance; may describe
     * the failure in 'msg'. */
    double (*verify)(const struct kern *k, bool *ok, char *msg, size_t n);
    void (*fini)(struct kern *k);
    /* Frees what the op's parameters own (masks, length lists); may be NULL. */
    void (*params_fini)(struct op *op);
};

struct kern {
    const struct kern_kind *kind;
    const struct op *op;            /* borrowed */
    const struct chip_params *chip; /* borrowed */
    bool functional;
    int ncalls;
    struct pl_call *calls;          /* owned: ncalls of them (room for KERN_MAX_CALLS while built) */
    void *impl;                     /* the kind's state; freed by fini */
};

/* Builds 'k' for 'op' with the builder 'kind' (the op table's row says which).
 * 'functional' requests host data (op->functional may ask for it, but engine/
 * only gives it to one chip). Returns 0 or -1 with 'err'. */
int kern_init(struct kern *k, const struct kern_kind *kind, const struct op *op,
              const struct chip_params *chip, bool functional, char *err, size_t n);
void kern_data(struct kern *k, uint64_t seed);
double kern_verify(const struct kern *k, bool *ok, char *msg, size_t n);
void kern_fini(struct kern *k);
/* Grid steps of all calls (for the resource guard). */
int64_t kern_steps(const struct kern *k);

/* Deterministic uniform value in [-1, 1) for element 'i' of stream 'seed'. */
float kern_rand(uint64_t seed, uint64_t i);
/* Returns a new array of 'n' seeded values scaled by 'scale', rounded to 'dt'; caller frees. */
float *kern_rand_array(uint64_t seed, int64_t n, enum dtype dt, float scale);
/* A kernel's scalar prefetch ('what' it holds, 'bytes' of it) against the
 * chip's SMEM: 0, or -1 with "scalar prefetch (WHAT) needs N bytes of SMEM,
 * the chip has M". Checked before the tables are built (they can be
 * terabytes of host memory). */
int kern_check_smem(const struct kern *k, uint64_t bytes, const char *what, char *err, size_t n);


#endif
