/* outputs/report_html.h -- report.html of a run and of a sweep: one
 * self-contained page (inline CSS and SVG, no script, nothing fetched) that a
 * browser opens from the file system.
 *   run:   the command that reproduces it, the console table, a timeline of
 *          chip 0 (an SVG bar per op, coloured by bound), the per-op table
 *          (bound and runner-up, HBM bytes and their useful share, per-core
 *          times, sub-kernels, collective bandwidths), chip 0's TensorCores,
 *          the critical path and what the trace holds;
 *   sweep: the command, the ranked points with their speedup over the
 *          default point, the sweep's SVG plots and heatmap inlined, and
 *          report.md's text. */
#ifndef TPUSIM_OUTPUTS_REPORT_HTML_H
#define TPUSIM_OUTPUTS_REPORT_HTML_H

struct summary;
struct table;

/* Writes the run's report.html to 'path' (atomically); 'command' may be
 * NULL. Returns 0 or -1 with errno. */
int report_html_run(const struct summary *s, const char *command, const char *path);
/* Writes the sweep's report.html into 'dir', inlining the plots already
 * written there; 'command' may be NULL. Returns 0 or -1 with errno. */
int report_html_sweep(const struct table *t, const char *command, const char *dir);

#endif
