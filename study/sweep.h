/* study/sweep.h -- block-size sweeps (`tpusim sweep`).
 * A sweep spec names a base scenario and key paths to vary (the same paths as
 * --set); each point runs in its own process, points that break a rule are
 * rows with status "infeasible" and the reason. The spec (YAML):
 *   name: NAME                     # optional; default: the spec's file name
 *   base: FILE.yaml                # relative to the spec's directory, or an inline scenario
 *   sweep: {key.path: [v1, v2]}    # cartesian product, first key outermost
 *   zip: {key.a: [..], key.b: [..]}  # optional: equal-length lists varying together
 *   points: [{key.path: v}, ...]   # optional: explicit points, after the product
 *   vars: {NAME: [key.a, key.b]}   # optional: NAME stands for several key paths
 * The default point has the base scenario's own values; it is added as the
 * last point when no other point has them.
 * Outputs: DIR/sweep.csv, sweep.json, report.md, plot_<key>.svg, heatmap.svg
 * (two keys) and DIR/points/NNNN/{point.json, summary.json}; the best and the
 * default point also keep trace.json. */
#ifndef TPUSIM_STUDY_SWEEP_H
#define TPUSIM_STUDY_SWEEP_H

#include <stdbool.h>

#define SWEEP_MAX_JOBS 1024

struct cfg_scenario;
struct diag;

struct sweep_opts {
    const char *out_dir; /* NULL: out/<sweep name> */
    int jobs;            /* points run at once */
    bool resume;         /* keep the points already done with the same values */
    bool force;          /* replace an earlier sweep's files in out_dir */
    int nsets;           /* --set edits of the base scenario */
    const char **sets;
    int shard, nshards;  /* --shard I/N: run the points i with i % N == I (N 0: all) */
    int sg_argc;         /* extra SimGrid flags for every point */
    char **sg_argv;
    /* Runs a point whose scenario has a serve: section (serving/ sits above
     * study/, so cli/ passes serving's runner in): writes summary.json,
     * requests.csv and steps.csv into 'out_dir'; returns an exit status. NULL:
     * such points fail. */
    int (*serve_point)(const struct cfg_scenario *sc, const char *out_dir, int sg_argc,
                       char **sg_argv, struct diag *d);
};

struct validate_limits;

/* True when the file at 'path' is a sweep spec rather than a scenario: a
 * mapping with base, sweep, zip, points or vars at the top and no workload.
 * False for "-" (standard input is read once) and unreadable files. */
bool sweep_spec_detect(const char *path);
/* `tpusim check SWEEP.yaml`: loads the spec 'spec' (with the 'nsets' --set
 * edits of its base) and checks every point as `tpusim check` checks a
 * scenario, running nothing; prints each infeasible point and a summary line
 * to stdout. Returns 0, 1 (a temporary file cannot be written) or 2 (a bad
 * spec, or no feasible point). */
int sweep_check(const char *spec, const char *const *sets, int nsets,
                const struct validate_limits *lim);

/* Runs every point of the sweep spec 'spec' (a shard's: then it writes
 * DIR/shard.json instead of the tables). Returns the exit status (0, 1
 * runtime failure, 2 bad input, 130 interrupted). */
int sweep_run(const char *spec, const struct sweep_opts *o);

/* `tpusim sweep merge OUT DIR...`: joins the shard directories 'dirs' (all
 * N shards of one sweep, each complete) into 'out': their points, then the
 * tables, report, plots and the best and default points' traces, the same
 * bytes as one `tpusim sweep` would write. 'force' replaces an earlier
 * sweep's files in 'out'. Returns 0, 1 (a write failed, or a promised
 * output is missing) or 2 (the directories are not the shards of one sweep). */
int sweep_merge(const char *out, char *const *dirs, int ndirs, bool force);

#endif
