/* models/ici.c -- ICI link bandwidth and busy time. */
#include "models/ici.h"

double ici_link_Bps(const struct chip_params *chip)
{
    return chip->ici_bw_Bps * chip->ici_efficiency;
}

double ici_axes_peak_Bps(const struct chip_params *chip, int axes)
{
    return chip->ici_bw_Bps * 2.0 * axes;
}

double ici_ring_step_fixed_s(const struct chip_params *chip, double hop_s)
{
    return chip->ici_step_lat_s + hop_s + chip->dma_issue_s;
}

double ici_transfer_latency_s(const struct chip_params *chip, int hops)
{
    return chip->ici_collective_lat_s + chip->dma_issue_s + chip->ici_hop_lat_s * hops;
}

int ici_link_dirs(const struct chip_params *chip, const struct topo *topo)
{
    int dirs = 0;
    for (int a = 0; a < topo->ndims; a++)
        dirs += topo->shape[a] > 1 ? 2 : 0;
    dirs = dirs < chip->ici_links ? dirs : chip->ici_links;
    return dirs ? dirs : 1;
}

double ici_busy_s(const struct chip_params *chip, const struct topo *topo, double bytes)
{
    return bytes / (ici_link_Bps(chip) * ici_link_dirs(chip, topo));
}

double ici_peak_fraction(const struct chip_params *chip, const struct topo *topo, double bytes,
                         double seconds)
{
    return seconds > 0 ? bytes / (seconds * chip->ici_bw_Bps * ici_link_dirs(chip, topo)) : 0;
}
