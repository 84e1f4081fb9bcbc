/* models/vpu.c -- vreg-slot timing of vector work. */
#include "models/vpu.h"

double vpu_vregs(const struct chip_params *chip, int64_t rows, int64_t cols)
{
    int64_t s = chip->vpu_sublanes, l = chip->vpu_lanes;
    return (double)((rows + s - 1) / s) * (double)((cols + l - 1) / l);
}

void vpu_add(struct vpu_ops *ops, const struct chip_params *chip, int64_t rows, int64_t cols,
             double alu, double load, double store, double eup, double xlu)
{
    double v = vpu_vregs(chip, rows, cols);
    ops->alu += alu * v;
    ops->load += load * v;
    ops->store += store * v;
    ops->eup += eup * v;
    ops->xlu += xlu * v;
}

void vpu_merge(struct vpu_ops *to, const struct vpu_ops *from)
{
    to->alu += from->alu;
    to->load += from->load;
    to->store += from->store;
    to->eup += from->eup;
    to->xlu += from->xlu;
}

static double max2(double a, double b)
{
    return a > b ? a : b;
}

double vpu_time_s(const struct chip_params *chip, const struct vpu_ops *ops)
{
    double c = ops->alu / chip->vpu_alu_per_cycle;
    c = max2(c, ops->load / chip->vpu_load_per_cycle);
    c = max2(c, ops->store / chip->vpu_store_per_cycle);
    c = max2(c, ops->eup / chip->eup_per_cycle);
    c = max2(c, ops->xlu / chip->xlu_per_cycle);
    return c / chip->clock_hz;
}
