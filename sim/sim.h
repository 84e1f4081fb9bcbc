/* sim/sim.h -- runs a scenario on SimGrid.
 * Builds the platform from the topology, starts one actor per TensorCore
 * (run state handed over as actor data, no mutable globals), runs the
 * workload and collects a summary. Only sim/ includes SimGrid. */
#ifndef TPUSIM_SIM_SIM_H
#define TPUSIM_SIM_SIM_H

#include <stdbool.h>
#include <stdio.h>

#include "sim/cfg.h"
#include "base/diag.h"
#include "traces/summary.h"

struct sim_opts {
    const char *out_dir;     /* where trace.json, summary.json, platform.xml go; NULL: none */
    int sg_argc;             /* extra SimGrid flags, e.g. --cfg=contexts/factory:thread */
    char **sg_argv;
    size_t max_trace_events; /* 0: 2,000,000 */
    int64_t max_steps;       /* 0: the scenario's options.max_steps */
    double max_memory_bytes; /* 0: 16 GiB */
};

/* Checks every op of 'sc' on its chip and topology without running it
 * (block-shape rules, VMEM budgets, routing). Returns 0 or -1 with messages. */
int sim_check(const struct cfg_scenario *sc, struct diag *d);

/* Writes the SimGrid platform XML for 'sc' to 'f'. Returns 0 or -1. */
int sim_write_platform(const struct cfg_scenario *sc, FILE *f);

/* Runs 'sc' and fills '*s' (caller frees with summary_fini()). Returns 0, 1
 * for a runtime failure (deadlock, unwritable output) or 2 for bad input;
 * messages go to 'd'. SimGrid can run once per process. */
int sim_run(const struct cfg_scenario *sc, const struct sim_opts *o, struct summary *s,
            struct diag *d);

/* Number of grid steps the scenario will simulate (for the resource guard). */
int64_t sim_estimate_steps(const struct cfg_scenario *sc);
/* Rough peak memory of a run in bytes: actors (~128 KiB each, measured on a
 * 6144-chip all-gather) plus the trace (at most 2M events of ~200 bytes). */
double sim_estimate_memory(const struct cfg_scenario *sc);

#endif
