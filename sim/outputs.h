/* sim/outputs.h -- what a run writes: platform.xml (the SimGrid platform of
 * the scenario), trace.json and summary.json, each atomically (base/fsutil.h).
 * Uses topology/ (the platform writer), traces/ and sim/cfg.h; no SimGrid. */
#ifndef TPUSIM_SIM_OUTPUTS_H
#define TPUSIM_SIM_OUTPUTS_H

#include <stdio.h>

#include "base/diag.h"
#include "sim/cfg.h"
#include "traces/summary.h"
#include "traces/trace.h"

/* Writes the SimGrid platform XML of 'sc' to 'f'. Returns 0 or -1. */
int outputs_platform(const struct cfg_scenario *sc, FILE *f);
/* Writes it to the file 'path'. Returns 0 or -1 with errno. */
int outputs_platform_file(const struct cfg_scenario *sc, const char *path);
struct sim_opts;
/* The run's trace as 'o' asks (level, chips, window, cap); NULL with a
 * message in 'd' for a bad --trace-chips. Chip numbers are the slice's; each
 * stands for the simulated chip of its SPMD class; "distinct" keeps one chip
 * per class (the fold's, also under --all-chips). */
struct trace *outputs_trace_new(const struct cfg_scenario *sc, const struct sim_opts *o,
                                struct diag *d);
/* Starts writing it to DIR/trace.json when 'o' names an output directory and
 * its level is not none. Returns 0, or -1 with a message in 'd'. */
int outputs_trace_open(struct trace *t, const struct sim_opts *o, struct diag *d);
/* Closes the trace (DIR/trace.json), puts what it holds in 's->trace' and
 * writes DIR/summary.json. Returns 0 or -1 with a message in 'd'. */
int outputs_run(struct trace *t, struct summary *s, const struct sim_opts *o, struct diag *d);

#endif
