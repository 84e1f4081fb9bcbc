/* engine/trace_auto.h -- the trace a run writes when the user did not ask
 * for a level (no --trace, no options.trace): the richest that stays
 * openable. Perfetto and chrome://tracing load a JSON trace whole, and a
 * model step's units trace reaches hundreds of MB; the estimate of the
 * events at each level (engine/validate.h) picks, in this order, units on
 * every simulated chip, ops on every chip, units on chip 0 of each slice,
 * ops on chip 0, and says why. */
#ifndef TPUSIM_ENGINE_TRACE_AUTO_H
#define TPUSIM_ENGINE_TRACE_AUTO_H

#include <stdbool.h>
#include <stddef.h>

#include "config/cfg.h"
#include "outputs/trace.h"

#define TRACE_AUTO_MAX_BYTES 50e6 /* a default trace stays below this */
/* Bytes a trace event takes in trace.json, measured on the shipped model
 * steps: 150 to 154 at ops (op spans with their arguments, arrows), 127 to
 * 130 at units (shorter unit spans and counters); rounded up. */
#define TRACE_OPS_EVENT_BYTES 155.0
#define TRACE_UNITS_EVENT_BYTES 130.0

struct trace_auto {
    enum trace_level level;
    bool chip0;        /* only chip 0 of each slice (--trace-chips 0) */
    double bytes;      /* the estimated size of the trace picked */
    double units_bytes; /* ... of the default, units on every chip */
    char why[TRACE_CHOSEN_MAX];
};

/* Picks the level (and chips) for 'sc' as folded for its run: the first of
 * the ladder estimated at most 'max_bytes', else its last. When
 * 'chips_given' (--trace-chips), the chips stay as given and only the
 * level is picked (ops when even ops is estimated too large). */
void trace_auto_pick(const struct cfg_scenario *sc, bool chips_given, double max_bytes,
                     struct trace_auto *a);
/* TRACE_AUTO_MAX_BYTES, or $TPUSIM_TRACE_AUTO_MAX_BYTES when it is a
 * positive number (for tests: small scenarios that pick another level). */
double trace_auto_max_bytes(void);

#endif
