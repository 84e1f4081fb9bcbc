/* serving/serve_run.h -- `tpusim run` of a scenario with a serve: section:
 * the engine loop (serving/serve.h) with steps priced by simulation
 * (serving/serve_price.h), then summary.json (its `serving:` block),
 * requests.csv (one row per request), steps.csv (one row per step),
 * trace.json (serving/serve_trace.h) and the headline numbers on the console. */
#ifndef TPUSIM_SERVING_SERVE_RUN_H
#define TPUSIM_SERVING_SERVE_RUN_H

#include <stdbool.h>

#include "base/diag.h"
#include "config/cfg.h"
#include "serving/serve_trace.h"

struct serve_run_opts {
    const char *out_dir; /* locked by the caller */
    int sg_argc;
    char **sg_argv;
    bool quiet;
    struct serve_trace_opts trace; /* level TRACE_NONE: no trace.json (an earlier one goes) */
};

/* Runs the serving scenario 'sc'. Returns 0, 1 (a step failed, a write
 * failed), 2 (bad input found late) or 130 (interrupted). The trace is
 * written first, into a stage (a FS_STAGE_PREFIX directory in out_dir), and
 * moved beside the others once they are written: an interrupted run leaves
 * the previous run's files. */
int serve_run(const struct cfg_scenario *sc, const struct serve_run_opts *o, struct diag *d);

#endif
