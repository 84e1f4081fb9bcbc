/* models/vpu.h -- vector unit timing, counted in vregs.
 * A vreg holds (sublanes x lanes) 32-bit values: 8 x 128. An element-wise op
 * on a (rows, cols) f32 tile touches ceil(rows/8) * ceil(cols/128) vregs
 * (cols padded to 128 lanes). Each class of op has its own issue rate per
 * cycle (VLIW slots); a group of ops takes as long as its busiest slot. */
#ifndef TPUSIM_MODELS_VPU_H
#define TPUSIM_MODELS_VPU_H

#include <stdint.h>

#include "models/chip.h"

struct vpu_ops {
    double alu;   /* element-wise arithmetic, compares, selects, casts */
    double load;  /* vreg loads from VMEM */
    double store; /* vreg stores to VMEM */
    double eup;   /* transcendentals (exp, log, rsqrt, ...) */
    double xlu;   /* cross-lane reductions and broadcasts */
};

/* Number of vregs a (rows, cols) tile of 32-bit values occupies on 'chip'. */
double vpu_vregs(const struct chip_params *chip, int64_t rows, int64_t cols);
/* Adds 'n' ops of each class over a (rows, cols) tile to 'ops'. */
void vpu_add(struct vpu_ops *ops, const struct chip_params *chip, int64_t rows, int64_t cols,
             double alu, double load, double store, double eup, double xlu);
/* Adds every count of 'from' to 'to'. */
void vpu_merge(struct vpu_ops *to, const struct vpu_ops *from);
/* Time in seconds of 'ops' on one TensorCore. */
double vpu_time_s(const struct chip_params *chip, const struct vpu_ops *ops);

#endif
