/* models/mxu.c -- systolic-array time of one matmul. */
#include "models/mxu.h"

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

int64_t mxu_passes(const struct chip_params *chip, int64_t k, int64_t n)
{
    return ceil_div(k, chip->mxu_dim) * ceil_div(n, chip->mxu_dim);
}

double mxu_time_s(const struct chip_params *chip, int64_t m, int64_t k, int64_t n, enum dtype dt)
{
    return mxu_chain_time_s(chip, 1, m, k, n, dt);
}

double mxu_chain_time_s(const struct chip_params *chip, int64_t count, int64_t m, int64_t k,
                        int64_t n, enum dtype dt)
{
    if (count <= 0 || m <= 0 || k <= 0 || n <= 0)
        return 0.0;
    int64_t d = chip->mxu_dim;
    int64_t rows = ceil_div(m, 8) * 8;
    if (rows < d)
        rows = d;
    int64_t per_mxu = ceil_div(count * mxu_passes(chip, k, n), chip->mxu_count);
    double speedup = chip->peak_flops[dt] / chip->peak_flops[DT_BF16];
    double cycles = (double)(per_mxu * rows) / speedup + (double)d;
    return cycles / chip_mxu_hz(chip);
}

double mxu_flops(int64_t m, int64_t k, int64_t n)
{
    return 2.0 * (double)m * (double)k * (double)n;
}
