/* models/mxu.h -- matrix unit timing.
 * A matmul (M, K, N) is cut into passes of one (mxu_dim x mxu_dim) weight tile
 * each (K and N padded to the tile); the passes are spread over the MXUs; a
 * pass streams max(M, mxu_dim) rows (M padded to 8 sublanes; a pass cannot
 * be shorter than its weight load); the chain pays one systolic fill/drain of
 * mxu_dim rows. Rows per second come from the published bf16 peak (see
 * chip_mxu_hz), scaled by the dtype's peak ratio. Accumulation is f32. */
#ifndef TPUSIM_MODELS_MXU_H
#define TPUSIM_MODELS_MXU_H

#include <stdint.h>

#include "models/chip.h"

/* Number of weight-tile passes of a (M, K, N) matmul. */
int64_t mxu_passes(const struct chip_params *chip, int64_t k, int64_t n);
/* Time in seconds of one (M, K, N) matmul with inputs of 'dt'. */
double mxu_time_s(const struct chip_params *chip, int64_t m, int64_t k, int64_t n, enum dtype dt);
/* Time of 'count' independent (M, K, N) matmuls issued back to back (a batch
 * of dots in one block: each its own weight tiles): their passes spread over
 * the MXUs as one chain, so the chain pays one fill/drain, not one each. */
double mxu_chain_time_s(const struct chip_params *chip, int64_t count, int64_t m, int64_t k,
                        int64_t n, enum dtype dt);
/* Useful FLOPs of the matmul: 2*M*K*N. */
double mxu_flops(int64_t m, int64_t k, int64_t n);

#endif
