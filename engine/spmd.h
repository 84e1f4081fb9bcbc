/* engine/spmd.h -- SPMD symmetry: which chips of a slice need simulating.
 * Every chip runs the same program; chips that a translation along a wrapped
 * axis maps onto each other then behave alike. The slice is folded, axis by
 * axis, to the shortest ring that still gives every transfer the links it
 * takes in the whole torus (more than twice the farthest hop along the axis,
 * a divisor of its length; an axis nothing crosses folds to one chip), and
 * only the chips of the fold are simulated. A slice without faults (each
 * slice of a multislice run alike) folds instead to more than the farthest
 * hop when that is shorter on some axis (an axis the plain fold keeps whole:
 * a data ring whose members are 4 apart on a 16-long axis needs more than 8;
 * ring neighbours: 2 chips, not 4), on a platform whose transfers keep the
 * direction they take on the torus (topology/plat_dir.h; sc->plan.sim_dirs:
 * the axes that need it), and every axis folds so. Each stands for the chips of its
 * class: their sums (FLOPs, bytes, steps) count that many times. Axes without
 * wraparound are kept whole (their ends differ), and a workload with absolute
 * targets (a remote_copy to a device id) is not folded.
 * An all-to-all reaches every chip of its axes, which no shorter ring
 * gives it: on a slice whose chips a translation maps onto each other (one
 * slice, every axis wrapped, no faults), in a program with other ops, it is
 * left out of the fold and runs as a stand-in (engine/eng_standin.c): its
 * lone run on every chip, measured before the run in a forked child. Its
 * time is exact when nothing else runs meanwhile: the run checks it first
 * (spmd_hb_alone, else a folded run in a child) and simulates every chip
 * when something does. Uses topology/, workload/graph.h and the op table. */
#ifndef TPUSIM_ENGINE_SPMD_H
#define TPUSIM_ENGINE_SPMD_H

#include <stdbool.h>

#include "config/cfg.h"

/* Sets sc->plan.sim (the chips simulated) and sc->plan.sim_mult (the chips each
 * stands for): the fold of sc->topo, or the whole slice when 'all' is set or
 * the workload is not symmetric; and sc->plan.sim_slices (spmd_fold_slices of
 * the slices, or 0: all of them, when the slices are not alike). */
void spmd_fold(struct cfg_scenario *sc, bool all);
/* The slices simulated of 'slices': 1 (the slices run the same program, and a
 * DCN collective is a ring over all of them, which is alike at every place;
 * every ring step lands on the one simulated slice, its sends leaving by their
 * NICs' links up and landing by a second set of NIC hosts' links down:
 * topology/dcn.h, rx_first). Until issue 30 the smallest divisor of 'slices'
 * above 1, which kept each slice's sends and receives on different slices. */
int spmd_fold_slices(int slices);

/* True if op 'i' of 'sc' as folded runs as a stand-in: an all-to-all left out
 * of the fold, which cut an axis it crosses. */
bool spmd_standin(const struct cfg_scenario *sc, int i);

/* The order the engine guarantees between the op instances of a program
 * (engine/spmd_quiet.c): an instance starts after those it waits for end,
 * a core's compute stream runs one op at a time in program order, an async
 * op's instances one after the other. NULL for a program above 10^6
 * instances (not searched). */
struct spmd_hb;
struct spmd_hb *spmd_hb_new(const struct cfg_scenario *sc);
void spmd_hb_free(struct spmd_hb *hb); /* NULL is a no-op */
/* True if every instance of op 'op' runs alone: each other instance of the
 * program ends before it starts or starts after it ends (false for a NULL
 * 'hb'). */
bool spmd_hb_alone(const struct spmd_hb *hb, int op);

#endif
