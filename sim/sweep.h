/* sim/sweep.h -- block-size sweeps and comparisons (`tpusim sweep`, `tpusim compare`).
 * A sweep spec names a base scenario and key paths to vary (the same paths as
 * --set); each point runs in its own process, points that break a rule are
 * rows with status "infeasible" and the reason. */
#ifndef TPUSIM_SIM_SWEEP_H
#define TPUSIM_SIM_SWEEP_H

/* `tpusim sweep SWEEP.yaml [-o DIR] [-j N] [--resume]`; argv[0] is "sweep".
 * Returns the exit status (0, 1 runtime failure, 2 bad input). */
int sweep_main(int argc, char **argv);

/* `tpusim compare A B`: two summary.json files or two sweep directories side
 * by side with per-op deltas; argv[0] is "compare". Returns the exit status. */
int compare_main(int argc, char **argv);

#endif
