/* topology/plat_xml.h -- SimGrid platform XML for a slice.
 * One <cluster topology="TORUS"> whose nodes are chips: each node is a host
 * with one core per TensorCore, a limiter link that stands for the chip's HBM
 * (every local DMA and every ICI transfer that starts or lands on the chip
 * crosses it), and one full-duplex (SPLITDUPLEX) link per neighbour and axis.
 * SimGrid routes the torus arithmetically, so nothing grows as chips^2.
 * With a PCIe rate, the cluster and a routing-free zone of PCIe hosts sit in
 * one zone (no route joins them: nothing travels from one to the other). */
#ifndef TPUSIM_TOPOLOGY_PLAT_XML_H
#define TPUSIM_TOPOLOGY_PLAT_XML_H

#include <stdbool.h>
#include <stdio.h>

#include "topology/topo.h"

struct plat_params {
    int cores;          /* TensorCores per chip (host cores) */
    double core_flops;  /* host speed: bf16 peak of one TensorCore */
    double hbm_bw_Bps;  /* limiter link */
    double ici_bw_Bps;  /* one direction of one ICI link */
    double ici_lat_s;   /* per hop */
    double pcie_Bps;    /* > 0: a zone of PCIe hosts, two per chip (one per direction) */
    int npstates;       /* > 0: speeds core_flops x pstate_factors[i] as pstates 1..n (slow
                           chips: engine/eng_fault.c sets a chip's pstate); pstate 0 = nominal */
    const double *pstate_factors;
};

/* Name of the SimGrid host of chip 'rank' ("chip<simnode>"), into 'buf'. */
char *plat_host_name(const struct topo *t, int rank, char *buf, size_t n);

/* Name of the SimGrid host that stands for one direction of the PCIe link of
 * chip 'rank' ("pcie_up<rank>" to the host, "pcie_down<rank>" to the chip):
 * its speed is the link's bytes per second, so a transfer is an execution of
 * its bytes there, and transfers in one direction share it fairly. */
char *plat_pcie_host_name(int rank, bool to_device, char *buf, size_t n);
/* Writes the zone of PCIe hosts of chips 0 .. nchips - 1 (speed: bytes/s). */
void plat_write_pcie_zone(FILE *out, int nchips, double Bps);

/* Writes one <cluster topology="TORUS"> for 't' named 'id' whose hosts are
 * '<prefix><simnode>' (plat_write_xml's, and each slice's in topology/dcn.h). */
void plat_write_cluster(FILE *out, const struct topo *t, const struct plat_params *p,
                        const char *id, const char *prefix);
/* Writes the platform for 't' to 'out'. Returns 0, or -1 on a write error. */
int plat_write_xml(FILE *out, const struct topo *t, const struct plat_params *p);

#endif
