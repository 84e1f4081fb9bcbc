/* outputs/xprof.h -- a measured profile beside a simulated run: the XLA ops
 * of one device in a Chrome trace (XProf / TensorBoard trace viewer export,
 * jax.profiler's trace.json) summed per HLO instruction, against the ops of a
 * simulated run's summary.json, per op and per category, with the error.
 * May use: libc, base/ (json, fsutil, xalloc). */
#ifndef TPUSIM_OUTPUTS_XPROF_H
#define TPUSIM_OUTPUTS_XPROF_H

#include <stddef.h>
#include <stdio.h>

/* Largest trace read (it is scanned event by event, never held as a tree). */
#define XPROF_MAX_BYTES ((size_t)512 << 20)
/* Most distinct op names (and module executions) kept, and most processes
 * and threads named. */
#define XPROF_MAX_NAMES 200000
#define XPROF_MAX_THREADS 4096

struct xprof_opts {
    const char *device; /* which device: its ordinal ("0") or process name; NULL: the first */
    const char *module; /* the HLO module's name; NULL: the run's (summary.json program.module) */
    long steps;         /* executions in the trace; 0: counted (module spans, else ops) */
    int top;            /* op rows printed (the rest summed); 0: 25 */
    const char *csv;    /* write every op row here too; NULL: none */
};

/* True when the file 'path' looks like a Chrome trace (a "traceEvents" key
 * near its start, or a top-level array of events). */
int xprof_is_trace(const char *path);

/* Prints the comparison of trace 'trace' with the run 'run' (a summary.json
 * or its directory) to 'out', messages to 'err'. Returns 0, or 2 on bad input
 * (unreadable files, no XLA op of the device or module in the trace). */
int xprof_compare(const char *trace, const char *run, const struct xprof_opts *o, FILE *out,
                  FILE *err);

/* The same for a trace already read ('text', 'len' bytes, named 'trace' in
 * messages) and a run's parsed summary.json ('run'). */
struct json;
int xprof_compare_text(const char *trace, const char *text, size_t len, const struct json *run,
                       const struct xprof_opts *o, FILE *out, FILE *err);

#endif
