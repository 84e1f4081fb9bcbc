/* engine/validate.h -- what `run` checks before it starts and `check` reports:
 * every op against its kind's rules on the scenario's chip and topology (its
 * row in config/op_table.h), and the resource guards (grid steps and memory
 * estimated before anything runs). Uses kernels/ and config/cfg.h; no SimGrid. */
#ifndef TPUSIM_ENGINE_VALIDATE_H
#define TPUSIM_ENGINE_VALIDATE_H

#include <stdint.h>

#include "base/diag.h"
#include "config/cfg.h"

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
/* What a run will simulate, summed over every simulated core and every op
 * instance (each count saturates at INT64_MAX): the Pallas kernels' grid
 * steps, and the chunks of the hbm_copy ops (two DMAs each, never folded by
 * fast fidelity). */
struct validate_estimate {
    int64_t grid_steps;
    int64_t copy_chunks;
};
void validate_estimate(const struct cfg_scenario *sc, struct validate_estimate *e);
/* Their sum: the steps --max-steps and options.max_steps limit. */
int64_t validate_estimate_steps(const struct cfg_scenario *sc);
/* validate_ops, then validate_guards: every check `run` makes before it
 * starts, which `check` makes too. Returns 0 or -1 with messages in 'd'. */
int validate_scenario(const struct cfg_scenario *sc, const struct validate_limits *lim,
                      struct diag *d);
/* The peak memory of a run in bytes: actors (~128 KiB each, measured on a
 * 6144-chip all-gather), per op its parameters and built kernels, per op
 * instance its bits and times, and the trace (at most 2M events of ~260
 * bytes); within 2x of the measured peak (tests/unit/test_guards.c). */
double validate_estimate_memory(const struct cfg_scenario *sc);

#endif
