/* sim/sweep.h -- block-size sweeps and comparisons (`tpusim sweep`, `tpusim compare`).
 * A sweep spec names a base scenario and key paths to vary (the same paths as
 * --set); each point runs in its own process, points that break a rule are
 * rows with status "infeasible" and the reason. The spec (YAML):
 *   name: NAME                     # optional; default: the spec's file name
 *   base: FILE.yaml                # relative to the spec's directory, or an inline scenario
 *   sweep: {key.path: [v1, v2]}    # cartesian product, first key outermost
 *   zip: {key.a: [..], key.b: [..]}  # optional: equal-length lists varying together
 *   points: [{key.path: v}, ...]   # optional: explicit points, after the product
 * Outputs: DIR/sweep.csv, sweep.json, report.md, plot_<key>.svg, heatmap.svg
 * (two keys) and DIR/points/NNNN/{point.json, summary.json}; the best and the
 * default point also keep trace.json. */
#ifndef TPUSIM_SIM_SWEEP_H
#define TPUSIM_SIM_SWEEP_H

/* `tpusim sweep SWEEP.yaml [-o DIR] [-j N] [--resume]`; argv[0] is "sweep".
 * Returns the exit status (0, 1 runtime failure, 2 bad input). */
int sweep_main(int argc, char **argv);

/* `tpusim compare A B`: two summary.json files or two sweep directories side
 * by side with per-op deltas; argv[0] is "compare". Returns the exit status. */
int compare_main(int argc, char **argv);

#endif
