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
