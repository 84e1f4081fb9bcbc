/* sim/validate.h -- what `run` checks before it starts and `check` reports:
 * every op against its kind's rules on the scenario's chip and topology (its
 * row in sim/op_table.h), and the resource guards (grid steps and memory
 * estimated before anything runs). Uses kernels/ and sim/cfg.h; no SimGrid. */
#ifndef TPUSIM_SIM_VALIDATE_H
#define TPUSIM_SIM_VALIDATE_H

#include <stdint.h>

#include "base/diag.h"
#include "sim/cfg.h"

/* The limits a run is held to; 0 means the scenario's (or the default). */
struct validate_limits {
    int64_t max_steps;       /* 0: options.max_steps */
    double max_memory_bytes; /* 0: 16 GiB */
};

/* Checks every op of 'sc' (block-shape rules, VMEM budgets, routing).
 * Returns 0 or -1 with messages in 'd'. */
int validate_ops(const struct cfg_scenario *sc, struct diag *d);
/* Checks the estimates against 'lim'. Returns 0 or -1 with messages in 'd'. */
int validate_guards(const struct cfg_scenario *sc, const struct validate_limits *lim,
                    struct diag *d);
/* Number of grid steps the scenario will simulate. */
int64_t validate_estimate_steps(const struct cfg_scenario *sc);
/* Rough peak memory of a run in bytes: actors (~128 KiB each, measured on a
 * 6144-chip all-gather) plus the trace (at most 2M events of ~200 bytes). */
double validate_estimate_memory(const struct cfg_scenario *sc);

#endif
