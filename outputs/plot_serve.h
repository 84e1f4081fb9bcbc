/* outputs/plot_serve.h -- the latency-throughput plot of a serving sweep. */
#ifndef TPUSIM_OUTPUTS_PLOT_SERVE_H
#define TPUSIM_OUTPUTS_PLOT_SERVE_H

struct table;

/* Writes dir/latency_throughput.svg (atomically) when 't' has serving rows;
 * nothing otherwise. Returns 0 or -1 with errno. */
int plot_serve_write(const struct table *t, const char *dir);
/* The knee of the first group (the rows that differ from row 0 only in the
 * load key, serve.requests.arrival.rate or .concurrency): index into t->rows
 * of its first ok serving row (in point order) whose p99 TTFT is above its
 * SLO (serve.slo.ttft) or that says it is overloaded; -1 when none is.
 * '*why' (may be NULL) gets a static reason. */
int plot_serve_knee(const struct table *t, const char **why);
/* The line naming each group's knee ("tensor=4: knee: point 2 (16/s, 14.5
 * req/s): p99 TTFT above the SLO; ...", or that there is none). New string. */
char *plot_serve_note(const struct table *t);

#endif
