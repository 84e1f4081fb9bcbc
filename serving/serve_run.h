/* serving/serve_run.h -- `tpusim run` of a scenario with a serve: section:
 * the engine loop (serving/serve.h) with steps priced by simulation
 * (serving/serve_price.h), then summary.json (its `serving:` block),
 * requests.csv (one row per request), steps.csv (one row per step) and the
 * headline numbers on the console. */
#ifndef TPUSIM_SERVING_SERVE_RUN_H
#define TPUSIM_SERVING_SERVE_RUN_H

#include <stdbool.h>

#include "base/diag.h"
#include "config/cfg.h"

struct serve_run_opts {
    const char *out_dir; /* locked by the caller */
    int sg_argc;
    char **sg_argv;
    bool quiet;
};

/* Runs the serving scenario 'sc'. Returns 0, 1 (a step failed, a write
 * failed), 2 (bad input found late) or 130 (interrupted). */
int serve_run(const struct cfg_scenario *sc, const struct serve_run_opts *o, struct diag *d);

#endif
