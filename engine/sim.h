/* engine/sim.h -- runs a scenario on SimGrid.
 * Validates it (engine/validate.h), writes the platform, starts one actor per
 * TensorCore (run state handed over as actor data, no mutable globals), runs
 * the workload, collects a summary and writes the outputs (engine/outputs.h).
 * This header does not include SimGrid; engine/engine.h does. */
#ifndef TPUSIM_ENGINE_SIM_H
#define TPUSIM_ENGINE_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"
#include "config/cfg.h"
#include "engine/sim_opts.h"
#include "outputs/summary.h"


/* Runs 'sc' and fills '*s' (caller frees with summary_fini()). Returns 0, 1
 * for a runtime failure (deadlock, unwritable output), 2 for bad input or
 * 130 when interrupted; messages go to 'd'. SimGrid can run once per process. */
int sim_run(const struct cfg_scenario *sc, const struct sim_opts *o, struct summary *s,
            struct diag *d);

#endif
