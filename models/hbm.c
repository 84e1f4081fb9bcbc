/* models/hbm.c -- tiled-layout padding and DMA time. */
#include "models/hbm.h"

#include "base/sat.h"

static int64_t round_up(int64_t a, int64_t b)
{
    return (a + b - 1) / b * b;
}

uint64_t hbm_vmem_bytes(const struct chip_params *chip, enum dtype dt, int rank,
                        const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        int64_t d = dims[i];
        if (i == rank - 1)
            d = round_up(d, chip->vpu_lanes);
        else if (i == rank - 2)
            d = round_up(d, chip_sublane_tiling(chip, dt));
        n = sat_mul64(n, d); /* padded dims of user shapes: saturates, never wraps */
    }
    return sat_mulu64((uint64_t)n, (uint64_t)dtype_bytes(dt));
}

uint64_t hbm_dma_bytes(const struct chip_params *chip, enum dtype dt, int rank,
                       const int64_t *dims)
{
    uint64_t v = hbm_vmem_bytes(chip, dt, rank, dims);
    return v > (uint64_t)INT64_MAX ? v : (uint64_t)round_up((int64_t)v, HBM_DMA_GRANULE);
}

double hbm_bw_Bps(const struct chip_params *chip)
{
    return chip->hbm_bw_Bps * chip->hbm_efficiency;
}

double hbm_dma_time_s(const struct chip_params *chip, uint64_t bytes)
{
    return chip->dma_issue_s + hbm_busy_s(chip, (double)bytes);
}

double hbm_busy_s(const struct chip_params *chip, double bytes)
{
    return bytes / hbm_bw_Bps(chip);
}

double hbm_peak_fraction(const struct chip_params *chip, double bytes, double seconds)
{
    return seconds > 0 ? bytes / (seconds * chip->hbm_bw_Bps) : 0;
}

double pcie_busy_s(const struct chip_params *chip, double bytes)
{
    return chip->pcie_bw_Bps > 0 ? bytes / chip->pcie_bw_Bps : 0;
}
