/* topology/dcn.c -- slices, hosts and NICs on the DCN (see topology/dcn.h). */
#include "topology/dcn.h"

#include "topology/plat_dir.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"

/* "[2, 2, 2]": 'nd' lengths. */
static void shape_str(char *buf, size_t n, const int *shape, int nd)
{
    size_t at = (size_t)snprintf(buf, n, "[");
    for (int a = 0; a < nd && at < n; a++)
        at += (size_t)snprintf(buf + at, n - at, "%s%d", a ? ", " : "", shape[a]);
    if (at < n)
        snprintf(buf + at, n - at, "]");
}

/* True when hosts of 'host' ('hnd' axes) tile 'slice' axis by axis: the slice's
 * axes, extra ones of 1, each length dividing the slice's. */
static bool host_tiles(const struct topo *slice, const int *host, int hnd)
{
    if (hnd < slice->ndims)
        return false;
    for (int a = 0; a < hnd; a++) {
        int L = a < slice->ndims ? slice->shape[a] : 1;
        if (host[a] < 1 || host[a] > L || L % host[a] != 0)
            return false;
    }
    return true;
}

int dcn_init(struct dcn *d, const struct topo *slice, int slices, const int *host_shape,
             int host_ndims, double nic_Bps, double lat_s, double bisection_Bps, char *err,
             size_t n)
{
    memset(d, 0, sizeof *d);
    if (host_ndims < 1 || host_ndims > TOPO_MAX_DIMS || !host_tiles(slice, host_shape, host_ndims)) {
        char h[64], s[64];
        int hn = host_ndims < 0 ? 0 : host_ndims > TOPO_MAX_DIMS ? TOPO_MAX_DIMS : host_ndims;
        shape_str(h, sizeof h, host_shape, hn);
        shape_str(s, sizeof s, slice->shape, slice->ndims);
        return diag_fail(err, n,
                         "expected a slice that hosts of the chip's dcn.host_shape %s tile, axis "
                         "by axis (as many axes, each length dividing the slice's; extra axes of "
                         "1), got a slice of %s", h, s);
    }
    d->slices = slices;
    d->nic_Bps = nic_Bps;
    d->lat_s = lat_s;
    d->chips_per_host = 1;
    for (int a = 0; a < TOPO_MAX_DIMS; a++) {
        d->host_shape[a] = a < host_ndims ? host_shape[a] : 1;
        d->chips_per_host *= d->host_shape[a];
    }
    d->hosts_per_slice = slice->nchips / d->chips_per_host;
    double all = (double)slices * d->hosts_per_slice * nic_Bps;
    d->bisection_Bps = bisection_Bps > 0 ? bisection_Bps : all / 2;
    return 0;
}

int dcn_host(const struct dcn *d, const struct topo *slice, int rank)
{
    int c[TOPO_MAX_DIMS] = {0, 0, 0}, h = 0;
    topo_coords(slice, rank, c);
    for (int a = TOPO_MAX_DIMS - 1; a >= 0; a--) {
        int L = a < slice->ndims ? slice->shape[a] : 1;
        h = h * (L / d->host_shape[a]) + c[a] / d->host_shape[a];
    }
    return h;
}

static bool folded(const struct topo *slice, const struct topo *sim)
{
    return sim->nchips != slice->nchips;
}

/* One simulated slice of several: its DCN transfers leave and land on its own chips. */
static bool rx_apart(const struct dcn *d, int sim_slices)
{
    return d->slices > 1 && sim_slices == 1;
}

void dcn_plat(const struct dcn *d, const struct topo *slice, const struct topo *sim,
              int sim_slices, struct dcn_plat *p)
{
    /* of every slice's chips */
    double share = (double)sim->nchips / slice->nchips * sim_slices / d->slices;
    if (folded(slice, sim)) {
        p->nics = sim_slices * sim->nchips;
        p->nic_Bps = d->nic_Bps / d->chips_per_host;
    } else {
        p->nics = sim_slices * d->hosts_per_slice;
        p->nic_Bps = d->nic_Bps;
    }
    p->rx_first = rx_apart(d, sim_slices) ? p->nics : 0;
    p->nics += p->rx_first;
    p->backbone_Bps = 2 * d->bisection_Bps * share;
}

int dcn_nic(const struct dcn *d, const struct topo *slice, const struct topo *sim, int s,
            int sim_rank)
{
    if (folded(slice, sim))
        return s * sim->nchips + sim_rank;
    return s * d->hosts_per_slice + dcn_host(d, slice, sim_rank);
}

int dcn_nic_rx(const struct dcn *d, const struct topo *slice, const struct topo *sim,
               int sim_slices, int s, int sim_rank)
{
    struct dcn_plat p;
    dcn_plat(d, slice, sim, sim_slices, &p);
    return p.rx_first + dcn_nic(d, slice, sim, s, sim_rank);
}

char *dcn_host_name(const struct topo *sim, int s, int rank, char *buf, size_t n)
{
    snprintf(buf, n, "s%d-chip%d", s, topo_sim_node(sim, rank));
    return buf;
}

char *dcn_nic_name(int k, char *buf, size_t n)
{
    snprintf(buf, n, "nic%d", k);
    return buf;
}

int dcn_write_xml(FILE *out, const struct dcn *d, const struct topo *slice,
                  const struct topo *sim, unsigned dirs, int sim_slices,
                  const struct plat_params *p)
{
    struct dcn_plat dp;
    dcn_plat(d, slice, sim, sim_slices, &dp);
    char folded_slices[48] = "";
    if (sim_slices != d->slices)
        snprintf(folded_slices, sizeof folded_slices, " (%d simulated)", sim_slices);
    fprintf(out, "<?xml version='1.0'?>\n"
                 "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                 "<platform version=\"4.1\">\n");
    fprintf(out, "  <!-- %d slices%s of %d chips (%d simulated each), %d hosts of %d chips a "
                 "slice; the DCN: %d NICs%s\n"
                 "       of %.17g B/s each way into a fabric of bisection %.17g B/s "
                 "(backbone %.17g B/s here) -->\n",
            d->slices, folded_slices, slice->nchips, sim->nchips, d->hosts_per_slice,
            d->chips_per_host,
            dp.nics, dp.rx_first ? " (the first half send, the second receive)" : "", dp.nic_Bps,
            d->bisection_Bps, dp.backbone_Bps);
    fprintf(out, "  <zone id=\"world\" routing=\"Full\">\n");
    for (int s = 0; s < sim_slices; s++) {
        char id[32], prefix[32], links[32];
        snprintf(id, sizeof id, "slice%d", s);
        snprintf(prefix, sizeof prefix, "s%d-chip", s);
        snprintf(links, sizeof links, "s%d-", s);
        if (dirs)
            plat_dir_write_zone(out, sim, dirs, p, id, prefix, links);
        else
            plat_write_cluster(out, sim, p, id, prefix);
    }
    /* each NIC host: one full-duplex link (half the latency) into the backbone */
    fprintf(out,
            "  <cluster id=\"dcn\" prefix=\"nic\" suffix=\"\" radical=\"0-%d\" speed=\"1f\"\n"
            "           bw=\"%.17gBps\" lat=\"%.17gs\" sharing_policy=\"SPLITDUPLEX\"\n"
            "           bb_bw=\"%.17gBps\" bb_lat=\"0s\" bb_sharing_policy=\"SHARED\"/>\n",
            dp.nics - 1, dp.nic_Bps, d->lat_s / 2, dp.backbone_Bps);
    if (p->pcie_Bps > 0) /* every simulated chip of every slice, in the engine's order */
        plat_write_pcie_zone(out, sim_slices * sim->nchips, p->pcie_Bps);
    fprintf(out, "  </zone>\n</platform>\n");
    return ferror(out) ? -1 : 0;
}
