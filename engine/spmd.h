/* engine/spmd.h -- SPMD symmetry: which chips of a slice need simulating.
 * Every chip runs the same program; chips that a translation along a wrapped
 * axis maps onto each other then behave alike. The slice is folded, axis by
 * axis, to the shortest ring that still gives every transfer the links it
 * takes in the whole torus (more than twice the farthest hop along the axis,
 * a divisor of its length; an axis nothing crosses folds to one chip), and
 * only the chips of the fold are simulated. Each stands for the chips of its
 * class: their sums (FLOPs, bytes, steps) count that many times. Axes without
 * wraparound are kept whole (their ends differ), and a workload with absolute
 * targets (a remote_copy to a device id) is not folded. Uses topology/ and
 * the op table. */
#ifndef TPUSIM_ENGINE_SPMD_H
#define TPUSIM_ENGINE_SPMD_H

#include <stdbool.h>

#include "config/cfg.h"

/* Sets sc->plan.sim (the chips simulated) and sc->plan.sim_mult (the chips each
 * stands for): the fold of sc->topo, or the whole slice when 'all' is set or
 * the workload is not symmetric; and sc->plan.sim_slices (spmd_fold_slices of
 * the slices, or 0: all of them, when the slices are not alike). */
void spmd_fold(struct cfg_scenario *sc, bool all);
/* The slices simulated of 'slices' (the slices run the same program, and a
 * DCN collective is a ring over all of them, which is alike at every place:
 * the smallest ring that keeps each slice's sends and receives on different
 * slices is the smallest divisor of 'slices' above 1, whose ring steps to the
 * right are the whole ring's taken modulo it). */
int spmd_fold_slices(int slices);

#endif
