/* kernels/copy.h -- hbm_copy, host_copy and ppermute: their rules and their arithmetic
 * (chunks, targets). Pure: the engine (engine/eng_ops.c) moves the bytes. Uses
 * base/, topology/, models/ and kernels/ops.h. */
#ifndef TPUSIM_KERNELS_COPY_H
#define TPUSIM_KERNELS_COPY_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/ops.h"
#include "models/chip.h"
#include "topology/topo.h"

/* Checks an hbm_copy on 'chip': two chunks fit the scoped VMEM limit, the
 * bytes fit the HBM. Returns 0, or -1 with the reason in 'err'. */
int copy_check_hbm(const struct op *op, const struct chip_params *chip, const struct topo *topo,
                   char *err, size_t n);
/* The chunk an hbm_copy moves at a time (the op's chunk, or half the scoped
 * VMEM limit) and how many chunks it takes. */
uint64_t copy_chunk_bytes(const struct op *op, const struct chip_params *chip);
uint64_t copy_chunks(const struct op *op, const struct chip_params *chip);

/* Checks a host_copy on 'chip': the chip has a PCIe link, the bytes fit the HBM. */
int copy_check_host(const struct op *op, const struct chip_params *chip, const struct topo *topo,
                    char *err, size_t n);
/* The YAML names of host_copy's directions, in enum host_dir order. */
extern const char *const copy_host_dir_names[];

/* Checks a ppermute on 'topo': the axis exists; on chips that route only to
 * power-of-2 offsets (v5e), the offset is one. */
int copy_check_ppermute(const struct op *op, const struct chip_params *chip,
                        const struct topo *topo, char *err, size_t n);
/* The chip 'shift' away from chip 'rank' along 'axis' (wrapping around). */
int copy_ppermute_target(const struct topo *t, int rank, int axis, int shift);

/* ppermute's reach for SPMD folding: the shift's hops along its axis. */
int copy_reach_ppermute(const struct op *op, const struct topo *topo, int *hops, int *period);

/* True if 'x' is a positive power of 2. */
int copy_is_pow2(int x);

#endif
