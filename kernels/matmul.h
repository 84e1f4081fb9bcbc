/* kernels/matmul.h -- the Pallas TPU blocked matmul (docs/pallas/tpu/matmul).
 * grid (m/bm, n/bn, k/bk), semantics (parallel, parallel, arbitrary);
 * x block (bm, bk) at (i, k), y block (bk, bn) at (k, j), o block (bm, bn)
 * at (i, j); an f32 (bm, bn) VMEM accumulator zeroed at k == 0 and stored
 * (cast) at the last k. int8 inputs give an int32 output. */
#ifndef TPUSIM_KERNELS_MATMUL_H
#define TPUSIM_KERNELS_MATMUL_H

#include "kernels/ops.h"
#include "kernels/pallas.h"

struct kern_matmul {
    struct op_matmul p;
    struct pl_call call;
    float *x, *y, *o; /* functional mode: host arrays (owned) */
};

/* Builds the pallas_call for 'op'. Checks divisibility ("m=100 should be
 * divisible by bm=64") and then pl_check(). Returns 0 or -1 with 'err'. */
int kern_matmul_init(struct kern_matmul *km, const struct op *op, const struct chip_params *chip,
                     char *err, size_t n);
/* Functional mode: fills x and y with seeded values rounded to the dtype. */
void kern_matmul_data(struct kern_matmul *km, uint64_t seed);
/* Functional mode: compares o with a float64 reference; returns the max
 * relative error and sets '*ok' against the dtype's tolerance. */
double kern_matmul_verify(const struct kern_matmul *km, bool *ok);
void kern_matmul_fini(struct kern_matmul *km);

/* Deterministic uniform value in [-1, 1) for element 'i' of stream 'seed'. */
float kern_rand(uint64_t seed, uint64_t i);

#endif
