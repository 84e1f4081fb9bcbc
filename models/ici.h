/* models/ici.h -- ICI link bandwidth and busy time.
 * A link direction delivers the published per-link figure times the preset's
 * efficiency (packet overheads); the SimGrid links and the ICI busy time of
 * the summary both use it. Uses models/chip.h and topology/. */
#ifndef TPUSIM_MODELS_ICI_H
#define TPUSIM_MODELS_ICI_H

#include "models/chip.h"
#include "topology/topo.h"

/* Bandwidth of one direction of one link. */
double ici_link_Bps(const struct chip_params *chip);
/* The published peak of the links a collective over 'axes' ring axes drives:
 * both directions of each axis, at the published (not derated) bandwidth. */
double ici_axes_peak_Bps(const struct chip_params *chip, int axes);
/* The fixed cost of one ring step whose hop takes 'hop_s' (the ICI's hop
 * latency, or the DCN's): the semaphore handshake, the DMA issue, the hop. */
double ici_ring_step_fixed_s(const struct chip_params *chip, double hop_s);
/* The latency of a one-off transfer 'hops' hops away: the collective's fixed
 * cost, the DMA issue and the hops. */
double ici_transfer_latency_s(const struct chip_params *chip, int hops);
/* Link directions one chip of 'topo' can drive at once: two per axis longer
 * than 1, at most the chip's link count. */
int ici_link_dirs(const struct chip_params *chip, const struct topo *topo);
/* Time a chip's links are busy sending 'bytes', spread over all its directions. */
double ici_busy_s(const struct chip_params *chip, const struct topo *topo, double bytes);
/* Fraction of the published peak of all a chip's link directions that
 * 'bytes' sent in 'seconds' reach. */
double ici_peak_fraction(const struct chip_params *chip, const struct topo *topo, double bytes,
                         double seconds);

#endif
