/* topology/topo_fault.h -- routes around down ICI links.
 * The slice's routing tables are built once, at bring-up, around the links
 * known to be faulty (docs/reference.md, "Faults": libtpu's resilient route
 * table, "wild-first" paths: the detour's hops first, then dimension order).
 * The rule here: dimension order (axis 0 first) as topo_route; an axis
 * segment that would cross a down link goes the other way round its ring
 * (a wrapped axis), else sidesteps one hop along another axis, runs the
 * segment there and steps back. Pure arithmetic, no SimGrid. */
#ifndef TPUSIM_TOPOLOGY_TOPO_FAULT_H
#define TPUSIM_TOPOLOGY_TOPO_FAULT_H

#include <stdbool.h>

#include "topology/topo.h"

/* True if the link from chip 'from' along 'axis' in 'dir' (+1/-1) is down. */
typedef bool topo_down_fn(const void *ctx, int from, int axis, int dir);

/* Routes at most: the sum of the axis lengths plus two sidesteps per axis. */
#define TOPO_MAX_DETOUR_HOPS (3 * TOPO_MAX_CHIPS)

/* Writes the route from 'a' to 'b' around the down links into 'hops' (room
 * for 'max'); returns its length, or -1 when no route of this rule avoids
 * them (or it is longer than 'max'). */
int topo_route_around(const struct topo *t, int a, int b, topo_down_fn *down, const void *ctx,
                      struct topo_hop *hops, int max);

/* True if the dimension-order route from 'a' to 'b' crosses a down link. */
bool topo_route_blocked(const struct topo *t, int a, int b, topo_down_fn *down, const void *ctx);

#endif
