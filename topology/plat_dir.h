/* topology/plat_dir.h -- a folded slice whose transfers keep their direction.
 * On a fold of period p (topology/topo.h), a transfer of h hops along an axis
 * with p/2 <= h < p reaches the same chip going up as going down (at p = 8,
 * +4 and -4 land on one chip), and SimGrid's TORUS cluster routes each pair
 * of chips one way. This platform is one routing="Full" zone with the same
 * hosts, links and routes as the cluster (per hop: the HBM limiter of the chip
 * it leaves, then the ICI link of that axis and direction; at the end the
 * destination's limiter), plus, for every chip, a "port" host per set of
 * 'dirs' axes ("chipN.pM", M the set as bits): a transfer sent from port M
 * goes the other way round the ring of each axis in M than the route from the
 * chip itself does. The engine sends a transfer from the port that gives it
 * the direction it takes on the whole torus (plat_dir_flip), so a +h and a -h
 * transfer between the same two folded chips cross different links. Every
 * axis of the fold is a ring (a folded axis of period 2 has two links, one
 * each way round, as on the torus it stands for). */
#ifndef TPUSIM_TOPOLOGY_PLAT_DIR_H
#define TPUSIM_TOPOLOGY_PLAT_DIR_H

#include <stdio.h>

#include "topology/plat_xml.h"
#include "topology/topo.h"

/* Routes above this are not written (a fold that needs more is not directed). */
#define PLAT_DIR_MAX_ROUTES 131072

/* The routes plat_dir_write_xml writes for fold 'q' with direction axes 'dirs'
 * (one from every host to every host). */
long plat_dir_routes(const struct topo *q, unsigned dirs);

/* The hops from 'a' to 'b' on fold 'q', axes in 'flip' going the other way
 * round their ring than topo_route on 'q' (dimension order; an axis without
 * displacement stays put); returns their count. 'hops' has room for the sum
 * of q's lengths. */
int plat_dir_route(const struct topo *q, int a, int b, unsigned flip, struct topo_hop *hops);

/* The axes on which the route of fold 'q' between the chips that stand for
 * slice chips 'src' and 'dst' of 't' goes the other way round than the
 * torus 't' routes it; -1 if 'q' cannot carry that route (it goes a whole
 * period or more along a folded axis, or flips an axis outside 'dirs'). */
int plat_dir_flip(const struct topo *t, const struct topo *q, unsigned dirs, int src, int dst);

/* Name of the port host 'flip' of fold chip 'rank' ("chip<simnode>.p<flip>";
 * flip 0 is the chip's own host, plat_host_name). */
char *plat_dir_host_name(const struct topo *q, int rank, unsigned flip, char *buf, size_t n);

/* The host of port 'flip' of fold chip 'rank' whose hosts are named
 * '<prefix><simnode>' ("<prefix><simnode>.p<flip>"; flip 0: the chip's own). */
char *plat_dir_port_name(const char *prefix, const struct topo *q, int rank, unsigned flip,
                         char *buf, size_t n);

/* Writes the Full zone 'id' of fold 'q' (hosts named as plat_dir_port_name
 * with 'prefix', links' ids prefixed by 'link_prefix': one zone per slice of
 * a multislice platform, topology/dcn.h). */
void plat_dir_write_zone(FILE *out, const struct topo *q, unsigned dirs, const struct plat_params *p,
                         const char *id, const char *prefix, const char *link_prefix);

/* Writes the directed platform of fold 'q' ('dirs': its axes that need
 * ports). Returns 0, or -1 on a write error. */
int plat_dir_write_xml(FILE *out, const struct topo *q, unsigned dirs, const struct plat_params *p);

#endif
