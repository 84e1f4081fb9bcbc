/* outputs/report_md.h -- report.md of a sweep: the best point and its speedup
 * over the default point, the points ranked by time, the infeasible and
 * failed points with their reasons, and links to the plots and traces. */
#ifndef TPUSIM_OUTPUTS_REPORT_MD_H
#define TPUSIM_OUTPUTS_REPORT_MD_H

struct table;

/* Writes report.md of 't' to 'path' (atomically). Returns 0 or -1 with errno. */
int report_md_write(const struct table *t, const char *path);

#endif
