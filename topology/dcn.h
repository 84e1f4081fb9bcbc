/* topology/dcn.h -- multislice: identical ICI slices joined by the
 * data-center network (DCN). Each slice is cut into hosts, blocks of
 * 'host_shape' chips (8 on v5e and v6e, 4 on v4, v5p and v7); each host has
 * its NICs on the DCN, one full-duplex link of 'nic_Bps' each way into a switch
 * fabric. The fabric is one shared link (a SimGrid backbone) that every DCN
 * transfer crosses: a fabric of bisection B carries 2 B in all (under a
 * uniform pattern half of all traffic crosses any cut that halves the hosts),
 * so the backbone gets 2 B; by default B is half the hosts' NIC bandwidth
 * (a non-blocking fabric). A transfer costs 'lat_s' (half on each NIC link)
 * plus bytes over its share of the NICs and the backbone.
 * Under SPMD folding (engine/spmd.h) only some chips of each slice are simulated:
 * each simulated chip then gets its own NIC of its host's share,
 * nic_Bps / chips_per_host, and the backbone shrinks by the simulated chips'
 * share of all chips -- exact when every chip of a host moves the same bytes at
 * the same time, which SPMD programs do. Pure arithmetic and XML, no SimGrid. */
#ifndef TPUSIM_TOPOLOGY_DCN_H
#define TPUSIM_TOPOLOGY_DCN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "topology/plat_xml.h"
#include "topology/topo.h"

#define DCN_MAX_SLICES 256

struct dcn {
    int slices;                     /* 1: one slice, no DCN */
    int host_shape[TOPO_MAX_DIMS];  /* one host's block of the slice */
    int chips_per_host;
    int hosts_per_slice;
    double nic_Bps;       /* per host, one direction */
    double lat_s;         /* one way */
    double bisection_Bps; /* the fabric's */
};

/* Fills 'd' for 'slices' copies of 'slice' with hosts of 'host_shape'
 * ('host_ndims' entries: the slice's axes, extra ones of 1; each length divides
 * the slice's), NICs of 'nic_Bps' per host, latency 'lat_s' and bisection
 * 'bisection_Bps' (0: non-blocking, half the hosts' NIC bandwidth). Returns 0,
 * or -1 with the reason in 'err' (a host that does not tile the slice). */
int dcn_init(struct dcn *d, const struct topo *slice, int slices, const int *host_shape,
             int host_ndims, double nic_Bps, double lat_s, double bisection_Bps, char *err,
             size_t n);
/* The host (0 .. hosts_per_slice - 1) of chip 'rank' of 'slice'. */
int dcn_host(const struct dcn *d, const struct topo *slice, int rank);

/* The simulated platform: 'sim_slices' of the d->slices slices (all, or their
 * fold: engine/spmd.h), each the torus 'sim' (the simulated chips of a slice:
 * the slice or its fold of 'slice'), and the DCN, whose fabric they get their
 * share of. */
struct dcn_plat {
    int nics;            /* NIC hosts: one per host, or one per simulated chip (folded) */
    int rx_first;        /* 0, or with one slice simulated of several the first of a second
                            set of as many NIC hosts, where its transfers land: a slice's DCN
                            sends then leave by one host's link up and arrive by another's
                            link down, the two directions of the NIC that sends and of the
                            NIC that receives in the whole run (SPLITDUPLEX: separate) */
    double nic_Bps;      /* each NIC link, one direction */
    double backbone_Bps; /* the fabric */
};
void dcn_plat(const struct dcn *d, const struct topo *slice, const struct topo *sim,
              int sim_slices, struct dcn_plat *p);
/* The NIC host of simulated chip 'sim_rank' of slice 's'. */
int dcn_nic(const struct dcn *d, const struct topo *slice, const struct topo *sim, int s,
            int sim_rank);
/* The NIC host where transfers to simulated chip 'sim_rank' of slice 's' land
 * (dcn_nic's, but with one slice of several simulated: its second set). */
int dcn_nic_rx(const struct dcn *d, const struct topo *slice, const struct topo *sim,
               int sim_slices, int s, int sim_rank);
/* Host names: chip 'rank' of 'sim' in slice 's' ("s<s>-chip<simnode>"), NIC 'k' ("nic<k>"). */
char *dcn_host_name(const struct topo *sim, int s, int rank, char *buf, size_t n);
char *dcn_nic_name(int k, char *buf, size_t n);
/* Writes the multislice platform: a zone with one torus cluster per slice
 * (as plat_write_xml's; with 'dirs', a fold whose transfers keep their
 * direction, one directed zone per slice: topology/plat_dir.h) and the DCN
 * cluster (NIC links and the backbone). Returns 0, or -1 on a write error. */
int dcn_write_xml(FILE *out, const struct dcn *d, const struct topo *slice,
                  const struct topo *sim, unsigned dirs, int sim_slices,
                  const struct plat_params *p);

#endif
