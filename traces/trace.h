/* traces/trace.h -- timeline events and the Chrome Trace Event writer.
 * Events are kept in memory with caller-supplied times (seconds) and written
 * once, as JSON that ui.perfetto.dev and chrome://tracing open: a process per
 * chip, a thread (track) per TensorCore and per unit, timestamps in us.
 * The file lists the metadata events first (in the order they were added),
 * then every other event sorted by (pid, tid, start, order added), so it does
 * not depend on the order actors recorded them in. It is written atomically
 * (base/fsutil.h). */
#ifndef TPUSIM_TRACES_TRACE_H
#define TPUSIM_TRACES_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct trace;

/* Returns a new trace of at most 'max_events' events, names included; caller
 * frees with trace_free(). Spans, counters and flows that would go past it are
 * dropped and counted (trace_dropped); process and thread names are always
 * kept, even past it. */
struct trace *trace_new(size_t max_events);
void trace_free(struct trace *t);

/* Names process 'pid' and thread 'tid' (metadata events). 'sort' orders tracks. */
void trace_process(struct trace *t, int pid, const char *name);
void trace_thread(struct trace *t, int pid, int tid, const char *name, int sort);

/* Adds a complete span [t0_s, t1_s] named 'name' in category 'cat' on (pid, tid).
 * 'args' is a JSON object body without braces ("\"bytes\": 4096") or NULL. */
void trace_span(struct trace *t, int pid, int tid, const char *cat, const char *name, double t0_s,
                double t1_s, const char *args);
/* Adds a counter sample: value 'v' of series 'name' on 'pid' at 't_s'. */
void trace_counter(struct trace *t, int pid, const char *name, double t_s, double v);
/* Adds a flow arrow (two events, kept or dropped together) from (pid0, tid0)
 * at 't0_s' to the span enclosing 't1_s' on (pid1, tid1). */
void trace_flow(struct trace *t, int pid0, int tid0, double t0_s, int pid1, int tid1, double t1_s);
/* Adds a key/value to the trace's metadata ("scenario", "chip"...). */
void trace_meta(struct trace *t, const char *key, const char *value);

size_t trace_count(const struct trace *t);   /* events kept, metadata included */
size_t trace_dropped(const struct trace *t); /* events left out ("dropped_events") */

/* Writes the trace as JSON to 'path'. Returns 0 or -1 (errno set). */
int trace_write(const struct trace *t, const char *path);

#endif
