/* models/hbm.h -- HBM <-> VMEM DMA sizes and times.
 * HBM arrays use the tiled layout: the minor dim is padded to 128 lanes and
 * the second-minor to the dtype's sublane tiling, so a DMA moves the padded
 * block. Transfers have 4 KiB granularity. A lone DMA costs
 * issue latency + bytes / bandwidth; under contention SimGrid shares the HBM. */
#ifndef TPUSIM_MODELS_HBM_H
#define TPUSIM_MODELS_HBM_H

#include <stdint.h>

#include "models/chip.h"

#define HBM_DMA_GRANULE 4096

/* Bytes a DMA of a block of 'rank' dims 'dims' (squeezed dims as 1) of 'dt' moves. */
uint64_t hbm_dma_bytes(const struct chip_params *chip, enum dtype dt, int rank,
                       const int64_t *dims);
/* Bytes of the same block once resident in VMEM (same padding, no granule). */
uint64_t hbm_vmem_bytes(const struct chip_params *chip, enum dtype dt, int rank,
                        const int64_t *dims);
/* The bandwidth a chip's HBM delivers: the published figure times the
 * preset's efficiency. The SimGrid HBM link, the DMA trace spans and the HBM
 * busy time of the summary all use it. */
double hbm_bw_Bps(const struct chip_params *chip);
/* Time of one uncontended DMA of 'bytes' (already padded): issue latency +
 * bytes / hbm_bw_Bps. */
double hbm_dma_time_s(const struct chip_params *chip, uint64_t bytes);
/* Time the HBM is busy moving 'bytes' (no latency). */
double hbm_busy_s(const struct chip_params *chip, double bytes);
/* Fraction of the published peak that 'bytes' moved in 'seconds' reach. */
double hbm_peak_fraction(const struct chip_params *chip, double bytes, double seconds);

/* The chip's PCIe link to host memory (host_copy), one direction: the time
 * it is busy moving 'bytes' (bytes / pcie_bw_Bps; 0 without a link). The
 * platform's PCIe hosts run at this rate. */
double pcie_busy_s(const struct chip_params *chip, double bytes);

#endif
