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
/* Writes DIR/trace.json and DIR/summary.json. Returns 0 or -1 with a message in 'd'. */
int outputs_run(const struct trace *t, const struct summary *s, const char *dir,
                struct diag *d);

#endif
