/* outputs/table_serve.h -- the serving columns of the sweep table (a sweep of
 * a serve: scenario over serve.requests.arrival.rate or .concurrency): each
 * point's throughput, TTFT/TPOT/ITL p50/p90/p99 and goodput, read from its
 * summary.json `serving` object and written to sweep.csv / sweep.json. */
#ifndef TPUSIM_OUTPUTS_TABLE_SERVE_H
#define TPUSIM_OUTPUTS_TABLE_SERVE_H

#include <stdbool.h>
#include <stdio.h>

#include "base/json.h"

struct table_serving {
    double request_throughput, output_tokens_per_s; /* per second */
    double ttft_s[3], tpot_s[3], itl_s[3];          /* p50, p90, p99 */
    double goodput_rps, slo_ttft_s, slo_tpot_s;     /* slo 0: none */
    bool overloaded;
};

/* When the summary 'j' has a `serving` object: fills 'v' from it and returns
 * true; otherwise false. */
bool table_serve_from_summary(struct table_serving *v, const struct json *j);
/* sweep.csv: the column names (each starting with a comma), and a row's
 * values ('v' NULL: empty fields). */
void table_serve_csv_head(FILE *f);
void table_serve_csv_row(FILE *f, const struct table_serving *v);
/* sweep.json: ", \"serving\": {...}" ('v' NULL: nothing); and reading a
 * point's back (false: it has none). */
void table_serve_json_row(FILE *f, const struct table_serving *v);
bool table_serve_from_json(struct table_serving *v, const struct json *p);

#endif
