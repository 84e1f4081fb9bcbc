/* topology/topo.h -- chips on a ring, 2D or 3D torus, with per-axis wraparound.
 * Pure arithmetic, no SimGrid. Chip rank r has coordinates with axis 0
 * varying fastest (r = x + X*y + X*Y*z), as in SimGrid's TORUS cluster.
 * Routes are dimension-order (axis 0 first) over the shortest direction; on a
 * wrapped axis a tie (distance exactly L/2) is broken as SimGrid's TorusZone
 * breaks it, so the routes here are the routes the engine uses. */
#ifndef TPUSIM_TOPOLOGY_TOPO_H
#define TPUSIM_TOPOLOGY_TOPO_H

#include <stdbool.h>

#define TOPO_MAX_DIMS 3
#define TOPO_MAX_CHIPS 65536 /* chips in one slice (a v5p pod has 8960) */

/* The default wraparound rule of a TPU generation (configs/chips/ name it). */
enum topo_wrap_rule {
    TOPO_WRAP_AXIS16, /* v5e/v6e: an axis wraps only when its length is 16 */
    TOPO_WRAP_CUBE4,  /* v4/v5p: full torus when every axis is a multiple of 4 */
    TOPO_WRAP_ALWAYS, /* every axis of length > 2 wraps */
    TOPO_WRAP_NEVER,
    TOPO_WRAP_AXIS32, /* v3: an axis wraps only when it spans the 32-chip pod edge */
};

struct topo {
    int ndims;
    int shape[TOPO_MAX_DIMS];
    bool wrap[TOPO_MAX_DIMS];
    int nchips;
};

/* One hop of a route: from chip 'from' along 'axis' in direction 'dir' (+1/-1). */
struct topo_hop {
    int from, to;
    int axis;
    int dir;
};

/* Fills 't' from 'shape' (ndims entries) and 'wrap'. Returns 0, or -1 if a
 * length is < 1, ndims is out of range or the chips are more than TOPO_MAX_CHIPS. A length-1 or length-2 axis never
 * wraps (a 2-ring's wrap link would duplicate its only neighbour link). */
int topo_init(struct topo *t, int ndims, const int *shape, const bool *wrap);

/* Sets 'wrap' (ndims entries) to the wraparound 'rule' gives a slice of
 * 'shape': v5e/v6e (and v2) wrap an axis only when it is 16 long, v3 when it
 * is 32 long (the pod's edge); v4/v5p are full tori
 * when every axis of the 3-D shape is a multiple of 4 (one 4x4x4 cube or
 * more). */
void topo_default_wrap(enum topo_wrap_rule rule, int ndims, const int *shape, bool *wrap);

void topo_coords(const struct topo *t, int rank, int *coords);
int topo_rank(const struct topo *t, const int *coords);

/* Returns the chip one step from 'rank' along 'axis' in 'dir' (+1 or -1), or
 * -1 at the edge of an axis without wraparound. */
int topo_neighbor(const struct topo *t, int rank, int axis, int dir);

/* Signed number of hops along 'axis' from coordinate 'a' to 'b' on the route
 * the engine takes (positive = increasing coordinate). */
int topo_axis_delta(const struct topo *t, int axis, int a, int b);

/* Number of ICI hops from chip 'a' to chip 'b'. */
int topo_hops(const struct topo *t, int a, int b);

/* Writes the dimension-order route from 'a' to 'b' into 'hops' (room for
 * topo_hops() entries); returns the number of hops. */
int topo_route(const struct topo *t, int a, int b, struct topo_hop *hops);

/* --- SPMD symmetry: a torus folded onto its distinct chips ---
 * When every chip runs the same program, chips that a translation along a
 * wrapped axis maps onto each other behave alike. Folding axis a to length
 * period[a] (a divisor of its length) keeps one chip per class: a ring of
 * period[a] chips whose links stand for the links between the classes. A
 * transfer of h hops along a folded axis takes the same links in the fold as
 * in the torus when h < period[a] / 2 (the caller picks periods so). */

/* Fills 'q' with 't' folded to 'period' (period[a] divides t->shape[a]; an
 * axis not folded has period[a] == shape[a]). Returns 0, or -1 if a period
 * does not divide its axis, or folds an axis without wraparound to more than 1. */
int topo_fold(const struct topo *t, const int *period, struct topo *q);
/* The chip of fold 'q' that stands for chip 'rank' of 't'. */
int topo_fold_rank(const struct topo *t, const struct topo *q, int rank);
/* The chip of 't' that chip 'qrank' of fold 'q' is (same coordinates). */
int topo_unfold_rank(const struct topo *t, const struct topo *q, int qrank);

/* --- mapping onto SimGrid's TORUS cluster ---
 * SimGrid's torus always wraps. An axis without wraparound of length L >= 2 is
 * embedded in a ring of 2L whose upper half is unused: shortest routes
 * between the real chips then never take the wrap link. */
int topo_sim_dim(const struct topo *t, int axis);
int topo_sim_nodes(const struct topo *t);
int topo_sim_node(const struct topo *t, int rank);

#endif
