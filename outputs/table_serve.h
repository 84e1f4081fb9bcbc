/* outputs/table_serve.h -- the serving columns of the sweep table (a sweep of
 * a serve: scenario over serve.requests.arrival.rate or .concurrency): each
 * point's throughput, TTFT/TPOT/ITL p50/p90/p99 and goodput, read from its
 * summary.json `serving` object and written to sweep.csv / sweep.json; and
 * the knee of the latency-throughput curve. */
#ifndef TPUSIM_OUTPUTS_TABLE_SERVE_H
#define TPUSIM_OUTPUTS_TABLE_SERVE_H

#include <stdbool.h>
#include <stdio.h>

#include "base/json.h"

struct table;
struct table_row;

/* When the summary 'j' is a serving run's: fills 'r' (status ok, time_s =
 * serving.duration_s) and returns true; otherwise false, 'r' untouched. */
bool table_serve_from_summary(struct table_row *r, const struct json *j);
/* True when some ok row of 't' is a serving run. */
bool table_has_serving(const struct table *t);
/* sweep.csv: the column names (each starting with a comma), and a row's
 * values (empty unless an ok serving row). */
void table_serve_csv_head(FILE *f);
void table_serve_csv_row(FILE *f, const struct table_row *r);
/* sweep.json: ", \"serving\": {...}" for a serving row, nothing otherwise;
 * and reading it back. */
void table_serve_json_row(FILE *f, const struct table_row *r);
void table_serve_from_json(struct table_row *r, const struct json *p);
/* The knee: index into t->rows of the first ok serving row (in point order)
 * whose p99 TTFT is above its SLO (serve.slo.ttft) or that says it is
 * overloaded; -1 when none is. '*why' (may be NULL) gets a static reason. */
int table_serve_knee(const struct table *t, const char **why);

#endif
