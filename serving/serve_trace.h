/* serving/serve_trace.h -- a serving run's trace.json (Chrome Trace Event
 * JSON, written by outputs/trace.h: open it in https://ui.perfetto.dev).
 * Replica r is process r ("replica 0"): its engine steps are complete spans
 * on thread 0 ("engine steps"), each request an async track (category
 * "request", its index as the id) with its phases nested (queued, prefill,
 * decode, and a "preempted" span for each preemption; a phase of no length
 * is left out), and the counters "running seqs", "waiting seqs" and "kv cache
 * use" (a fraction of the pages) sampled at each step's start when they
 * change. Events go out in time order, a request's track whole at its
 * arrival, so a cap keeps the run's beginning and drops its end (counted:
 * trace_stats). Uses outputs/trace.h and engine/trace_auto.h. */
#ifndef TPUSIM_SERVING_SERVE_TRACE_H
#define TPUSIM_SERVING_SERVE_TRACE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/diag.h"
#include "config/cfg.h"
#include "outputs/trace.h"
#include "serving/serve.h"

/* Bytes an event takes in trace.json (measured: 187 on the 1,000-request
 * bench run, 5.1 MB for 27,360 events: step spans with their arguments ~250,
 * request events ~100, counters ~75); rounded up. */
#define SERVE_TRACE_EVENT_BYTES 190.0

struct serve_trace_opts {
    enum trace_level level;  /* TRACE_NONE: no trace; any other level: the same trace */
    bool level_set;          /* --trace or options.trace given (else the cap keeps a default
                                trace below trace_auto_max_bytes()) */
    size_t max_events;       /* --trace-max-events; 0: the default cap */
    bool window;             /* --trace-window: only events overlapping [t0_s, t1_s] */
    double window_t0_s, window_t1_s;
};

/* The cap on events that 'o' asks for: --trace-max-events, else
 * TRACE_DEFAULT_MAX_EVENTS for a level asked for, else the events of
 * trace_auto_max_bytes() at SERVE_TRACE_EVENT_BYTES (at most the former). */
size_t serve_trace_max_events(const struct serve_trace_opts *o);

/* Writes the trace of the run 'r' of 'sc' to 'path' atomically (a temporary
 * renamed at the end); '*st' gets what it holds. Returns 0, 1 (cannot write:
 * said in 'd') or 130 (interrupted while writing: no file). */
int serve_trace_write(const char *path, const struct cfg_scenario *sc,
                      const struct serve_result *r, const struct serve_trace_opts *o,
                      struct trace_stats *st, struct diag *d);

#endif
